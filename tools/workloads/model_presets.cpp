#include "tools/workloads/model_presets.h"

#include "ir/error.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <nlohmann/json.hpp>

namespace widefuse::optim {
namespace {

/// One shape of the presets' JSON: an array of non-negative integers.
Shape shapeOf(const nlohmann::json& entry, const std::string& preset) {
  if (!entry.is_array())
    throw InternalError(
        fmt::format("model preset '{}': shape {} is not an array", preset, entry.dump()));
  Shape shape;
  for (const nlohmann::json& extent : entry) {
    if (!extent.is_number_unsigned())
      throw InternalError(fmt::format("model preset '{}': shape {} has an extent that is not a "
                                      "non-negative integer",
                                      preset, entry.dump()));
    shape.push_back(extent.get<int64_t>());
  }
  return shape;
}

/// The presets of the embedded JSON (model_presets.json), checked: a preset needs a name, a
/// description and its shapes.
std::vector<ModelPreset> readPresets(llvm::StringRef text) {
  nlohmann::json document = nlohmann::json::parse(text.begin(), text.end());
  std::vector<ModelPreset> presets;
  for (const nlohmann::json& entry : document.at("presets")) {
    ModelPreset preset;
    preset.name = entry.at("name").get<std::string>();
    preset.description = entry.at("description").get<std::string>();
    for (const nlohmann::json& shape : entry.at("shapes"))
      preset.shapes.push_back(shapeOf(shape, preset.name));
    presets.push_back(std::move(preset));
  }
  return presets;
}

/// Parses one extent: decimal digits only.
int64_t parseExtent(llvm::StringRef extent, size_t index, llvm::StringRef item) {
  if (extent.empty())
    fail("shape list item {} ('{}'): empty extent", index, item.str());
  if (extent.front() == '-' || extent.front() == '+')
    fail("shape list item {} ('{}'): extent '{}' has a sign; extents are non-negative integers",
         index, item.str(), extent.str());
  if (extent.find_first_not_of("0123456789") != llvm::StringRef::npos)
    fail("shape list item {} ('{}'): extent '{}' is not a non-negative integer", index, item.str(),
         extent.str());
  int64_t value = 0;
  if (extent.getAsInteger(10, value))
    fail("shape list item {} ('{}'): extent '{}' does not fit in int64", index, item.str(),
         extent.str());
  return value;
}

} // namespace

llvm::ArrayRef<ModelPreset> modelPresets() {
  static const std::vector<ModelPreset> presets = readPresets(modelPresetsText());
  return presets;
}

const ModelPreset& modelPreset(llvm::StringRef name) {
  for (const ModelPreset& preset : modelPresets())
    if (preset.name == name)
      return preset;
  llvm::SmallVector<llvm::StringRef, 8> names;
  for (const ModelPreset& preset : modelPresets())
    names.push_back(preset.name);
  fail("unknown model preset '{}'; the presets are: {}", name.str(), llvm::join(names, ", "));
}

std::vector<Shape> parseShapeList(llvm::StringRef text) {
  if (text.trim().empty())
    fail("empty shape list; expected shapes such as 1024x1024,4096");
  llvm::SmallVector<llvm::StringRef, 16> items;
  text.split(items, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  std::vector<Shape> shapes;
  int64_t total = 0;
  for (size_t position = 0; position < items.size(); ++position) {
    size_t index = position + 1;
    llvm::StringRef item = items[position].trim();
    if (item.empty())
      fail("shape list item {} is empty (in '{}')", index, text.str());
    Shape shape;
    if (item != "scalar") {
      llvm::SmallVector<llvm::StringRef, 4> extents;
      item.split(extents, 'x', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
      for (llvm::StringRef extent : extents)
        shape.push_back(parseExtent(extent, index, item));
    }
    int64_t elements = 1;
    for (int64_t extent : shape)
      if (__builtin_mul_overflow(elements, extent, &elements))
        fail("shape list item {} ('{}'): its element count does not fit in int64", index,
             item.str());
    if (__builtin_add_overflow(total, elements, &total))
      fail("shape list item {} ('{}'): the list's total element count does not fit in int64", index,
           item.str());
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

int64_t totalElements(llvm::ArrayRef<Shape> shapes) {
  int64_t total = 0;
  for (size_t index = 0; index < shapes.size(); ++index) {
    int64_t elements = 1;
    for (int64_t extent : shapes[index]) {
      if (extent < 0)
        fail("shape {} has a negative extent {}", index, extent);
      if (__builtin_mul_overflow(elements, extent, &elements))
        fail("shape {}: its element count does not fit in int64", index);
    }
    if (__builtin_add_overflow(total, elements, &total))
      fail("the total element count of {} shapes does not fit in int64", shapes.size());
  }
  return total;
}

} // namespace widefuse::optim
