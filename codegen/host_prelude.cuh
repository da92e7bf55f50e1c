// widefuse host prelude: what the host backend's fast path needs of CUDA's built-ins, for the
// host C++ compiler.
//
// The host backend compiles the very source NVRTC compiles, with this text in front, and runs
// its `<kernel>_host_fast_block` entry: one loop per block's run of a member, which calls no
// built-in. The device functions are compiled, never run (the device emulator runs them, with
// the emulation prelude instead): the macros make them valid C++, and __syncthreads aborts.
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
/// Read only by device functions, which the fast path never calls.
inline wf_host_dim3 threadIdx, blockIdx, blockDim, gridDim;

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
