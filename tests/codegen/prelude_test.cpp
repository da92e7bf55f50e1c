// The device prelude compiled by the host compiler (as the host backend compiles it), checked
// bit for bit against the reference: the element ops of ir/element_ops.h, the f16/bf16 code of
// ir/half_float.cpp and the evaluator's casts.

#include "codegen/prelude.cuh"

#include "ir/element_ops.h"
#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "ir/half_float.h"
#include "ir/op_kind.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

namespace widefuse {
namespace {

template <typename... Ts> struct TypeList {};
using FloatTypes = TypeList<f32, f64>;
using IntegerTypes = TypeList<i8, i16, i32, i64, u8, u16, u32>;
using NumberTypes = TypeList<i8, i16, i32, i64, u8, u16, u32, f32, f64>;
using BitwiseTypes = TypeList<b8, i8, i16, i32, i64, u8, u16, u32>;
using ComputeTypes = TypeList<b8, i8, i16, i32, i64, u8, u16, u32, f32, f64>;
using StorageTypes =
    TypeList<b8, i8, i16, i32, i64, u8, u16, u32, f16, bf16, f32, f64, f8e4m3fn, f8e5m2, f8e8m0fnu>;

template <typename... Ts, typename F> void forEachType(TypeList<Ts...>, F&& f) {
  (f.template operator()<Ts>(), ...);
}

/// The reference's C++ type for a prelude type (i64 is long long, int64_t is long).
template <typename T> using Native = std::conditional_t<std::is_same_v<T, i64>, int64_t, T>;

template <typename T> DataType dtypeOf() {
  DataType types[] = {DataType::Bool,          DataType::Int8,        DataType::Int16,
                      DataType::Int32,         DataType::Int64,       DataType::UInt8,
                      DataType::UInt16,        DataType::UInt32,      DataType::Half,
                      DataType::BFloat16,      DataType::Float,       DataType::Double,
                      DataType::Float8_e4m3fn, DataType::Float8_e5m2, DataType::Float8_e8m0fnu};
  int index = 0, found = -1;
  forEachType(StorageTypes{}, [&]<typename S>() {
    if (std::is_same_v<S, T>)
      found = index;
    ++index;
  });
  return types[found];
}

template <typename T> uint64_t bitsOf(T value) {
  static_assert(sizeof(T) <= 8);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  return bits;
}

template <typename T> std::string show(T value) {
  std::ostringstream out;
  if constexpr (std::is_floating_point_v<T>)
    out << std::setprecision(17) << value << " ";
  else if constexpr (std::is_integral_v<T>)
    out << +value << " ";
  out << "[0x" << std::hex << bitsOf(value) << "]";
  return out.str();
}

// Edge values: shift widths -1, 0, width - 1, width, width + 1, and integers near the limits.
constexpr int64_t kIntegerEdges[] = {0,   1,   2,    3,     5,     7,     8,     9,       15,  16,
                                     17,  31,  32,   33,    63,    64,    65,    100,     127, 128,
                                     255, 256, 2049, 32767, 65504, 65535, 65536, 16777217};
// The i32 and u32 maxima; 2^53 + 1, no f64; 2^62 + 2^54 + 1, where i64 -> bf16 rounds twice
// (through f64, as the reference); 2^30 + 2^22 + 1 and 2^62 + 2^54 + 2^30, which round
// differently through f32.
constexpr int64_t kWideIntegerEdges[] = {2147483647,          4294967295, 9007199254740993,
                                         4629700416936869889, 1077936129, 4629700418010611712};
// Ties of rounding to integers, f16 and bf16 (normal, subnormal, overflow) and float limits.
constexpr double kFloatEdges[] = {
    0, 0.5, 1, 1.5, 2.5, 3, 0.49999997, 7.25, 100, 1e10, 0x1p31, 0x1p32, 0x1p63, 0x1p64, 0x1p53 + 1,
    65504, 65519.99, 65520, 1 + 0x1p-11, 1 + 0x3p-11, 1 + 0x1p-8, 0x1p-25, 0x3p-25, 0x1p-24,
    0x1p-133, 0x1p-126, 0x1p-149, 0x1p-1074, 3.4028235e38,
    // The branches of erfinv (|y| <= 0.7 and beyond) and erfcinv (tails below 0.3, above 1.7).
    0.3, 0.7, 0.9, 0.999999, 1.9, 0.01, 1e-300};

/// Edge values of T, their negations, the limits, infinities, NaNs and a few fixed-seed random
/// values.
template <typename T> std::vector<T> testValues() {
  if constexpr (std::is_same_v<T, b8>) {
    return {false, true};
  } else {
    using Limits = std::numeric_limits<T>;
    std::vector<T> values = {Limits::lowest(), Limits::max(), T(Limits::lowest() + 1),
                             T(Limits::max() - 1)};
    std::mt19937_64 random(7);
    if constexpr (std::is_integral_v<T>) {
      for (int64_t x : kIntegerEdges)
        values.insert(values.end(), {static_cast<T>(x), static_cast<T>(-x)});
      for (int64_t x : kWideIntegerEdges)
        values.insert(values.end(), {static_cast<T>(x), static_cast<T>(-x)});
    } else {
      for (double x : kFloatEdges)
        values.insert(values.end(), {T(x), T(-x)});
      for (T x : {Limits::min(), Limits::infinity(), Limits::quiet_NaN(), Limits::signaling_NaN()})
        values.insert(values.end(), {x, -x});
      std::uniform_real_distribution<T> moderate(-40, 40);
      for (int i = 0; i < 8; ++i)
        values.push_back(moderate(random));
    }
    for (int i = 0; i < 8; ++i) {
      uint64_t bits = random();
      T value;
      std::memcpy(&value, &bits, sizeof value);
      values.push_back(value);
    }
    return values;
  }
}

/// Success when both values have the same bits; `describe` (called only on failure) names the
/// call that produced `actual`.
template <typename A, typename B, typename Describe>
::testing::AssertionResult sameBits(A actual, B expected, Describe describe) {
  static_assert(sizeof(A) == sizeof(B));
  if (bitsOf(actual) == bitsOf(expected))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << describe() << " gives " << show(actual) << ", the reference " << show(expected);
}

template <typename T> bool isNan(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return value != value;
  return false;
}

template <typename T> bool isInfinite(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return value - value != value - value && value == value;
  return false;
}

/// Compares one op call with the reference bit for bit. When two NaNs meet, IEEE 754 leaves
/// open whose payload the result carries and the compiler may commute `a + b` (the
/// reference's own choice depends on its codegen), so only NaN-ness counts: when two operands
/// are NaNs of different bits, and when a NaN operand meets infinities, which can make an
/// intermediate default NaN (lerp(inf, inf, nan): inf - inf, then times nan).
template <typename T, typename Prelude, typename Reference, typename... Ts>
::testing::AssertionResult matches(const char* op, Prelude prelude, Reference reference,
                                   Ts... operands) {
  auto actual = prelude(operands...);
  auto expected = reference(Native<T>(operands)...);
  uint64_t nans[sizeof...(Ts)] = {};
  int count = 0;
  ((isNan(operands) ? void(nans[count++] = bitsOf(operands)) : void()), ...);
  bool infinities = (isInfinite(operands) || ...);
  bool payloadOpen = (count > 1 && (nans[0] != nans[1] || (count > 2 && nans[0] != nans[2]))) ||
                     (count > 0 && infinities);
  if (payloadOpen && isNan(actual) && isNan(expected))
    return ::testing::AssertionSuccess();
  return sameBits(actual, expected, [&] {
    std::string text = std::string("wf_") + op + "<" + shortName(dtypeOf<T>()).str() + ">(";
    ((text += show(operands) + ", "), ...);
    return text.substr(0, text.size() - 2) + ")";
  });
}

template <typename T, typename Prelude, typename Reference>
void checkUnary(const char* op, Prelude prelude, Reference reference) {
  for (T a : testValues<T>())
    ASSERT_TRUE(matches<T>(op, prelude, reference, a));
}

template <typename T, typename Prelude, typename Reference>
void checkBinary(const char* op, Prelude prelude, Reference reference) {
  std::vector<T> values = testValues<T>();
  for (T a : values)
    for (T b : values)
      ASSERT_TRUE(matches<T>(op, prelude, reference, a, b));
}

template <typename T, typename Prelude, typename Reference>
void checkTernary(const char* op, Prelude prelude, Reference reference) {
  std::vector<T> values = testValues<T>();
  for (T a : values)
    for (T b : values)
      for (T c : values)
        ASSERT_TRUE(matches<T>(op, prelude, reference, a, b, c));
}

// X(prelude name, reference name, compute types): every element op of op_kinds.def.
// clang-format off
#define UNARY_OPS(X)                                                                               \
  X(neg, Neg, NumberTypes) X(abs, Abs, NumberTypes) X(sqrt, Sqrt, FloatTypes)                      \
  X(rsqrt, Rsqrt, FloatTypes) X(reciprocal, Reciprocal, FloatTypes) X(exp, Exp, FloatTypes)        \
  X(exp2, Exp2, FloatTypes) X(log, Log, FloatTypes) X(log2, Log2, FloatTypes)                      \
  X(log1p, Log1p, FloatTypes) X(expm1, Expm1, FloatTypes) X(sin, Sin, FloatTypes)                  \
  X(cos, Cos, FloatTypes) X(tanh, Tanh, FloatTypes) X(sigmoid, Sigmoid, FloatTypes)                \
  X(floor, Floor, NumberTypes) X(ceil, Ceil, NumberTypes) X(round, Round, NumberTypes)             \
  X(trunc, Trunc, NumberTypes) X(sign, Sign, NumberTypes) X(isnan, IsNan, ComputeTypes)            \
  X(isinf, IsInf, ComputeTypes) X(isfinite, IsFinite, ComputeTypes)                                \
  X(logical_not, LogicalNot, ComputeTypes) X(bitwise_not, BitwiseNot, BitwiseTypes)            \
  X(acos, Acos, FloatTypes) X(acosh, Acosh, FloatTypes) X(asin, Asin, FloatTypes)                  \
  X(asinh, Asinh, FloatTypes) X(atan, Atan, FloatTypes) X(atanh, Atanh, FloatTypes)                \
  X(cosh, Cosh, FloatTypes) X(sinh, Sinh, FloatTypes) X(tan, Tan, FloatTypes)                      \
  X(log10, Log10, FloatTypes) X(erf, Erf, FloatTypes) X(erfc, Erfc, FloatTypes)                    \
  X(erfinv, Erfinv, FloatTypes) X(erfcinv, Erfcinv, FloatTypes) X(lgamma, Lgamma, FloatTypes)      \
  X(relu, Relu, NumberTypes) X(frac, Frac, NumberTypes) X(signbit, Signbit, ComputeTypes)          \
  X(isneginf, IsNegInf, ComputeTypes) X(isposinf, IsPosInf, ComputeTypes)                          \
  X(isreal, IsReal, ComputeTypes)
#define BINARY_OPS(X)                                                                              \
  X(add, Add, NumberTypes) X(sub, Sub, NumberTypes) X(mul, Mul, NumberTypes)                       \
  X(div, Div, NumberTypes) X(truediv, TrueDiv, FloatTypes) X(pow, Pow, NumberTypes)               \
  X(fmod, Fmod, NumberTypes) X(remainder, Remainder, NumberTypes)                                  \
  X(nextafter, Nextafter, FloatTypes) X(gcd, Gcd, IntegerTypes)                                    \
  X(logical_right_shift, LogicalRightShift, IntegerTypes)                                          \
  X(maximum, Maximum, ComputeTypes) X(minimum, Minimum, ComputeTypes) X(atan2, Atan2, FloatTypes)  \
  X(hypot, Hypot, FloatTypes) X(copysign, Copysign, FloatTypes)                                    \
  X(eq, Eq, ComputeTypes) X(ne, Ne, ComputeTypes) X(lt, Lt, ComputeTypes) X(le, Le, ComputeTypes)  \
  X(gt, Gt, ComputeTypes) X(ge, Ge, ComputeTypes) X(logical_and, LogicalAnd, ComputeTypes)         \
  X(logical_or, LogicalOr, ComputeTypes) X(bitwise_and, BitwiseAnd, BitwiseTypes)                  \
  X(bitwise_or, BitwiseOr, BitwiseTypes) X(bitwise_xor, BitwiseXor, BitwiseTypes)                  \
  X(shift_left, ShiftLeft, IntegerTypes) X(shift_right, ShiftRight, IntegerTypes)
#define TERNARY_OPS(X)                                                                             \
  X(lerp, Lerp, FloatTypes) X(fma, Fma, NumberTypes) X(clamp, Clamp, ComputeTypes)
// clang-format on

TEST(PreludeElementOps, UnaryOpsMatchTheReference) {
#define X(op, Reference, Types)                                                                    \
  forEachType(Types{}, []<typename T>() {                                                          \
    checkUnary<T>(                                                                                 \
        #op, [](T a) { return wf_##op(a); }, [](Native<T> a) { return element::Reference(a); });   \
  });
  UNARY_OPS(X)
#undef X
}

TEST(PreludeElementOps, BinaryOpsMatchTheReference) {
#define X(op, Reference, Types)                                                                    \
  forEachType(Types{}, []<typename T>() {                                                          \
    checkBinary<T>(                                                                                \
        #op, [](T a, T b) { return wf_##op(a, b); },                                               \
        [](Native<T> a, Native<T> b) { return element::Reference(a, b); });                        \
  });
  BINARY_OPS(X)
#undef X
}

TEST(PreludeElementOps, TernaryOpsMatchTheReference) {
#define X(op, Reference, Types)                                                                    \
  forEachType(Types{}, []<typename T>() {                                                          \
    checkTernary<T>(                                                                               \
        #op, [](T a, T b, T c) { return wf_##op(a, b, c); },                                       \
        [](Native<T> a, Native<T> b, Native<T> c) { return element::Reference(a, b, c); });        \
  });
  TERNARY_OPS(X)
#undef X
  // where takes a b8 condition; the evaluator passes it converted to the compute type.
  forEachType(ComputeTypes{}, []<typename T>() {
    checkTernary<T>(
        "where", [](T c, T a, T b) { return wf_where(wf_convert<b8>(c), a, b); },
        [](Native<T> c, Native<T> a, Native<T> b) {
          return element::Where<Native<T>>(element::convertNumber<bool>(c), a, b);
        });
  });
}

/// True when the op's type rule lets `type` (not f16/bf16, computed in f32) reach the element
/// op as its compute type.
bool ruleAllows(OpKind op, DataType type) {
  // The complex ops forward to ir/complex_math.h, the reference's own text: what can differ
  // is how the host flags compile it, which the host backend's every-op test checks on c64
  // and c128 (tests/runtime/host_backend_test.cpp); their values: tests/ir/complex_test.cpp.
  if (isComplex(type) || opTypeRule(op) == TypeRule::ComplexPart ||
      opTypeRule(op) == TypeRule::MakeComplex)
    return false;
  switch (opTypeRule(op)) {
  case TypeRule::Arithmetic:
    return type != DataType::Bool || op == OpKind::Maximum || op == OpKind::Minimum;
  case TypeRule::FloatMath:
  case TypeRule::TrueDivision:
  case TypeRule::FloatOnly:
    return isFloatingPoint(type);
  case TypeRule::Bitwise:
    return isInteger(type) || type == DataType::Bool;
  case TypeRule::Shift:
  case TypeRule::Integer:
    return isInteger(type);
  case TypeRule::SingleOrDouble:
    return type == DataType::Float || type == DataType::Double;
  default: // predicates, comparisons, logical ops and where: any compute type
    return true;
  }
}

TEST(PreludeElementOps, TestsCoverEveryOpForEveryComputeTypeItsRuleAllows) {
  std::map<std::string, std::set<DataType>> tested;
#define X(op, Reference, Types)                                                                    \
  forEachType(Types{}, [&]<typename T>() { tested[#op].insert(dtypeOf<T>()); });
  UNARY_OPS(X)
  BINARY_OPS(X)
  TERNARY_OPS(X)
#undef X
  forEachType(ComputeTypes{}, [&]<typename T>() { tested["where"].insert(dtypeOf<T>()); });
  for (unsigned i = 0; i < kNumOpKinds; ++i) {
    OpKind op = OpKind(i);
    if (op == OpKind::Set || op == OpKind::Cast || op == OpKind::Bitcast ||
        op == OpKind::BroadcastInDim || op == OpKind::ExpandBlocks || op == OpKind::Size ||
        op == OpKind::CodeValue || op == OpKind::NearestCode || op == OpKind::ElementIndex ||
        isReduction(op))
      continue;
    for (DataType type : kAllDataTypes)
      EXPECT_TRUE(isNarrowFloat(type) || !ruleAllows(op, type) ||
                  tested[opName(op).str()].count(type))
          << opName(op).str() << " untested on " << shortName(type).str();
  }
}

/// Casts `sources` with the reference evaluator and compares every result with wf_convert.
template <typename From, typename To> void checkConvert(const std::vector<From>& sources) {
  FusionDefinition definition("convert");
  Val x = definition.defineTensor({int64_t(sources.size())}, dtypeOf<From>(), "x");
  definition.addOutput(cast(x, dtypeOf<To>()));
  std::unique_ptr<Fusion> fusion = definition.finalize();
  HostTensor input(dtypeOf<From>(), {int64_t(sources.size())});
  for (size_t i = 0; i < sources.size(); ++i) {
    From source = sources[i]; // vector<bool> has no data()
    std::memcpy(static_cast<char*>(input.data()) + i * sizeof(From), &source, sizeof(From));
  }
  std::vector<Argument> arguments = {input.ref()};
  HostTensor output = std::move(evaluate(*fusion, arguments).outputs.at(0));
  for (size_t i = 0; i < sources.size(); ++i) {
    To expected;
    std::memcpy(&expected, static_cast<const char*>(output.data()) + i * sizeof(To), sizeof(To));
    From source = sources[i];
    ASSERT_TRUE(sameBits(wf_convert<To>(source), expected, [&] {
      return "wf_convert<" + shortName(dtypeOf<To>()).str() + ">(" +
             shortName(dtypeOf<From>()).str() + " " + show(source) + ")";
    }));
  }
}

template <typename T> std::vector<T> convertSources() {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    std::vector<T> every(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits)
      every[bits] = T{u16(bits)};
    return every;
  } else if constexpr (sizeof(T) == 1 && std::is_class_v<T>) { // the fp8 types
    std::vector<T> every(256);
    for (uint32_t bits = 0; bits < 256; ++bits)
      every[bits] = T{u8(bits)};
    return every;
  } else {
    return testValues<T>();
  }
}

TEST(PreludeConvert, EveryPairMatchesTheEvaluatorsCast) {
  forEachType(StorageTypes{}, []<typename From>() {
    std::vector<From> sources = convertSources<From>();
    forEachType(StorageTypes{}, [&]<typename To>() { checkConvert<From, To>(sources); });
  });
}

TEST(PreludeConvert, DecodesEveryHalfAndBFloat16Pattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    ASSERT_EQ(bitsOf(wf_convert<f32>(f16{u16(bits)})), bitsOf(halfBitsToFloat(u16(bits))))
        << std::hex << bits;
    ASSERT_EQ(bitsOf(wf_convert<f32>(bf16{u16(bits)})), bitsOf(bfloat16BitsToFloat(u16(bits))))
        << std::hex << bits;
  }
}

TEST(PreludeConvert, DecodesEveryFloat8Pattern) {
  for (uint32_t bits = 0; bits < 256; ++bits) {
    ASSERT_EQ(bitsOf(wf_convert<f32>(f8e4m3fn{u8(bits)})),
              bitsOf(float8E4M3FnBitsToFloat(u8(bits))))
        << std::hex << bits;
    ASSERT_EQ(bitsOf(wf_convert<f32>(f8e5m2{u8(bits)})), bitsOf(float8E5M2BitsToFloat(u8(bits))))
        << std::hex << bits;
    ASSERT_EQ(bitsOf(wf_convert<f32>(f8e8m0fnu{u8(bits)})),
              bitsOf(float8E8M0FnuBitsToFloat(u8(bits))))
        << std::hex << bits;
  }
}

// The prelude's integer rounding against the reference's float arithmetic, on floats in steps
// of 1021 patterns (4.2 million), every fp8 value and midpoint and the floats beside them.
TEST(PreludeConvert, RoundsFloatsToFloat8LikeTheReference) {
  auto check = [](f32 value) {
    ASSERT_EQ(wf_convert<f8e4m3fn>(value).bits, toFloat8E4M3FnBits(value)) << show(value);
    ASSERT_EQ(wf_convert<f8e5m2>(value).bits, toFloat8E5M2Bits(value)) << show(value);
    ASSERT_EQ(wf_convert<f8e8m0fnu>(value).bits, toFloat8E8M0FnuBits(value)) << show(value);
  };
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 1021)
    check(wf_bitcast<f32>(u32(bits)));
  for (uint32_t bits = 0; bits < 255; ++bits)
    for (f32 low : {float8E4M3FnBitsToFloat(u8(bits)), float8E5M2BitsToFloat(u8(bits)),
                    float8E8M0FnuBitsToFloat(u8(bits))}) {
      for (f32 point : {low, std::nextafter(low, INFINITY), std::nextafter(low, -INFINITY)}) {
        check(point);
        check(-point);
      }
    }
  for (uint32_t bits = 0; bits < 254; ++bits) {
    f32 tie = (float8E4M3FnBitsToFloat(u8(bits)) + float8E4M3FnBitsToFloat(u8(bits + 1))) / 2;
    for (f32 value : {tie, std::nextafter(tie, INFINITY), std::nextafter(tie, -INFINITY)})
      check(value);
    tie = (float8E5M2BitsToFloat(u8(bits)) + float8E5M2BitsToFloat(u8(bits + 1))) / 2;
    for (f32 value : {tie, std::nextafter(tie, INFINITY), std::nextafter(tie, -INFINITY)})
      check(value);
  }
}

template <typename S>::testing::AssertionResult roundsLikeTheReference(S value) {
  if (wf_convert<f16>(value).bits != toHalfBits(value))
    return ::testing::AssertionFailure() << "f16 from " << show(value);
  if (wf_convert<bf16>(value).bits != toBFloat16Bits(value))
    return ::testing::AssertionFailure() << "bf16 from " << show(value);
  return ::testing::AssertionSuccess();
}

/// The midpoint between a 16-bit float and its successor, as a double (exact).
template <typename Small> double midpointAbove(u16 bits) {
  return (double(wf_convert<f32>(Small{bits})) + double(wf_convert<f32>(Small{u16(bits + 1)}))) / 2;
}

TEST(PreludeConvert, RoundsRandomFloatsAndDoublesLikeTheReference) {
  std::mt19937_64 random(2024);
  std::uniform_int_distribution<int> exponents(-160, 140);
  for (int i = 0; i < 2'000'000; ++i) {
    uint64_t bits = random();
    float f;
    uint32_t low = uint32_t(bits);
    std::memcpy(&f, &low, sizeof f);
    ASSERT_TRUE(roundsLikeTheReference(f));
    double d;
    std::memcpy(&d, &bits, sizeof d);
    ASSERT_TRUE(roundsLikeTheReference(d));
    // Doubles in the range of the 16-bit formats, with bits below float precision.
    double mantissa = 1 + double(bits >> 12) * 0x1p-52;
    ASSERT_TRUE(roundsLikeTheReference(std::ldexp(mantissa, exponents(random))));
  }
  // Ties and their neighbours, normal and subnormal, from float and from double.
  for (int i = 0; i < 200'000; ++i) {
    uint64_t bits = random();
    for (double tie : {midpointAbove<f16>(u16(bits % 0x7c00)),
                       midpointAbove<bf16>(u16((bits >> 16) % 0x7f80))}) {
      for (double value : {tie, std::nextafter(tie, 0.0), std::nextafter(tie, 1e300)}) {
        ASSERT_TRUE(roundsLikeTheReference(value));
        ASSERT_TRUE(roundsLikeTheReference(-value));
      }
      ASSERT_TRUE(roundsLikeTheReference(float(tie)));
    }
  }
}

TEST(PreludeBitcast, ReinterpretsAndRoundTrips) {
  EXPECT_EQ(wf_bitcast<u32>(1.0f), 0x3f800000u);
  EXPECT_EQ(wf_bitcast<i64>(-2.0), i64(0xc000000000000000ull));
  EXPECT_EQ(wf_bitcast<u8>(i8(-1)), 255);
  EXPECT_EQ(wf_bitcast<i16>(bf16{0x8001}), i16(-32767));
  EXPECT_EQ(wf_bitcast<f16>(u16(0x3c00)).bits, 0x3c00);
  for (f32 value : testValues<f32>())
    EXPECT_EQ(bitsOf(wf_bitcast<f32>(wf_bitcast<i32>(value))), bitsOf(value));
  for (f64 value : testValues<f64>())
    EXPECT_EQ(bitsOf(wf_bitcast<f64>(wf_bitcast<i64>(value))), bitsOf(value));
}

TEST(PreludeTraits, LimitsAndCategoriesMatchTheStandardLibrary) {
  forEachType(ComputeTypes{}, []<typename T>() {
    using Limits = std::numeric_limits<T>;
    EXPECT_EQ(bitsOf(wf_limits<T>::lowest), bitsOf(Limits::lowest()));
    EXPECT_EQ(bitsOf(wf_limits<T>::max), bitsOf(Limits::max()));
    EXPECT_EQ(wf_is_floating<T>::value, std::is_floating_point_v<T>);
    EXPECT_EQ(wf_is_integer<T>::value, (std::is_integral_v<T> && !std::is_same_v<T, bool>));
    EXPECT_EQ(wf_is_signed<T>::value, std::is_signed_v<T>);
  });
  EXPECT_EQ(sizeof(f16), 2u);
  EXPECT_EQ(alignof(bf16), 2u);
}

/// Loads N elements from an address aligned to exactly the access size and stores them back
/// elsewhere; nothing around the N elements may change.
template <typename T, int N> void checkLoadStore() {
  constexpr int access = wf_access<T, N>::bytes, guard = 32;
  alignas(64) unsigned char source[64 + N * sizeof(T)], target[64 + N * sizeof(T) + guard];
  for (size_t i = 0; i < sizeof source; ++i)
    source[i] = static_cast<unsigned char>(i * 7 + 3);
  std::memset(target, 0xab, sizeof target);
  const T* from = reinterpret_cast<const T*>(source + access);
  T* to = reinterpret_cast<T*>(target + access);
  ASSERT_TRUE(wf_is_aligned(from, unsigned(access)));
  alignas(16) T values[N];
  wf_load(values, from);
  EXPECT_EQ(std::memcmp(values, from, sizeof values), 0) << "load of " << N;
  wf_store(to, values);
  EXPECT_EQ(std::memcmp(to, from, sizeof values), 0) << "store of " << N;
  for (size_t i = 0; i < sizeof target; ++i) {
    bool written = i >= size_t(access) && i < size_t(access) + sizeof values;
    ASSERT_TRUE(written || target[i] == 0xab) << "store of " << N << " wrote byte " << i;
  }
}

template <typename T, int... N> void checkLoadStoreWidths(std::integer_sequence<int, N...>) {
  (checkLoadStore<T, N + 1>(), ...);
}

TEST(PreludeMemory, LoadAndStoreCopyEveryWidth) {
  checkLoadStoreWidths<f32>(std::make_integer_sequence<int, 8>());
  checkLoadStoreWidths<bf16>(std::make_integer_sequence<int, 8>());
  checkLoadStoreWidths<u8>(std::make_integer_sequence<int, 8>());
}

TEST(PreludeMemory, AccessSizeIsTheLargestUnitDividingTheBytes) {
  EXPECT_EQ((wf_access<f32, 4>::bytes), 16);
  EXPECT_EQ((wf_access<f32, 8>::bytes), 16);
  EXPECT_EQ((wf_access<bf16, 8>::bytes), 16);
  EXPECT_EQ((wf_access<f32, 6>::bytes), 8);
  EXPECT_EQ((wf_access<bf16, 6>::bytes), 4);
  EXPECT_EQ((wf_access<bf16, 3>::bytes), 2);
  EXPECT_EQ((wf_access<u8, 3>::bytes), 1);
  alignas(16) char buffer[32];
  EXPECT_TRUE(wf_is_aligned(buffer + 16, 16));
  EXPECT_FALSE(wf_is_aligned(buffer + 8, 16));
  EXPECT_TRUE(wf_is_aligned(buffer + 4, 4));
  EXPECT_FALSE(wf_is_aligned(buffer + 2, 4));
}

TEST(PreludeMemoryDeathTest, AMisalignedVectorAccessTrapsOnTheHostAsOnTheDevice) {
  alignas(16) f32 buffer[12] = {};
  alignas(16) f32 values[4] = {};
  EXPECT_DEATH(wf_load(values, buffer + 1), "");
  EXPECT_DEATH(wf_store(buffer + 2, values), "");
  wf_load(values, buffer + 4); // aligned: fine
  wf_store(buffer + 8, values);
}

TEST(PreludeMemory, HeadCountsTheElementsBeforeTheNextAlignedAddress) {
  alignas(16) char buffer[64];
  EXPECT_EQ((wf_head<16, 4>(buffer)), 0);
  EXPECT_EQ((wf_head<16, 4>(buffer + 4)), 3);
  EXPECT_EQ((wf_head<16, 4>(buffer + 12)), 1);
  EXPECT_EQ((wf_head<16, 2>(buffer + 2)), 7);
  EXPECT_EQ((wf_head<8, 2>(buffer + 6)), 1);
  EXPECT_EQ((wf_head<16, 8>(buffer + 8)), 1);
  // An address that is not a multiple of the element size never aligns by whole elements.
  EXPECT_EQ((wf_head<16, 4>(buffer + 2)), -1);
  EXPECT_EQ((wf_head<16, 2>(buffer + 1)), -1);
  // Every head leads to an aligned address.
  for (int offset = 0; offset < 16; offset += 2)
    EXPECT_TRUE(wf_is_aligned(buffer + offset + 2 * wf_head<16, 2>(buffer + offset), 16));
}

} // namespace
} // namespace widefuse
