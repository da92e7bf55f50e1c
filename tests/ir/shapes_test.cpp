// Shapes as nvFuser's definitions use them: implicit broadcasting of extent-1 (broadcast)
// dimensions and of lower ranks, extent values (size) in broadcast_in_dim and in arithmetic,
// their text form and their run-time checks. Expected values are computed here, by loops
// over the inputs.

#include "evaluator_test_support.h"
#include "tests/support/error_of.h"

#include "ir/parser.h"
#include "ir/printer.h"

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// A row-major tensor of `shape` holding 0.5, 1.5, 2.5, ... (exact in f32).
HostTensor counting(llvm::ArrayRef<int64_t> shape, double start = 0.5) {
  HostTensor tensor(DataType::Float, shape);
  for (int64_t i = 0; i < tensor.numel(); ++i)
    tensor.as<float>()[i] = float(start + double(i));
  return tensor;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(ImplicitBroadcast, AnExtent1DimensionStretchesToTheOtherOperandsSymbolicExtent) {
  FusionDefinition fd("bias");
  Val row = fd.defineTensor({1, kSymbolicExtent}, DataType::Float, "row");
  Val full = fd.defineTensor({kSymbolicExtent, kSymbolicExtent}, DataType::Float, "full");
  Val sum = row + full;
  EXPECT_EQ(sum.value()->extents().vec(), (std::vector<int64_t>{-1, -1}));
  fd.addOutput(sum);
  auto fusion = fd.finalize();
  std::string text = printFusion(*fusion);
  EXPECT_TRUE(contains(text, "s = size(full, 0)")) << text;
  EXPECT_TRUE(contains(text, "t = broadcast_in_dim(row, [s, ?], [0, 1])")) << text;
  EXPECT_EQ(printFusion(*parseFusion(text)), text);
  for (int64_t rows : {1, 3}) {
    HostTensor a = counting({1, 4}), b = counting({rows, 4}, 100.5);
    HostTensor out = std::move(evaluate(*fusion, {a.ref(), b.ref()}).outputs.at(0));
    ASSERT_EQ(out.shape().vec(), (std::vector<int64_t>{rows, 4}));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(out.as<float>()[i * 4 + j], a.as<float>()[j] + b.as<float>()[i * 4 + j]);
  }
}

TEST(ImplicitBroadcast, LowerRanksGainLeadingDimensionsAndStaticOnesStretchToStaticExtents) {
  FusionDefinition fd("ranks");
  Val column = fd.defineTensor({3, 1}, DataType::Float, "column");
  Val row = fd.defineTensor({4}, DataType::Float, "row");
  Val product = column * row;
  EXPECT_EQ(product.value()->extents().vec(), (std::vector<int64_t>{3, 4}));
  fd.addOutput(product);
  auto fusion = fd.finalize();
  HostTensor a = counting({3, 1}), b = counting({4}, 10.5);
  HostTensor out = std::move(evaluate(*fusion, {a.ref(), b.ref()}).outputs.at(0));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(out.as<float>()[i * 4 + j], a.as<float>()[i] * b.as<float>()[j]);
}

TEST(ImplicitBroadcast, ASymbolicExtentNeverStretchesAndStaticOnesMustAgree) {
  FusionDefinition fd("symbolic");
  Val a = fd.defineTensor({kSymbolicExtent}, DataType::Float, "a");
  Val b = fd.defineTensor({kSymbolicExtent}, DataType::Float, "b");
  fd.addOutput(a + b);
  auto fusion = fd.finalize();
  HostTensor one = counting({1}), four = counting({4});
  EXPECT_TRUE(contains(errorOf([&] {
                         evaluate(*fusion, {one.ref(), four.ref()});
                       }),
                       "at run time 'a' has shape [1] but 'b' has shape [4]"));
  FusionDefinition bad("static");
  Val c = bad.defineTensor({2, 3}, DataType::Float, "c");
  Val d = bad.defineTensor({2, 4}, DataType::Float, "d");
  std::string message = errorOf([&] { c + d; });
  EXPECT_TRUE(contains(message, "shapes [2, 3] ('c') and [2, 4] ('d') do not broadcast"))
      << message;
  EXPECT_EQ(bad.fusion().numExprs(), 0u); // nothing half-built is left behind
}

TEST(ImplicitBroadcast, CopyBroadcastsItsSourceButNeverTheDestination) {
  FusionDefinition fd("copy");
  Val row = fd.defineTensor({1, 3}, DataType::Float, "row");
  Val full = fd.defineTensor({4, 3}, DataType::Float, "full");
  EXPECT_TRUE(contains(errorOf([&] { fd.copy_(full, row); }), "no broadcast into the destination"));
  fd.copy_(row * 2.0, full);
  auto fusion = fd.finalize();
  HostTensor a = counting({1, 3}), b = counting({4, 3});
  evaluate(*fusion, {a.ref(), b.ref()});
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(b.as<float>()[i], a.as<float>()[i % 3] * 2.0f);
}

TEST(ExtentValues, SizeIsAnInt64ScalarReadAtRunTime) {
  FusionDefinition fd("sizes");
  Val x = fd.defineTensor({kSymbolicExtent, 2}, DataType::Float, "x");
  Val n = size(x, 0);
  EXPECT_EQ(n.dtype(), DataType::Int64);
  EXPECT_TRUE(n.value()->isScalar() && !n.value()->isWeak());
  fd.addOutput(x * n + size(x, 1));
  std::string message = errorOf([&] { size(x, 2); });
  EXPECT_TRUE(contains(message, "dim 2 is outside the operand's rank 2")) << message;
  auto fusion = fd.finalize();
  std::string text = printFusion(*fusion);
  EXPECT_TRUE(contains(text, "= size(x, 0)")) << text;
  EXPECT_EQ(printFusion(*parseFusion(text)), text);
  HostTensor a = counting({5, 2});
  HostTensor out = std::move(evaluate(*fusion, {a.ref()}).outputs.at(0));
  for (int64_t i = 0; i < 10; ++i)
    EXPECT_EQ(out.as<float>()[i], a.as<float>()[i] * 5.0f + 2.0f);
}

TEST(ExtentValues, ABroadcastExtentNamesATensorsExtentAndIsCheckedAtRunTime) {
  auto fusion = parseFusion("fusion f(t: f32[?, ?], bias: f32[?]) {\n"
                            "  n = size(t, 0)\n"
                            "  b = broadcast_in_dim(bias, [n, ?], [1])\n"
                            "  y = add(t, b)\n"
                            "  return y\n"
                            "}\n");
  EXPECT_TRUE(contains(printFusion(*fusion), "b = broadcast_in_dim(bias, [n, ?], [1])"));
  HostTensor t = counting({3, 4}), bias = counting({4}, 20.5);
  HostTensor out = std::move(evaluate(*fusion, {t.ref(), bias.ref()}).outputs.at(0));
  ASSERT_EQ(out.shape().vec(), (std::vector<int64_t>{3, 4}));
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(out.as<float>()[i], t.as<float>()[i] + bias.as<float>()[i % 4]);
  HostTensor shortBias = counting({3});
  std::string message = errorOf([&] { evaluate(*fusion, {t.ref(), shortBias.ref()}); });
  EXPECT_TRUE(contains(message, "at run time 't' has shape [3, 4] but 'b' has shape [3, 3]"))
      << message;
}

TEST(ExtentValues, AnIntInputIsAnExtentReadAtRunTime) {
  // nvFuser's define_vector(n): runtime scalars as a broadcast's output shape.
  auto fusion = parseFusion("fusion f(t: f32[?], k: i64) {\n"
                            "  b = broadcast_in_dim(t, [k, ?], [1])\n"
                            "  return b\n"
                            "}\n");
  std::string text = printFusion(*fusion);
  EXPECT_TRUE(contains(text, "b = broadcast_in_dim(t, [k, ?], [1])")) << text;
  EXPECT_EQ(printFusion(*parseFusion(text)), text);
  HostTensor t = counting({4});
  for (int64_t k : {0, 1, 3}) {
    HostTensor out = std::move(evaluate(*fusion, {t.ref(), ScalarArgument(k)}).outputs.at(0));
    ASSERT_EQ(out.shape().vec(), (std::vector<int64_t>{k, 4}));
    for (int64_t i = 0; i < 4 * k; ++i)
      EXPECT_EQ(out.as<float>()[i], t.as<float>()[i % 4]);
  }
  std::string message = errorOf([&] { evaluate(*fusion, {t.ref(), ScalarArgument(int64_t(-2))}); });
  EXPECT_TRUE(contains(message, "b: at run time output extent 0 ('k') is -2: an extent cannot be "
                                "negative"))
      << message;
}

TEST(ExtentValues, AnExtentMayBeIntegerArithmeticOfSizesInputsAndConstants) {
  auto fusion = parseFusion("fusion f(t: f32[?], u: f32[?, ?], k: i64) {\n"
                            "  n = size(u, 0)\n"
                            "  twice = mul(n, 2)\n"
                            "  rows = sub(twice, div(k, 3))\n"
                            "  b = broadcast_in_dim(t, [rows, ?], [1])\n"
                            "  return b\n"
                            "}\n");
  HostTensor t = counting({2}), u = counting({5, 1});
  // rows = 5 * 2 - 7 / 3 = 8 (C's truncating division)
  HostTensor out =
      std::move(evaluate(*fusion, {t.ref(), u.ref(), ScalarArgument(int64_t(7))}).outputs.at(0));
  ASSERT_EQ(out.shape().vec(), (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(out.as<float>()[15], t.as<float>()[1]);
  auto divided = parseFusion("fusion g(t: f32[?], k: i64) {\n"
                             "  e = div(12, k)\n"
                             "  b = broadcast_in_dim(t, [e, ?], [1])\n"
                             "  return b\n"
                             "}\n");
  std::string message = errorOf([&] { evaluate(*divided, {t.ref(), ScalarArgument(int64_t(0))}); });
  EXPECT_TRUE(contains(message, "extent value 'e' divides by zero")) << message;
  auto huge = parseFusion("fusion h(t: f32[?], k: i64) {\n"
                          "  e = mul(k, k)\n"
                          "  b = broadcast_in_dim(t, [e, ?], [1])\n"
                          "  return b\n"
                          "}\n");
  message = errorOf([&] { evaluate(*huge, {t.ref(), ScalarArgument(int64_t(1) << 40)}); });
  EXPECT_TRUE(contains(message, "extent value 'e' overflows i64")) << message;
}

TEST(ExtentValues, AValueUsedTwiceIsCheckedAndComputedOnce) {
  // e_{i+1} = e_i + e_i, 62 times: 2^62 paths through the definition, one value each.
  FusionDefinition fd("doubling");
  Val t = fd.defineTensor({kSymbolicExtent}, DataType::Float, "t");
  Val k = fd.defineScalar(DataType::Int64, "k");
  Val extent = k;
  for (int i = 0; i < 62; ++i)
    extent = extent + extent;
  fd.addOutput(broadcast_in_dim_to_extents(t, {extent, -1}, {1}));
  auto fusion = fd.finalize();
  HostTensor row = counting({3});
  HostTensor out =
      std::move(evaluate(*fusion, {row.ref(), ScalarArgument(int64_t(0))}).outputs.at(0));
  EXPECT_EQ(out.shape().vec(), (std::vector<int64_t>{0, 3}));
  std::string message = errorOf([&] {
    evaluate(*fusion, {row.ref(), ScalarArgument(int64_t(2))});
  });
  EXPECT_TRUE(contains(message, "overflows i64")) << message;
}

TEST(ExtentValues, OnlyIntegerScalarsOfIntegerArithmeticNameExtents) {
  std::string message = errorOf([] {
    parseFusion("fusion f(t: f32[?], x: f64) {\n"
                "  b = broadcast_in_dim(t, [x, ?], [1])\n"
                "  return b\n"
                "}\n");
  });
  EXPECT_TRUE(contains(message, "2:3: broadcast_in_dim(t: f32[?]) to [?, ?] with dims [1]: "
                                "output extent 0: 'x' (f64) is not an integer scalar"))
      << message;
  message = errorOf([] {
    parseFusion("fusion f(t: f32[?], k: i64) {\n"
                "  g = gcd(k, 4)\n"
                "  b = broadcast_in_dim(t, [g, ?], [1])\n"
                "  return b\n"
                "}\n");
  });
  EXPECT_TRUE(contains(message, "'g' is computed by gcd, which an extent may not use")) << message;
  // A named extent known statically becomes the static extent; a negative one is refused.
  auto fusion = parseFusion("fusion g(t: f32[4], u: f32[3, ?]) {\n"
                            "  n = size(u, 0)\n"
                            "  m = add(n, 1)\n"
                            "  b = broadcast_in_dim(t, [m, 4], [1])\n"
                            "  return b\n"
                            "}\n");
  EXPECT_TRUE(contains(printFusion(*fusion), "broadcast_in_dim(t, [4, 4], [1])"));
  message = errorOf([] {
    parseFusion("fusion g(t: f32[4], u: f32[3, ?]) {\n"
                "  n = size(u, 0)\n"
                "  m = neg(n)\n"
                "  b = broadcast_in_dim(t, [m, 4], [1])\n"
                "  return b\n"
                "}\n");
  });
  EXPECT_TRUE(
      contains(message, "output extent 0 is 'm', which is -3: an extent cannot be negative"))
      << message;
}

TEST(ExtentValues, TheCppApiNamesExtentsWithShapeEntries) {
  FusionDefinition fd("entries");
  Val t = fd.defineTensor({kSymbolicExtent, 3}, DataType::Float, "t");
  Val row = fd.defineTensor({3}, DataType::Float, "row");
  Val b = broadcast_in_dim_to_extents(row, {size(t, 0), 3}, {1});
  EXPECT_EQ(b.value()->extents().vec(), (std::vector<int64_t>{-1, 3}));
  fd.addOutput(t - b);
  auto fusion = fd.finalize();
  HostTensor a = counting({2, 3}), r = counting({3}, 7.5);
  HostTensor out = std::move(evaluate(*fusion, {a.ref(), r.ref()}).outputs.at(0));
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(out.as<float>()[i], a.as<float>()[i] - r.as<float>()[i % 3]);
}

TEST(BroadcastInDim, ChecksRunInNvFusersOrderWithItsPhrasesFirst) {
  // nvFuser checks the output rank before the length of broadcast_dims, then each dim; tools
  // written for nvFuser match its phrases, widefuse's explanation follows them.
  FusionDefinition fd("checks");
  Val x = fd.defineTensor({2, 2}, DataType::Float, "x");
  // Both the rank and broadcast_dims are wrong: the rank is reported.
  std::string message = errorOf([&] { broadcast_in_dim(x, {2}, {0}); });
  EXPECT_TRUE(contains(message, "broadcast_in_dim(x: f32[2, 2]) to [2] with dims [0]: The new "
                                "shape is expected to be greater-then-or-equal to the input. "
                                "The output rank 1 is smaller than the operand's rank 2"))
      << message;
  message = errorOf([&] { broadcast_in_dim(x, {2, 2, 3}, {0}); });
  EXPECT_TRUE(contains(message, ": The broadcast dimensions should match the input dimensions. "
                                "broadcast_dims needs one entry per operand dimension (2)"))
      << message;
  message = errorOf([&] { broadcast_in_dim(x, {2, 2}, {0, 2}); });
  EXPECT_TRUE(contains(message, "to [2, 2] with dims [0, 2]: Invalid broadcast_dims value. "
                                "Broadcast dim 2 is outside the output rank 2"))
      << message;
  message = errorOf([&] { broadcast_in_dim(x, {2, 2, 3}, {-1, 1}); });
  EXPECT_TRUE(contains(message, "Invalid broadcast_dims value. Broadcast dim -1 is outside"))
      << message;
}
