#pragma once
/// The host backend: the generated kernels built by the host C++ compiler (behind the host
/// prelude of CUDA built-ins) and run on CPU threads, bit for bit what the reference evaluator
/// computes.

#include "runtime/backend.h"

namespace widefuse {

/// The host backend (`host`).
const Backend& hostBackend();

} // namespace widefuse
