#pragma once
/// A traced call's structure key, walked in C++: the containers, constants and repeated arrays
/// of the call's arguments, without the arrays' layouts (execute()'s steady state compares
/// those; a new trace key reads them with the argument reader's read_layouts).

#include <nanobind/nanobind.h>

namespace widefuse::python {

/// Walks `value` (nested lists, tuples and dicts): appends each distinct array to `arrays` and
/// returns the structure key. NumPy arrays, torch.Tensor and torch.nn.Parameter are taken as
/// arrays at once and None is its own key; every other leaf is handed to `leaf`, which returns
/// None for an array and otherwise the value's constant key (raising for a value a traced
/// function refuses).
nanobind::tuple structureKey(nanobind::handle value, nanobind::list arrays, nanobind::handle leaf);

} // namespace widefuse::python
