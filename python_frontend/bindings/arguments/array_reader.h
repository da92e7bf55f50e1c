#pragma once
/// One Python object read as an array, as widefuse takes arrays: NumPy arrays (through the
/// buffer protocol, else their array interface: ml_dtypes' types), torch tensors (CPU or CUDA
/// device 0), objects with a CUDA array interface (CuPy, Numba) or a `__dlpack__` export, and
/// objects with an `__array_interface__` (through numpy.asarray). What it refuses it says
/// why, as a Refusal; the argument reader (argument_reader.h) checks the result against the
/// fusion's inputs.

#include "python_frontend/bindings/arguments/buffer_reader.h"
#include "python_frontend/bindings/arguments/refusal.h"

#include "ir/arguments.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>

namespace widefuse::python {

/// The tables the reader maps an array's own dtype by (widefuse/data_type.py keeps them):
/// torch.dtype and numpy.dtype to the text form's short names ("f32"). Borrowed dicts.
struct DtypeTables {
  PyObject* torch = nullptr; ///< empty while the program has not imported torch
  PyObject* numpy = nullptr; ///< ml_dtypes' types once it is imported
};

/// How an array was read.
enum class ArraySource : uint8_t {
  Buffer,         ///< a NumPy array through the buffer protocol
  NumpyInterface, ///< a NumPy array through its dtype and array interface (bf16, fp8)
  Torch,          ///< a torch tensor
  CudaInterface,  ///< __cuda_array_interface__
  Dlpack,         ///< __dlpack__
};

/// An array as read: where its elements are and how they are laid out.
struct ArrayRead {
  TensorRef ref; ///< strides in elements
  ArraySource source = ArraySource::Buffer;
  bool readOnly = false;
  bool onDevice = false;
  /// CudaInterface: the interface's `stream` (None when it names none).
  nanobind::object interfaceStream;
  /// torch tensors: -1 on the CPU, else the CUDA device's ordinal; -2 for other arrays.
  int torchDevice = -2;
  /// torch tensors: the torch.dtype (a singleton).
  PyObject* torchDtype = nullptr;
  /// torch.Tensor or torch.nn.Parameter itself, read through the resolved descriptors (what
  /// the steady state reads back).
  bool plainTorch = false;
  /// Buffer: the view, held while the memory is used.
  HeldBuffer held;
  /// An object that must live while the memory is used (numpy.asarray's array of an object
  /// with an __array_interface__).
  nanobind::object keep;
};

/// Reads `object` as an array. Returns false with `refusal`'s code and facts set (its index
/// and name are the caller's) when widefuse does not take it; throws the Python error of a
/// read that raises, as Python code reading the array would. A torch tensor that requires
/// grad is refused under grad mode unless `allowGrad`.
bool readArray(PyObject* object, const DtypeTables& tables, bool allowGrad, ArrayRead& read,
               Refusal& refusal);

/// The stream the producer queues its work on device array `object` (read as `read`): the
/// CUDA array interface's own (version 3), else torch's current stream for a torch object
/// (torch's interfaces name none); nullopt for a host array or the legacy default stream.
/// Read apart from readArray: the first device array's stream is the run's.
std::optional<uintptr_t> readStream(PyObject* object, const ArrayRead& read);

/// The data type `table` (a DtypeTables dict) maps `dtype` to; nullopt for one it lacks.
std::optional<DataType> dataTypeIn(PyObject* table, PyObject* dtype);

/// DLPack's code of an fp8 type (DLPack 1.1), nullopt for other types: how fp8 arrays are read
/// and how the executor exports its fp8 outputs.
std::optional<nanobind::dlpack::dtype_code> float8DlpackCode(DataType type);

/// The number `object` holds when it is exactly a Python bool, int of 64 bits or float (what
/// the steady state compares a number by).
std::optional<ScalarArgument> exactNumber(PyObject* object);

} // namespace widefuse::python
