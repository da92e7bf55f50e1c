// The driver double's page-locked memory, events and graph user objects (driver_double.cpp has
// the rest of the driver): what the runtime uses to upload member tables without staging, to
// order a stream after another's work, and to keep a captured graph's memory alive.
//
// - Page-locked memory (cuMemAllocHost) is host memory the double remembers: a copy from it is
//   read when it runs, as a DMA reads it, and may be captured; a replay after it was freed is
//   a violation.
// - An event marks the last operation of its stream when recorded; a wait orders the waiting
//   stream's later work after it (stream_model.h), a host wait runs it.
// - User objects are counted references; a graph holds some, and destroying the graph runs
//   the destructors of those left with none, as the driver's own thread would.

#include "tests/support/cuda_double/double_state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace widefuse::cuda_double {
namespace {

/// Page-locked host memory: base -> size.
std::map<uintptr_t, size_t> pinned;
/// An event: the operation its last record queued (null: none yet).
struct Event {
  Operation* at = nullptr;
};
std::set<Event*> events;
std::set<UserObject*> userObjects;

/// Drops `count` references of `object`; destroys it (its destructor first) at zero.
void releaseUserObject(UserObject* object, unsigned count) {
  object->references -= std::min(count, object->references);
  if (object->references > 0)
    return;
  userObjects.erase(object);
  object->destroy(object->data);
  delete object;
}

} // namespace

bool isPinned(const void* address, size_t bytes) {
  auto start = reinterpret_cast<uintptr_t>(address);
  auto after = pinned.upper_bound(start);
  if (after == pinned.begin())
    return false;
  --after;
  return start + bytes <= after->first + after->second;
}

void releaseUserObjects(Graph& graph) {
  for (auto [object, count] : graph.userObjects)
    releaseUserObject(object, count);
  graph.userObjects.clear();
}

} // namespace widefuse::cuda_double

using namespace widefuse::cuda_double;

// --- page-locked memory ---------------------------------------------------------------------

WF_EXPORT int cuMemAllocHost_v2(void** pointer, size_t bytes) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  if (bytes == 0)
    return kInvalidValue;
  WF_CAPTURE_REFUSES("cuMemAllocHost", /*unsafe=*/true);
  ++counters.allocations;
  *pointer = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  pinned[reinterpret_cast<uintptr_t>(*pointer)] = bytes;
  return kSuccess;
}

WF_EXPORT int cuMemFreeHost(void* pointer) {
  WF_LOCK;
  WF_CAPTURE_REFUSES("cuMemFreeHost", /*unsafe=*/true);
  auto found = pinned.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == pinned.end())
    return kInvalidValue;
  model().drainAll(); // queued copies still read it
  ++counters.frees;
  pinned.erase(found);
  std::free(pointer);
  return kSuccess;
}

// --- events ---------------------------------------------------------------------------------

WF_EXPORT int cuEventCreate(Event** event, unsigned) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  *event = new Event();
  events.insert(*event);
  return kSuccess;
}

WF_EXPORT int cuEventDestroy_v2(Event* event) {
  WF_LOCK;
  if (!events.erase(event))
    return kInvalidHandle;
  delete event;
  return kSuccess;
}

WF_EXPORT int cuEventRecord(Event* event, void* stream) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue || !events.count(event))
    return kInvalidHandle;
  WF_CAPTURE_REFUSES("cuEventRecord", /*unsafe=*/false, queue,
                     ": the double does not model event nodes");
  ++counters.eventRecords;
  counters.legacyStreamWrites += queue->legacy;
  // A marker after the stream's work: waiting for it orders after all of that work.
  event->at = &model().enqueue(*queue, "cuEventRecord", {}, [](Operation&) {});
  return kSuccess;
}

WF_EXPORT int cuStreamWaitEvent(void* stream, Event* event, unsigned) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue || !events.count(event))
    return kInvalidHandle;
  WF_CAPTURE_REFUSES("cuStreamWaitEvent", /*unsafe=*/false, queue,
                     ": the double does not model event nodes");
  ++counters.eventWaits;
  if (event->at)
    model().waitFor(*queue, *event->at);
  return kSuccess;
}

WF_EXPORT int cuEventSynchronize(Event* event) {
  WF_LOCK;
  if (!events.count(event))
    return kInvalidHandle;
  WF_CAPTURE_REFUSES("cuEventSynchronize", /*unsafe=*/true);
  ++counters.eventSynchronizations;
  if (event->at)
    model().synchronizeWith(*event->at);
  return model().stickyError();
}

WF_EXPORT int cuStreamGetCaptureInfo_v2(void* stream, int* status, unsigned long long* id,
                                        void** graph, const void** dependencies,
                                        size_t* dependencyCount) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue)
    return kInvalidHandle;
  int answer = capture().status(*queue);
  if (answer == kCaptureImplicit)
    return answer;
  *status = answer;
  if (id)
    *id = reinterpret_cast<uintptr_t>(queue);
  if (graph)
    *graph = answer == kCaptureActive ? capture().graphOf(*queue) : nullptr;
  if (dependencies)
    *dependencies = nullptr;
  if (dependencyCount)
    *dependencyCount = 0;
  return kSuccess;
}

WF_EXPORT int cuUserObjectCreate(UserObject** object, void* data, void (*destroy)(void*),
                                 unsigned references, unsigned flags) {
  WF_LOCK;
  if (!destroy || references == 0 || flags != 1) // CU_USER_OBJECT_NO_DESTRUCTOR_SYNC
    return kInvalidValue;
  *object = new UserObject{data, destroy, references};
  userObjects.insert(*object);
  return kSuccess;
}

WF_EXPORT int cuUserObjectRelease(UserObject* object, unsigned count) {
  WF_LOCK;
  if (!userObjects.count(object) || count == 0)
    return kInvalidValue;
  releaseUserObject(object, count);
  return kSuccess;
}

WF_EXPORT int cuGraphRetainUserObject(Graph* graph, UserObject* object, unsigned count,
                                      unsigned flags) {
  WF_LOCK;
  if (!graph || !userObjects.count(object) || count == 0)
    return kInvalidValue;
  // CU_GRAPH_USER_OBJECT_MOVE: the caller's references become the graph's.
  if (flags != 1)
    object->references += count;
  graph->userObjects.emplace_back(object, count);
  return kSuccess;
}

WF_EXPORT size_t wf_double_live_user_objects() {
  WF_LOCK;
  return userObjects.size();
}
