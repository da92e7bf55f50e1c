#pragma once
/// The options and reports that `widefuse compile` and `widefuse adam` share: target arch,
/// dumps, `--emit`, and the kernel statistics in text and JSON.

#include "runtime/fusion_compiler.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace CLI {
class App;
}

namespace widefuse {

/// Command-line options of the compile pipeline.
struct CompileArguments {
  std::string mode = "auto";
  std::string arch = "sm_90";
  std::string dumpDirectory;
  /// "", "cuda" or "ptx": print that text of every kernel to standard output.
  std::string emit;
  bool noFmad = false;
  /// The scheduler's knobs (--prefetch, --blocks-per-sm).
  ScheduleOptions schedule;
};

/// Registers --mode, --arch, --dump-dir, --emit, --no-fmad, --prefetch and --blocks-per-sm on
/// `command`.
void addCompileOptions(CLI::App& command, CompileArguments& arguments);

/// The pipeline options the arguments ask for (dumps from the environment plus --dump-dir,
/// which writes every kernel's .cu and .ptx). Throws Error for a bad mode, arch or --emit.
FusionCompileOptions fusionCompileOptions(const CompileArguments& arguments);

/// Lowers `fusion` as `widefuse compile` and `widefuse adam --backend none` report it: plans
/// and sources, then NVRTC's cubins (the CUDA backend's compile step), except for `--emit
/// cuda` alone, which needs no NVRTC, unless a JSON report or a PTX dump needs the cubins.
CompiledFusion compileForReport(const Fusion& fusion, const CompileArguments& arguments,
                                bool jsonReport);

/// True when an option that only matters for compiling was given (--arch, --dump-dir,
/// --emit, --no-fmad).
bool hasCompileOnlyOptions(const CompileArguments& arguments);

/// Prints the sources or PTX that --emit asks for; false when --emit was not given.
bool printEmitted(const CompiledFusion& compiled, const CompileArguments& arguments);

/// `launches` (per run), `kernels` (distinct compiled kernels), `compile_ms`, `arch` and
/// `kernel_stats` (per compiled kernel: name, registers, spill_bytes, stack_bytes,
/// vector_bytes, index_bits, nvrtc_ms, cache, launches, members).
nlohmann::json compileReportJson(const CompiledFusion& compiled);

/// A few readable lines: kernels, launches, registers, spills, cache and compile time.
std::string formatCompileReport(const CompiledFusion& compiled);

} // namespace widefuse
