// Model presets against independently known parameter counts (the published totals of each
// model's PyTorch module), the embedded JSON against the source tree's, and the `--shapes` list
// parser on good and bad input.

#include "tools/workloads/model_presets.h"

#include "ir/error.h"

#include <gtest/gtest.h>
#include <llvm/ADT/STLExtras.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace widefuse;
using namespace widefuse::optim;

namespace {

/// The message of the widefuse::Error that `function` throws, or "" if it throws none.
template <typename Function> std::string errorOf(Function function) {
  try {
    function();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

struct KnownTotal {
  const char* name;
  size_t tensors;
  int64_t elements;
};

// Tensor counts are those of `named_parameters()`: e.g. GPT-2 has wte, wpe, 12 per block and
// ln_f's two; elements are the totals PyTorch reports (sum of numel()).
constexpr KnownTotal kKnownTotals[] = {
    {"tiny", 6, 16 + 3 + 1 + 0 + 30 + 17},        {"seed", 2, 2 * 1024 * 1024},
    {"gpt2", 2 + 12 * 12 + 2, 124'439'808},       {"bert-base", 5 + 12 * 16 + 2, 109'482'240},
    {"vit-b16", 4 + 12 * 12 + 2 + 2, 86'567'656}, {"llama-7b", 1 + 32 * 9 + 2, 6'738'415'616},
};

TEST(ModelPresets, ListsThePresetsInOrder) {
  llvm::ArrayRef<ModelPreset> presets = modelPresets();
  ASSERT_EQ(presets.size(), std::size(kKnownTotals));
  for (size_t i = 0; i < presets.size(); ++i) {
    EXPECT_EQ(presets[i].name, kKnownTotals[i].name);
    EXPECT_FALSE(presets[i].description.empty()) << presets[i].name;
  }
  // Built once: the same storage every time.
  EXPECT_EQ(modelPresets().data(), presets.data());
}

TEST(ModelPresets, TotalsMatchThePublishedParameterCounts) {
  for (const KnownTotal& known : kKnownTotals) {
    const ModelPreset& preset = modelPreset(known.name);
    EXPECT_EQ(preset.shapes.size(), known.tensors) << known.name;
    EXPECT_EQ(totalElements(preset.shapes), known.elements) << known.name;
  }
}

TEST(ModelPresets, ShapesFollowTheModulesLayout) {
  const ModelPreset& gpt2 = modelPreset("gpt2");
  EXPECT_EQ(gpt2.shapes[0], Shape({50257, 768})); // wte
  EXPECT_EQ(gpt2.shapes[1], Shape({1024, 768}));  // wpe
  EXPECT_EQ(gpt2.shapes[4], Shape({768, 2304}));  // h.0.attn.c_attn.weight (Conv1D)
  EXPECT_EQ(gpt2.shapes.back(), Shape({768}));    // ln_f.bias

  const ModelPreset& vit = modelPreset("vit-b16");
  EXPECT_EQ(vit.shapes[0], Shape({1, 1, 768}));      // class_token
  EXPECT_EQ(vit.shapes[1], Shape({768, 3, 16, 16})); // conv_proj.weight
  EXPECT_EQ(vit.shapes[3], Shape({1, 197, 768}));    // encoder.pos_embedding
  EXPECT_EQ(vit.shapes.back(), Shape({1000}));       // heads.head.bias

  const ModelPreset& llama = modelPreset("llama-7b");
  EXPECT_EQ(llama.shapes[5], Shape({11008, 4096}));     // layers.0.mlp.gate_proj
  EXPECT_EQ(llama.shapes[7], Shape({4096, 11008}));     // layers.0.mlp.down_proj
  EXPECT_EQ(llama.shapes.back(), Shape({32000, 4096})); // lm_head

  const ModelPreset& tiny = modelPreset("tiny");
  EXPECT_TRUE(llvm::is_contained(tiny.shapes, Shape({0})));
  EXPECT_TRUE(llvm::is_contained(tiny.shapes, Shape({1})));

  EXPECT_EQ(modelPreset("seed").shapes, std::vector<Shape>(2, Shape({1024, 1024})));
  llvm::SmallVector<Shape, 2> seed = seedExampleShapes();
  EXPECT_EQ(modelPreset("seed").shapes, std::vector<Shape>(seed.begin(), seed.end()));
}

TEST(ModelPresets, EmbedTheJsonThePythonPackageShips) {
  // The build embeds python_frontend/widefuse/model_presets.json as it is: the presets of the
  // tools and of widefuse.model_shapes are one file.
  std::ifstream file(WIDEFUSE_SOURCE_DIR "/python_frontend/widefuse/model_presets.json");
  ASSERT_TRUE(file) << "cannot read the source tree's model_presets.json";
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(modelPresetsText().str(), text.str());
  EXPECT_TRUE(modelPresetsText().contains("\"llama-7b\""));
}

TEST(ModelPresets, UnknownNameListsThePresets) {
  std::string message = errorOf([] { modelPreset("gpt3"); });
  EXPECT_NE(message.find("'gpt3'"), std::string::npos) << message;
  for (const KnownTotal& known : kKnownTotals)
    EXPECT_NE(message.find(known.name), std::string::npos) << message;
}

TEST(ParseShapeList, ParsesShapes) {
  EXPECT_EQ(parseShapeList("1024x1024,4096,3x5x2"),
            (std::vector<Shape>{{1024, 1024}, {4096}, {3, 5, 2}}));
  EXPECT_EQ(parseShapeList("1"), (std::vector<Shape>{{1}}));
  EXPECT_EQ(parseShapeList("scalar,0,2x0"), (std::vector<Shape>{{}, {0}, {2, 0}}));
  EXPECT_EQ(parseShapeList(" 4x4 , 7 "), (std::vector<Shape>{{4, 4}, {7}}));
  EXPECT_EQ(parseShapeList("9223372036854775807"), (std::vector<Shape>{{9223372036854775807}}));
  // A zero extent makes the product 0 whatever the other extents are.
  EXPECT_EQ(parseShapeList("0x9223372036854775807x9223372036854775807"),
            (std::vector<Shape>{{0, 9223372036854775807, 9223372036854775807}}));
}

TEST(ParseShapeList, ErrorsNameTheBadItem) {
  struct Case {
    const char* text;
    const char* expected; // a part of the message
  };
  const Case cases[] = {
      {"", "empty shape list"},
      {"  ", "empty shape list"},
      {"4,,5", "item 2 is empty"},
      {"4,", "item 2 is empty"},
      {",4", "item 1 is empty"},
      {"4,3x-1", "item 2 ('3x-1'): extent '-1' has a sign"},
      {"+4", "item 1 ('+4'): extent '+4' has a sign"},
      {"4xa", "item 1 ('4xa'): extent 'a' is not"},
      {"2,1.5", "item 2 ('1.5'): extent '1.5' is not"},
      {"4X4", "extent '4X4' is not"},
      {"3x", "item 1 ('3x'): empty extent"},
      {"x3", "item 1 ('x3'): empty extent"},
      {"3 x 4", "extent '3 ' is not"},
      {"[]", "extent '[]' is not"},
      {"1,9223372036854775808", "item 2 ('9223372036854775808'): extent '9223372036854775808' "
                                "does not fit in int64"},
      {"4294967296x4294967296", "item 1 ('4294967296x4294967296'): its element count does not"},
      {"4611686018427387904,4611686018427387904", "item 2 ('4611686018427387904'): the list's "
                                                  "total element count does not fit"},
  };
  for (const Case& c : cases) {
    std::string message = errorOf([&] { parseShapeList(c.text); });
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "input '" << c.text << "' gave: " << message;
  }
}

TEST(TotalElements, CountsAndChecks) {
  EXPECT_EQ(totalElements({}), 0);
  EXPECT_EQ(totalElements({Shape{}}), 1); // 0-d: one element
  EXPECT_EQ(totalElements({Shape{2, 3}, Shape{0}, Shape{5}}), 11);
  EXPECT_NE(errorOf([] { totalElements({Shape{2, -1}}); }).find("negative"), std::string::npos);
  EXPECT_NE(errorOf([] {
              totalElements({Shape{int64_t(1) << 62}, Shape{int64_t(1) << 62}});
            }).find("does not fit"),
            std::string::npos);
}

} // namespace
