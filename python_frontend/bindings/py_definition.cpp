#include "python_frontend/bindings/py_definition.h"

#include "ir/reduction.h"
#include "python_frontend/python_printer.h"
#include "segmenter/components.h"

#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
// Every translation unit that casts to std::string must see its caster: a nb::cast<std::string>
// compiled without it is another definition of the same template (a bad_cast at run time).
#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace widefuse::python {

Operand operandOf(nb::handle object) {
  // A float first: most literals of a traced optimizer are, and a failed cast to Val costs
  // a type lookup. bool before int: in Python a bool is also an int.
  if (PyFloat_CheckExact(object.ptr()))
    return Operand(PyFloat_AS_DOUBLE(object.ptr()));
  Val value;
  if (nb::try_cast(object, value))
    return Operand(value);
  if (nb::isinstance<nb::bool_>(object))
    return Operand(nb::cast<bool>(object));
  if (nb::isinstance<nb::int_>(object)) {
    int64_t value = 0;
    if (!nb::try_cast(object, value))
      fail("integer {} does not fit in 64 bits", nb::cast<std::string>(nb::str(object)));
    return Operand(value);
  }
  if (nb::isinstance<nb::float_>(object))
    return Operand(nb::cast<double>(object));
  fail("an operand must be a value of this fusion or a Python number, not {}",
       nb::cast<std::string>(nb::str(object.type().attr("__name__"))));
}

ConstantValue constantOf(nb::handle object) {
  Operand operand = operandOf(object);
  if (!operand.literal())
    fail("define_scalar: the value must be a Python number");
  return *operand.literal();
}

PyDefinition::PyDefinition(const std::string& name, nb::handle tensorClass, nb::handle scalarClass)
    : builder_(std::make_unique<FusionDefinition>(name)) {
  setValueClasses(tensorClass, scalarClass);
}

Val PyDefinition::defineTensor(const std::vector<int64_t>& shape, const std::string& dtype,
                               const std::vector<int64_t>& strideOrder,
                               const std::vector<bool>& contiguity) {
  TensorLayout layout;
  layout.strideOrder.assign(strideOrder.begin(), strideOrder.end());
  layout.contiguity.assign(contiguity.begin(), contiguity.end());
  return live().defineTensor(shape, dataTypeNamed(dtype), nextName('T'), std::move(layout));
}

std::vector<Val> PyDefinition::defineTensors(unsigned count, const std::vector<int64_t>& shape,
                                             const std::string& dtype,
                                             const std::vector<int64_t>& strideOrder,
                                             const std::vector<bool>& contiguity) {
  std::vector<Val> values;
  values.reserve(count);
  for (unsigned i = 0; i < count; ++i)
    values.push_back(defineTensor(shape, dtype, strideOrder, contiguity));
  return values;
}

Val PyDefinition::defineScalar(const std::string& dtype) {
  return live().defineScalar(dataTypeNamed(dtype), nextName('S'));
}

std::string PyDefinition::nameVector() {
  std::string vector = nextName('V');
  ++extraNames_;
  return vector;
}

Val PyDefinition::constant(nb::handle value, const std::string& dtype) {
  return live().constant(constantOf(value), dataTypeNamed(dtype));
}

Val PyDefinition::apply(const std::string& opName, const std::vector<nb::object>& operands,
                        const std::optional<std::string>& dtype,
                        const std::vector<nb::object>& shape,
                        const std::vector<int64_t>& broadcastDims, int64_t dim, int64_t block,
                        const std::optional<std::string>& codebook) {
  std::optional<OpKind> op = parseOpKind(opName);
  if (!op)
    fail("unknown op '{}'", opName);
  llvm::SmallVector<Operand, 3> arguments;
  for (const nb::object& operand : operands)
    arguments.push_back(operandOf(operand));
  OpAttributes attributes;
  if (dtype)
    attributes.targetType = dataTypeNamed(*dtype);
  setShape(attributes, shape);
  attributes.broadcastDims.assign(broadcastDims.begin(), broadcastDims.end());
  attributes.dim = dim;
  attributes.block = block;
  if (codebook) {
    std::optional<Codebook> named = parseCodebook(*codebook);
    if (!named)
      fail("{}: unknown codebook '{}' (one of: {})", opName, *codebook, codebookNames());
    attributes.codebook = *named;
  }
  // Pointwise: the result is a tensor when an operand is (or the op broadcasts).
  bool tensorResult = *op == OpKind::BroadcastInDim || *op == OpKind::ExpandBlocks ||
                      (*op != OpKind::Size && llvm::any_of(arguments, [](const Operand& operand) {
                        return !operand.literal() && operand.val().value()->isTensor();
                      }));
  // A complex literal (complex of two number literals: a Python complex number) is
  // written inline by repr(fd) and takes no T<n> / S<n>; the IR names it itself.
  bool complexLiteral = *op == OpKind::Complex &&
                        llvm::all_of(arguments, [](const Operand& a) { return a.literal(); });
  std::string name = complexLiteral ? std::string() : nextName(tensorResult ? 'T' : 'S');
  return live().apply(*op, arguments, std::move(attributes), name);
}

Val PyDefinition::applyPointwise(unsigned kind, nb::tuple operands) {
  if (kind >= kNumOpKinds)
    fail("unknown op number {}", kind);
  llvm::SmallVector<Operand, 3> arguments;
  for (nb::handle operand : operands)
    arguments.push_back(operandOf(operand));
  return applyPointwise(static_cast<OpKind>(kind), arguments);
}

Val PyDefinition::applyPointwise(OpKind op, llvm::ArrayRef<Operand> operands) {
  bool tensorResult = op == OpKind::BroadcastInDim;
  bool allLiterals = true;
  for (const Operand& operand : operands) {
    if (operand.literal())
      continue;
    allLiterals = false;
    tensorResult |= op != OpKind::Size && operand.val().value()->isTensor();
  }
  bool complexLiteral = op == OpKind::Complex && allLiterals;
  std::string name = complexLiteral ? std::string() : nextName(tensorResult ? 'T' : 'S');
  return live().apply(op, operands, OpAttributes{}, name);
}

Val PyDefinition::reduce(const std::string& opName, const std::vector<Val>& operands,
                         const std::optional<std::vector<int64_t>>& dims,
                         std::optional<int64_t> block) {
  std::optional<OpKind> op = parseOpKind(opName);
  if (!op || !isReduction(*op))
    fail("'{}' is not a reduction (sum, max, min, any, all)", opName);
  llvm::SmallVector<const Value*, 4> values;
  for (const Val& operand : operands)
    values.push_back(operand.value());
  OpAttributes attributes;
  try {
    attributes = block  ? blockReductionAttributes(*op, values, *block)
                 : dims ? reductionAttributes(*op, values, llvm::ArrayRef<int64_t>(*dims))
                        : reductionAttributes(*op, values, std::nullopt);
  } catch (const Error& error) {
    throw ReductionScopeError(error.what());
  }
  llvm::SmallVector<Operand, 4> arguments(operands.begin(), operands.end());
  return live().apply(*op, arguments, std::move(attributes), nextName('T'));
}

void PyDefinition::copy(nb::handle source, const Val& destination) {
  live().copy_(operandOf(source), destination);
}

void PyDefinition::addOutput(const Val& value) {
  live().addOutput(value);
}

FusionHandle PyDefinition::finalize() {
  // Held here from now on, so that the values' handles stay valid even when the check
  // below refuses the fusion.
  finished_ = live().finalize();
  builder_.reset();
  // Only components can be refused (their iteration domains); classes and launch groups
  // are the executor's, which segments for the mode it runs in. A reduction kernels cannot
  // compute (of a 0-d value) is no error here: the reference backend runs it, and a kernel
  // backend's executor names it when it segments.
  // The executors segment from these components rather than find them again.
  std::shared_ptr<const FusionComponents> components;
  try {
    components = std::make_shared<const FusionComponents>(findComponents(*finished_));
  } catch (const Error&) {
    if (!hasReductions(*finished_))
      throw;
  }
  return FusionHandle{finished_, std::move(components)};
}

const Fusion& PyDefinition::current() const {
  if (!builder_)
    fail("this definition was finalized");
  return builder_->fusion();
}

void PyDefinition::setShape(OpAttributes& attributes, const std::vector<nb::object>& shape) {
  for (const nb::object& entry : shape) {
    if (nb::isinstance<Val>(entry)) {
      attributes.broadcastShape.push_back(kSymbolicExtent);
      attributes.broadcastExtents.push_back(nb::cast<Val>(entry).value());
      continue;
    }
    attributes.broadcastShape.push_back(nb::cast<int64_t>(entry));
    attributes.broadcastExtents.push_back(nullptr);
  }
}

std::string PyDefinition::nextName(char prefix) {
  const Fusion& fusion = live().fusion();
  for (; valuesSeen_ < fusion.numValues(); ++valuesSeen_)
    if (!isWrittenInline(*fusion.value(static_cast<unsigned>(valuesSeen_))) &&
        !isLeftImplicit(*fusion.value(static_cast<unsigned>(valuesSeen_))))
      ++namedValues_;
  return fmt::format("{}{}", prefix, namedValues_ + extraNames_);
}

FusionDefinition& PyDefinition::live() {
  if (!builder_)
    fail("this FusionDefinition is finished (its `with` block ended); start a new one");
  return *builder_;
}

} // namespace widefuse::python
