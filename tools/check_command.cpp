/// `widefuse check FILE`: the quickest way to see whether a hand-written fusion is valid and
/// how widefuse reads it.

#include "tools/commands.h"
#include "tools/fusion_file.h"

#include "ir/printer.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>

namespace widefuse {
namespace {

void runCheck(const std::string& path) {
  std::unique_ptr<Fusion> fusion = loadFusionFile(path);
  std::string text = printFusion(*fusion);
  if (text.empty() || text.back() != '\n')
    text.push_back('\n');
  fmt::print("{}", text);
}

} // namespace

void addCheckCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "check", "Parse and verify a fusion text file and print it in canonical form");
  addFusionFileArgument(*command, *path);
  command->callback([path] { runCheck(*path); });
}

} // namespace widefuse
