#pragma once
/// Human and machine-readable reports of a SegmentedFusion (`widefuse segment`,
/// WIDEFUSE_DUMP=segments, the JSON report of every command).

#include "segmenter/segmented_fusion.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace widefuse {

/// A readable name for a component: its first written input, else its first output.
std::string componentName(const Component& component);

/// The plan as indented text: kernels, signature classes, copies and decisions.
std::string formatSegmentedFusion(const SegmentedFusion& plan);

/// The plan as JSON, with `"kernels": K` and the groups.
nlohmann::json segmentedFusionToJson(const SegmentedFusion& plan);

} // namespace widefuse
