#include "tools/adam_arguments.h"
#include "tools/backend_option.h"

#include "ir/error.h"
#include "tools/workloads/model_presets.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringRef.h>

#include <cmath>

namespace widefuse {
namespace {

/// The dtype an option names, one of `allowed`.
DataType dtypeOption(llvm::StringRef option, const std::string& name,
                     std::initializer_list<DataType> allowed) {
  std::optional<DataType> dtype = parseDataType(name);
  if (!dtype || !llvm::is_contained(allowed, *dtype)) {
    std::string names;
    for (DataType type : allowed)
      names += (names.empty() ? "" : ", ") + shortName(type).str();
    fail("{} '{}': use {}", option.str(), name, names);
  }
  return *dtype;
}

optim::MasterWeights masterWeightsOption(const std::string& name) {
  for (optim::MasterWeights policy :
       {optim::MasterWeights::None, optim::MasterWeights::Fp32, optim::MasterWeights::Remainders})
    if (optim::masterWeightsName(policy) == name)
      return policy;
  fail("--master-weights '{}': use none, fp32 or remainders", name);
}

/// The dtypes and the master-weight policy of the arguments.
void setDtypes(const AdamArguments& arguments, optim::AdamConfig& config) {
  constexpr auto f32 = DataType::Float, bf16 = DataType::BFloat16, f16 = DataType::Half;
  config.dtype = dtypeOption("--param-dtype", arguments.paramDtype, {f32, bf16, f16});
  if (!arguments.gradDtype.empty())
    config.gradDtype = dtypeOption("--grad-dtype", arguments.gradDtype, {f32, bf16, f16});
  if (!arguments.stateDtype.empty())
    config.stateDtype = dtypeOption("--state-dtype", arguments.stateDtype, {f32, bf16, f16});
  config.masterWeights = masterWeightsOption(arguments.masterWeights);
}

/// The state format (--state-format, --block-size) and --stochastic-round.
void setStorage(const AdamArguments& arguments, optim::AdamConfig& config) {
  if (arguments.stateFormat.empty()) {
    if (arguments.blockSize != 0)
      fail("--block-size {} is the block of --state-format: add --state-format int8|int4|fp8",
           arguments.blockSize);
  } else {
    std::optional<optim::StateFormatKind> kind = optim::parseStateFormatKind(arguments.stateFormat);
    if (!kind)
      fail("--state-format '{}': use int8, int4 or fp8", arguments.stateFormat);
    int64_t block = arguments.blockSize != 0 ? arguments.blockSize : optim::defaultBlockSize(*kind);
    config.stateFormat = optim::StateFormat{*kind, block};
  }
  config.stochasticRound = arguments.stochasticRound;
}

/// The number an option gives: finite, and >= 0 (or > 0 when `positive`).
double numberOption(llvm::StringRef option, const std::string& text, bool positive) {
  double value = 0;
  if (llvm::StringRef(text).trim().getAsDouble(value) || !std::isfinite(value) ||
      (positive ? !(value > 0) : !(value >= 0)))
    fail("{} '{}': use a finite number {}", option.str(), text, positive ? "> 0" : ">= 0");
  return value;
}

/// The clip and GradScaler options: --max-grad-norm X [--norm-type 2|inf], --grad-scale S
/// (the step divides by S and computes found_inf itself).
void setScaling(const AdamArguments& arguments, optim::AdamConfig& config) {
  if (!arguments.normType.empty() && arguments.maxGradNorm.empty())
    fail("--norm-type '{}' is the norm of --max-grad-norm: add --max-grad-norm X",
         arguments.normType);
  if (!arguments.maxGradNorm.empty())
    config.maxGradNorm = numberOption("--max-grad-norm", arguments.maxGradNorm, false);
  if (!arguments.normType.empty()) {
    llvm::StringRef norm = llvm::StringRef(arguments.normType).trim();
    if (norm == "2" || norm == "2.0")
      config.normType = 2;
    else if (norm.equals_insensitive("inf") || norm.equals_insensitive("infinity"))
      config.normType = INFINITY;
    else
      fail("--norm-type '{}': use 2 or inf", arguments.normType);
  }
  if (!arguments.gradScale.empty()) {
    numberOption("--grad-scale", arguments.gradScale, true);
    config.gradScale = true;
    config.computeFoundInf = true;
  }
}

} // namespace

/// The parameter shapes and a description of where they come from.
std::pair<std::vector<optim::Shape>, std::string> modelShapes(const AdamArguments& arguments) {
  if (!arguments.model.empty() && !arguments.shapes.empty())
    fail("--model and --shapes both give the parameter shapes: use one");
  if (!arguments.shapes.empty())
    return {optim::parseShapeList(arguments.shapes), "the shapes given with --shapes"};
  const optim::ModelPreset& preset =
      optim::modelPreset(arguments.model.empty() ? "seed" : arguments.model);
  return {preset.shapes, fmt::format("model '{}' ({})", preset.name, preset.description)};
}

/// The value of grad_scale a run feeds (checked by setScaling).
AdamRunValues runValues(const AdamArguments& arguments) {
  AdamRunValues values;
  if (!arguments.gradScale.empty())
    values.gradScale = numberOption("--grad-scale", arguments.gradScale, true);
  return values;
}

/// Param group g takes every paramGroups-th tensor, its own lr and its own beta2, so that
/// groups differ in their hyperparameters (runtime scalars of each group) as torch param
/// groups do.
optim::AdamConfig adamConfig(const AdamArguments& arguments, std::vector<optim::Shape> shapes) {
  if (arguments.optimizer != "adam" && arguments.optimizer != "adamw")
    fail("--optimizer '{}': use adam or adamw", arguments.optimizer);
  if (arguments.paramGroups < 1 || arguments.paramGroups > shapes.size())
    fail("--param-groups {}: use 1 to {} (the number of parameters)", arguments.paramGroups,
         shapes.size());
  optim::AdamConfig config;
  config.decay = arguments.optimizer == "adamw" ? optim::WeightDecayKind::Decoupled
                                                : optim::WeightDecayKind::L2;
  config.amsgrad = arguments.amsgrad;
  config.maximize = arguments.maximize;
  config.capturable = arguments.capturable;
  setDtypes(arguments, config);
  setStorage(arguments, config);
  setScaling(arguments, config);
  config.groups.resize(arguments.paramGroups);
  for (unsigned g = 0; g < arguments.paramGroups; ++g) {
    config.groups[g].hyper.lr = groupLearningRate(g);
    config.groups[g].hyper.beta2 = 0.999 - 0.001 * g;
    config.groups[g].hyper.weightDecay = arguments.weightDecay;
  }
  for (size_t i = 0; i < shapes.size(); ++i)
    config.groups[i % arguments.paramGroups].shapes.push_back(std::move(shapes[i]));
  return config;
}
/// The arguments' backend, after the checks that need no model.
std::string checkAdamArguments(const AdamArguments& arguments) {
  std::string backend = commandLineBackend(arguments.backend);
  hostOptionsOf(arguments.host);
  if (arguments.steps < 0)
    fail("--steps must be 0 or more, got {}", arguments.steps);
  if (!arguments.compile.emit.empty() && backend != "none")
    fail("--emit prints the kernels without running them: add --backend none");
  if (backend == "reference" && hasCompileOnlyOptions(arguments.compile))
    fail("--arch, --dump-dir, --emit, --no-fmad, --prefetch and --blocks-per-sm apply to "
         "compiled kernels: the reference backend runs no kernels");
  return backend;
}
void addAdamOptions(CLI::App& command, AdamArguments& arguments) {
  command.add_option("--model", arguments.model,
                     "Parameter shapes of a model preset (see `widefuse models`; default seed)");
  command.add_option("--shapes", arguments.shapes,
                     "Your own parameter shapes, e.g. 1024x1024,4096,scalar");
  command.add_option("--optimizer", arguments.optimizer, "adam (L2 decay) or adamw (decoupled)")
      ->capture_default_str();
  command.add_flag("--amsgrad", arguments.amsgrad, "Keep the maximum of exp_avg_sq");
  command.add_flag("--maximize", arguments.maximize, "Maximize instead of minimize");
  command.add_option("--weight-decay", arguments.weightDecay, "Weight decay")
      ->capture_default_str();
  command.add_flag("--capturable", arguments.capturable,
                   "lr as a 0-d tensor per param group (torch's capturable mode)");
  command.add_option("--param-dtype", arguments.paramDtype, "Parameters: f32, bf16 or f16")
      ->capture_default_str();
  command.add_option("--grad-dtype", arguments.gradDtype,
                     "Gradients: the parameters' dtype (default) or f32");
  command.add_option("--state-dtype", arguments.stateDtype,
                     "exp_avg and exp_avg_sq: f32 or bf16 (default: f32 with master weights, "
                     "else the parameters' dtype, as torch)");
  command
      .add_option("--master-weights", arguments.masterWeights,
                  "none (update the parameters), fp32 (an f32 master per parameter) or "
                  "remainders (bf16 parameters + int16 remainders, TransformerEngine's "
                  "store_param_remainders)")
      ->capture_default_str();
  command
      .add_option("--state-format", arguments.stateFormat,
                  "exp_avg, exp_avg_sq and max_exp_avg_sq block-quantized as torchao keeps "
                  "them: int8, int4 or fp8 (parameters of 4096 elements or more, a multiple of "
                  "the block)")
      ->type_name("int8|int4|fp8");
  command.add_option("--block-size", arguments.blockSize,
                     "Elements per scale of --state-format (default 256, 128 for int4)");
  command.add_flag("--stochastic-round", arguments.stochasticRound,
                   "Write bf16 parameters rounded stochastically (torchao's rule; the update in "
                   "f32)");
  command
      .add_option("--param-groups", arguments.paramGroups,
                  "Split the parameters into K groups with different hyperparameters")
      ->capture_default_str();
  addCompileOptions(command, arguments.compile);
  command
      .add_option("--backend", arguments.backend,
                  "auto (cuda when a GPU is present, else host), cuda, host, reference (the "
                  "evaluator) or none (compile only)")
      ->capture_default_str();
  addHostBackendOptions(command, arguments.host);
  command
      .add_option("--max-grad-norm", arguments.maxGradNorm,
                  "Clip the grads by their total norm to X inside the step (torch's "
                  "clip_grad_norm_; the step runs in two phases)")
      ->type_name("X");
  command.add_option("--norm-type", arguments.normType, "The clip's norm: 2 (default) or inf")
      ->type_name("2|inf");
  command
      .add_option("--grad-scale", arguments.gradScale,
                  "Feed grad_scale = S (GradScaler's scale; the grads are as drawn) and "
                  "compute found_inf in the step: a non-finite grad / S skips it")
      ->type_name("S");
  command.add_option("--steps", arguments.steps, "Optimizer steps to run")->capture_default_str();
  command.add_flag_callback(
      "--verify", [&arguments] { arguments.verify = true; },
      "Compare the final state with the reference evaluator's (default: on when steps x "
      "elements <= 20M)");
  command.add_flag_callback(
      "--no-verify", [&arguments] { arguments.verify = false; }, "Do not run the reference");
  command.add_option("--export", arguments.exportDirectory,
                     "Write the initial and final state as .npy with a manifest.json");
  command.add_flag("--json", arguments.json, "Print a JSON report");
}

} // namespace widefuse
