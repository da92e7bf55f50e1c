#pragma once
/// The segmenter's entry point: fusion -> phases -> kernel groups with a hazard plan.

#include "segmenter/components.h"
#include "segmenter/segmented_fusion.h"

namespace widefuse {

/// Options of segment().
struct SegmentOptions {
  SegmentationMode mode = SegmentationMode::Auto;
  /// findComponents(fusion), when the caller has it already (copied, not found again); null:
  /// segment() finds them.
  const FusionComponents* components = nullptr;
};

/// Plans the kernels of a verified fusion: its phases, each phase's components, signature
/// classes (with lifted constants), kernel groups under the mode's policy, and the plan of
/// every copy_. Throws Error naming the values when a subgraph cannot run as one SPMD kernel.
SegmentedFusion segment(const Fusion& fusion, const SegmentOptions& options = {});

} // namespace widefuse
