#include "ir/host_tensor.h"

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

} // namespace widefuse
