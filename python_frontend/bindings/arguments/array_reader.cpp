// readArray: one Python object as an array. The checks and their order are those widefuse
// has always made of an array (NumPy's dtype, alignment, strides; torch's layout, lazy bits,
// device, grad, dtype; a CUDA array's device, type and strides; a DLPack export's device), so
// that each refusal names the first thing wrong.
#include "python_frontend/bindings/arguments/array_reader.h"

#include "python_frontend/bindings/arguments/torch_tensor_reader.h"

#include "ir/error.h"

#include <llvm/ADT/DenseMap.h>
#include <nanobind/ndarray.h>
// Every translation unit that casts a std::string must see its caster.
#include <nanobind/stl/string.h>

#include <cstring>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

// DLPack device types (dlpack.h): CPU, CUDA, pinned host memory, managed memory.
constexpr int kDlpackCpu = 1, kDlpackCuda = 2, kDlpackCudaHost = 3, kDlpackCudaManaged = 13;

/// `object.name`, or an invalid object when it has none (an AttributeError, cleared); throws
/// any other error.
nb::object attributeOrNone(nb::handle object, const char* name) {
  PyObject* found = PyObject_GetAttrString(object.ptr(), name);
  if (!found) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
      throw nb::python_error();
    PyErr_Clear();
  }
  return nb::steal(found);
}

/// `mapping[key]`; throws the Python error (KeyError) when it is missing.
nb::object itemOf(nb::handle mapping, const char* key) {
  PyObject* found = PyMapping_GetItemString(mapping.ptr(), key);
  if (!found)
    throw nb::python_error();
  return nb::steal(found);
}

/// `mapping.get(key)` of a dict (None when missing).
nb::object getOf(nb::handle mapping, const char* key) {
  PyObject* found = PyMapping_GetItemString(mapping.ptr(), key);
  if (!found) {
    if (!PyErr_ExceptionMatches(PyExc_KeyError))
      throw nb::python_error();
    PyErr_Clear();
    return nb::none();
  }
  return nb::steal(found);
}

/// The integers of a sequence; throws on a read that raises.
void integersOf(nb::handle sequence, llvm::SmallVectorImpl<int64_t>& values) {
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

nb::tuple tupleOf(llvm::ArrayRef<int64_t> values) {
  nb::tuple tuple = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(values.size())));
  for (size_t i = 0; i < values.size(); ++i)
    PyTuple_SET_ITEM(tuple.ptr(), Py_ssize_t(i), PyLong_FromLongLong(values[i]));
  return tuple;
}

bool refuse(Refusal& refusal, RefusalCode code) {
  refusal.code = code;
  refusal.facts = nb::dict();
  return false;
}

/// NumPy's alignment of an element type: a complex type's is its part's.
int64_t alignmentOf(DataType type) {
  int64_t size = int64_t(byteSize(type));
  return isComplex(type) ? size / 2 : size;
}

/// Byte strides to element strides, refusing negative strides and strides of part elements
/// (stride by stride, as they come).
bool elementStrides(llvm::ArrayRef<int64_t> byteStrides, int64_t itemSize, TensorRef& ref,
                    Refusal& refusal) {
  ref.strides.clear();
  for (int64_t stride : byteStrides) {
    if (stride < 0 || stride % itemSize != 0) {
      refuse(refusal, stride < 0 ? RefusalCode::NegativeStrides : RefusalCode::StridesNotElements);
      refusal.facts["strides"] = tupleOf(byteStrides);
      refusal.facts["itemsize"] = itemSize;
      return false;
    }
    ref.strides.push_back(stride / itemSize);
  }
  return true;
}

/// A NumPy array laid out at `address` with these byte strides: NumPy's alignment (no
/// element: aligned; else the address and the strides of dimensions past 1), then the strides.
bool readNumpyLayout(uintptr_t address, llvm::ArrayRef<int64_t> byteStrides, ArrayRead& read,
                     Refusal& refusal) {
  const TensorRef& ref = read.ref;
  uintptr_t check = address;
  bool empty = false;
  for (size_t d = 0; d < ref.shape.size(); ++d) {
    empty |= ref.shape[d] == 0;
    if (ref.shape[d] > 1)
      check |= uintptr_t(byteStrides[d]);
  }
  if (!empty && check % uintptr_t(alignmentOf(ref.dtype)) != 0)
    return refuse(refusal, RefusalCode::NotAligned);
  read.ref.data = reinterpret_cast<void*>(address);
  return elementStrides(byteStrides, int64_t(byteSize(ref.dtype)), read.ref, refusal);
}

/// A NumPy array (or subclass): through the buffer protocol for the types it exports, else
/// through its dtype (the table) and array interface.
bool readNumpy(PyObject* array, const DtypeTables& tables, ArrayRead& read, Refusal& refusal) {
  if (HeldBuffer view = bufferOf(array)) {
    if (std::optional<DataType> type = bufferDataType(*view)) {
      read.ref.dtype = *type;
      read.ref.shape.assign(view->shape, view->shape + view->ndim);
      llvm::SmallVector<int64_t, 4> strides(view->strides, view->strides + view->ndim);
      read.readOnly = view->readonly;
      read.source = ArraySource::Buffer;
      uintptr_t address = reinterpret_cast<uintptr_t>(view->buf);
      read.held = std::move(view);
      return readNumpyLayout(address, strides, read, refusal);
    }
  }
  nb::object dtype = nb::handle(array).attr("dtype");
  std::optional<DataType> type = dataTypeIn(tables.numpy, dtype.ptr());
  if (!type) {
    refuse(refusal, RefusalCode::NumpyDtype);
    refusal.facts["dtype"] = dtype;
    return false;
  }
  nb::object interface = nb::handle(array).attr("__array_interface__");
  nb::object data = itemOf(interface, "data");
  read.ref.dtype = *type;
  integersOf(nb::handle(array).attr("shape"), read.ref.shape);
  llvm::SmallVector<int64_t, 4> strides;
  integersOf(nb::handle(array).attr("strides"), strides);
  read.readOnly = nb::cast<bool>(nb::handle(data)[1]);
  read.source = ArraySource::NumpyInterface;
  return readNumpyLayout(nb::cast<uintptr_t>(nb::handle(data)[0]), strides, read, refusal);
}

/// The refusal of a torch tensor checkTensor refused.
RefusalCode codeOf(TorchRefusal refusal) {
  switch (refusal) {
  case TorchRefusal::Layout:
    return RefusalCode::TorchLayout;
  case TorchRefusal::Quantized:
    return RefusalCode::TorchQuantized;
  case TorchRefusal::Conjugated:
    return RefusalCode::TorchConjugated;
  case TorchRefusal::Negated:
    return RefusalCode::TorchNegated;
  case TorchRefusal::Meta:
    return RefusalCode::TorchMeta;
  case TorchRefusal::Device:
    return RefusalCode::TorchDevice;
  case TorchRefusal::RequiresGrad:
  case TorchRefusal::None:
    break;
  }
  return RefusalCode::RequiresGrad;
}

/// The data type of a torch.dtype. torch's dtypes are singletons that live as long as torch,
/// so each one found is remembered by address.
std::optional<DataType> torchDataType(const DtypeTables& tables, PyObject* dtype) {
  static llvm::DenseMap<PyObject*, DataType> found;
  auto known = found.find(dtype);
  if (known != found.end())
    return known->second;
  std::optional<DataType> type = dataTypeIn(tables.torch, dtype);
  if (type)
    found.try_emplace(dtype, *type);
  return type;
}

bool readTorch(const TorchTensorReader& torch, PyObject* tensor, const DtypeTables& tables,
               bool allowGrad, ArrayRead& read, Refusal& refusal) {
  TorchLayout layout;
  TorchFacts facts;
  std::optional<DataType> type;
  read.plainTorch = torch.isPlainTensor(tensor) &&
                    torch.readPlain(tensor, layout, facts, allowGrad) &&
                    (type = torchDataType(tables, layout.dtype));
  if (!read.plainTorch) {
    TorchCheck check = torch.checkTensor(tensor, allowGrad, layout, facts);
    if (check.refusal != TorchRefusal::None) {
      refuse(refusal, codeOf(check.refusal));
      if (check.fact.is_valid())
        refusal.facts["fact"] = check.fact;
      return false;
    }
    type = torchDataType(tables, layout.dtype);
    if (!type) {
      refuse(refusal, RefusalCode::TorchDtype);
      refusal.facts["dtype"] = nb::handle(layout.dtype);
      return false;
    }
  }
  read.source = ArraySource::Torch;
  read.ref.dtype = *type;
  read.ref.data = layout.data;
  read.ref.shape = layout.sizes;
  read.ref.strides = layout.strides;
  read.torchDevice = facts.device;
  read.torchDtype = layout.dtype;
  read.onDevice = facts.device >= 0;
  return true;
}

/// The CUDA device ordinal the producer says `object` lives on (torch: `device.index`, CuPy:
/// `device.id`); nullopt when it does not say. The interface itself names no device.
std::optional<long> producerDevice(nb::handle object) {
  nb::object device = attributeOrNone(object, "device");
  if (!device.is_valid())
    return std::nullopt;
  for (const char* name : {"index", "id"}) {
    nb::object ordinal = attributeOrNone(device, name);
    if (ordinal.is_valid() && PyLong_Check(ordinal.ptr()))
      return PyLong_AsLong(ordinal.ptr());
  }
  return std::nullopt;
}

/// The stream the producer's work on device array `object` is queued on: `stream` (the CUDA
/// array interface's, version 3) when given, else torch's current one for a torch object
/// (whose interfaces name none); nullopt means the legacy default stream.
std::optional<uintptr_t> producerStream(nb::handle object, nb::handle stream) {
  if (stream.is_valid() && !stream.is_none())
    return nb::cast<uintptr_t>(stream);
  nb::object module =
      nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(object.ptr()))).attr("__module__");
  TorchTensorReader* torch = TorchTensorReader::get();
  if (torch && PyUnicode_Check(module.ptr()) &&
      PyUnicode_Tailmatch(module.ptr(), nb::str("torch").ptr(), 0, PY_SSIZE_T_MAX, -1) == 1) {
    std::optional<long> device = producerDevice(object);
    return torch->currentStream(device ? int(*device) : 0);
  }
  return std::nullopt;
}

bool readCudaInterface(nb::handle object, nb::handle interface, const DtypeTables& tables,
                       ArrayRead& read, Refusal& refusal) {
  nb::object typestr = itemOf(interface, "typestr");
  PyObject* made =
      PyObject_CallOneArg(nb::module_::import_("numpy").attr("dtype").ptr(), typestr.ptr());
  if (!made) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError))
      throw nb::python_error();
    PyErr_Clear();
    refuse(refusal, RefusalCode::ArrayType);
    refusal.facts["typestr"] = typestr;
    return false;
  }
  nb::object dtype = nb::steal(made);
  std::optional<DataType> type = dataTypeIn(tables.numpy, dtype.ptr());
  if (!type) {
    refuse(refusal, RefusalCode::NumpyDtype);
    refusal.facts["dtype"] = dtype;
    return false;
  }
  read.ref.dtype = *type;
  integersOf(itemOf(interface, "shape"), read.ref.shape);
  nb::object strides = getOf(interface, "strides");
  nb::object data = itemOf(interface, "data");
  read.ref.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(nb::handle(data)[0]));
  read.readOnly = nb::cast<bool>(nb::handle(data)[1]);
  read.source = ArraySource::CudaInterface;
  read.onDevice = true;
  if (strides.is_none()) {
    read.ref.strides = contiguousStrides(read.ref.shape);
  } else {
    llvm::SmallVector<int64_t, 4> byteStrides;
    integersOf(strides, byteStrides);
    if (!elementStrides(byteStrides, int64_t(byteSize(*type)), read.ref, refusal))
      return false;
  }
  read.interfaceStream = getOf(interface, "stream");
  return true;
}

/// The data type of a DLPack type; Error for one widefuse lacks.
DataType dataTypeOfDlpack(nb::dlpack::dtype type) {
  using Code = nb::dlpack::dtype_code;
  auto code = static_cast<Code>(type.code);
  std::string name;
  if (type.lanes == 1) {
    if (code == Code::Bool && type.bits == 8)
      name = "b8";
    else if (code == Code::Int && type.bits <= 64)
      name = fmt::format("i{}", type.bits);
    else if (code == Code::UInt && type.bits <= 32)
      name = fmt::format("u{}", type.bits);
    else if (code == Code::Float && type.bits >= 16 && type.bits <= 64)
      name = fmt::format("f{}", type.bits);
    else if (code == Code::Bfloat && type.bits == 16)
      name = "bf16";
    else if (code == Code::Complex && (type.bits == 64 || type.bits == 128))
      name = fmt::format("c{}", type.bits);
    for (DataType float8 :
         {DataType::Float8_e4m3fn, DataType::Float8_e5m2, DataType::Float8_e8m0fnu})
      if (code == float8DlpackCode(float8) && type.bits == 8)
        name = shortName(float8).str();
  }
  std::optional<DataType> parsed = name.empty() ? std::nullopt : parseDataType(name);
  if (!parsed)
    fail("DLPack data type (code {}, {} bits, {} lanes) has no widefuse equivalent",
         static_cast<int>(type.code), type.bits, type.lanes);
  return *parsed;
}

bool readDlpack(nb::handle object, ArrayRead& read, Refusal& refusal) {
  // A writable import fails for exports flagged read-only (DLPack 1.x); then import read-only.
  nb::ndarray<nb::ro> array;
  nb::ndarray<> writable;
  std::string failure;
  try {
    if (nb::try_cast(object, writable)) {
      array = nb::ndarray<nb::ro>(writable);
    } else if (nb::try_cast(object, array)) {
      read.readOnly = true;
    } else {
      fail("the object's __dlpack__ export could not be read");
    }
    read.ref.dtype = dataTypeOfDlpack(array.dtype());
  } catch (const Error& error) {
    failure = error.what();
  }
  if (!failure.empty()) {
    // The producer's own reason (torch: a tensor that requires grad) is clearer.
    refuse(refusal, RefusalCode::DlpackExport);
    refusal.facts["message"] = failure;
    refusal.facts["reason"] = nb::none();
    PyObject* exported = PyObject_CallMethod(object.ptr(), "__dlpack__", nullptr);
    if (exported) {
      Py_DECREF(exported);
    } else {
      PyObject *type, *value, *traceback;
      PyErr_Fetch(&type, &value, &traceback);
      PyErr_NormalizeException(&type, &value, &traceback);
      if (traceback)
        PyException_SetTraceback(value, traceback);
      refusal.facts["reason"] = nb::steal(value);
      Py_XDECREF(type);
      Py_XDECREF(traceback);
    }
    return false;
  }
  int deviceType = array.device_type();
  if (deviceType != kDlpackCpu && deviceType != kDlpackCuda && deviceType != kDlpackCudaHost &&
      deviceType != kDlpackCudaManaged) {
    refuse(refusal, RefusalCode::DlpackDevice);
    refusal.facts["device_type"] = deviceType;
    return false;
  }
  read.onDevice = deviceType == kDlpackCuda || deviceType == kDlpackCudaManaged;
  read.source = ArraySource::Dlpack;
  read.ref.data = const_cast<void*>(array.data());
  for (size_t d = 0; d < array.ndim(); ++d) {
    read.ref.shape.push_back(array.shape(d));
    read.ref.strides.push_back(array.stride(d));
  }
  return true;
}

} // namespace

std::optional<nb::dlpack::dtype_code> float8DlpackCode(DataType type) {
  using Code = nb::dlpack::dtype_code;
  switch (type) {
  case DataType::Float8_e4m3fn:
    return Code::Float8_E4M3FN;
  case DataType::Float8_e5m2:
    return Code::Float8_E5M2;
  case DataType::Float8_e8m0fnu:
    return Code::Float8_E8M0FNU;
  default:
    return std::nullopt;
  }
}

std::optional<DataType> dataTypeIn(PyObject* table, PyObject* dtype) {
  if (!table || !PyDict_Check(table))
    return std::nullopt;
  PyObject* name = PyDict_GetItemWithError(table, dtype); // borrowed
  if (!name) {
    PyErr_Clear(); // an unhashable dtype: not in the table
    return std::nullopt;
  }
  const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
  return text ? parseDataType(text) : std::nullopt;
}

std::optional<ScalarArgument> exactNumber(PyObject* object) {
  if (PyFloat_CheckExact(object))
    return ScalarArgument(PyFloat_AS_DOUBLE(object));
  if (PyBool_Check(object))
    return ScalarArgument(object == Py_True);
  if (PyLong_CheckExact(object)) {
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow != 0 || (value == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return std::nullopt;
    }
    return ScalarArgument(int64_t(value));
  }
  return std::nullopt;
}

std::optional<uintptr_t> readStream(PyObject* object, const ArrayRead& read) {
  if (!read.onDevice)
    return std::nullopt;
  if (read.source == ArraySource::Torch)
    return TorchTensorReader::get()->currentStream(read.torchDevice);
  return producerStream(object, read.interfaceStream);
}

bool readArray(PyObject* object, const DtypeTables& tables, bool allowGrad, ArrayRead& read,
               Refusal& refusal) {
  if (PyObject_TypeCheck(object, ndarrayType()))
    return readNumpy(object, tables, read, refusal);
  TorchTensorReader* torch = TorchTensorReader::get();
  if (torch && (torch->isPlainTensor(object) || torch->isTensor(object)))
    return readTorch(*torch, object, tables, allowGrad, read, refusal);
  // torch raises for types the CUDA array interface lacks (bfloat16): then DLPack.
  PyObject* interface = PyObject_GetAttrString(object, "__cuda_array_interface__");
  if (!interface)
    PyErr_Clear();
  if (interface && interface != Py_None)
    return readCudaInterface(object, nb::steal(interface), tables, read, refusal);
  Py_XDECREF(interface);
  if (PyObject_HasAttrString(object, "__dlpack__"))
    return readDlpack(object, read, refusal);
  if (PyObject_HasAttrString(object, "__array_interface__")) {
    read.keep = nb::module_::import_("numpy").attr("asarray")(nb::handle(object));
    return readNumpy(read.keep.ptr(), tables, read, refusal);
  }
  refuse(refusal, RefusalCode::NotAnArray);
  refusal.facts["type"] = nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(object)));
  return false;
}

} // namespace widefuse::python
