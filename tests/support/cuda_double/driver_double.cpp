// The CUDA driver double: a libcuda stand-in the runtime loads instead of the real driver when
// WIDEFUSE_CUDA_DRIVER_LIBRARY names it (with WIDEFUSE_NVRTC_LIBRARY naming the NVRTC double,
// whose "cubins" carry the kernel source). It lets the CUDA backend's protocol be tested on
// machines without a GPU:
//
// - contexts: every call that needs one fails with CUDA_ERROR_INVALID_CONTEXT unless a context
//   is current in the calling thread, as on the real driver;
// - memory and streams follow the documented ordering rules, played adversarially
//   (stream_model.h): a write the runtime did not order before its reader is reported;
// - each launch is decoded with the kernel's own description of its pointers
//   (`<kernel>_launch_abi`, named by scheduler/kernel_abi.h and codegen/launch_abi.h): every
//   pointer must lie in a live allocation of the launching device whose queued writes were
//   ordered before the launch; then the device emulator (runtime/host/device_emulator.h) runs
//   the kernel's device code itself, blocks and threads in a shuffled order, every access
//   checked against the device's live allocations, so the values it writes are checked too and
//   a fault (a race, a divergent barrier, an access outside the allocations) is a violation.
//
// - stream capture (capture_model.h): work on a capturing stream is recorded, not run, into a
//   graph that wf_double_launch_graph replays; the calls a capture forbids are refused with the
//   real driver's errors and recorded as violations.
//
// A violation makes the error sticky (CUDA_ERROR_ILLEGAL_ADDRESS), as a faulting kernel does;
// a call refused during capture does not (a real context survives it).
// Page-locked memory, events and graph user objects are in driver_host_memory.cpp; modules and
// launches in driver_modules.cpp.
// What it does not model: timing, races between kernels on unordered streams that touch the
// same memory (only copies and memsets are tracked as writers), events recorded under capture,
// graph nodes other than captured stream work, peer access.

#include "tests/support/cuda_double/capture_model.h"
#include "tests/support/cuda_double/double_control.h"
#include "tests/support/cuda_double/double_format.h"
#include "tests/support/cuda_double/double_state.h"
#include "tests/support/cuda_double/launch_checker.h"
#include "tests/support/cuda_double/stream_model.h"

#include "codegen/launch_abi.h"
#include "runtime/host/host_compiler.h"
#include "scheduler/kernel_abi.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace widefuse::cuda_double {

std::recursive_mutex mutex;
StreamModel& model() {
  static StreamModel* instance = new StreamModel(); // never destroyed, like a driver
  return *instance;
}
CaptureModel& capture() {
  static CaptureModel* instance = new CaptureModel(model());
  return *instance;
}
wf_double_counters counters{};
thread_local int currentDevice = -1;

void submit(Stream& stream, std::string what, std::vector<Allocation*> writes,
            std::function<void(Operation&)> run) {
  if (capture().capturing(stream)) {
    ++counters.capturedOperations;
    capture().record(stream, std::move(what), std::move(writes), std::move(run));
    return;
  }
  model().enqueue(stream, std::move(what), std::move(writes), std::move(run));
}

} // namespace widefuse::cuda_double

namespace {

using namespace widefuse;
using namespace widefuse::cuda_double;

// Attributes (cuda.h).
constexpr int kAttributeMultiprocessors = 16, kAttributeMajor = 75, kAttributeMinor = 76;
constexpr int kPointerContext = 1, kPointerMemoryType = 2, kPointerDeviceOrdinal = 9;
constexpr unsigned kMemoryTypeDevice = 2;

/// Two devices of four multiprocessors (with kResidentBlocks each): small grids, so that
/// blocks take several chunks, and a second device for the wrong-device checks.
constexpr int kDevices = 2, kMultiprocessors = 4;

void* contextOf(int device) {
  return reinterpret_cast<void*>(uintptr_t(0x1000 + device));
}

} // namespace

// --- the double's own entry points ----------------------------------------------------------

WF_EXPORT void wf_double_reset() {
  WF_LOCK;
  model().clearViolations();
  capture().resetCounts();
  counters = {};
  forgetPlantedFailures();
}

WF_EXPORT const char* wf_double_violations() {
  WF_LOCK;
  return model().violations().c_str();
}

WF_EXPORT void wf_double_read_counters(wf_double_counters* out) {
  WF_LOCK;
  *out = counters;
  out->captureRefusals = capture().refusals();
}

WF_EXPORT size_t wf_double_live_allocations() {
  WF_LOCK;
  return model().liveAllocations();
}

// --- devices and contexts -------------------------------------------------------------------

WF_EXPORT int cuInit(unsigned) {
  return kSuccess;
}

WF_EXPORT int cuDriverGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}

WF_EXPORT int cuDeviceGetCount(int* count) {
  *count = kDevices;
  return kSuccess;
}

WF_EXPORT int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= kDevices)
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

WF_EXPORT int cuDeviceGetAttribute(int* value, int attribute, int) {
  switch (attribute) {
  case kAttributeMultiprocessors:
    *value = kMultiprocessors;
    return kSuccess;
  case kAttributeMajor:
    *value = 9;
    return kSuccess;
  case kAttributeMinor:
    *value = 0;
    return kSuccess;
  default:
    return kInvalidValue;
  }
}

WF_EXPORT int cuDeviceGetName(char* name, int length, int device) {
  std::snprintf(name, size_t(length), "widefuse CUDA driver double %d", device);
  return kSuccess;
}

WF_EXPORT int cuDevicePrimaryCtxRetain(void** context, int device) {
  *context = contextOf(device);
  return kSuccess;
}

WF_EXPORT int cuDevicePrimaryCtxRelease_v2(int) {
  return kSuccess;
}

WF_EXPORT int cuCtxSetCurrent(void* context) {
  if (!context) {
    currentDevice = -1;
    return kSuccess;
  }
  auto device = int(reinterpret_cast<uintptr_t>(context) - 0x1000);
  if (device < 0 || device >= kDevices)
    return kInvalidContext;
  currentDevice = device;
  return kSuccess;
}

WF_EXPORT int cuCtxGetCurrent(void** context) {
  *context = currentDevice < 0 ? nullptr : contextOf(currentDevice);
  return kSuccess;
}

WF_EXPORT int cuCtxSynchronize() {
  WF_LOCK;
  WF_NEED_CONTEXT;
  WF_CAPTURE_REFUSES("cuCtxSynchronize", /*unsafe=*/true);
  ++counters.synchronizations;
  model().synchronizeAll();
  return model().stickyError();
}

WF_EXPORT int cuGetErrorName(int result, const char** name) {
  switch (result) {
  case 700:
    *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
    return kSuccess;
  case 201:
    *name = "CUDA_ERROR_INVALID_CONTEXT";
    return kSuccess;
  case 701:
    *name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    return kSuccess;
  case kCaptureUnsupported:
    *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    return kSuccess;
  case kCaptureInvalidated:
    *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    return kSuccess;
  case kCaptureImplicit:
    *name = "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
    return kSuccess;
  default:
    return kInvalidValue;
  }
}

WF_EXPORT int cuGetErrorString(int result, const char** text) {
  if (result == 700) {
    *text = wf_double_violations(); // what the double saw, in place of "an illegal address"
    return kSuccess;
  }
  return kInvalidValue;
}

// --- memory ---------------------------------------------------------------------------------

WF_EXPORT int cuMemAlloc_v2(uintptr_t* address, size_t bytes) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  if (bytes == 0)
    return kInvalidValue;
  WF_CAPTURE_REFUSES("cuMemAlloc", /*unsafe=*/true);
  ++counters.allocations;
  *address = model().allocate(bytes, currentDevice).base;
  return *address ? kSuccess : kOutOfMemory;
}

WF_EXPORT int cuMemFree_v2(uintptr_t address) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  WF_CAPTURE_REFUSES("cuMemFree", /*unsafe=*/true);
  ++counters.frees;
  return model().free(address) ? kSuccess : kInvalidValue;
}

WF_EXPORT int cuPointerGetAttribute(void* value, int attribute, uintptr_t address) {
  WF_LOCK;
  ++counters.pointerQueries;
  Allocation* allocation = model().find(address);
  if (!allocation)
    return kInvalidValue; // host memory the driver does not know
  switch (attribute) {
  case kPointerMemoryType:
    *static_cast<unsigned*>(value) = kMemoryTypeDevice;
    return kSuccess;
  case kPointerDeviceOrdinal:
    *static_cast<int*>(value) = allocation->device;
    return kSuccess;
  case kPointerContext:
    *static_cast<void**>(value) = contextOf(allocation->device);
    return kSuccess;
  default:
    return kNotSupported;
  }
}

namespace {

/// Queues (or records, under capture) a copy from page-locked memory: read when it runs, as
/// a DMA reads it, so a caller that rewrites the memory before the copy ran is caught by the
/// values, and a replay after the memory was freed is a violation.
int queuePinnedUpload(Stream& stream, uintptr_t to, const void* from, size_t bytes,
                      const char* call, Allocation* allocation) {
  ++counters.uploads;
  counters.legacyStreamWrites += stream.legacy;
  std::string what = call;
  submit(stream, what, {allocation}, [=](Operation&) {
    if (!isPinned(from, bytes)) {
      model().violate(what + " reads page-locked memory that was freed");
      return;
    }
    std::memcpy(reinterpret_cast<void*>(to), from, bytes);
  });
  return kSuccess;
}

/// Queues a copy into device memory of `bytes` host bytes, staged now (pageable memory).
int queueUpload(Stream& stream, uintptr_t to, const void* from, size_t bytes, const char* call) {
  Allocation* allocation = model().find(to, bytes);
  if (!allocation)
    return kInvalidValue;
  if (bytes && isPinned(from, bytes)) {
    WF_CAPTURE_REFUSES(call, /*unsafe=*/false, &stream);
    return queuePinnedUpload(stream, to, from, bytes, call, allocation);
  }
  WF_CAPTURE_REFUSES(call, /*unsafe=*/false, &stream,
                     " and the copy reads pageable host memory, which a graph would read at "
                     "each replay");
  ++counters.uploads;
  counters.legacyStreamWrites += stream.legacy;
  auto staged = std::make_shared<std::vector<std::byte>>(
      static_cast<const std::byte*>(from), static_cast<const std::byte*>(from) + bytes);
  model().enqueue(stream, call, {allocation}, [to, staged](Operation&) {
    if (!staged->empty()) // memcpy from an empty vector's null data() is undefined
      std::memcpy(reinterpret_cast<void*>(to), staged->data(), staged->size());
  });
  return kSuccess;
}

/// Runs a copy out of device memory into host memory, checking that nothing unordered is
/// still writing what it reads.
Operation& queueDownload(Stream& stream, void* to, uintptr_t from, size_t bytes, const char* call) {
  Allocation* allocation = model().find(from, bytes);
  ++counters.downloads;
  return model().enqueue(stream, call, {}, [=](Operation& self) {
    model().checkOrdered(self, *allocation, "device memory");
    if (bytes != 0) // a zero-byte copy may name a null host pointer
      std::memcpy(to, reinterpret_cast<const void*>(from), bytes);
  });
}

int queueMemset(Stream& stream, uintptr_t to, unsigned char value, size_t bytes, const char* call) {
  Allocation* allocation = model().find(to, bytes);
  if (!allocation)
    return kInvalidValue;
  WF_CAPTURE_REFUSES(call, /*unsafe=*/false, &stream);
  ++counters.memsets;
  counters.legacyStreamWrites += stream.legacy;
  submit(stream, call, {allocation},
         [=](Operation&) { std::memset(reinterpret_cast<void*>(to), value, bytes); });
  return kSuccess;
}

} // namespace

WF_EXPORT int cuMemcpyHtoD_v2(uintptr_t to, const void* from, size_t bytes) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  // "For transfers from pageable host memory to device memory, a stream sync is performed
  // before the copy is initiated. The function will return once the pageable buffer has been
  // copied to the staging memory for DMA transfer to device memory, but the DMA to final
  // destination may not have completed."
  WF_CAPTURE_REFUSES("cuMemcpyHtoD", /*unsafe=*/true);
  Stream& legacy = model().legacyStream(currentDevice);
  model().synchronize(legacy);
  return queueUpload(legacy, to, from, bytes, "cuMemcpyHtoD");
}

WF_EXPORT int cuMemcpyHtoDAsync_v2(uintptr_t to, const void* from, size_t bytes, void* stream) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  return queue ? queueUpload(*queue, to, from, bytes, "cuMemcpyHtoDAsync") : kInvalidHandle;
}

WF_EXPORT int cuMemcpyDtoH_v2(void* to, uintptr_t from, size_t bytes) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  if (!model().find(from, bytes))
    return kInvalidValue;
  WF_CAPTURE_REFUSES("cuMemcpyDtoH", /*unsafe=*/true);
  // Synchronous: returns once the copy is done, after the legacy stream's earlier work; the
  // host has then seen everything before it on that stream complete.
  Stream& legacy = model().legacyStream(currentDevice);
  queueDownload(legacy, to, from, bytes, "cuMemcpyDtoH");
  model().synchronize(legacy);
  return model().stickyError();
}

WF_EXPORT int cuMemcpyDtoHAsync_v2(void* to, uintptr_t from, size_t bytes, void* stream) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue || !model().find(from, bytes))
    return kInvalidValue;
  WF_CAPTURE_REFUSES("cuMemcpyDtoHAsync", /*unsafe=*/false, queue,
                     " and the copy writes pageable host memory, which a graph would write at "
                     "each replay");
  queueDownload(*queue, to, from, bytes, "cuMemcpyDtoHAsync");
  return kSuccess;
}

WF_EXPORT int cuMemsetD8_v2(uintptr_t to, unsigned char value, size_t bytes) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  // "The synchronous memset functions are asynchronous with respect to the host except when
  // the target is pinned host memory": queued on the legacy stream.
  WF_CAPTURE_REFUSES("cuMemsetD8", /*unsafe=*/true);
  return queueMemset(model().legacyStream(currentDevice), to, value, bytes, "cuMemsetD8");
}

WF_EXPORT int cuMemsetD8Async(uintptr_t to, unsigned char value, size_t bytes, void* stream) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  return queue ? queueMemset(*queue, to, value, bytes, "cuMemsetD8Async") : kInvalidHandle;
}

// --- streams --------------------------------------------------------------------------------

WF_EXPORT int cuStreamCreate(void** stream, unsigned flags) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  *stream = model().createStream(currentDevice, (flags & 1u) != 0);
  return kSuccess;
}

WF_EXPORT int cuStreamDestroy_v2(void* stream) {
  WF_LOCK;
  Stream* queue = model().anyStream(stream);
  if (!queue)
    return kInvalidHandle;
  model().destroyStream(queue);
  return kSuccess;
}

WF_EXPORT int cuStreamSynchronize(void* stream) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue)
    return kInvalidHandle;
  WF_CAPTURE_REFUSES("cuStreamSynchronize", /*unsafe=*/false, queue,
                     ": its work is recorded, not run");
  ++counters.synchronizations;
  model().synchronize(*queue);
  return model().stickyError();
}

// --- stream capture (capture_model.h) -------------------------------------------------------

WF_EXPORT int cuStreamBeginCapture_v2(void* stream, int mode) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  return queue ? capture().begin(*queue, mode) : kInvalidHandle;
}

WF_EXPORT int cuStreamEndCapture(void* stream, void** graph) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue)
    return kInvalidHandle;
  Graph* captured = nullptr;
  int result = capture().end(*queue, &captured);
  *graph = captured;
  return result;
}

WF_EXPORT int cuStreamIsCapturing(void* stream, int* status) {
  return cuStreamGetCaptureInfo_v2(stream, status, nullptr, nullptr, nullptr, nullptr);
}

WF_EXPORT int wf_double_begin_capture(void* stream, int mode) {
  return cuStreamBeginCapture_v2(stream, mode);
}

WF_EXPORT int wf_double_end_capture(void* stream, void** graph) {
  return cuStreamEndCapture(stream, graph);
}

WF_EXPORT int wf_double_launch_graph(void* graph, void* stream) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue || !graph)
    return kInvalidHandle;
  WF_CAPTURE_REFUSES("cuGraphLaunch", /*unsafe=*/false, queue);
  capture().launch(*static_cast<const Graph*>(graph), *queue);
  return kSuccess;
}

WF_EXPORT void wf_double_destroy_graph(void* graph) {
  WF_LOCK;
  model().drainAll(); // queued replays still run its operations
  auto* destroyed = static_cast<Graph*>(graph);
  releaseUserObjects(*destroyed);
  delete destroyed;
}
