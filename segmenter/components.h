#pragma once
/// Connected components of a fusion: the disconnected SPMD subgraphs (one per optimizer
/// parameter) that nvFuser refuses to schedule together, found for each phase.

#include "segmenter/phases.h"
#include "segmenter/segmented_fusion.h"

#include <cstdint>
#include <vector>

namespace widefuse {

/// A fusion's phases and the components of each: what the segmenter finds before it groups
/// anything. The Python frontend finds it when a definition ends; executors segment from it.
struct FusionComponents {
  PhasePlan phases;
  /// By phase: its components, numbered from 0.
  std::vector<std::vector<Component>> ofPhase;
};

/// Plans the phases of a verified fusion and splits each phase's work into components by
/// union-find over tensor edges and copy_ edges. Scalars, and 0-d tensors computed only from
/// scalars and read-only 0-d inputs (lr, found_inf, grad_scale, an earlier phase's total norm),
/// are shared: they join nothing, and every component that reads them carries the scalar
/// expressions it needs. Each component gets its iteration domain. Throws Error naming the
/// values when a component is not one SPMD program (it writes tensors of different shapes).
FusionComponents findComponents(const Fusion& fusion);

/// How many times findComponents has run in this process: a statistic, with which tests show
/// that executors segment from the components their caller found instead of finding them
/// again.
uint64_t componentSearches();

/// True for a value kernels read rather than compute: a fusion input, an extent value (bound
/// from the run-time shapes) or a reduction result (an earlier phase's, kept in memory).
bool isKernelInput(const Value& value);

} // namespace widefuse
