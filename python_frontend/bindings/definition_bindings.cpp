// Builder and fusion objects for the Python FusionDefinition. Data types cross the boundary
// as the text form's short names ("f32"); the Python side maps them to DataType members.
#include "python_frontend/bindings/bindings.h"
#include "python_frontend/bindings/fusion_handle.h"
#include "python_frontend/bindings/py_definition.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/reduction.h"
#include "python_frontend/python_printer.h"
#include "runtime/backend_registry.h"
#include "runtime/fusion_executor.h"
#include "segmenter/components.h"
#include "segmenter/phases.h"
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

/// An add_output call as the Python side gives it: (value or None, stride_order, alias index
/// or -1); see OutputCall.
using PyOutputCall = std::tuple<std::optional<Val>, std::vector<int64_t>, int64_t>;

std::vector<OutputCall> outputCallsOf(const std::vector<PyOutputCall>& calls) {
  std::vector<OutputCall> converted;
  for (const auto& [value, strideOrder, alias] : calls)
    converted.push_back(OutputCall{value ? value->value() : nullptr, strideOrder, alias});
  return converted;
}

nb::dict inputFacts(const Fusion& fusion, const Value& input) {
  nb::dict facts;
  facts["name"] = input.name();
  facts["dtype"] = shortName(input.dtype()).str();
  facts["is_tensor"] = input.isTensor();
  facts["shape"] = std::vector<int64_t>(input.extents().begin(), input.extents().end());
  facts["written"] = fusion.aliasOf(&input) != nullptr;
  return facts;
}

nb::list inputList(const FusionHandle& handle) {
  nb::list inputs;
  for (const Value* input : handle.fusion->inputs())
    inputs.append(inputFacts(*handle.fusion, *input));
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
      "codebook_values",
      [](const std::string& name) {
        std::optional<Codebook> codebook = parseCodebook(name);
        if (!codebook)
          throw Error(fmt::format("unknown codebook '{}' (one of: {})", name, codebookNames()));
        llvm::ArrayRef<float> values = codebookValues(*codebook);
        return std::vector<float>(values.begin(), values.end());
      },
      nb::arg("name"),
      "The entries of codebook `name` (ir/codebook.h), sorted: what code_value reads.");
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
      .def(nb::init<const std::string&, nb::handle, nb::handle>(), nb::arg("name"),
           nb::arg("tensor_class"), nb::arg("scalar_class"),
           "A builder whose traced values are of the two classes (they extend TracedValue).")
      .def(
          "traced",
          [](nb::pointer_and_handle<PyDefinition> self, nb::handle definition, nb::handle handle,
             nb::handle depends) { return self.p->traced(self.h, definition, handle, depends); },
          nb::arg("definition"), nb::arg("handle"), nb::arg("depends").none() = nb::none(),
          "The traced value (Tensor or Scalar) of `handle` in FusionDefinition `definition`.")
      .def(
          "traced_all",
          [](nb::pointer_and_handle<PyDefinition> self, nb::handle definition, nb::handle handles) {
            return self.p->tracedAll(self.h, definition, handles);
          },
          nb::arg("definition"), nb::arg("handles"),
          "traced() of each handle (tensor inputs just defined), without dependencies.")
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
           nb::arg("block") = 0, nb::arg("codebook").none() = nb::none(), nb::keep_alive<0, 1>())
      .def("op", nb::overload_cast<unsigned, nb::tuple>(&PyDefinition::applyPointwise),
           nb::arg("kind"), nb::arg("operands"))
      .def("reduce", &PyDefinition::reduce, nb::arg("op"), nb::arg("operands"),
           nb::arg("dims").none(), nb::arg("block").none() = nb::none(), nb::keep_alive<0, 1>())
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
           "Facts about each input: name, dtype, is_tensor, shape, written (a copy_ "
           "destination); the argument reader checks the rest.")
      .def("outputs", &outputList, "Facts about each plain output: name, dtype, shape.")
      .def_prop_ro(
          "phases", [](const FusionHandle& h) { return planPhases(*h.fusion).count; },
          "How many phases a run has: 1 + the reductions a later expression reads in a row.")
      .def("segments", &segmentReport, nb::arg("mode"), "The segmenter's report for a mode.");
  module.def("component_searches", &componentSearches,
             "How many times the segmenter has found a fusion's components in this process.");
}

} // namespace widefuse::python
