#pragma once
/// C++ identifiers for generated code: IR names where they are valid C++ and do not clash
/// with keywords, CUDA built-ins or the prelude, otherwise the IR name with a suffix.

#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/StringSet.h>

#include <string>
#include <utility>

namespace widefuse {

/// Hands out distinct C++ identifiers within one scope (one struct or one function).
class CppNames {
public:
  /// Names for one kernel's scopes: besides the reserved names, those starting with
  /// `kernelPrefix` (the fusion's name and `_`, which begins every type and function the
  /// kernel declares) are moved aside.
  explicit CppNames(std::string kernelPrefix = {}) : kernelPrefix_(std::move(kernelPrefix)) {}

  /// A fresh identifier for `base`: `base` itself when free, else `base_1`, `base_2`, ...
  std::string claim(llvm::StringRef base);

private:
  std::string kernelPrefix_;
  llvm::StringSet<> taken_;
};

/// True for C++ keywords, CUDA built-in names and names the prelude or the kernel skeleton
/// use, which generated code must not redeclare.
bool isReservedCppName(llvm::StringRef name);

} // namespace widefuse
