#pragma once
/// The CUDA driver double's model of device memory and streams, as the CUDA driver
/// documentation specifies them ("API synchronization behavior", "Stream synchronization
/// behavior"), played adversarially: queued work runs only when something forces it (a
/// synchronisation, or a later operation that must wait for it), so any operation the runtime
/// failed to order is still pending when its reader runs, and is reported.
///
/// - Each stream is a FIFO of operations. The legacy default stream (null) waits for the
///   earlier work of every blocking stream of its device, and blocking streams wait for the
///   legacy stream's earlier work; non-blocking streams (CU_STREAM_NON_BLOCKING, torch's pool
///   streams) wait for nothing but themselves.
/// - Device memory is host memory; each allocation remembers the writes queued for it. Order is
///   decided when work is queued, not by when it happens to run: every operation carries a
///   vector clock (per stream, the last operation of that stream ordered before it: through its
///   own stream, the legacy stream's implicit synchronisation, or a host synchronisation that
///   came first). A reader whose clock does not cover a write queued before it was not ordered
///   after that write: a violation, whatever order the double later runs them in.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace widefuse::cuda_double {

struct Operation;
struct Stream;

/// Per stream, the id of its last operation known to come before (0: none).
using Clock = std::map<const Stream*, uint64_t>;

/// One cuMemAlloc.
struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  int device = 0;
  /// Unique in the process: memory freed and allocated again at the same address is another
  /// allocation.
  uint64_t id = 0;
  /// The writes queued into it, per stream, in queue order.
  std::map<const Stream*, std::vector<const Operation*>> writes;
};

/// A stream (null handle: the device's legacy default stream).
struct Stream {
  int device = 0;
  bool legacy = false;
  bool nonBlocking = false;
  /// The last operation queued on it.
  Operation* last = nullptr;
  std::string name;
};

/// One queued piece of work.
struct Operation {
  uint64_t id = 0;
  Stream* stream = nullptr;
  std::string what;
  std::vector<Operation*> waitsFor;
  std::vector<Allocation*> writes;
  std::function<void(Operation&)> run;
  bool done = false;
  /// What is ordered before this operation (its own stream's entry is its id).
  Clock clock;
};

/// Allocations, streams and the queue of one process; not thread-safe (the driver double
/// serialises every entry point).
class StreamModel {
public:
  /// Records a violation (one line) and makes the context's error sticky.
  void violate(const std::string& line);
  /// Records a violation (one line) that leaves the context usable: a call the driver refused
  /// (stream capture's rules, capture_model.h).
  void report(const std::string& line) { violations_ += line + "\n"; }
  const std::string& violations() const { return violations_; }
  /// The sticky error of a faulting launch (0 when none), as the real driver keeps it.
  int stickyError() const { return stickyError_; }
  /// Forgets violations and the sticky error.
  void clearViolations();

  Allocation& allocate(size_t bytes, int device);
  /// Runs every pending operation first (cuMemFree waits for the device), then frees.
  bool free(uintptr_t base);
  /// The allocation holding [address, address + bytes), or null.
  Allocation* find(uintptr_t address, size_t bytes = 1);
  size_t liveAllocations() const { return allocations_.size(); }
  /// Calls `each` with every live allocation of `device`.
  void forEachAllocation(int device, const std::function<void(const Allocation&)>& each) const {
    for (const auto& [base, allocation] : allocations_)
      if (allocation->device == device)
        each(*allocation);
  }

  /// The legacy default stream of `device`.
  Stream& legacyStream(int device);
  Stream* createStream(int device, bool nonBlocking);
  void destroyStream(Stream* stream);
  /// The stream a handle names in `device`'s context (null handle: its legacy stream); null
  /// when the handle names no stream of that device.
  Stream* streamOf(void* handle, int device);
  /// The created stream a handle names, of any device; null when none.
  Stream* anyStream(void* handle);

  /// Queues `run` on `stream` after what it must wait for; it writes `writes`.
  Operation& enqueue(Stream& stream, std::string what, std::vector<Allocation*> writes,
                     std::function<void(Operation&)> run);
  /// Runs `operation` and everything it waits for.
  void execute(Operation& operation);
  /// Orders the work queued on `stream` from now on after `operation` (cuStreamWaitEvent of
  /// an event that recorded it).
  void waitFor(Stream& stream, Operation& operation);
  /// Runs `operation` and what it waits for; the host has then seen them complete
  /// (cuEventSynchronize).
  void synchronizeWith(Operation& operation);
  /// Runs everything queued on `stream` (and what that waits for); the host has then seen it
  /// complete.
  void synchronize(Stream& stream);
  /// Runs everything queued, in order; the host has then seen all of it complete.
  void synchronizeAll();
  /// Runs everything queued, in order, without the host learning anything (work that must
  /// finish before memory or a module goes away).
  void drainAll();
  /// Checks that every write into `allocation` queued before `reader` is ordered before it;
  /// records a violation naming `where` otherwise.
  void checkOrdered(const Operation& reader, const Allocation& allocation,
                    const std::string& where);

private:
  void runNow(Operation& operation);

  std::map<uintptr_t, std::unique_ptr<Allocation>> allocations_;
  std::map<int, std::unique_ptr<Stream>> legacy_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::deque<std::unique_ptr<Operation>> operations_;
  uint64_t nextId_ = 1;
  /// What the host has seen complete (synchronisations); everything queued later is ordered
  /// after it.
  Clock hostKnows_;
  std::string violations_;
  int stickyError_ = 0;
  uint64_t nextAllocation_ = 1;
};

} // namespace widefuse::cuda_double
