#pragma once
/// The tensors of one `widefuse adam` run, built from the roles of the Adam fusion's inputs:
/// random parameters and gradients, zero state, step counters, learning rates; plus the
/// comparisons and the export the command reports.

#include "ir/evaluator.h"
#include "tools/workloads/adam.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace widefuse {

/// Every input of an Adam fusion: tensors owned here, scalars by value.
struct AdamState {
  std::vector<HostTensor> tensors; ///< one per tensor input, in input order
  std::vector<Argument> scalars;   ///< one per scalar input, in input order

  /// The arguments, in the fusion's input order.
  std::vector<Argument> arguments(const Fusion& fusion);
  /// A deep copy.
  AdamState clone() const { return *this; }
};

/// Learning rate of param group `group` (group g gets (g + 1) x 1e-3).
double groupLearningRate(unsigned group);

/// The values a run gives the inputs that are neither state nor hyperparameters.
struct AdamRunValues {
  /// `grad_scale` (0-d f32): the grads are as drawn, so the step's grads are draws / this.
  double gradScale = 1;
};

/// The initial state: per parameter, f32 masters and then grads from a fixed-seed normal
/// distribution (the same draws whatever the dtypes and master weights), the parameter the
/// master rounded to nearest even (none, fp32) or split with its remainder (remainders);
/// exp_avg and the squares zero (quantized: zero codes and scales, torchao's zeros), steps
/// zero, each parameter's rounding seed SplitMix64 of its index, each group's hyperparameters (lr,
/// betas, eps, weight decay) their config's values (AdamInput::value), grad_scale from `values`,
/// found_inf 0.
AdamState initialAdamState(const optim::AdamFusion& adam, const AdamRunValues& values = {});

/// The value of the first input of `role` (a 0-d tensor such as found_inf or step0) in
/// `state`, as double; nullopt when the fusion has no such input.
std::optional<double> adamScalarOf(const optim::AdamFusion& adam, const AdamState& state,
                                   optim::AdamRole role);

/// Elements of two states that differ in bits, and the largest absolute and relative
/// differences (as double).
struct StateComparison {
  int64_t elements = 0;
  int64_t different = 0;
  double maxAbsolute = 0;
  double maxRelative = 0;
};
StateComparison compareStates(const AdamState& actual, const AdamState& expected);

/// Largest |state - oracle| over the floating-point copy_ destinations after one step but
/// quantized codes, the oracle's values computed in double from the state before the step;
/// with remainders, over the masters rebuilt from (parameter, remainder) as well.
double maxErrorAgainstOracle(const optim::AdamFusion& adam, const AdamState& state,
                             const EvaluationResult& oracle);

/// Writes `<prefix>_<name>.npy` for every tensor and appends them to manifest["files"]; with
/// remainders also `<prefix>_master<i>.npy`, the f32 masters rebuilt from the parameters and
/// their remainders (marked "derived" in the manifest).
void exportAdamState(const std::string& directory, const optim::AdamFusion& adam,
                     const AdamState& state, llvm::StringRef prefix, nlohmann::json& manifest);

/// The manifest's description of every tensor (name, role, group, dtype, shape).
nlohmann::json adamTensorManifest(const optim::AdamFusion& adam);

} // namespace widefuse
