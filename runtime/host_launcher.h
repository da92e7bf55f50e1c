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

} // namespace widefuse
