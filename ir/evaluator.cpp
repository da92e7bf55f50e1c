#include "ir/evaluator.h"

#include "ir/element_ops.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/half_float.h"
#include "ir/op_builder.h"
#include "ir/reduction.h"
#include "ir/reduction_tree.h"
#include "ir/runtime_shapes.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLExtras.h>

#include <cstring>
#include <numeric>

namespace widefuse {
namespace {

/// A value during evaluation: dense row-major elements of `dtype`.
struct Buffer {
  DataType dtype = DataType::Float;
  llvm::SmallVector<int64_t, 4> shape;
  std::vector<std::byte> bytes;

  int64_t numel() const { return numElements(shape); }
  template <typename T> T* as() { return reinterpret_cast<T*>(bytes.data()); }
  template <typename T> const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
};

Buffer makeBuffer(DataType dtype, llvm::ArrayRef<int64_t> shape) {
  Buffer buffer;
  buffer.dtype = dtype;
  buffer.shape.assign(shape.begin(), shape.end());
  buffer.bytes.resize(size_t(numElements(shape)) * byteSize(dtype));
  return buffer;
}

/// Calls fn.template operator()<T>() with the C++ type of a non-narrow dtype.
template <typename Fn> decltype(auto) visitNativeType(DataType type, Fn&& fn) {
  switch (type) {
  case DataType::Bool:
    return fn.template operator()<bool>();
  case DataType::Int8:
    return fn.template operator()<int8_t>();
  case DataType::Int16:
    return fn.template operator()<int16_t>();
  case DataType::Int32:
    return fn.template operator()<int32_t>();
  case DataType::Int64:
    return fn.template operator()<int64_t>();
  case DataType::UInt8:
    return fn.template operator()<uint8_t>();
  case DataType::UInt16:
    return fn.template operator()<uint16_t>();
  case DataType::UInt32:
    return fn.template operator()<uint32_t>();
  case DataType::Float:
    return fn.template operator()<float>();
  case DataType::Double:
    return fn.template operator()<double>();
  case DataType::ComplexFloat:
    return fn.template operator()<wf_complex_number<float>>();
  case DataType::ComplexDouble:
    return fn.template operator()<wf_complex_number<double>>();
  default: // half, bfloat16, fp8: storage types
    break;
  }
  WF_UNREACHABLE("{} has no native C++ type", shortName(type).str());
}

/// The bits of element i of a narrow-float buffer (2 bytes for f16/bf16, 1 for fp8).
uint16_t narrowBitsAt(const Buffer& buffer, size_t i) {
  return byteSize(buffer.dtype) == 1 ? buffer.as<uint8_t>()[i] : buffer.as<uint16_t>()[i];
}

/// Every element of `buffer` converted to C (half/bfloat16/fp8 decoded exactly to float
/// first).
template <typename C> std::vector<C> loadAll(const Buffer& buffer) {
  std::vector<C> values(size_t(buffer.numel()));
  if (isNarrowFloat(buffer.dtype)) {
    for (size_t i = 0; i < values.size(); ++i)
      values[i] =
          element::convertNumber<C>(narrowBitsToFloat(buffer.dtype, narrowBitsAt(buffer, i)));
    return values;
  }
  visitNativeType(buffer.dtype, [&]<typename S>() {
    const S* source = buffer.as<S>();
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = element::convertNumber<C>(source[i]);
  });
  return values;
}

/// Stores values into a new buffer of `dtype`, rounding once (to nearest even; fp8 from the
/// value converted to float, as torch does).
template <typename C>
Buffer storeAll(const std::vector<C>& values, DataType dtype, llvm::ArrayRef<int64_t> shape) {
  Buffer buffer = makeBuffer(dtype, shape);
  WF_ASSERT(values.size() == size_t(buffer.numel()));
  if (isNarrowFloat(dtype)) {
    for (size_t i = 0; i < values.size(); ++i) {
      using element::convertNumber;
      uint16_t bits =
          toNarrowBits(dtype, convertNumber<double>(values[i]), convertNumber<float>(values[i]));
      if (byteSize(dtype) == 1)
        buffer.as<uint8_t>()[i] = uint8_t(bits);
      else
        buffer.as<uint16_t>()[i] = bits;
    }
    return buffer;
  }
  visitNativeType(dtype, [&]<typename D>() {
    D* target = buffer.as<D>();
    for (size_t i = 0; i < values.size(); ++i)
      target[i] = element::convertNumber<D>(values[i]);
  });
  return buffer;
}

/// Value conversion with one rounding from the source value to `dtype`.
Buffer convertBuffer(const Buffer& source, DataType dtype) {
  if (source.dtype == dtype)
    return source;
  return visitNativeType(computeType(source.dtype), [&]<typename S>() {
    return storeAll(loadAll<S>(source), dtype, source.shape);
  });
}

/// Result type of an element op with `Arity` operands of type C.
template <typename C, unsigned Arity, typename Fn> struct ElementResult;
template <typename C, typename Fn> struct ElementResult<C, 1, Fn> {
  using type = std::invoke_result_t<Fn, C>;
};
template <typename C, typename Fn> struct ElementResult<C, 2, Fn> {
  using type = std::invoke_result_t<Fn, C, C>;
};
template <typename C, typename Fn> struct ElementResult<C, 3, Fn> {
  using type = std::invoke_result_t<Fn, C, C, C>;
};

/// Applies fn element by element; operands of one element (0-d tensors, scalars) broadcast.
template <unsigned Arity, typename C, typename Fn>
auto mapElements(int64_t count, llvm::ArrayRef<std::vector<C>> operands, Fn fn) {
  using Out = typename ElementResult<C, Arity, Fn>::type;
  std::vector<Out> out(static_cast<size_t>(count));
  auto at = [](const std::vector<C>& v, int64_t i) -> C { return v.size() == 1 ? v[0] : v[i]; };
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (Arity == 1)
      out[i] = fn(at(operands[0], i));
    else if constexpr (Arity == 2)
      out[i] = fn(at(operands[0], i), at(operands[1], i));
    else
      out[i] = fn(at(operands[0], i), at(operands[1], i), at(operands[2], i));
  }
  return out;
}

/// The ops acceptsComplex() names, on complex values C (ir/complex_math.h).
template <typename C>
Buffer evaluateComplex(OpKind op, llvm::ArrayRef<std::vector<C>> loaded, DataType resultType,
                       llvm::ArrayRef<int64_t> shape) {
  int64_t count = numElements(shape);
  auto unary = [&](auto fn) {
    return storeAll(mapElements<1, C>(count, loaded, fn), resultType, shape);
  };
  auto binary = [&](auto fn) {
    return storeAll(mapElements<2, C>(count, loaded, fn), resultType, shape);
  };
  switch (op) {
#define WF_COMPLEX_UNARY(Enum, function)                                                           \
  case OpKind::Enum:                                                                               \
    return unary([](C z) { return function(z); });
    WF_COMPLEX_UNARY(Neg, wf_complex_neg)
    WF_COMPLEX_UNARY(Abs, wf_complex_abs)
    WF_COMPLEX_UNARY(Reciprocal, wf_complex_reciprocal)
    WF_COMPLEX_UNARY(Sqrt, wf_complex_sqrt)
    WF_COMPLEX_UNARY(Rsqrt, wf_complex_rsqrt)
    WF_COMPLEX_UNARY(Exp, wf_complex_exp)
    WF_COMPLEX_UNARY(Log, wf_complex_log)
    WF_COMPLEX_UNARY(Log2, wf_complex_log2)
    WF_COMPLEX_UNARY(Log10, wf_complex_log10)
    WF_COMPLEX_UNARY(Sin, wf_complex_sin)
    WF_COMPLEX_UNARY(Cos, wf_complex_cos)
    WF_COMPLEX_UNARY(Tan, wf_complex_tan)
    WF_COMPLEX_UNARY(Sinh, wf_complex_sinh)
    WF_COMPLEX_UNARY(Cosh, wf_complex_cosh)
    WF_COMPLEX_UNARY(Tanh, wf_complex_tanh)
    WF_COMPLEX_UNARY(Sigmoid, wf_complex_sigmoid)
    WF_COMPLEX_UNARY(Asin, wf_complex_asin)
    WF_COMPLEX_UNARY(Acos, wf_complex_acos)
    WF_COMPLEX_UNARY(Atan, wf_complex_atan)
    WF_COMPLEX_UNARY(Asinh, wf_complex_asinh)
    WF_COMPLEX_UNARY(Acosh, wf_complex_acosh)
    WF_COMPLEX_UNARY(Atanh, wf_complex_atanh)
    WF_COMPLEX_UNARY(IsNan, wf_complex_isnan)
    WF_COMPLEX_UNARY(IsInf, wf_complex_isinf)
    WF_COMPLEX_UNARY(IsFinite, wf_complex_isfinite)
#undef WF_COMPLEX_UNARY
  case OpKind::IsReal:
    return unary([](C z) { return z.im == 0; });
  case OpKind::Real:
    return unary([](C z) { return z.re; });
  case OpKind::Imag:
    return unary([](C z) { return z.im; });
  case OpKind::Set:
    return unary([](C z) { return z; });
#define WF_COMPLEX_BINARY(Enum, function)                                                          \
  case OpKind::Enum:                                                                               \
    return binary([](C a, C b) { return function(a, b); });
    WF_COMPLEX_BINARY(Add, wf_complex_add)
    WF_COMPLEX_BINARY(Sub, wf_complex_sub)
    WF_COMPLEX_BINARY(Mul, wf_complex_mul)
    WF_COMPLEX_BINARY(Div, wf_complex_div)
    WF_COMPLEX_BINARY(TrueDiv, wf_complex_div)
    WF_COMPLEX_BINARY(Pow, wf_complex_pow)
    WF_COMPLEX_BINARY(Eq, wf_complex_eq)
#undef WF_COMPLEX_BINARY
  case OpKind::Ne:
    return binary([](C a, C b) { return !wf_complex_eq(a, b); });
  case OpKind::Where: // the condition, loaded as C, is 0 or 1
    return storeAll(mapElements<3, C>(
                        count, loaded,
                        [](C condition, C a, C b) { return wf_complex_truth(condition) ? a : b; }),
                    resultType, shape);
  default:
    break;
  }
  WF_UNREACHABLE("{} reached the evaluator with complex operands", opName(op).str());
}

/// The per-element ops of op_kinds.def, computed in C and stored as `resultType`.
template <typename C>
Buffer evaluatePointwise(const Expr& expr, llvm::ArrayRef<const Buffer*> operands,
                         DataType resultType, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<std::vector<C>, 3> loaded;
  for (const Buffer* operand : operands)
    loaded.push_back(loadAll<C>(*operand));
  if constexpr (element::kComplex<C>)
    return evaluateComplex<C>(expr.op(), loaded, resultType, shape);
  else {
    int64_t count = numElements(shape);
    switch (expr.op()) {
#define WF_OP(Enum, name, arity, rule)                                                             \
  case OpKind::Enum: {                                                                             \
    auto fn = [](auto... x) { return element::Enum(x...); };                                       \
    return storeAll(mapElements<arity, C>(count, loaded, fn), resultType, shape);                  \
  }
#include "ir/op_kinds.def"
    default: // reductions and ops with attributes: Evaluation::evaluateExpr
      break;
    }
    WF_UNREACHABLE("unknown op");
  }
}

/// Calls fn.template operator()<Op>() with the reduction tree's combine of `op`.
template <typename Fn> decltype(auto) visitTreeOp(OpKind op, Fn&& fn) {
  switch (op) {
  case OpKind::Sum:
    return fn.template operator()<wf_tree_sum>();
  case OpKind::Max:
    return fn.template operator()<wf_tree_max>();
  case OpKind::Min:
    return fn.template operator()<wf_tree_min>();
  case OpKind::Any:
    return fn.template operator()<wf_tree_any>();
  case OpKind::All:
    return fn.template operator()<wf_tree_all>();
  default:
    break;
  }
  WF_UNREACHABLE("{} is not a reduction", opName(op).str());
}

/// The reduction tree over `count` consecutive leaves; false in `here` when there are none.
template <typename Op, typename A> A treeOver(const A* leaves, int64_t count, bool& here) {
  wf_tree_counter<A, Op> counter;
  for (int64_t i = 0; i < count; ++i)
    counter.push(leaves[i]);
  return counter.finish(&here);
}

/// A result from its tree (reductions.md §3, step 6): zero elements give the op's empty
/// value, and a sum is added to +0.0 once, so it is never -0.0.
template <typename Op, typename A> A finishTree(OpKind op, A value, bool here) {
  if (!here) {
    WF_ASSERT(op != OpKind::Max && op != OpKind::Min, "an empty {} reached the evaluator",
              opName(op).str());
    return A(op == OpKind::All);
  }
  if (op == OpKind::Sum)
    return wf_tree_sum::combine(value, A(0));
  return value;
}

/// A reduction's results, by the tree every backend follows. Leaves are the elements in
/// row-major order converted to the accumulator (max/min: to their result type first).
template <typename Op, typename A>
std::vector<A> reduceLeaves(const Expr& expr, llvm::ArrayRef<std::vector<A>> leaves,
                            llvm::ArrayRef<int64_t> operandShape) {
  OpKind op = expr.op();
  const OpAttributes& attributes = expr.attributes();
  std::vector<A> results;
  bool here = false;
  if (attributes.reduction == ReductionScope::Rows) {
    RowCount count = reductionRows(attributes, operandShape);
    for (int64_t r = 0; r < count.rows; ++r) {
      A value = treeOver<Op>(leaves[0].data() + r * count.length, count.length, here);
      results.push_back(finishTree<Op>(op, value, here));
    }
    return results;
  }
  if (attributes.reduction == ReductionScope::Block) {
    // Each block's tree over its (at most B) elements: T(b·B, B) with the rest missing.
    int64_t block = attributes.block, count = int64_t(leaves[0].size());
    for (int64_t start = 0; start < count; start += block) {
      A value = treeOver<Op>(leaves[0].data() + start, std::min(block, count - start), here);
      results.push_back(finishTree<Op>(op, value, here));
    }
    return results;
  }
  // Global: each operand's tree, then the tree over them in operand order (one operand: the
  // tensor scope).
  wf_tree_counter<A, Op> operands;
  for (const std::vector<A>& operand : leaves) {
    A value = treeOver<Op>(operand.data(), int64_t(operand.size()), here);
    operands.push(value, here);
  }
  A value = operands.finish(&here);
  results.push_back(finishTree<Op>(op, value, here));
  return results;
}

/// Everything the evaluation of one fusion needs.
class Evaluation {
public:
  Evaluation(const Fusion& fusion, const EvaluatorOptions& options)
      : fusion_(fusion), options_(options) {}

  EvaluationResult run(llvm::ArrayRef<Argument> arguments);

private:
  DataType storageType(DataType declared) const {
    return options_.oracle && isFloatingPoint(declared) ? DataType::Double : declared;
  }
  Buffer& bufferOf(const Value* value) { return buffers_[value]; }
  void bindInputs(llvm::ArrayRef<Argument> arguments);
  Buffer constantBuffer(const Value& value) const;
  Buffer evaluateExpr(const Expr& expr);
  Buffer broadcast(const Expr& expr, const Buffer& operand);
  Buffer expandBlocks(const Expr& expr, const Buffer& operand) const;
  Buffer reduce(const Expr& expr, llvm::ArrayRef<const Buffer*> operands) const;
  Buffer bitcast(const Expr& expr, const Buffer& operand) const;
  Buffer codebookOp(const Expr& expr, const Buffer& operand) const;
  void writeBack(const Alias& alias, const Buffer& value, const TensorRef& target) const;

  const Fusion& fusion_;
  const EvaluatorOptions& options_;
  llvm::DenseMap<const Value*, Buffer> buffers_;
  RuntimeShapes shapes_;
};

/// Copies a strided tensor into a dense buffer.
Buffer gather(const TensorRef& ref) {
  Buffer buffer = makeBuffer(ref.dtype, ref.shape);
  size_t elementSize = byteSize(ref.dtype);
  int64_t count = ref.numel();
  llvm::SmallVector<int64_t, 4> index(ref.shape.size(), 0);
  const auto* source = static_cast<const std::byte*>(ref.data);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * ref.strides[d];
    std::memcpy(buffer.bytes.data() + size_t(i) * elementSize,
                source + size_t(offset) * elementSize, elementSize);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < ref.shape[d])
        break;
      index[d] = 0;
    }
  }
  return buffer;
}

/// Copies a dense buffer into a strided tensor of the same dtype and shape.
void scatter(const Buffer& buffer, const TensorRef& ref) {
  size_t elementSize = byteSize(ref.dtype);
  int64_t count = ref.numel();
  llvm::SmallVector<int64_t, 4> index(ref.shape.size(), 0);
  auto* target = static_cast<std::byte*>(ref.data);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * ref.strides[d];
    std::memcpy(target + size_t(offset) * elementSize,
                buffer.bytes.data() + size_t(i) * elementSize, elementSize);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < ref.shape[d])
        break;
      index[d] = 0;
    }
  }
}

HostTensor toHostTensor(const Buffer& buffer) {
  HostTensor tensor(buffer.dtype, buffer.shape);
  if (!buffer.bytes.empty())
    std::memcpy(tensor.data(), buffer.bytes.data(), buffer.bytes.size());
  return tensor;
}

Buffer scalarBuffer(const ConstantValue& constant, DataType dtype) {
  return std::visit(
      [&](auto value) { return storeAll(std::vector<decltype(value)>{value}, dtype, {}); },
      constant);
}

} // namespace

Buffer Evaluation::constantBuffer(const Value& value) const {
  return scalarBuffer(*value.constant(), storageType(value.dtype()));
}

void Evaluation::bindInputs(llvm::ArrayRef<Argument> arguments) {
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Value* input = fusion_.inputs()[i];
    if (const TensorRef* tensor = std::get_if<TensorRef>(&arguments[i]))
      buffers_[input] = convertBuffer(gather(*tensor), storageType(input->dtype()));
    else
      buffers_[input] =
          scalarBuffer(std::get<ScalarArgument>(arguments[i]), storageType(input->dtype()));
  }
  for (size_t id = 0; id < fusion_.numValues(); ++id) {
    const Value* value = fusion_.value(unsigned(id));
    if (value->isConstant())
      buffers_[value] = constantBuffer(*value);
  }
}

Buffer Evaluation::broadcast(const Expr& expr, const Buffer& operand) {
  // The shape and its checks come from inferRuntimeShapes; here only the data moves.
  const auto& attributes = expr.attributes();
  const auto& shape = shapes_.of(expr.result());
  llvm::SmallVector<int64_t, 4> operandStride(shape.size(), 0);
  auto dense = contiguousStrides(operand.shape);
  for (size_t i = 0; i < attributes.broadcastDims.size(); ++i)
    operandStride[attributes.broadcastDims[i]] = operand.shape[i] == 1 ? 0 : dense[i];
  Buffer result = makeBuffer(operand.dtype, shape);
  size_t elementSize = byteSize(operand.dtype);
  llvm::SmallVector<int64_t, 4> index(shape.size(), 0);
  for (int64_t i = 0, count = result.numel(); i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      offset += index[d] * operandStride[d];
    std::memcpy(result.bytes.data() + size_t(i) * elementSize,
                operand.bytes.data() + size_t(offset) * elementSize, elementSize);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return result;
}

Buffer Evaluation::expandBlocks(const Expr& expr, const Buffer& operand) const {
  Buffer result = makeBuffer(operand.dtype, shapes_.of(expr.result()));
  size_t elementSize = byteSize(operand.dtype);
  int64_t block = expr.attributes().block;
  for (int64_t i = 0, count = result.numel(); i < count; ++i)
    std::memcpy(result.bytes.data() + size_t(i) * elementSize,
                operand.bytes.data() + size_t(i / block) * elementSize, elementSize);
  return result;
}

Buffer Evaluation::reduce(const Expr& expr, llvm::ArrayRef<const Buffer*> operands) const {
  OpKind op = expr.op();
  DataType resultType = storageType(expr.result()->dtype());
  DataType accumulator = reductionAccumulatorType(op, expr.result()->dtype());
  if (options_.oracle && isFloatingPoint(accumulator))
    accumulator = DataType::Double;
  // max/min leaves are the elements in their result type (exact); any/all leaves are truth
  // values, held as bytes; sums convert each element to the accumulator directly.
  bool exactLeaves = op == OpKind::Max || op == OpKind::Min;
  bool truth = accumulator == DataType::Bool;
  DataType leafType = truth ? DataType::UInt8 : computeType(accumulator);
  return visitNativeType(leafType, [&]<typename A>() -> Buffer {
    if constexpr (element::kComplex<A> || std::is_same_v<A, bool>) {
      WF_UNREACHABLE("a reduction accumulates in {}", shortName(leafType).str());
    } else {
      return visitTreeOp(op, [&]<typename Op>() {
        llvm::SmallVector<std::vector<A>, 4> leaves;
        for (const Buffer* operand : operands)
          leaves.push_back(loadAll<A>(exactLeaves ? convertBuffer(*operand, resultType)
                                      : truth     ? convertBuffer(*operand, DataType::Bool)
                                                  : *operand));
        std::vector<A> results = reduceLeaves<Op, A>(expr, leaves, operands[0]->shape);
        return storeAll(results, resultType, shapes_.of(expr.result()));
      });
    }
  });
}

Buffer Evaluation::bitcast(const Expr& expr, const Buffer& operand) const {
  // Bits exist only in the declared types, also in oracle mode.
  Buffer bits = convertBuffer(operand, expr.operand(0)->dtype());
  bits.dtype = expr.attributes().targetType;
  return convertBuffer(bits, storageType(bits.dtype));
}

Buffer Evaluation::codebookOp(const Expr& expr, const Buffer& operand) const {
  // Codes and tables exist only in their declared types, also in oracle mode.
  Codebook codebook = expr.attributes().codebook;
  if (expr.op() == OpKind::CodeValue)
    return storeAll(codeValues(codebook, loadAll<int64_t>(convertBuffer(operand, DataType::Int64))),
                    DataType::Float, shapes_.of(expr.result()));
  return storeAll(nearestCodes(codebook, loadAll<float>(convertBuffer(operand, DataType::Float))),
                  DataType::UInt8, shapes_.of(expr.result()));
}

Buffer Evaluation::evaluateExpr(const Expr& expr) {
  llvm::SmallVector<const Buffer*, 3> operands;
  for (const Value* operand : expr.operands())
    operands.push_back(&bufferOf(operand));
  DataType resultType = storageType(expr.result()->dtype());
  if (isReduction(expr.op()))
    return reduce(expr, operands);
  switch (expr.op()) {
  case OpKind::Cast:
    return convertBuffer(*operands[0], resultType);
  case OpKind::Bitcast:
    return bitcast(expr, *operands[0]);
  case OpKind::BroadcastInDim:
    return broadcast(expr, *operands[0]);
  case OpKind::ExpandBlocks:
    return expandBlocks(expr, *operands[0]);
  case OpKind::CodeValue:
  case OpKind::NearestCode:
    return codebookOp(expr, *operands[0]);
  case OpKind::Set:
    return *operands[0];
  case OpKind::Size:
    return scalarBuffer(ConstantValue(shapes_.extentOf(expr.result())), resultType);
  case OpKind::ElementIndex: { // each element's row-major index in its tensor
    std::vector<int64_t> indices(size_t(numElements(shapes_.of(expr.result()))));
    std::iota(indices.begin(), indices.end(), int64_t(0));
    return storeAll(indices, DataType::Int64, shapes_.of(expr.result()));
  }
  default:
    break;
  }
  const auto& shape = shapes_.of(expr.result());
  DataType compute = exprComputeType(expr);
  if (options_.oracle && isFloatingPoint(compute))
    compute = DataType::Double;
  return visitNativeType(compute, [&]<typename C>() {
    return evaluatePointwise<C>(expr, operands, resultType, shape);
  });
}

EvaluationResult Evaluation::run(llvm::ArrayRef<Argument> arguments) {
  checkArguments(fusion_, arguments);
  // Every run-time shape check (symbolic extents, broadcasts, copy_ shapes) before any work.
  shapes_ = inferRuntimeShapes(fusion_, arguments);
  bindInputs(arguments);
  for (size_t id = 0; id < fusion_.numExprs(); ++id) {
    const Expr& expr = *fusion_.expr(unsigned(id));
    buffers_[expr.result()] = evaluateExpr(expr);
  }
  EvaluationResult result;
  for (const Value* output : fusion_.outputs())
    result.outputs.push_back(toHostTensor(bufferOf(output)));
  // Shapes were checked before any work, so no write can be followed by a failure.
  llvm::SmallVector<Buffer, 8> finalValues;
  for (const Alias& alias : fusion_.aliases()) {
    Buffer value = convertBuffer(bufferOf(alias.source), storageType(alias.destination->dtype()));
    value.shape = bufferOf(alias.destination).shape;
    finalValues.push_back(std::move(value));
  }
  llvm::DenseMap<const Value*, size_t> argumentOf;
  for (size_t i = 0; i < fusion_.inputs().size(); ++i)
    argumentOf[fusion_.inputs()[i]] = i;
  for (size_t i = 0; i < finalValues.size(); ++i) {
    const Value* destination = fusion_.aliases()[i].destination;
    if (!options_.oracle)
      scatter(finalValues[i], std::get<TensorRef>(arguments[argumentOf[destination]]));
    result.aliasFinalValues.push_back(toHostTensor(finalValues[i]));
  }
  return result;
}

EvaluationResult evaluate(const Fusion& fusion, llvm::ArrayRef<Argument> arguments,
                          const EvaluatorOptions& options) {
  return Evaluation(fusion, options).run(arguments);
}

} // namespace widefuse
