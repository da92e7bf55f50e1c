#include "python_frontend/bindings/structure_key.h"

#include "python_frontend/bindings/bindings.h"

#include "python_frontend/bindings/buffer_arguments.h"
#include "python_frontend/bindings/torch_tensor_reader.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// One walk: the arrays seen so far (by identity) and the key's items.
class StructureWalk {
public:
  StructureWalk(nb::list arrays, nb::handle leaf)
      : arrays_(std::move(arrays)), leaf_(leaf), ndarray_(ndarrayType()),
        torch_(TorchTensorReader::get()) {}

  void walk(nb::handle value) {
    PyObject* object = value.ptr();
    if (isPlainArray(object)) {
      array(value);
    } else if (PyList_Check(object) || PyTuple_Check(object)) {
      key_.push_back(nb::make_tuple(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(object))),
                                    nb::int_(PySequence_Fast_GET_SIZE(object))));
      Py_ssize_t size = PySequence_Fast_GET_SIZE(object);
      PyObject** items = PySequence_Fast_ITEMS(object);
      for (Py_ssize_t i = 0; i < size; ++i) {
        if (isPlainArray(items[i]))
          array(items[i]); // an optimizer's lists: no further call
        else
          walk(items[i]);
      }
    } else if (PyDict_Check(object)) {
      nb::dict dict = nb::borrow<nb::dict>(value);
      key_.push_back(nb::make_tuple(nb::handle(reinterpret_cast<PyObject*>(&PyDict_Type)),
                                    nb::tuple(dict.keys())));
      for (auto [name, item] : dict)
        walk(item);
    } else if (object == Py_None) {
      key_.push_back(nb::none()); // its own key: an optimizer's lists of None cost no call
    } else {
      nb::object constant = leaf_(value);
      if (constant.is_none())
        array(value);
      else
        key_.push_back(std::move(constant));
    }
  }

  nb::tuple key() const {
    nb::tuple key = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(key_.size())));
    for (size_t i = 0; i < key_.size(); ++i)
      PyTuple_SET_ITEM(key.ptr(), Py_ssize_t(i), key_[i].inc_ref().ptr());
    return key;
  }

private:
  bool isPlainArray(PyObject* object) const {
    return Py_TYPE(object) == ndarray_ || (torch_ && torch_->isPlainTensor(object));
  }

  /// An array: a first sighting adds the array marker (...), a repeat the earlier index.
  void array(nb::handle value) {
    auto [found, inserted] = seen_.try_emplace(value.ptr(), arrays_.size());
    if (inserted) {
      arrays_.append(value);
      key_.push_back(nb::borrow(Py_Ellipsis));
    } else {
      key_.push_back(nb::int_(found->second));
    }
  }

  nb::list arrays_;
  nb::handle leaf_;
  PyTypeObject* ndarray_;
  TorchTensorReader* torch_;
  llvm::DenseMap<PyObject*, size_t> seen_;
  std::vector<nb::object> key_;
};

/// One array's layout as arrayLayouts gives it, before it becomes a tuple.
struct Layout {
  std::string dtype; // the short name
  llvm::SmallVector<int64_t, 4> shape;
  llvm::SmallVector<int64_t, 4> strides; // in elements
  bool onDevice = false;

  bool operator<(const Layout& other) const {
    return std::tie(dtype, shape, strides, onDevice) <
           std::tie(other.dtype, other.shape, other.strides, other.onDevice);
  }
};

/// A NumPy array's layout through the buffer protocol; false for anything array_view would
/// refuse or describe otherwise (no buffer, a format widefuse does not read, misaligned,
/// negative strides or strides that are not whole elements).
bool readBufferLayout(PyObject* array, Layout& layout) {
  Py_buffer view;
  if (PyObject_GetBuffer(array, &view, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  std::optional<DataType> type = bufferDataType(view);
  bool readable =
      type && view.itemsize > 0 && reinterpret_cast<uintptr_t>(view.buf) % view.itemsize == 0;
  for (int d = 0; readable && d < view.ndim; ++d) {
    Py_ssize_t stride = view.strides[d];
    readable = stride >= 0 && stride % view.itemsize == 0;
    layout.shape.push_back(view.shape[d]);
    layout.strides.push_back(stride / view.itemsize);
  }
  PyBuffer_Release(&view);
  if (readable)
    layout.dtype = shortName(*type).str();
  return readable;
}

/// A plain torch tensor's layout, as torch_layout reads it; false for one the Python side
/// must look at (a lazy bit, another device, grad required under grad mode, an unknown dtype).
bool readTorchLayout(const TorchTensorReader& reader, PyObject* tensor, nb::dict torchTypes,
                     Layout& layout) {
  TorchLayout read;
  TorchFacts facts;
  if (!reader.readPlain(tensor, read, facts) || facts.device > 0)
    return false;
  layout.dtype = shortNameOfTorchType(torchTypes.ptr(), read.dtype);
  if (layout.dtype.empty())
    return false;
  layout.shape = read.sizes;
  layout.strides = read.strides;
  layout.onDevice = facts.device == 0;
  return true;
}

nb::tuple integers(llvm::ArrayRef<int64_t> values) {
  nb::tuple tuple = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(values.size())));
  for (size_t i = 0; i < values.size(); ++i)
    PyTuple_SET_ITEM(tuple.ptr(), Py_ssize_t(i), PyLong_FromLongLong(values[i]));
  return tuple;
}

} // namespace

nb::list arrayLayouts(nb::list arrays, nb::dict torchTypes) {
  PyTypeObject* ndarray = ndarrayType();
  TorchTensorReader* torch = TorchTensorReader::get();
  // An optimizer's arrays share a few layouts: each is one tuple, looked up by value.
  std::map<Layout, nb::object> tuples;
  nb::list layouts;
  for (nb::handle array : arrays) {
    PyObject* object = array.ptr();
    Layout layout;
    bool read = Py_TYPE(object) == ndarray ? readBufferLayout(object, layout)
                : torch && torch->isPlainTensor(object)
                    ? readTorchLayout(*torch, object, torchTypes, layout)
                    : false;
    if (!read) {
      layouts.append(nb::none());
      continue;
    }
    auto [found, inserted] = tuples.try_emplace(std::move(layout));
    if (inserted)
      found->second =
          nb::make_tuple(nb::str(found->first.dtype.c_str()), integers(found->first.shape),
                         integers(found->first.strides), nb::bool_(found->first.onDevice));
    layouts.append(found->second);
  }
  return layouts;
}

nb::tuple structureKey(nb::handle value, nb::list arrays, nb::handle leaf) {
  StructureWalk walk(std::move(arrays), leaf);
  walk.walk(value);
  return walk.key();
}

void bindStructureKey(nb::module_& module) {
  module.def("structure_key", &structureKey, nb::arg("value"), nb::arg("arrays"), nb::arg("leaf"),
             "A traced call's structure key; appends the call's distinct arrays to `arrays`.");
  module.def("array_layouts", &arrayLayouts, nb::arg("arrays"), nb::arg("torch_types"),
             "Each array's (dtype short name, shape, strides in elements, on device), or None "
             "where the Python side must describe it; torch_types maps torch.dtype to short "
             "names.");
}

} // namespace widefuse::python
