#pragma once
/// The device emulator: a kernel's CUDA text itself — __global__ entry, __shared__ arrays,
/// barriers, warp collectives, __CUDA_ARCH__ branches — compiled by the host compiler and run
/// on CPU fibers under the CUDA execution model, with compute-sanitizer's checks: barrier
/// divergence, shared-memory races between barriers, accesses outside the launch's buffers or
/// misaligned, warp masks that do not match their lanes, tickets left non-zero.
/// docs/testing.md says where it runs and what it guarantees.

#include "runtime/host/emulated_buffers.h"
#include "runtime/host/emulated_lines.h"
#include "runtime/host/emulation_report.h"
#include "runtime/host/host_compiler.h"
#include "runtime/host/host_options.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/StringRef.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace widefuse {

/// A line of a kernel's generated text with code in its emulated build, and whether it ran.
struct CoveredLine {
  int line = 0;
  bool executed = false;
};

/// A kernel's device code built for the emulator.
class EmulatedKernel : public std::enable_shared_from_this<EmulatedKernel> {
public:
  /// Builds CUDA `source` whose entry is `extern "C" __global__ void <name>(<parameterType>)`
  /// (cached like host kernels). Throws Error with the compiler's output when it fails.
  static std::shared_ptr<const EmulatedKernel> compile(llvm::StringRef source, llvm::StringRef name,
                                                       llvm::StringRef parameterType);

  explicit EmulatedKernel(std::shared_ptr<const HostKernel> built);
  ~EmulatedKernel();

  const std::string& name() const { return built_->name(); }
  /// The size of the kernel's single parameter.
  size_t parameterBytes() const { return parameterBytes_; }
  /// Another symbol of the kernel's build (its `<name>_launch_abi`, say); null when none.
  void* symbol(llvm::StringRef name) const { return built_->symbol(name); }
  /// Runs the kernel's entry for the emulated thread the caller stands for.
  void enter(const void* parameters) const { entry_(parameters); }
  /// The calling CPU thread's copy of the kernel's __shared__ storage.
  llvm::MutableArrayRef<std::byte> sharedStorage() const;
  /// Whether `address` lies in the kernel's own loaded image (its constants).
  bool inImage(const void* address) const;
  /// `<kernel>.cu:<line>` of the generated text for a code address the hooks saw.
  std::string lineOf(void* pc) const { return lines_->lineOf(pc); }
  /// The kernel's CUDA text, as compiled.
  const std::string& source() const { return source_; }
  /// Adds basic blocks a block ran while coverage was recorded.
  void addCovered(const std::unordered_set<void*>& blocks) const;
  /// Every line of the text with code, and whether a recorded launch ran it.
  std::vector<CoveredLine> coverage() const;

private:
  std::shared_ptr<const HostKernel> built_;
  std::string source_;
  void (*entry_)(const void*) = nullptr;
  size_t tlsModule_ = 0, tlsBytes_ = 0; // the image's thread-local block: __shared__ storage
  size_t parameterBytes_ = 0;
  std::vector<std::pair<uintptr_t, uintptr_t>> segments_; // the image's mapped ranges
  std::unique_ptr<KernelLines> lines_;
  mutable std::mutex coveredMutex_;
  mutable std::unordered_set<void*> covered_;
};

/// Which lines of the emulated kernels' device code ran: the coverage test's record. While it
/// records, every kernel launched is kept alive and every basic block it runs is noted.
class EmulationCoverage {
public:
  static void start();
  /// Stops recording; returns every kernel that ran while it recorded.
  static std::vector<std::shared_ptr<const EmulatedKernel>> stop();
  static bool recording();
  /// Notes a kernel launched while recording.
  static void launched(const EmulatedKernel& kernel);
};

/// The last atomicAdd on every word of a step's launches: generated kernels use them only on
/// tickets, which the last contributor resets for the next step, so after a step's last
/// launch each must hold 0 again. Thread-safe.
class TicketLedger {
public:
  void note(const unsigned* address, const EmulatedKernel& kernel, unsigned block,
            EmulationSite site);
  /// Throws Error naming each ticket left non-zero, with its last atomicAdd; forgets them.
  void check();

private:
  struct Last {
    const EmulatedKernel* kernel;
    unsigned block;
    EmulationSite site;
  };
  std::mutex mutex_;
  std::unordered_map<const unsigned*, Last> atomics_;
};

/// How a launch is emulated.
struct EmulationOptions {
  /// The order of blocks, and of each block's threads between barriers; a shuffle also
  /// switches threads at global-memory accesses (another interleaving per seed).
  BlockOrder order;
  /// CPU threads running blocks concurrently (1: one after another, in `order`).
  unsigned workers = 1;
  /// Runs of the launch from the same buffer contents: `order`, then shuffles of other seeds
  /// (blocks and threads). Every run must leave the buffers with the same bytes, or the
  /// launch fails naming the first difference; the buffers keep the last run's bytes.
  unsigned interleavings = 1;
  /// Where the launch's atomics are noted for the check after the step (none: not checked).
  TicketLedger* tickets = nullptr;
};

/// One launch's shared state: the blocks' view of its buffers, and the faults they report.
class EmulatedLaunch {
public:
  EmulatedLaunch(const EmulatedKernel& kernel, llvm::ArrayRef<std::byte> parameters, unsigned grid,
                 unsigned threads, llvm::ArrayRef<EmulationBuffer> buffers,
                 const EmulationOptions& options);

  /// Runs every block; throws Error describing every fault found.
  void run();

  const EmulatedKernel& kernel() const { return kernel_; }
  const void* parameters() const { return parameters_.data(); }
  unsigned grid() const { return grid_; }
  unsigned threads() const { return threads_; }
  const EmulationOptions& options() const { return options_; }
  /// The buffer holding [address, address + bytes); null when none does.
  const EmulationBuffer* bufferOf(const void* address, size_t bytes) const;
  /// Where `address` lies relative to the nearest buffer, for reports.
  std::string whereIs(const void* address, size_t bytes) const;
  /// Where buffers are saved before their first write (runs in several interleavings).
  void keepOriginals(BufferOriginals* originals) { originals_ = originals; }
  /// Saves the buffer holding [address, address + bytes), when originals are kept, before a
  /// thread accesses it; returns the buffer's range, or {0, 0} when nothing is saved.
  std::pair<uintptr_t, uintptr_t> keepOriginal(const void* address, size_t bytes);
  /// Records a fault; `fatal` stops every block at its next hook.
  void record(EmulationReport report, bool fatal);
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

private:
  const EmulatedKernel& kernel_;
  std::vector<std::byte> parameters_;
  unsigned grid_, threads_;
  std::vector<EmulationBuffer> buffers_; // sorted by address
  EmulationOptions options_;
  BufferOriginals* originals_ = nullptr;
  std::atomic<bool> stopped_{false};
  std::mutex mutex_;
  std::vector<EmulationReport> reports_;
};

/// Throws Error with the reports, one line each, when there are any.
void failWithReports(llvm::StringRef kernelName, llvm::MutableArrayRef<EmulationReport> reports,
                     llvm::function_ref<const EmulatedKernel&(const EmulationReport&)> kernelOf);

/// The order of run `run` (from 0) of a launch emulated in `first` and other interleavings.
BlockOrder interleaving(const BlockOrder& first, unsigned run);

/// Emulates one launch of `kernel` (see EmulatedLaunch), in `options.interleavings` runs.
void emulateLaunch(const EmulatedKernel& kernel, llvm::ArrayRef<std::byte> parameters,
                   unsigned grid, unsigned threads, llvm::ArrayRef<EmulationBuffer> buffers,
                   const EmulationOptions& options);

} // namespace widefuse
