#include "python_frontend/bindings/torch_tensor_reader.h"

#include "python_frontend/bindings/bindings.h"

#include <llvm/ADT/ArrayRef.h>
#include <nanobind/nanobind.h>

namespace widefuse::python {
namespace {

/// A new reference to `object.name`, or null with the error cleared.
PyObject* attribute(PyObject* object, const char* name) {
  PyObject* found = PyObject_GetAttrString(object, name);
  if (!found)
    PyErr_Clear();
  return found;
}

/// Calls method descriptor `method` on `self` with no other argument.
PyObject* callMethod(PyObject* method, PyObject* self) {
  return PyObject_Vectorcall(method, &self, 1, nullptr);
}

/// Reads getset descriptor `property` of `self` (what `self.property` does, without the lookup).
PyObject* readProperty(PyObject* property, PyObject* self) {
  return Py_TYPE(property)->tp_descr_get(property, self,
                                         reinterpret_cast<PyObject*>(Py_TYPE(self)));
}

/// The integers of tuple `tuple` (torch.Size or a stride tuple) into `values`; false on error.
bool readIntegers(PyObject* tuple, llvm::SmallVectorImpl<int64_t>& values) {
  if (!tuple)
    return false;
  bool ok = PyTuple_Check(tuple);
  values.clear();
  for (Py_ssize_t i = 0, n = ok ? PyTuple_GET_SIZE(tuple) : 0; i < n; ++i) {
    long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    if (value == -1 && PyErr_Occurred()) {
      ok = false;
      break;
    }
    values.push_back(value);
  }
  Py_DECREF(tuple);
  return ok;
}

/// The truth of new reference `result` (consumed); `fallback` when it is null.
bool truthOf(PyObject* result, bool fallback) {
  if (!result) {
    PyErr_Clear();
    return fallback;
  }
  bool value = result == Py_True;
  Py_DECREF(result);
  return value;
}

} // namespace

TorchTensorReader* TorchTensorReader::get() {
  // Made once, with the GIL held; its references live as long as the process (torch cannot be
  // unloaded).
  static TorchTensorReader* reader = nullptr;
  static bool tried = false;
  if (reader || tried)
    return reader;
  static PyObject* name = PyUnicode_InternFromString("torch");
  PyObject* torch = PyImport_GetModule(name);
  if (!torch) {
    PyErr_Clear();
    return nullptr; // not imported yet: ask again next time
  }
  tried = true;
  auto* made = new TorchTensorReader();
  if (made->resolve(torch))
    reader = made;
  else
    delete made;
  Py_DECREF(torch);
  return reader;
}

bool TorchTensorReader::resolve(PyObject* torch) {
  PyObject* tensor = attribute(torch, "Tensor");
  PyObject* nn = attribute(torch, "nn");
  PyObject* parameter = nn ? attribute(nn, "Parameter") : nullptr;
  PyObject* base = tensor ? attribute(tensor, "__base__") : nullptr; // torch._C.TensorBase
  PyObject* core = attribute(torch, "_C");
  Py_XDECREF(nn);
  if (!tensor || !parameter || !base || !core || !PyType_Check(tensor) || !PyType_Check(parameter))
    return false;
  tensorType_ = reinterpret_cast<PyTypeObject*>(tensor);
  parameterType_ = reinterpret_cast<PyTypeObject*>(parameter);
  strided_ = attribute(torch, "strided");
  dataPtr_ = attribute(base, "data_ptr");
  stride_ = attribute(base, "stride");
  isConj_ = attribute(base, "is_conj");
  isNeg_ = attribute(base, "is_neg");
  getDevice_ = attribute(base, "get_device");
  isGradEnabled_ = attribute(core, "is_grad_enabled");
  // Properties: the descriptors themselves, from the type's dictionary.
  PyObject* dictionary = reinterpret_cast<PyTypeObject*>(base)->tp_dict;
  auto property = [&](const char* name) -> PyObject* {
    PyObject* found = PyDict_GetItemString(dictionary, name); // borrowed
    if (!found || !Py_TYPE(found)->tp_descr_get)
      return nullptr;
    Py_INCREF(found);
    return found;
  };
  shape_ = property("shape");
  dtype_ = property("dtype");
  layout_ = property("layout");
  isCpu_ = property("is_cpu");
  isCuda_ = property("is_cuda");
  requiresGrad_ = property("requires_grad");
  Py_DECREF(core);
  Py_DECREF(base);
  return strided_ && dataPtr_ && stride_ && isConj_ && isNeg_ && getDevice_ && isGradEnabled_ &&
         shape_ && dtype_ && layout_ && isCpu_ && isCuda_ && requiresGrad_;
}

bool TorchTensorReader::readLayout(PyObject* tensor, TorchLayout& layout) const {
  PyObject* address = callMethod(dataPtr_, tensor);
  if (!address) {
    PyErr_Clear();
    return false;
  }
  layout.data = PyLong_AsVoidPtr(address);
  Py_DECREF(address);
  PyObject* dtype = readProperty(dtype_, tensor);
  if (dtype) {
    layout.dtype = dtype; // a singleton, alive as long as torch: no reference kept
    Py_DECREF(dtype);
  }
  bool ok = !PyErr_Occurred() && dtype &&
            readIntegers(readProperty(shape_, tensor), layout.sizes) &&
            readIntegers(callMethod(stride_, tensor), layout.strides);
  if (!ok)
    PyErr_Clear();
  return ok;
}

bool TorchTensorReader::readFacts(PyObject* tensor, TorchFacts& facts) const {
  PyObject* layout = readProperty(layout_, tensor);
  if (!layout) {
    PyErr_Clear();
    return false;
  }
  facts.strided = layout == strided_;
  Py_DECREF(layout);
  facts.conjugated = truthOf(callMethod(isConj_, tensor), true);
  facts.negated = truthOf(callMethod(isNeg_, tensor), true);
  facts.device = -2;
  if (truthOf(readProperty(isCpu_, tensor), false)) {
    facts.device = -1;
  } else if (truthOf(readProperty(isCuda_, tensor), false)) {
    PyObject* ordinal = callMethod(getDevice_, tensor);
    long value = ordinal ? PyLong_AsLong(ordinal) : -2;
    Py_XDECREF(ordinal);
    if (PyErr_Occurred())
      PyErr_Clear();
    facts.device = value >= 0 ? int(value) : -2;
  }
  return true;
}

bool TorchTensorReader::readPlain(PyObject* tensor, TorchLayout& layout, TorchFacts& facts) const {
  return readLayout(tensor, layout) && readFacts(tensor, facts) && facts.strided &&
         !facts.conjugated && !facts.negated && facts.device >= -1 &&
         !(requiresGrad(tensor) && gradEnabled());
}

bool TorchTensorReader::requiresGrad(PyObject* tensor) const {
  return truthOf(readProperty(requiresGrad_, tensor), true);
}

bool TorchTensorReader::lazyBitSet(PyObject* tensor) const {
  return truthOf(callMethod(isConj_, tensor), true) || truthOf(callMethod(isNeg_, tensor), true);
}

bool TorchTensorReader::gradEnabled() const {
  return truthOf(PyObject_Vectorcall(isGradEnabled_, nullptr, 0, nullptr), true);
}

namespace {

/// A tuple of `values`' integers.
nanobind::tuple tupleOf(llvm::ArrayRef<int64_t> values) {
  nanobind::tuple tuple = nanobind::steal<nanobind::tuple>(PyTuple_New(Py_ssize_t(values.size())));
  for (size_t i = 0; i < values.size(); ++i)
    PyTuple_SET_ITEM(tuple.ptr(), Py_ssize_t(i), PyLong_FromLongLong(values[i]));
  return tuple;
}

/// torch_layout(tensor): (address, torch dtype, sizes, strides, device) of a plain dense torch
/// tensor that widefuse reads as it is (no lazy bit; the CPU or a CUDA device; not requiring
/// grad under grad mode), else None: the Python side then checks it and names what is wrong.
nanobind::object torchLayout(nanobind::handle tensor) {
  TorchTensorReader* reader = TorchTensorReader::get();
  if (!reader || !reader->isPlainTensor(tensor.ptr()))
    return nanobind::none();
  TorchLayout layout;
  TorchFacts facts;
  if (!reader->readPlain(tensor.ptr(), layout, facts))
    return nanobind::none();
  return nanobind::make_tuple(reinterpret_cast<uintptr_t>(layout.data),
                              nanobind::handle(layout.dtype), tupleOf(layout.sizes),
                              tupleOf(layout.strides), facts.device);
}

} // namespace

std::string shortNameOfTorchType(PyObject* torchTypes, PyObject* dtype) {
  PyObject* name = PyDict_GetItem(torchTypes, dtype); // borrowed; no error set
  if (!name || !PyUnicode_Check(name))
    return "";
  Py_ssize_t length = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &length);
  if (!text) {
    PyErr_Clear();
    return "";
  }
  return std::string(text, size_t(length));
}

void bindTorchTensorReader(nanobind::module_& module) {
  module.def("torch_layout", &torchLayout, nanobind::arg("tensor"),
             "(address, dtype, sizes, strides, device: -1 for the CPU) of a plain dense torch "
             "tensor widefuse reads as it is, else None.");
}

} // namespace widefuse::python
