#include "python_frontend/bindings/steady_inputs.h"

#include "python_frontend/bindings/arguments/torch_tensor_reader.h"
#include "python_frontend/bindings/python_sequence.h"

#include "ir/error.h"
#include "ir/extent_expression.h"
#include "ir/fusion.h"

#include <llvm/ADT/STLExtras.h>

#include <cstring>

namespace nb = nanobind;

namespace widefuse::python {
namespace {

/// Equal numbers, floats by their bits (-0.0 is a change; every NaN with the same bits is not).
bool sameNumber(const ScalarArgument& a, const ScalarArgument& b) {
  if (a.index() != b.index())
    return false;
  if (const double* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    return std::memcmp(x, &y, sizeof y) == 0;
  }
  return a == b;
}

} // namespace

bool SteadyInputs::adoptable(const ReadArguments& read) {
  return llvm::none_of(read.inputs,
                       [](const InputRead& input) { return input.kind == ArgumentKind::Other; });
}

void SteadyInputs::adopt(const Fusion& fusion, nb::handle objects, const ReadArguments& read,
                         std::unique_ptr<PreparedRun> run) {
  ++generation_;
  fusion_ = &fusion;
  arguments_ = read.arguments;
  run_ = std::move(run);
  slots_.clear();
  llvm::SmallVector<const Value*, 4> extents = extentInputs(fusion);
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const Value* input = fusion.inputs()[i];
    const InputRead& facts = read.inputs[i];
    PyObject* object = sequenceItem(objects.ptr(), i);
    Slot slot;
    slot.type = Py_TYPE(object);
    slot.written = fusion.aliasOf(input) != nullptr;
    slot.isExtent = llvm::is_contained(extents, input);
    if (facts.kind == ArgumentKind::Number) {
      slot.kind = Kind::Number;
    } else {
      slot.kind = facts.kind == ArgumentKind::Torch ? Kind::Torch : Kind::Buffer;
      slot.weak = nb::steal(PyWeakref_NewRef(object, nullptr));
      if (!slot.weak.is_valid())
        throw nb::python_error();
      slot.dtype = facts.torchDtype;
      slot.device = facts.torchDevice;
    }
    slots_.push_back(std::move(slot));
  }
}

PyObject* SteadyInputs::referent(const Slot& slot) {
  return slot.weak.is_valid() ? PyWeakref_GET_OBJECT(slot.weak.ptr()) : nullptr;
}

bool SteadyInputs::compareNumber(size_t index, PyObject* object,
                                 llvm::SmallVectorImpl<Change>& changes) const {
  const Slot& slot = slots_[index];
  if (Py_TYPE(object) != slot.type)
    return false; // another kind of number: the checked path converts and checks it
  std::optional<ScalarArgument> value = exactNumber(object);
  if (!value)
    return false;
  if (sameNumber(*value, std::get<ScalarArgument>(arguments_[index])))
    return true;
  if (slot.isExtent)
    return false;
  changes.push_back({index, nullptr, *value, nullptr});
  return true;
}

bool SteadyInputs::compareTorch(size_t index, PyObject* object, bool gradEnabled,
                                llvm::SmallVectorImpl<Change>& changes) const {
  const Slot& slot = slots_[index];
  const TorchTensorReader& torch = *TorchTensorReader::get();
  if (!torch.isPlainTensor(object))
    return false;
  TorchLayout layout;
  if (!torch.readLayout(object, layout) || layout.dtype != slot.dtype)
    return false;
  const TensorRef& before = std::get<TensorRef>(arguments_[index]);
  if (layout.sizes != before.shape || layout.strides != before.strides)
    return false;
  if (gradEnabled && torch.requiresGrad(object))
    return false;
  if (object == referent(slot) && layout.data == before.data)
    // `.data =` may have set a lazy bit on the same memory: p.data = p.data.conj() for a
    // complex p, asked each call. A real tensor gets a negative bit only as the imaginary part
    // of a conjugate view (p.data = c.conj().imag with p already c.imag): not asked, since
    // asking every tensor costs ~0.1 us (python.md §3 names the gap).
    return !isComplex(before.dtype) || !torch.lazyBitSet(object);
  // Another tensor, or new memory: a device or a lazy bit could differ too. (Memory at the same
  // address is on the same device: host and device allocations never share an address.)
  TorchFacts facts;
  if (!torch.readFacts(object, facts) || !facts.strided || facts.conjugated || facts.negated ||
      facts.device != slot.device)
    return false;
  changes.push_back({index, layout.data, ScalarArgument(false), object});
  return true;
}

bool SteadyInputs::compareBuffer(size_t index, PyObject* object, std::vector<HeldBuffer>& held,
                                 llvm::SmallVectorImpl<Change>& changes) const {
  const Slot& slot = slots_[index];
  if (Py_TYPE(object) != slot.type)
    return false;
  HeldBuffer view = bufferOf(object);
  if (!view)
    return false;
  held.push_back(std::move(view));
  const Py_buffer& buffer = *held.back();
  const TensorRef& before = std::get<TensorRef>(arguments_[index]);
  if (bufferDataType(buffer) != before.dtype || size_t(buffer.ndim) != before.shape.size() ||
      (slot.written && buffer.readonly))
    return false;
  for (size_t d = 0; d < before.shape.size(); ++d)
    if (buffer.shape[d] != before.shape[d] ||
        buffer.strides[d] != before.strides[d] * buffer.itemsize)
      return false;
  if (object != referent(slot) || buffer.buf != before.data)
    changes.push_back({index, buffer.buf, ScalarArgument(false), object});
  return true;
}

bool SteadyInputs::match(nb::handle objects, std::vector<HeldBuffer>& held,
                         llvm::ArrayRef<size_t> order) {
  ++generation_;
  if (!fusion_)
    return false;
  Py_ssize_t size = sequenceSize(objects.ptr());
  if (order.empty() ? size != Py_ssize_t(slots_.size()) : order.size() != slots_.size())
    return false;
  for (size_t position : order)
    if (Py_ssize_t(position) >= size)
      return false;
  // First pass: compare, changing nothing.
  llvm::SmallVector<Change, 8> changes;
  int gradEnabled = -1; // asked once, when the first torch tensor is compared
  for (size_t i = 0; i < slots_.size(); ++i) {
    PyObject* object = sequenceItem(objects.ptr(), order.empty() ? i : order[i]);
    bool same = false;
    switch (slots_[i].kind) {
    case Kind::Number:
      same = compareNumber(i, object, changes);
      break;
    case Kind::Torch:
      if (gradEnabled < 0)
        gradEnabled = TorchTensorReader::get()->gradEnabled() ? 1 : 0;
      same = compareTorch(i, object, gradEnabled == 1, changes);
      break;
    case Kind::Buffer:
      same = compareBuffer(i, object, held, changes);
      break;
    }
    if (!same)
      return false;
  }
  // Second pass: rebind and set. PreparedRun refuses misaligned memory and memory overlapping
  // a copy_ destination; the checked path then says so in its own words.
  try {
    apply(changes);
  } catch (const Error&) {
    return false;
  }
  matched_ = generation_;
  return true;
}

bool SteadyInputs::stillMatched(uint64_t generation, nb::handle objects) const {
  if (generation != matched_ || generation != generation_ ||
      sequenceSize(objects.ptr()) != Py_ssize_t(slots_.size()))
    return false;
  for (size_t i = 0; i < slots_.size(); ++i) {
    PyObject* object = sequenceItem(objects.ptr(), i);
    if (slots_[i].kind == Kind::Number) {
      std::optional<ScalarArgument> value = exactNumber(object);
      if (Py_TYPE(object) != slots_[i].type || !value ||
          !sameNumber(*value, std::get<ScalarArgument>(arguments_[i])))
        return false;
    } else if (object != referent(slots_[i])) {
      return false;
    }
  }
  return true;
}

void SteadyInputs::apply(llvm::ArrayRef<Change> changes) {
  for (const Change& change : changes) {
    Slot& slot = slots_[change.index];
    if (slot.kind == Kind::Number) {
      if (run_)
        run_->setScalar(change.index, change.value);
      std::get<ScalarArgument>(arguments_[change.index]) = change.value;
      continue;
    }
    if (run_)
      run_->rebindTensor(change.index, change.data);
    std::get<TensorRef>(arguments_[change.index]).data = change.data;
    if (change.object != referent(slot)) {
      slot.weak = nb::steal(PyWeakref_NewRef(change.object, nullptr));
      if (!slot.weak.is_valid())
        throw nb::python_error();
    }
  }
}

} // namespace widefuse::python
