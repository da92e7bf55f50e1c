#pragma once
/// The parts of `widefuse adam`'s reports that depend on the config and the steps only: the
/// dtypes and the state they cost, and each step's grad_norm and found_inf (max_grad_norm,
/// grad_scale) with their check against the reference evaluator.

#include "tools/adam_state.h"

#include "ir/host_tensor.h"
#include "tools/workloads/adam.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace widefuse {

/// Bytes of the step's tensors of more than one element: p, g, the master or remainder, the
/// moments (or their codes and scales).
int64_t tensorBytes(const optim::AdamFusion& adam);

/// Bytes a step reads and writes: every tensor of tensorBytes is read, all but g written; a
/// clip or a computed found_inf reads g once more in phase 1.
int64_t bytesPerStep(const optim::AdamFusion& adam, const optim::AdamConfig& config);

/// The report's description of the dtypes and the state they cost.
nlohmann::json dtypesJson(const optim::AdamConfig& config, const optim::AdamFusion& adam);

/// The summary's line on dtypes and optimizer state.
void printDtypes(const optim::AdamConfig& config, const optim::AdamFusion& adam);

/// "694 bytes", "12.3 kB", "1.24 GB".
std::string formatBytes(int64_t bytes);

/// What one step left that the report shows: the total grad norm it computed (0-d, the
/// grads' dtype; max_grad_norm only) and found_inf after it (when the fusion has it).
struct AdamStepRecord {
  std::optional<HostTensor> gradNorm;
  std::optional<double> foundInf;
};

/// The record of a step from its plain outputs and the state after it.
AdamStepRecord adamStepRecord(const optim::AdamFusion& adam, const AdamState& state,
                              const std::vector<HostTensor>& outputs);

/// Steps whose grad_norm differs in bits between `actual` and `expected` (the same length).
int64_t gradNormsDifferent(const std::vector<AdamStepRecord>& actual,
                           const std::vector<AdamStepRecord>& expected);

/// The JSON report's `per_step`: `{step, grad_norm, found_inf}` per step, each value only
/// where the fusion has it (a non-finite norm is null, as JSON has no inf).
nlohmann::json stepsJson(const std::vector<AdamStepRecord>& steps);

/// The text report's lines on the steps' grad norms and found_inf (nothing when the fusion
/// has neither); `maxGradNorm` is what the norm is clipped to.
void printSteps(const std::vector<AdamStepRecord>& steps, std::optional<double> maxGradNorm);

} // namespace widefuse
