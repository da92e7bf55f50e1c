#pragma once
/// The CUDA backend's part of lowering: NVRTC's cubin of every kernel a fusion compiled to,
/// each at its plan's register cap, with fewer resident blocks while ptxas reports spills.

#include "runtime/cuda/cubin_cache.h"
#include "runtime/dump_options.h"
#include "runtime/fusion_compiler.h"

namespace widefuse {

/// How a fusion's kernels are compiled to cubins.
struct CubinOptions {
  /// Let NVRTC contract a*b+c into fma (CudaOptions::fmad).
  bool fmad = true;
  /// What to dump: every kernel's PTX, and a plan again where a spill changed it.
  DumpOptions dumps;
};

/// Compiles every kernel of `compiled` (whose sources compileFusion emitted) for its plan's
/// arch through `cache`, setting FusionKernel::compiled, cache and milliseconds. A spilling
/// kernel is bound by local memory traffic, so while ptxas reports spills the scheduler's
/// plan with one resident block fewer (more registers, the same source) replaces its plan;
/// the runtime sizes the grid from the occupancy the final kernel has. Throws what
/// compileCuda() throws.
void compileCubins(CompiledFusion& compiled, CubinCache& cache, const CubinOptions& options);

/// compileFusion, then compileCubins with `cubins` and the compile options' dumps: what the
/// CUDA backend builds for `fusion`.
CompiledFusion compileFusionToCubins(const Fusion& fusion, const FusionCompileOptions& options,
                                     CubinCache& cache, bool fmad = true,
                                     const Specialization* specialization = nullptr);

} // namespace widefuse
