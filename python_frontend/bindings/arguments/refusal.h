#pragma once
/// Why the argument reader refuses a Python object: a code and the facts its message needs.
/// The messages are the Python package's (widefuse/arguments.py turns each code into its
/// error), so that they read as Python's and keep their exception types.

#include <nanobind/nanobind.h>

#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace widefuse::python {

/// Every reason, in the order of Python's checks. The facts each one carries are listed in
/// widefuse/arguments.py beside its message.
enum class RefusalCode : uint8_t {
  // Reading an array.
  NumpyDtype,         ///< a NumPy dtype widefuse lacks
  NotAligned,         ///< a NumPy array not aligned to its element type
  NegativeStrides,    ///< negative strides (bytes)
  StridesNotElements, ///< strides (bytes) that are not whole elements
  TorchLayout,        ///< a torch tensor that is not strided
  TorchQuantized,     ///< a quantized torch tensor
  TorchConjugated,    ///< torch.conj's lazy conjugate bit
  TorchNegated,       ///< the lazy negative bit
  TorchMeta,          ///< a meta tensor
  TorchDevice,        ///< a torch device that is neither the CPU nor CUDA
  RequiresGrad,       ///< a tensor that requires grad under grad mode
  TorchDtype,         ///< a torch dtype widefuse lacks
  ArrayType,          ///< a CUDA array interface typestr NumPy does not know
  DlpackExport,       ///< a __dlpack__ export that could not be read
  DlpackDevice,       ///< a DLPack device neither the CPU nor CUDA
  NotAnArray,         ///< an object for a tensor input that is no array
  // An array against its input's declaration, and the inputs together.
  DtypeMismatch, ///< another dtype than declared
  Layout,        ///< strides that break the declared stride order and contiguity
  ReadOnly,      ///< a read-only array for an input written in place
  DevicesDiffer, ///< torch tensors on two devices
  // A number for a runtime scalar input.
  FloatForInteger, ///< a float for a scalar that is not floating point
  ComplexScalar,   ///< a complex number (no runtime scalar is complex)
  NotANumber,      ///< anything else that is not a number
  IntegerOverflow, ///< an integer past 64 bits
  // prepare(outputs=...).
  OutputCount,     ///< as many arrays as plain outputs are needed
  OutputDtype,     ///< an output array of another dtype than the output's
  OutputReadOnly,  ///< a read-only output array
  OutputPlacement, ///< an output array in other memory than the inputs
};

/// The code's name as the Python package's table knows it ("numpy_dtype").
llvm::StringRef refusalName(RefusalCode code);

/// The names of every code, in order (the Python table checks it knows each).
std::vector<std::string> refusalNames();

/// A refusal: which argument (`index`, among the fusion's inputs or the outputs given), its
/// name in messages (`name`: the input's, or what the caller called the object), why, and the
/// facts the message needs.
struct Refusal {
  RefusalCode code = RefusalCode::NotAnArray;
  size_t index = 0;
  std::string name;
  nanobind::dict facts;
};

} // namespace widefuse::python
