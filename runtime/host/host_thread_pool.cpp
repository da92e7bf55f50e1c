#include "runtime/host/host_thread_pool.h"

#include <pthread.h>

namespace widefuse {

HostThreadPool::~HostThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_)
    worker.join();
}

namespace {

HostThreadPool* globalPool = nullptr;

/// A forked child (a DataLoader worker, say) has none of the parent's worker threads, and the
/// pool's locks may have been held by one of them: it starts with a pool of its own. The old
/// one is left as it is (its threads do not exist here to be joined).
void replaceGlobalPoolInChild() {
  globalPool = new HostThreadPool();
}

} // namespace

HostThreadPool& HostThreadPool::global() {
  // Never destroyed: a launch may still run on the pool while static destructors run.
  static bool registered = [] {
    globalPool = new HostThreadPool();
    pthread_atfork(nullptr, nullptr, replaceGlobalPoolInChild);
    return true;
  }();
  (void)registered;
  return *globalPool;
}

unsigned HostThreadPool::numWorkers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unsigned(workers_.size());
}

void HostThreadPool::drain() {
  for (unsigned i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
       i = next_.fetch_add(1, std::memory_order_relaxed))
    task_(i);
}

void HostThreadPool::work() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && openSeats_ > 0); });
    if (stopping_)
      return;
    seen = generation_;
    --openSeats_;
    ++active_;
    lock.unlock();
    drain();
    lock.lock();
    if (--active_ == 0)
      finished_.notify_one();
  }
}

void HostThreadPool::run(unsigned count, unsigned threads,
                         llvm::function_ref<void(unsigned)> task) {
  std::unique_lock<std::mutex> launch(launch_, std::try_to_lock);
  if (threads <= 1 || count <= 1 || !launch.owns_lock()) {
    for (unsigned i = 0; i < count; ++i)
      task(i);
    return;
  }
  unsigned helpers = std::min(threads, count) - 1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (workers_.size() < helpers)
      workers_.emplace_back([this] { work(); });
    task_ = task;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    openSeats_ = helpers;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mutex_);
  // Workers that have not woken yet find no seat: the job and its task end with this call.
  openSeats_ = 0;
  finished_.wait(lock, [&] { return active_ == 0; });
}

} // namespace widefuse
