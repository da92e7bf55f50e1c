#pragma once
/// The one reader of a Python call's arguments: execute(), validate() and prepare() hand their
/// objects (vector inputs spread) to readArguments, which reads each one as the fusion's input
/// takes it (arrays: array_reader.h; numbers as Python numbers), checks it against the input's
/// declaration (dtype, declared layout, writability of a copy_ destination) and the inputs
/// together (torch tensors on one device), and returns the arguments the executor runs, or
/// the first refusal. The steady state (steady_inputs.h) reads back what it adopted from here.

#include "python_frontend/bindings/arguments/array_reader.h"

#include "ir/arguments.h"
#include "ir/fusion.h"

#include <nanobind/nanobind.h>

#include <optional>
#include <vector>

namespace widefuse::python {

/// How an accepted argument was given, as the steady state reads it back.
enum class ArgumentKind : uint8_t {
  Number, ///< exactly a Python bool, int or float
  Torch,  ///< torch.Tensor or torch.nn.Parameter itself (ArrayRead::plainTorch)
  Buffer, ///< exactly a numpy.ndarray, read through the buffer protocol
  Other,  ///< anything else (the steady state adopts no call with one)
};

/// What the reader knows of one accepted input beyond its Argument.
struct InputRead {
  ArgumentKind kind = ArgumentKind::Other;
  PyObject* torchDtype = nullptr; ///< Torch: the torch.dtype
  int torchDevice = -2;           ///< Torch: -1 the CPU, else the CUDA device's ordinal
};

/// Accepted arguments: one per fusion input (or per plain output, for readOutputs), and what
/// keeps their memory readable while they are used.
struct ReadArguments {
  ReadArguments() = default;
  ReadArguments(ReadArguments&&) = default;
  ReadArguments& operator=(ReadArguments&&) = default;
  ReadArguments(const ReadArguments&) = delete; // the views are held once

  std::vector<Argument> arguments;
  std::vector<InputRead> inputs;
  /// NumPy buffer views, held until the run is over (a prepared run takes them).
  std::vector<HeldBuffer> held;
  /// Objects made while reading (numpy.asarray's), kept alive with the views.
  std::vector<nanobind::object> keep;
  /// Whether a tensor is in device memory, and the first device array's stream (read once
  /// every input was accepted, from `streamSource` as `streamRead` says to).
  bool onDevice = false;
  std::optional<uintptr_t> stream;
  PyObject* streamSource = nullptr; ///< borrowed from the values being read
  ArrayRead streamRead;
  /// Where the torch tensors are: -2 none given, -1 the CPU, else the CUDA device's ordinal;
  /// and the input
  /// of the first (the others must be where it is).
  int torchDevice = -2;
  size_t firstTorchInput = 0;
};

/// Where a torch tensor is, as torch and messages name it: "cpu" for -1, "cuda:<ordinal>".
std::string torchDeviceName(int device);

/// Reads `values` (a list or tuple, one per fusion input) for `fusion`. Returns false with
/// `refusal` set (index and name: the input's) at the first value refused, in input order;
/// throws the Python error of a read that raises.
bool readArguments(const Fusion& fusion, nanobind::handle values, const DtypeTables& tables,
                   ReadArguments& read, Refusal& refusal);

/// Reads `object` as the number for runtime scalar input `input`: a Python number (`exact`
/// when it is exactly a bool, int or float), a NumPy scalar, a 0-d NumPy array or torch
/// tensor, or another number of Python's numeric tower; a float only for a floating-point
/// input. Returns false with `refusal`'s code and facts set; throws a read's Python error.
bool readScalar(PyObject* object, const Value& input, const DtypeTables& tables,
                ScalarArgument& scalar, bool& exact, Refusal& refusal);

/// Reads `outputs`, the arrays prepare(outputs=...) writes the fusion's plain outputs into:
/// one per plain output, of its dtype, writable, in device memory exactly when the inputs are
/// (`onDevice`). Their shapes and density are checked by the runtime. Refuses as
/// readArguments does (index: the output's; name: "output k").
bool readOutputs(const Fusion& fusion, nanobind::handle outputs, bool onDevice,
                 const DtypeTables& tables, ReadArguments& read, Refusal& refusal);

} // namespace widefuse::python
