#pragma once
/// PreparedRun: one fusion's arguments checked, compiled for and bound once, then launched
/// step after step with no checks, as an optimizer's step is; the arguments that do change
/// between steps (a new grad tensor, a scheduled learning rate) are replaced one at a time.

#include "ir/arguments.h"
#include "ir/host_tensor.h"
#include "runtime/argument_fingerprint.h"
#include "runtime/backend.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace widefuse {

class FusionExecutorCache;
struct RunResult;
struct RuntimeShapes;

/// A run whose tensors stay where they are (their contents change from step to step, as an
/// optimizer's state does): prepared once, then launched with no argument checks, so dispatch
/// does not grow with the number of parameters. Not for concurrent use of one object; must
/// not outlive the FusionExecutorCache that made it.
class PreparedRun {
public:
  /// One step with the prepared arguments (scalars included), queued on `stream` (a CUstream;
  /// nullopt: the backend's default, CudaOptions::stream). After rebindTensor/setScalar, a
  /// backend that supports it rewrites only the changed pointers and scalars in its launch
  /// tables. Steps on different streams are ordered by the CUDA backend (cuda_backend.md §1).
  RunResult launch(std::optional<void*> stream = std::nullopt);

  /// Points tensor argument `index` at `data` for the following launches: memory laid out as
  /// the prepared tensor is (same dtype, shape and strides), as a fresh grad tensor of a
  /// parameter is. Checks the pointer (null, element alignment) and that the memory does not
  /// overlap a copy_ destination (a binary search; a new destination is checked against every
  /// argument); throws Error and changes nothing when a check fails.
  void rebindTensor(size_t index, void* data);

  /// Sets runtime scalar argument `index` for the following launches (a scheduled learning
  /// rate); checked as run() checks it. An output extent keeps its prepared value (throws).
  void setScalar(size_t index, ScalarArgument value);

private:
  friend class FusionExecutorCache;
  /// `loaded`: the specialization the arguments were checked for; `stepMutex`: what steps
  /// that share the executor's kept memory take turns with (the executor's, which outlives
  /// the run); `kept`: that memory (FusionExecutorCache::keep), held while the run lives.
  PreparedRun(const Fusion& fusion, std::mutex& stepMutex, std::vector<Argument> arguments,
              std::shared_ptr<LoadedFusion> loaded, std::shared_ptr<const RuntimeShapes> shapes,
              Fingerprint fingerprint, std::vector<TensorRef> outputs,
              std::shared_ptr<const std::vector<KeptTensor>> kept);
  /// The byte spans of the copy_ destinations, in address order (they never overlap).
  void collectWrittenSpans();

  /// Records that argument `index` changed since the last launch.
  void markChanged(size_t index);

  const Fusion& fusion_;
  std::mutex& stepMutex_;
  std::vector<Argument> arguments_;
  std::shared_ptr<LoadedFusion> loaded_;
  std::shared_ptr<const RuntimeShapes> shapes_;
  /// The arguments' fingerprint as of the last launch.
  Fingerprint fingerprint_;
  /// This run's own fingerprint, rewritten in place after changes (made on the first change:
  /// the first fingerprint may be shared with run()); the steady state allocates no other.
  std::shared_ptr<std::vector<int64_t>> own_;
  /// By value id: the inputs changed since the last launch; `anyChanged_` if one is.
  std::vector<uint8_t> changed_;
  bool anyChanged_ = false;
  /// By input index: the runtime scalars that are output extents (setScalar may not change).
  std::vector<uint8_t> isExtent_;
  struct WrittenSpan {
    uintptr_t start, end;
    size_t index;
  };
  std::vector<WrittenSpan> writtenSpans_;
  /// Where the plain outputs go at each launch (fixed when prepared; empty: allocated).
  std::vector<TensorRef> outputs_;
  /// The kept results' memory (null when none), and its tensors.
  std::shared_ptr<const std::vector<KeptTensor>> kept_;
  std::vector<TensorRef> keptRefs_;
};

} // namespace widefuse
