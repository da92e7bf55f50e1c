// What a kernel compiled for the device emulator calls back into (runtime/host/device_emulator.h):
// the CUDA execution model's built-ins and every memory access the compiler instrumented. Plain C++
// with no includes, because it is both a header (for the emulator) and part of the emulation
// prelude's text (CMake inlines it), so the kernel's shared object and the emulator agree on one
// layout.
#ifndef WIDEFUSE_EMULATION_ABI
#define WIDEFUSE_EMULATION_ABI

/// Bytes of each emulated thread's stack, aligned to its size: an address shares its stack
/// with the caller's frame when the two agree above these bits (the kernel's own locals, which
/// need no check).
#define WF_EMU_STACK_BYTES (256ul << 10)

/// The emulated thread that runs now: CUDA's built-in variables, one dimension (generated
/// kernels launch 1-D grids of 1-D blocks).
struct wf_emu_thread {
  unsigned thread;  // threadIdx.x
  unsigned block;   // blockIdx.x
  unsigned threads; // blockDim.x
  unsigned blocks;  // gridDim.x
};

/// The warp-level collectives, as wf_emu_hooks::warp takes them.
enum wf_emu_warp_kind {
  wf_emu_shfl = 0,      // value of lane `operand` (within its `width` segment)
  wf_emu_shfl_up = 1,   // value of lane - operand, own value below the segment's start
  wf_emu_shfl_down = 2, // value of lane + operand, own value past the segment's end
  wf_emu_shfl_xor = 3,  // value of lane ^ operand
  wf_emu_ballot = 4,    // bit l set where lane l's value is non-zero
  wf_emu_any = 5,
  wf_emu_all = 6,
  wf_emu_syncwarp = 7
};

/// The emulator's functions; `pc` is the kernel's return address, which the emulator turns
/// into a line of the generated text when it reports.
struct wf_emu_hooks {
  /// A load (`write` 0) or store (1) of `bytes` bytes at `address`.
  void (*access)(const void* address, unsigned long bytes, int write, void* pc);
  /// __syncthreads.
  void (*barrier)(void* pc);
  /// atomicAdd on a 32-bit unsigned word; returns the old value.
  unsigned (*atomic_add_u32)(unsigned* address, unsigned value, void* pc);
  /// A warp collective (wf_emu_warp_kind) of the lanes in `mask`; returns this lane's result.
  unsigned long long (*warp)(int kind, unsigned mask, unsigned long long value, int operand,
                             int width, void* pc);
  /// __activemask: the lanes of the calling thread's warp that reach this point together.
  unsigned (*active_mask)(void* pc);
  /// Whether `address` lies in global memory the launch was given (__isGlobal).
  int (*is_global)(const void* address);
  /// The emulated thread that runs now.
  const wf_emu_thread* (*self)(void);
  /// A device-side assumption (__builtin_assume) that does not hold: `what` says which.
  void (*fail)(const char* what, void* pc);
  /// While coverage is recorded: a basic block of the kernel starts at `pc` (null otherwise).
  void (*covered)(void* pc);
};

#endif // WIDEFUSE_EMULATION_ABI
