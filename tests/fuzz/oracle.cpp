#include "tests/fuzz/oracle.h"

#include "tests/fuzz/runner.h"

#include "ir/half_float.h"
#include "ir/reduction.h"

#include <fmt/format.h>
#include <llvm/ADT/DenseMap.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

namespace widefuse::fuzz {
namespace {

std::atomic<uint64_t> comparedValues{0}; // campaigns may check cases on several threads

/// What the analysis knows about a value: bounds on its magnitude and on the distance
/// between its declared-precision and float64 values. `safe` false: not compared.
struct Bound {
  bool safe = false;
  double magnitude = 0;
  double error = 0;
};

/// Unit roundoff (doubled: one rounding in the compute type, one in the result) and the
/// spacing of denormals of a floating-point type.
double roundoff(DataType t) {
  switch (t) {
  case DataType::Half:
    return 0x1p-10;
  case DataType::BFloat16:
    return 0x1p-7;
  case DataType::Float8_e4m3fn:
    return 0x1p-3;
  case DataType::Float8_e5m2:
    return 0x1p-2;
  case DataType::Float:
    return 0x1p-23;
  default:
    return 0x1p-52;
  }
}
double denormal(DataType t) {
  switch (t) {
  case DataType::Half:
    return 0x1p-24;
  case DataType::Float:
    return 0x1p-149;
  case DataType::Float8_e4m3fn:
    return 0x1p-9;
  case DataType::Float8_e5m2:
    return 0x1p-16;
  default:
    return 0x1p-133;
  }
}
double largest(DataType t) {
  switch (t) {
  case DataType::Half:
    return 65504.0;
  case DataType::Float8_e4m3fn:
    return 448.0;
  case DataType::Float8_e5m2:
    return 57344.0;
  case DataType::BFloat16:
  case DataType::Float:
    return double(std::numeric_limits<float>::max());
  default:
    return std::numeric_limits<double>::max();
  }
}

double elementAsDouble(const std::byte* p, DataType dtype) {
  switch (dtype) {
  case DataType::Bool:
    return p[0] != std::byte(0);
  case DataType::Half:
  case DataType::BFloat16: {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return dtype == DataType::Half ? halfBitsToFloat(bits) : bfloat16BitsToFloat(bits);
  }
  case DataType::Float8_e4m3fn:
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    return narrowBitsToFloat(dtype, uint8_t(p[0]));
  case DataType::Float: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DataType::Double: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  default:
    break;
  }
  int64_t value = 0;
  std::memcpy(&value, p, byteSize(dtype));
  size_t bits = byteSize(dtype) * 8;
  if (bits < 64 && isSignedInteger(dtype)) // sign-extend without a signed shift
    value = (value ^ (int64_t(1) << (bits - 1))) - (int64_t(1) << (bits - 1));
  return double(value);
}

/// Rounding `b` (magnitude already updated) to floating type `t`: adds its error, and marks
/// the value unsafe when it could overflow.
void roundTo(Bound& b, DataType t) {
  if (!isFloatingPoint(t))
    return;
  if (t == DataType::Float8_e8m0fnu) { // no sign and no zero: no relative error bound
    b.safe = false;
    return;
  }
  b.error += roundoff(t) * b.magnitude + denormal(t);
  if (b.magnitude * 1.01 >= largest(t))
    b.safe = false;
}

/// The bound of an input or constant: finite values only (a non-finite one makes the oracle
/// value non-finite, which is never compared).
Bound leafBound(const Value& value, const FuzzCase& fuzzCase) {
  if (isComplex(value.dtype())) // the oracle models real arithmetic only
    return Bound{};
  Bound b{true, 0, 0};
  if (value.isConstant()) {
    std::visit([&](auto v) { b.magnitude = std::fabs(double(v)); }, *value.constant());
  } else if (auto found = fuzzCase.inputs.find(value.name()); found != fuzzCase.inputs.end()) {
    const InputData& data = found->second;
    if (data.isScalar) {
      std::visit([&](auto v) { b.magnitude = std::fabs(double(v)); }, data.scalar);
    } else {
      size_t size = byteSize(data.dtype);
      for (size_t at = 0; at + size <= data.storage.size(); at += size) {
        double v = std::fabs(elementAsDouble(data.storage.data() + at, data.dtype));
        if (std::isfinite(v))
          b.magnitude = std::max(b.magnitude, v);
      }
    }
  }
  if (!std::isfinite(b.magnitude))
    return Bound{};
  if (isInteger(value.dtype()))
    b.magnitude = std::max(b.magnitude, 1.0);
  roundTo(b, value.dtype());
  return b;
}

/// The bound of an expression's result from its operands' bounds; unsafe outside the subset.
Bound exprBound(const Expr& expr, llvm::ArrayRef<Bound> in) {
  DataType result = expr.result()->dtype();
  for (const Bound& b : in)
    if (!b.safe)
      return Bound{};
  if (isComplex(result))
    return Bound{};
  // Float-to-integer conversions and comparisons turn small errors into large ones.
  if (!isFloatingPoint(result))
    for (const Value* operand : expr.operands())
      if (isFloatingPoint(operand->dtype()))
        return Bound{};
  if (!isFloatingPoint(result)) {
    // Integer and bool values are computed alike in both modes (wrapping included).
    auto [low, high] = integerRange(result == DataType::Bool ? DataType::UInt8 : result);
    return Bound{true, std::max(std::fabs(double(low)), double(high)), 0};
  }
  DataType compute = computeType(result);
  // Each operand is converted to the compute type first (a runtime f64 scalar to f32, ...).
  llvm::SmallVector<Bound, 3> ops(in.begin(), in.end());
  for (Bound& b : ops)
    roundTo(b, compute);
  Bound r{true, 0, 0};
  auto maxOf = [&](auto member) {
    double m = 0;
    for (const Bound& b : ops)
      m = std::max(m, b.*member);
    return m;
  };
  switch (expr.op()) {
  case OpKind::Set:
  case OpKind::BroadcastInDim:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::Clamp:
  case OpKind::Cast:
    r = Bound{true, maxOf(&Bound::magnitude), maxOf(&Bound::error)};
    break;
  case OpKind::Where:
    if (in[0].error != 0) // the condition must be exact (bool/integer operands only)
      return Bound{};
    r = Bound{true, std::max(ops[1].magnitude, ops[2].magnitude),
              std::max(ops[1].error, ops[2].error)};
    break;
  case OpKind::Add:
  case OpKind::Sub:
    r = Bound{true, ops[0].magnitude + ops[1].magnitude, ops[0].error + ops[1].error};
    break;
  case OpKind::Mul:
  case OpKind::Fma: {
    const Bound& a = ops[0];
    const Bound& b = ops[1];
    r = Bound{true, a.magnitude * b.magnitude,
              a.error * b.magnitude + b.error * a.magnitude + a.error * b.error};
    if (expr.op() == OpKind::Fma) {
      roundTo(r, compute);
      r.magnitude += ops[2].magnitude;
      r.error += ops[2].error;
    }
    break;
  }
  default:
    return Bound{};
  }
  if (!std::isfinite(r.magnitude) || !std::isfinite(r.error))
    return Bound{};
  roundTo(r, compute);
  roundTo(r, result);
  return r;
}

/// The bound of a reduction's result (`counts`: an upper bound on each operand's number of
/// elements). Max and min are exact in their result type P: the largest magnitude and error
/// of any element converted to P. A sum of n elements carries at most n element errors, and
/// each level of its tree rounds partial sums whose magnitudes add up to n times the
/// largest element, in the accumulator type (and in f64 for the oracle); the result is
/// rounded to P once (docs/reductions.md §3). Integer and bool results are exact.
Bound reductionBound(const Expr& expr, llvm::ArrayRef<Bound> in, llvm::ArrayRef<double> counts) {
  DataType result = expr.result()->dtype();
  for (const Bound& b : in)
    if (!b.safe)
      return Bound{};
  if (!isFloatingPoint(result)) {
    for (const Value* operand : expr.operands())
      if (isFloatingPoint(operand->dtype())) // any/all of floats: a truth value of an error
        return Bound{};
    auto [low, high] = integerRange(result == DataType::Bool ? DataType::UInt8 : result);
    return Bound{true, std::max(std::fabs(double(low)), double(high)), 0};
  }
  bool sum = expr.op() == OpKind::Sum;
  DataType leaf = sum ? reductionAccumulatorType(expr.op(), result) : result;
  Bound largestLeaf{true, 0, 0};
  double elements = 0, widest = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    Bound b = in[i];
    roundTo(b, leaf);
    if (!b.safe)
      return Bound{};
    largestLeaf.magnitude = std::max(largestLeaf.magnitude, b.magnitude);
    largestLeaf.error = std::max(largestLeaf.error, b.error);
    elements += counts[i];
    widest = std::max(widest, counts[i]);
  }
  if (!sum)
    return largestLeaf;
  double levels = std::ceil(std::log2(widest)) + std::ceil(std::log2(double(in.size()))) + 1;
  Bound r{true, elements * largestLeaf.magnitude, 0};
  r.error = elements * largestLeaf.error +
            levels * (roundoff(leaf) + roundoff(DataType::Double)) * r.magnitude +
            elements * denormal(leaf);
  if (!std::isfinite(r.magnitude) || !std::isfinite(r.error) || r.magnitude * 1.01 >= largest(leaf))
    return Bound{};
  roundTo(r, result);
  return r;
}

/// An upper bound on the elements of `value` at run time: its static extents, and for a
/// symbolic one the largest extent of any input argument.
double elementsBound(const Value& value, double largestExtent) {
  double count = 1;
  for (int64_t extent : value.extents())
    count *= extent == kSymbolicExtent ? largestExtent : double(extent);
  return count;
}

/// Compares a declared-precision tensor with its float64 oracle within `bound`.
std::optional<std::string> compare(const HostTensor& declared, const HostTensor& oracle,
                                   const Bound& bound, const std::string& what) {
  if (!bound.safe || !isFloatingPoint(declared.dtype()) || oracle.dtype() != DataType::Double)
    return std::nullopt;
  ++comparedValues;
  // Twice the derived bound, plus a little for rounding in the bound's own arithmetic.
  double tolerance = 2 * bound.error * (1 + 1e-6) + 1e-300;
  size_t size = byteSize(declared.dtype());
  auto* a = static_cast<const std::byte*>(declared.data());
  for (int64_t i = 0; i < declared.numel(); ++i) {
    double expected = oracle.as<double>()[i];
    if (!std::isfinite(expected))
      continue;
    double actual = elementAsDouble(a + size_t(i) * size, declared.dtype());
    if (!(std::fabs(actual - expected) <= tolerance))
      return fmt::format("float64 oracle: {} element {}: declared {} but float64 gives {} "
                         "(derived error bound {:g})",
                         what, i, actual, expected, tolerance);
  }
  return std::nullopt;
}

} // namespace

uint64_t oracleComparedValues() {
  return comparedValues.load();
}

std::optional<std::string> checkOracle(const FuzzCase& fuzzCase, const EvaluationResult& declared) {
  const Fusion& fusion = *fuzzCase.fusion;
  llvm::DenseMap<const Value*, Bound> bounds;
  for (size_t id = 0; id < fusion.numValues(); ++id)
    if (!fusion.value(unsigned(id))->definition())
      bounds[fusion.value(unsigned(id))] = leafBound(*fusion.value(unsigned(id)), fuzzCase);
  double largestExtent = 1;
  for (const auto& [name, data] : fuzzCase.inputs)
    for (int64_t extent : data.shape)
      largestExtent = std::max(largestExtent, double(extent));
  for (size_t id = 0; id < fusion.numExprs(); ++id) {
    const Expr& expr = *fusion.expr(unsigned(id));
    llvm::SmallVector<Bound, 3> in;
    llvm::SmallVector<double, 3> counts;
    for (const Value* operand : expr.operands()) {
      in.push_back(bounds.lookup(operand));
      counts.push_back(elementsBound(*operand, largestExtent));
    }
    bounds[expr.result()] =
        isReduction(expr.op()) ? reductionBound(expr, in, counts) : exprBound(expr, in);
  }
  std::vector<std::vector<std::byte>> storage;
  std::vector<Argument> arguments = bindArguments(fusion, fuzzCase.inputs, storage);
  EvaluationResult oracle = evaluate(fusion, arguments, EvaluatorOptions{true});
  for (size_t i = 0; i < fusion.outputs().size(); ++i)
    if (auto problem =
            compare(declared.outputs[i], oracle.outputs[i], bounds.lookup(fusion.outputs()[i]),
                    "output " + fusion.outputs()[i]->name()))
      return problem;
  for (size_t i = 0; i < fusion.aliases().size(); ++i) {
    const Alias& alias = fusion.aliases()[i];
    Bound b = bounds.lookup(alias.source);
    if (isFloatingPoint(alias.source->dtype()) && !isFloatingPoint(alias.destination->dtype()))
      continue;
    roundTo(b, alias.destination->dtype());
    if (auto problem = compare(declared.aliasFinalValues[i], oracle.aliasFinalValues[i], b,
                               "copy_ into " + alias.destination->name()))
      return problem;
  }
  return std::nullopt;
}

} // namespace widefuse::fuzz
