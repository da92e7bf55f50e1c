// Traced values (`_widefuse.TracedValue`) and the recording hot path: a pointwise op on them in
// one C++ call that reads the operands' fields, adds the op and makes the result. A traced
// optimizer records hundreds of thousands of ops; in Python each cost about as much as the
// builder call itself.
#include "python_frontend/bindings/traced_values.h"

#include "python_frontend/bindings/bindings.h"

#include <llvm/ADT/SmallVector.h>

#include <optional>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// The empty dependency set every value computed from no specializable scalar carries (one
/// object; leaked, as Python objects must not be released after the interpreter ends).
PyObject* noDepends() {
  static PyObject* empty = PyFrozenSet_New(nullptr);
  return empty;
}

PyTypeObject* tracedValueType() {
  static PyTypeObject* type = reinterpret_cast<PyTypeObject*>(nb::type<TracedValue>().ptr());
  return type;
}

/// The fields of `self`, or null with AttributeError set while it is not made yet (an
/// instance from `__new__` alone) or cleared by the garbage collector.
TracedValue* fieldsOf(PyObject* self) {
  if (!nb::inst_ready(self) || !nb::inst_ptr<TracedValue>(self)->handle.is_valid()) {
    PyErr_SetString(PyExc_AttributeError, "this traced value was not made by a definition");
    return nullptr;
  }
  return nb::inst_ptr<TracedValue>(self);
}

PyObject* getDefinition(PyObject* self, void*) {
  TracedValue* value = fieldsOf(self);
  return value ? value->definition.inc_ref().ptr() : nullptr;
}

PyObject* getHandle(PyObject* self, void*) {
  TracedValue* value = fieldsOf(self);
  return value ? value->handle.inc_ref().ptr() : nullptr;
}

PyObject* getInputHandle(PyObject* self, void*) {
  TracedValue* value = fieldsOf(self);
  return value ? value->input.inc_ref().ptr() : nullptr;
}

PyObject* getDepends(PyObject* self, void*) {
  TracedValue* value = fieldsOf(self);
  return value ? value->depends.inc_ref().ptr() : nullptr;
}

int setHandle(PyObject* self, PyObject* handle, void*) {
  TracedValue* value = fieldsOf(self);
  if (!value)
    return -1;
  if (!handle || !nb::isinstance<Val>(handle)) {
    PyErr_SetString(PyExc_TypeError, "a traced value's handle is a _widefuse._Value");
    return -1;
  }
  value->handle = nb::borrow(handle);
  return 0;
}

int setDepends(PyObject* self, PyObject* depends, void*) {
  TracedValue* value = fieldsOf(self);
  if (!value)
    return -1;
  if (!depends || !PyFrozenSet_CheckExact(depends)) {
    PyErr_SetString(PyExc_TypeError, "a traced value's depends is a frozenset of names");
    return -1;
  }
  value->depends = nb::borrow(depends);
  return 0;
}

PyGetSetDef tracedValueFields[] = {
    {"definition", getDefinition, nullptr, "The FusionDefinition the value belongs to.", nullptr},
    {"handle", getHandle, setHandle,
     "The builder's handle (_Value) of what the value stands for now.", nullptr},
    {"input_handle", getInputHandle, nullptr,
     "The handle the value was made with: for a tensor input, the input, even after an "
     "in-place write.",
     nullptr},
    {"depends", getDepends, setDepends,
     "The specializable runtime scalars (names) the value is computed from.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

int traverseTracedValue(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self)); // a heap type's instance refers to its type
  if (!nb::inst_ready(self))
    return 0;
  TracedValue* value = nb::inst_ptr<TracedValue>(self);
  Py_VISIT(value->definition.ptr());
  Py_VISIT(value->builder.ptr());
  Py_VISIT(value->handle.ptr());
  Py_VISIT(value->input.ptr());
  Py_VISIT(value->depends.ptr());
  return 0;
}

int clearTracedValue(PyObject* self) {
  if (!nb::inst_ready(self))
    return 0;
  TracedValue* value = nb::inst_ptr<TracedValue>(self);
  value->definition.reset();
  value->builder.reset();
  value->handle.reset();
  value->input.reset();
  value->depends.reset();
  return 0;
}

// A definition holds values (its in-place writes) and its values hold it: the collector must
// see the fields.
PyType_Slot tracedValueSlots[] = {{Py_tp_getset, tracedValueFields},
                                  {Py_tp_traverse, reinterpret_cast<void*>(traverseTracedValue)},
                                  {Py_tp_clear, reinterpret_cast<void*>(clearTracedValue)},
                                  {0, nullptr}};

/// What record() takes of one operand.
struct RecordedOperand {
  Operand operand;
  const TracedValue* value = nullptr; ///< null for a number
};

/// An operand as the builder takes it; nothing where record() declines (the Python path then
/// converts it or names what is wrong).
std::optional<RecordedOperand> operandOf(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  if (type == &PyFloat_Type)
    return RecordedOperand{Operand(PyFloat_AS_DOUBLE(object))};
  if (isTracedValueType(type)) {
    if (!nb::inst_ready(object))
      return std::nullopt;
    const TracedValue* value = nb::inst_ptr<TracedValue>(object);
    if (!value->handle.is_valid())
      return std::nullopt;
    return RecordedOperand{Operand(*nb::inst_ptr<Val>(value->handle)), value};
  }
  if (type == &PyBool_Type)
    return RecordedOperand{Operand(object == Py_True)};
  if (type == &PyLong_Type) {
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow)
      return std::nullopt; // the builder's message names it
    return RecordedOperand{Operand(static_cast<int64_t>(number))};
  }
  return std::nullopt;
}

/// The union of the operands' dependency sets (the shared empty one when all are empty).
nb::object dependsOf(llvm::ArrayRef<RecordedOperand> operands) {
  nb::object depends;
  for (const RecordedOperand& operand : operands) {
    if (!operand.value || PySet_GET_SIZE(operand.value->depends.ptr()) == 0)
      continue;
    if (!depends.is_valid()) {
      depends = operand.value->depends;
      continue;
    }
    depends = nb::steal(PyNumber_Or(depends.ptr(), operand.value->depends.ptr()));
    if (!depends.is_valid())
      throw nb::python_error();
  }
  return depends.is_valid() ? depends : nb::borrow(noDepends());
}

/// True for an op its operands fully give: no attributes (cast, bitcast, broadcast_in_dim,
/// size) and no scope (reductions).
bool isPlainPointwise(OpKind op) {
  switch (opTypeRule(op)) {
  case TypeRule::Cast:
  case TypeRule::Bitcast:
  case TypeRule::Broadcast:
  case TypeRule::Extent:
  case TypeRule::CodeLookup:
  case TypeRule::CodeSearch:
  case TypeRule::Reduction:
    return false;
  default:
    return true;
  }
}

/// Pointwise op `kind` of `operands` (a tuple or list): the result, a value of the operands'
/// definition and of the class its builder makes for the result's kind, computed from the
/// union of their dependencies. None where the Python path (FusionDefinition.pointwise)
/// decides: an operand that is neither a traced value nor a Python bool, int (of 64 bits) or
/// float, values of two definitions, no value at all, or a finished definition.
nb::object record(unsigned kind, nb::handle operands) {
  if (kind >= kNumOpKinds || !isPlainPointwise(static_cast<OpKind>(kind)) ||
      !(PyTuple_Check(operands.ptr()) || PyList_Check(operands.ptr())))
    return nb::none();
  llvm::SmallVector<RecordedOperand, 3> recorded;
  const TracedValue* first = nullptr;
  PyObject** items = PySequence_Fast_ITEMS(operands.ptr());
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(operands.ptr()); ++i) {
    std::optional<RecordedOperand> operand = operandOf(items[i]);
    if (!operand)
      return nb::none();
    if (operand->value) {
      if (!first)
        first = operand->value;
      else if (operand->value->builder.ptr() != first->builder.ptr())
        return nb::none(); // values of two definitions: the Python path names the other one
    }
    recorded.push_back(std::move(*operand));
  }
  if (!first)
    return nb::none();
  PyDefinition& definition = *nb::inst_ptr<PyDefinition>(first->builder);
  if (!definition.isLive())
    return nb::none(); // finished: the Python path says so
  llvm::SmallVector<Operand, 3> arguments;
  for (const RecordedOperand& operand : recorded)
    arguments.push_back(operand.operand);
  Val result = definition.applyPointwise(static_cast<OpKind>(kind), arguments);
  nb::handle cls = definition.valueClass(result.value()->isTensor());
  nb::object depends = dependsOf(recorded);
  return makeTracedValue(cls, first->definition, first->builder, nb::cast(std::move(result)),
                         depends);
}

/// A new value of `value`'s class and definition standing for what `value` stands for now,
/// with its dependencies: a later in-place write into `value` does not move it.
nb::object snapshot(nb::handle object) {
  if (!isTracedValueType(Py_TYPE(object.ptr())))
    fail("snapshot takes a traced value");
  TracedValue* value = fieldsOf(object.ptr());
  if (!value)
    throw nb::python_error();
  return makeTracedValue(object.type(), value->definition, value->builder, value->handle,
                         value->depends);
}

} // namespace

bool isTracedValueType(PyTypeObject* type) {
  return type == tracedValueType() || PyType_IsSubtype(type, tracedValueType());
}

nb::object makeTracedValue(nb::handle cls, nb::handle definition, nb::handle builder,
                           nb::handle handle, nb::handle depends) {
  nb::object made = nb::inst_alloc(cls);
  new (nb::inst_ptr<TracedValue>(made))
      TracedValue{nb::borrow(definition), nb::borrow(builder), nb::borrow(handle),
                  nb::borrow(handle), nb::borrow(depends.is_valid() ? depends : noDepends())};
  nb::inst_mark_ready(made);
  return made;
}

nb::object PyDefinition::traced(nb::handle self, nb::handle definition, nb::handle handle,
                                nb::handle depends) const {
  if (!nb::isinstance<Val>(handle))
    fail("traced takes a value handle (_Value)");
  if (depends.is_valid() && !depends.is_none() && !PyFrozenSet_CheckExact(depends.ptr()))
    fail("traced: depends must be a frozenset of names");
  bool tensor = nb::inst_ptr<Val>(handle)->value()->isTensor();
  return makeTracedValue(valueClass(tensor), definition, self, handle,
                         depends.is_none() ? nb::handle() : depends);
}

nb::list PyDefinition::tracedAll(nb::handle self, nb::handle definition, nb::handle handles) const {
  nb::list values;
  for (nb::handle handle : handles)
    values.append(traced(self, definition, handle, nb::handle()));
  return values;
}

nb::handle PyDefinition::valueClass(bool tensor) const {
  const nb::object& cls = tensor ? tensorClass_ : scalarClass_;
  if (!cls.is_valid())
    fail("this builder makes no traced values (it was given no classes)");
  return cls;
}

void PyDefinition::setValueClasses(nb::handle tensorClass, nb::handle scalarClass) {
  for (nb::handle cls : {tensorClass, scalarClass})
    if (!PyType_Check(cls.ptr()) || !isTracedValueType(reinterpret_cast<PyTypeObject*>(cls.ptr())))
      fail("a builder's value classes must extend _widefuse.TracedValue");
  tensorClass_ = nb::borrow(tensorClass);
  scalarClass_ = nb::borrow(scalarClass);
}

void bindTracedValues(nb::module_& module) {
  nb::class_<TracedValue>(module, "TracedValue", nb::type_slots(tracedValueSlots),
                          "A value of a FusionDefinition: what it belongs to and stands for. "
                          "widefuse.values.Tensor and Scalar extend it; their definition's "
                          "builder makes them.");
  module.def("record", &record, nb::arg("kind"), nb::arg("operands"),
             "Pointwise op `kind` of `operands`: the result, or None where the Python path "
             "decides.");
  module.def("snapshot", &snapshot, nb::arg("value"),
             "A new value standing for what `value` stands for now.");
}

} // namespace widefuse::python
