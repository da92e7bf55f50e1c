#pragma once
/// Traced values: `_widefuse.TracedValue`, the C++ base of the Python package's values
/// (widefuse.values.Value, and so Tensor and Scalar), and the recording hot path that adds a
/// pointwise op of them in one call (`_widefuse.record`).

#include "python_frontend/bindings/py_definition.h"

#include <nanobind/nanobind.h>

namespace widefuse::python {

/// A value of a Python FusionDefinition: what it belongs to and what it stands for. The
/// Python classes that extend it (Tensor, Scalar) add the torch-style surface; the fields are
/// the extension's (read from Python as `definition`, `handle`, `input_handle`, `depends`).
struct TracedValue {
  /// The Python FusionDefinition (values.py's Builder): where ops the recording hot path
  /// declines go, and `value.definition`.
  nanobind::object definition;
  /// The `_Definition` (PyDefinition) the value's ops are recorded in.
  nanobind::object builder;
  /// The `_Value` handle the value stands for now (an in-place write or `out=` moves it).
  nanobind::object handle;
  /// The `_Value` handle it was made with: the fusion input a tensor input's value stands
  /// for, even after an in-place write moved `handle`.
  nanobind::object input;
  /// A frozenset: the names of the specializable runtime scalars the value is computed from
  /// (see SpecializationRequest); empty for most values.
  nanobind::object depends;
};

/// A new value of Python class `cls` (a subclass of TracedValue) of FusionDefinition
/// `definition`, recorded in `builder` (a `_Definition`), standing for `handle` (a `_Value`)
/// and computed from the specializable scalars `depends` (a frozenset; null: none).
nanobind::object makeTracedValue(nanobind::handle cls, nanobind::handle definition,
                                 nanobind::handle builder, nanobind::handle handle,
                                 nanobind::handle depends = nanobind::handle());

/// True when `type` is TracedValue or a Python class that extends it.
bool isTracedValueType(PyTypeObject* type);

} // namespace widefuse::python
