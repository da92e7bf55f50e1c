#pragma once
/// NumPy arrays read through Python's buffer protocol: the fast path of execute(), which
/// keeps a step over thousands of arrays from being dominated by Python-side checks. The
/// checks (and their messages) are those of python_frontend/widefuse/arguments.py.

#include "ir/fusion.h"
#include "ir/host_tensor.h"

#include <nanobind/nanobind.h>

namespace widefuse::python {

/// Describes `object`'s buffer as tensor input `input`, after checking its element type,
/// byte order, alignment, strides, the layout `input` declares, and, when `input` is written
/// by copy_, that the buffer is writable. Throws Error naming the input otherwise.
TensorRef tensorFromBuffer(nanobind::handle object, const Value& input, bool written);

} // namespace widefuse::python
