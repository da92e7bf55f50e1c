/// `widefuse segment FILE [--mode M] [--json]`: shows how a fusion is split into kernels
/// without compiling or running anything.

#include "tools/commands.h"
#include "tools/fusion_file.h"

#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace widefuse {
namespace {

struct SegmentArguments {
  std::string path;
  std::string mode = "auto";
  bool json = false;
};

void runSegment(const SegmentArguments& arguments) {
  std::unique_ptr<Fusion> fusion = loadFusionFile(arguments.path);
  SegmentedFusion segmented = segment(*fusion, {parseMode(arguments.mode)});
  if (arguments.json)
    fmt::print("{}\n", segmentedFusionToJson(segmented).dump(2));
  else
    fmt::print("{}", formatSegmentedFusion(segmented));
}

} // namespace

void addSegmentCommand(CLI::App& app) {
  auto arguments = std::make_shared<SegmentArguments>();
  CLI::App* command =
      app.add_subcommand("segment", "Show how a fusion is grouped into kernels (no run)");
  addFusionFileArgument(*command, arguments->path);
  command->add_option("--mode", arguments->mode, "per-component, batched, packed or auto")
      ->capture_default_str();
  command->add_flag("--json", arguments->json, "Print the segmentation as JSON");
  command->callback([arguments] { runSegment(*arguments); });
}

} // namespace widefuse
