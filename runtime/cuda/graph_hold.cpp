#include "runtime/cuda/graph_hold.h"

#include "ir/error.h"

#include <atomic>
#include <mutex>

namespace widefuse {
namespace {

/// Holds whose graphs are gone, waiting for a thread that may call CUDA. Never destroyed:
/// the driver may still call back during static destruction.
struct FinishedHolds {
  std::mutex mutex;
  std::vector<GraphHold> holds;
  std::atomic<bool> any{false};
};

FinishedHolds& finished() {
  static auto* instance = new FinishedHolds();
  return *instance;
}

/// The user object's destructor (a driver thread): queues the hold, calls no CUDA.
void queueRelease(void* data) {
  auto* hold = static_cast<GraphHold*>(data);
  FinishedHolds& queue = finished();
  std::lock_guard<std::mutex> lock(queue.mutex);
  queue.holds.push_back(std::move(*hold));
  queue.any.store(true, std::memory_order_release);
  delete hold;
}

} // namespace

void holdWhileGraphLives(const CudaDevice& device, void* stream, GraphHold hold) {
  const CudaDriver& driver = device.driver();
  CudaDevice::ContextScope scope(device);
  int status = 0;
  unsigned long long id = 0;
  CUgraph graph = nullptr;
  driver.check(driver.cuStreamGetCaptureInfo(static_cast<CUstream>(stream), &status, &id, &graph,
                                             nullptr, nullptr),
               "cuStreamGetCaptureInfo");
  if (status != kCudaStreamCaptureStatusActive || !graph)
    fail("a step under CUDA graph capture cannot name the graph it is captured into (capture "
         "status {}): what the graph uses could be freed while it is replayed, so the step is "
         "refused",
         status);
  auto* owned = new GraphHold(std::move(hold));
  CUuserObject object = nullptr;
  CUresult created =
      driver.cuUserObjectCreate(&object, owned, &queueRelease, 1, kCudaUserObjectNoDestructorSync);
  if (created != kCudaSuccess) {
    delete owned;
    driver.check(created, "cuUserObjectCreate");
  }
  // The graph takes over the one reference: the hold goes when the graph does.
  CUresult retained = driver.cuGraphRetainUserObject(graph, object, 1, kCudaGraphUserObjectMove);
  if (retained != kCudaSuccess) {
    driver.cuUserObjectRelease(object, 1); // queues the hold: it is released after the step
    driver.check(retained, "cuGraphRetainUserObject");
  }
}

void releaseFinishedGraphHolds() {
  FinishedHolds& queue = finished();
  if (!queue.any.load(std::memory_order_acquire))
    return; // the steady state: one atomic load
  std::vector<GraphHold> released;
  {
    std::lock_guard<std::mutex> lock(queue.mutex);
    released.swap(queue.holds);
    queue.any.store(false, std::memory_order_relaxed);
  }
  // Destroyed here, outside the lock: freeing memory may wait for the device.
}

} // namespace widefuse
