// widefuse emulation prelude: what the device emulator (runtime/host/device_emulator.h) puts in
// front of a kernel's CUDA text, so that the host compiler builds the device code itself — the
// __CUDA_ARCH__ branches, __shared__ arrays, barriers and warp collectives — for CPU fibers.
//
// The kernel is compiled with ThreadSanitizer's instrumentation, so every load and store calls
// __tsan_<read|write><N> below, which hand it to the emulator's checks. Unlike
// AddressSanitizer's, that instrumentation keeps a store to an address the thread has just
// loaded (`x[i] += v`). No sanitizer runtime is linked: these definitions are hidden, and the
// kernel's calls bind to them even in a process that runs AddressSanitizer itself.
#ifndef WIDEFUSE_EMULATION_PRELUDE
#define WIDEFUSE_EMULATION_PRELUDE

#include <cmath>
#include <cstring>

#include "codegen/emulation_abi.h"
#include "codegen/launch_abi.h"
#include "ir/inverse_erf.h"

// The device compiler's view: the prelude's __CUDACC__ and __CUDA_ARCH__ branches are taken.
#define __CUDACC__ 1
#define __CUDA_ARCH__ 900
// The prelude's inline PTX (device-scope loads and stores) has plain C++ twins here.
#define WF_EMULATED_DEVICE 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
/// One copy per block: a block's fibers all run on one CPU thread, one block at a time.
#define __shared__ static thread_local

#define WF_EMU_CALLBACK                                                                            \
  extern "C" __attribute__((visibility("hidden"), no_sanitize_thread, no_sanitize_coverage))
#define WF_EMU_BUILTIN __attribute__((noinline, no_sanitize_thread, no_sanitize_coverage))
#define WF_EMU_PC __builtin_return_address(0)

/// The emulator's functions, installed once when the kernel is loaded.
__attribute__((visibility("hidden"))) const wf_emu_hooks* wf_emu = nullptr;
/// Gives every kernel a thread-local block (its __shared__ storage), even one that declares no
/// __shared__ array (wf_emu_touch_shared keeps it referenced).
static thread_local char wf_emu_tls_anchor;

/// What the emulator looks up in the kernel's shared object (built with hidden symbols).
#define WF_EMU_EXPORT                                                                              \
  extern "C" __attribute__((visibility("default"), no_sanitize_thread, no_sanitize_coverage))
WF_EMU_EXPORT void wf_emu_install(const wf_emu_hooks* hooks) {
  wf_emu = hooks;
}
WF_EMU_EXPORT void* wf_emu_touch_shared() {
  return &wf_emu_tls_anchor;
}

// ---- every memory access of the kernel ----
/// Whether [address, address + bytes) lies in the calling thread's own stack: its locals (at
/// -O0 every variable lives there), which the emulator need not see.
#define WF_EMU_PRIVATE(address, bytes)                                                             \
  ((((unsigned long)(address) ^ (unsigned long)__builtin_frame_address(0)) <                       \
    WF_EMU_STACK_BYTES) &&                                                                         \
   ((((unsigned long)(address) + (bytes)-1) ^ (unsigned long)__builtin_frame_address(0)) <         \
    WF_EMU_STACK_BYTES))
#define WF_EMU_ACCESS(bytes)                                                                       \
  WF_EMU_CALLBACK void __tsan_read##bytes(void* address) {                                         \
    if (!WF_EMU_PRIVATE(address, bytes))                                                           \
      wf_emu->access(address, bytes, 0, WF_EMU_PC);                                                \
  }                                                                                                \
  WF_EMU_CALLBACK void __tsan_write##bytes(void* address) {                                        \
    if (!WF_EMU_PRIVATE(address, bytes))                                                           \
      wf_emu->access(address, bytes, 1, WF_EMU_PC);                                                \
  }                                                                                                \
  WF_EMU_CALLBACK void __tsan_unaligned_read##bytes(void* address) {                               \
    if (!WF_EMU_PRIVATE(address, bytes))                                                           \
      wf_emu->access(address, bytes, 0, WF_EMU_PC);                                                \
  }                                                                                                \
  WF_EMU_CALLBACK void __tsan_unaligned_write##bytes(void* address) {                              \
    if (!WF_EMU_PRIVATE(address, bytes))                                                           \
      wf_emu->access(address, bytes, 1, WF_EMU_PC);                                                \
  }
WF_EMU_ACCESS(1)
WF_EMU_ACCESS(2)
WF_EMU_ACCESS(4)
WF_EMU_ACCESS(8)
WF_EMU_ACCESS(16)
#undef WF_EMU_ACCESS
WF_EMU_CALLBACK void __tsan_read_range(void* address, unsigned long bytes) {
  if (!WF_EMU_PRIVATE(address, bytes))
    wf_emu->access(address, bytes, 0, WF_EMU_PC);
}
WF_EMU_CALLBACK void __tsan_write_range(void* address, unsigned long bytes) {
  if (!WF_EMU_PRIVATE(address, bytes))
    wf_emu->access(address, bytes, 1, WF_EMU_PC);
}
// The instrumentation's other entry points: a constructor's call, and fences (fences are
// sequentially consistent in the emulator).
WF_EMU_CALLBACK void __tsan_init() {}
WF_EMU_CALLBACK void __tsan_func_entry(void*) {}
WF_EMU_CALLBACK void __tsan_func_exit() {}
WF_EMU_CALLBACK void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
WF_EMU_CALLBACK void __tsan_atomic_signal_fence(int) {}

// ---- coverage: every basic block of the kernel (-fsanitize-coverage=trace-pc) ----
WF_EMU_CALLBACK void __sanitizer_cov_trace_pc() {
  if (wf_emu && wf_emu->covered)
    wf_emu->covered(WF_EMU_PC);
}

// ---- built-in variables (registers on the device: their reads are not checked) ----
struct wf_emu_dim3 {
  unsigned x, y, z;
};
__attribute__((no_sanitize_thread)) inline wf_emu_dim3 wf_emu_index(int which) {
  const wf_emu_thread* self = wf_emu->self();
  const unsigned values[4] = {self->thread, self->block, self->threads, self->blocks};
  return {values[which], which < 2 ? 0u : 1u, which < 2 ? 0u : 1u};
}
#define threadIdx (wf_emu_index(0))
#define blockIdx (wf_emu_index(1))
#define blockDim (wf_emu_index(2))
#define gridDim (wf_emu_index(3))
#define warpSize 32

// ---- barriers, fences, atomics ----
WF_EMU_BUILTIN void __syncthreads() {
  wf_emu->barrier(WF_EMU_PC);
}
inline void __threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
inline void __threadfence_block() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
WF_EMU_BUILTIN unsigned atomicAdd(unsigned* address, unsigned value) {
  return wf_emu->atomic_add_u32(address, value, WF_EMU_PC);
}
WF_EMU_BUILTIN int __isGlobal(const void* address) {
  return wf_emu->is_global(address);
}
WF_EMU_BUILTIN void wf_emu_assumption_failed(const char* what) {
  wf_emu->fail(what, WF_EMU_PC);
}
#define __builtin_assume(condition)                                                                \
  ((condition) ? (void)0 : wf_emu_assumption_failed("__builtin_assume(" #condition ")"))

// ---- warp collectives, with lane semantics ----
template <typename T> inline unsigned long long wf_emu_bits(T value) {
  static_assert(sizeof(T) <= 8, "a warp collective moves at most 8 bytes");
  unsigned long long bits = 0;
  memcpy(&bits, &value, sizeof(T));
  return bits;
}
template <typename T> inline T wf_emu_value(unsigned long long bits) {
  T value;
  memcpy(&value, &bits, sizeof(T));
  return value;
}
#define WF_EMU_SHUFFLE(name, kind)                                                                 \
  template <typename T>                                                                            \
  WF_EMU_BUILTIN T name(unsigned mask, T value, int operand, int width = warpSize) {               \
    return wf_emu_value<T>(                                                                        \
        wf_emu->warp(kind, mask, wf_emu_bits(value), operand, width, WF_EMU_PC));                  \
  }
WF_EMU_SHUFFLE(__shfl_sync, wf_emu_shfl)
WF_EMU_SHUFFLE(__shfl_up_sync, wf_emu_shfl_up)
WF_EMU_SHUFFLE(__shfl_down_sync, wf_emu_shfl_down)
WF_EMU_SHUFFLE(__shfl_xor_sync, wf_emu_shfl_xor)
#undef WF_EMU_SHUFFLE
WF_EMU_BUILTIN unsigned __ballot_sync(unsigned mask, int predicate) {
  return unsigned(wf_emu->warp(wf_emu_ballot, mask, predicate != 0, 0, warpSize, WF_EMU_PC));
}
WF_EMU_BUILTIN int __any_sync(unsigned mask, int predicate) {
  return int(wf_emu->warp(wf_emu_any, mask, predicate != 0, 0, warpSize, WF_EMU_PC));
}
WF_EMU_BUILTIN int __all_sync(unsigned mask, int predicate) {
  return int(wf_emu->warp(wf_emu_all, mask, predicate != 0, 0, warpSize, WF_EMU_PC));
}
WF_EMU_BUILTIN void __syncwarp(unsigned mask = 0xffffffffu) {
  wf_emu->warp(wf_emu_syncwarp, mask, 0, 0, warpSize, WF_EMU_PC);
}
WF_EMU_BUILTIN unsigned __activemask() {
  return wf_emu->active_mask(WF_EMU_PC);
}

// ---- device intrinsics, with their IEEE meaning (the kernel is built with no contraction) ----
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __fmaf_rn(float a, float b, float c) {
  return fmaf(a, b, c);
}
inline float __fsqrt_rn(float a) {
  return sqrtf(a);
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __dsub_rn(double a, double b) {
  return a - b;
}
inline double __dmul_rn(double a, double b) {
  return a * b;
}
inline double __ddiv_rn(double a, double b) {
  return a / b;
}
inline double __fma_rn(double a, double b, double c) {
  return fma(a, b, c);
}
inline double __dsqrt_rn(double a) {
  return sqrt(a);
}
// CUDA's inverse error functions: the reference evaluator's own, as on the host backend.
inline float erfinvf(float a) {
  return wf_erfinv_host(a);
}
inline double erfinv(double a) {
  return wf_erfinv_host(a);
}
inline float erfcinvf(float a) {
  return wf_erfcinv_host(a);
}
inline double erfcinv(double a) {
  return wf_erfcinv_host(a);
}

#endif // WIDEFUSE_EMULATION_PRELUDE
