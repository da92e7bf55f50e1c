#pragma once
/// torch tensors read through the Python C API, without linking libtorch. What is read here
/// is torch's own public interface (torch.Tensor, torch.nn.Parameter, the methods and
/// properties of torch._C.TensorBase, torch.strided, torch.is_grad_enabled,
/// torch.cuda.current_stream), not widefuse's: the argument reader asks a tensor for its
/// address, sizes, strides and dtype, and the steady state asks again on every call, so for
/// torch.Tensor and torch.nn.Parameter themselves the methods and properties are resolved once
/// and called directly; a subclass is read through its attributes, as Python code would.

#include <Python.h>

#include <llvm/ADT/SmallVector.h>
#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>

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
/// on.
struct TorchFacts {
  bool strided = false;
  bool conjugated = false;
  bool negated = false;
  /// -1 on the CPU, the ordinal on a CUDA device, -2 elsewhere (meta, other devices).
  int device = -2;
};

/// Why checkTensor refuses a tensor, in the order it asks.
enum class TorchRefusal : uint8_t {
  None,
  Layout,       ///< not strided (sparse, ...); `fact` is tensor.layout
  Quantized,    ///< `fact` is tensor.dtype
  Conjugated,   ///< torch.conj's lazy conjugate bit
  Negated,      ///< the lazy negative bit
  Meta,         ///< a meta tensor: no data
  Device,       ///< neither the CPU nor CUDA; `fact` is tensor.device
  RequiresGrad, ///< requires grad while grad mode is on
};

/// checkTensor's answer: a refusal and the object its message names.
struct TorchCheck {
  TorchRefusal refusal = TorchRefusal::None;
  nanobind::object fact;
};

/// Reads torch tensors; one per process, made when the program has imported torch.
class TorchTensorReader {
public:
  /// The reader, or null while the program has not imported torch (or torch lacks what the
  /// reader calls: then no object is taken for a torch tensor).
  static TorchTensorReader* get();

  /// True for torch.Tensor and torch.nn.Parameter themselves; other subclasses (DTensor,
  /// fake tensors) may override what is read, so they are read through their attributes.
  bool isPlainTensor(PyObject* object) const {
    return Py_TYPE(object) == tensorType_ || Py_TYPE(object) == parameterType_;
  }
  /// isinstance(object, torch.Tensor); throws the Python error when that raises.
  bool isTensor(PyObject* object) const;

  /// Reads a plain tensor's data pointer alone; false (the Python error cleared) when the read
  /// fails.
  bool readData(PyObject* tensor, void*& data) const;
  /// Reads a plain tensor's layout into `layout`; false (the Python error cleared) when a read
  /// fails.
  bool readLayout(PyObject* tensor, TorchLayout& layout) const;
  /// Reads the facts a plain tensor not seen before is checked for; false when a read fails.
  bool readFacts(PyObject* tensor, TorchFacts& facts) const;
  /// Reads a plain tensor's layout and facts when it is read as it is: strided, no lazy
  /// conjugate or negative bit, on the CPU or a CUDA device, not requiring grad under grad
  /// mode (unless `allowGrad`); false otherwise (checkTensor then says why).
  bool readPlain(PyObject* tensor, TorchLayout& layout, TorchFacts& facts,
                 bool allowGrad = false) const;
  /// Whether a plain tensor requires grad; true when the read fails.
  bool requiresGrad(PyObject* tensor) const;
  /// Whether a plain tensor's conjugate or negative bit is set; true when a read fails.
  bool lazyBitSet(PyObject* tensor) const;
  /// torch.is_grad_enabled(); true when the call fails.
  bool gradEnabled() const;

  /// Any tensor (a subclass too) checked through its attributes, in the order widefuse
  /// refuses tensors: layout, quantization, the lazy bits, the device, grad (unless
  /// `allowGrad`). Without a refusal, reads its layout and facts (the dtype unchecked). Throws
  /// the Python error of a read that raises.
  TorchCheck checkTensor(PyObject* tensor, bool allowGrad, TorchLayout& layout,
                         TorchFacts& facts) const;
  /// tensor.ndim; throws the Python error of a read that raises.
  size_t rank(PyObject* tensor) const;
  /// torch.cuda.current_stream(device).cuda_stream: where torch queues work on that device.
  uintptr_t currentStream(int device) const;

private:
  TorchTensorReader() = default;
  /// Resolves the types and descriptors; false when torch is missing or lacks one of them.
  bool resolve(PyObject* torch);

  PyObject* torch_ = nullptr;
  PyObject* tensorClass_ = nullptr; // torch.Tensor, for isinstance
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

} // namespace widefuse::python
