#pragma once
/// The scheduler: turns the segmenter's kernel groups into KernelPlans for one input
/// specialization and one device.

#include "scheduler/kernel_plan.h"

#include <llvm/ADT/SmallVector.h>

#include <optional>
#include <vector>

namespace widefuse {

/// What the scheduler needs to know about the arguments of a run beyond the fusion's
/// declared types: the runtime computes it from the actual tensors, and the compile command
/// derives it from the declarations.
struct Specialization {
  /// Per fusion input: true when the tensor is dense in its declared order (scalars: true).
  /// A member with a non-dense tensor is indexed with strides.
  llvm::SmallVector<bool, 16> denseInputs;
  /// Per phase, per component: true when the member needs 64-bit element indices, i.e. its
  /// element count or the span of one of its tensors (largest offset + 1) reaches
  /// kMaxInt32IndexElements. Kernels use 64-bit indices only where a member needs them.
  std::vector<std::vector<bool>> needsInt64Index;
};

/// Tuning knobs of the scheduler; benchmarks/gpu compares settings on a GPU
/// (docs/performance.md says what was measured and why the defaults are what they are).
struct ScheduleOptions {
  /// Resident blocks per multiprocessor a kernel is first compiled for (its register cap),
  /// which caps registers at 65536 / (threadsPerBlock x this). compileFusion lowers it while
  /// ptxas reports spills.
  unsigned minBlocksPerMultiprocessor = 4;
  /// Flat bodies load each thread's next vector of every tensor before computing the current
  /// one, so that its loads are in flight while it computes. Off by default until measured:
  /// it costs registers (f32 Adam: 78 instead of 56, so 3 resident blocks instead of 4).
  bool prefetch = false;
  /// Threads per block: a power of two from 32 to 1024. A chunk is 4 rows of them, and the
  /// combine's block tree has as many leaves (docs/reductions.md §8, §10).
  unsigned threadsPerBlock = 256;
  /// Columns of a row segment: a rows chunk takes at most this many columns of its rows, so
  /// that a few long rows spread over many blocks (docs/reductions.md §9). A power of two from
  /// 32 to 2^20; a segment's tree is then a subtree of its row's.
  int64_t rowSegmentColumns = kRowSegmentColumns;
};

/// Members below this many elements (and tensor spans) use 32-bit indices: 2^31 less one
/// megabyte, so that `begin + chunkElements` cannot overflow.
inline constexpr int64_t kMaxInt32IndexElements = (int64_t(1) << 31) - (int64_t(1) << 20);

/// The specialization the declarations imply: dense inputs, 64-bit indices only when a static
/// domain needs them.
Specialization declaredSpecialization(const SegmentedFusion& segmented);

/// Below two resident blocks of 256 threads a multiprocessor has too few warps to keep memory
/// busy: a kernel that still spills with 128 registers keeps its spills.
inline constexpr unsigned kFewestBlocksPerMultiprocessor = 2;

/// The plan to compile instead of `plan`, whose kernel spilled `spilledBytes` with
/// registerCap(plan) registers: one resident block fewer (more registers per thread; the
/// source does not change), with a note saying why. None at kFewestBlocksPerMultiprocessor.
std::optional<KernelPlan> planAfterSpill(const KernelPlan& plan, unsigned spilledBytes);

/// Plans every kernel of every phase of `segmented`, and lays out their launches phase after
/// phase. Groups that compile to the same kernel (the members of one signature class in
/// per-component mode) share one plan and differ only in their launches. Throws Error for what
/// codegen cannot emit (a deferred write of a tensor that is not 0-d).
ScheduledFusion schedule(const SegmentedFusion& segmented, const Specialization& specialization,
                         const DeviceDescription& device, const ScheduleOptions& options = {});

} // namespace widefuse
