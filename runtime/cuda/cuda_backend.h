#pragma once
/// The CUDA backend: cubins from NVRTC loaded into the GPU through the driver, launched on the
/// caller's stream; tensors in host memory are staged through device buffers.

#include "runtime/backend.h"

namespace widefuse {

/// The CUDA backend (`cuda`).
const Backend& cudaBackend();

} // namespace widefuse
