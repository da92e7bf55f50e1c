#pragma once
/// `widefuse adam`'s command line: its options, and what they give: the parameter shapes, the
/// Adam config, the values a run feeds and the backend.

#include "tools/adam_state.h"
#include "tools/compile_report.h"
#include "tools/host_backend_options.h"
#include "tools/workloads/adam.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
} // namespace CLI

namespace widefuse {

/// The options as given.
struct AdamArguments {
  CompileArguments compile;
  std::string backend = "auto";
  HostBackendArguments host;
  std::string model;
  std::string shapes;
  std::string optimizer = "adam";
  bool amsgrad = false;
  bool maximize = false;
  bool capturable = false;
  double weightDecay = 0;
  std::string paramDtype = "f32";
  /// Empty: the parameters' dtype.
  std::string gradDtype;
  /// Empty: f32 with master weights, else the parameters' dtype.
  std::string stateDtype;
  std::string masterWeights = "none";
  /// Empty: full-precision state; else int8, int4 or fp8, in blocks of blockSize (0: the
  /// format's default).
  std::string stateFormat;
  int64_t blockSize = 0;
  bool stochasticRound = false;
  unsigned paramGroups = 1;
  /// --max-grad-norm, --norm-type and --grad-scale as given (empty: not given), parsed with
  /// messages that name the option.
  std::string maxGradNorm;
  std::string normType;
  std::string gradScale;
  int steps = 2;
  /// --verify / --no-verify; by default, runs small enough to check quickly are verified.
  std::optional<bool> verify;
  std::string exportDirectory;
  bool json = false;
};

/// Adds the options of `widefuse adam` to `command`, writing into `arguments` (which must
/// outlive the command).
void addAdamOptions(CLI::App& command, AdamArguments& arguments);

/// The parameter shapes and a description of where they come from (--model or --shapes).
std::pair<std::vector<optim::Shape>, std::string> modelShapes(const AdamArguments& arguments);

/// The Adam config of the arguments over `shapes`; throws Error naming a bad option. Param
/// group g takes every paramGroups-th tensor, its own lr and its own beta2.
optim::AdamConfig adamConfig(const AdamArguments& arguments, std::vector<optim::Shape> shapes);

/// The values a run feeds the inputs that are neither state nor hyperparameters.
AdamRunValues runValues(const AdamArguments& arguments);

/// The backend the arguments name, after the checks that need no model.
std::string checkAdamArguments(const AdamArguments& arguments);

} // namespace widefuse
