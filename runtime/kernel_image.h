#pragma once
/// A compiled kernel as the kernel caches keep it, in memory and on disk: a cubin for the
/// CUDA backend, a shared object for the host backend.

#include <string>
#include <vector>

namespace widefuse {

/// ptxas statistics of one kernel's entry function (all zeros for a host image).
struct KernelStats {
  /// Registers per thread.
  int registers = 0;
  /// Bytes stored to local memory because registers ran out.
  int spillStoreBytes = 0;
  /// Bytes loaded back from local memory after a spill.
  int spillLoadBytes = 0;
  /// The entry function's stack frame in bytes.
  int stackBytes = 0;
  /// All spill traffic: a nonzero value means the kernel is register-bound.
  int spillBytes() const { return spillStoreBytes + spillLoadBytes; }
};

/// One compiled kernel: what a launcher needs (the image, the entry name) plus what helps a
/// person judge it (PTX, the compiler's log, ptxas statistics, compile time).
struct KernelImage {
  /// The entry function's name (`extern "C"`, so unmangled).
  std::string name;
  /// What the image runs on: an arch for a cubin ("sm_90"), "host" for a shared object.
  std::string target;
  /// The image: a cubin (an ELF image for the CUDA driver) or a host shared object.
  std::vector<char> image;
  /// The PTX NVRTC produced on the way (empty for a host image).
  std::string ptx;
  /// The compiler's log; NVRTC's includes the ptxas -v lines.
  std::string log;
  /// ptxas statistics of the entry function.
  KernelStats stats;
  /// Wall time of the compilation.
  double compileMilliseconds = 0;
};

} // namespace widefuse
