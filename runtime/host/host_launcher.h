#pragma once
/// Runs a host kernel's grid on CPU threads in a chosen block order: the host backend's fast
/// launch (the device emulator runs the verify one).

#include "runtime/host/host_compiler.h"
#include "runtime/host/host_options.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace widefuse {

/// How the fast path shares out one launch: blocks of contiguous chunks and the CPU threads
/// that take them.
struct FastLaunchShape {
  unsigned grid = 1;
  unsigned workers = 1;
};

/// The fast path's split of a launch whose members hold `numChunks` chunks and `numElements`
/// elements in all, on up to `threads` threads: several blocks per worker (taken dynamically,
/// so the last blocks of a launch keep every worker busy), and no more workers than
/// `elementsPerWorker` elements each keep busy.
FastLaunchShape fastLaunchShape(unsigned numChunks, int64_t numElements, unsigned threads,
                                int64_t elementsPerWorker = kElementsPerHostWorker);

/// Runs blocks 0..grid-1 of `kernel`'s fast entry, taken in `order` by the calling thread and
/// up to `workers - 1` threads of the global HostThreadPool. Allocates nothing in forward or
/// reverse order.
void runHostGridFast(const HostKernel& kernel, llvm::ArrayRef<std::byte> parameters, unsigned grid,
                     const BlockOrder& order, unsigned workers);

} // namespace widefuse
