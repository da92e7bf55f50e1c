#include "python_frontend/bindings/arguments/buffer_reader.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SwapByteOrder.h>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// The data type of a struct-module format character (or `Zf`/`Zd`, a complex pair) of a
/// native-order buffer.
std::optional<DataType> typeOfFormat(llvm::StringRef format, Py_ssize_t itemSize) {
  if (!format.empty() && (format.front() == '@' || format.front() == '=' ||
                          (format.front() == '<' && llvm::sys::IsLittleEndianHost)))
    format = format.drop_front();
  std::optional<DataType> type;
  if (format == "Zf") // a complex pair (PEP 3118): NumPy's complex64
    type = DataType::ComplexFloat;
  else if (format == "Zd")
    type = DataType::ComplexDouble;
  if (type)
    return static_cast<Py_ssize_t>(byteSize(*type)) == itemSize ? type : std::nullopt;
  if (format.size() != 1)
    return std::nullopt;
  switch (format.front()) {
  case '?':
    type = DataType::Bool;
    break;
  case 'b':
    type = DataType::Int8;
    break;
  case 'h':
    type = DataType::Int16;
    break;
  case 'i':
    type = DataType::Int32;
    break;
  case 'l':
  case 'q':
    type = DataType::Int64;
    break;
  case 'B':
    type = DataType::UInt8;
    break;
  case 'H':
    type = DataType::UInt16;
    break;
  case 'I':
    type = DataType::UInt32;
    break;
  case 'e':
    type = DataType::Half;
    break;
  case 'f':
    type = DataType::Float;
    break;
  case 'd':
    type = DataType::Double;
    break;
  default:
    return std::nullopt;
  }
  if (static_cast<Py_ssize_t>(byteSize(*type)) != itemSize)
    return std::nullopt;
  return type;
}

} // namespace

PyTypeObject* ndarrayType() {
  static PyTypeObject* type = [] {
    nanobind::object ndarray = nanobind::module_::import_("numpy").attr("ndarray");
    return reinterpret_cast<PyTypeObject*>(ndarray.release().ptr());
  }();
  return type;
}

PyTypeObject* numpyScalarType() {
  static PyTypeObject* type = [] {
    nanobind::object generic = nanobind::module_::import_("numpy").attr("generic");
    return reinterpret_cast<PyTypeObject*>(generic.release().ptr());
  }();
  return type;
}

HeldBuffer bufferOf(PyObject* object) {
  auto view = std::make_unique<Py_buffer>();
  if (PyObject_GetBuffer(object, view.get(), PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return nullptr;
  }
  return HeldBuffer(view.release());
}

std::optional<DataType> bufferDataType(const Py_buffer& view) {
  return typeOfFormat(view.format ? view.format : "B", view.itemsize);
}

void ReleaseBuffer::operator()(Py_buffer* view) const {
  PyBuffer_Release(view);
  delete view;
}

} // namespace widefuse::python
