// Every op of the IR run by the reference evaluator and compared with values the test
// computes itself, in the op's compute type, for each data type the op accepts.

#include "evaluator_test_support.h"

#include <cmath>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

constexpr DataType kFloatTypes[] = {DataType::Half, DataType::BFloat16, DataType::Float,
                                    DataType::Double};
constexpr DataType kIntegerTypes[] = {DataType::Int8,  DataType::Int16, DataType::Int32,
                                      DataType::Int64, DataType::UInt8, DataType::UInt16,
                                      DataType::UInt32};

const std::vector<double> kPositive = {0.5, 1.25, 2.0, 3.75, 0.1, 7.0, 0.0078125};
const std::vector<double> kSignedA = {0.5, -1.25, 2.0, 3.75, 0.1, -7.0, 2.5};
const std::vector<double> kSignedB = {1.5, 2.0, -0.25, 3.75, 0.3, 2.0, 0.75};
const std::vector<double> kWeights = {0.0, 0.25, 0.5, 0.75, 1.0, -0.5, 1.5};
const std::vector<double> kIntA = {0, 1, 5, 7, 12, 100, 3};
const std::vector<double> kIntB = {1, 3, 2, 7, 5, 3, 1};

bool sameValue(double actual, double expected) {
  if (std::isnan(expected))
    return std::isnan(actual);
  return actual == expected && std::signbit(actual) == std::signbit(expected);
}

using Builder = std::function<Val(std::vector<Val>&)>;

/// Runs a floating-point op for each float dtype; `reference` is called with float (or
/// double for f64) arguments, i.e. in the op's compute type.
template <typename Reference>
void expectFloatOp(const char* name, const Builder& build, Reference reference,
                   const std::vector<std::vector<double>>& data) {
  for (DataType dtype : kFloatTypes) {
    std::vector<HostTensor> inputs;
    for (const auto& values : data)
      inputs.push_back(tensorOf(dtype, values));
    HostTensor out = runOneOp(build, inputs);
    ASSERT_EQ(out.dtype(), dtype) << name;
    for (int64_t i = 0; i < out.numel(); ++i) {
      double a[3] = {};
      for (size_t k = 0; k < inputs.size(); ++k)
        a[k] = elementAsDouble(inputs[k], i);
      double expected;
      if (dtype == DataType::Double)
        expected = reference(a[0], a[1], a[2]);
      else
        expected = roundTo(dtype, reference(float(a[0]), float(a[1]), float(a[2])));
      EXPECT_TRUE(sameValue(elementAsDouble(out, i), expected))
          << name << " " << shortName(dtype).str() << " element " << i << ": got "
          << elementAsDouble(out, i) << ", expected " << expected;
    }
  }
}

/// Runs an integer op for each integer dtype; the reference computes in int64 and the
/// result is wrapped to the dtype by the test's own cast.
template <typename Reference>
void expectIntegerOp(const char* name, const Builder& build, Reference reference,
                     const std::vector<std::vector<double>>& data) {
  for (DataType dtype : kIntegerTypes) {
    std::vector<HostTensor> inputs;
    for (const auto& values : data)
      inputs.push_back(tensorOf(dtype, values));
    HostTensor out = runOneOp(build, inputs);
    ASSERT_EQ(out.dtype(), dtype) << name;
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t a[3] = {};
      for (size_t k = 0; k < inputs.size(); ++k)
        a[k] = int64_t(elementAsDouble(inputs[k], i));
      int64_t wide = reference(a[0], a[1], a[2]);
      HostTensor expected(dtype, {1});
      setElement(expected, 0, 0);
      // Truncate to the dtype's width the way C++20 defines integer conversion.
      switch (dtype) {
      case DataType::Int8:
        expected.as<int8_t>()[0] = int8_t(wide);
        break;
      case DataType::Int16:
        expected.as<int16_t>()[0] = int16_t(wide);
        break;
      case DataType::Int32:
        expected.as<int32_t>()[0] = int32_t(wide);
        break;
      case DataType::Int64:
        expected.as<int64_t>()[0] = wide;
        break;
      case DataType::UInt8:
        expected.as<uint8_t>()[0] = uint8_t(wide);
        break;
      case DataType::UInt16:
        expected.as<uint16_t>()[0] = uint16_t(wide);
        break;
      default:
        expected.as<uint32_t>()[0] = uint32_t(wide);
        break;
      }
      EXPECT_EQ(elementAsDouble(out, i), elementAsDouble(expected, 0))
          << name << " " << shortName(dtype).str() << " element " << i;
    }
  }
}

Builder unary(Val (*op)(const Operand&)) {
  return [op](std::vector<Val>& v) { return op(v[0]); };
}
Builder binary(Val (*op)(const Operand&, const Operand&)) {
  return [op](std::vector<Val>& v) { return op(v[0], v[1]); };
}
Builder ternary(Val (*op)(const Operand&, const Operand&, const Operand&)) {
  return [op](std::vector<Val>& v) { return op(v[0], v[1], v[2]); };
}

} // namespace

TEST(EvaluatorOps, FloatingPointUnary) {
  auto positive = std::vector<std::vector<double>>{kPositive};
  auto any = std::vector<std::vector<double>>{kSignedA};
  expectFloatOp(
      "neg", unary(neg), [](auto a, auto, auto) { return -a; }, any);
  expectFloatOp(
      "abs", unary(abs), [](auto a, auto, auto) { return std::fabs(a); }, any);
  expectFloatOp(
      "sqrt", unary(sqrt), [](auto a, auto, auto) { return std::sqrt(a); }, positive);
  expectFloatOp(
      "rsqrt", unary(rsqrt), [](auto a, auto, auto) { return decltype(a)(1) / std::sqrt(a); },
      positive);
  expectFloatOp(
      "reciprocal", unary(reciprocal), [](auto a, auto, auto) { return decltype(a)(1) / a; }, any);
  expectFloatOp(
      "exp", unary(exp), [](auto a, auto, auto) { return std::exp(a); }, any);
  expectFloatOp(
      "exp2", unary(exp2), [](auto a, auto, auto) { return std::exp2(a); }, any);
  expectFloatOp(
      "log", unary(log), [](auto a, auto, auto) { return std::log(a); }, positive);
  expectFloatOp(
      "log2", unary(log2), [](auto a, auto, auto) { return std::log2(a); }, positive);
  expectFloatOp(
      "log1p", unary(log1p), [](auto a, auto, auto) { return std::log1p(a); }, positive);
  expectFloatOp(
      "expm1", unary(expm1), [](auto a, auto, auto) { return std::expm1(a); }, any);
  expectFloatOp(
      "sin", unary(sin), [](auto a, auto, auto) { return std::sin(a); }, any);
  expectFloatOp(
      "cos", unary(cos), [](auto a, auto, auto) { return std::cos(a); }, any);
  expectFloatOp(
      "tanh", unary(tanh), [](auto a, auto, auto) { return std::tanh(a); }, any);
  expectFloatOp(
      "sigmoid", unary(sigmoid),
      [](auto a, auto, auto) {
        using T = decltype(a);
        return T(1) / (T(1) + std::exp(-a));
      },
      any);
  expectFloatOp(
      "floor", unary(floor), [](auto a, auto, auto) { return std::floor(a); }, any);
  expectFloatOp(
      "ceil", unary(ceil), [](auto a, auto, auto) { return std::ceil(a); }, any);
  expectFloatOp(
      "round", unary(round), [](auto a, auto, auto) { return std::nearbyint(a); }, any);
  expectFloatOp(
      "trunc", unary(trunc), [](auto a, auto, auto) { return std::trunc(a); }, any);
  expectFloatOp(
      "sign", unary(sign),
      [](auto a, auto, auto) { return decltype(a)(a > 0   ? 1
                                                  : a < 0 ? -1
                                                          : 0); }, any);
  expectFloatOp(
      "set", unary(set), [](auto a, auto, auto) { return a; }, any);
}

TEST(EvaluatorOps, FloatingPointBinaryAndTernary) {
  auto two = std::vector<std::vector<double>>{kSignedA, kSignedB};
  expectFloatOp(
      "add", binary(add), [](auto a, auto b, auto) { return a + b; }, two);
  expectFloatOp(
      "sub", binary(sub), [](auto a, auto b, auto) { return a - b; }, two);
  expectFloatOp(
      "mul", binary(mul), [](auto a, auto b, auto) { return a * b; }, two);
  expectFloatOp(
      "div", binary(div), [](auto a, auto b, auto) { return a / b; }, two);
  expectFloatOp("pow", binary(pow), [](auto a, auto b, auto) { return std::pow(a, b); },
                {kPositive, kSignedB});
  expectFloatOp(
      "fmod", binary(fmod), [](auto a, auto b, auto) { return std::fmod(a, b); }, two);
  expectFloatOp(
      "maximum", binary(maximum), [](auto a, auto b, auto) { return a > b ? a : b; }, two);
  expectFloatOp(
      "minimum", binary(minimum), [](auto a, auto b, auto) { return a < b ? a : b; }, two);
  expectFloatOp(
      "atan2", binary(atan2), [](auto a, auto b, auto) { return std::atan2(a, b); }, two);
  expectFloatOp(
      "hypot", binary(hypot), [](auto a, auto b, auto) { return std::hypot(a, b); }, two);
  expectFloatOp(
      "copysign", binary(copysign), [](auto a, auto b, auto) { return std::copysign(a, b); }, two);
  expectFloatOp("lerp", ternary(lerp),
                [](auto s, auto e, auto w) {
                  using T = decltype(s);
                  return std::fabs(w) < T(0.5) ? s + w * (e - s) : e - (e - s) * (T(1) - w);
                },
                {kSignedA, kSignedB, kWeights});
  expectFloatOp("fma", ternary(fma), [](auto a, auto b, auto c) { return std::fma(a, b, c); },
                {kSignedA, kSignedB, kWeights});
  expectFloatOp("clamp", ternary(clamp),
                [](auto x, auto lo, auto hi) {
                  auto low = x > lo ? x : lo;
                  return low < hi ? low : hi;
                },
                {kSignedA, kSignedB, kWeights});
}

TEST(EvaluatorOps, IntegerArithmeticWraps) {
  auto two = std::vector<std::vector<double>>{kIntA, kIntB};
  expectIntegerOp("neg", unary(neg), [](int64_t a, int64_t, int64_t) { return -a; }, {kIntA});
  expectIntegerOp("abs", unary(abs), [](int64_t a, int64_t, int64_t) { return a; }, {kIntA});
  expectIntegerOp("floor", unary(floor), [](int64_t a, int64_t, int64_t) { return a; }, {kIntA});
  expectIntegerOp("sign", unary(sign), [](int64_t a, int64_t, int64_t) { return a > 0; }, {kIntA});
  expectIntegerOp("bitwise_not", unary(bitwise_not), [](int64_t a, int64_t, int64_t) { return ~a; },
                  {kIntA});
  expectIntegerOp(
      "add", binary(add), [](int64_t a, int64_t b, int64_t) { return a + b; }, two);
  expectIntegerOp(
      "sub", binary(sub), [](int64_t a, int64_t b, int64_t) { return a - b; }, two);
  expectIntegerOp(
      "mul", binary(mul), [](int64_t a, int64_t b, int64_t) { return a * b; }, two);
  expectIntegerOp(
      "fmod", binary(fmod), [](int64_t a, int64_t b, int64_t) { return a % b; }, two);
  expectIntegerOp(
      "pow", binary(pow),
      [](int64_t a, int64_t b, int64_t) {
        int64_t r = 1;
        for (int64_t k = 0; k < b; ++k)
          r *= a;
        return r;
      },
      two);
  expectIntegerOp(
      "maximum", binary(maximum), [](int64_t a, int64_t b, int64_t) { return std::max(a, b); },
      two);
  expectIntegerOp(
      "minimum", binary(minimum), [](int64_t a, int64_t b, int64_t) { return std::min(a, b); },
      two);
  expectIntegerOp(
      "bitwise_and", binary(bitwise_and), [](int64_t a, int64_t b, int64_t) { return a & b; }, two);
  expectIntegerOp(
      "bitwise_or", binary(bitwise_or), [](int64_t a, int64_t b, int64_t) { return a | b; }, two);
  expectIntegerOp(
      "bitwise_xor", binary(bitwise_xor), [](int64_t a, int64_t b, int64_t) { return a ^ b; }, two);
  expectIntegerOp(
      "shift_left", binary(shift_left), [](int64_t a, int64_t b, int64_t) { return a << b; }, two);
  expectIntegerOp(
      "shift_right", binary(shift_right), [](int64_t a, int64_t b, int64_t) { return a >> b; },
      two);
  expectIntegerOp("fma", ternary(fma), [](int64_t a, int64_t b, int64_t c) { return a * b + c; },
                  {kIntA, kIntB, kIntA});
  expectIntegerOp("clamp", ternary(clamp),
                  [](int64_t x, int64_t lo, int64_t hi) { return std::min(std::max(x, lo), hi); },
                  {kIntA, kIntB, {5, 5, 5, 5, 5, 5, 5}});
}

TEST(EvaluatorOps, ComparisonsPredicatesAndLogicGiveBool) {
  struct Case {
    const char* name;
    Val (*op)(const Operand&, const Operand&);
    std::function<bool(double, double)> reference;
  };
  std::vector<Case> cases = {
      {"eq", eq, [](double a, double b) { return a == b; }},
      {"ne", ne, [](double a, double b) { return a != b; }},
      {"lt", lt, [](double a, double b) { return a < b; }},
      {"le", le, [](double a, double b) { return a <= b; }},
      {"gt", gt, [](double a, double b) { return a > b; }},
      {"ge", ge, [](double a, double b) { return a >= b; }},
      {"logical_and", logical_and, [](double a, double b) { return a != 0 && b != 0; }},
      {"logical_or", logical_or, [](double a, double b) { return a != 0 || b != 0; }},
  };
  std::vector<double> a = {0, 1, 5, 7, 2, 0}, b = {0, 3, 5, 2, 0, 1};
  for (const Case& c : cases)
    for (DataType dtype : kAllDataTypes) {
      if (isComplex(dtype)) // complex values are not ordered: tests/ir/complex_test.cpp
        continue;
      std::vector<HostTensor> inputs = {tensorOf(dtype, a), tensorOf(dtype, b)};
      HostTensor out = runOneOp(binary(c.op), inputs);
      ASSERT_EQ(out.dtype(), DataType::Bool);
      for (int64_t i = 0; i < out.numel(); ++i)
        EXPECT_EQ(out.as<bool>()[i],
                  c.reference(elementAsDouble(inputs[0], i), elementAsDouble(inputs[1], i)))
            << c.name << " " << shortName(dtype).str() << " element " << i;
    }
  std::vector<double> special = {1.0, NAN, INFINITY, -INFINITY, 0.0};
  for (DataType dtype : kFloatTypes) {
    std::vector<HostTensor> inputs = {tensorOf(dtype, special)};
    HostTensor nan = runOneOp(unary(isnan), inputs), inf = runOneOp(unary(isinf), inputs),
               finite = runOneOp(unary(isfinite), inputs),
               notValue = runOneOp(unary(logical_not), inputs);
    for (int64_t i = 0; i < 5; ++i) {
      EXPECT_EQ(nan.as<bool>()[i], std::isnan(special[i]));
      EXPECT_EQ(inf.as<bool>()[i], std::isinf(special[i]));
      EXPECT_EQ(finite.as<bool>()[i], std::isfinite(special[i]));
      EXPECT_EQ(notValue.as<bool>()[i], special[i] == 0);
    }
  }
  std::vector<HostTensor> ints = {tensorOf(DataType::Int32, {1, 2})};
  EXPECT_FALSE(runOneOp(unary(isnan), ints).as<bool>()[0]);
  EXPECT_TRUE(runOneOp(unary(isfinite), ints).as<bool>()[1]);
}

TEST(EvaluatorOps, WhereSelectsAndPromotes) {
  std::vector<HostTensor> inputs = {tensorOf(DataType::Bool, {1, 0, 1}),
                                    tensorOf(DataType::Float, {1.5, 2.5, 3.5}),
                                    tensorOf(DataType::Int32, {7, 8, 9})};
  HostTensor out = runOneOp(ternary(where), inputs);
  ASSERT_EQ(out.dtype(), DataType::Float);
  EXPECT_EQ(out.as<float>()[0], 1.5f);
  EXPECT_EQ(out.as<float>()[1], 8.0f);
  EXPECT_EQ(out.as<float>()[2], 3.5f);
}

TEST(EvaluatorOps, CastBetweenEveryPairOfTypes) {
  // Values every type holds exactly (96 and 7 fit e4m3fn's and e5m2's mantissas), except
  // e8m0fnu, which holds powers of two only: its casts are checked against torch
  // (test_torch_float8.py) and the formats' definition (float8_test.cpp).
  std::vector<double> values = {0, 1, 2, 3, 96, 7, 1};
  for (DataType from : kAllDataTypes)
    for (DataType to : kAllDataTypes) {
      if (from == DataType::Float8_e8m0fnu || to == DataType::Float8_e8m0fnu)
        continue;
      std::vector<HostTensor> inputs = {tensorOf(from, values)};
      HostTensor out = runOneOp([to](std::vector<Val>& v) { return cast(v[0], to); }, inputs);
      ASSERT_EQ(out.dtype(), to);
      for (int64_t i = 0; i < out.numel(); ++i) {
        double source = elementAsDouble(inputs[0], i);
        double expected = to == DataType::Bool ? double(source != 0) : source;
        EXPECT_EQ(elementAsDouble(out, i), expected)
            << shortName(from).str() << " -> " << shortName(to).str();
      }
    }
}

TEST(EvaluatorOps, CastRoundsToNearestEvenAndSaturates) {
  std::vector<HostTensor> doubles = {tensorOf(DataType::Double, {0.1, 1.0 / 3, 65519.0, 1e6})};
  HostTensor half = runOneOp([](auto& v) { return cast(v[0], DataType::Half); }, doubles);
  EXPECT_EQ(half.as<uint16_t>()[0], referenceHalf(0.1f));
  EXPECT_EQ(half.as<uint16_t>()[1], referenceHalf(1.0f / 3));
  EXPECT_EQ(half.as<uint16_t>()[2], 0x7bffu); // 65519 rounds down to 65504
  EXPECT_EQ(half.as<uint16_t>()[3], 0x7c00u); // overflow to +inf
  HostTensor bf16 = runOneOp([](auto& v) { return cast(v[0], DataType::BFloat16); }, doubles);
  EXPECT_EQ(bf16.as<uint16_t>()[1], referenceBFloat16(float(1.0 / 3)));
  std::vector<HostTensor> floats = {tensorOf(DataType::Float, {NAN, 1e10, -1e10, -2.75})};
  HostTensor i32 = runOneOp([](auto& v) { return cast(v[0], DataType::Int32); }, floats);
  EXPECT_EQ(i32.as<int32_t>()[0], 0);
  EXPECT_EQ(i32.as<int32_t>()[1], INT32_MAX);
  EXPECT_EQ(i32.as<int32_t>()[2], INT32_MIN);
  EXPECT_EQ(i32.as<int32_t>()[3], -2);
}

TEST(EvaluatorOps, BitcastReinterpretsBits) {
  std::vector<HostTensor> floats = {tensorOf(DataType::Float, {1.0, -2.5})};
  HostTensor bits = runOneOp([](auto& v) { return bitcast(v[0], DataType::Int32); }, floats);
  EXPECT_EQ(bits.as<int32_t>()[0], 0x3f800000);
  float minus = -2.5f;
  int32_t minusBits;
  std::memcpy(&minusBits, &minus, 4);
  EXPECT_EQ(bits.as<int32_t>()[1], minusBits);
  std::vector<HostTensor> bf16 = {tensorOf(DataType::BFloat16, {1.0, -2.0})};
  HostTensor i16 = runOneOp([](auto& v) { return bitcast(v[0], DataType::Int16); }, bf16);
  EXPECT_EQ(uint16_t(i16.as<int16_t>()[0]), referenceBFloat16(1.0f));
  EXPECT_EQ(uint16_t(i16.as<int16_t>()[1]), referenceBFloat16(-2.0f));
  std::vector<HostTensor> u16 = {tensorOf(DataType::UInt16, {0x3c00})};
  HostTensor half = runOneOp([](auto& v) { return bitcast(v[0], DataType::Half); }, u16);
  EXPECT_EQ(elementAsDouble(half, 0), 1.0);
  std::vector<HostTensor> f64 = {tensorOf(DataType::Double, {1.0})};
  HostTensor i64 = runOneOp([](auto& v) { return bitcast(v[0], DataType::Int64); }, f64);
  EXPECT_EQ(i64.as<int64_t>()[0], 0x3ff0000000000000);
}

TEST(EvaluatorOps, BroadcastInDim) {
  std::vector<HostTensor> row = {tensorOf(DataType::Float, {1, 2, 3})};
  HostTensor rows = runOneOp([](auto& v) { return broadcast_in_dim(v[0], {2, 3}, {1}); }, row);
  ASSERT_EQ(rows.shape(), llvm::ArrayRef<int64_t>({2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(rows.as<float>()[i], float(i % 3 + 1));
  HostTensor columns = runOneOp([](auto& v) { return broadcast_in_dim(v[0], {3, 2}, {0}); }, row);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(columns.as<float>()[i], float(i / 2 + 1));
}
