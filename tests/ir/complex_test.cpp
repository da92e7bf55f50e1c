// Complex dtypes (c64, c128) in the IR and the reference evaluator: typing rules, promotion,
// conversions, and every op defined on complex values against std::complex (computed here,
// independently of ir/complex_math.h), within a normwise tolerance.

#include "evaluator_test_support.h"

#include "ir/error.h"
#include "ir/op_builder.h"
#include "ir/parser.h"
#include "ir/printer.h"

#include <complex>
#include <limits>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

using Z = std::complex<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

/// A 1-D complex tensor of `dtype` (c64 or c128) holding `values` (rounded to f32 parts for c64).
HostTensor complexTensor(DataType dtype, const std::vector<Z>& values) {
  HostTensor tensor(dtype, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::ComplexFloat) {
      tensor.as<float>()[2 * i] = float(values[i].real());
      tensor.as<float>()[2 * i + 1] = float(values[i].imag());
    } else {
      tensor.as<double>()[2 * i] = values[i].real();
      tensor.as<double>()[2 * i + 1] = values[i].imag();
    }
  }
  return tensor;
}

Z complexAt(const HostTensor& tensor, int64_t i) {
  if (tensor.dtype() == DataType::ComplexFloat)
    return {tensor.as<float>()[2 * i], tensor.as<float>()[2 * i + 1]};
  return {tensor.as<double>()[2 * i], tensor.as<double>()[2 * i + 1]};
}

/// The values the tests run on: a grid of small special parts (signed zeros, 1e-3, 1, e) and
/// random parts in [-9, 9), as nvFuser's op tests draw them.
std::vector<Z> testValues() {
  const double parts[] = {0.0, -0.0, 1e-3, -1e-3, 0.25, -1.0, 1.0, 2.718, -2.718};
  std::vector<Z> values;
  for (double re : parts)
    for (double im : parts)
      values.push_back({re, im});
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> uniform(-9.0, 9.0);
  for (int i = 0; i < 200; ++i)
    values.push_back({uniform(random), uniform(random)});
  return values;
}

/// A value rounded as a tensor of `dtype` holds it (f32 parts for c64).
Z asStored(DataType dtype, Z value) {
  if (dtype != DataType::ComplexFloat)
    return value;
  float re = float(value.real()), im = float(value.imag());
  return Z(re, im);
}

/// |actual - expected| <= tolerance * |expected| (normwise), for finite expected values; an
/// infinite or NaN expected value must be matched part by part in class.
::testing::AssertionResult close(Z actual, Z expected, double tolerance) {
  bool finite = std::isfinite(expected.real()) && std::isfinite(expected.imag());
  if (finite && std::abs(actual - expected) <= tolerance * std::abs(expected) + 1e-300)
    return ::testing::AssertionSuccess();
  if (!finite) {
    auto sameClass = [](double a, double b) {
      return std::isnan(b) ? std::isnan(a) : std::isinf(b) ? a == b : std::isfinite(a);
    };
    if (sameClass(actual.real(), expected.real()) && sameClass(actual.imag(), expected.imag()))
      return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got " << actual << ", expected " << expected;
}

double toleranceOf(DataType dtype) {
  return dtype == DataType::ComplexFloat ? 2e-6 : 1e-14;
}

/// nvFuser's extremal parts (with a finite one whose square, exp and cosh overflow), every pair:
/// where C99's Annex G has special cases.
std::vector<Z> extremalValues(DataType dtype) {
  const double big = dtype == DataType::ComplexFloat ? 1e38 : 1e300;
  const double parts[] = {0.0, -0.0, 1.0, -1.0, kInf, -kInf, kNan, big, -big};
  std::vector<Z> values;
  for (double re : parts)
    for (double im : parts)
      values.push_back({re, im});
  return values;
}

/// Part by part: NaN for NaN (of either sign), the same infinity, a finite part within
/// `tolerance` (relative, absolute below 1); with `signedZeros`, an exact zero's sign too.
bool samePart(double actual, double expected, double tolerance, bool signedZeros) {
  if (std::isnan(expected) || std::isinf(expected))
    return std::isnan(expected) ? std::isnan(actual) : actual == expected;
  if (!std::isfinite(actual))
    return false;
  if (signedZeros && expected == 0 && actual == 0)
    return std::signbit(actual) == std::signbit(expected);
  return std::fabs(actual - expected) <= tolerance * std::max(1.0, std::fabs(expected));
}
::testing::AssertionResult sameParts(Z actual, Z expected, double tolerance, bool signedZeros) {
  if (samePart(actual.real(), expected.real(), tolerance, signedZeros) &&
      samePart(actual.imag(), expected.imag(), tolerance, signedZeros))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << actual << ", expected " << expected;
}

struct UnaryCase {
  const char* name;
  Val (*op)(const Operand&);
  Z (*reference)(Z);
};

const UnaryCase kUnary[] = {
    {"neg", neg, [](Z z) { return -z; }},
    {"reciprocal", reciprocal, [](Z z) { return 1.0 / z; }},
    {"sqrt", sqrt, [](Z z) { return std::sqrt(z); }},
    {"rsqrt", rsqrt, [](Z z) { return 1.0 / std::sqrt(z); }},
    {"exp", exp, [](Z z) { return std::exp(z); }},
    {"log", log, [](Z z) { return std::log(z); }},
    {"log2", log2, [](Z z) { return std::log(z) / std::log(2.0); }},
    {"log10", log10, [](Z z) { return std::log10(z); }},
    {"sin", sin, [](Z z) { return std::sin(z); }},
    {"cos", cos, [](Z z) { return std::cos(z); }},
    {"tan", tan, [](Z z) { return std::tan(z); }},
    {"sinh", sinh, [](Z z) { return std::sinh(z); }},
    {"cosh", cosh, [](Z z) { return std::cosh(z); }},
    {"tanh", tanh, [](Z z) { return std::tanh(z); }},
    {"sigmoid", sigmoid, [](Z z) { return 1.0 / (1.0 + std::exp(-z)); }},
    {"asin", asin, [](Z z) { return std::asin(z); }},
    {"acos", acos, [](Z z) { return std::acos(z); }},
    {"atan", atan, [](Z z) { return std::atan(z); }},
    {"asinh", asinh, [](Z z) { return std::asinh(z); }},
    {"acosh", acosh, [](Z z) { return std::acosh(z); }},
    {"atanh", atanh, [](Z z) { return std::atanh(z); }},
};

HostTensor runUnary(Val (*op)(const Operand&), const HostTensor& input) {
  std::vector<HostTensor> inputs = {input};
  return runOneOp([op](std::vector<Val>& v) { return op(v[0]); }, inputs);
}

} // namespace

TEST(Complex, DataTypesArePairsOfTheirParts) {
  EXPECT_EQ(shortName(DataType::ComplexFloat), "c64");
  EXPECT_EQ(shortName(DataType::ComplexDouble), "c128");
  EXPECT_EQ(byteSize(DataType::ComplexFloat), 8u);
  EXPECT_EQ(byteSize(DataType::ComplexDouble), 16u);
  EXPECT_EQ(complexPartType(DataType::ComplexFloat), DataType::Float);
  EXPECT_EQ(complexPartType(DataType::ComplexDouble), DataType::Double);
  EXPECT_FALSE(isFloatingPoint(DataType::ComplexFloat));
  EXPECT_EQ(categoryOf(DataType::ComplexDouble), TypeCategory::Complex);
}

TEST(Complex, PromotionFollowsTorch) {
  EXPECT_EQ(promoteTypes(DataType::ComplexFloat, DataType::Double), DataType::ComplexDouble);
  EXPECT_EQ(promoteTypes(DataType::ComplexFloat, DataType::Half), DataType::ComplexFloat);
  EXPECT_EQ(promoteTypes(DataType::Int64, DataType::ComplexFloat), DataType::ComplexFloat);
  EXPECT_EQ(promoteTypes(DataType::ComplexFloat, DataType::ComplexDouble), DataType::ComplexDouble);
  FusionDefinition fd("promotion");
  Val f32 = fd.defineTensor({4}, DataType::Float, "x32");
  Val f64 = fd.defineTensor({4}, DataType::Double, "x64");
  Val i32 = fd.defineTensor({4}, DataType::Int32, "n32");
  Val c64 = fd.defineTensor({4}, DataType::ComplexFloat, "z64");
  Val c128Zero = fd.defineTensor({}, DataType::ComplexDouble, "z128_0d");
  Val f64Zero = fd.defineTensor({}, DataType::Double, "x64_0d");
  EXPECT_EQ((c64 + f64).dtype(), DataType::ComplexDouble);     // tensors: promote_types
  EXPECT_EQ((f32 + c128Zero).dtype(), DataType::ComplexFloat); // a lower group keeps f32's width
  EXPECT_EQ((f64 + c128Zero).dtype(), DataType::ComplexDouble);
  EXPECT_EQ((i32 + c128Zero).dtype(), DataType::ComplexDouble); // integers take the complex type
  EXPECT_EQ((c64 + f64Zero).dtype(), DataType::ComplexFloat);   // the higher group is complex
  EXPECT_EQ(abs(c64).dtype(), DataType::Float);
  EXPECT_EQ(real(c128Zero).dtype(), DataType::Double);
  EXPECT_EQ(imag(c64).dtype(), DataType::Float);
  EXPECT_EQ(real(f64).dtype(), DataType::Double); // the real part of a real value is itself
  EXPECT_EQ(complex(f32, f32).dtype(), DataType::ComplexFloat);
  EXPECT_EQ(complex(f64, 0.0).dtype(), DataType::ComplexDouble);
  EXPECT_EQ(eq(c64, c64).dtype(), DataType::Bool);
  EXPECT_EQ(sqrt(c64).dtype(), DataType::ComplexFloat);
}

TEST(Complex, OpsWithoutAComplexDefinitionAreRejectedByName) {
  FusionDefinition fd("rejected");
  Val z = fd.defineTensor({4}, DataType::ComplexFloat, "z");
  Val x = fd.defineTensor({4}, DataType::Float, "x");
  Val i = fd.defineTensor({4}, DataType::Int32, "i");
  auto expectRejected = [](auto build, const char* what) {
    try {
      build();
      ADD_FAILURE() << what << " was accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(what), std::string::npos) << error.what();
    }
  };
  expectRejected([&] { return lt(z, z); }, "lt is not defined for complex operands");
  expectRejected([&] { return floor(z); }, "floor is not defined for complex operands");
  expectRejected([&] { return maximum(z, x); }, "maximum is not defined for complex operands");
  expectRejected([&] { return atan2(x, z); }, "atan2 is not defined for complex operands");
  expectRejected([&] { return expm1(z); }, "expm1 is not defined for complex operands");
  expectRejected([&] { return imag(x); }, "imag takes a complex operand");
  expectRejected([&] { return complex(i, i); }, "complex takes f32 or f64 parts");
  expectRejected([&] { return complex(z, z); }, "complex is not defined for complex operands");
}

TEST(Complex, UnaryOpsMatchStdComplex) {
  std::vector<Z> values = testValues();
  for (DataType dtype : {DataType::ComplexFloat, DataType::ComplexDouble}) {
    HostTensor input = complexTensor(dtype, values);
    for (const UnaryCase& c : kUnary) {
      HostTensor output = runUnary(c.op, input);
      ASSERT_EQ(output.dtype(), dtype) << c.name;
      for (size_t k = 0; k < values.size(); ++k) {
        Z z = complexAt(input, int64_t(k));
        bool pole = z == Z(0, 0) && (c.op == reciprocal || c.op == rsqrt);
        if (pole)
          continue; // 1 / 0 divides part by part: DivisionByZeroGivesPartByPartQuotients
        Z expected = asStored(dtype, c.reference(z));
        // f32 parts: the reference in f64 rounded once; allow a few f32 ulps normwise.
        // The inverse functions lose a few more f64 digits near 0 (log of a value near 1).
        bool inverse = c.name[0] == 'a'; // asin ... atanh
        double tolerance = inverse && dtype == DataType::ComplexDouble ? 1e-12 : toleranceOf(dtype);
        EXPECT_TRUE(close(complexAt(output, int64_t(k)), expected, tolerance))
            << c.name << "(" << z << ") in " << shortName(dtype).str();
      }
    }
  }
}

TEST(Complex, BinaryOpsMatchStdComplex) {
  std::vector<Z> a = testValues(), b = testValues();
  std::reverse(b.begin(), b.end());
  for (DataType dtype : {DataType::ComplexFloat, DataType::ComplexDouble}) {
    std::vector<HostTensor> inputs = {complexTensor(dtype, a), complexTensor(dtype, b)};
    struct Case {
      const char* name;
      Val (*op)(const Operand&, const Operand&);
      Z (*reference)(Z, Z);
    } cases[] = {
        {"add", add, [](Z x, Z y) { return x + y; }},
        {"sub", sub, [](Z x, Z y) { return x - y; }},
        {"mul", mul, [](Z x, Z y) { return x * y; }},
        {"div", div, [](Z x, Z y) { return x / y; }},
        {"truediv", truediv, [](Z x, Z y) { return x / y; }},
    };
    for (const Case& c : cases) {
      HostTensor output = runOneOp([&](std::vector<Val>& v) { return c.op(v[0], v[1]); }, inputs);
      for (size_t k = 0; k < a.size(); ++k) {
        Z x = complexAt(inputs[0], int64_t(k)), y = complexAt(inputs[1], int64_t(k));
        if (y == Z(0, 0))
          continue; // division by zero: DivisionByZeroGivesPartByPartQuotients
        EXPECT_TRUE(close(complexAt(output, int64_t(k)), c.reference(x, y), toleranceOf(dtype)))
            << c.name << "(" << x << ", " << y << ") in " << shortName(dtype).str();
      }
    }
  }
}

/// libstdc++'s functions are glibc's (csinh, cacosh, ...), which follow Annex G, with their
/// signs where Annex G leaves one open: widefuse's values part by part, signed zeros too for
/// c128 (for c64 a part that underflows in f32 may be a zero of the other sign). Not here:
/// reciprocal, rsqrt and sigmoid divide, which std::complex does by C99's rule and widefuse and
/// torch by Smith's (test_complex.py compares those with torch).
TEST(Complex, UnaryOpsFollowAnnexGAsStdComplex) {
  for (DataType dtype : {DataType::ComplexFloat, DataType::ComplexDouble}) {
    std::vector<Z> values = extremalValues(dtype);
    HostTensor input = complexTensor(dtype, values);
    for (const UnaryCase& c : kUnary) {
      if (c.op == reciprocal || c.op == rsqrt || c.op == sigmoid)
        continue;
      HostTensor output = runUnary(c.op, input);
      for (size_t k = 0; k < values.size(); ++k) {
        Z z = complexAt(input, int64_t(k));
        Z expected = asStored(dtype, c.reference(z));
        EXPECT_TRUE(sameParts(complexAt(output, int64_t(k)), expected, 100 * toleranceOf(dtype),
                              dtype == DataType::ComplexDouble))
            << c.name << "(" << z << ") in " << shortName(dtype).str();
      }
    }
  }
}

/// pow is glibc's cpow, exp(w log z) with C99's product, as torch's: std::pow on every pair of
/// extremal values. Where the angle Im(w log z) is past 2^24 (c64) or 2^53 (c128), its last
/// bit is more than pi and the signs of the result's parts are noise: magnitudes only there.
TEST(Complex, PowFollowsCpowAtExtremalValues) {
  for (DataType dtype : {DataType::ComplexFloat, DataType::ComplexDouble}) {
    std::vector<Z> values = extremalValues(dtype), bases, exponents;
    for (Z base : values)
      for (Z exponent : values) {
        bases.push_back(base);
        exponents.push_back(exponent);
      }
    std::vector<HostTensor> inputs = {complexTensor(dtype, bases), complexTensor(dtype, exponents)};
    HostTensor output = runOneOp([](std::vector<Val>& v) { return pow(v[0], v[1]); }, inputs);
    const bool narrow = dtype == DataType::ComplexFloat;
    for (size_t k = 0; k < bases.size(); ++k) {
      Z z = complexAt(inputs[0], int64_t(k)), w = complexAt(inputs[1], int64_t(k));
      Z expected =
          narrow ? Z(std::pow(std::complex<float>(z), std::complex<float>(w))) : std::pow(z, w);
      Z actual = complexAt(output, int64_t(k));
      double angle = std::fabs((w * std::log(z)).imag());
      if (std::isfinite(angle) && angle > (narrow ? 0x1p24 : 0x1p53)) {
        actual = {std::fabs(actual.real()), std::fabs(actual.imag())};
        expected = {std::fabs(expected.real()), std::fabs(expected.imag())};
      }
      EXPECT_TRUE(sameParts(actual, expected, 100 * toleranceOf(dtype), false))
          << "pow(" << z << ", " << w << ") in " << shortName(dtype).str();
    }
  }
}

/// mul and div are torch's at infinities (its values, checked), not Annex G's: no recovery of
/// infinities from NaN + NaN i (C99's (inf + inf i)(1 + 0i) is inf + inf i), Smith's division
/// (C99's (1 + i) / (inf + inf i) is 0, Smith's ratio inf / inf NaN), a zero divisor part by
/// part.
TEST(Complex, MulAndDivAtInfinitiesAreTorchs) {
  std::vector<HostTensor> inputs = {
      complexTensor(DataType::ComplexDouble, {{kInf, kInf}, {kInf, 0}, {1, 1}, {kInf, 1}}),
      complexTensor(DataType::ComplexDouble, {{1, 0}, {1, 1}, {kInf, kInf}, {0, 0}})};
  HostTensor product = runOneOp([](std::vector<Val>& v) { return mul(v[0], v[1]); }, inputs);
  HostTensor quotient = runOneOp([](std::vector<Val>& v) { return div(v[0], v[1]); }, inputs);
  const Z products[] = {{kNan, kNan}, {kInf, kInf}, {kNan, kInf}, {kNan, kNan}};
  const Z quotients[] = {{kNan, kNan}, {kInf, -kInf}, {kNan, kNan}, {kInf, kInf}};
  for (int64_t k = 0; k < 4; ++k) {
    EXPECT_TRUE(sameParts(complexAt(product, k), products[k], 0, true)) << "mul " << k;
    EXPECT_TRUE(sameParts(complexAt(quotient, k), quotients[k], 0, true)) << "div " << k;
  }
}

TEST(Complex, PowIsExpOfProductWithLogAndFollowsTorchAtZero) {
  std::vector<Z> bases = {{2, 1}, {-1.5, 0.5}, {0.3, -2}, {1, 0}, {0, 0},
                          {0, 0}, {-4, 0},     {0, 0},    {0, 0}};
  std::vector<Z> exponents = {{0.5, 0.25}, {2, 0},   {-1, 1}, {3, -2}, {0, 0},
                              {2, 1},      {0.5, 0}, {-1, 0}, {0, 3}};
  for (DataType dtype : {DataType::ComplexFloat, DataType::ComplexDouble}) {
    std::vector<HostTensor> inputs = {complexTensor(dtype, bases), complexTensor(dtype, exponents)};
    HostTensor output = runOneOp([](std::vector<Val>& v) { return pow(v[0], v[1]); }, inputs);
    for (size_t k = 0; k < bases.size(); ++k) {
      Z w = exponents[k];
      Z expected = bases[k] != Z(0, 0) ? std::exp(w * std::log(bases[k]))
                   : w.real() > 0      ? Z(0, 0)
                   : w.real() < 0      ? Z(kInf, kNan)
                                       : Z(kNan, kNan); // torch's exp(w log 0), log 0 = -inf
      EXPECT_TRUE(close(complexAt(output, int64_t(k)), expected, 10 * toleranceOf(dtype)))
          << "pow(" << bases[k] << ", " << exponents[k] << ")";
    }
  }
}

TEST(Complex, DivisionByZeroGivesPartByPartQuotients) {
  std::vector<HostTensor> inputs = {complexTensor(DataType::ComplexDouble, {{1, -2}, {0, 0}}),
                                    complexTensor(DataType::ComplexDouble, {{0, 0}, {0, 0}})};
  HostTensor output = runOneOp([](std::vector<Val>& v) { return div(v[0], v[1]); }, inputs);
  EXPECT_EQ(complexAt(output, 0).real(), kInf);
  EXPECT_EQ(complexAt(output, 0).imag(), -kInf);
  EXPECT_TRUE(std::isnan(complexAt(output, 1).real()));
}

TEST(Complex, MagnitudeClassificationAndParts) {
  std::vector<Z> values = {{3, -4}, {kInf, kNan}, {kNan, 0}, {1, kInf}, {-0.0, 0}, {2, 0}};
  for (DataType dtype : {DataType::ComplexFloat, DataType::ComplexDouble}) {
    HostTensor input = complexTensor(dtype, values);
    HostTensor magnitude = runUnary(abs, input);
    HostTensor realPart = runUnary(real, input), imagPart = runUnary(imag, input);
    HostTensor nan = runUnary(isnan, input), inf = runUnary(isinf, input);
    HostTensor finite = runUnary(isfinite, input), isReal = runUnary(isreal, input);
    ASSERT_EQ(magnitude.dtype(), complexPartType(dtype));
    for (size_t k = 0; k < values.size(); ++k) {
      Z z = values[k];
      double expectedAbs = std::hypot(z.real(), z.imag()); // inf beside NaN, as hypot
      EXPECT_EQ(elementAsDouble(magnitude, int64_t(k)) == expectedAbs ||
                    (std::isnan(expectedAbs) && std::isnan(elementAsDouble(magnitude, int64_t(k)))),
                true)
          << z;
      EXPECT_TRUE(std::isnan(z.real()) ? std::isnan(elementAsDouble(realPart, int64_t(k)))
                                       : elementAsDouble(realPart, int64_t(k)) == z.real());
      EXPECT_TRUE(std::isnan(z.imag()) ? std::isnan(elementAsDouble(imagPart, int64_t(k)))
                                       : elementAsDouble(imagPart, int64_t(k)) == z.imag());
      bool hasNan = std::isnan(z.real()) || std::isnan(z.imag());
      bool hasInf = std::isinf(z.real()) || std::isinf(z.imag());
      EXPECT_EQ(nan.as<bool>()[k], hasNan) << z;
      EXPECT_EQ(inf.as<bool>()[k], hasInf) << z;
      EXPECT_EQ(finite.as<bool>()[k], !hasNan && !hasInf) << z;
      EXPECT_EQ(isReal.as<bool>()[k], z.imag() == 0) << z;
    }
  }
}

TEST(Complex, ConversionsTakeTheRealPartAndTestZAgainstZero) {
  std::vector<Z> values = {{1.5, -2}, {0, 3}, {0, 0}, {-0.0, 0}, {-7.9, 1}, {1e10, 0}, {kNan, 1}};
  HostTensor input = complexTensor(DataType::ComplexDouble, values);
  auto castTo = [&](DataType to) {
    std::vector<HostTensor> inputs = {input};
    return runOneOp([to](std::vector<Val>& v) { return cast(v[0], to); }, inputs);
  };
  HostTensor toF32 = castTo(DataType::Float), toBool = castTo(DataType::Bool);
  HostTensor toI32 = castTo(DataType::Int32), toC64 = castTo(DataType::ComplexFloat);
  HostTensor toHalf = castTo(DataType::Half);
  for (size_t k = 0; k < values.size(); ++k) {
    Z z = values[k];
    float re = float(z.real());
    EXPECT_TRUE(std::isnan(re) ? std::isnan(toF32.as<float>()[k]) : toF32.as<float>()[k] == re);
    EXPECT_EQ(toBool.as<bool>()[k], z != Z(0, 0)) << z; // torch: either part non-zero
    int32_t expectedInt = std::isnan(z.real())       ? 0
                          : z.real() >= 2147483647.0 ? INT32_MAX
                                                     : int32_t(z.real()); // truncates, saturates
    EXPECT_EQ(toI32.as<int32_t>()[k], expectedInt) << z;
    Z narrowed = complexAt(toC64, int64_t(k));
    EXPECT_TRUE(std::isnan(z.real()) || narrowed.real() == double(float(z.real())));
    EXPECT_EQ(narrowed.imag(), double(float(z.imag())));
    if (!std::isnan(z.real())) {
      EXPECT_EQ(toHalf.as<uint16_t>()[k], referenceHalf(float(z.real()))) << z;
    }
  }
  // Real values become complex with imaginary part +0.
  std::vector<HostTensor> reals = {tensorOf(DataType::Int64, {3, -4})};
  HostTensor fromInt =
      runOneOp([](std::vector<Val>& v) { return cast(v[0], DataType::ComplexFloat); }, reals);
  EXPECT_EQ(complexAt(fromInt, 1), Z(-4, 0));
  EXPECT_FALSE(std::signbit(complexAt(fromInt, 1).imag()));
}

TEST(Complex, ComplexBuildsFromPartsAndWhereSelectsWholeValues) {
  std::vector<HostTensor> inputs = {tensorOf(DataType::Float, {1.5, -2, 0}),
                                    tensorOf(DataType::Float, {0.25, 3, -1}),
                                    tensorOf(DataType::Bool, {1, 0, 1})};
  HostTensor built = runOneOp(
      [](std::vector<Val>& v) {
        Val z = complex(v[0], v[1]);
        return where(v[2], z, mul(z, z)); // a weak constant's imaginary part is 0
      },
      inputs);
  ASSERT_EQ(built.dtype(), DataType::ComplexFloat);
  EXPECT_EQ(complexAt(built, 0), Z(1.5, 0.25));
  EXPECT_EQ(complexAt(built, 1), Z(-2, 3) * Z(-2, 3));
  EXPECT_EQ(complexAt(built, 2), Z(0, -1));
}

TEST(Complex, TheTextFormReadsAndPrintsComplexTypes) {
  const char* text = "fusion f(z: c64[4], w: c128[]) {\n"
                     "  m = abs(z)\n"
                     "  p = mul(cast(z, c128), w)\n"
                     "  s = complex(real(p), 2.5)\n"
                     "  return m, p, s\n"
                     "}\n";
  auto fusion = parseFusion(text);
  EXPECT_EQ(fusion->outputs()[0]->dtype(), DataType::Float);
  EXPECT_EQ(fusion->outputs()[2]->dtype(), DataType::ComplexDouble);
  auto reparsed = parseFusion(printFusion(*fusion));
  EXPECT_EQ(printFusion(*reparsed), printFusion(*fusion));
}

TEST(Complex, ScalarInputsAndConstantsAreReal) {
  auto messageOf = [](const char* text) -> std::string {
    try {
      parseFusion(text);
    } catch (const Error& error) {
      return error.what();
    }
    return "accepted";
  };
  EXPECT_NE(messageOf("fusion f(x: c64[2], s: c64) {\n  y = mul(x, s)\n  return y\n}\n")
                .find("c64 scalar inputs are not supported"),
            std::string::npos);
  EXPECT_NE(messageOf("fusion f(x: c64[2]) {\n  y = mul(x, 2.5:c128)\n  return y\n}\n")
                .find("must be written complex(re, im)"),
            std::string::npos);
}
