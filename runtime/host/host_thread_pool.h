#pragma once
/// The host backend's persistent CPU worker threads: created once, asleep between launches,
/// so a launch on several threads creates no thread and allocates nothing.

#include <llvm/ADT/STLFunctionalExtras.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace widefuse {

/// A pool of worker threads that run the tasks of one launch at a time; thread-safe.
class HostThreadPool {
public:
  HostThreadPool() = default;
  ~HostThreadPool();
  HostThreadPool(const HostThreadPool&) = delete;
  HostThreadPool& operator=(const HostThreadPool&) = delete;

  /// Runs task(0) ... task(count - 1) on the calling thread and up to `threads - 1` workers,
  /// each taking the next task index from a shared counter, and returns when all have run.
  /// While another call holds the workers, this one runs its tasks on the calling thread
  /// alone (concurrent launches already keep the cores busy). Tasks must not throw.
  void run(unsigned count, unsigned threads, llvm::function_ref<void(unsigned)> task);

  /// Workers started so far (they are started on demand, never stopped before exit).
  unsigned numWorkers() const;

  /// The process-wide pool.
  static HostThreadPool& global();

private:
  void work();
  /// Runs tasks of the current job until none are left.
  void drain();

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // workers: a job was posted, or the pool stops
  std::condition_variable finished_; // the caller: the last worker left the job
  std::vector<std::thread> workers_;
  /// One launch at a time holds the workers.
  std::mutex launch_;
  // The current job, guarded by mutex_ (the counter and the task are read without it by the
  // workers that joined).
  llvm::function_ref<void(unsigned)> task_;
  unsigned count_ = 0;
  std::atomic<unsigned> next_{0};
  uint64_t generation_ = 0;
  /// Workers the job still takes, and workers inside it.
  unsigned openSeats_ = 0;
  unsigned active_ = 0;
  bool stopping_ = false;
};

} // namespace widefuse
