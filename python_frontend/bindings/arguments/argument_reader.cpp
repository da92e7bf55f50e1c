#include "python_frontend/bindings/arguments/argument_reader.h"

#include "python_frontend/bindings/arguments/torch_tensor_reader.h"
#include "python_frontend/bindings/python_sequence.h"

#include "ir/error.h"

#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
// Every translation unit that casts a std::string must see its caster.
#include <nanobind/stl/string.h>

#include <numeric>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

bool refuse(Refusal& refusal, RefusalCode code) {
  refusal.code = code;
  refusal.facts = nb::dict();
  return false;
}

/// The short name of a data type, as the Python table turns it into a DataType.
nb::str typeName(DataType type) {
  return nb::str(shortName(type).data(), shortName(type).size());
}

/// numbers.Integral, numbers.Real and numbers.Complex.
PyObject* numberClass(int which) {
  static PyObject* classes[3] = {nullptr, nullptr, nullptr};
  if (!classes[0]) {
    nb::module_ numbers = nb::module_::import_("numbers");
    classes[0] = nb::object(numbers.attr("Integral")).release().ptr();
    classes[1] = nb::object(numbers.attr("Real")).release().ptr();
    classes[2] = nb::object(numbers.attr("Complex")).release().ptr();
  }
  return classes[which];
}

bool isInstance(nb::handle value, PyObject* cls) {
  int is = PyObject_IsInstance(value.ptr(), cls);
  if (is < 0)
    throw nb::python_error();
  return is == 1;
}

} // namespace

bool readScalar(PyObject* object, const Value& input, const DtypeTables& tables,
                ScalarArgument& scalar, bool& exact, Refusal& refusal) {
  bool floating = isFloatingPoint(input.dtype());
  auto refuseNumber = [&](RefusalCode code, nb::handle value) {
    refuse(refusal, code);
    refusal.facts["value"] = value;
    refusal.facts["dtype"] = typeName(input.dtype());
    return false;
  };
  if (std::optional<ScalarArgument> number = exactNumber(object)) {
    if (std::holds_alternative<double>(*number) && !floating)
      return refuseNumber(RefusalCode::FloatForInteger, object);
    scalar = *number;
    exact = true;
    return true;
  }
  nb::object value = nb::borrow(object);
  TorchTensorReader* torch = TorchTensorReader::get();
  if (PyObject_TypeCheck(object, ndarrayType())) {
    if (nb::cast<size_t>(value.attr("ndim")) == 0)
      value = value.attr("item")();
  } else if (PyObject_TypeCheck(object, numpyScalarType())) {
    value = value.attr("item")();
  } else if (torch && torch->isTensor(object) && torch->rank(object) == 0) {
    ArrayRead read;
    if (!readArray(object, tables, false, read, refusal))
      return false;
    value = value.attr("item")();
  }
  if (PyBool_Check(value.ptr())) {
    scalar = ScalarArgument(value.ptr() == Py_True);
    return true;
  }
  if (isInstance(value, numberClass(0))) {
    nb::object integer = nb::steal(PyNumber_Long(value.ptr()));
    if (!integer.is_valid())
      throw nb::python_error();
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(integer.ptr(), &overflow);
    if (number == -1 && PyErr_Occurred())
      throw nb::python_error();
    if (overflow)
      return refuseNumber(RefusalCode::IntegerOverflow, integer);
    scalar = ScalarArgument(int64_t(number));
    return true;
  }
  if (isInstance(value, numberClass(1))) {
    if (!floating)
      return refuseNumber(RefusalCode::FloatForInteger, value);
    double number = PyFloat_AsDouble(value.ptr());
    if (number == -1.0 && PyErr_Occurred())
      throw nb::python_error();
    scalar = ScalarArgument(number);
    return true;
  }
  return refuseNumber(isInstance(value, numberClass(2)) ? RefusalCode::ComplexScalar
                                                        : RefusalCode::NotANumber,
                      value);
}

namespace {

/// Refuses strides that break the declared layout: each contiguous dimension must have the
/// dense stride over the next inner one (in stride order); non-contiguous dimensions may have
/// any stride; broadcast dimensions (extent 1, or non-contiguous of stride 0: expanded) are
/// skipped, as nvFuser skips them; an empty stride order or contiguity means dense row-major.
/// An array of another rank is left to the runtime's checks, one without elements passes.
bool checkLayout(const TensorRef& ref, const Value& input, Refusal& refusal) {
  size_t rank = ref.shape.size();
  if (rank != input.rank() || ref.numel() == 0)
    return true;
  const TensorLayout& layout = input.layout();
  llvm::SmallVector<int64_t, 4> order;
  for (size_t d = 0; d < rank; ++d)
    order.push_back(layout.strideOrder.empty() ? int64_t(rank - 1 - d) : layout.strideOrder[d]);
  llvm::SmallVector<size_t, 4> innerToOuter(rank);
  std::iota(innerToOuter.begin(), innerToOuter.end(), 0);
  llvm::sort(innerToOuter, [&](size_t a, size_t b) { return order[a] < order[b]; });
  auto contiguous = [&](size_t d) { return layout.contiguity.empty() || layout.contiguity[d]; };
  int64_t expected = 1;
  for (size_t d : innerToOuter) {
    int64_t extent = ref.shape[d], stride = ref.strides[d];
    if (extent == 1 || (stride == 0 && !contiguous(d)))
      continue;
    if (contiguous(d) && stride != expected) {
      nb::list strides, strideOrder, contiguity;
      for (size_t e = 0; e < rank; ++e) {
        strides.append(ref.strides[e]);
        strideOrder.append(order[e]);
        contiguity.append(contiguous(e));
      }
      refuse(refusal, RefusalCode::Layout);
      refusal.facts["strides"] = nb::tuple(strides);
      refusal.facts["stride_order"] = strideOrder;
      refusal.facts["contiguity"] = contiguity;
      return false;
    }
    expected = stride * extent;
  }
  return true;
}

} // namespace

std::string torchDeviceName(int device) {
  return device == -1 ? std::string("cpu") : fmt::format("cuda:{}", device);
}

namespace {

/// Takes what `array` holds of its memory into `read`.
void keepMemory(ArrayRead& array, ReadArguments& read) {
  if (array.held)
    read.held.push_back(std::move(array.held));
  if (array.keep.is_valid())
    read.keep.push_back(std::move(array.keep));
}

/// Tensor input `input` (fusion input `index`): the array, checked against the declaration
/// and the tensors before it.
bool readTensorInput(PyObject* object, const Fusion& fusion, size_t index,
                     const DtypeTables& tables, ReadArguments& read, Refusal& refusal) {
  const Value& input = *fusion.inputs()[index];
  ArrayRead array;
  if (!readArray(object, tables, false, array, refusal))
    return false;
  if (array.ref.dtype != input.dtype()) {
    refuse(refusal, RefusalCode::DtypeMismatch);
    refusal.facts["declared"] = typeName(input.dtype());
    refusal.facts["actual"] = typeName(array.ref.dtype);
    return false;
  }
  if (!checkLayout(array.ref, input, refusal))
    return false;
  if (array.readOnly && fusion.aliasOf(&input)) {
    refuse(refusal, RefusalCode::ReadOnly);
    return false;
  }
  if (array.torchDevice != -2) {
    if (read.torchDevice == -2) {
      read.torchDevice = array.torchDevice;
      read.firstTorchInput = index;
    } else if (array.torchDevice != read.torchDevice) {
      refuse(refusal, RefusalCode::DevicesDiffer);
      refusal.facts["device"] = torchDeviceName(array.torchDevice);
      refusal.facts["first_input"] = fusion.inputs()[read.firstTorchInput]->name();
      refusal.facts["first_device"] = torchDeviceName(read.torchDevice);
      return false;
    }
  }
  if (array.onDevice && !read.onDevice) {
    // The stream is read once every input is accepted: a refusal touches no CUDA state.
    read.onDevice = true;
    read.streamSource = object;
    read.streamRead.source = array.source;
    read.streamRead.onDevice = true;
    read.streamRead.torchDevice = array.torchDevice;
    read.streamRead.interfaceStream = array.interfaceStream;
  }
  InputRead facts;
  if (array.plainTorch)
    facts = {ArgumentKind::Torch, array.torchDtype, array.torchDevice};
  else if (array.source == ArraySource::Buffer && Py_TYPE(object) == ndarrayType())
    facts.kind = ArgumentKind::Buffer;
  read.inputs.push_back(facts);
  read.arguments.emplace_back(std::move(array.ref));
  keepMemory(array, read);
  return true;
}

} // namespace

bool readArguments(const Fusion& fusion, nb::handle values, const DtypeTables& tables,
                   ReadArguments& read, Refusal& refusal) {
  llvm::ArrayRef<Value*> inputs = fusion.inputs();
  Py_ssize_t size = sequenceSize(values.ptr());
  if (size < 0 || size_t(size) != inputs.size())
    fail("internal: {} arguments for the {} inputs of fusion '{}'", size, inputs.size(),
         fusion.name());
  read.arguments.reserve(inputs.size());
  read.inputs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    PyObject* object = sequenceItem(values.ptr(), i);
    refusal.index = i;
    bool accepted;
    if (inputs[i]->isTensor()) {
      accepted = readTensorInput(object, fusion, i, tables, read, refusal);
    } else {
      ScalarArgument scalar;
      bool exact = false;
      accepted = readScalar(object, *inputs[i], tables, scalar, exact, refusal);
      if (accepted) {
        read.arguments.emplace_back(scalar);
        read.inputs.push_back({exact ? ArgumentKind::Number : ArgumentKind::Other});
      }
    }
    if (!accepted) {
      refusal.name = inputs[i]->name();
      return false;
    }
  }
  if (read.streamSource)
    read.stream = readStream(read.streamSource, read.streamRead);
  return true;
}

bool readOutputs(const Fusion& fusion, nb::handle outputs, bool onDevice, const DtypeTables& tables,
                 ReadArguments& read, Refusal& refusal) {
  llvm::ArrayRef<Value*> declared = fusion.outputs();
  Py_ssize_t size = sequenceSize(outputs.ptr());
  if (size < 0)
    fail("prepare(): outputs= takes a list of arrays");
  if (size_t(size) != declared.size()) {
    refuse(refusal, RefusalCode::OutputCount);
    refusal.facts["given"] = size;
    refusal.facts["expected"] = declared.size();
    return false;
  }
  for (size_t k = 0; k < declared.size(); ++k) {
    refusal.index = k;
    refusal.name = fmt::format("output {}", k);
    ArrayRead array;
    if (!readArray(sequenceItem(outputs.ptr(), k), tables, false, array, refusal))
      return false;
    if (array.ref.dtype != declared[k]->dtype()) {
      refuse(refusal, RefusalCode::OutputDtype);
      refusal.facts["declared"] = typeName(declared[k]->dtype());
      refusal.facts["actual"] = typeName(array.ref.dtype);
      return false;
    }
    if (array.readOnly)
      return refuse(refusal, RefusalCode::OutputReadOnly);
    if (array.onDevice != onDevice) {
      refuse(refusal, RefusalCode::OutputPlacement);
      refusal.facts["on_device"] = array.onDevice;
      return false;
    }
    read.inputs.push_back({});
    read.arguments.emplace_back(std::move(array.ref));
    keepMemory(array, read);
  }
  return true;
}

} // namespace widefuse::python
