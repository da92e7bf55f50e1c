// direct_arguments(fusion, values, torch_types): execute()'s arguments when every value is one
// its checks in Python (widefuse/execution.py, _arguments) would pass unchanged; else None,
// and those checks run and name what is wrong.
#include "python_frontend/bindings/direct_arguments.h"

#include "python_frontend/bindings/bindings.h"
#include "python_frontend/bindings/buffer_arguments.h"
#include "python_frontend/bindings/fusion_handle.h"
#include "python_frontend/bindings/torch_tensor_reader.h"

#include <nanobind/stl/string.h>

#include <optional>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// A NumPy array of an element type read through the buffer protocol (the executor checks the
/// rest and names the input).
bool isBufferArray(PyObject* value) {
  if (Py_TYPE(value) != ndarrayType())
    return false;
  Py_buffer view;
  if (PyObject_GetBuffer(value, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  bool known = bufferDataType(view).has_value();
  PyBuffer_Release(&view);
  return known;
}

/// True for the layout a definition declares by default: dense row-major.
bool declaredRowMajor(const Value& input) {
  return input.layout().isDefault();
}

/// `value` as a DirectTensor when it is a plain torch CPU tensor that torch_layout reads as it
/// is, of `input`'s dtype and rank, dense row-major (extents of 1 aside).
std::optional<DirectTensor> directTensor(const TorchTensorReader& reader, PyObject* value,
                                         const Value& input, nb::dict torchTypes) {
  TorchLayout layout;
  TorchFacts facts;
  if (!reader.readPlain(value, layout, facts) || facts.device != -1)
    return std::nullopt;
  std::optional<DataType> dtype =
      parseDataType(shortNameOfTorchType(torchTypes.ptr(), layout.dtype));
  if (dtype != input.dtype() || layout.sizes.size() != input.rank())
    return std::nullopt;
  DirectTensor direct;
  direct.ref.dtype = *dtype;
  direct.ref.data = layout.data;
  direct.ref.shape = layout.sizes;
  direct.ref.strides = layout.strides;
  if (!direct.ref.isContiguous())
    return std::nullopt;
  return direct;
}

/// A Python number the checks pass as it is for scalar input `input`: a bool or an int, or a
/// float for a floating-point input.
bool isDirectNumber(PyObject* value, const Value& input) {
  PyTypeObject* type = Py_TYPE(value);
  return type == &PyBool_Type || type == &PyLong_Type ||
         (type == &PyFloat_Type && isFloatingPoint(input.dtype()));
}

/// (arguments, whether one is a torch tensor), or None when a value needs the Python checks.
nb::object directArguments(const FusionHandle& handle, nb::list values, nb::dict torchTypes) {
  llvm::ArrayRef<Value*> inputs = handle.fusion->inputs();
  if (values.size() != inputs.size())
    return nb::none();
  TorchTensorReader* reader = TorchTensorReader::get();
  nb::list arguments;
  bool anyTorch = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    PyObject* value = values[i].ptr();
    const Value& input = *inputs[i];
    if (!input.isTensor()) {
      if (!isDirectNumber(value, input))
        return nb::none();
      arguments.append(nb::handle(value));
    } else if (isBufferArray(value)) {
      arguments.append(nb::handle(value));
    } else if (reader && reader->isPlainTensor(value) && declaredRowMajor(input)) {
      std::optional<DirectTensor> direct = directTensor(*reader, value, input, torchTypes);
      if (!direct)
        return nb::none();
      arguments.append(nb::cast(std::move(*direct)));
      anyTorch = true;
    } else {
      return nb::none();
    }
  }
  return nb::make_tuple(arguments, anyTorch);
}

} // namespace

void bindDirectArguments(nb::module_& module) {
  nb::class_<DirectTensor>(module, "_DirectTensor",
                           "A torch CPU tensor execute() reads as it is (direct_arguments).");
  module.def("direct_arguments", &directArguments, nb::arg("fusion"), nb::arg("values"),
             nb::arg("torch_types"),
             "execute()'s arguments when its checks would pass every value as it is: (list, "
             "whether one is a torch tensor); else None. torch_types maps torch.dtype to short "
             "names.");
}

} // namespace widefuse::python
