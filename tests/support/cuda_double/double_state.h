#pragma once
/// What the driver double's entry points share: one lock over every call, the stream and
/// capture models, the counters, the calling thread's current device, the results it returns,
/// the page-locked memory and user objects driver_host_memory.cpp keeps, and the planted
/// launch failure driver_modules.cpp keeps.

#include "tests/support/cuda_double/capture_model.h"
#include "tests/support/cuda_double/double_control.h"
#include "tests/support/cuda_double/stream_model.h"

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#define WF_EXPORT extern "C" __attribute__((visibility("default")))

namespace widefuse::cuda_double {

// The driver's results the double returns (values of cuda.h).
constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100,
              kInvalidDevice = 101, kInvalidImage = 200, kInvalidContext = 201,
              kInvalidHandle = 400, kNotFound = 500, kNotSupported = 801;

/// Serialises every entry point.
extern std::recursive_mutex mutex;
/// Device memory, streams and queued work.
StreamModel& model();
/// The captures in progress.
CaptureModel& capture();
/// What the runtime called since the last reset.
extern wf_double_counters counters;
/// The device whose context is current in the calling thread (-1: none).
extern thread_local int currentDevice;

/// Resident blocks per multiprocessor, whatever the kernel (the occupancy query's answer).
constexpr int kResidentBlocks = 4;

/// Queues `run` on `stream`, or records it when the stream captures.
void submit(Stream& stream, std::string what, std::vector<Allocation*> writes,
            std::function<void(Operation&)> run);
/// Forgets a launch failure planted with wf_double_fail_launch.
void forgetPlantedFailures();

/// True when [address, address + bytes) is live page-locked memory (cuMemAllocHost).
bool isPinned(const void* address, size_t bytes);
/// Releases the references `graph` holds to user objects (destroying those left with none).
void releaseUserObjects(Graph& graph);

} // namespace widefuse::cuda_double

/// cuStreamGetCaptureInfo (driver_host_memory.cpp): cuStreamIsCapturing asks it too.
WF_EXPORT int cuStreamGetCaptureInfo_v2(void* stream, int* status, unsigned long long* id,
                                        void** graph, const void** dependencies,
                                        size_t* dependencyCount);

#define WF_LOCK std::lock_guard<std::recursive_mutex> lock(::widefuse::cuda_double::mutex)
#define WF_NEED_CONTEXT                                                                            \
  if (currentDevice < 0)                                                                           \
    return kInvalidContext;                                                                        \
  if (model().stickyError())                                                                       \
  return model().stickyError()
/// Returns the error of a call that the captures in progress forbid (capture_model.h).
#define WF_CAPTURE_REFUSES(...)                                                                    \
  if (int refused = capture().refuse(__VA_ARGS__))                                                 \
  return refused
