#include "ir/data_type.h"
#include "ir/error.h"
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

TEST(DataType, Float8TypesAreOneByteStorageTypesComputedInFloat) {
  for (DataType type : {DataType::Float8_e4m3fn, DataType::Float8_e5m2, DataType::Float8_e8m0fnu}) {
    EXPECT_EQ(byteSize(type), 1u);
    EXPECT_TRUE(isFloatingPoint(type) && isNarrowFloat(type) && isFloat8(type));
    EXPECT_EQ(computeType(type), DataType::Float);
    EXPECT_EQ(categoryOf(type), TypeCategory::Floating);
  }
  EXPECT_FALSE(isFloat8(DataType::Half));
  EXPECT_EQ(shortName(DataType::Float8_e4m3fn), "f8e4m3fn");
  EXPECT_EQ(parseDataType("f8e5m2"), DataType::Float8_e5m2);
  EXPECT_EQ(parseDataType("f8e8m0fnu"), DataType::Float8_e8m0fnu);
}

// torch refuses to promote fp8 with any other type; these are nvFuser's promoteType results
// (csrc/type.h: two floating types below double give float, double wins, an integer or bool
// keeps the floating type).
TEST(DataType, Float8PromotesAsNvFuserPromotes) {
  const DataType e4m3 = DataType::Float8_e4m3fn, e5m2 = DataType::Float8_e5m2;
  EXPECT_EQ(promoteTypes(e4m3, e4m3), e4m3);
  EXPECT_EQ(promoteTypes(e4m3, e5m2), DataType::Float);
  EXPECT_EQ(promoteTypes(e5m2, DataType::Half), DataType::Float);
  EXPECT_EQ(promoteTypes(DataType::BFloat16, DataType::Float8_e8m0fnu), DataType::Float);
  EXPECT_EQ(promoteTypes(e4m3, DataType::Float), DataType::Float);
  EXPECT_EQ(promoteTypes(DataType::Double, e5m2), DataType::Double);
  EXPECT_EQ(promoteTypes(e4m3, DataType::Int32), e4m3);
  EXPECT_EQ(promoteTypes(DataType::Bool, e5m2), e5m2);
  FusionDefinition fd;
  Val x = fd.defineTensor({4}, e4m3);
  EXPECT_EQ((x * 2.0).dtype(), e4m3); // a Python number keeps the tensor's type (as torch)
  EXPECT_EQ((x + fd.defineTensor({4}, DataType::Half)).dtype(), DataType::Float);
  EXPECT_EQ(sqrt(x).dtype(), e4m3);
  EXPECT_EQ(bitcast(x, DataType::Int8).dtype(), DataType::Int8);
  EXPECT_EQ(bitcast(x, DataType::Float8_e5m2).dtype(), e5m2);
  EXPECT_THROW(bitcast(x, DataType::Half), Error);
  EXPECT_THROW(nextafter(x, x), Error); // an fp8 step computed in f32 is not an fp8 ulp
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
