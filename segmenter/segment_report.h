#pragma once
/// Human and machine-readable reports of a SegmentedFusion (`widefuse segment`,
/// WIDEFUSE_DUMP=segments, the JSON report of every command).

#include "segmenter/segmented_fusion.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace widefuse {

/// A readable name for a component: its first written input, else its first output.
std::string componentName(const Component& component);

/// The segmentation as indented text: for each phase its groups, signature classes, copies
/// and notes; then, for several phases, what is kept between them and why.
std::string formatSegmentedFusion(const SegmentedFusion& segmented);

/// The segmentation as JSON: `"launches"` and `"components"` over every phase, and
/// `"phases"`, each with its groups, classes, copies and notes.
nlohmann::json segmentedFusionToJson(const SegmentedFusion& segmented);

} // namespace widefuse
