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
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <memory>

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
  /// An untyped literal that promotes like a Python number.
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
};

/// Op functions: one per IR op, named as in the text form. Numbers become weak literals;
/// at least one argument must be a Val, which decides the FusionDefinition.
#define WF_DECLARE_UNARY(function) Val function(const Operand& x);
#define WF_DECLARE_BINARY(function) Val function(const Operand& a, const Operand& b);
#define WF_DECLARE_TERNARY(function)                                                               \
  Val function(const Operand& a, const Operand& b, const Operand& c);
WF_DECLARE_UNARY(neg)
WF_DECLARE_UNARY(abs)
WF_DECLARE_UNARY(sqrt)
WF_DECLARE_UNARY(rsqrt)
WF_DECLARE_UNARY(reciprocal)
WF_DECLARE_UNARY(exp)
WF_DECLARE_UNARY(exp2)
WF_DECLARE_UNARY(log)
WF_DECLARE_UNARY(log2)
WF_DECLARE_UNARY(log1p)
WF_DECLARE_UNARY(expm1)
WF_DECLARE_UNARY(sin)
WF_DECLARE_UNARY(cos)
WF_DECLARE_UNARY(tanh)
WF_DECLARE_UNARY(sigmoid)
WF_DECLARE_UNARY(floor)
WF_DECLARE_UNARY(ceil)
WF_DECLARE_UNARY(round)
WF_DECLARE_UNARY(trunc)
WF_DECLARE_UNARY(sign)
WF_DECLARE_UNARY(isnan)
WF_DECLARE_UNARY(isinf)
WF_DECLARE_UNARY(isfinite)
WF_DECLARE_UNARY(logical_not)
WF_DECLARE_UNARY(bitwise_not)
WF_DECLARE_UNARY(set)
WF_DECLARE_BINARY(add)
WF_DECLARE_BINARY(sub)
WF_DECLARE_BINARY(mul)
WF_DECLARE_BINARY(div)
WF_DECLARE_BINARY(pow)
WF_DECLARE_BINARY(fmod)
WF_DECLARE_BINARY(maximum)
WF_DECLARE_BINARY(minimum)
WF_DECLARE_BINARY(atan2)
WF_DECLARE_BINARY(eq)
WF_DECLARE_BINARY(ne)
WF_DECLARE_BINARY(lt)
WF_DECLARE_BINARY(le)
WF_DECLARE_BINARY(gt)
WF_DECLARE_BINARY(ge)
WF_DECLARE_BINARY(logical_and)
WF_DECLARE_BINARY(logical_or)
WF_DECLARE_BINARY(bitwise_and)
WF_DECLARE_BINARY(bitwise_or)
WF_DECLARE_BINARY(bitwise_xor)
WF_DECLARE_BINARY(shift_left)
WF_DECLARE_BINARY(shift_right)
WF_DECLARE_TERNARY(where)
WF_DECLARE_TERNARY(lerp)
WF_DECLARE_TERNARY(fma)
WF_DECLARE_TERNARY(clamp)
#undef WF_DECLARE_UNARY
#undef WF_DECLARE_BINARY
#undef WF_DECLARE_TERNARY

/// Converts the value to `dtype` (rounding to nearest even for floating targets).
Val cast(const Operand& x, DataType dtype);
/// Reinterprets the bits as `dtype`, which must have the same width.
Val bitcast(const Operand& x, DataType dtype);
/// Broadcasts `x` to `shape`; operand dimension i becomes output dimension dims[i].
Val broadcast_in_dim(const Operand& x, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> dims);

/// Arithmetic operators on values and numbers, as in Python.
Val operator+(const Operand& a, const Operand& b);
Val operator-(const Operand& a, const Operand& b);
Val operator*(const Operand& a, const Operand& b);
Val operator/(const Operand& a, const Operand& b);
Val operator-(const Val& x);

} // namespace widefuse
