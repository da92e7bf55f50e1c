/// `widefuse adam`: the README's first command. Builds torch's Adam or AdamW for a model's
/// parameter shapes (default: the seed's 2 x 1024x1024), shows what the segmenter does with
/// it, runs a few steps on the best backend present (the GPU, else the generated kernels on
/// CPU threads), checks them against a double-precision oracle and, with --verify, against the
/// reference evaluator; `--backend none` compiles the kernels without running them. With
/// --max-grad-norm (torch's clip_grad_norm_ inside the step) or --grad-scale (GradScaler's
/// unscale and inf check inside the step) the step runs in two phases (segmenter/phases.h).

#include "tools/adam_arguments.h"
#include "tools/adam_report.h"
#include "tools/adam_state.h"
#include "tools/backend_option.h"
#include "tools/commands.h"
#include "tools/compile_report.h"
#include "tools/host_backend_options.h"

#include "ir/error.h"
#include "runtime/fusion_executor.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"
#include "tools/workloads/model_presets.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FileSystem.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

namespace widefuse {
namespace {

/// Refuses a run whose tensors would not fit in half of this machine's memory.
void checkMemory(int64_t bytes, const std::string& what) {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return;
  double available = double(pages) * double(pageSize) / 2;
  if (double(bytes) > available)
    fail("{} needs {:.1f} GiB of host memory, more than half of this machine's; use "
         "--backend none to compile without running, or a smaller model",
         what, double(bytes) / double(1 << 30));
}

/// Prints a progress line for a phase that may take more than a second.
void progress(bool enabled, const std::string& text) {
  if (!enabled)
    return;
  fmt::print(stderr, "widefuse adam: {}\n", text);
  std::fflush(stderr);
}

/// The number of parameters of the step.
size_t parameterCount(const optim::AdamFusion& adam) {
  return llvm::count_if(adam.inputs, [](const optim::AdamInput& input) {
    return input.role == optim::AdamRole::Param;
  });
}

void compileOnly(const optim::AdamFusion& adam, const AdamArguments& arguments,
                 const optim::AdamConfig& config, const std::string& source, int64_t elements,
                 int64_t bytesPerStep) {
  CompiledFusion compiled = compileForReport(*adam.fusion, arguments.compile, arguments.json);
  const SegmentedFusion& segmented = *compiled.segmented;
  if (printEmitted(compiled, arguments.compile))
    return;
  if (arguments.json) {
    nlohmann::json report = compileReportJson(compiled);
    report["fusion"] = adam.fusion->name();
    report["backend"] = "none";
    report["optimizer"] = arguments.optimizer;
    report["params"] = parameterCount(adam);
    report["elements"] = elements;
    report["bytes_per_step"] = bytesPerStep;
    report.update(dtypesJson(config, adam));
    report["mode"] = modeName(segmented.mode).str();
    report["phases"] = segmented.phases.size();
    report["segments"] = segmentedFusionToJson(segmented);
    fmt::print("{}\n", report.dump(2));
    return;
  }
  fmt::print("widefuse adam: {} over {}, compiled without running (--backend none){}\n",
             arguments.optimizer, source,
             segmented.phases.size() > 1 ? fmt::format(": {} phases", segmented.phases.size())
                                         : "");
  printDtypes(config, adam);
  fmt::print("{}", formatCompileReport(compiled));
}

/// What the clip and GradScaler options add to the step, for the summary.
std::string scalingDescription(const optim::AdamConfig& config) {
  std::string text;
  if (config.maxGradNorm)
    text += fmt::format(", grads clipped to total {} norm {:g}",
                        config.normType == 2 ? "L2" : "inf", *config.maxGradNorm);
  if (config.computeFoundInf)
    text += ", grad_scale and found_inf computed in the step";
  return text;
}

void printSummary(const optim::AdamFusion& adam, const AdamArguments& arguments,
                  const optim::AdamConfig& config, const std::string& source, int64_t elements,
                  const SegmentedFusion& segmented) {
  const Fusion& fusion = *adam.fusion;
  size_t perComponent = segment(fusion, {SegmentationMode::PerComponent}).numLaunches();
  size_t batched = segment(fusion, {SegmentationMode::Batched}).numLaunches();
  size_t deferred = 0, copies = 0, classes = 0;
  for (const SegmentedPhase& phase : segmented.phases) {
    for (const HazardPlan& alias : phase.aliasPlans)
      deferred += alias.resolution == HazardResolution::DeferredWrite;
    copies += phase.aliasPlans.size();
    classes += phase.signatureClasses.size();
  }
  size_t phases = segmented.phases.size();
  fmt::print("widefuse adam: {}{}{} over {}: {} parameters, {} elements{}\n", arguments.optimizer,
             arguments.amsgrad ? " (amsgrad)" : "", arguments.maximize ? " (maximize)" : "", source,
             parameterCount(adam), elements, scalingDescription(config));
  printDtypes(config, adam);
  fmt::print("  fusion: {} inputs, {} expressions, {} in-place updates (copy_ deferred to "
             "the end)\n",
             fusion.inputs().size(), fusion.numExprs(), fusion.aliases().size());
  if (phases > 1)
    fmt::print("  phases: {} (phase 1 reads every grad for the global reductions, phase 2 "
               "updates)\n",
               phases);
  fmt::print("  segmenter: {} disconnected components in {} signature class(es){}\n",
             segmented.numComponents(), classes, phases > 1 ? " over the phases" : "");
  fmt::print("    per-component: {} kernels (one per parameter{}, where nvFuser refuses to fuse "
             "across them)\n",
             perComponent, phases > 1 ? " and phase" : "");
  fmt::print("    batched:       {} kernel{} for all parameters\n", batched,
             batched == 1 ? "" : "s");
  fmt::print("    chosen ({}): {} -> {} kernel(s)\n", arguments.compile.mode,
             modeName(segmented.mode).str(), segmented.numLaunches());
  fmt::print("    copies: {} in place, {} deferred writes (0-d step read by every element)\n",
             copies - deferred, deferred);
}

/// What the steps measured and checked.
struct AdamOutcome {
  std::string backend;
  /// Checking, compiling and loading the step's kernels, before the first step (prepare).
  double buildSeconds = 0;
  /// The steps themselves, every one after the build.
  double seconds = 0;
  /// The double-precision oracle (a reference evaluation per step) for runs up to 20M elements.
  std::optional<double> worstError;
  std::optional<StateComparison> verification;
  /// Each step's grad_norm and found_inf.
  std::vector<AdamStepRecord> steps;
  /// With verification and max_grad_norm: steps whose grad_norm differs from the evaluator's.
  std::optional<int64_t> gradNormsDifferent;
  /// Launches per step, as the last step ran them (the plan's for the reference backend).
  size_t launches = 0;
};

/// The executor the arguments ask for (the reference evaluator's too).
std::unique_ptr<FusionExecutorCache>
makeExecutor(const AdamArguments& arguments, const Fusion& fusion, const std::string& backend) {
  ExecutorOptions options;
  options.backend = backend;
  options.mode = parseMode(arguments.compile.mode);
  options.host = hostOptionsOf(arguments.host);
  options.cuda.fmad = !arguments.compile.noFmad;
  options.schedule = arguments.compile.schedule;
  // --dump-dir and WIDEFUSE_DUMP; --arch only when given (else the device's own).
  options.dumps = fusionCompileOptions(arguments.compile).dumps;
  if (arguments.compile.arch != CompileArguments{}.arch)
    options.arch = arguments.compile.arch;
  return std::make_unique<FusionExecutorCache>(fusion, options);
}

/// The reference evaluator's steps from `initial`: the final state compared with `state`,
/// and each step's grad_norm with the run's.
void verifySteps(const AdamArguments& arguments, const optim::AdamFusion& adam,
                 const AdamState& state, AdamState& initial, AdamOutcome& outcome) {
  std::vector<AdamStepRecord> expected;
  for (int step = 0; step < arguments.steps; ++step) {
    EvaluationResult result = evaluate(*adam.fusion, initial.arguments(*adam.fusion));
    expected.push_back(adamStepRecord(adam, initial, result.outputs));
  }
  outcome.verification = compareStates(state, initial);
  if (adam.gradNormOutput)
    outcome.gradNormsDifferent = gradNormsDifferent(outcome.steps, expected);
}

/// Runs the steps on `state` (timed), checking each against the oracle when it is small, then
/// the final state against the reference evaluator's steps from `initial` (when given).
AdamOutcome runSteps(const AdamArguments& arguments, const optim::AdamFusion& adam,
                     FusionExecutorCache& executor, AdamState& state,
                     std::optional<AdamState>& initial, int64_t elements) {
  const Fusion& fusion = *adam.fusion;
  AdamOutcome outcome;
  outcome.backend = executor.backendName().str();
  bool slow = elements * std::max(1, arguments.steps) > 8'000'000 && !arguments.json;
  bool oracle = elements <= 20'000'000;
  if (oracle)
    outcome.worstError = 0;
  // build: checked, compiled and loaded once, so that the steps below time the steps alone.
  if (arguments.steps > 0) {
    progress(slow, fmt::format("building the kernels for the {} backend", outcome.backend));
    auto start = std::chrono::steady_clock::now();
    executor.prepare(state.arguments(fusion));
    outcome.buildSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  for (int step = 0; step < arguments.steps; ++step) {
    std::vector<Argument> stepArguments = state.arguments(fusion);
    std::optional<EvaluationResult> exact;
    if (oracle) // first: it reads the state without writing it back
      exact = evaluate(fusion, stepArguments, {.oracle = true});
    progress(slow, fmt::format("step {} of {} on the {} backend", step + 1, arguments.steps,
                               outcome.backend));
    auto start = std::chrono::steady_clock::now();
    RunResult result = executor.run(stepArguments);
    outcome.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.steps.push_back(adamStepRecord(adam, state, result.outputs));
    if (exact)
      outcome.worstError =
          std::max(*outcome.worstError, maxErrorAgainstOracle(adam, state, *exact));
  }
  if (std::shared_ptr<const CompiledFusion> compiled = executor.lastCompiled())
    outcome.launches = compiled->numLaunches();
  if (initial) {
    progress(slow, "verifying against the reference evaluator");
    verifySteps(arguments, adam, state, *initial, outcome);
  }
  return outcome;
}

void printJsonReport(const AdamArguments& arguments, const optim::AdamConfig& config,
                     const optim::AdamFusion& adam, const SegmentedFusion& segmented,
                     const AdamOutcome& outcome, int64_t elements, int64_t bytesPerStep) {
  nlohmann::json report = {{"fusion", adam.fusion->name()},
                           {"optimizer", arguments.optimizer},
                           {"params", parameterCount(adam)},
                           {"elements", elements},
                           {"bytes_per_step", bytesPerStep},
                           {"backend", outcome.backend},
                           {"steps", arguments.steps},
                           {"phases", segmented.phases.size()},
                           {"launches", outcome.launches},
                           {"segments", segmentedFusionToJson(segmented)},
                           {"build_seconds", outcome.buildSeconds},
                           {"seconds", outcome.seconds}};
  report.update(dtypesJson(config, adam));
  if (config.maxGradNorm) {
    report["max_grad_norm"] = *config.maxGradNorm;
    report["norm_type"] = config.normType == 2 ? nlohmann::json(2) : nlohmann::json("inf");
  }
  if (!outcome.steps.empty() && (adam.gradNormOutput || outcome.steps.front().foundInf))
    report["per_step"] = stepsJson(outcome.steps);
  if (outcome.worstError)
    report["max_abs_error_vs_oracle"] = *outcome.worstError;
  if (outcome.backend == "host")
    report["block_order"] = formatBlockOrder(hostOptionsOf(arguments.host).blockOrder);
  if (const auto& v = outcome.verification) {
    report["verify"] = {{"max_abs_error", v->maxAbsolute},
                        {"max_rel_error", v->maxRelative},
                        {"different_elements", v->different},
                        {"elements", v->elements}};
    if (outcome.gradNormsDifferent)
      report["verify"]["different_grad_norms"] = *outcome.gradNormsDifferent;
  }
  fmt::print("{}\n", report.dump(2));
}

void printTextReport(const AdamArguments& arguments, const optim::AdamConfig& config,
                     const optim::AdamFusion& adam, const AdamState& state,
                     const AdamOutcome& outcome, int64_t bytesPerStep) {
  // Steps skipped by found_inf do not count: read the counter rather than assume it.
  std::optional<double> counter = adamScalarOf(adam, state, optim::AdamRole::Step);
  if (arguments.steps > 0)
    fmt::print("  built the kernels for the {} backend in {:.2f} s (checks, compile, load: once, "
               "before the first step)\n",
               outcome.backend, outcome.buildSeconds);
  double perStep = arguments.steps > 0 ? outcome.seconds / arguments.steps : 0.0;
  fmt::print("  ran {} step(s) on the {} backend in {:.2f} s: {:.3f} ms per step ({:.2f} GB/s "
             "moved, {} launches per step); step counters are now {}\n",
             arguments.steps, outcome.backend, outcome.seconds, perStep * 1e3,
             perStep > 0 ? double(bytesPerStep) / perStep / 1e9 : 0.0, outcome.launches,
             counter ? fmt::format("{:g}", *counter) : std::string("-"));
  printSteps(outcome.steps, config.maxGradNorm);
  if (outcome.worstError)
    fmt::print("  max |result - double oracle| over every updated tensor: {:.3g}\n",
               *outcome.worstError);
  if (const auto& v = outcome.verification)
    fmt::print("  verify against the reference evaluator: {} of {} elements differ (max abs "
               "{:.3g}, max rel {:.3g}){}\n",
               v->different, v->elements, v->maxAbsolute, v->maxRelative,
               v->different == 0 ? ": bit for bit identical" : "");
  if (outcome.gradNormsDifferent)
    fmt::print("  verify grad_norm: {} of {} steps differ{}\n", *outcome.gradNormsDifferent,
               outcome.steps.size(),
               *outcome.gradNormsDifferent == 0 ? ": bit for bit identical" : "");
  if (!arguments.exportDirectory.empty())
    fmt::print("  exported the initial and final state to {} (manifest.json)\n",
               arguments.exportDirectory);
}

void runAdam(const AdamArguments& arguments) {
  std::string backend = checkAdamArguments(arguments);
  auto [shapes, source] = modelShapes(arguments);
  optim::AdamConfig config = adamConfig(arguments, std::move(shapes));
  int64_t elements = 0;
  for (const optim::AdamGroup& group : config.groups)
    elements += optim::totalElements(group.shapes);
  optim::AdamFusion adam = optim::buildAdam(config);
  int64_t bytesPerStep = widefuse::bytesPerStep(adam, config);
  if (backend == "none")
    return compileOnly(adam, arguments, config, source, elements, bytesPerStep);
  const Fusion& fusion = *adam.fusion;
  // The state, its initial copy for --verify, and the evaluator's own copies. The reference
  // evaluator takes about a second per 10M elements and step: verify by default only what it
  // checks quickly.
  int64_t bytes = tensorBytes(adam);
  bool verify = arguments.verify.value_or(elements * std::max(1, arguments.steps) <= 20'000'000);
  checkMemory(bytes * (verify ? 4 : 2), source);

  SegmentedFusion segmented = segment(fusion, {parseMode(arguments.compile.mode)});
  AdamRunValues values = runValues(arguments);
  AdamState state = initialAdamState(adam, values);
  std::optional<AdamState> initial;
  if (verify)
    initial = state.clone();
  nlohmann::json manifest = {{"fusion", fusion.name()}, {"steps", arguments.steps}};
  if (!arguments.exportDirectory.empty()) {
    if (std::error_code code = llvm::sys::fs::create_directories(arguments.exportDirectory))
      fail("cannot create export directory '{}': {}", arguments.exportDirectory, code.message());
    manifest["tensors"] = adamTensorManifest(adam);
    for (size_t i = 0; i < adam.inputs.size(); ++i)
      if (fusion.inputs()[i]->isScalar()) // a group's hyperparameter
        manifest["scalars"][fusion.inputs()[i]->name()] = adam.inputs[i].value;
    if (config.maxGradNorm) // a constant of the fusion
      manifest["scalars"]["max_grad_norm"] = *config.maxGradNorm;
    exportAdamState(arguments.exportDirectory, adam, state, "initial", manifest);
  }
  std::unique_ptr<FusionExecutorCache> executor = makeExecutor(arguments, fusion, backend);
  AdamOutcome outcome = runSteps(arguments, adam, *executor, state, initial, elements);
  if (outcome.launches == 0) // the reference backend, or no step: the plan's count
    outcome.launches = segmented.numLaunches();
  if (!arguments.exportDirectory.empty()) {
    exportAdamState(arguments.exportDirectory, adam, state, "final", manifest);
    std::ofstream(arguments.exportDirectory + "/manifest.json") << manifest.dump(2) << "\n";
  }
  if (arguments.json)
    return printJsonReport(arguments, config, adam, segmented, outcome, elements, bytesPerStep);
  printSummary(adam, arguments, config, source, elements, segmented);
  if (std::shared_ptr<const CompiledFusion> compiled = executor->lastCompiled())
    fmt::print("{}", formatCompileReport(*compiled));
  printTextReport(arguments, config, adam, state, outcome, bytesPerStep);
}

} // namespace

void addAdamCommand(CLI::App& app) {
  auto arguments = std::make_shared<AdamArguments>();
  CLI::App* command = app.add_subcommand(
      "adam", "Build, segment, compile and run torch's Adam/AdamW for a model (the README's "
              "first command)");
  addAdamOptions(*command, *arguments);
  command->callback([arguments] { runAdam(*arguments); });
}

} // namespace widefuse
