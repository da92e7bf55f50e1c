#include "runtime/prepared_run.h"

#include "ir/error.h"
#include "ir/extent_expression.h"
#include "ir/fusion.h"

#include <algorithm>

namespace widefuse {

PreparedRun::PreparedRun(const Fusion& fusion, std::mutex& stepMutex,
                         std::vector<Argument> arguments, std::shared_ptr<LoadedFusion> loaded,
                         std::shared_ptr<const RuntimeShapes> shapes, Fingerprint fingerprint,
                         std::vector<TensorRef> outputs,
                         std::shared_ptr<const std::vector<KeptTensor>> kept)
    : fusion_(fusion), stepMutex_(stepMutex), arguments_(std::move(arguments)),
      loaded_(std::move(loaded)), shapes_(std::move(shapes)), fingerprint_(std::move(fingerprint)),
      changed_(fusion.numValues(), 0), isExtent_(arguments_.size(), 0),
      outputs_(std::move(outputs)), kept_(std::move(kept)) {
  if (kept_)
    for (const KeptTensor& tensor : *kept_)
      keptRefs_.push_back(tensor.ref);
  collectWrittenSpans();
  for (const Value* input : extentInputs(fusion))
    isExtent_[size_t(llvm::find(fusion.inputs(), input) - fusion.inputs().begin())] = 1;
}

void PreparedRun::markChanged(size_t index) {
  changed_[fusion_.inputs()[index]->id()] = 1;
  anyChanged_ = true;
}

void PreparedRun::collectWrittenSpans() {
  const Fusion& fusion = fusion_;
  writtenSpans_.clear();
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const TensorRef* tensor = std::get_if<TensorRef>(&arguments_[i]);
    if (!tensor || tensor->numel() == 0 || !fusion.aliasOf(fusion.inputs()[i]))
      continue;
    auto start = reinterpret_cast<uintptr_t>(tensor->data);
    writtenSpans_.push_back(
        {start, start + uintptr_t(tensor->span()) * byteSize(tensor->dtype), i});
  }
  // checkArguments refused overlapping destinations, so start order is also end order.
  std::sort(writtenSpans_.begin(), writtenSpans_.end(),
            [](const WrittenSpan& a, const WrittenSpan& b) { return a.start < b.start; });
}

RunResult PreparedRun::launch(std::optional<void*> stream) {
  LoadedFusion& loaded = *loaded_;
  // Steps that share the executor's kept memory take turns.
  std::unique_lock<std::mutex> keeping(stepMutex_, std::defer_lock);
  if (!keptRefs_.empty())
    keeping.lock();
  // Patched bindings write the outputs where the last bind put them: only fixed outputs (or
  // none) may be written there again; fresh ones are bound anew by run().
  bool patchable = outputs_.size() == fusion_.outputs().size();
  if (anyChanged_ && !patchable) {
    std::fill(changed_.begin(), changed_.end(), 0);
    anyChanged_ = false;
    fingerprint_ = nullptr; // unknown: the cached bindings are matched by content
  }
  if (anyChanged_) {
    if (!own_)
      own_ = std::make_shared<std::vector<int64_t>>();
    bool patched = loaded.runChanged(arguments_, changed_, fingerprint_, own_, stream);
    if (!patched) { // own_ may still be what another thread's run compares with: a new one
      own_ = std::make_shared<std::vector<int64_t>>();
      fingerprintInto(arguments_, *own_);
    }
    fingerprint_ = own_;
    std::fill(changed_.begin(), changed_.end(), 0);
    anyChanged_ = false;
    if (patched)
      return RunResult{};
  }
  return loaded.run(
      CheckedRun{arguments_, *shapes_, fingerprint_, outputs_, keptRefs_, stream, kept_});
}

void PreparedRun::rebindTensor(size_t index, void* data) {
  const Fusion& fusion = fusion_;
  if (index >= arguments_.size())
    fail("rebindTensor: fusion '{}' has {} inputs, not an input {}", fusion.name(),
         arguments_.size(), index);
  const Value& input = *fusion.inputs()[index];
  auto* tensor = std::get_if<TensorRef>(&arguments_[index]);
  if (!tensor)
    fail("rebindTensor: input '{}' is a scalar", input.name());
  if (data == tensor->data)
    return;
  if (!data && tensor->numel() > 0)
    fail("input '{}': null data pointer", input.name());
  checkAlignedData(input, data, tensor->dtype);
  TensorRef moved = *tensor;
  moved.data = data;
  if (fusion.aliasOf(&input)) { // rare (a parameter's storage replaced): check everything
    std::vector<Argument> candidate = arguments_;
    candidate[index] = moved;
    checkArguments(fusion, candidate);
    arguments_ = std::move(candidate);
    collectWrittenSpans();
  } else {
    if (moved.numel() > 0) {
      auto start = reinterpret_cast<uintptr_t>(data);
      uintptr_t end = start + uintptr_t(moved.span()) * byteSize(moved.dtype);
      // The first destination ending after this start is the only one that can overlap.
      auto first = std::upper_bound(
          writtenSpans_.begin(), writtenSpans_.end(), start,
          [](uintptr_t address, const WrittenSpan& span) { return address < span.end; });
      if (first != writtenSpans_.end() && first->start < end)
        fail("input '{}' shares memory with input '{}', which is written by copy_; every "
             "read must see the entry value (pass a copy)",
             input.name(), fusion.inputs()[first->index]->name());
    }
    *tensor = moved;
  }
  markChanged(index);
}

void PreparedRun::setScalar(size_t index, ScalarArgument value) {
  const Fusion& fusion = fusion_;
  if (index >= arguments_.size())
    fail("setScalar: fusion '{}' has {} inputs, not an input {}", fusion.name(), arguments_.size(),
         index);
  const Value& input = *fusion.inputs()[index];
  auto* scalar = std::get_if<ScalarArgument>(&arguments_[index]);
  if (!scalar)
    fail("setScalar: input '{}' is a tensor", input.name());
  checkScalarArgument(input, value);
  if (isExtent_[index] && integerOf(value) != integerOf(*scalar))
    fail("setScalar: input '{}' is an output extent (broadcast_in_dim's shape), and a prepared "
         "run keeps its shapes; prepare a new run for other extents",
         input.name());
  *scalar = value;
  markChanged(index);
}

} // namespace widefuse
