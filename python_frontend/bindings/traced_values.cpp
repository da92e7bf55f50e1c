// The recording hot path: a pointwise op on traced values (widefuse.values.Tensor and Scalar)
// in one C++ call that reads the Python handles, adds the op and makes the result's handle.
// A traced optimizer records hundreds of thousands of ops; in Python each cost about as much
// as the builder call itself.
#include "python_frontend/bindings/bindings.h"
#include "python_frontend/bindings/py_definition.h"

#include <llvm/ADT/SmallVector.h>

#include <optional>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// One `__slots__` entry of widefuse.values.Value, read and written through its member
/// descriptor (the public slots of the descriptor's type), as Python's own attribute access
/// does, without the attribute lookup.
class Slot {
public:
  Slot() = default;
  explicit Slot(nb::object descriptor) : descriptor_(std::move(descriptor)) {
    PyTypeObject* type = Py_TYPE(descriptor_.ptr());
    if (!type->tp_descr_get || !type->tp_descr_set)
      fail("register_traced_values: a value slot is not a member descriptor");
  }
  /// The slot's object (a new reference); an invalid object when it is unset.
  nb::object get(PyObject* instance) const {
    PyObject* value = Py_TYPE(descriptor_.ptr())
                          ->tp_descr_get(descriptor_.ptr(), instance, (PyObject*)Py_TYPE(instance));
    if (!value)
      PyErr_Clear(); // unset: the caller declines, and the Python path says what is wrong
    return nb::steal(value);
  }
  void set(PyObject* instance, PyObject* value) const {
    if (Py_TYPE(descriptor_.ptr())->tp_descr_set(descriptor_.ptr(), instance, value) != 0)
      throw nb::python_error();
  }

private:
  nb::object descriptor_;
};

/// What record() needs of widefuse.values, set once by register_traced_values.
struct TracedValueClasses {
  PyTypeObject* tensor = nullptr;
  PyTypeObject* scalar = nullptr;
  Slot fd, value, input, depends;
  /// The empty frozenset a value without specializable scalars carries.
  nb::object noDepends;
  nb::object builderName;
  PyTypeObject* handleType = nullptr;     // _widefuse._Value
  PyTypeObject* definitionType = nullptr; // _widefuse._Definition
};

TracedValueClasses& classes() {
  // Leaked on purpose: Python objects must not be released after the interpreter ends.
  static TracedValueClasses* instance = new TracedValueClasses();
  return *instance;
}

void registerTracedValues(nb::type_object value, nb::type_object tensor, nb::type_object scalar,
                          nb::object noDepends) {
  TracedValueClasses& c = classes();
  nb::object slots = value.attr("__dict__"); // a mappingproxy of the class's own names
  c.fd = Slot(slots["_fd"]);
  c.value = Slot(slots["_value"]);
  c.input = Slot(slots["_input"]);
  c.depends = Slot(slots["_depends"]);
  c.noDepends = std::move(noDepends);
  c.builderName = nb::steal(PyUnicode_InternFromString("_builder"));
  c.handleType = (PyTypeObject*)nb::type<Val>().ptr();
  c.definitionType = (PyTypeObject*)nb::type<PyDefinition>().ptr();
  // Held for the interpreter's lifetime with the rest.
  c.tensor = (PyTypeObject*)tensor.release().ptr();
  c.scalar = (PyTypeObject*)scalar.release().ptr();
}

/// An operand as the builder takes it; nothing where record() declines (the Python path then
/// converts it or names what is wrong).
std::optional<Operand> operandOf(PyObject* object, PyObject* fd) {
  const TracedValueClasses& c = classes();
  PyTypeObject* type = Py_TYPE(object);
  if (type == c.tensor || type == c.scalar) {
    // Another definition's value, or one computed from scalars a tracer may specialize
    // (their dependencies travel with the result): the Python path's business.
    if (c.fd.get(object).ptr() != fd)
      return std::nullopt;
    nb::object depends = c.depends.get(object);
    bool noDepends = depends.ptr() == c.noDepends.ptr() ||
                     (depends.is_valid() && PyFrozenSet_CheckExact(depends.ptr()) &&
                      PySet_GET_SIZE(depends.ptr()) == 0);
    if (!noDepends)
      return std::nullopt;
    nb::object handle = c.value.get(object);
    if (!handle.is_valid() || Py_TYPE(handle.ptr()) != c.handleType)
      return std::nullopt;
    return Operand(*nb::inst_ptr<Val>(handle));
  }
  if (type == &PyFloat_Type)
    return Operand(PyFloat_AS_DOUBLE(object));
  if (type == &PyBool_Type)
    return Operand(object == Py_True);
  if (type == &PyLong_Type) {
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow)
      return std::nullopt;
    return Operand(static_cast<int64_t>(number));
  }
  return std::nullopt;
}

/// The Python handle of `handle` (a `_Value` object) in `fd`, of `type`, as Value.__init__
/// makes it with no dependencies.
nb::object tracedValue(PyTypeObject* type, nb::handle fd, nb::handle handle) {
  const TracedValueClasses& c = classes();
  nb::object traced = nb::steal(type->tp_alloc(type, 0));
  if (!traced.is_valid())
    throw nb::python_error();
  c.fd.set(traced.ptr(), fd.ptr());
  c.value.set(traced.ptr(), handle.ptr());
  c.input.set(traced.ptr(), handle.ptr());
  c.depends.set(traced.ptr(), c.noDepends.ptr());
  return traced;
}

/// Tensor handles in `fd` for `handles`, tensor inputs the builder just defined.
nb::list makeTensors(nb::handle fd, nb::list handles) {
  const TracedValueClasses& c = classes();
  if (!c.tensor)
    fail("make_tensors: widefuse.values has not registered its classes");
  nb::list tensors;
  for (nb::handle handle : handles) {
    if (Py_TYPE(handle.ptr()) != c.handleType || !nb::inst_ptr<Val>(handle)->value()->isTensor())
      fail("make_tensors takes the tensor handles of a definition");
    tensors.append(tracedValue(c.tensor, fd, handle));
  }
  return tensors;
}

/// True for an op its operands fully give: no attributes (cast, bitcast, broadcast_in_dim,
/// size) and no scope (reductions).
bool isPlainPointwise(OpKind op) {
  switch (opTypeRule(op)) {
  case TypeRule::Cast:
  case TypeRule::Bitcast:
  case TypeRule::Broadcast:
  case TypeRule::Extent:
  case TypeRule::Reduction:
    return false;
  default:
    return true;
  }
}

/// Pointwise op `kind` of `operands` (a tuple or list) in `fd` (a widefuse FusionDefinition): the
/// result's handle, a Tensor or Scalar as Value.__init__ makes it; None when an operand is not a
/// value of `fd` without dependencies nor a Python number, when none is a value, or when the
/// definition is finished (the Python path refuses those with its messages). A value of `fd`
/// exists, so its builder has had a call already (FusionDefinition._builder_empty is False).
nb::object record(nb::handle fd, unsigned kind, nb::handle operands) {
  const TracedValueClasses& c = classes();
  if (!c.tensor || kind >= kNumOpKinds || !isPlainPointwise(static_cast<OpKind>(kind)) ||
      !(PyTuple_Check(operands.ptr()) || PyList_Check(operands.ptr())))
    return nb::none();
  llvm::SmallVector<Operand, 3> arguments;
  bool anyValue = false;
  PyObject** items = PySequence_Fast_ITEMS(operands.ptr());
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(operands.ptr()); ++i) {
    std::optional<Operand> argument = operandOf(items[i], fd.ptr());
    if (!argument)
      return nb::none();
    anyValue |= !argument->literal();
    arguments.push_back(std::move(*argument));
  }
  if (!anyValue)
    return nb::none();
  nb::object builder = nb::steal(PyObject_GetAttr(fd.ptr(), c.builderName.ptr()));
  if (!builder.is_valid())
    PyErr_Clear(); // another kind of builder: its own pointwise() decides
  if (!builder.is_valid() || Py_TYPE(builder.ptr()) != c.definitionType)
    return nb::none(); // also None once the definition is finished
  PyDefinition& definition = *nb::inst_ptr<PyDefinition>(builder);
  if (!definition.isLive())
    return nb::none();
  Val result = definition.applyPointwise(static_cast<OpKind>(kind), arguments);
  PyTypeObject* type = result.value()->isTensor() ? c.tensor : c.scalar;
  return tracedValue(type, fd, nb::cast(std::move(result)));
}

} // namespace

void bindTracedValues(nb::module_& module) {
  module.def("register_traced_values", &registerTracedValues, nb::arg("value"), nb::arg("tensor"),
             nb::arg("scalar"), nb::arg("no_depends"),
             "Tells record() the classes of traced values and the empty dependency set.");
  module.def("make_tensors", &makeTensors, nb::arg("fd"), nb::arg("handles"),
             "Tensor handles in FusionDefinition `fd` for tensor inputs just defined.");
  module.def("record", &record, nb::arg("fd"), nb::arg("kind"), nb::arg("operands"),
             "Pointwise op `kind` of `operands` in FusionDefinition `fd`: the result, or None "
             "where the Python path decides.");
}

} // namespace widefuse::python
