#pragma once
/// NumPy arrays read through Python's buffer protocol: the fast path of execute(), which
/// keeps a step over thousands of arrays from being dominated by Python-side checks. The
/// checks (and their messages) are those of python_frontend/widefuse/arguments.py.

#include "ir/fusion.h"
#include "ir/host_tensor.h"

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <vector>

namespace widefuse::python {

/// Releases a buffer view (the GIL must be held).
struct ReleaseBuffer {
  void operator()(Py_buffer* view) const;
};
/// A buffer view held while a run uses its memory.
using HeldBuffer = std::unique_ptr<Py_buffer, ReleaseBuffer>;

/// numpy.ndarray (widefuse imports NumPy, so it is loaded).
PyTypeObject* ndarrayType();

/// The data type of a buffer view's elements (native byte order), nullopt for a format
/// widefuse does not read.
std::optional<DataType> bufferDataType(const Py_buffer& view);

/// Describes `object`'s buffer as tensor input `input`, after checking its element type,
/// byte order, alignment, strides, the layout `input` declares, and, when `input` is written
/// by copy_, that the buffer is writable. Throws Error naming the input otherwise. The view is
/// appended to `held`, which the caller keeps until the run is over.
TensorRef tensorFromBuffer(nanobind::handle object, const Value& input, bool written,
                           std::vector<HeldBuffer>& held);

} // namespace widefuse::python
