#include "tools/compile_report.h"

#include "ir/error.h"
#include "runtime/cuda/fusion_cubins.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace widefuse {

void addCompileOptions(CLI::App& command, CompileArguments& arguments) {
  command.add_option("--mode", arguments.mode, "per-component, batched, packed or auto")
      ->capture_default_str();
  command.add_option("--arch", arguments.arch, "Target GPU architecture (sm_80, sm_90, ...)")
      ->capture_default_str();
  command.add_option("--dump-dir", arguments.dumpDirectory,
                     "Write each kernel's .cu and .ptx into this directory");
  command.add_option("--emit", arguments.emit,
                     "Print every kernel's CUDA source (cuda) or PTX (ptx) to standard output");
  command.add_flag("--no-fmad", arguments.noFmad,
                   "Do not contract a*b+c into fma: one rounding per IR operation, as the "
                   "reference evaluator computes");
  command.add_flag("--prefetch", arguments.schedule.prefetch,
                   "Flat loops load each thread's next vector before computing the current one "
                   "(more registers, loads in flight while computing)");
  command
      .add_option("--blocks-per-sm", arguments.schedule.minBlocksPerMultiprocessor,
                  "Resident 256-thread blocks per multiprocessor to compile for (the register "
                  "cap; lowered while a kernel spills)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  command
      .add_option("--row-segment", arguments.schedule.rowSegmentColumns,
                  "Columns of a row segment: reductions over rows take longer rows in segments "
                  "of this many columns, one chunk each (a power of two from 32 to 2^20)")
      ->capture_default_str();
}

bool hasCompileOnlyOptions(const CompileArguments& arguments) {
  const CompileArguments defaults;
  return arguments.arch != defaults.arch || !arguments.dumpDirectory.empty() ||
         !arguments.emit.empty() || arguments.noFmad ||
         arguments.schedule.prefetch != defaults.schedule.prefetch ||
         arguments.schedule.minBlocksPerMultiprocessor !=
             defaults.schedule.minBlocksPerMultiprocessor ||
         arguments.schedule.rowSegmentColumns != defaults.schedule.rowSegmentColumns;
}

FusionCompileOptions fusionCompileOptions(const CompileArguments& arguments) {
  if (!arguments.emit.empty() && arguments.emit != "cuda" && arguments.emit != "ptx")
    fail("--emit '{}': use cuda or ptx", arguments.emit);
  FusionCompileOptions options;
  options.mode = parseMode(arguments.mode);
  options.device = deviceForArch(arguments.arch);
  options.schedule = arguments.schedule;
  options.dumps = dumpOptionsFromEnvironment();
  if (!arguments.dumpDirectory.empty()) {
    options.dumps.directory = arguments.dumpDirectory;
    options.dumps.cuda = options.dumps.ptx = true;
  }
  return options;
}

CompiledFusion compileForReport(const Fusion& fusion, const CompileArguments& arguments,
                                bool jsonReport) {
  FusionCompileOptions options = fusionCompileOptions(arguments);
  CompiledFusion compiled = compileFusion(fusion, options);
  if (arguments.emit != "cuda" || jsonReport || options.dumps.ptx)
    compileCubins(compiled, CubinCache::global(), {!arguments.noFmad, options.dumps});
  return compiled;
}

bool printEmitted(const CompiledFusion& compiled, const CompileArguments& arguments) {
  if (arguments.emit.empty())
    return false;
  for (const FusionKernel& kernel : compiled.kernels)
    fmt::print("{}\n", arguments.emit == "cuda" ? kernel.source : kernel.compiled->ptx);
  return true;
}

namespace {

llvm::StringRef cacheWord(const FusionKernel& kernel) {
  return kernel.cache == CacheOutcome::Miss ? "miss" : "hit";
}

size_t membersOf(const CompiledFusion& compiled, const KernelPlan* plan) {
  size_t members = 0;
  for (const KernelLaunch& launch : compiled.scheduled.launches)
    if (&compiled.scheduled.plans[launch.plan] == plan)
      members += launch.members.size();
  return members;
}

} // namespace

nlohmann::json compileReportJson(const CompiledFusion& compiled) {
  nlohmann::json stats = nlohmann::json::array();
  for (const FusionKernel& kernel : compiled.kernels) {
    nlohmann::json entry = {{"name", kernel.plan->name},
                            {"vector_bytes", widestAccessBytes(*kernel.plan)},
                            {"index_bits", kernel.plan->indexBits},
                            {"blocks_per_multiprocessor", kernel.plan->minBlocksPerMultiprocessor},
                            {"launches", kernel.launches},
                            {"members", membersOf(compiled, kernel.plan)}};
    if (kernel.compiled) {
      const KernelStats& ptxas = kernel.compiled->stats;
      entry["registers"] = ptxas.registers;
      entry["spill_bytes"] = ptxas.spillBytes();
      entry["stack_bytes"] = ptxas.stackBytes;
      entry["nvrtc_ms"] =
          kernel.cache == CacheOutcome::Miss ? kernel.compiled->compileMilliseconds : 0.0;
      entry["cache"] = cacheWord(kernel);
    }
    stats.push_back(std::move(entry));
  }
  return {{"launches", compiled.numLaunches()},
          {"kernels", compiled.kernels.size()},
          {"arch", compiled.scheduled.plans.empty() ? std::string()
                                                    : compiled.scheduled.plans[0].device.arch},
          {"compile_ms", compiled.milliseconds},
          {"kernel_stats", std::move(stats)}};
}

std::string formatCompileReport(const CompiledFusion& compiled) {
  bool nvrtc = llvm::any_of(compiled.kernels,
                            [](const FusionKernel& kernel) { return bool(kernel.compiled); });
  // The host backend builds its kernels when it loads them: that time is the build's, which
  // the caller reports (widefuse adam: "built the kernels ... in").
  std::string text = fmt::format(
      "  {}: {} kernel launch(es) per run from {} kernel(s) in {:.0f} ms{}\n",
      nvrtc ? "codegen and NVRTC" : "codegen", compiled.numLaunches(), compiled.kernels.size(),
      compiled.milliseconds, nvrtc ? "" : " (the host backend builds them with the host compiler)");
  for (const FusionKernel& kernel : compiled.kernels) {
    text += fmt::format("    {} ({}): {} launch(es), {} member(s), {}-byte accesses, {}-bit "
                        "indices",
                        kernel.plan->name, kernel.plan->device.arch, kernel.launches,
                        membersOf(compiled, kernel.plan), widestAccessBytes(*kernel.plan),
                        kernel.plan->indexBits);
    if (kernel.compiled)
      text += fmt::format("; {} registers ({} blocks per multiprocessor), {} spill bytes, "
                          "{}-byte stack frame; NVRTC {}",
                          kernel.compiled->stats.registers, kernel.plan->minBlocksPerMultiprocessor,
                          kernel.compiled->stats.spillBytes(), kernel.compiled->stats.stackBytes,
                          kernel.cache == CacheOutcome::Miss
                              ? fmt::format("{:.0f} ms", kernel.compiled->compileMilliseconds)
                              : std::string("cache hit"));
    text += "\n";
  }
  return text;
}

} // namespace widefuse
