#pragma once
/// Tensors in host memory: a non-owning strided view and an owning dense buffer. Used by the
/// reference evaluator, the host backend and the .npy reader/writer.

#include "ir/data_type.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace widefuse {

/// Row-major strides (in elements) of a dense tensor of this shape.
llvm::SmallVector<int64_t, 4> contiguousStrides(llvm::ArrayRef<int64_t> shape);
/// Number of elements of a shape (1 for a 0-d shape). The shape must fit in memory (see
/// checkedByteCount): every shape that reaches a tensor has been checked.
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// The bytes a tensor of these extents and element type occupies (a symbolic extent, -1,
/// counts as 1), or nullopt past INT64_MAX: no such tensor can be addressed, so a shape
/// that large is an error wherever it is declared or computed.
std::optional<int64_t> checkedByteCount(llvm::ArrayRef<int64_t> extents, DataType dtype);

/// A view of host memory holding a tensor: type, shape and strides in elements. Does not own
/// the memory.
struct TensorRef {
  DataType dtype = DataType::Float;
  llvm::SmallVector<int64_t, 4> shape;
  llvm::SmallVector<int64_t, 4> strides;
  void* data = nullptr;

  /// Number of elements.
  int64_t numel() const { return numElements(shape); }
  /// True when the strides are the dense row-major ones (size-1 dimensions ignored; a tensor
  /// without elements is always dense).
  bool isContiguous() const;
  /// Elements from the first addressed one to one past the last (0 without elements): what a
  /// copy of the tensor's memory must cover.
  int64_t span() const;
};

/// A dense row-major tensor owning its host memory (zero-initialised).
class HostTensor {
public:
  HostTensor() = default;
  HostTensor(DataType dtype, llvm::ArrayRef<int64_t> shape);

  DataType dtype() const { return dtype_; }
  llvm::ArrayRef<int64_t> shape() const { return shape_; }
  unsigned rank() const { return static_cast<unsigned>(shape_.size()); }
  int64_t numel() const { return numElements(shape_); }
  size_t byteSize() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  /// Typed access; T must match the element size (uint16_t for half/bfloat16 bits).
  template <typename T> T* as() { return reinterpret_cast<T*>(bytes_.data()); }
  template <typename T> const T* as() const { return reinterpret_cast<const T*>(bytes_.data()); }
  /// A view of this tensor.
  TensorRef ref();

private:
  DataType dtype_ = DataType::Float;
  llvm::SmallVector<int64_t, 4> shape_;
  std::vector<std::byte> bytes_;
};

/// Element i of a dense floating-point tensor as a double (f16/bf16 decoded exactly). Throws
/// InternalError for other dtypes.
double floatingElement(const HostTensor& tensor, int64_t i);
/// Stores `value` into element i of a dense floating-point tensor, rounded to its dtype
/// (nearest even). Throws InternalError for other dtypes.
void setFloatingElement(HostTensor& tensor, int64_t i, double value);

} // namespace widefuse
