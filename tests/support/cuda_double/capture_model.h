#pragma once
/// The CUDA driver double's model of stream capture (cuStreamBeginCapture ...
/// cuStreamEndCapture), as the driver API documents it: work queued on a capturing stream is
/// not run but recorded into a graph, and while a capture is in progress the calls that would
/// break it are refused. A refused call returns the real driver's error, does nothing,
/// invalidates the capture (cuStreamEndCapture then fails with
/// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) and is recorded as a protocol violation, without the
/// sticky error of a faulting kernel (a real context survives it).
///
/// What is refused, and why:
///
/// | call | while | result |
/// |---|---|---|
/// | cuStreamSynchronize | its stream captures | UNSUPPORTED: the work is not running |
/// | cuCtxSynchronize, cuMemAlloc, cuMemFree, cuMemcpyHtoD, cuMemcpyDtoH, cuMemsetD8 | a capture
/// forbids unsafe calls in this thread (below) | UNSUPPORTED: "potentially unsafe API calls"
/// (synchronous with the host, or not observed by the capture, so a replay would not repeat them) |
/// | cuMemcpyHtoDAsync from pageable memory, cuMemcpyDtoHAsync | their stream captures |
/// UNSUPPORTED: a graph would read or write the pageable memory at each replay, long after the
/// caller reused it (a copy from page-locked memory, cuMemAllocHost's, is recorded) | | anything
/// queued on, or asked of, the legacy stream | a blocking stream captures | IMPLICIT: the legacy
/// stream synchronises with blocking streams | | cuStreamBeginCapture | on the legacy stream |
/// UNSUPPORTED |
///
/// A capture forbids unsafe calls in the capturing thread unless it is relaxed
/// (CU_STREAM_CAPTURE_MODE_RELAXED), and in every thread when it is global (the default).
/// Launches and cuMemsetD8Async on a capturing stream are recorded. Pure queries
/// (cuStreamIsCapturing, cuPointerGetAttribute, device attributes) stay legal, as on the real
/// driver; tests count pointer queries separately.
///
/// Not modelled: events recorded or waited for on a capturing stream (refused) and
/// cross-stream capture (joining streams into one capture), graph nodes other than recorded
/// stream work, graph instantiation (a graph replays as it is),
/// cuThreadExchangeStreamCaptureMode.

#include "tests/support/cuda_double/stream_model.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace widefuse::cuda_double {

/// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, _INVALIDATED, _IMPLICIT, _WRONG_THREAD and
/// CUDA_ERROR_ILLEGAL_STATE (cuda.h).
constexpr int kCaptureUnsupported = 900, kCaptureInvalidated = 901, kCaptureImplicit = 906,
              kCaptureWrongThread = 908, kIllegalState = 401;

/// CUstreamCaptureStatus: what cuStreamIsCapturing answers.
enum CaptureStatus : int { kCaptureNone = 0, kCaptureActive = 1, kCaptureStatusInvalidated = 2 };

/// One piece of stream work a capture recorded; a replay queues it again.
struct CapturedOperation {
  std::string what;
  /// The device memory it writes, by address and allocation id: the allocations may be freed
  /// before a replay (which is then a violation, not a use of a dangling pointer).
  std::vector<std::pair<uintptr_t, uint64_t>> writes;
  std::function<void(Operation&)> run;
};

/// A cuUserObjectCreate object: `destroy(data)` runs when its last reference goes.
struct UserObject {
  void* data = nullptr;
  void (*destroy)(void*) = nullptr;
  unsigned references = 0;
};

/// What cuStreamEndCapture returns: the recorded work, in stream order, and the user objects
/// it holds references to (released when the graph is destroyed).
struct Graph {
  std::vector<CapturedOperation> operations;
  std::vector<std::pair<UserObject*, unsigned>> userObjects;
};

/// The captures in progress of one process; not thread-safe (the driver double serialises
/// every entry point).
class CaptureModel {
public:
  explicit CaptureModel(StreamModel& streams) : streams_(streams) {}

  /// cuStreamBeginCapture with CUstreamCaptureMode `mode` (0 global, 1 thread-local, 2
  /// relaxed) from the calling thread.
  int begin(Stream& stream, int mode);
  /// cuStreamEndCapture: the graph in `*graph` (null when the capture was invalidated).
  int end(Stream& stream, Graph** graph);
  /// cuStreamIsCapturing's answer for `stream`: a CaptureStatus, or kCaptureImplicit for the
  /// legacy stream while a blocking stream captures.
  int status(const Stream& stream) const;
  /// True while `stream` captures (also once its capture is invalidated, until it ends).
  bool capturing(const Stream& stream) const { return captures_.count(&stream) != 0; }
  /// True while any capture is in progress.
  bool any() const { return !captures_.empty(); }
  /// The graph `stream`'s capture records into (null when it does not capture).
  Graph* graphOf(const Stream& stream) const {
    auto found = captures_.find(&stream);
    return found == captures_.end() ? nullptr : found->second.graph.get();
  }

  /// Records `run` into the capture of `stream`; the stream must be capturing.
  void record(Stream& stream, std::string what, std::vector<Allocation*> writes,
              std::function<void(Operation&)> run);
  /// 0 when `call` may run now; otherwise the error it gets. `unsafe`: a "potentially unsafe"
  /// call (synchronous, or an allocation), refused while a capture forbids them in this thread.
  /// `stream`: the stream the call queues on or waits for (null: none), refused when it is the
  /// legacy stream while a blocking stream captures, and, when `streamReason` is given (why
  /// the call cannot be recorded), when it captures.
  int refuse(const std::string& call, bool unsafe, const Stream* stream = nullptr,
             const char* streamReason = nullptr);
  /// Queues the operations of `graph` on `stream`, in order (cuGraphLaunch); an operation
  /// that writes device memory freed since the capture is a violation, and is not queued.
  void launch(const Graph& graph, Stream& stream);
  /// The calls refused since the last reset.
  uint64_t refusals() const { return refusals_; }
  /// Forgets the refusal count (the captures in progress stay).
  void resetCounts() { refusals_ = 0; }

private:
  struct Capture {
    int mode = 0;
    std::thread::id thread;
    bool invalidated = false;
    std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  };
  /// Refuses `call` with `result`: a violation naming `why`, and every capture in `broken`
  /// invalidated.
  int refuseWith(int result, const std::string& call, const std::string& why,
                 const std::vector<Capture*>& broken);

  StreamModel& streams_;
  std::map<const Stream*, Capture> captures_;
  uint64_t refusals_ = 0;
};

} // namespace widefuse::cuda_double
