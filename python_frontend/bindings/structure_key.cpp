#include "python_frontend/bindings/structure_key.h"

#include "python_frontend/bindings/bindings.h"

#include "python_frontend/bindings/arguments/buffer_reader.h"
#include "python_frontend/bindings/arguments/torch_tensor_reader.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>

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

} // namespace

nb::tuple structureKey(nb::handle value, nb::list arrays, nb::handle leaf) {
  StructureWalk walk(std::move(arrays), leaf);
  walk.walk(value);
  return walk.key();
}

void bindStructureKey(nb::module_& module) {
  module.def("structure_key", &structureKey, nb::arg("value"), nb::arg("arrays"), nb::arg("leaf"),
             "A traced call's structure key; appends the call's distinct arrays to `arrays`.");
}

} // namespace widefuse::python
