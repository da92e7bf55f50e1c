#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "ir/host_tensor.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace widefuse;
using widefuse::testing::errorOf;

TEST(FusionDefinition, BuildsSeedAdamForOneParameter) {
  FusionDefinition fd("adam_step");
  Val p = fd.defineTensor({1024, 1024}, DataType::Float, "p");
  Val g = fd.defineTensor({1024, 1024}, DataType::Float, "g");
  Val m = fd.defineTensor({1024, 1024}, DataType::Float, "m");
  Val v = fd.defineTensor({1024, 1024}, DataType::Float, "v");
  Val step = fd.defineTensor({}, DataType::Float, "step");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  Val beta1 = fd.defineScalar(DataType::Double, "beta1");
  Val beta2 = fd.defineScalar(DataType::Double, "beta2");
  Val eps = fd.defineScalar(DataType::Double, "eps");

  Val step1 = step + 1.0;
  Val m1 = m * beta1 + g * (1.0 - beta1);
  Val v1 = v * beta2 + (1.0 - beta2) * g * g;
  Val bias1 = 1.0 - pow(beta1, step1);
  Val bias2 = 1.0 - pow(beta2, step1);
  Val stepSize = lr / bias1;
  Val denom = sqrt(v1) / sqrt(bias2) + eps;
  Val p1 = p + (-stepSize) * m1 / denom;
  fd.copy_(p1, p);
  fd.copy_(m1, m);
  fd.copy_(v1, v);
  fd.copy_(step1, step);
  auto fusion = fd.finalize();

  EXPECT_EQ(fusion->inputs().size(), 9u);
  EXPECT_EQ(fusion->aliases().size(), 4u);
  EXPECT_EQ(p1.dtype(), DataType::Float);
  EXPECT_EQ(p1.rank(), 2u);
  EXPECT_EQ(stepSize.rank(), 0u); // 0-d tensor: lr / (1 - beta1 ** step)
  EXPECT_EQ(bias1.dtype(), DataType::Float);
}

TEST(FusionDefinition, ShapesThatDoNotBroadcastAreAnError) {
  FusionDefinition fd;
  Val a = fd.defineTensor({4, 8}, DataType::Float, "a");
  Val b = fd.defineTensor({4, 4}, DataType::Float, "b");
  std::string message = errorOf([&] { add(a, b); });
  EXPECT_NE(message.find("[4, 8]"), std::string::npos) << message;
  EXPECT_NE(message.find("extents must be equal or 1"), std::string::npos) << message;
  // A lower rank aligns at the last dimension: [4] meets [4, 8]'s 8.
  Val c = fd.defineTensor({4}, DataType::Float, "c");
  EXPECT_NE(errorOf([&] { add(a, c); }).find("'c'"), std::string::npos);
  Val row = fd.defineTensor({8}, DataType::Float, "row");
  EXPECT_EQ((a + row).rank(), 2u); // implicit, as nvFuser's
  Val wide = broadcast_in_dim(row, {4, 8}, {1});
  EXPECT_EQ((a + wide).rank(), 2u);
}

TEST(FusionDefinition, ShapesPastTheAddressableBytesAreErrors) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // 2^60 bytes of f32 is a shape; 2^61 elements of f32 (2^63 bytes) is not.
  EXPECT_EQ(checkedByteCount({int64_t(1) << 29, int64_t(1) << 29}, DataType::Float), int64_t(1)
                                                                                         << 60);
  EXPECT_EQ(checkedByteCount({int64_t(1) << 61}, DataType::Float), std::nullopt);
  EXPECT_EQ(checkedByteCount({kMax, 2}, DataType::Bool), std::nullopt);
  EXPECT_EQ(checkedByteCount({kMax, 0}, DataType::Double), 0); // empty: no byte addressed
  EXPECT_EQ(checkedByteCount({-1, kMax}, DataType::UInt8), kMax);
  FusionDefinition fd;
  std::string message = errorOf([&] { fd.defineTensor({kMax, 2}, DataType::Float, "x"); });
  EXPECT_NE(message.find("input 'x': shape [9223372036854775807, 2] of f32"), std::string::npos)
      << message;
  Val y = fd.defineTensor({-1}, DataType::Float, "y");
  message = errorOf([&] { broadcast_in_dim(y, {int64_t(1) << 32, int64_t(1) << 32}, {1}); });
  EXPECT_NE(message.find("more than 2^63 bytes"), std::string::npos) << message;
}

TEST(FusionDefinition, SymbolicExtentsJoinWithStatic) {
  FusionDefinition fd;
  Val a = fd.defineTensor({-1, 8}, DataType::Float, "a");
  Val b = fd.defineTensor({4, -1}, DataType::Float, "b");
  Val sum = a + b;
  EXPECT_EQ(sum.value()->extents()[0], 4);
  EXPECT_EQ(sum.value()->extents()[1], 8);
}

TEST(FusionDefinition, OpDtypeRulesAreChecked) {
  FusionDefinition fd;
  Val f = fd.defineTensor({4}, DataType::Float, "f");
  Val i = fd.defineTensor({4}, DataType::Int32, "i");
  Val b = fd.defineTensor({4}, DataType::Bool, "b");
  EXPECT_NE(errorOf([&] { bitwise_and(f, i); }).find("bitwise"), std::string::npos);
  EXPECT_NE(errorOf([&] { shift_left(i, f); }).find("shift"), std::string::npos);
  EXPECT_NE(errorOf([&] { bitcast(f, DataType::Int16); }).find("width"), std::string::npos);
  EXPECT_NE(errorOf([&] { bitcast(b, DataType::UInt8); }).find("bool"), std::string::npos);
  EXPECT_NE(errorOf([&] { where(f, f, i); }).find("condition"), std::string::npos);
  EXPECT_NE(errorOf([&] { lerp(i, i, i); }).find("floating"), std::string::npos);
  EXPECT_NE(errorOf([&] { neg(b); }).find("bool"), std::string::npos);
  EXPECT_EQ(bitcast(f, DataType::Int32).dtype(), DataType::Int32);
  EXPECT_EQ(where(b, f, i).dtype(), DataType::Float);
}

TEST(FusionDefinition, CopyErrorsNameTheValues) {
  FusionDefinition fd;
  Val p = fd.defineTensor({4, 8}, DataType::Float, "p");
  Val q = fd.defineTensor({8}, DataType::Float, "q");
  Val step = fd.defineTensor({}, DataType::Float, "step");
  Val p1 = p * 2.0;
  std::string nonInput = errorOf([&] { fd.copy_(p, p1); });
  EXPECT_NE(nonInput.find("not an input"), std::string::npos) << nonInput;
  std::string shape = errorOf([&] { fd.copy_(p1, q); });
  EXPECT_NE(shape.find("f32[4, 8]"), std::string::npos) << shape;
  std::string broadcastInto = errorOf([&] { fd.copy_(p1, step); });
  EXPECT_NE(broadcastInto.find("one shape"), std::string::npos) << broadcastInto;
  fd.copy_(p1, p);
  std::string twice = errorOf([&] { fd.copy_(p1 + 1.0, p); });
  EXPECT_NE(twice.find("two copies"), std::string::npos) << twice;
}

TEST(FusionDefinition, ValuesFromAnotherDefinitionAreRejected) {
  FusionDefinition first, second;
  Val a = first.defineTensor({4}, DataType::Float, "a");
  Val b = second.defineTensor({4}, DataType::Float, "b");
  std::string message = errorOf([&] { add(a, b); });
  EXPECT_NE(message.find("another"), std::string::npos) << message;
  EXPECT_NE(errorOf([&] { second.copy_(a, b); }).find("another"), std::string::npos);
}

TEST(FusionDefinition, NamesAreChecked) {
  FusionDefinition fd;
  fd.defineTensor({4}, DataType::Float, "x");
  EXPECT_NE(errorOf([&] { fd.defineTensor({4}, DataType::Float, "x"); }).find("duplicate"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { fd.defineScalar(DataType::Float, "f32"); }).find("invalid"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { fd.defineScalar(DataType::Float, "2x"); }).find("invalid"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { FusionDefinition bad("no-dash"); }).find("invalid"), std::string::npos);
}

TEST(FusionDefinition, FinalizeHandsOverOnce) {
  FusionDefinition fd;
  Val x = fd.defineTensor({4}, DataType::Float, "x");
  fd.addOutput(x * 2.0);
  auto fusion = fd.finalize();
  EXPECT_EQ(fusion->outputs().size(), 1u);
  EXPECT_NE(errorOf([&] { fd.finalize(); }).find("finalized"), std::string::npos);
}

TEST(FusionDefinition, ScalarOutputsAndLiteralOnlyCallsAreRejected) {
  FusionDefinition fd;
  Val s = fd.defineScalar(DataType::Double, "s");
  EXPECT_NE(errorOf([&] { fd.addOutput(s); }).find("scalar"), std::string::npos);
  EXPECT_NE(errorOf([] { add(1.0, 2.0); }).find("at least one"), std::string::npos);
}

TEST(FusionDefinition, EqualLiteralsAreOneValue) {
  FusionDefinition fd;
  Val x = fd.defineTensor({4}, DataType::Float, "x");
  Val a = x * 0.9, b = x + 0.9;
  const Value* shared = a.value()->definition()->operand(1);
  EXPECT_EQ(b.value()->definition()->operand(1), shared); // one value for both
  EXPECT_TRUE(shared->isWeak());
  // Equal means same kind and same bits: 1 (int), 1.0, true, 0.0 and -0.0 are five values.
  llvm::SmallVector<const Value*, 5> distinct;
  for (Val v : {x * int64_t(1), x * 1.0, x * true, x * 0.0, x * -0.0})
    distinct.push_back(v.value()->definition()->operand(1));
  for (size_t i = 0; i < distinct.size(); ++i)
    for (size_t j = i + 1; j < distinct.size(); ++j)
      EXPECT_NE(distinct[i], distinct[j]) << i << " " << j;
  EXPECT_EQ(std::get<double>(*distinct[4]->constant()), 0.0);
  EXPECT_TRUE(std::signbit(std::get<double>(*distinct[4]->constant())));
}
