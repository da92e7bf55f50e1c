#include "python_frontend/bindings/buffer_arguments.h"

#include "ir/error.h"
#include "python_frontend/python_printer.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/SwapByteOrder.h>

#include <numeric>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

std::string pythonTypeName(DataType type) {
  return fmt::format("DataType.{}", pythonDataTypeName(type).str());
}

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

/// Raises when the strides break the declared layout: each contiguous dimension must have the
/// dense stride over the next inner one (in stride order); non-contiguous dimensions may have
/// any stride; broadcast dimensions (extent 1, or non-contiguous of stride 0: expanded) are
/// skipped, as nvFuser skips them; and an empty stride order or contiguity means dense
/// row-major.
void checkLayout(const TensorRef& ref, const Value& input) {
  size_t rank = ref.shape.size();
  if (rank != input.rank() || ref.numel() == 0)
    return;
  const TensorLayout& layout = input.layout();
  llvm::SmallVector<int64_t, 4> order;
  for (size_t d = 0; d < rank; ++d)
    order.push_back(layout.strideOrder.empty() ? int64_t(rank - 1 - d) : layout.strideOrder[d]);
  llvm::SmallVector<size_t, 4> innerToOuter(rank);
  std::iota(innerToOuter.begin(), innerToOuter.end(), 0);
  llvm::sort(innerToOuter, [&](size_t a, size_t b) { return order[a] < order[b]; });
  int64_t expected = 1;
  for (size_t d : innerToOuter) {
    int64_t extent = ref.shape[d], stride = ref.strides[d];
    bool contiguous = layout.contiguity.empty() || layout.contiguity[d];
    if (extent == 1 || (stride == 0 && !contiguous))
      continue;
    if (contiguous && stride != expected) {
      llvm::SmallVector<std::string, 4> flags;
      for (size_t e = 0; e < rank; ++e)
        flags.push_back(layout.contiguity.empty() || layout.contiguity[e] ? "True" : "False");
      fail("input '{}': the array's strides ({}) (in elements) do not match the definition's "
           "stride_order [{}] and contiguity [{}]; pass an array with that layout "
           "(np.ascontiguousarray for row-major) or define the tensor with the array's layout",
           input.name(), fmt::join(ref.strides, ", "), fmt::join(order, ", "),
           fmt::join(flags, ", "));
    }
    expected = stride * extent;
  }
}

} // namespace

PyTypeObject* ndarrayType() {
  static PyTypeObject* type = [] {
    nanobind::object ndarray = nanobind::module_::import_("numpy").attr("ndarray");
    return reinterpret_cast<PyTypeObject*>(ndarray.release().ptr());
  }();
  return type;
}

std::optional<DataType> bufferDataType(const Py_buffer& view) {
  return typeOfFormat(view.format ? view.format : "B", view.itemsize);
}

void ReleaseBuffer::operator()(Py_buffer* view) const {
  PyBuffer_Release(view);
  delete view;
}

TensorRef tensorFromBuffer(nb::handle object, const Value& input, bool written,
                           std::vector<HeldBuffer>& held) {
  auto acquired = std::make_unique<Py_buffer>();
  if (PyObject_GetBuffer(object.ptr(), acquired.get(), PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    fail("input '{}': the array's buffer could not be read", input.name());
  }
  held.emplace_back(acquired.release());
  const Py_buffer& view = *held.back();
  std::optional<DataType> type = bufferDataType(view);
  if (!type)
    fail("input '{}': buffer format '{}' is not supported", input.name(),
         view.format ? view.format : "");
  if (*type != input.dtype())
    fail("input '{}' is {}; the array is {}", input.name(), pythonTypeName(input.dtype()),
         pythonTypeName(*type));
  TensorRef ref;
  ref.dtype = *type;
  ref.data = view.buf;
  if (reinterpret_cast<uintptr_t>(view.buf) % view.itemsize != 0)
    fail("input '{}': the array is not aligned to its element size", input.name());
  for (int d = 0; d < view.ndim; ++d) {
    Py_ssize_t stride = view.strides[d];
    if (stride < 0)
      fail("input '{}': negative strides are not supported; pass a copy "
           "(np.ascontiguousarray)",
           input.name());
    if (stride % view.itemsize != 0)
      fail("input '{}': strides are not multiples of the element size {}", input.name(),
           view.itemsize);
    ref.shape.push_back(view.shape[d]);
    ref.strides.push_back(stride / view.itemsize);
  }
  checkLayout(ref, input);
  if (written && view.readonly)
    fail("input '{}' is updated in place (add_output alias / copy_) but the array is read-only",
         input.name());
  return ref;
}

} // namespace widefuse::python
