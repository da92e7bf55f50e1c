#pragma once
/// The none backend: the kernels compiled with NVRTC and every launch bound, then nothing run;
/// what `--backend none` and the dispatch benchmark measure (compile and dispatch cost alone).

#include "runtime/backend.h"

namespace widefuse {

/// The none backend (`none`).
const Backend& noneBackend();

} // namespace widefuse
