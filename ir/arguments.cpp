#include "ir/arguments.h"

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/op_builder.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>

namespace widefuse {

namespace {

std::string describeArgument(const Argument& argument) {
  if (const TensorRef* tensor = std::get_if<TensorRef>(&argument))
    return fmt::format("a {} tensor of shape {}", shortName(tensor->dtype).str(),
                       formatExtents(tensor->shape));
  return fmt::format("the number {}", formatConstant(std::get<ScalarArgument>(argument)));
}

/// Written tensors must not overlap themselves, or the deferred copy would be ambiguous.
void checkWritable(const Value& input, const TensorRef& tensor) {
  if (llvm::is_contained(tensor.shape, 0))
    return; // no element, so none overlaps another (an empty clone may have zero strides)
  llvm::SmallVector<std::pair<int64_t, int64_t>, 4> dims; // (stride, extent)
  for (size_t d = 0; d < tensor.shape.size(); ++d)
    if (tensor.shape[d] > 1)
      dims.push_back({tensor.strides[d], tensor.shape[d]});
  std::sort(dims.begin(), dims.end());
  int64_t needed = 1;
  for (auto [stride, extent] : dims) {
    if (stride < needed)
      fail("input '{}' is written by copy_ but its strides {} make elements overlap", input.name(),
           formatExtents(tensor.strides));
    needed = stride * extent;
  }
}

void checkTensorArgument(const Fusion& fusion, const Value& input, const TensorRef& tensor) {
  if (tensor.dtype != input.dtype())
    fail("input '{}' is declared {} but got a {} tensor", input.name(), formatType(input),
         shortName(tensor.dtype).str());
  if (tensor.shape.size() != input.rank())
    fail("input '{}' is declared {} but got shape {}", input.name(), formatType(input),
         formatExtents(tensor.shape));
  for (unsigned d = 0; d < input.rank(); ++d) {
    if (tensor.shape[d] < 0)
      fail("input '{}': extent {} is negative", input.name(), tensor.shape[d]);
    if (input.extents()[d] != kSymbolicExtent && input.extents()[d] != tensor.shape[d])
      fail("input '{}' is declared {} but got shape {}", input.name(), formatType(input),
           formatExtents(tensor.shape));
  }
  if (!checkedByteCount(tensor.shape, tensor.dtype))
    fail("input '{}': shape {} of {} would take more than 2^63 bytes", input.name(),
         formatExtents(tensor.shape), shortName(tensor.dtype).str());
  if (tensor.strides.size() != tensor.shape.size())
    fail("input '{}': {} strides for a rank-{} tensor", input.name(), tensor.strides.size(),
         tensor.shape.size());
  for (int64_t stride : tensor.strides)
    if (stride < 0)
      fail("input '{}': negative strides {} are not supported", input.name(),
           formatExtents(tensor.strides));
  if (!tensor.data && tensor.numel() > 0)
    fail("input '{}': null data pointer", input.name());
  checkAlignedData(input, tensor.data, tensor.dtype);
  if (fusion.aliasOf(&input))
    checkWritable(input, tensor);
}

/// The bytes a tensor's elements span (strides are non-negative here).
std::pair<uintptr_t, uintptr_t> byteRange(const TensorRef& tensor) {
  auto start = reinterpret_cast<uintptr_t>(tensor.data);
  return {start, start + static_cast<uintptr_t>(tensor.span()) * byteSize(tensor.dtype)};
}

/// A copy_ destination must not share memory with any other input: two written inputs would
/// receive two values, and a read of another input would not see the entry value. Spans are
/// compared (conservatively: interleaved views are refused too) by one sweep in address order.
void checkWrittenInputsDoNotOverlap(const Fusion& fusion, llvm::ArrayRef<Argument> arguments) {
  struct Span {
    uintptr_t start, end;
    const Value* input;
    bool written;
  };
  std::vector<Span> spans;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const TensorRef* tensor = std::get_if<TensorRef>(&arguments[i]);
    if (!tensor || !tensor->data || tensor->numel() == 0)
      continue;
    auto [start, end] = byteRange(*tensor);
    spans.push_back(
        {start, end, fusion.inputs()[i], fusion.aliasOf(fusion.inputs()[i]) != nullptr});
  }
  llvm::sort(spans, [](const Span& a, const Span& b) { return a.start < b.start; });
  const Span* reachesFurthest = nullptr;        // of the spans so far, the one ending last
  const Span* writtenReachesFurthest = nullptr; // the same among written spans
  for (const Span& span : spans) {
    const Span* other = nullptr;
    if (span.written && reachesFurthest && span.start < reachesFurthest->end)
      other = reachesFurthest;
    else if (writtenReachesFurthest && span.start < writtenReachesFurthest->end)
      other = writtenReachesFurthest;
    if (other && other->written && span.written)
      fail("inputs '{}' and '{}' are both written by copy_ but share memory", other->input->name(),
           span.input->name());
    if (other) {
      const Span& written = other->written ? *other : span;
      const Span& read = other->written ? span : *other;
      fail("input '{}' shares memory with input '{}', which is written by copy_; every read "
           "must see the entry value, so a copy_ destination must not overlap another input "
           "(pass a copy)",
           read.input->name(), written.input->name());
    }
    if (!reachesFurthest || span.end > reachesFurthest->end)
      reachesFurthest = &span;
    if (span.written && (!writtenReachesFurthest || span.end > writtenReachesFurthest->end))
      writtenReachesFurthest = &span;
  }
}

} // namespace

void checkScalarArgument(const Value& input, const ScalarArgument& scalar) {
  DataType type = input.dtype();
  bool isBool = std::holds_alternative<bool>(scalar);
  bool isInt = std::holds_alternative<int64_t>(scalar);
  if (type == DataType::Bool && !isBool)
    fail("scalar '{}' is b8 and needs true or false, got {}", input.name(), formatConstant(scalar));
  if (isInteger(type)) {
    if (!isInt)
      fail("scalar '{}' is {} and needs an integer, got {}", input.name(), shortName(type).str(),
           formatConstant(scalar));
    int64_t value = std::get<int64_t>(scalar);
    auto [low, high] = integerRange(type);
    bool fits = value >= low && value <= high;
    if (!fits)
      fail("scalar '{}': {} does not fit in {}", input.name(), value, shortName(type).str());
  }
  if (isFloatingPoint(type) && isBool)
    fail("scalar '{}' is {} and needs a number, got {}", input.name(), shortName(type).str(),
         formatConstant(scalar));
}

void checkAlignedData(const Value& input, const void* data, DataType dtype) {
  // A GPU faults on a misaligned access, and the fault is sticky: it kills the context.
  if (reinterpret_cast<uintptr_t>(data) % byteSize(dtype) != 0)
    fail("input '{}': its data pointer {} is not aligned to its element size ({} bytes for {})",
         input.name(), data, byteSize(dtype), shortName(dtype).str());
}

void checkArguments(const Fusion& fusion, llvm::ArrayRef<Argument> arguments) {
  auto inputs = fusion.inputs();
  if (arguments.size() != inputs.size()) {
    std::string names;
    for (const Value* input : inputs)
      names += (names.empty() ? "" : ", ") + input->name();
    fail("fusion '{}' takes {} argument(s) ({}), got {}", fusion.name(), inputs.size(), names,
         arguments.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& input = *inputs[i];
    const TensorRef* tensor = std::get_if<TensorRef>(&arguments[i]);
    if (input.isTensor() != (tensor != nullptr))
      fail("input '{}' is {} {} but got {}", input.name(),
           input.isTensor() ? "the tensor" : "the scalar", formatType(input),
           describeArgument(arguments[i]));
    if (tensor)
      checkTensorArgument(fusion, input, *tensor);
    else
      checkScalarArgument(input, std::get<ScalarArgument>(arguments[i]));
  }
  checkWrittenInputsDoNotOverlap(fusion, arguments);
}

} // namespace widefuse
