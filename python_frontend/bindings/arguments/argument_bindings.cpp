// The argument reader in Python: read_arguments (execute(), validate(), prepare()),
// read_outputs (prepare(outputs=...)), read_layouts (a traced call's arrays, widefuse.optim's
// tensors), each returning what it read or a _Refusal, which widefuse/arguments.py turns into
// its error.
#include "python_frontend/bindings/arguments/argument_reader.h"
#include "python_frontend/bindings/bindings.h"
#include "python_frontend/bindings/fusion_handle.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

constexpr const char* kRefusalNames[] = {
    "numpy_dtype",       "not_aligned",     "negative_strides", "strides_not_elements",
    "torch_layout",      "torch_quantized", "torch_conjugated", "torch_negated",
    "torch_meta",        "torch_device",    "requires_grad",    "torch_dtype",
    "array_type",        "dlpack_export",   "dlpack_device",    "not_an_array",
    "dtype_mismatch",    "layout",          "read_only",        "devices_differ",
    "float_for_integer", "complex_scalar",  "not_a_number",     "integer_overflow",
    "output_count",      "output_dtype",    "output_read_only", "output_placement"};
static_assert(std::size(kRefusalNames) == size_t(RefusalCode::OutputPlacement) + 1,
              "one name per refusal code");

DtypeTables tablesOf(nb::handle torchTypes, nb::handle numpyTypes) {
  return {torchTypes.ptr(), numpyTypes.ptr()};
}

/// The arguments of `values` for the fusion's inputs, or the refusal of the first it refuses.
nb::object readArgumentsOf(const FusionHandle& fusion, nb::handle values, nb::handle torchTypes,
                           nb::handle numpyTypes) {
  ReadArguments read;
  Refusal refusal;
  if (!readArguments(*fusion.fusion, values, tablesOf(torchTypes, numpyTypes), read, refusal))
    return nb::cast(std::move(refusal));
  return nb::cast(std::move(read));
}

nb::object readOutputsOf(const FusionHandle& fusion, nb::handle outputs, bool onDevice,
                         nb::handle torchTypes, nb::handle numpyTypes) {
  ReadArguments read;
  Refusal refusal;
  if (!readOutputs(*fusion.fusion, outputs, onDevice, tablesOf(torchTypes, numpyTypes), read,
                   refusal))
    return nb::cast(std::move(refusal));
  return nb::cast(std::move(read));
}

/// One array's layout as read_layouts gives it, before it becomes a tuple.
struct Layout {
  DataType dtype;
  llvm::SmallVector<int64_t, 4> shape;
  llvm::SmallVector<int64_t, 4> strides; // in elements
  bool onDevice = false;

  bool operator<(const Layout& other) const {
    return std::tie(dtype, shape, strides, onDevice) <
           std::tie(other.dtype, other.shape, other.strides, other.onDevice);
  }
};

nb::tuple integers(llvm::ArrayRef<int64_t> values) {
  nb::tuple tuple = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(values.size())));
  for (size_t i = 0; i < values.size(); ++i)
    PyTuple_SET_ITEM(tuple.ptr(), Py_ssize_t(i), PyLong_FromLongLong(values[i]));
  return tuple;
}

/// Each array's (dtype short name, shape, strides in elements, in device memory), equal
/// layouts one tuple; or the refusal of the first array it refuses (named "argument i").
nb::object readLayouts(nb::handle arrays, bool allowGrad, nb::handle torchTypes,
                       nb::handle numpyTypes) {
  DtypeTables tables = tablesOf(torchTypes, numpyTypes);
  // An optimizer's arrays share a few layouts: each is one tuple, looked up by value.
  std::map<Layout, nb::object> tuples;
  nb::list layouts;
  size_t index = 0;
  for (nb::handle array : arrays) {
    ArrayRead read;
    Refusal refusal;
    if (!readArray(array.ptr(), tables, allowGrad, read, refusal)) {
      refusal.index = index;
      refusal.name = fmt::format("argument {}", index);
      return nb::cast(std::move(refusal));
    }
    Layout layout{read.ref.dtype, read.ref.shape, read.ref.strides, read.onDevice};
    auto [found, inserted] = tuples.try_emplace(std::move(layout));
    if (inserted) {
      llvm::StringRef name = shortName(found->first.dtype);
      found->second =
          nb::make_tuple(nb::str(name.data(), name.size()), integers(found->first.shape),
                         integers(found->first.strides), found->first.onDevice);
    }
    layouts.append(found->second);
    ++index;
  }
  return layouts;
}

} // namespace

llvm::StringRef refusalName(RefusalCode code) {
  return kRefusalNames[size_t(code)];
}

std::vector<std::string> refusalNames() {
  return std::vector<std::string>(std::begin(kRefusalNames), std::end(kRefusalNames));
}

void bindArgumentReader(nb::module_& module) {
  nb::class_<Refusal>(module, "_Refusal",
                      "Why the argument reader refused an object: widefuse/arguments.py says "
                      "it in words.")
      .def_prop_ro("code", [](const Refusal& r) { return refusalName(r.code).str(); })
      .def_ro("index", &Refusal::index, "The input's (or output's, or array's) position.")
      .def_ro("name", &Refusal::name, "The input's name, or what the object is called.")
      .def_ro("facts", &Refusal::facts, "What the message names, by the code's own keys.");
  nb::class_<ReadArguments>(module, "_Arguments",
                            "Arguments the reader accepted, for one run or prepare().")
      .def_ro("on_device", &ReadArguments::onDevice, "Whether a tensor is in device memory.")
      .def_ro("stream", &ReadArguments::stream, "The first device array's stream, or None.")
      .def_prop_ro(
          "torch_device",
          [](const ReadArguments& read) -> std::optional<std::string> {
            if (read.torchDevice == -2)
              return std::nullopt;
            return torchDeviceName(read.torchDevice);
          },
          "Where the torch tensors are ('cpu', 'cuda:1'); None without torch tensors.");
  module.def("refusal_codes", &refusalNames, "Every refusal code, in order.");
  module.def("read_arguments", &readArgumentsOf, nb::arg("fusion"), nb::arg("values"),
             nb::arg("torch_types"), nb::arg("numpy_types"),
             "The arguments of `values` (one per fusion input), or a _Refusal. The tables map "
             "torch and NumPy dtypes to short names (widefuse.data_type).");
  module.def("read_outputs", &readOutputsOf, nb::arg("fusion"), nb::arg("outputs"),
             nb::arg("on_device"), nb::arg("torch_types"), nb::arg("numpy_types"),
             "The arrays prepare(outputs=...) writes the plain outputs into, or a _Refusal.");
  module.def("read_layouts", &readLayouts, nb::arg("arrays"), nb::arg("allow_grad"),
             nb::arg("torch_types"), nb::arg("numpy_types"),
             "Each array's (dtype short name, shape, strides in elements, on device), or a "
             "_Refusal.");
}

} // namespace widefuse::python
