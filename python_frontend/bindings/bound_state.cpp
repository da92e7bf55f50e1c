// bound_state_unchanged: widefuse.optim's prepared step checks, before each launch, that the
// optimizer's state is still the dicts and tensors it was bound to, on the same memory
// (step_fusion.py, PreparedStep.state_unchanged). Done here because it runs on every step
// over every state tensor: in Python it cost about 0.6 us a tensor.
#include "python_frontend/bindings/arguments/torch_tensor_reader.h"
#include "python_frontend/bindings/bindings.h"

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// The item of list `list` at `i` (borrowed; the caller sized the lists).
PyObject* item(nb::handle list, Py_ssize_t i) {
  return PyList_GET_ITEM(list.ptr(), i);
}

/// Whether `state` (the optimizer's, a dict) maps `params[i]` to `bounds[i]` for every i, and
/// for every entry j: `bounds[owners[j]]` maps `keys[j]` to `tensors[j]`, and `locals[j]` (the
/// tensor, or a DTensor's local shard) is at `addresses[j]`. False at the first difference;
/// throws only what a key's hash raises.
bool boundStateUnchanged(nb::dict state, nb::list params, nb::list bounds, nb::list owners,
                         nb::list keys, nb::list tensors, nb::list locals, nb::list addresses) {
  Py_ssize_t count = PyList_GET_SIZE(params.ptr()), entries = PyList_GET_SIZE(keys.ptr());
  if (PyList_GET_SIZE(bounds.ptr()) != count || PyList_GET_SIZE(owners.ptr()) != entries ||
      PyList_GET_SIZE(tensors.ptr()) != entries || PyList_GET_SIZE(locals.ptr()) != entries ||
      PyList_GET_SIZE(addresses.ptr()) != entries)
    throw nb::value_error("bound_state_unchanged: the lists differ in length");
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* found = PyDict_GetItemWithError(state.ptr(), item(params, i));
    if (!found && PyErr_Occurred())
      throw nb::python_error();
    if (found != item(bounds, i))
      return false;
  }
  const TorchTensorReader* reader = TorchTensorReader::get();
  void* data = nullptr;
  for (Py_ssize_t j = 0; j < entries; ++j) {
    Py_ssize_t owner = PyLong_AsSsize_t(item(owners, j));
    if (owner < 0 || owner >= count)
      throw nb::value_error("bound_state_unchanged: an owner outside the parameters");
    PyObject* found = PyDict_GetItemWithError(item(bounds, owner), item(keys, j));
    if (!found && PyErr_Occurred())
      throw nb::python_error();
    if (found != item(tensors, j))
      return false;
    PyObject* local = item(locals, j);
    if (!reader || !reader->isPlainTensor(local) || !reader->readData(local, data))
      return false; // not read here: the caller prepares again, which checks it
    if (reinterpret_cast<uintptr_t>(data) != PyLong_AsSize_t(item(addresses, j)))
      return false;
  }
  return true;
}

} // namespace

void bindBoundState(nb::module_& module) {
  module.def("bound_state_unchanged", &boundStateUnchanged, nb::arg("state"), nb::arg("params"),
             nb::arg("bounds"), nb::arg("owners"), nb::arg("keys"), nb::arg("tensors"),
             nb::arg("locals"), nb::arg("addresses"),
             "Whether an optimizer's state still holds, per parameter, the dict it was bound "
             "to and, per entry, the tensor under its key, on the same memory.");
}

} // namespace widefuse::python
