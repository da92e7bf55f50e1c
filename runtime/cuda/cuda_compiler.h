#pragma once
/// CUDA C++ text -> cubin with NVRTC, keeping ptxas's statistics of the kernel. No device is
/// needed: NVRTC compiles for any arch it supports on a machine without a GPU.

#include "ir/error.h"
#include "runtime/kernel_image.h"

#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace widefuse {

/// How a kernel is compiled; every field is part of the kernel cache's key.
struct CompileOptions {
  /// The target, `sm_<number>` (a real arch, so NVRTC emits a cubin).
  std::string arch = "sm_90";
  /// Let the compiler contract a*b+c into fma. Off makes device results match a host
  /// evaluation that rounds every operation.
  bool fmad = true;
  /// Registers per thread ptxas may use (--maxrregcount); 0 leaves the choice to ptxas.
  unsigned maxRegisters = 0;
};

/// Compiles `source` (which defines `extern "C" __global__ void <kernelName>`) to cubin for
/// options.arch. Throws Error for an unsupported arch, a missing NVRTC, or a failed
/// compilation; the last names the kernel, quotes NVRTC's log and gives the path of a file
/// holding the source ($WIDEFUSE_DUMP_DIR/<kernelName>.cu when that variable is set, else a
/// file in the system's temporary directory).
KernelImage compileCuda(llvm::StringRef source, llvm::StringRef kernelName,
                        const CompileOptions& options);

/// Parses ptxas -v output for one entry function (exposed for tests). Other functions'
/// lines (callees such as __internal_accurate_pow, other entries) are ignored; a kernel the
/// log does not mention gets all zeros.
KernelStats parsePtxasStats(llvm::StringRef log, llvm::StringRef kernelName);

/// Checks that `arch` is `sm_<number>` and that NVRTC supports that number. Throws Error
/// listing the supported archs otherwise ("unsupported arch 'sm_91': NVRTC 13.0 supports
/// sm_75, sm_80, ...").
void checkArch(llvm::StringRef arch);

/// The options given to nvrtcCompileProgram for `options` (exposed for tests and dumps).
std::vector<std::string> nvrtcOptions(const CompileOptions& options);

} // namespace widefuse
