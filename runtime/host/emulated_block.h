#pragma once
/// One block of an emulated launch: every CUDA thread of the block a fiber on the calling CPU
/// thread, __syncthreads a real barrier, warp collectives with lane semantics, and the
/// block's checks (barrier divergence, warp masks, shared-memory races, bounds).

#include "codegen/emulation_abi.h"
#include "runtime/host/emulation_report.h"

#include <boost/context/fiber.hpp>

#include <llvm/ADT/ArrayRef.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

namespace widefuse {

class EmulatedLaunch;

/// Fiber stacks of one CPU thread, reused from block to block.
class FiberStacks;

/// A block's run; its fibers call back into it through the kernel's hooks.
class EmulatedBlock {
public:
  EmulatedBlock(EmulatedLaunch& launch, unsigned block);
  ~EmulatedBlock();
  EmulatedBlock(const EmulatedBlock&) = delete;
  EmulatedBlock& operator=(const EmulatedBlock&) = delete;

  /// Runs every thread of the block to its end, or until a fault stops the launch.
  void run();

  /// The block this CPU thread runs now (null outside a block).
  static EmulatedBlock* current();

  // ---- the hooks (on a thread's fiber) ----
  void access(const void* address, size_t bytes, bool write, void* pc);
  void barrier(void* pc);
  unsigned atomicAdd(unsigned* address, unsigned value, void* pc);
  uint64_t warp(int kind, unsigned mask, uint64_t value, int operand, int width, void* pc);
  unsigned activeMask(void* pc);
  bool isGlobal(const void* address) const;
  const wf_emu_thread* self() const;
  void fail(const char* what, void* pc);
  void covered(void* pc) { coveredBlocks_.insert(pc); }

private:
  struct Lane;
  struct SharedByte;
  enum class Wait { Ready, Barrier, Warp, Active, Exited };

  void resume(Lane& lane);
  /// Back to the scheduler; returns when the scheduler resumes this thread.
  void yield();
  /// Records a fault (if any) that stops the launch, and leaves this thread's fiber for good.
  [[noreturn]] void stop(std::optional<EmulationReport> report);
  /// Nobody is ready: releases the barrier, or reports why it cannot be released.
  bool settle();
  /// Answers every thread waiting in __activemask with the lanes of its warp waiting there too.
  bool convergeActive();
  void completeWarp(Lane& last);
  void sharedAccess(size_t offset, size_t bytes, bool write, void* pc);
  /// Whether [at, at + bytes) lies in one of the launch's buffers.
  bool inRecentBuffer(uintptr_t at, size_t bytes);
  /// Has the launch save the buffer about to be accessed, once per buffer and block.
  void keepOriginal(uintptr_t at, size_t bytes);
  EmulationReport report(EmulationFault fault, std::string detail,
                         std::vector<EmulationSite> sites) const;
  /// Abandons the suspended fibers of a stopped launch (never unwound: their frames belong
  /// to the kernel).
  void abandon();

  EmulatedLaunch& launch_;
  unsigned block_;
  std::vector<Lane> lanes_;
  Lane* running_ = nullptr;
  boost::context::fiber scheduler_;
  const void* schedulerStack_ = nullptr; // the CPU thread's own stack (for AddressSanitizer)
  size_t schedulerStackSize_ = 0;
  uint32_t epoch_ = 1; // barriers passed + 1
  uint64_t random_;    // the interleaving's generator
  // The kernel's __shared__ storage for this CPU thread, and its shadow.
  std::byte* shared_ = nullptr;
  size_t sharedBytes_ = 0;
  std::vector<SharedByte> shadow_;
  // The buffers recent global accesses fell in (an element's tensors, say), tried first.
  std::array<std::pair<uintptr_t, uintptr_t>, 8> recent_{};
  unsigned nextRecent_ = 0;
  // The buffers this block knows to be saved before their first access (interleavings).
  std::array<std::pair<uintptr_t, uintptr_t>, 8> saved_{};
  unsigned nextSaved_ = 0;
  bool stopped_ = false;
  std::unordered_set<void*> coveredBlocks_; // basic blocks run, while coverage is recorded
};

/// The functions a kernel's emulated build calls (installed into each kernel when it loads):
/// each goes to the block the calling CPU thread runs.
const wf_emu_hooks& emulationHooks();
/// Turns the hooks' coverage callback on or off (EmulationCoverage).
void setCoverageHook(bool on);

} // namespace widefuse
