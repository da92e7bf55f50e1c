#pragma once
/// NumPy arrays read through Python's buffer protocol: the argument reader's fast way into a
/// NumPy array of a standard element type (argument_reader.h), and what the steady state
/// compares a NumPy array by (steady_inputs.h).

#include "ir/data_type.h"

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>

namespace widefuse::python {

/// Releases a buffer view (the GIL must be held).
struct ReleaseBuffer {
  void operator()(Py_buffer* view) const;
};
/// A buffer view held while a run uses its memory.
using HeldBuffer = std::unique_ptr<Py_buffer, ReleaseBuffer>;

/// numpy.ndarray (widefuse imports NumPy, so it is loaded).
PyTypeObject* ndarrayType();

/// numpy.generic, the base of NumPy's scalar types.
PyTypeObject* numpyScalarType();

/// A strided view of `object`'s buffer (PyBUF_RECORDS_RO); null, the error cleared, when the
/// object exports none (NumPy exports no buffer of ml_dtypes' types).
HeldBuffer bufferOf(PyObject* object);

/// The data type of a buffer view's elements (native byte order), nullopt for a format
/// widefuse does not read.
std::optional<DataType> bufferDataType(const Py_buffer& view);

} // namespace widefuse::python
