/// `widefuse adam`: the README's first command. Builds the seed's Adam (two 1024x1024 fp32
/// parameters by default), shows what the segmenter does with it, runs a few steps on the
/// reference backend and checks them against the double-precision oracle; with
/// `--backend none` it compiles the kernels instead (NVRTC, no GPU needed).

#include "tools/commands.h"
#include "tools/compile_report.h"

#include "ir/error.h"
#include "ir/evaluator.h"
#include "optim/seed_adam.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>

namespace widefuse {
namespace {

struct AdamArguments {
  CompileArguments compile;
  std::string backend = "reference";
  int steps = 2;
  bool json = false;
};

/// The tensors of one run: per parameter p, g, m, v, step, then lr, beta1, beta2, eps.
struct AdamState {
  std::vector<HostTensor> tensors;
  std::vector<Argument> arguments() {
    std::vector<Argument> list;
    for (HostTensor& tensor : tensors)
      list.push_back(tensor.ref());
    for (double scalar : {1e-3, 0.9, 0.999, 1e-8})
      list.push_back(ScalarArgument(scalar));
    return list;
  }
};

AdamState initialState(const Fusion& fusion) {
  AdamState state;
  std::mt19937 random(0);
  std::normal_distribution<float> normal;
  for (const Value* input : fusion.inputs()) {
    if (!input->isTensor())
      continue;
    HostTensor tensor(input->dtype(), input->extents());
    bool randomFill = input->name()[0] == 'p' || input->name()[0] == 'g';
    for (int64_t i = 0; randomFill && i < tensor.numel(); ++i)
      tensor.as<float>()[i] = normal(random);
    state.tensors.push_back(std::move(tensor));
  }
  return state;
}

/// Largest |a - b| between the declared-precision results and the oracle's.
double maxAbsoluteError(const EvaluationResult& result, const EvaluationResult& oracle) {
  double worst = 0;
  for (size_t k = 0; k < result.aliasFinalValues.size(); ++k) {
    const HostTensor& value = result.aliasFinalValues[k];
    const HostTensor& exact = oracle.aliasFinalValues[k];
    for (int64_t i = 0; i < value.numel(); ++i)
      worst = std::max(worst, std::fabs(double(value.as<float>()[i]) - exact.as<double>()[i]));
  }
  return worst;
}

/// `--backend none`: compile the kernels and report them without running anything.
void compileAdam(const Fusion& fusion, const AdamArguments& arguments) {
  FusionCompileOptions options = fusionCompileOptions(arguments.compile, arguments.json);
  CompiledFusion compiled = compileFusion(fusion, options, KernelCache::global());
  if (printEmitted(compiled, arguments.compile))
    return;
  if (arguments.json) {
    nlohmann::json report = compileReportJson(compiled);
    report["fusion"] = fusion.name();
    report["backend"] = "none";
    report["mode"] = modeName(compiled.segmented->mode).str();
    report["segments"] = segmentedFusionToJson(*compiled.segmented);
    fmt::print("{}\n", report.dump(2));
    return;
  }
  fmt::print("widefuse adam: the seed's Adam step over {} parameters, compiled without "
             "running (--backend none)\n",
             compiled.segmented->components.size());
  fmt::print("{}", formatCompileReport(compiled));
}

void runAdam(const AdamArguments& arguments) {
  if (arguments.backend != "reference" && arguments.backend != "none")
    fail("backend '{}' is not available yet: 'reference' runs the steps, 'none' compiles the "
         "kernels without running (the CUDA and host backends come with the runtime)",
         arguments.backend);
  if (arguments.steps < 0)
    fail("--steps must be 0 or more, got {}", arguments.steps);
  if (arguments.backend == "reference" && hasCompileOnlyOptions(arguments.compile))
    fail("--arch, --dump-dir, --emit and --no-fmad apply to compiled kernels: add --backend "
         "none (the reference backend runs no kernels)");
  auto shapes = optim::seedExampleShapes();
  std::unique_ptr<Fusion> fusion = optim::buildSeedAdam(shapes);
  if (arguments.backend == "none")
    return compileAdam(*fusion, arguments);
  SegmentedFusion plan = segment(*fusion, {parseMode(arguments.compile.mode)});
  size_t perComponent = segment(*fusion, {SegmentationMode::PerComponent}).numKernels();
  size_t batched = segment(*fusion, {SegmentationMode::Batched}).numKernels();

  AdamState state = initialState(*fusion);
  double worstError = 0;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < arguments.steps; ++step) {
    // The oracle first: it reads the state without writing it back.
    EvaluationResult oracle = evaluate(*fusion, state.arguments(), {.oracle = true});
    EvaluationResult result = evaluate(*fusion, state.arguments());
    worstError = std::max(worstError, maxAbsoluteError(result, oracle));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  float finalStep = state.tensors[4].as<float>()[0];

  int64_t elements = 0;
  for (const auto& shape : shapes)
    elements += numElements(shape);
  if (arguments.json) {
    nlohmann::json report = {{"fusion", fusion->name()},
                             {"params", shapes.size()},
                             {"elements", elements},
                             {"bytes_per_step", elements * 28},
                             {"backend", arguments.backend},
                             {"steps", arguments.steps},
                             {"kernels", plan.numKernels()},
                             {"segments", segmentedFusionToJson(plan)},
                             {"max_abs_error_vs_oracle", worstError},
                             {"seconds", seconds}};
    fmt::print("{}\n", report.dump(2));
    return;
  }
  size_t deferred = 0;
  for (const AliasPlan& alias : plan.aliasPlans)
    deferred += alias.resolution == HazardResolution::DeferredWrite;
  fmt::print("widefuse adam: the seed's Adam step over {} parameters of 1024x1024 f32 "
             "({} elements)\n",
             shapes.size(), elements);
  fmt::print("  fusion: {} inputs, {} expressions, {} in-place updates (copy_ deferred to "
             "the end)\n",
             fusion->inputs().size(), fusion->numExprs(), fusion->aliases().size());
  fmt::print("  segmenter: {} disconnected components in {} signature class(es)\n",
             plan.components.size(), plan.signatureClasses.size());
  fmt::print("    per-component: {} kernels (one per parameter, where nvFuser refuses to fuse "
             "across them)\n",
             perComponent);
  fmt::print("    batched:       {} kernel for all parameters\n", batched);
  fmt::print("    chosen ({}): {} -> {} kernel(s)\n", arguments.compile.mode,
             modeName(plan.mode).str(), plan.numKernels());
  fmt::print("    copies: {} in place (p, m, v), {} deferred writes (0-d step read by every "
             "element)\n",
             plan.aliasPlans.size() - deferred, deferred);
  fmt::print("  ran {} step(s) on the reference backend in {:.2f} s; step counters are now "
             "{}\n",
             arguments.steps, seconds, finalStep);
  fmt::print("  max |f32 result - double oracle| over p, m, v, step: {:.3g}\n", worstError);
}

} // namespace

void addAdamCommand(CLI::App& app) {
  auto arguments = std::make_shared<AdamArguments>();
  CLI::App* command = app.add_subcommand(
      "adam", "Build, segment and run the seed's Adam step (the README's first command)");
  addCompileOptions(*command, arguments->compile);
  command
      ->add_option("--backend", arguments->backend,
                   "reference (run on the evaluator) or none (compile only)")
      ->capture_default_str();
  command->add_option("--steps", arguments->steps, "Optimizer steps to run")->capture_default_str();
  command->add_flag("--json", arguments->json, "Print a JSON report");
  command->callback([arguments] { runAdam(*arguments); });
}

} // namespace widefuse
