#pragma once
/// The pieces of the `widefuse._widefuse` extension module, one function per file.

#include <nanobind/nanobind.h>

namespace widefuse::python {

/// Error, DataType helpers, _Definition (the builder), _Value and _Fusion (a finished fusion).
void bindDefinition(nanobind::module_& module);
/// _Executor (compile once per specialization, run what the argument reader read),
/// select_backend and host_executions.
void bindExecutor(nanobind::module_& module);
/// structure_key (a traced call's structure key, walked in C++).
void bindStructureKey(nanobind::module_& module);
/// The argument reader: read_arguments, read_outputs, read_layouts, _Arguments, _Refusal.
void bindArgumentReader(nanobind::module_& module);
/// TracedValue (the base of the package's Tensor and Scalar), record (a pointwise op on traced
/// values in one call) and snapshot.
void bindTracedValues(nanobind::module_& module);
/// bound_state_unchanged (widefuse.optim's prepared step: the state it was bound to).
void bindBoundState(nanobind::module_& module);

} // namespace widefuse::python
