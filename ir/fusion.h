#pragma once
/// The Fusion: a verified SSA graph of pointwise expressions with its inputs, outputs and the
/// alias table of in-place updates (copy_).

#include "ir/expr.h"
#include "ir/value.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/StringSet.h>
#include <llvm/Support/Allocator.h>

#include <memory>
#include <string>
#include <vector>

namespace widefuse {

/// An in-place update `copy_(source, destination)`: when the fusion ends, input
/// `destination` receives `source` (cast to the destination's type). Reads of `destination`
/// inside the fusion see its value at entry.
struct Alias {
  Value* source;
  Value* destination;
};

/// Kind, type and shape of a value about to be created.
struct ValueType {
  ValueKind kind = ValueKind::Tensor;
  DataType dtype = DataType::Float;
  llvm::SmallVector<int64_t, 4> extents;
  bool weak = false;
};

/// Owns the values and expressions of one fusion. Expressions are kept in a topological order
/// (operands are defined before use). Built by FusionDefinition or the text parser, which
/// check every op as it is added.
class Fusion {
public:
  explicit Fusion(std::string name = "fusion");
  Fusion(const Fusion&) = delete;
  Fusion& operator=(const Fusion&) = delete;

  /// The fusion's name (an identifier), used in the text form and in kernel names.
  const std::string& name() const { return name_; }

  /// Adds a tensor input. Throws Error for an invalid or duplicate name or a bad layout.
  Value* addTensorInput(llvm::StringRef name, DataType dtype, llvm::ArrayRef<int64_t> extents,
                        TensorLayout layout = {});
  /// Adds a runtime scalar input.
  Value* addScalarInput(llvm::StringRef name, DataType dtype);
  /// Adds a constant scalar; `weak` for an untyped Python-number literal.
  Value* addConstant(ConstantValue constant, DataType dtype, bool weak);
  /// Appends `result = op(operands)` with an already checked result type (see buildOp).
  Value* appendExpr(OpKind op, llvm::ArrayRef<Value*> operands, OpAttributes attributes,
                    const ValueType& resultType, llvm::StringRef name = {});
  /// Records copy_(source, destination). Throws Error naming the values when the destination
  /// is not an input tensor, is already written, or has another shape than the source.
  void addAlias(Value* source, Value* destination);
  /// Marks a value as a plain (non-aliased) output. Throws Error for a scalar or a repeat.
  void addOutput(Value* value);

  /// Inputs in declaration order (tensors and runtime scalars).
  llvm::ArrayRef<Value*> inputs() const { return inputs_; }
  /// Plain outputs in declaration order.
  llvm::ArrayRef<Value*> outputs() const { return outputs_; }
  /// In-place updates in declaration order.
  llvm::ArrayRef<Alias> aliases() const { return aliases_; }
  /// Number of values (inputs, constants and expression results).
  size_t numValues() const { return values_.size(); }
  /// Value by id.
  Value* value(unsigned id) const { return values_[id]; }
  /// Expressions in topological order.
  size_t numExprs() const { return exprs_.size(); }
  Expr* expr(unsigned id) const { return exprs_[id]; }
  /// All expressions, in order.
  llvm::ArrayRef<Expr*> exprList() const { return exprs_; }
  /// The value with this name, or null.
  Value* lookup(llvm::StringRef name) const;
  /// The alias writing `destination`, or null.
  const Alias* aliasOf(const Value* destination) const;
  /// True when the value belongs to this fusion.
  bool owns(const Value* value) const;

  /// Returns a fresh name `base`, `base1`, `base2`, ... not used in this fusion nor reserved.
  std::string uniqueName(llvm::StringRef base);
  /// Keeps generated names away from names that will be declared later (the parser's names).
  void reserveName(llvm::StringRef name) { reserved_.insert(name); }

private:
  /// Stores `value` under its name; Error when the name is taken.
  Value* addValue(Value value);
  /// Error unless `name` may name a value (isValidName).
  void checkName(llvm::StringRef name) const;
  /// checkName, and Error when the name is taken.
  void claimName(llvm::StringRef name) const;

  std::string name_;
  // Values and expressions live in arenas: a fusion of many parameters has millions of
  // both, and a heap allocation apiece was a tenth of building one.
  llvm::SpecificBumpPtrAllocator<Value> valueArena_;
  llvm::SpecificBumpPtrAllocator<Expr> exprArena_;
  std::vector<Value*> values_;
  std::vector<Expr*> exprs_;
  llvm::SmallVector<Value*, 16> inputs_;
  llvm::SmallVector<Value*, 4> outputs_;
  llvm::SmallVector<Alias, 8> aliases_;
  llvm::StringMap<Value*> byName_;
  llvm::StringSet<> reserved_;
  llvm::StringMap<unsigned> nextSuffix_;
  llvm::DenseMap<const Value*, unsigned> aliasOfDestination_;
  llvm::DenseSet<const Value*> isOutput_; // outputs_ as a set: adding N outputs stays linear
};

/// True for a C-style identifier: a letter or '_', then letters, digits or '_'.
bool isIdentifier(llvm::StringRef name);

/// True when `name` may name a value: an identifier that is not a keyword or a
/// data type name.
bool isValidName(llvm::StringRef name);

/// Formats a value's type: `f32[1024, ?]`, `f32[]`, `f64` (scalar).
std::string formatType(const Value& value);

/// Describes a shape for messages: `[1024, ?]`.
std::string formatExtents(llvm::ArrayRef<int64_t> extents);

/// True for a value defined by size(tensor, dim): a scalar known once the shapes are bound,
/// which kernels receive like a scalar input.
bool isExtentValue(const Value& value);

} // namespace widefuse
