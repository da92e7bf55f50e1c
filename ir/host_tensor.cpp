#include "ir/host_tensor.h"

#include "ir/error.h"
#include "ir/half_float.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>

namespace widefuse {

llvm::SmallVector<int64_t, 4> contiguousStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * std::max<int64_t>(shape[d], 1);
  return strides;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

std::optional<int64_t> checkedByteCount(llvm::ArrayRef<int64_t> extents, DataType dtype) {
  if (llvm::is_contained(extents, 0))
    return 0;
  int64_t bytes = static_cast<int64_t>(byteSize(dtype));
  for (int64_t extent : extents)
    if (extent > 0 && __builtin_mul_overflow(bytes, extent, &bytes))
      return std::nullopt;
  return bytes;
}

bool TensorRef::isContiguous() const {
  // No element is ever addressed, so any strides will do (NumPy gives empty arrays stride 0).
  if (numel() == 0)
    return true;
  auto dense = contiguousStrides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && strides[d] != dense[d])
      return false;
  return true;
}

int64_t TensorRef::span() const {
  if (numel() == 0)
    return 0;
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    last += (shape[d] - 1) * strides[d];
  return last + 1;
}

HostTensor::HostTensor(DataType dtype, llvm::ArrayRef<int64_t> shape)
    : dtype_(dtype), shape_(shape.begin(), shape.end()),
      bytes_(static_cast<size_t>(numElements(shape)) * widefuse::byteSize(dtype)) {}

TensorRef HostTensor::ref() {
  TensorRef view;
  view.dtype = dtype_;
  view.shape = shape_;
  view.strides = contiguousStrides(shape_);
  view.data = bytes_.data();
  return view;
}

double floatingElement(const HostTensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
  case DataType::Float:
    return tensor.as<float>()[i];
  case DataType::Double:
    return tensor.as<double>()[i];
  case DataType::Half:
    return halfBitsToFloat(tensor.as<uint16_t>()[i]);
  case DataType::BFloat16:
    return bfloat16BitsToFloat(tensor.as<uint16_t>()[i]);
  case DataType::Float8_e4m3fn:
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    return narrowBitsToFloat(tensor.dtype(), tensor.as<uint8_t>()[i]);
  default:
    WF_UNREACHABLE("floatingElement of a {} tensor", shortName(tensor.dtype()).str());
  }
}

void setFloatingElement(HostTensor& tensor, int64_t i, double value) {
  switch (tensor.dtype()) {
  case DataType::Float:
    tensor.as<float>()[i] = float(value);
    return;
  case DataType::Double:
    tensor.as<double>()[i] = value;
    return;
  case DataType::Half:
    tensor.as<uint16_t>()[i] = toHalfBits(value);
    return;
  case DataType::BFloat16:
    tensor.as<uint16_t>()[i] = toBFloat16Bits(value);
    return;
  case DataType::Float8_e4m3fn:
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    tensor.as<uint8_t>()[i] = uint8_t(toNarrowBits(tensor.dtype(), value, float(value)));
    return;
  default:
    WF_UNREACHABLE("setFloatingElement of a {} tensor", shortName(tensor.dtype()).str());
  }
}

} // namespace widefuse
