#pragma once
/// What the CUDA backend's options are: how NVRTC compiles, the stream launches go to, and
/// whether each launch is waited for (debugging).

namespace widefuse {

/// True when WIDEFUSE_CUDA_SYNC is set (and not "0"): the default of
/// CudaOptions::synchronizeEachLaunch.
bool synchronizeEachLaunchFromEnvironment();

/// How the CUDA backend runs (ExecutorOptions::cuda).
struct CudaOptions {
  /// Let NVRTC contract a*b+c into fma. Off: one rounding per IR operation, as the reference
  /// evaluator and the host backend compute (docs/testing.md).
  bool fmad = true;
  /// The device (its ordinal) a run whose tensors are all in host memory uses; a run with
  /// tensors in device memory uses theirs.
  int device = 0;
  /// The stream (a CUstream) launches go to when a run or launch names none (CheckedRun::stream);
  /// null is the legacy default stream.
  void* stream = nullptr;
  /// Wait for each kernel and name the one whose asynchronous fault surfaced (debugging;
  /// slow). Default: the environment variable WIDEFUSE_CUDA_SYNC (set, not "0").
  bool synchronizeEachLaunch = synchronizeEachLaunchFromEnvironment();
};

} // namespace widefuse
