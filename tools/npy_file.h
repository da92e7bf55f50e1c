#pragma once
/// Reading and writing NumPy .npy files (little-endian, C order) as HostTensors, so that the
/// CLI can take inputs from NumPy and hand results back.
///
/// bfloat16 has no NumPy dtype: a bf16 tensor is stored as its raw bits with descr `<u2`, and a
/// `<u2` file is read as bf16 bits when bf16 is expected.

#include "ir/data_type.h"
#include "ir/host_tensor.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>

namespace widefuse {

/// What a .npy header says, after validation: the element type, the shape and where the data
/// starts.
struct NpyHeader {
  /// Format version of the file: 1, 2 or 3 (the minor version is always 0).
  unsigned majorVersion = 1;
  /// The descr string as written in the file (`<f4`).
  std::string descr;
  /// The element type the descr maps to (`<u2` maps to UInt16, or to BFloat16 when that was
  /// expected).
  DataType dtype = DataType::Float;
  /// Extents, outermost first.
  llvm::SmallVector<int64_t, 4> shape;
  /// Byte offset of the first element.
  size_t dataOffset = 0;
};

/// Parses and validates the header of an in-memory .npy file. `nameForMessages` names the file
/// in errors. When `expected` is given, a differing element type is an Error naming both.
/// Throws Error for anything malformed or unsupported; never reads past `bytes`.
NpyHeader parseNpyHeader(llvm::StringRef bytes, llvm::StringRef nameForMessages,
                         std::optional<DataType> expected = std::nullopt);

/// Decodes an in-memory .npy file. The data must be exactly as long as the shape needs.
/// Throws Error (naming `nameForMessages`) for malformed, unsupported or mistyped input.
HostTensor readNpyBytes(llvm::StringRef bytes, llvm::StringRef nameForMessages,
                        std::optional<DataType> expected = std::nullopt);

/// Reads a .npy file; see readNpyBytes. An unreadable file is an Error naming the path.
HostTensor readNpy(llvm::StringRef path, std::optional<DataType> expected = std::nullopt);

/// The NumPy dtype descr a tensor of this type is written with (`<f4`; `<u2` for bfloat16).
llvm::StringRef npyDescr(DataType dtype);

/// Encodes a tensor as a .npy file, byte-identical to what `numpy.save` writes for the same
/// array (version 1.0, or 2.0 when the header does not fit in 1.0).
std::string npyBytes(const HostTensor& tensor);

/// Writes a tensor to a .npy file, replacing it. Throws Error naming the path when the file
/// cannot be written.
void writeNpy(llvm::StringRef path, const HostTensor& tensor);

} // namespace widefuse
