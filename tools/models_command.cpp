/// `widefuse models [--json]`: lists the model presets (parameter shape lists computed from
/// public configurations) with their tensor counts and total elements.

#include "tools/commands.h"

#include "tools/workloads/model_presets.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace widefuse {
namespace {

struct ModelsArguments {
  bool json = false;
};

/// `count` with a comma every three digits: 124,439,808.
std::string withThousandsSeparators(int64_t count) {
  std::string digits = fmt::format("{}", count);
  std::string result;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      result += ',';
    result += digits[i];
  }
  return result;
}

/// `count` rounded to one decimal with a K, M or B suffix: 124.4M; below 1000 as it is.
std::string withSuffix(int64_t count) {
  const std::pair<double, const char*> units[] = {{1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  for (auto [scale, suffix] : units)
    if (static_cast<double>(count) >= scale)
      return fmt::format("{:.1f}{}", static_cast<double>(count) / scale, suffix);
  return fmt::format("{}", count);
}

void printTable() {
  struct Row {
    std::string name, tensors, elements, size, description;
  };
  std::vector<Row> rows = {{"name", "tensors", "elements", "size", "description"}};
  for (const optim::ModelPreset& preset : optim::modelPresets()) {
    int64_t elements = optim::totalElements(preset.shapes);
    rows.push_back({preset.name, withThousandsSeparators(int64_t(preset.shapes.size())),
                    withThousandsSeparators(elements), withSuffix(elements), preset.description});
  }
  size_t name = 0, tensors = 0, elements = 0, size = 0;
  for (const Row& row : rows) {
    name = std::max(name, row.name.size());
    tensors = std::max(tensors, row.tensors.size());
    elements = std::max(elements, row.elements.size());
    size = std::max(size, row.size.size());
  }
  for (const Row& row : rows)
    fmt::print("{:<{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", row.name, name, row.tensors, tensors,
               row.elements, elements, row.size, size, row.description);
}

void printJson() {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const optim::ModelPreset& preset : optim::modelPresets()) {
    nlohmann::ordered_json entry;
    entry["name"] = preset.name;
    entry["description"] = preset.description;
    entry["tensors"] = preset.shapes.size();
    entry["elements"] = optim::totalElements(preset.shapes);
    list.push_back(std::move(entry));
  }
  fmt::print("{}\n", list.dump(2));
}

} // namespace

void addModelsCommand(CLI::App& app) {
  auto arguments = std::make_shared<ModelsArguments>();
  CLI::App* command = app.add_subcommand(
      "models", "List the model presets (parameter shapes from public configs) and their sizes");
  command->add_flag("--json", arguments->json, "Print the list as JSON");
  command->callback([arguments] {
    if (arguments->json)
      printJson();
    else
      printTable();
  });
}

} // namespace widefuse
