#pragma once
/// torch tensors read through the Python C API, without linking libtorch: the steady state of
/// execute() asks every tensor for its address, sizes, strides and dtype on every call, so the
/// methods and properties are resolved once and called directly.

#include <Python.h>

#include <llvm/ADT/SmallVector.h>

#include <cstdint>
#include <string>

namespace widefuse::python {

/// Where a torch tensor's elements are and how they are laid out, as the steady state compares
/// them between calls.
struct TorchLayout {
  void* data = nullptr;
  llvm::SmallVector<int64_t, 4> sizes;
  llvm::SmallVector<int64_t, 4> strides;
  /// The torch.dtype object (dtypes are singletons: compared by identity).
  PyObject* dtype = nullptr;
};

/// What else a tensor not seen before must be: dense, unconjugated, on a device widefuse runs
/// on. (The checked path in widefuse/torch_tensors.py says why not, with its message.)
struct TorchFacts {
  bool strided = false;
  bool conjugated = false;
  bool negated = false;
  /// -1 on the CPU, the ordinal on a CUDA device, -2 elsewhere (meta, other devices).
  int device = -2;
};

/// Reads torch tensors; one per process, made when a torch tensor is first adopted.
class TorchTensorReader {
public:
  /// The reader, or null while the program has not imported torch (or torch lacks what the
  /// reader calls: then every tensor takes the checked path).
  static TorchTensorReader* get();

  /// True for torch.Tensor and torch.nn.Parameter themselves; other subclasses (DTensor,
  /// fake tensors) may override what is read, so they take the checked path.
  bool isPlainTensor(PyObject* object) const {
    return Py_TYPE(object) == tensorType_ || Py_TYPE(object) == parameterType_;
  }

  /// Reads `tensor`'s layout into `layout`; false (the Python error cleared) when a read fails.
  bool readLayout(PyObject* tensor, TorchLayout& layout) const;
  /// Reads the facts a tensor not seen before is checked for; false when a read fails.
  bool readFacts(PyObject* tensor, TorchFacts& facts) const;
  /// Reads `tensor`'s layout and facts when widefuse reads it as it is: strided, no lazy
  /// conjugate or negative bit, on the CPU or a CUDA device, not requiring grad under grad
  /// mode; false otherwise (the checked path in Python then names what is wrong). What
  /// torch_layout, array_layouts and direct_arguments read.
  bool readPlain(PyObject* tensor, TorchLayout& layout, TorchFacts& facts) const;
  /// Whether `tensor.requires_grad`; true when the read fails (the checked path then decides).
  bool requiresGrad(PyObject* tensor) const;
  /// Whether the conjugate or the negative bit is set; true when a read fails.
  bool lazyBitSet(PyObject* tensor) const;
  /// torch.is_grad_enabled(); true when the call fails.
  bool gradEnabled() const;

private:
  TorchTensorReader() = default;
  /// Resolves the types and descriptors; false when torch is missing or lacks one of them.
  bool resolve(PyObject* torch);

  PyTypeObject* tensorType_ = nullptr;
  PyTypeObject* parameterType_ = nullptr;
  PyObject* strided_ = nullptr; // torch.strided
  // Descriptors of torch._C.TensorBase, called with the tensor as their first argument.
  PyObject* dataPtr_ = nullptr;
  PyObject* stride_ = nullptr;
  PyObject* isConj_ = nullptr;
  PyObject* isNeg_ = nullptr;
  PyObject* getDevice_ = nullptr;
  PyObject* shape_ = nullptr; // getset descriptors
  PyObject* dtype_ = nullptr;
  PyObject* layout_ = nullptr;
  PyObject* isCpu_ = nullptr;
  PyObject* isCuda_ = nullptr;
  PyObject* requiresGrad_ = nullptr;
  PyObject* isGradEnabled_ = nullptr; // torch._C.is_grad_enabled
};

/// The short name ("f32") `torchTypes` (torch.dtype -> short name, from widefuse.data_type)
/// gives `dtype`; "" for a dtype it lacks.
std::string shortNameOfTorchType(PyObject* torchTypes, PyObject* dtype);

} // namespace widefuse::python
