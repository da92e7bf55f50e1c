// Block-scope reductions and expand_blocks in the IR: types, the text form, errors and the
// evaluator, against values computed here from the recursive definition of the tree over
// each block (docs/reductions.md §2, §3).
#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/reduction.h"
#include "ir/structural_hash.h"
#include "tests/ir/evaluator_test_support.h"
#include "tests/ir/reduction_reference.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>

#include <random>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// Evaluates a parsed fusion on `inputs`; returns its outputs.
std::vector<HostTensor> runText(const std::string& text, std::vector<HostTensor>& inputs) {
  auto fusion = parseFusion(text);
  std::vector<Argument> arguments;
  for (HostTensor& input : inputs)
    arguments.push_back(input.ref());
  return std::move(evaluate(*fusion, arguments).outputs);
}

/// Elements of `x` with every mantissa bit in use, some zeros of both signs, and a NaN now
/// and then, so that both the order of the adds and max's NaN rule show.
std::vector<double> randomValues(std::mt19937& random, int64_t count) {
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i) {
    double v = std::ldexp(unit(random), int(random() % 9) - 4);
    if (random() % 11 == 0)
      v = random() % 2 ? 0.0 : -0.0;
    if (random() % 97 == 0)
      v = NAN;
    values.push_back(v);
  }
  return values;
}

} // namespace

/// Every block size, with a short last block and with whole ones: each block's result is the
/// recursive tree over that block's elements.
TEST(BlockReductions, EachBlockIsTheTreeOverItsElements) {
  std::mt19937 random(5);
  for (int64_t block : {1, 2, 16, 256, 1024})
    for (int64_t count : {block, 3 * block, 3 * block + 1, 1 + int64_t(random() % 2500)}) {
      SCOPED_TRACE(fmt::format("{} elements in blocks of {}", count, block));
      std::vector<double> values = randomValues(random, count);
      std::vector<HostTensor> inputs{tensorOf(DataType::Float, values)};
      std::string text = fmt::format("fusion b(x: f32[{0}]) {{\n  s = sum(x, block={1})\n"
                                     "  m = max(x, block={1})\n  return s, m\n}}\n",
                                     count, block);
      std::vector<HostTensor> outputs = runText(text, inputs);
      int64_t blocks = (count + block - 1) / block;
      ASSERT_EQ(outputs[0].shape(), llvm::ArrayRef<int64_t>({blocks}));
      for (int64_t b = 0; b < blocks; ++b) {
        std::vector<float> asFloat(values.begin() + b * block,
                                   values.begin() + std::min(count, (b + 1) * block));
        std::vector<double> asDouble(asFloat.begin(), asFloat.end());
        double sum = *treeOf(asFloat, [](float a, float c) { return a + c; }) + 0.0f;
        expectSameValue(outputs[0].as<float>()[b], sum, fmt::format("sum of block {}", b));
        expectSameValue(outputs[1].as<float>()[b], *treeOf(asDouble, referenceMax),
                        fmt::format("max of block {}", b));
      }
    }
}

/// Blocks run over the logical order of every dimension: a block may end mid-row.
TEST(BlockReductions, BlocksRunAcrossRowsAndEveryOpHasItsType) {
  std::vector<double> values;
  for (int i = 0; i < 15; ++i)
    values.push_back(i % 4 == 0 ? 0 : i);
  HostTensor x(DataType::Int32, {3, 5});
  for (int64_t i = 0; i < 15; ++i)
    setElement(x, i, values[size_t(i)]);
  std::vector<HostTensor> inputs{x};
  std::vector<HostTensor> outputs =
      runText("fusion b(x: i32[3, 5]) {\n  s = sum(x, block=4)\n  lo = min(x, block=4)\n"
              "  a = all(x, block=4)\n  y = any(x, block=8)\n  return s, lo, a, y\n}\n",
              inputs);
  EXPECT_EQ(outputs[0].dtype(), DataType::Int64);
  EXPECT_EQ(outputs[2].dtype(), DataType::Bool);
  for (int64_t b = 0; b < 4; ++b) {
    int64_t sum = 0, low = INT64_MAX;
    bool every = true;
    for (int64_t i = 4 * b; i < std::min<int64_t>(15, 4 * b + 4); ++i) {
      sum += int64_t(values[size_t(i)]);
      low = std::min(low, int64_t(values[size_t(i)]));
      every = every && values[size_t(i)] != 0;
    }
    EXPECT_EQ(outputs[0].as<int64_t>()[b], sum) << "block " << b;
    EXPECT_EQ(outputs[1].as<int32_t>()[b], low) << "block " << b;
    EXPECT_EQ(bool(outputs[2].as<uint8_t>()[b]), every) << "block " << b;
  }
  EXPECT_EQ(outputs[3].shape(), llvm::ArrayRef<int64_t>({2}));
}

/// The use the scope exists for: each element divided by its block's absmax, the scales
/// written beside it (blockwise quantization), with symbolic extents.
TEST(BlockReductions, ExpandBlocksGivesEachElementItsBlocksValue) {
  std::mt19937 random(9);
  HostTensor x = tensorOf(DataType::Float, randomValues(random, 70));
  for (int64_t i = 0; i < 70; ++i)
    if (std::isnan(x.as<float>()[i]))
      x.as<float>()[i] = 0.5f;
  HostTensor matrix(DataType::Float, {7, 10});
  std::copy_n(x.as<float>(), 70, matrix.as<float>());
  std::vector<HostTensor> inputs{matrix};
  std::vector<HostTensor> outputs =
      runText("fusion q(x: f32[?, 10]) {\n  n = size(x, 0)\n  s = max(abs(x), block=16)\n"
              "  e = expand_blocks(s, [n, 10], block=16)\n  q = div(x, e)\n  return q, s\n}\n",
              inputs);
  ASSERT_EQ(outputs[0].shape(), llvm::ArrayRef<int64_t>({7, 10}));
  ASSERT_EQ(outputs[1].shape(), llvm::ArrayRef<int64_t>({5}));
  for (int64_t i = 0; i < 70; ++i) {
    float absmax = 0;
    for (int64_t j = i / 16 * 16; j < std::min<int64_t>(70, i / 16 * 16 + 16); ++j)
      absmax = std::max(absmax, std::fabs(x.as<float>()[j]));
    EXPECT_EQ(outputs[1].as<float>()[i / 16], absmax) << "block " << i / 16;
    expectSameValue(outputs[0].as<float>()[i], x.as<float>()[i] / absmax,
                    fmt::format("element {}", i));
  }
}

TEST(BlockReductions, TextFormAndKeysCarryTheBlock) {
  const char* text = "fusion b(x: f32[4, 1000], scales: f32[16]) {\n"
                     "  r = max(x, block=256)\n"
                     "  e = expand_blocks(scales, [4, 1000], block=256)\n"
                     "  y = mul(x, e)\n"
                     "  return r, y\n"
                     "}\n";
  auto fusion = parseFusion(text);
  std::string printed = printFusion(*fusion);
  EXPECT_EQ(printFusion(*parseFusion(printed)), printed);
  EXPECT_CONTAINS(printed, "r = max(x, block=256)");
  EXPECT_CONTAINS(printed, "e = expand_blocks(scales, [4, 1000], block=256)");
  EXPECT_EQ(fusion->lookup("r")->extents(), llvm::ArrayRef<int64_t>({16}));
  // The block is part of the structural key: blocks of 128 are another kernel.
  std::string other = text;
  other.replace(other.find("block=256"), 9, "block=128");
  other.replace(other.find("f32[16]"), 7, "f32[32]");
  other.replace(other.find("block=256"), 9, "block=128");
  auto changed = parseFusion(other);
  EXPECT_NE(structuralKey(*fusion).hash(), structuralKey(*changed).hash());
}

TEST(BlockReductions, WrongBlocksAndCountsAreRefusedByName) {
  auto parse = [](const std::string& body, const std::string& inputs = "x: f32[4, 8]") {
    return errorOf([&] { parseFusion("fusion f(" + inputs + ") {\n" + body + "\n}\n"); });
  };
  EXPECT_CONTAINS(parse("  s = sum(x, block=3)\n  return s"),
                  "sum(x: f32[4, 8], block=3): a block has a power of two of elements from 1 to "
                  "1024");
  EXPECT_CONTAINS(parse("  s = sum(x, block=2048)\n  return s"), "from 1 to 1024");
  EXPECT_CONTAINS(parse("  s = sum(x, x, block=4)\n  return s"),
                  "a reduction over blocks takes one operand");
  EXPECT_CONTAINS(parse("  s = sum(x, block=4, x)\n  return s"), "after the block");
  EXPECT_CONTAINS(parse("  e = expand_blocks(x, [4, 8], block=4)\n  return e"),
                  "the operand must be a rank-1 tensor, one element per block");
  EXPECT_CONTAINS(parse("  e = expand_blocks(s, [4, 8], block=8)\n  return e", "s: f32[3]"),
                  "32 elements are 4 blocks, but the operand has 3");
  EXPECT_CONTAINS(parse("  e = expand_blocks(s, [4, ?], block=8)\n  return e", "s: f32[3]"),
                  "output extent 1 must be a number >= 0 or an extent value");
  // Symbolic extents are checked when the fusion runs, before anything is computed.
  auto fusion = parseFusion("fusion f(x: f32[?], s: f32[?]) {\n  n = size(x, 0)\n"
                            "  e = expand_blocks(s, [n], block=4)\n  y = add(x, e)\n"
                            "  return y\n}\n");
  HostTensor x(DataType::Float, {9}), s(DataType::Float, {2});
  std::vector<Argument> arguments{x.ref(), s.ref()};
  EXPECT_CONTAINS(errorOf([&] { evaluate(*fusion, arguments); }),
                  "e: at run time 9 elements are 3 blocks of 4, but 's' has 2 elements");
}

/// Zero elements are zero blocks: an empty result, even for max, which has no value over zero
/// elements only when a result must exist.
TEST(BlockReductions, ZeroElementsAreZeroBlocks) {
  std::vector<HostTensor> inputs{HostTensor(DataType::Float, {0, 4})};
  std::vector<HostTensor> outputs =
      runText("fusion z(x: f32[?, 4]) {\n  m = max(x, block=8)\n  return m\n}\n", inputs);
  EXPECT_EQ(outputs[0].shape(), llvm::ArrayRef<int64_t>({0}));
}

/// The C++ FusionDefinition spells the scope with Blocks, and a braced list stays dims.
TEST(BlockReductions, TheCppApiSpellsBlocks) {
  FusionDefinition fd("api");
  Val x = fd.defineTensor({4, 8}, DataType::Float, "x");
  Val blocks = max(x, Blocks{8});
  EXPECT_EQ(blocks.value()->extents(), llvm::ArrayRef<int64_t>({4}));
  EXPECT_EQ(sum(x, {1}).value()->extents(), llvm::ArrayRef<int64_t>({4}));
  Val expanded = expand_blocks(blocks, {4, 8}, Blocks{8});
  EXPECT_EQ(expanded.value()->extents(), llvm::ArrayRef<int64_t>({4, 8}));
  EXPECT_CONTAINS(errorOf([&] { max(x, Blocks{6}); }), "a block has a power of two");
}
