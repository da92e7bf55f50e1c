#pragma once
/// The C++ API for building fusions, modelled on nvFuser's FusionDefinition:
///
///   FusionDefinition fd("adam_step");
///   Val p = fd.defineTensor({1024, 1024}, DataType::Float, "p");
///   Val lr = fd.defineScalar(DataType::Double, "lr");
///   Val p1 = p - lr * m1 / denom;
///   fd.copy_(p1, p);
///   std::unique_ptr<Fusion> fusion = fd.finalize();

#include "ir/fusion.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <memory>
#include <type_traits>

namespace widefuse {

class FusionDefinition;

/// A handle to a value of a FusionDefinition. Cheap to copy; valid until finalize().
class Val {
public:
  Val() = default;
  Val(FusionDefinition* owner, Value* value) : owner_(owner), value_(value) {}

  FusionDefinition* owner() const { return owner_; }
  Value* value() const { return value_; }
  DataType dtype() const;
  unsigned rank() const;
  const std::string& name() const;
  explicit operator bool() const { return value_ != nullptr; }

private:
  FusionDefinition* owner_ = nullptr;
  Value* value_ = nullptr;
};

/// An op argument: a value handle or a Python-style number literal (weak scalar).
class Operand {
public:
  Operand(Val val) : val_(val) {}
  Operand(double number) : literal_(number) {}
  Operand(int number) : literal_(static_cast<int64_t>(number)) {}
  Operand(int64_t number) : literal_(number) {}
  Operand(bool number) : literal_(number) {}

  const Val& val() const { return val_; }
  const std::optional<ConstantValue>& literal() const { return literal_; }

private:
  Val val_;
  std::optional<ConstantValue> literal_;
};

/// Builds one Fusion. Every op is checked when it is added; finalize() verifies the whole
/// fusion and hands it over.
class FusionDefinition {
public:
  explicit FusionDefinition(std::string name = "fusion");

  /// A tensor input; -1 in `shape` is a symbolic extent. An empty name picks `t0`, `t1`, ...
  Val defineTensor(llvm::ArrayRef<int64_t> shape, DataType dtype, llvm::StringRef name = {},
                   TensorLayout layout = {});
  /// A runtime scalar input (its value is given at each run).
  Val defineScalar(DataType dtype, llvm::StringRef name = {});
  /// A constant of a given type (`1.0:f32` in the text form).
  Val constant(ConstantValue value, DataType dtype);
  /// An untyped literal that promotes like a Python number. Equal literals (same kind and
  /// bits) are one value: a traced optimizer writes a dozen numbers per parameter, and a
  /// weak constant prints inline and is shared by every component that reads it.
  Val literal(ConstantValue value);
  /// Turns an Operand into a value of this definition.
  Val materialize(const Operand& operand);
  /// Applies `op` to the operands after checking them (the generic form of the op functions).
  /// An empty `name` picks a fresh one.
  Val apply(OpKind op, llvm::ArrayRef<Operand> operands, OpAttributes attributes = {},
            llvm::StringRef name = {});

  /// In-place update: input `destination` receives `source` when the fusion ends; every read
  /// of `destination` in the fusion sees its entry value.
  void copy_(const Operand& source, Val destination);
  /// Marks a value as a plain output.
  void addOutput(Val value);
  /// Verifies the fusion and returns it; the definition cannot be used afterwards.
  std::unique_ptr<Fusion> finalize();

  /// The fusion under construction (for inspection before finalize()).
  const Fusion& fusion() const;

private:
  Fusion& live();
  Value* unwrap(const Val& val, llvm::StringRef context);

  std::unique_ptr<Fusion> fusion_;
  /// literal()'s values by (variant index, bits).
  llvm::DenseMap<std::pair<unsigned, uint64_t>, Value*> literals_;
};

/// Op functions: one per IR op, named as in the text form. Numbers become weak literals;
/// at least one argument must be a Val, which decides the FusionDefinition.
#define WF_DECLARE_1(name) Val name(const Operand& x);
#define WF_DECLARE_2(name) Val name(const Operand& a, const Operand& b);
#define WF_DECLARE_3(name) Val name(const Operand& a, const Operand& b, const Operand& c);
#define WF_OP(Enum, name, arity, rule) WF_DECLARE_##arity(name)
#define WF_ATTRIBUTE_OP(Enum, name, arity, rule)
#include "ir/op_kinds.def"
#undef WF_DECLARE_1
#undef WF_DECLARE_2
#undef WF_DECLARE_3

/// Converts the value to `dtype` (rounding to nearest even for floating targets).
Val cast(const Operand& x, DataType dtype);
/// Reinterprets the bits as `dtype`, which must have the same width.
Val bitcast(const Operand& x, DataType dtype);
/// Broadcasts `x` to `shape`; operand dimension i becomes output dimension dims[i].
Val broadcast_in_dim(const Operand& x, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> dims);
/// An output extent of broadcast_in_dim: a number (-1: the operand's extent) or an integer
/// scalar (a size value, a runtime Int input, integer arithmetic of those:
/// ir/extent_expression.h).
struct ShapeEntry {
  ShapeEntry(int64_t extent) : extent(extent) {}
  ShapeEntry(int extent) : extent(extent) {}
  ShapeEntry(Val size) : size(size) {}
  int64_t extent = kSymbolicExtent;
  Val size;
};
/// broadcast_in_dim whose output extents may be integer scalars: that dimension takes the
/// scalar's run-time value (nvFuser's broadcast_in_dim(x, t.shape(), dims), or a vector of
/// runtime scalars). A name of its
/// own: braced lists of ints would make an overload of broadcast_in_dim ambiguous.
Val broadcast_in_dim_to_extents(const Operand& x, llvm::ArrayRef<ShapeEntry> shape,
                                llvm::ArrayRef<int64_t> dims);
/// The extent of dimension `dim` of tensor `x`, an i64 scalar read when the fusion runs
/// (nvFuser's size / t.size(dim)).
Val size(const Val& x, int64_t dim);

/// The block of a block-scope reduction or of expand_blocks: B consecutive elements in
/// logical order, a power of two up to kMaxBlockElements.
struct Blocks {
  int64_t elements = 0;
};

/// A tensor of `shape` whose block b of `blocks` elements (logical order) reads element b of
/// the rank-1 `x`: x holds ceil(n / B) elements, one per block (a block reduction's result,
/// a quantized tensor's scales).
Val expand_blocks(const Val& x, llvm::ArrayRef<ShapeEntry> shape, Blocks blocks);

/// The f32 entry of `codebook` at each integer code of `code` (its low log2(size) bits): a
/// quantized state's normalised value.
Val code_value(const Val& code, Codebook codebook);
/// Each element's row-major index in `x` (an Int64 tensor of x's shape; 0 for a 0-d `x`).
Val element_index(const Val& x);

/// The u8 code of each f32 element of `x` in `codebook`, rounded to nearest as torchao rounds
/// (ir/codebook.h nearestCode): a quantized state's new code.
Val nearest_code(const Val& x, Codebook codebook);

/// `op(x)` over each block of `blocks` elements: the block-scope reductions' one definition.
Val reduceBlocks(OpKind op, const Val& x, Blocks blocks);

/// Reductions (docs/reductions.md), one set per op of sum max min any all:
/// `sum(x)` combines every element of `x` into a 0-d result; `sum({a, b, c})` every element
/// of all of them into one (the global scope: the gradient norm over every parameter);
/// `sum(x, {d})` each row of dimension `d`, the innermost (or one followed by static 1s).
/// `widefuse::max` and `min` leave std::max and std::min alone.
/// `sum(x, Blocks{256})` each block of 256 consecutive elements of `x` in logical order: a
/// rank-1 result of ceil(n / 256) elements, which the kernel computing it can read
/// (through expand_blocks).
#define WF_DECLARE_REDUCTION(name, Enum)                                                           \
  Val name(const Val& x);                                                                          \
  Val name(llvm::ArrayRef<Val> xs);                                                                \
  Val name(const Val& x, llvm::ArrayRef<int64_t> dims);                                            \
  /* A template, so that a braced list `{1}` stays a dims list, never a Blocks. */                 \
  template <typename B>                                                                            \
  requires std::is_same_v<B, Blocks> Val name(const Val& x, B blocks) {                            \
    return reduceBlocks(OpKind::Enum, x, blocks);                                                  \
  }
WF_DECLARE_REDUCTION(sum, Sum)
WF_DECLARE_REDUCTION(max, Max)
WF_DECLARE_REDUCTION(min, Min)
WF_DECLARE_REDUCTION(any, Any)
WF_DECLARE_REDUCTION(all, All)
#undef WF_DECLARE_REDUCTION

/// nvFuser's mod: C's `%`, the remainder with the sign of the dividend. That is fmod for
/// integers and floating point alike, so it is a name for fmod, not an op of its own.
Val mod(const Operand& a, const Operand& b);

/// Arithmetic operators on values and numbers. `/` is div, as in nvFuser's C++: true division
/// of floating point, truncating division of integers (truediv is Python's `/`).
Val operator+(const Operand& a, const Operand& b);
Val operator-(const Operand& a, const Operand& b);
Val operator*(const Operand& a, const Operand& b);
Val operator/(const Operand& a, const Operand& b);
Val operator-(const Val& x);

} // namespace widefuse
