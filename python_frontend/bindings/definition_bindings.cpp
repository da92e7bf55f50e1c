// Builder and fusion objects for the Python FusionDefinition. Data types cross the boundary
// as the text form's short names ("f32"); the Python side maps them to DataType members.
#include "python_frontend/bindings/bindings.h"
#include "python_frontend/bindings/fusion_handle.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/reduction.h"
#include "python_frontend/python_printer.h"
#include "runtime/backend_registry.h"
#include "runtime/fusion_executor.h"
#include "segmenter/components.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// A Python number or a value handle as an op operand. bool is tested first: in Python it is
/// also an int.
Operand operandOf(nb::handle object) {
  // A float first: most literals of a traced optimizer are, and a failed cast to Val costs
  // a type lookup.
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

/// A reduction whose dims do not give a scope (docs/ir_reference.md 10.2): raised in Python as
/// _widefuse.ReductionScopeError, which the frontend turns into UnsupportedOperationError.
class ReductionScopeError : public Error {
public:
  using Error::Error;
};

/// True when the fusion holds a reduction.
bool hasReduction(const Fusion& fusion) {
  for (unsigned id = 0; id < fusion.numExprs(); ++id)
    if (isReduction(fusion.expr(id)->op()))
      return true;
  return false;
}

/// The C++ FusionDefinition until finalize(), then the finished fusion.
class PyDefinition {
public:
  explicit PyDefinition(const std::string& name)
      : builder_(std::make_unique<FusionDefinition>(name)) {}

  Val defineTensor(const std::vector<int64_t>& shape, const std::string& dtype,
                   const std::vector<int64_t>& strideOrder, const std::vector<bool>& contiguity) {
    TensorLayout layout;
    layout.strideOrder.assign(strideOrder.begin(), strideOrder.end());
    layout.contiguity.assign(contiguity.begin(), contiguity.end());
    return live().defineTensor(shape, dataTypeNamed(dtype), nextName('T'), std::move(layout));
  }

  /// `count` tensor inputs of one declaration, in one call: the tracer's inputs (an
  /// optimizer's parameters and state share a few layouts). Like applyPointwise's, the
  /// handles do not keep the definition alive: the Python FusionDefinition holds both.
  std::vector<Val> defineTensors(unsigned count, const std::vector<int64_t>& shape,
                                 const std::string& dtype, const std::vector<int64_t>& strideOrder,
                                 const std::vector<bool>& contiguity) {
    std::vector<Val> values;
    values.reserve(count);
    for (unsigned i = 0; i < count; ++i)
      values.push_back(defineTensor(shape, dtype, strideOrder, contiguity));
    return values;
  }

  Val defineScalar(const std::string& dtype) {
    return live().defineScalar(dataTypeNamed(dtype), nextName('S'));
  }

  /// The name V<k> of nvFuser's define_vector(n), which repr(fd) prints but the IR does not
  /// hold (its entries are Int scalar inputs, defined next): names after it count it.
  std::string nameVector() {
    std::string vector = nextName('V');
    ++extraNames_;
    return vector;
  }

  Val constant(nb::handle value, const std::string& dtype) {
    return live().constant(constantOf(value), dataTypeNamed(dtype));
  }

  Val apply(const std::string& opName, const std::vector<nb::object>& operands,
            const std::optional<std::string>& dtype, const std::vector<nb::object>& shape,
            const std::vector<int64_t>& broadcastDims, int64_t dim) {
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
    // Pointwise: the result is a tensor when an operand is (or the op broadcasts).
    bool tensorResult = *op == OpKind::BroadcastInDim ||
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

  /// Pointwise op `kind` (an index into op_names()) of `operands`, a tuple of value handles
  /// and Python numbers: apply() without attributes and without converting its arguments,
  /// the tracer's one call per recorded op. Unlike apply()'s, the handle it returns does not
  /// keep the definition alive: the Python FusionDefinition holds both.
  Val applyPointwise(unsigned kind, nb::tuple operands) {
    if (kind >= kNumOpKinds)
      fail("unknown op number {}", kind);
    OpKind op = static_cast<OpKind>(kind);
    llvm::SmallVector<Operand, 3> arguments;
    bool tensorResult = op == OpKind::BroadcastInDim;
    bool allLiterals = true;
    for (nb::handle operand : operands) {
      arguments.push_back(operandOf(operand));
      if (!arguments.back().literal()) {
        allLiterals = false;
        tensorResult |= op != OpKind::Size && arguments.back().val().value()->isTensor();
      }
    }
    bool complexLiteral = op == OpKind::Complex && allLiterals;
    std::string name = complexLiteral ? std::string() : nextName(tensorResult ? 'T' : 'S');
    return live().apply(op, arguments, OpAttributes{}, name);
  }

  /// Reduction `opName` (sum max min any all) of `operands`, tensor handles: one operand and
  /// no dims is the tensor scope, several the global scope; `dims` as in the C++ `sum(x,
  /// {d})` (reductionAttributes). One call per reduction, as op() is for pointwise ops.
  Val reduce(const std::string& opName, const std::vector<Val>& operands,
             const std::optional<std::vector<int64_t>>& dims) {
    std::optional<OpKind> op = parseOpKind(opName);
    if (!op || !isReduction(*op))
      fail("'{}' is not a reduction (sum, max, min, any, all)", opName);
    llvm::SmallVector<const Value*, 4> values;
    for (const Val& operand : operands)
      values.push_back(operand.value());
    OpAttributes attributes;
    try {
      attributes = dims ? reductionAttributes(*op, values, llvm::ArrayRef<int64_t>(*dims))
                        : reductionAttributes(*op, values, std::nullopt);
    } catch (const Error& error) {
      throw ReductionScopeError(error.what());
    }
    llvm::SmallVector<Operand, 4> arguments(operands.begin(), operands.end());
    return live().apply(*op, arguments, std::move(attributes), nextName('T'));
  }

  void copy(nb::handle source, const Val& destination) {
    live().copy_(operandOf(source), destination);
  }
  void addOutput(const Val& value) { live().addOutput(value); }

  /// Verifies the fusion and segments it once, so that what no kernel can run (outputs of
  /// two shapes in one subgraph, say) is refused when the `with` block ends, not at the first
  /// execute().
  FusionHandle finalize() {
    // Held here from now on, so that the values' handles stay valid even when the check
    // below refuses the fusion.
    finished_ = live().finalize();
    builder_.reset();
    // Only components can be refused (their iteration domains); classes and launch groups
    // are the executor's, which segments for the mode it runs in. The component finder does
    // not know reductions yet: a fusion with one is checked by the executor instead, which
    // names the reduction and the reference backend, the one that runs it.
    // The executors segment from these components rather than find them again.
    std::shared_ptr<const std::vector<Component>> components;
    if (!hasReduction(*finished_))
      components = std::make_shared<const std::vector<Component>>(findComponents(*finished_));
    return FusionHandle{finished_, std::move(components)};
  }

  /// The fusion so far, for printing before finalize().
  const Fusion& current() const {
    if (!builder_)
      fail("this definition was finalized");
    return builder_->fusion();
  }

private:
  /// broadcast_in_dim's output shape: ints, or size values (extents taken from tensors).
  void setShape(OpAttributes& attributes, const std::vector<nb::object>& shape) {
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

  /// The name repr(fd) will give the next value (T<n> / S<n>, n counting every value it names),
  /// so that error messages and the printed definition agree. Counted incrementally.
  std::string nextName(char prefix) {
    const Fusion& fusion = live().fusion();
    for (; valuesSeen_ < fusion.numValues(); ++valuesSeen_)
      if (!isWrittenInline(*fusion.value(static_cast<unsigned>(valuesSeen_))) &&
          !isLeftImplicit(*fusion.value(static_cast<unsigned>(valuesSeen_))))
        ++namedValues_;
    return fmt::format("{}{}", prefix, namedValues_ + extraNames_);
  }

  FusionDefinition& live() {
    if (!builder_)
      fail("this FusionDefinition is finished (its `with` block ended); start a new one");
    return *builder_;
  }

  std::unique_ptr<FusionDefinition> builder_;
  std::shared_ptr<const Fusion> finished_;
  size_t valuesSeen_ = 0;
  unsigned namedValues_ = 0;
  /// Names of what repr(fd) prints but the IR does not hold (define_vector's vectors).
  unsigned extraNames_ = 0;
};

/// An add_output call as the Python side gives it: (value or None, stride_order, alias index
/// or -1); see OutputCall.
using PyOutputCall = std::tuple<std::optional<Val>, std::vector<int64_t>, int64_t>;

std::vector<OutputCall> outputCallsOf(const std::vector<PyOutputCall>& calls) {
  std::vector<OutputCall> converted;
  for (const auto& [value, strideOrder, alias] : calls)
    converted.push_back(OutputCall{value ? value->value() : nullptr, strideOrder, alias});
  return converted;
}

nb::dict inputFacts(const Value& input, const Fusion& fusion) {
  nb::dict facts;
  facts["name"] = input.name();
  facts["dtype"] = shortName(input.dtype()).str();
  facts["is_tensor"] = input.isTensor();
  facts["shape"] = std::vector<int64_t>(input.extents().begin(), input.extents().end());
  const TensorLayout& layout = input.layout();
  facts["stride_order"] =
      std::vector<int64_t>(layout.strideOrder.begin(), layout.strideOrder.end());
  facts["contiguity"] = std::vector<bool>(layout.contiguity.begin(), layout.contiguity.end());
  facts["written"] = fusion.aliasOf(&input) != nullptr;
  // Declared dense row-major: a dense row-major array needs no other layout check.
  bool rowMajor = llvm::all_of(layout.contiguity, [](bool dense) { return dense; });
  for (size_t d = 0; rowMajor && d < layout.strideOrder.size(); ++d)
    rowMajor = layout.strideOrder[d] == int64_t(layout.strideOrder.size() - 1 - d);
  facts["row_major"] = rowMajor;
  return facts;
}

nb::list inputList(const FusionHandle& handle) {
  nb::list inputs;
  for (const Value* input : handle.fusion->inputs())
    inputs.append(inputFacts(*input, *handle.fusion));
  return inputs;
}

nb::list outputList(const FusionHandle& handle) {
  nb::list outputs;
  for (const Value* output : handle.fusion->outputs()) {
    nb::dict facts;
    facts["name"] = output->name();
    facts["dtype"] = shortName(output->dtype()).str();
    facts["shape"] = std::vector<int64_t>(output->extents().begin(), output->extents().end());
    outputs.append(facts);
  }
  return outputs;
}

std::string segmentReport(const FusionHandle& handle, const std::string& mode) {
  SegmentOptions options;
  options.mode = parseMode(mode);
  options.components = handle.components.get();
  return formatSegmentedFusion(segment(*handle.fusion, options));
}

FusionHandle fusionFromText(const std::string& text, const std::string& sourceName) {
  return FusionHandle{std::shared_ptr<const Fusion>(parseFusion(text, sourceName)), nullptr};
}

void bindValue(nb::module_& module) {
  nb::class_<Val>(module, "_Value", "A value of a fusion under construction.")
      .def_prop_ro("name", [](const Val& v) { return v.name(); })
      .def_prop_ro("dtype", [](const Val& v) { return shortName(v.dtype()).str(); })
      .def_prop_ro("is_tensor", [](const Val& v) { return v.value()->isTensor(); })
      .def_prop_ro("shape", [](const Val& v) {
        llvm::ArrayRef<int64_t> extents = v.value()->extents();
        return std::vector<int64_t>(extents.begin(), extents.end());
      });
}

} // namespace

void bindDefinition(nb::module_& module) {
  nb::exception<Error> error(module, "Error", PyExc_RuntimeError);
  // Registered after Error, so tried first (nanobind tries translators newest first).
  nb::exception<ReductionScopeError>(module, "ReductionScopeError", error);
  module.def(
      "data_types",
      [] {
        std::vector<std::pair<std::string, std::string>> types;
        for (DataType type : kAllDataTypes)
          types.emplace_back(pythonDataTypeName(type).str(), shortName(type).str());
        return types;
      },
      "Every data type as (its name in widefuse.DataType, its text-form short name).");
  module.def(
      "backend_names", [] { return backendNames(); },
      "The backends execute() takes, as the C++ executor names them.");
  module.def(
      "op_names",
      [] {
        std::vector<std::string> names;
        for (unsigned op = 0; op < kNumOpKinds; ++op)
          names.push_back(opName(static_cast<OpKind>(op)).str());
        return names;
      },
      "The name of every IR op (the text form's names).");
  module.def(
      "op_arity",
      [](const std::string& name) {
        std::optional<OpKind> op = parseOpKind(name);
        if (!op)
          fail("unknown op '{}'", name);
        return opArity(*op);
      },
      "Number of value operands of an op.");
  bindValue(module);

  // keep_alive<0, 1>: a value keeps its definition (and so the fusion it points into) alive.
  nb::class_<PyDefinition>(module, "_Definition", "Builds one fusion; checks every op as added.")
      .def(nb::init<const std::string&>(), nb::arg("name"))
      .def("define_tensor", &PyDefinition::defineTensor, nb::arg("shape"), nb::arg("dtype"),
           nb::arg("stride_order"), nb::arg("contiguity"), nb::keep_alive<0, 1>())
      .def("define_tensors", &PyDefinition::defineTensors, nb::arg("count"), nb::arg("shape"),
           nb::arg("dtype"), nb::arg("stride_order"), nb::arg("contiguity"))
      .def("define_scalar", &PyDefinition::defineScalar, nb::arg("dtype"), nb::keep_alive<0, 1>())
      .def("name_vector", &PyDefinition::nameVector)
      .def("constant", &PyDefinition::constant, nb::arg("value"), nb::arg("dtype"),
           nb::keep_alive<0, 1>())
      .def("apply", &PyDefinition::apply, nb::arg("op"), nb::arg("operands"),
           nb::arg("dtype").none() = nb::none(), nb::arg("shape") = std::vector<nb::object>{},
           nb::arg("broadcast_dims") = std::vector<int64_t>{}, nb::arg("dim") = 0,
           nb::keep_alive<0, 1>())
      .def("op", &PyDefinition::applyPointwise, nb::arg("kind"), nb::arg("operands"))
      .def("reduce", &PyDefinition::reduce, nb::arg("op"), nb::arg("operands"),
           nb::arg("dims").none(), nb::keep_alive<0, 1>())
      .def("copy_", &PyDefinition::copy, nb::arg("source"), nb::arg("destination"))
      .def("add_output", &PyDefinition::addOutput, nb::arg("value"))
      .def("finalize", &PyDefinition::finalize)
      .def("text", [](const PyDefinition& d) { return printFusion(d.current()); })
      .def(
          "python",
          [](const PyDefinition& d, const std::vector<PyOutputCall>& outputCalls,
             const std::vector<std::pair<unsigned, unsigned>>& vectors, const std::string& api) {
            return printPythonDefinition(d.current(), outputCallsOf(outputCalls), vectors,
                                         parsePythonApi(api));
          },
          nb::arg("output_calls") = std::vector<PyOutputCall>{},
          nb::arg("vector_inputs") = std::vector<std::pair<unsigned, unsigned>>{},
          nb::arg("api") = "direct");

  nb::class_<FusionHandle>(module, "_Fusion", "A verified fusion.")
      .def_static("from_text", &fusionFromText, nb::arg("text"), nb::arg("source_name") = "<text>")
      .def_prop_ro("name", [](const FusionHandle& h) { return h.fusion->name(); })
      .def("text", [](const FusionHandle& h) { return printFusion(*h.fusion); })
      .def(
          "python",
          [](const FusionHandle& h, const std::vector<PyOutputCall>& outputCalls,
             const std::vector<std::pair<unsigned, unsigned>>& vectors, const std::string& api) {
            return printPythonDefinition(*h.fusion, outputCallsOf(outputCalls), vectors,
                                         parsePythonApi(api));
          },
          nb::arg("output_calls") = std::vector<PyOutputCall>{},
          nb::arg("vector_inputs") = std::vector<std::pair<unsigned, unsigned>>{},
          nb::arg("api") = "direct",
          "nvFuser's printout for api 'direct' (nvfuser_direct) or 'legacy' (nvfuser). "
          "output_calls: the add_output calls in order, each (value, stride_order, -1) for a "
          "plain output or (None, [], i) for in-place update i.")
      .def("inputs", &inputList,
           "Facts about each input: name, dtype, is_tensor, shape, "
           "stride_order, contiguity, written (a copy_ destination), row_major (declared dense "
           "row-major).")
      .def("outputs", &outputList, "Facts about each plain output: name, dtype, shape.")
      .def("segments", &segmentReport, nb::arg("mode"), "The segmenter's report for a mode.");
}

} // namespace widefuse::python
