#pragma once
/// Resolving the entry points of a library loaded at run time (the CUDA driver, NVRTC): one
/// helper so that both report a missing symbol the same way.

#include <llvm/ADT/STLFunctionalExtras.h>

#include <string>

namespace widefuse {

/// Finds a symbol by name; null when absent (dlsym on a handle, or a test's table).
using SymbolLookup = llvm::function_ref<void*(const char* name)>;

/// Stores the symbol `name` into `slot`, typed as the slot's function pointer. Returns false,
/// with `reason` saying "it lacks <name>", when the library has no such symbol.
template <typename Function>
bool resolveSymbol(SymbolLookup lookup, const char* name, Function& slot, std::string& reason) {
  void* symbol = lookup(name);
  if (!symbol) {
    reason = std::string("it lacks ") + name;
    return false;
  }
  slot = reinterpret_cast<Function>(symbol);
  return true;
}

} // namespace widefuse
