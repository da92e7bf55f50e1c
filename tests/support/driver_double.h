#pragma once
/// The CUDA driver double as a test sees it: its control functions, found in the driver the
/// runtime loaded (tests/support/cuda_double/driver_double.cpp says what it checks).

#include "runtime/cuda/cuda_driver.h"
#include "tests/support/cuda_double/double_control.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace widefuse::testing {

class DriverDouble {
public:
  /// The double when the process's CUDA driver is the double (loaded by CudaDriver), else null.
  static DriverDouble* get() {
    static DriverDouble* instance = []() -> DriverDouble* {
      try {
        CudaDriver::instance();
      } catch (const Error&) {
        return nullptr;
      }
      void* handle = dlopen(CudaDriver::libraryPath().c_str(), RTLD_NOW | RTLD_NOLOAD);
      if (!handle || !dlsym(handle, "wf_double_reset"))
        return nullptr;
      return new DriverDouble(handle);
    }();
    return instance;
  }

  /// Forgets violations, the sticky error, counters and planted failures.
  void reset() { reset_(); }
  /// The violations since the reset, one per line.
  std::string violations() { return violations_(); }
  wf_double_counters counters() {
    wf_double_counters values{};
    readCounters_(&values);
    return values;
  }
  /// Makes the `nth` launch from now fail with `result`.
  void failLaunch(int nth, int result) { failLaunch_(nth, result); }
  size_t liveAllocations() { return liveAllocations_(); }
  /// Starts capturing `stream` (CUstreamCaptureMode `mode`: 0 global); a CUresult.
  int beginCapture(void* stream, int mode = 0) { return beginCapture_(stream, mode); }
  /// Ends the capture of `stream` into `*graph` (null when it was invalidated); a CUresult.
  int endCapture(void* stream, void** graph) { return endCapture_(stream, graph); }
  /// Replays `graph` on `stream` (queued, as cuGraphLaunch); a CUresult.
  int launchGraph(void* graph, void* stream) { return launchGraph_(graph, stream); }
  /// Frees a graph from endCapture, releasing the user objects it holds.
  void destroyGraph(void* graph) { destroyGraph_(graph); }
  /// User objects (what captured graphs hold) not destroyed yet.
  size_t liveUserObjects() { return liveUserObjects_(); }

private:
  explicit DriverDouble(void* handle)
      : reset_(reinterpret_cast<void (*)()>(dlsym(handle, "wf_double_reset"))),
        violations_(reinterpret_cast<const char* (*)()>(dlsym(handle, "wf_double_violations"))),
        readCounters_(reinterpret_cast<void (*)(wf_double_counters*)>(
            dlsym(handle, "wf_double_read_counters"))),
        failLaunch_(reinterpret_cast<void (*)(int, int)>(dlsym(handle, "wf_double_fail_launch"))),
        liveAllocations_(
            reinterpret_cast<size_t (*)()>(dlsym(handle, "wf_double_live_allocations"))),
        beginCapture_(
            reinterpret_cast<int (*)(void*, int)>(dlsym(handle, "wf_double_begin_capture"))),
        endCapture_(
            reinterpret_cast<int (*)(void*, void**)>(dlsym(handle, "wf_double_end_capture"))),
        launchGraph_(
            reinterpret_cast<int (*)(void*, void*)>(dlsym(handle, "wf_double_launch_graph"))),
        destroyGraph_(reinterpret_cast<void (*)(void*)>(dlsym(handle, "wf_double_destroy_graph"))),
        liveUserObjects_(
            reinterpret_cast<size_t (*)()>(dlsym(handle, "wf_double_live_user_objects"))) {}

  void (*reset_)();
  const char* (*violations_)();
  void (*readCounters_)(wf_double_counters*);
  void (*failLaunch_)(int, int);
  size_t (*liveAllocations_)();
  int (*beginCapture_)(void*, int);
  int (*endCapture_)(void*, void**);
  int (*launchGraph_)(void*, void*);
  void (*destroyGraph_)(void*);
  size_t (*liveUserObjects_)();
};

/// Expects `counters` to show none of the calls a step must not make behind its caller's back
/// (allocations, frees, copies, memsets, waits, legacy-stream work, calls refused under
/// capture), naming each one it shows and `where`.
inline void expectNoHiddenWork(const wf_double_counters& counters, const char* where) {
  for (auto [count, what] :
       {std::pair(counters.allocations, "allocations"), std::pair(counters.frees, "frees"),
        std::pair(counters.uploads, "uploads"), std::pair(counters.downloads, "downloads"),
        std::pair(counters.memsets, "memsets"),
        std::pair(counters.synchronizations, "synchronizations"),
        std::pair(counters.legacyStreamWrites, "legacy stream writes"),
        std::pair(counters.captureRefusals, "refused calls")})
    EXPECT_EQ(count, 0u) << what << " " << where;
}

} // namespace widefuse::testing

/// Skips the test unless the CUDA driver is the double; declares `driverDouble`, reset.
#define WF_REQUIRE_DOUBLE()                                                                        \
  ::widefuse::testing::DriverDouble* driverDouble = ::widefuse::testing::DriverDouble::get();      \
  if (!driverDouble)                                                                               \
    GTEST_SKIP() << "the CUDA driver is not the driver double";                                    \
  driverDouble->reset()
