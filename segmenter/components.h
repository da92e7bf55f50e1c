#pragma once
/// Connected components of a fusion: the disconnected SPMD subgraphs (one per optimizer
/// parameter) that nvFuser refuses to schedule together.

#include "segmenter/segmented_fusion.h"

#include <vector>

namespace widefuse {

/// Splits the fusion into components by union-find over tensor edges and copy_ edges.
/// Scalars, and 0-d tensors computed only from scalars and read-only 0-d inputs (lr,
/// found_inf, grad_scale), are shared: they join nothing, and every component that reads
/// them carries the scalar expressions it needs. Each component gets its iteration domain.
/// Throws Error naming the values when a component is not one SPMD program (it writes
/// tensors of different shapes).
std::vector<Component> findComponents(const Fusion& fusion);

} // namespace widefuse
