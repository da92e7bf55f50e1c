#include "tests/support/cuda_double/capture_model.h"

namespace widefuse::cuda_double {
namespace {

constexpr int kRelaxed = 2, kGlobal = 0;

const char* modeName(int mode) {
  return mode == kGlobal ? "global" : mode == kRelaxed ? "relaxed" : "thread-local";
}

} // namespace

int CaptureModel::begin(Stream& stream, int mode) {
  if (mode < 0 || mode > kRelaxed)
    return 1; // CUDA_ERROR_INVALID_VALUE
  if (stream.legacy)
    return refuseWith(kCaptureUnsupported, "cuStreamBeginCapture",
                      "the legacy default stream cannot be captured", {});
  if (capturing(stream))
    return kIllegalState;
  Capture& capture = captures_[&stream];
  capture.mode = mode;
  capture.thread = std::this_thread::get_id();
  return 0;
}

int CaptureModel::end(Stream& stream, Graph** graph) {
  *graph = nullptr;
  auto found = captures_.find(&stream);
  if (found == captures_.end())
    return kIllegalState;
  if (found->second.mode != kRelaxed && found->second.thread != std::this_thread::get_id())
    return kCaptureWrongThread;
  bool invalidated = found->second.invalidated;
  if (!invalidated)
    *graph = found->second.graph.release();
  captures_.erase(found);
  return invalidated ? kCaptureInvalidated : 0;
}

int CaptureModel::status(const Stream& stream) const {
  if (stream.legacy) {
    for (const auto& [captured, capture] : captures_)
      if (!captured->nonBlocking && captured->device == stream.device)
        return kCaptureImplicit;
    return kCaptureNone;
  }
  auto found = captures_.find(&stream);
  if (found == captures_.end())
    return kCaptureNone;
  return found->second.invalidated ? kCaptureStatusInvalidated : kCaptureActive;
}

void CaptureModel::record(Stream& stream, std::string what, std::vector<Allocation*> writes,
                          std::function<void(Operation&)> run) {
  std::vector<std::pair<uintptr_t, uint64_t>> written;
  for (const Allocation* allocation : writes)
    written.emplace_back(allocation->base, allocation->id);
  captures_.at(&stream).graph->operations.push_back(
      {std::move(what), std::move(written), std::move(run)});
}

int CaptureModel::refuse(const std::string& call, bool unsafe, const Stream* stream,
                         const char* streamReason) {
  if (captures_.empty())
    return 0;
  if (stream && streamReason && capturing(*stream))
    return refuseWith(kCaptureUnsupported, call,
                      std::string("its stream is capturing") + streamReason,
                      {&captures_.at(stream)});
  if (stream && stream->legacy) {
    std::vector<Capture*> blocking;
    for (auto& [captured, capture] : captures_)
      if (!captured->nonBlocking && captured->device == stream->device)
        blocking.push_back(&capture);
    if (!blocking.empty())
      return refuseWith(kCaptureImplicit, call,
                        "it uses the legacy default stream, which synchronises with the "
                        "capturing blocking stream",
                        blocking);
  }
  if (!unsafe)
    return 0;
  std::vector<Capture*> forbidding;
  int mode = 0;
  for (auto& [captured, capture] : captures_) {
    bool here = capture.thread == std::this_thread::get_id();
    if (capture.mode == kGlobal || (here && capture.mode != kRelaxed)) {
      forbidding.push_back(&capture);
      mode = capture.mode;
    }
  }
  if (forbidding.empty())
    return 0;
  return refuseWith(kCaptureUnsupported, call,
                    std::string("a ") + modeName(mode) +
                        " capture is in progress and the call is potentially unsafe "
                        "(synchronous, or not observed by the capture)",
                    forbidding);
}

int CaptureModel::refuseWith(int result, const std::string& call, const std::string& why,
                             const std::vector<Capture*>& broken) {
  ++refusals_;
  for (Capture* capture : broken)
    capture->invalidated = true;
  streams_.report(call + " during stream capture: refused because " + why);
  return result;
}

void CaptureModel::launch(const Graph& graph, Stream& stream) {
  for (const CapturedOperation& operation : graph.operations) {
    std::vector<Allocation*> writes;
    for (auto [base, id] : operation.writes) {
      Allocation* allocation = streams_.find(base);
      if (!allocation || allocation->id != id) {
        streams_.violate("the graph replay of " + operation.what +
                         " writes device memory that was freed after the capture");
        return;
      }
      writes.push_back(allocation);
    }
    streams_.enqueue(stream, operation.what + " (graph replay)", writes, operation.run);
  }
}

} // namespace widefuse::cuda_double
