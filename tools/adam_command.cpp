/// `widefuse adam`: the README's first command. Builds the seed's Adam (two 1024x1024 fp32
/// parameters by default), shows what the segmenter does with it, runs a few steps on the
/// best backend present (the GPU, else the generated kernels on CPU threads) and checks them
/// against the double-precision oracle (and with --verify against the reference evaluator);
/// with `--backend none` it compiles the kernels without running them.

#include "tools/commands.h"
#include "tools/compile_report.h"
#include "tools/npy_file.h"

#include "runtime/fusion_executor.h"

#include "ir/error.h"
#include "ir/evaluator.h"
#include "optim/seed_adam.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <llvm/Support/FileSystem.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>

namespace widefuse {
namespace {

struct AdamArguments {
  CompileArguments compile;
  std::string backend = "auto";
  std::string blockOrder = "forward";
  int steps = 2;
  bool verify = false;
  std::string exportDirectory;
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

/// Largest |a - b| between the updated state and the double-precision oracle's values.
double maxAbsoluteError(const Fusion& fusion, const AdamState& state,
                        const EvaluationResult& oracle) {
  double worst = 0;
  for (size_t k = 0; k < fusion.aliases().size(); ++k) {
    size_t input = size_t(llvm::find(fusion.inputs(), fusion.aliases()[k].destination) -
                          fusion.inputs().begin());
    const HostTensor& value = state.tensors[input]; // the scalars come after every tensor
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

/// Compares the final state with the reference evaluator's, run from the same start.
struct Verification {
  double maxAbsoluteError = 0;
  double maxRelativeError = 0;
  int64_t differentElements = 0;
  int64_t elements = 0;
};

Verification verifyAgainstReference(const Fusion& fusion, const AdamState& initial,
                                    const AdamState& final, int steps) {
  AdamState reference = initial;
  for (int step = 0; step < steps; ++step)
    evaluate(fusion, reference.arguments());
  Verification result;
  for (size_t t = 0; t < final.tensors.size(); ++t) {
    const HostTensor& actual = final.tensors[t];
    const HostTensor& expected = reference.tensors[t];
    for (int64_t i = 0; i < actual.numel(); ++i) {
      double a = actual.as<float>()[i], b = expected.as<float>()[i];
      ++result.elements;
      if (std::memcmp(&actual.as<float>()[i], &expected.as<float>()[i], sizeof(float)) != 0)
        ++result.differentElements;
      result.maxAbsoluteError = std::max(result.maxAbsoluteError, std::fabs(a - b));
      if (b != 0)
        result.maxRelativeError =
            std::max(result.maxRelativeError, std::fabs(a - b) / std::fabs(b));
    }
  }
  return result;
}

/// Writes `<prefix>_<name>.npy` for every tensor of the state.
void exportState(const std::string& directory, const Fusion& fusion, const AdamState& state,
                 llvm::StringRef prefix, nlohmann::json& manifest) {
  size_t t = 0;
  for (const Value* input : fusion.inputs()) {
    if (!input->isTensor())
      continue;
    std::string file = fmt::format("{}_{}.npy", prefix.str(), input->name());
    writeNpy(directory + "/" + file, state.tensors[t++]);
    manifest["files"].push_back({{"file", file}, {"tensor", input->name()}, {"state", prefix}});
  }
}

/// The roles of the seed's inputs, for the export manifest.
nlohmann::json tensorManifest(const Fusion& fusion) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const Value* input : fusion.inputs()) {
    if (!input->isTensor())
      continue;
    const char* roles[] = {"param", "grad", "exp_avg", "exp_avg_sq", "step"};
    size_t index = size_t(llvm::find(fusion.inputs(), input) - fusion.inputs().begin());
    tensors.push_back({{"name", input->name()},
                       {"role", roles[index % 5]},
                       {"dtype", shortName(input->dtype()).str()},
                       {"shape", input->extents().vec()}});
  }
  return tensors;
}

void runAdam(const AdamArguments& arguments) {
  Backend backend = parseBackend(arguments.backend);
  BlockOrder order = parseBlockOrder(arguments.blockOrder);
  if (arguments.steps < 0)
    fail("--steps must be 0 or more, got {}", arguments.steps);
  if (!arguments.compile.emit.empty() && backend != Backend::None)
    fail("--emit prints the kernels without running them: add --backend none");
  if (backend == Backend::Reference && hasCompileOnlyOptions(arguments.compile))
    fail("--arch, --dump-dir, --emit and --no-fmad apply to compiled kernels: the reference "
         "backend runs no kernels");
  auto shapes = optim::seedExampleShapes();
  std::unique_ptr<Fusion> fusion = optim::buildSeedAdam(shapes);
  if (backend == Backend::None)
    return compileAdam(*fusion, arguments);
  SegmentedFusion plan = segment(*fusion, {parseMode(arguments.compile.mode)});
  size_t perComponent = segment(*fusion, {SegmentationMode::PerComponent}).numKernels();
  size_t batched = segment(*fusion, {SegmentationMode::Batched}).numKernels();

  AdamState state = initialState(*fusion);
  AdamState initial = state;
  nlohmann::json manifest = {
      {"fusion", fusion->name()},
      {"steps", arguments.steps},
      {"scalars", {{"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}}}};
  if (!arguments.exportDirectory.empty()) {
    if (std::error_code code = llvm::sys::fs::create_directories(arguments.exportDirectory))
      fail("cannot create export directory '{}': {}", arguments.exportDirectory, code.message());
    manifest["tensors"] = tensorManifest(*fusion);
    exportState(arguments.exportDirectory, *fusion, state, "initial", manifest);
  }

  std::unique_ptr<FusionExecutorCache> executor;
  if (backend != Backend::Reference) {
    ExecutorOptions options;
    options.backend = backend;
    options.mode = parseMode(arguments.compile.mode);
    options.blockOrder = order;
    options.fmad = !arguments.compile.noFmad;
    // --dump-dir and WIDEFUSE_DUMP; --arch only when given (else the device's own).
    options.dumps = fusionCompileOptions(arguments.compile, false).dumps;
    if (arguments.compile.arch != CompileArguments{}.arch)
      options.arch = arguments.compile.arch;
    executor = std::make_unique<FusionExecutorCache>(*fusion, options);
  }
  std::string backendUsed = executor ? backendName(executor->backend()).str() : "reference";
  double worstError = 0, seconds = 0;
  for (int step = 0; step < arguments.steps; ++step) {
    // The oracle first: it reads the state without writing it back.
    EvaluationResult oracle = evaluate(*fusion, state.arguments(), {.oracle = true});
    auto start = std::chrono::steady_clock::now();
    if (executor)
      executor->run(state.arguments());
    else
      evaluate(*fusion, state.arguments());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    worstError = std::max(worstError, maxAbsoluteError(*fusion, state, oracle));
  }
  std::optional<Verification> verification;
  if (arguments.verify)
    verification = verifyAgainstReference(*fusion, initial, state, arguments.steps);
  if (!arguments.exportDirectory.empty()) {
    exportState(arguments.exportDirectory, *fusion, state, "final", manifest);
    std::ofstream(arguments.exportDirectory + "/manifest.json") << manifest.dump(2) << "\n";
  }
  float finalStep = state.tensors[4].as<float>()[0];

  int64_t elements = 0;
  for (const auto& shape : shapes)
    elements += numElements(shape);
  if (arguments.json) {
    nlohmann::json report = {{"fusion", fusion->name()},
                             {"params", shapes.size()},
                             {"elements", elements},
                             {"bytes_per_step", elements * 28},
                             {"backend", backendUsed},
                             {"steps", arguments.steps},
                             {"kernels", plan.numKernels()},
                             {"segments", segmentedFusionToJson(plan)},
                             {"max_abs_error_vs_oracle", worstError},
                             {"seconds", seconds}};
    if (executor && executor->backend() != Backend::Reference)
      report["block_order"] = formatBlockOrder(order);
    if (verification)
      report["verify"] = {{"max_abs_error", verification->maxAbsoluteError},
                          {"max_rel_error", verification->maxRelativeError},
                          {"different_elements", verification->differentElements},
                          {"elements", verification->elements}};
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
  if (executor && executor->lastCompiled())
    fmt::print("{}", formatCompileReport(*executor->lastCompiled()));
  fmt::print("  ran {} step(s) on the {} backend in {:.2f} s; step counters are now {}\n",
             arguments.steps, backendUsed, seconds, finalStep);
  fmt::print("  max |f32 result - double oracle| over p, m, v, step: {:.3g}\n", worstError);
  if (verification)
    fmt::print("  verify against the reference evaluator: {} of {} elements differ (max abs "
               "{:.3g}, max rel {:.3g}){}\n",
               verification->differentElements, verification->elements,
               verification->maxAbsoluteError, verification->maxRelativeError,
               verification->differentElements == 0 ? ": bit for bit identical" : "");
  if (!arguments.exportDirectory.empty())
    fmt::print("  exported the initial and final state to {} (manifest.json)\n",
               arguments.exportDirectory);
}

} // namespace

void addAdamCommand(CLI::App& app) {
  auto arguments = std::make_shared<AdamArguments>();
  CLI::App* command = app.add_subcommand(
      "adam", "Build, segment and run the seed's Adam step (the README's first command)");
  addCompileOptions(*command, arguments->compile);
  command
      ->add_option("--backend", arguments->backend,
                   "auto (cuda when a GPU is present, else host), cuda, host, reference (the "
                   "evaluator) or none (compile only)")
      ->capture_default_str();
  command
      ->add_option("--block-order", arguments->blockOrder,
                   "Host backend: forward, reverse or shuffle:SEED")
      ->capture_default_str();
  command->add_flag("--verify", arguments->verify,
                    "Compare the final state with the reference evaluator's");
  command->add_option("--export", arguments->exportDirectory,
                      "Write the initial and final state as .npy with a manifest.json");
  command->add_option("--steps", arguments->steps, "Optimizer steps to run")->capture_default_str();
  command->add_flag("--json", arguments->json, "Print a JSON report");
  command->callback([arguments] { runAdam(*arguments); });
}

} // namespace widefuse
