// widefuse host prelude: the CUDA built-ins that generated kernels use, for the host C++ compiler.
//
// The host backend compiles the very source NVRTC compiles, with this text in front. Thread and
// block indices are thread-local variables the host runner sets before each thread's work;
// atomics and fences are the compiler's. __syncthreads never runs on the host: the generated
// `<kernel>_host_block` entry splits each chunk at the barrier instead (every thread runs up to
// it, then thread 0 goes on), so a block needs no fibers.
#ifndef WIDEFUSE_HOST_PRELUDE
#define WIDEFUSE_HOST_PRELUDE

#include <cstdlib>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__

struct wf_host_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local wf_host_dim3 threadIdx, blockIdx, blockDim, gridDim;

/// Makes the calling CPU thread act as thread `thread` of block `block`.
inline void wf_host_enter_thread(unsigned thread, unsigned block, unsigned threads,
                                 unsigned grid) {
  threadIdx = {thread, 0, 0};
  blockIdx = {block, 0, 0};
  blockDim = {threads, 1, 1};
  gridDim = {grid, 1, 1};
}

/// Only the device kernel calls it; reaching it on the host is a bug in the host entry.
[[noreturn]] inline void __syncthreads() {
  std::abort();
}

inline void __threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

inline unsigned atomicAdd(unsigned* address, unsigned value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}

#endif // WIDEFUSE_HOST_PRELUDE
