// The ops added for nvFuser parity, run by the reference evaluator: values computed here from
// their definitions, and the documented edge cases (division by zero, INT_MIN, signed zeros,
// infinities, out-of-range shifts).

#include "evaluator_test_support.h"

#include "ir/error.h"

#include <cmath>
#include <limits>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

Val (*const kUnary[])(const Operand&) = {acos, acosh, asin,  asinh, atan, atanh, cosh,
                                         sinh, tan,   log10, erf,   erfc, lgamma};
double (*const kUnaryReference[])(double) = {
    std::acos, std::acosh, std::asin,  std::asinh, std::atan, std::atanh, std::cosh,
    std::sinh, std::tan,   std::log10, std::erf,   std::erfc, std::lgamma};

HostTensor unaryOf(Val (*op)(const Operand&), DataType dtype, const std::vector<double>& values) {
  std::vector<HostTensor> inputs = {tensorOf(dtype, values)};
  return runOneOp([op](std::vector<Val>& v) { return op(v[0]); }, inputs);
}

HostTensor binaryOf(Val (*op)(const Operand&, const Operand&), DataType dtype,
                    const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<HostTensor> inputs = {tensorOf(dtype, a), tensorOf(dtype, b)};
  return runOneOp([op](std::vector<Val>& v) { return op(v[0], v[1]); }, inputs);
}

bool sameDouble(double actual, double expected) {
  if (std::isnan(expected))
    return std::isnan(actual);
  return actual == expected && std::signbit(actual) == std::signbit(expected);
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

} // namespace

TEST(EvaluatorNvfuserOps, FloatMathMatchesTheCFunctions) {
  const std::vector<double> values = {0.25, -0.5, 0.75, 1.5, 3.0, -2.5, 0.0};
  for (size_t k = 0; k < std::size(kUnary); ++k) {
    HostTensor f64 = unaryOf(kUnary[k], DataType::Double, values);
    HostTensor f32 = unaryOf(kUnary[k], DataType::Float, values);
    HostTensor fromInt = unaryOf(kUnary[k], DataType::Int32, {1, 2, 3});
    ASSERT_EQ(f64.dtype(), DataType::Double);
    ASSERT_EQ(fromInt.dtype(), DataType::Float); // integers compute in f32, as FloatMath
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_TRUE(sameDouble(f64.as<double>()[i], kUnaryReference[k](values[i]))) << k << " " << i;
      float single = float(values[i]);
      // The f32 path calls the f32 function of C (acosf, ...), not the double one.
      float expected = float(kUnaryReference[k](single)), got = f32.as<float>()[i];
      if (std::isfinite(expected))
        EXPECT_NEAR(got, expected, 4e-7 * (1 + std::fabs(expected))) << k << " " << i;
      else
        EXPECT_TRUE(sameDouble(got, expected)) << k << " " << i;
    }
  }
}

TEST(EvaluatorNvfuserOps, InverseErrorFunctionsInvertErf) {
  const std::vector<double> y = {0.0, -0.0, 0.1, -0.3, 0.5, 0.7, -0.9, 0.999, 1.0, -1.0, 1.5, kNan};
  HostTensor x = unaryOf(erfinv, DataType::Double, y);
  for (size_t i = 0; i < y.size(); ++i) {
    double got = x.as<double>()[i];
    if (std::fabs(y[i]) < 1)
      EXPECT_NEAR(std::erf(got), y[i], 4e-16) << y[i];
    else if (std::fabs(y[i]) == 1)
      EXPECT_EQ(got, std::copysign(kInf, y[i]));
    else
      EXPECT_TRUE(std::isnan(got)) << y[i];
  }
  EXPECT_TRUE(std::signbit(x.as<double>()[1])); // erfinv(-0) = -0
  const std::vector<double> q = {1.0,    0.5,       1.5, 0.2, 1.8,  1e-10,
                                 1e-300, 2 - 1e-10, 0.0, 2.0, -0.1, 2.1};
  HostTensor xc = unaryOf(erfcinv, DataType::Double, q);
  for (size_t i = 0; i < q.size(); ++i) {
    double got = xc.as<double>()[i];
    if (q[i] > 0 && q[i] < 2) // relative, also far out in the tail where erfc(x) is tiny
      EXPECT_NEAR(std::erfc(got) / q[i], 1.0, 1e-13) << q[i];
    else if (q[i] == 0 || q[i] == 2)
      EXPECT_EQ(got, q[i] == 0 ? kInf : -kInf);
    else
      EXPECT_TRUE(std::isnan(got)) << q[i];
  }
  HostTensor single = unaryOf(erfinv, DataType::Float, {0.5, -0.95});
  EXPECT_NEAR(std::erf(double(single.as<float>()[0])), 0.5, 2e-7);
  EXPECT_NEAR(std::erf(double(single.as<float>()[1])), -0.95, 2e-7);
}

TEST(EvaluatorNvfuserOps, ReluFracSignbitAndClassification) {
  const std::vector<double> v = {-2.5, -0.0, 0.0, 3.25, kNan, -kInf, kInf};
  HostTensor relu64 = unaryOf(relu, DataType::Double, v);
  HostTensor frac64 = unaryOf(frac, DataType::Double, v);
  HostTensor sign64 = unaryOf(signbit, DataType::Double, v);
  HostTensor neg64 = unaryOf(isneginf, DataType::Double, v);
  HostTensor pos64 = unaryOf(isposinf, DataType::Double, v);
  HostTensor real64 = unaryOf(isreal, DataType::Double, v);
  const double reluExpected[] = {0, 0, 0, 3.25, kNan, 0, kInf};
  const double fracExpected[] = {-0.5, 0, 0, 0.25, kNan, kNan, kNan}; // inf - inf
  const bool signExpected[] = {true, true, false, false, false, true, false};
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_TRUE(sameDouble(relu64.as<double>()[i], reluExpected[i])) << i;
    EXPECT_TRUE(sameDouble(frac64.as<double>()[i], fracExpected[i])) << i;
    EXPECT_EQ(sign64.as<bool>()[i], signExpected[i]) << i;
    EXPECT_EQ(neg64.as<bool>()[i], v[i] == -kInf) << i;
    EXPECT_EQ(pos64.as<bool>()[i], v[i] == kInf) << i;
    EXPECT_TRUE(real64.as<bool>()[i]);
  }
  HostTensor reluInt = unaryOf(relu, DataType::Int8, {-128, -1, 0, 5});
  ASSERT_EQ(reluInt.dtype(), DataType::Int8);
  EXPECT_EQ(reluInt.as<int8_t>()[0], 0);
  EXPECT_EQ(reluInt.as<int8_t>()[3], 5);
  HostTensor fracInt = unaryOf(frac, DataType::Int32, {-7, 9});
  ASSERT_EQ(fracInt.dtype(), DataType::Int32);
  EXPECT_EQ(fracInt.as<int32_t>()[0], 0);
  HostTensor signInt = unaryOf(signbit, DataType::Int64, {-1, 0, 1});
  EXPECT_TRUE(signInt.as<bool>()[0]);
  EXPECT_FALSE(signInt.as<bool>()[1]);
  EXPECT_FALSE(unaryOf(signbit, DataType::UInt8, {255}).as<bool>()[0]);
  EXPECT_TRUE(unaryOf(isreal, DataType::Bool, {1}).as<bool>()[0]);
  // f16 computes relu in f32 and stores f16: the dtype stays.
  EXPECT_EQ(unaryOf(relu, DataType::Half, {-1.0}).dtype(), DataType::Half);
}

TEST(EvaluatorNvfuserOps, IntegerDivisionTruncatesWithoutTraps) {
  const double lowest = double(std::numeric_limits<int32_t>::lowest());
  HostTensor q = binaryOf(div, DataType::Int32, {7, -7, 7, -7, 5, lowest, lowest, 0},
                          {2, 2, -2, -2, 0, -1, 1, 0});
  ASSERT_EQ(q.dtype(), DataType::Int32);
  const int32_t expected[] = {3, -3, -3, 3, 0, INT32_MIN, INT32_MIN, 0};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(q.as<int32_t>()[i], expected[i]) << i;
  HostTensor u = binaryOf(div, DataType::UInt8, {255, 7}, {2, 0});
  EXPECT_EQ(u.as<uint8_t>()[0], 127);
  EXPECT_EQ(u.as<uint8_t>()[1], 0);
  HostTensor i8 = binaryOf(div, DataType::Int8, {-128}, {-1});
  EXPECT_EQ(i8.as<int8_t>()[0], -128);
  // Floating point is unchanged: IEEE division.
  HostTensor f = binaryOf(div, DataType::Float, {1, -1, 0, 7}, {0, 0, 0, 2});
  EXPECT_EQ(f.as<float>()[0], INFINITY);
  EXPECT_EQ(f.as<float>()[1], -INFINITY);
  EXPECT_TRUE(std::isnan(f.as<float>()[2]));
  EXPECT_EQ(f.as<float>()[3], 3.5f);
  // truediv is the former div: integers divide in f32.
  HostTensor t = binaryOf(truediv, DataType::Int32, {7, 1}, {2, 0});
  ASSERT_EQ(t.dtype(), DataType::Float);
  EXPECT_EQ(t.as<float>()[0], 3.5f);
  EXPECT_EQ(t.as<float>()[1], INFINITY);
}

TEST(EvaluatorNvfuserOps, RemainderTakesTheSignOfTheDivisor) {
  HostTensor i = binaryOf(remainder, DataType::Int32, {7, -7, 7, -7, 6, 5, -2147483648.0},
                          {3, 3, -3, -3, -3, 0, -1});
  const int32_t expected[] = {1, 2, -2, -1, 0, 0, 0};
  for (int k = 0; k < 7; ++k)
    EXPECT_EQ(i.as<int32_t>()[k], expected[k]) << k;
  HostTensor f = binaryOf(remainder, DataType::Double, {5.5, -5.5, 5.5, 5, 1, -0.0, 3},
                          {2, 2, -2, -kInf, 0, 2, kInf});
  const double fexpected[] = {1.5, 0.5, -0.5, -kInf, kNan, -0.0, 3};
  for (int k = 0; k < 7; ++k)
    EXPECT_TRUE(sameDouble(f.as<double>()[k], fexpected[k])) << k;
  // mod is fmod under nvFuser's name: the sign of the dividend.
  HostTensor m = binaryOf(mod, DataType::Int32, {-7, 7}, {3, -3});
  EXPECT_EQ(m.as<int32_t>()[0], -1);
  EXPECT_EQ(m.as<int32_t>()[1], 1);
}

TEST(EvaluatorNvfuserOps, NextafterGcdAndLogicalRightShift) {
  HostTensor n = binaryOf(nextafter, DataType::Float, {1, 1, 0, -0.0}, {2, 0, -1, 1});
  EXPECT_EQ(n.as<float>()[0], std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(n.as<float>()[1], std::nextafter(1.0f, 0.0f));
  EXPECT_EQ(n.as<float>()[2], -std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(n.as<float>()[3], std::numeric_limits<float>::denorm_min());
  HostTensor g = binaryOf(gcd, DataType::Int32, {12, -12, 0, 0, 7, -2147483648.0, -2147483648.0},
                          {18, 18, 0, -5, 13, 0, 6});
  const int32_t gexpected[] = {6, 6, 0, 5, 1, INT32_MIN, 2}; // |INT_MIN| = 2^31 wraps
  for (int k = 0; k < 7; ++k)
    EXPECT_EQ(g.as<int32_t>()[k], gexpected[k]) << k;
  HostTensor s = binaryOf(logical_right_shift, DataType::Int8, {-128, -1, -1, 64, -1, -1},
                          {1, 4, 7, 2, 8, -1});
  const int8_t sexpected[] = {64, 15, 1, 16, 0, 0};
  for (int k = 0; k < 6; ++k)
    EXPECT_EQ(s.as<int8_t>()[k], sexpected[k]) << k;
  HostTensor wide = binaryOf(logical_right_shift, DataType::Int64, {-1, -1}, {60, 64});
  EXPECT_EQ(wide.as<int64_t>()[0], 15);
  EXPECT_EQ(wide.as<int64_t>()[1], 0);
}

TEST(EvaluatorNvfuserOps, TypeRulesOfTheNewOps) {
  FusionDefinition fd("rules");
  Val i32 = fd.defineTensor({4}, DataType::Int32, "i");
  Val f16 = fd.defineTensor({4}, DataType::Half, "h");
  Val f32 = fd.defineTensor({4}, DataType::Float, "f");
  Val b8 = fd.defineTensor({4}, DataType::Bool, "b");
  EXPECT_EQ(gcd(i32, i32).dtype(), DataType::Int32);
  EXPECT_THROW(gcd(f32, f32), widefuse::Error);
  EXPECT_EQ(nextafter(f32, f32).dtype(), DataType::Float);
  EXPECT_THROW(nextafter(f16, f16), widefuse::Error); // an f16 step is not an f32 step
  EXPECT_THROW(nextafter(i32, i32), widefuse::Error);
  EXPECT_EQ(erfinv(i32).dtype(), DataType::Float);
  EXPECT_EQ(signbit(f16).dtype(), DataType::Bool);
  EXPECT_EQ(relu(i32).dtype(), DataType::Int32);
  EXPECT_THROW(relu(b8), widefuse::Error);
  EXPECT_THROW(div(b8, b8), widefuse::Error);
  EXPECT_EQ(truediv(b8, b8).dtype(), DataType::Float);
  EXPECT_THROW(logical_right_shift(f32, i32), widefuse::Error);
}
