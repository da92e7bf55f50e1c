// Codebooks and their ops (code_value, nearest_code): each table's shape and order, the
// rounding against an exhaustive search written here, the text form, the evaluator and the
// errors (docs/ir_reference.md, "Codebooks").
#include "ir/codebook.h"
#include "ir/error.h"
#include "ir/evaluator.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// The rule by counting every entry: the largest c with table[c] <= x (0 when none), then
/// c + 1 when x is at least half way to table[c + 1].
uint8_t exhaustiveCode(llvm::ArrayRef<float> table, float x) {
  size_t below = 0;
  for (float entry : table)
    below += entry <= x;
  size_t code = below == 0 ? 0 : below - 1;
  size_t up = std::min(code + 1, table.size() - 1);
  float half = (table[up] - table[code]) * 0.5f;
  return uint8_t(x - table[code] >= half ? up : code);
}

/// Values that probe every edge of `table`: its entries, the midpoints and their neighbours,
/// beyond both ends, NaN and infinities, and random values across its range.
std::vector<float> probes(llvm::ArrayRef<float> table) {
  std::vector<float> values = {std::nanf(""),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               -2.0f,
                               2.0f,
                               0.0f,
                               -0.0f};
  for (size_t c = 0; c < table.size(); ++c) {
    values.push_back(table[c]);
    if (c + 1 < table.size()) {
      float middle = table[c] + (table[c + 1] - table[c]) * 0.5f;
      values.push_back(middle);
      values.push_back(std::nextafter(middle, -1.0f));
      values.push_back(std::nextafter(middle, 1.0f));
    }
  }
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1.1f, 1.1f);
  for (int i = 0; i < 20000; ++i)
    values.push_back(uniform(random) * std::pow(10.0f, -float(i % 8)));
  return values;
}

TEST(Codebooks, TablesAreSortedWithTheReferencesEnds) {
  struct Expected {
    Codebook codebook;
    size_t size;
    float first, last;
  };
  for (Expected expected : {Expected{Codebook::Dynamic8Signed, 256, -0.99296875f, 1.0f},
                            Expected{Codebook::Dynamic8Unsigned, 256, 0.0f, 1.0f},
                            Expected{Codebook::Dynamic4Signed, 16, -0.8875f, 1.0f},
                            Expected{Codebook::Linear4Unsigned, 16, 0.0625f, 1.0f}}) {
    llvm::ArrayRef<float> table = codebookValues(expected.codebook);
    ASSERT_EQ(table.size(), expected.size) << codebookName(expected.codebook).str();
    EXPECT_EQ(table.front(), expected.first);
    EXPECT_EQ(table.back(), expected.last);
    EXPECT_TRUE(std::is_sorted(table.begin(), table.end()));
    EXPECT_EQ(parseCodebook(codebookName(expected.codebook)), expected.codebook);
  }
  // The signed maps hold zero where both halves meet; the 4-bit linear map has none.
  EXPECT_EQ(codebookValues(Codebook::Dynamic8Signed)[127], 0.0f);
  EXPECT_EQ(codebookValues(Codebook::Dynamic4Signed)[7], 0.0f);
  EXPECT_EQ(codebookValues(Codebook::Linear4Unsigned)[4], 5.0f / 16.0f);
}

TEST(Codebooks, TheBinarySearchIsTheExhaustiveRule) {
  for (Codebook codebook : kAllCodebooks) {
    llvm::ArrayRef<float> table = codebookValues(codebook);
    for (float x : probes(table))
      ASSERT_EQ(nearestCode(codebook, x), exhaustiveCode(table, x))
          << codebookName(codebook).str() << " x = " << x;
    for (uint64_t code = 0; code < 512; ++code)
      ASSERT_EQ(codeValue(codebook, code), table[code % table.size()]);
  }
}

TEST(Codebooks, OpsEvaluateRoundTripInTextAndRefuseWrongTypes) {
  const char* text = R"(fusion q(c: u8[600], x: f32[600]) {
  v = code_value(c, codebook=dynamic8_unsigned)
  k = nearest_code(x, codebook=dynamic4_signed)
  return v, k
}
)";
  auto fusion = parseFusion(text);
  EXPECT_EQ(printFusion(*fusion), text);
  HostTensor codes(DataType::UInt8, {600}), values(DataType::Float, {600});
  std::mt19937 random(3);
  llvm::ArrayRef<float> unsignedMap = codebookValues(Codebook::Dynamic8Unsigned);
  llvm::ArrayRef<float> map4 = codebookValues(Codebook::Dynamic4Signed);
  std::vector<float> probe = probes(map4);
  for (int i = 0; i < 600; ++i) {
    codes.as<uint8_t>()[i] = uint8_t(random());
    values.as<float>()[i] = probe[size_t(i) * 7 % probe.size()];
  }
  auto outputs = evaluate(*fusion, {codes.ref(), values.ref()}).outputs;
  for (int i = 0; i < 600; ++i) {
    EXPECT_EQ(outputs[0].as<float>()[i], unsignedMap[codes.as<uint8_t>()[i]]);
    EXPECT_EQ(outputs[1].as<uint8_t>()[i], exhaustiveCode(map4, values.as<float>()[i]));
  }
  EXPECT_NE(errorOf([] {
              parseFusion("fusion f(x: f32[4]) {\n  y = code_value(x, codebook=dynamic8_signed)\n"
                          "  return y\n}\n");
            }).find("code_value takes an integer code, not f32"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseFusion("fusion f(x: f16[4]) {\n  y = nearest_code(x, codebook=linear4_unsigned)"
                          "\n  return y\n}\n");
            }).find("nearest_code takes an f32 value, not f16 (cast it first)"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseFusion("fusion f(x: f32[4]) {\n  y = nearest_code(x, codebook=dynamic9)\n"
                          "  return y\n}\n");
            }).find("a codebook name (dynamic8_signed dynamic8_unsigned"),
            std::string::npos);
}

} // namespace
