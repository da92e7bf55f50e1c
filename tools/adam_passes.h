#pragma once
/// The passes of a `widefuse adam` step for its reports: a step with a global reduction (the
/// clip's total norm, a found_inf computed in the step) runs as passes (segmenter/passes.h),
/// each segmented and compiled on its own; a step without one is one pass, the whole fusion.

#include "runtime/fusion_compiler.h"
#include "segmenter/passes.h"
#include "segmenter/segmented_fusion.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace widefuse {

/// The fusions a step runs, in order, and the segmentation of each in one mode.
class AdamPasses {
public:
  /// Splits `fusion` (which must outlive this) into passes when it needs them and segments
  /// every pass in `mode`.
  AdamPasses(const Fusion& fusion, SegmentationMode mode);

  /// Number of passes (1 for a fusion without passes).
  size_t size() const { return segmented_.size(); }
  /// Pass k's fusion (the whole fusion for one pass).
  const Fusion& fusion(size_t k) const;
  /// Pass k's segmentation.
  const SegmentedFusion& segmented(size_t k) const { return *segmented_[k]; }
  /// Pass k's segmentation, to share with compileFusion.
  std::shared_ptr<const SegmentedFusion> sharedSegmented(size_t k) const { return segmented_[k]; }
  /// Launches per step: the sum over the passes.
  size_t numLaunches() const;
  /// Components over every pass (a parameter's components are counted once per pass).
  size_t numComponents() const;
  /// The segment report: one pass's object, or an array of every pass's.
  nlohmann::json segmentsJson() const;

private:
  const Fusion& fusion_;
  /// Empty for a fusion run as one.
  std::optional<PassPlan> plan_;
  std::vector<std::shared_ptr<const SegmentedFusion>> segmented_;
};

/// Every pass of `passes` compiled with `options`, in pass order.
std::vector<CompiledFusion> compilePasses(const AdamPasses& passes,
                                          const FusionCompileOptions& options);

/// compileReportJson of one compiled pass, or of several summed: `launches` and `kernels`
/// added up, `kernel_stats` concatenated, `compile_ms` summed.
nlohmann::json compilePassesJson(const std::vector<CompiledFusion>& compiled);

/// Launches per step of the passes a run compiled (null entries: a pass not run).
size_t launchesOf(const std::vector<std::shared_ptr<const CompiledFusion>>& compiled);

} // namespace widefuse
