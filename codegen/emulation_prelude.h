#pragma once
/// The emulation prelude: CUDA's built-ins as calls into the device emulator, for the host C++
/// compiler building a kernel's device code (runtime/host/device_emulator.h).

#include <llvm/ADT/StringRef.h>

namespace widefuse {

/// The text of codegen/emulation_prelude.cuh (with codegen/emulation_abi.h and
/// ir/inverse_erf.h in it), put in front of a kernel's source by the device emulator.
llvm::StringRef emulationPrelude();

} // namespace widefuse
