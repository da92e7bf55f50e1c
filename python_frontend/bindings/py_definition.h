#pragma once
/// The builder behind the Python FusionDefinition (`_widefuse._Definition`): the C++
/// FusionDefinition until the `with` block ends, then the finished fusion. Names values as
/// repr(fd) will print them (T<n>, S<n>).

#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "python_frontend/bindings/fusion_handle.h"

#include <llvm/ADT/ArrayRef.h>
#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widefuse::python {

/// A Python number or a value handle (`_widefuse._Value`) as an op operand; Error for
/// anything else, and for an int past 64 bits.
Operand operandOf(nanobind::handle object);

/// A Python number as a constant; Error for anything else.
ConstantValue constantOf(nanobind::handle object);

/// A reduction whose dims do not give a scope (docs/reductions.md §2): raised in Python as
/// _widefuse.ReductionScopeError, which the frontend turns into UnsupportedOperationError.
class ReductionScopeError : public Error {
public:
  using Error::Error;
};

/// True when the fusion holds a reduction.
bool hasReduction(const Fusion& fusion);

/// The C++ FusionDefinition until finalize(), then the finished fusion.
class PyDefinition {
public:
  /// A builder named `name` whose traced values are instances of `tensorClass` and
  /// `scalarClass` (Python classes that extend _widefuse.TracedValue: widefuse.values.Tensor
  /// and Scalar).
  PyDefinition(const std::string& name, nanobind::handle tensorClass, nanobind::handle scalarClass);

  /// A tensor input of a declared layout (empty vectors: dense row-major).
  Val defineTensor(const std::vector<int64_t>& shape, const std::string& dtype,
                   const std::vector<int64_t>& strideOrder, const std::vector<bool>& contiguity);
  /// `count` tensor inputs of one declaration, in one call: the tracer's inputs (an
  /// optimizer's parameters and state share a few layouts). Like applyPointwise's, the
  /// handles do not keep the definition alive: the Python FusionDefinition holds both.
  std::vector<Val> defineTensors(unsigned count, const std::vector<int64_t>& shape,
                                 const std::string& dtype, const std::vector<int64_t>& strideOrder,
                                 const std::vector<bool>& contiguity);
  /// A runtime scalar input.
  Val defineScalar(const std::string& dtype);
  /// The name V<k> of nvFuser's define_vector(n), which repr(fd) prints but the IR does not
  /// hold (its entries are Int scalar inputs, defined next): names after it count it.
  std::string nameVector();
  /// A typed constant.
  Val constant(nanobind::handle value, const std::string& dtype);
  /// Any op by name, with the attributes of cast/bitcast (`dtype`), broadcast_in_dim
  /// (`shape`: ints and size handles, `broadcastDims`), size (`dim`) and expand_blocks
  /// (`shape`, `block`), code_value and nearest_code (`codebook`, a name).
  Val apply(const std::string& opName, const std::vector<nanobind::object>& operands,
            const std::optional<std::string>& dtype, const std::vector<nanobind::object>& shape,
            const std::vector<int64_t>& broadcastDims, int64_t dim, int64_t block,
            const std::optional<std::string>& codebook);
  /// Pointwise op `kind` (an index into op_names()) of `operands`, a tuple of value handles
  /// and Python numbers: apply() without attributes and without converting its arguments.
  /// Unlike apply()'s, the handle it returns does not keep the definition alive: the Python
  /// FusionDefinition holds both.
  Val applyPointwise(unsigned kind, nanobind::tuple operands);
  /// The same for operands already converted: the tracer's one call per recorded op
  /// (traced_values.h).
  Val applyPointwise(OpKind op, llvm::ArrayRef<Operand> operands);
  /// Reduction `opName` (sum max min any all) of `operands`, tensor handles: one operand and
  /// no dims is the tensor scope, several the global scope; `dims` as in the C++ `sum(x,
  /// {d})` (reductionAttributes); `block` the block scope (blockReductionAttributes).
  /// ReductionScopeError when the dims or the block give no scope.
  Val reduce(const std::string& opName, const std::vector<Val>& operands,
             const std::optional<std::vector<int64_t>>& dims, std::optional<int64_t> block);
  /// copy_(source, destination): an in-place update.
  void copy(nanobind::handle source, const Val& destination);
  /// A plain output.
  void addOutput(const Val& value);
  /// Verifies the fusion and segments it once, so that what no kernel can run (outputs of
  /// two shapes in one subgraph, say) is refused when the `with` block ends, not at the first
  /// execute().
  FusionHandle finalize();
  /// The fusion so far, for printing before finalize().
  const Fusion& current() const;
  /// False once finalize() ran: the values' owner is gone, their Value pointers stay valid.
  bool isLive() const { return builder_ != nullptr; }

  /// The traced value (of the class for its kind) of `handle`, a `_Value` of this builder, in
  /// Python FusionDefinition `definition`, computed from `depends` (a frozenset; None or
  /// null: nothing specializable). `self` is this builder's Python object, which the value
  /// keeps alive (and with it the fusion its handle points into).
  nanobind::object traced(nanobind::handle self, nanobind::handle definition,
                          nanobind::handle handle, nanobind::handle depends) const;
  /// traced() of every handle of `handles`, without dependencies (the tracer's inputs).
  nanobind::list tracedAll(nanobind::handle self, nanobind::handle definition,
                           nanobind::handle handles) const;
  /// The class of the traced values of tensors (`tensor`) or scalars.
  nanobind::handle valueClass(bool tensor) const;

private:
  /// broadcast_in_dim's output shape: ints, or size values (extents taken from tensors).
  void setShape(OpAttributes& attributes, const std::vector<nanobind::object>& shape);
  /// The name repr(fd) will give the next value (T<n> / S<n>, n counting every value it
  /// names), so that error messages and the printed definition agree. Counted incrementally.
  std::string nextName(char prefix);
  FusionDefinition& live();

  /// Checks and keeps the classes of traced values (see the constructor).
  void setValueClasses(nanobind::handle tensorClass, nanobind::handle scalarClass);

  std::unique_ptr<FusionDefinition> builder_;
  /// The classes of the traced values it makes (widefuse.values.Tensor and Scalar).
  nanobind::object tensorClass_, scalarClass_;
  std::shared_ptr<const Fusion> finished_;
  size_t valuesSeen_ = 0;
  unsigned namedValues_ = 0;
  /// Names of what repr(fd) prints but the IR does not hold (define_vector's vectors).
  unsigned extraNames_ = 0;
};

} // namespace widefuse::python
