#pragma once
/// A traced call's structure key, walked in C++: the containers, constants and repeated arrays
/// of the call's arguments, without the arrays' layouts (execute()'s steady state compares
/// those). The walk is the Python tracer's `_collect` (widefuse/tracer.py) without the layouts,
/// which the checked path still uses: both take the same arrays in the same order.

#include <nanobind/nanobind.h>

namespace widefuse::python {

/// Walks `value` (nested lists, tuples and dicts): appends each distinct array to `arrays` and
/// returns the structure key. NumPy arrays, torch.Tensor and torch.nn.Parameter are taken as
/// arrays at once and None is its own key; every other leaf is handed to `leaf`, which returns
/// None for an array and otherwise the value's constant key (raising for a value a traced
/// function refuses).
nanobind::tuple structureKey(nanobind::handle value, nanobind::list arrays, nanobind::handle leaf);

/// The layout of each array in `arrays`, the rest of a trace key after the structure key:
/// (dtype short name, shape, strides in elements, whether in device memory), what the Python
/// tracer's array views give (widefuse/arguments.py array_view), read here for aligned NumPy
/// arrays of a buffer format widefuse reads and for plain dense torch tensors on the CPU or
/// CUDA device 0 that need no grad (`torchTypes` maps their torch.dtype to a short name). None
/// for any other array: the Python side describes it, or says what is wrong with it. Equal
/// layouts of one call are one tuple object.
nanobind::list arrayLayouts(nanobind::list arrays, nanobind::dict torchTypes);

} // namespace widefuse::python
