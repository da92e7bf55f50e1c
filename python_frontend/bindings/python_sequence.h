#pragma once
/// A call's list or tuple of Python objects, read without the sequence protocol's calls: the
/// argument reader and the steady state walk the same sequences.

#include <Python.h>

#include <cstddef>

namespace widefuse::python {

/// The size of `objects` when it is a list or tuple, else -1.
inline Py_ssize_t sequenceSize(PyObject* objects) {
  if (PyList_Check(objects))
    return PyList_GET_SIZE(objects);
  if (PyTuple_Check(objects))
    return PyTuple_GET_SIZE(objects);
  return -1;
}

/// The i-th object of list or tuple `objects` (borrowed); the caller checked the size.
inline PyObject* sequenceItem(PyObject* objects, size_t i) {
  return PyList_Check(objects) ? PyList_GET_ITEM(objects, Py_ssize_t(i))
                               : PyTuple_GET_ITEM(objects, Py_ssize_t(i));
}

} // namespace widefuse::python
