/// `widefuse compile FILE [--mode M] [--arch sm_90] [--dump-dir DIR] [--emit cuda|ptx]
/// [--json]`: generates and compiles a fusion's kernels without running them (no GPU
/// needed).

#include "tools/commands.h"
#include "tools/compile_report.h"
#include "tools/fusion_file.h"

#include "segmenter/segment_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace widefuse {
namespace {

struct CompileCommandArguments {
  std::string path;
  CompileArguments compile;
  bool json = false;
};

void runCompile(const CompileCommandArguments& arguments) {
  std::unique_ptr<Fusion> fusion = loadFusionFile(arguments.path);
  CompiledFusion compiled = compileForReport(*fusion, arguments.compile, arguments.json);
  if (printEmitted(compiled, arguments.compile))
    return;
  if (arguments.json) {
    nlohmann::json report = compileReportJson(compiled);
    report["fusion"] = fusion->name();
    report["mode"] = modeName(compiled.segmented->mode).str();
    report["segments"] = segmentedFusionToJson(*compiled.segmented);
    fmt::print("{}\n", report.dump(2));
    return;
  }
  const SegmentedFusion& segmented = *compiled.segmented;
  fmt::print("fusion '{}': {} component(s){}, {} mode\n", fusion->name(), segmented.numComponents(),
             segmented.phases.size() > 1 ? fmt::format(" in {} phases", segmented.phases.size())
                                         : "",
             modeName(segmented.mode).str());
  fmt::print("{}", formatCompileReport(compiled));
}

} // namespace

void addCompileCommand(CLI::App& app) {
  auto arguments = std::make_shared<CompileCommandArguments>();
  CLI::App* command = app.add_subcommand(
      "compile", "Generate and compile a fusion's CUDA kernels (NVRTC, no GPU needed)");
  addFusionFileArgument(*command, arguments->path);
  addCompileOptions(*command, arguments->compile);
  command->add_flag("--json", arguments->json, "Print a JSON report with kernel_stats");
  command->callback([arguments] { runCompile(*arguments); });
}

} // namespace widefuse
