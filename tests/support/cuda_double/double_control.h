#pragma once
/// The CUDA driver double's own entry points (beside the cu* functions it stands in for):
/// tests reach them with dlsym on the library WIDEFUSE_CUDA_DRIVER_LIBRARY names. See
/// tests/support/driver_double.h for the test-side wrapper.

#include <cstddef>
#include <cstdint>

extern "C" {

/// How often the runtime called the driver since the last reset, by kind.
struct wf_double_counters {
  uint64_t launches;              ///< cuLaunchKernel
  uint64_t allocations;           ///< cuMemAlloc
  uint64_t frees;                 ///< cuMemFree
  uint64_t uploads;               ///< cuMemcpyHtoD and cuMemcpyHtoDAsync
  uint64_t downloads;             ///< cuMemcpyDtoH and cuMemcpyDtoHAsync
  uint64_t memsets;               ///< cuMemsetD8 and cuMemsetD8Async
  uint64_t pointerQueries;        ///< cuPointerGetAttribute
  uint64_t synchronizations;      ///< cuStreamSynchronize and cuCtxSynchronize
  uint64_t legacyStreamWrites;    ///< copies, memsets and launches on the legacy default stream
  uint64_t capturedOperations;    ///< launches and memsets recorded by a stream capture
  uint64_t captureRefusals;       ///< calls refused because a capture was in progress
  uint64_t eventRecords;          ///< cuEventRecord
  uint64_t eventWaits;            ///< cuStreamWaitEvent
  uint64_t eventSynchronizations; ///< cuEventSynchronize (the host waits for an event)
};

/// Forgets the recorded violations, the sticky error, the counters and any planted failure.
void wf_double_reset();
/// The protocol violations recorded since the reset, one per line ("" when none).
const char* wf_double_violations();
/// The counters since the reset.
void wf_double_read_counters(wf_double_counters* counters);
/// Makes the `nth` cuLaunchKernel from now (1: the next) fail with `result`.
void wf_double_fail_launch(int nth, int result);
/// Allocations not freed yet.
size_t wf_double_live_allocations();

/// Starts capturing `stream` (a CUstream) as cuStreamBeginCapture with CUstreamCaptureMode
/// `mode` (0 global, 1 thread-local, 2 relaxed) does; torch's torch.cuda.graph does this
/// before the runtime's step. Needs a current context. Returns a CUresult.
int wf_double_begin_capture(void* stream, int mode);
/// Ends the capture of `stream`: `*graph` is the recorded work (null when the capture was
/// invalidated: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED). Returns a CUresult.
int wf_double_end_capture(void* stream, void** graph);
/// Queues the work `graph` recorded on `stream`, as cuGraphLaunch of its instance does.
int wf_double_launch_graph(void* graph, void* stream);
/// Frees a graph from wf_double_end_capture, releasing the user objects it holds (their
/// destructors run then).
void wf_double_destroy_graph(void* graph);
/// User objects (cuUserObjectCreate) not destroyed yet.
size_t wf_double_live_user_objects();
}
