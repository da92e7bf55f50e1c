#pragma once
/// What the host backend's options are: how it runs a kernel's grid (fast or verify), in what
/// block order, on how many CPU threads.

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

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
  /// Every CUDA thread of every block is emulated (runtime/host/device_emulator.h), blocks
  /// and threads in the chosen order and then in other interleavings: how tests prove that
  /// device code is free of races and its result does not depend on the order of blocks.
  Verify,
};

/// `fast` or `verify`.
llvm::StringRef hostExecutionName(HostExecution execution);
/// The names parseHostExecution takes, the default (`fast`) first.
llvm::ArrayRef<llvm::StringRef> hostExecutionNames();
/// Parses `fast` or `verify`; throws Error naming them otherwise.
HostExecution parseHostExecution(llvm::StringRef text);

/// The CPU threads a host launch uses for a `threads` option: the value itself, or one per
/// core for 0 (the default).
unsigned hostThreadCount(unsigned threads);

/// Parses `forward`, `reverse` or `shuffle:SEED`; throws Error listing them otherwise.
BlockOrder parseBlockOrder(llvm::StringRef text);
/// The text form parseBlockOrder reads.
std::string formatBlockOrder(const BlockOrder& order);

/// Elements per worker below which the fast path wakes no more workers: a futex wake-up costs
/// tens of microseconds, what 2^15 elements of an optimizer step take.
inline constexpr int64_t kElementsPerHostWorker = int64_t(1) << 15;

/// How the host backend runs (ExecutorOptions::host).
struct HostOptions {
  /// One vectorized loop per block's member run (fast, the default), or every CUDA thread
  /// emulated (verify). Both give the reference evaluator's values bit for bit.
  HostExecution execution = HostExecution::Fast;
  /// The order of blocks (and, verifying, of each block's threads).
  BlockOrder blockOrder;
  /// Verify: runs of each launch from the same inputs, in the block order and then in
  /// shuffles of other seeds; a launch whose runs leave different bytes fails.
  unsigned interleavings = 3;
  /// CPU threads running blocks; 0 (the default) is one per core, 1 runs the blocks one after
  /// another in the block order.
  unsigned threads = 0;
  /// Fast path: the fewest elements that keep one more worker thread busy (tests lower it to
  /// run small fusions on several workers).
  int64_t elementsPerWorker = kElementsPerHostWorker;
};

} // namespace widefuse
