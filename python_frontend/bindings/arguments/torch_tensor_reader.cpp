#include "python_frontend/bindings/arguments/torch_tensor_reader.h"

#include <llvm/ADT/ArrayRef.h>

namespace nb = nanobind;

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
  Py_INCREF(torch);
  torch_ = torch;
  PyObject* tensor = attribute(torch, "Tensor");
  PyObject* nn = attribute(torch, "nn");
  PyObject* parameter = nn ? attribute(nn, "Parameter") : nullptr;
  PyObject* base = tensor ? attribute(tensor, "__base__") : nullptr; // torch._C.TensorBase
  PyObject* core = attribute(torch, "_C");
  Py_XDECREF(nn);
  if (!tensor || !parameter || !base || !core || !PyType_Check(tensor) || !PyType_Check(parameter))
    return false;
  tensorClass_ = tensor;
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

bool TorchTensorReader::readData(PyObject* tensor, void*& data) const {
  PyObject* address = callMethod(dataPtr_, tensor);
  if (!address) {
    PyErr_Clear();
    return false;
  }
  data = PyLong_AsVoidPtr(address);
  Py_DECREF(address);
  return true;
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

bool TorchTensorReader::readPlain(PyObject* tensor, TorchLayout& layout, TorchFacts& facts,
                                  bool allowGrad) const {
  return readLayout(tensor, layout) && readFacts(tensor, facts) && facts.strided &&
         !facts.conjugated && !facts.negated && facts.device != -2 &&
         (allowGrad || !(requiresGrad(tensor) && gradEnabled()));
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

bool TorchTensorReader::isTensor(PyObject* object) const {
  int is = PyObject_IsInstance(object, tensorClass_);
  if (is < 0)
    throw nb::python_error();
  return is == 1;
}

namespace {

/// `object.name` (a new reference); throws the Python error when the read raises.
nb::object read(nb::handle object, const char* name) {
  PyObject* found = PyObject_GetAttrString(object.ptr(), name);
  if (!found)
    throw nb::python_error();
  return nb::steal(found);
}

/// `object.name()`; throws the Python error when the call raises.
nb::object call(nb::handle object, const char* name) {
  nb::object method = read(object, name);
  PyObject* result = PyObject_CallNoArgs(method.ptr());
  if (!result)
    throw nb::python_error();
  return nb::steal(result);
}

bool truth(const nb::object& object) {
  int value = PyObject_IsTrue(object.ptr());
  if (value < 0)
    throw nb::python_error();
  return value == 1;
}

/// The integers of a sequence (torch.Size, a stride tuple); throws on a read that raises.
void integers(const nb::object& sequence, llvm::SmallVectorImpl<int64_t>& values) {
  nb::object tuple = nb::steal(PySequence_Tuple(sequence.ptr()));
  if (!tuple.is_valid())
    throw nb::python_error();
  values.clear();
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple.ptr()); ++i) {
    long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple.ptr(), i));
    if (value == -1 && PyErr_Occurred())
      throw nb::python_error();
    values.push_back(value);
  }
}

} // namespace

TorchCheck TorchTensorReader::checkTensor(PyObject* tensor, bool allowGrad, TorchLayout& layout,
                                          TorchFacts& facts) const {
  nb::handle self(tensor);
  nb::object tensorLayout = read(self, "layout");
  if (tensorLayout.ptr() != strided_)
    return {TorchRefusal::Layout, tensorLayout};
  if (truth(read(self, "is_quantized")))
    return {TorchRefusal::Quantized, read(self, "dtype")};
  if (truth(call(self, "is_conj")))
    return {TorchRefusal::Conjugated, nb::object()};
  if (truth(call(self, "is_neg")))
    return {TorchRefusal::Negated, nb::object()};
  nb::object device = read(self, "device");
  nb::object type = read(device, "type");
  if (PyUnicode_Check(type.ptr()) && PyUnicode_CompareWithASCIIString(type.ptr(), "meta") == 0)
    return {TorchRefusal::Meta, nb::object()};
  bool cpu =
      PyUnicode_Check(type.ptr()) && PyUnicode_CompareWithASCIIString(type.ptr(), "cpu") == 0;
  bool cuda =
      PyUnicode_Check(type.ptr()) && PyUnicode_CompareWithASCIIString(type.ptr(), "cuda") == 0;
  if (!cpu && !cuda)
    return {TorchRefusal::Device, device};
  long ordinal = -1;
  if (cuda) {
    nb::object index = read(device, "index");
    ordinal = PyLong_Check(index.ptr()) ? PyLong_AsLong(index.ptr()) : 0;
    if (PyErr_Occurred())
      throw nb::python_error();
  }
  if (!allowGrad && truth(read(self, "requires_grad")) && gradEnabled())
    return {TorchRefusal::RequiresGrad, nb::object()};
  nb::object dtype = read(self, "dtype");
  layout.dtype = dtype.ptr(); // a singleton, alive as long as torch: no reference kept
  nb::object address = call(self, "data_ptr");
  layout.data = PyLong_AsVoidPtr(address.ptr());
  if (PyErr_Occurred())
    throw nb::python_error();
  integers(read(self, "shape"), layout.sizes);
  integers(call(self, "stride"), layout.strides);
  facts.strided = true;
  facts.conjugated = facts.negated = false;
  facts.device = int(ordinal);
  return {};
}

size_t TorchTensorReader::rank(PyObject* tensor) const {
  nb::object ndim = read(nb::handle(tensor), "ndim");
  Py_ssize_t value = PyLong_AsSsize_t(ndim.ptr());
  if (value == -1 && PyErr_Occurred())
    throw nb::python_error();
  return size_t(value);
}

uintptr_t TorchTensorReader::currentStream(int device) const {
  nb::object stream = read(read(nb::handle(torch_), "cuda"), "current_stream")(device);
  return nb::cast<uintptr_t>(read(stream, "cuda_stream"));
}

} // namespace widefuse::python
