#pragma once
/// The reference backend: the evaluator (ir/evaluator.h) runs the fusion op by op, with no
/// kernels; what every other backend is compared with, bit for bit.

#include "runtime/backend.h"

namespace widefuse {

/// The reference backend (`reference`).
const Backend& referenceBackend();

} // namespace widefuse
