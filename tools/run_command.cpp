/// `widefuse run`: runs a fusion on .npy inputs (generated kernels on the host backend, or
/// the reference evaluator) and writes every output and every updated (copy_ destination)
/// input as a .npy file, then reports what it wrote as JSON on standard output.

#include "tools/backend_option.h"
#include "tools/commands.h"
#include "tools/fusion_file.h"
#include "tools/host_backend_options.h"
#include "tools/npy_file.h"
#include "tools/run_arguments.h"

#include "ir/error.h"
#include "ir/evaluator.h"
#include "runtime/fusion_executor.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringSet.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace widefuse {
namespace {

struct RunOptions {
  std::string file;
  std::vector<std::string> inputs;
  std::vector<std::string> scalars;
  std::string outDir;
  std::string backend = "auto";
  std::string mode = "auto";
  HostBackendArguments host;
};

/// One tensor to write: its file name stem and where the evaluator left its value.
struct WrittenTensor {
  std::string name;
  const HostTensor* tensor;
};

std::vector<Assignment> parseAssignments(llvm::ArrayRef<std::string> texts,
                                         llvm::StringRef option) {
  std::vector<Assignment> assignments;
  for (const std::string& text : texts)
    assignments.push_back(parseAssignment(text, option));
  return assignments;
}

/// Fails before anything runs when two results would land in one file.
void checkDistinctFileNames(const Fusion& fusion) {
  llvm::StringSet<> names;
  for (const Value* output : fusion.outputs())
    names.insert(output->name());
  for (const Alias& alias : fusion.aliases())
    if (!names.insert(alias.destination->name()).second)
      fail("'{}' is both an output and an updated input; both would be written to {}.npy",
           alias.destination->name(), alias.destination->name());
}

void createOutputDirectory(llvm::StringRef dir) {
  if (std::error_code code = llvm::sys::fs::create_directories(dir))
    fail("cannot create output directory '{}': {}", dir.str(), code.message());
  if (!llvm::sys::fs::is_directory(dir))
    fail("cannot write into '{}': it is not a directory", dir.str());
}

/// Writes one tensor as DIR/NAME.npy and describes it for the report.
nlohmann::ordered_json writeTensor(llvm::StringRef dir, const WrittenTensor& written) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, written.name + ".npy");
  writeNpy(path, *written.tensor);
  nlohmann::ordered_json entry;
  entry["name"] = written.name;
  entry["path"] = std::string(path);
  entry["dtype"] = shortName(written.tensor->dtype()).str();
  entry["shape"] = written.tensor->shape().vec();
  return entry;
}

/// Writes the results and builds the JSON report.
nlohmann::ordered_json writeResults(const Fusion& fusion, const EvaluationResult& result,
                                    const RunOptions& options) {
  WF_ASSERT(result.outputs.size() == fusion.outputs().size(), "evaluator returned {} outputs",
            result.outputs.size());
  WF_ASSERT(result.aliasFinalValues.size() == fusion.aliases().size(),
            "evaluator returned {} updated inputs", result.aliasFinalValues.size());
  createOutputDirectory(options.outDir);
  nlohmann::ordered_json report;
  report["fusion"] = fusion.name();
  report["backend"] = options.backend;
  report["outputs"] = nlohmann::ordered_json::array();
  report["updated_inputs"] = nlohmann::ordered_json::array();
  std::vector<std::string> bf16Names;
  auto write = [&](const WrittenTensor& written, const char* section) {
    report[section].push_back(writeTensor(options.outDir, written));
    if (written.tensor->dtype() == DataType::BFloat16)
      bf16Names.push_back(written.name);
  };
  for (size_t i = 0; i < result.outputs.size(); ++i)
    write({fusion.outputs()[i]->name(), &result.outputs[i]}, "outputs");
  for (size_t i = 0; i < result.aliasFinalValues.size(); ++i)
    write({fusion.aliases()[i].destination->name(), &result.aliasFinalValues[i]}, "updated_inputs");
  report["notes"] = nlohmann::ordered_json::array();
  if (!bf16Names.empty())
    report["notes"].push_back(
        fmt::format("{} {} bf16: stored as uint16 bits (descr '<u2'); in NumPy use "
                    "numpy.load(path).view(ml_dtypes.bfloat16)",
                    fmt::join(bf16Names, ", "), bf16Names.size() == 1 ? "is" : "are"));
  return report;
}

/// Runs the fusion through a FusionExecutorCache on `backend` (the reference evaluator
/// included); the updated inputs are the bound tensors, changed in place.
EvaluationResult runOnBackend(const Fusion& fusion, BoundArguments& bound,
                              const std::string& backend, const RunOptions& options) {
  ExecutorOptions executorOptions;
  executorOptions.backend = backend;
  executorOptions.mode = parseMode(options.mode);
  executorOptions.host = hostOptionsOf(options.host);
  FusionExecutorCache executor(fusion, executorOptions);
  RunResult run = executor.run(bound.arguments);
  EvaluationResult result;
  result.outputs = std::move(run.outputs);
  for (const Alias& alias : fusion.aliases()) {
    size_t index = size_t(llvm::find(fusion.inputs(), alias.destination) - fusion.inputs().begin());
    result.aliasFinalValues.push_back(*bound.inputTensors[index]);
  }
  return result;
}

void runRun(const RunOptions& options) {
  std::string backend = commandLineBackend(options.backend);
  hostOptionsOf(options.host);
  if (backend == "none")
    fail("--backend none compiles without running, so there is nothing to write: use "
         "`widefuse compile` to see the kernels");
  std::unique_ptr<Fusion> fusion = loadFusionFile(options.file);
  BoundArguments bound = bindArguments(*fusion, parseAssignments(options.inputs, "--input"),
                                       parseAssignments(options.scalars, "--scalar"));
  checkArguments(*fusion, bound.arguments);
  checkDistinctFileNames(*fusion);
  SegmentedFusion segmented = segment(*fusion, {parseMode(options.mode)});
  EvaluationResult result = runOnBackend(*fusion, bound, backend, options);
  nlohmann::ordered_json report = writeResults(*fusion, result, options);
  report["backend"] = backend;
  nlohmann::json segments = segmentedFusionToJson(segmented);
  report["mode"] = segments["mode"];
  report["launches"] = segments["launches"];
  report["phases"] = segments["phases"];
  fmt::print("{}\n", report.dump(2));
}

} // namespace

void addRunCommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand(
      "run", "Run a fusion on .npy inputs and write its outputs and updated inputs as .npy");
  addFusionFileArgument(*command, options->file);
  // One NAME=VALUE per flag, so that a value list never swallows the positional FILE.
  command
      ->add_option("--input", options->inputs,
                   "NAME=PATH.npy for a tensor input (bf16: a '<u2' file of its bits)")
      ->allow_extra_args(false);
  command->add_option("--scalar", options->scalars, "NAME=VALUE for a scalar input")
      ->allow_extra_args(false);
  command->add_option("--out", options->outDir, "Directory for NAME.npy results (created)")
      ->required();
  command
      ->add_option("--backend", options->backend,
                   "auto (cuda when a GPU is present, else host), cuda, host or reference")
      ->capture_default_str();
  addHostBackendOptions(*command, options->host);
  command->add_option("--mode", options->mode, "per-component, batched, packed or auto")
      ->capture_default_str();
  command->callback([options] { runRun(*options); });
}

} // namespace widefuse
