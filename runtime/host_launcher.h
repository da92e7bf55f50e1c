#pragma once
/// Runs a host kernel's grid on CPU threads in a chosen block order: the host backend's launch,
/// and the test harness that catches code whose result depends on the order of blocks.

#include "runtime/host_compiler.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace widefuse {

/// The order in which the host backend runs a grid's blocks (and each block's threads).
struct BlockOrder {
  enum class Kind { Forward, Reverse, Shuffle };
  Kind kind = Kind::Forward;
  /// Seed of the shuffle.
  uint64_t seed = 0;

  bool operator==(const BlockOrder&) const = default;
};

/// How the host backend runs a kernel's grid.
enum class HostExecution {
  /// Each block's run of a member is one loop over consecutive elements, compiled for this
  /// CPU and vectorized; blocks are spread over a persistent pool of worker threads. What
  /// users get by default.
  Fast,
  /// Every CUDA thread of every block is emulated, blocks and threads in the chosen order: how
  /// tests prove that a kernel's result does not depend on the order of blocks.
  Verify,
};

/// `fast` or `verify`.
llvm::StringRef hostExecutionName(HostExecution execution);
/// Parses `fast` or `verify`; throws Error naming them otherwise.
HostExecution parseHostExecution(llvm::StringRef text);

/// The CPU threads a host launch uses for a `threads` option: the value itself, or one per
/// core for 0 (the default).
unsigned hostThreadCount(unsigned threads);

/// Parses `forward`, `reverse` or `shuffle:SEED`; throws Error listing them otherwise.
BlockOrder parseBlockOrder(llvm::StringRef text);
/// The text form parseBlockOrder reads.
std::string formatBlockOrder(const BlockOrder& order);

/// Runs blocks 0..grid-1 of `kernel` with `parameters`. With one worker the blocks run one
/// after another in `order` (deterministic); with more, workers take blocks in that order
/// from a shared counter, so blocks also overlap in time. Each block's threads run in the
/// same kind of order.
void runHostGrid(const HostKernel& kernel, llvm::ArrayRef<std::byte> parameters, unsigned grid,
                 unsigned threadsPerBlock, const BlockOrder& order, unsigned workers);

/// How the fast path shares out one launch: blocks of contiguous chunks and the CPU threads
/// that take them.
struct FastLaunchShape {
  unsigned grid = 1;
  unsigned workers = 1;
};

/// Elements per worker below which the fast path wakes no more workers: a futex wake-up costs
/// tens of microseconds, what 2^15 elements of an optimizer step take.
inline constexpr int64_t kElementsPerHostWorker = int64_t(1) << 15;

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
