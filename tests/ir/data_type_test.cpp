#include "ir/data_type.h"
#include "ir/fusion_definition.h"
#include "ir/type_promotion.h"

#include <gtest/gtest.h>

using namespace widefuse;

TEST(DataType, ShortNamesRoundTrip) {
  for (DataType type : kAllDataTypes)
    EXPECT_EQ(parseDataType(shortName(type)), type);
  EXPECT_FALSE(parseDataType("f8").has_value());
  EXPECT_EQ(shortName(DataType::BFloat16), "bf16");
}

TEST(DataType, Sizes) {
  EXPECT_EQ(byteSize(DataType::Bool), 1u);
  EXPECT_EQ(byteSize(DataType::Half), 2u);
  EXPECT_EQ(byteSize(DataType::BFloat16), 2u);
  EXPECT_EQ(byteSize(DataType::UInt32), 4u);
  EXPECT_EQ(byteSize(DataType::Double), 8u);
}

// Expected values are torch.promote_types results.
TEST(DataType, PromoteTypesMatchesPyTorch) {
  EXPECT_EQ(promoteTypes(DataType::Int32, DataType::Half), DataType::Half);
  EXPECT_EQ(promoteTypes(DataType::Half, DataType::BFloat16), DataType::Float);
  EXPECT_EQ(promoteTypes(DataType::UInt8, DataType::Int8), DataType::Int16);
  EXPECT_EQ(promoteTypes(DataType::UInt16, DataType::Int16), DataType::Int32);
  EXPECT_EQ(promoteTypes(DataType::UInt32, DataType::Int32), DataType::Int64);
  EXPECT_EQ(promoteTypes(DataType::UInt8, DataType::Int32), DataType::Int32);
  EXPECT_EQ(promoteTypes(DataType::Bool, DataType::UInt8), DataType::UInt8);
  EXPECT_EQ(promoteTypes(DataType::Float, DataType::Double), DataType::Double);
  EXPECT_EQ(promoteTypes(DataType::Int64, DataType::BFloat16), DataType::BFloat16);
  EXPECT_EQ(promoteTypes(DataType::UInt8, DataType::UInt32), DataType::UInt32);
}

// The expected types are what PyTorch gives for the same mix of tensors and Python numbers.
TEST(TypePromotion, WeakScalarsKeepTheTensorType) {
  FusionDefinition fd;
  Val half = fd.defineTensor({4}, DataType::Half);
  Val i32 = fd.defineTensor({4}, DataType::Int32);
  Val u8 = fd.defineTensor({4}, DataType::UInt8);
  Val f32zero = fd.defineTensor({}, DataType::Float);
  Val f64zero = fd.defineTensor({}, DataType::Double);
  Val lr = fd.defineScalar(DataType::Double);
  EXPECT_EQ((half * 2.0).dtype(), DataType::Half);      // half_t * 2.0 -> half
  EXPECT_EQ((half * lr).dtype(), DataType::Half);       // runtime f64 scalar is weak
  EXPECT_EQ((i32 * 2.5).dtype(), DataType::Float);      // int * float number -> float
  EXPECT_EQ((i32 * 2).dtype(), DataType::Int32);        // int32 * int number -> int32
  EXPECT_EQ((u8 + 1000).dtype(), DataType::UInt8);      // same category: tensor wins
  EXPECT_EQ((half * f64zero).dtype(), DataType::Half);  // 0-d tensor is lower priority
  EXPECT_EQ((i32 * f64zero).dtype(), DataType::Double); // ... unless higher category
  EXPECT_EQ((f32zero * 2.0).dtype(), DataType::Float);
  EXPECT_EQ((f32zero + f64zero).dtype(), DataType::Double); // 0-d with 0-d: promote
  EXPECT_EQ((1.0 - lr).dtype(), DataType::Double);          // scalar-only arithmetic
  EXPECT_EQ(truediv(i32, i32).dtype(), DataType::Float);    // true division
  EXPECT_EQ(div(i32, i32).dtype(), DataType::Int32);        // truncating, as nvFuser's div
  EXPECT_EQ(sqrt(i32).dtype(), DataType::Float);
  EXPECT_EQ(lt(half, 1).dtype(), DataType::Bool);
}

TEST(TypePromotion, LiteralsAloneStayWeak) {
  FusionDefinition fd;
  Val t = fd.defineTensor({4}, DataType::Half);
  Val product = t * (2.0 * 3.0 - 0.5); // literal arithmetic still promotes like a number
  EXPECT_EQ(product.dtype(), DataType::Half);
  Val typed = fd.constant(2.0, DataType::Float);
  EXPECT_EQ((typed * 2.0).dtype(), DataType::Float);
}
