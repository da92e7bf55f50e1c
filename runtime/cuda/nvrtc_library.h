#pragma once
/// NVRTC loaded at run time with dlopen: widefuse builds and runs without the CUDA Toolkit,
/// and only the paths that compile CUDA need it. The few NVRTC types and prototypes used are
/// declared here, so no CUDA header is needed at build time and nothing links libnvrtc.

#include "ir/error.h"
#include "runtime/cuda/cuda_versions.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace widefuse {

/// NVRTC's `nvrtcResult`: an enum of int whose 0 is NVRTC_SUCCESS.
using NvrtcResult = int;
/// NVRTC's `nvrtcProgram`: an opaque pointer.
using NvrtcProgram = struct NvrtcProgramOpaque*;

/// NVRTC_SUCCESS.
inline constexpr NvrtcResult kNvrtcSuccess = 0;

/// The NVRTC entry points widefuse calls, resolved from one shared library. The library stays
/// loaded for the life of the process: NVRTC keeps process-wide state that must not be
/// unloaded under a running compilation.
class NvrtcLibrary {
public:
  /// The NVRTC library of this process, chosen on first use (thread-safe): choose() over
  /// candidatePaths() for the driver of this process (CudaDriver::instance(); none when it
  /// does not load). When $WIDEFUSE_NVRTC_LIBRARY is set it is the only candidate, so an
  /// explicit choice is never silently replaced by another NVRTC. Throws Error listing what
  /// was tried when nothing loads; a later call tries again.
  static const NvrtcLibrary& instance();

  /// The version of instance(), or nullopt when no NVRTC loads; never throws. For what works
  /// without NVRTC but follows its version when there is one (the parameter limit, errors).
  static std::optional<CudaVersion> instanceVersion() noexcept;

  /// Loads NVRTC from one explicit path (a file path or a soname for the dynamic loader).
  /// Throws Error naming the path when it cannot be loaded or lacks an entry point.
  static std::unique_ptr<NvrtcLibrary> load(llvm::StringRef path);

  /// Loads every one of `paths` that is a usable NVRTC and keeps the one chooseNvrtcVersion()
  /// picks for a driver whose cuDriverGetVersion is `driverVersion` (nullopt: no driver): the
  /// newest whose major the driver supports, else the newest. Throws Error listing every
  /// attempt, the driver's CUDA version and the fix when none loads: point
  /// $WIDEFUSE_NVRTC_LIBRARY elsewhere (`fromEnvironment`: the paths came from it), or install
  /// an NVRTC or set the variable, or use the host backend.
  static std::unique_ptr<NvrtcLibrary>
  choose(llvm::ArrayRef<std::string> paths, std::optional<int> driverVersion, bool fromEnvironment);

  /// The paths instance() considers, in order, for the current environment: only
  /// $WIDEFUSE_NVRTC_LIBRARY when it is set; otherwise the sonames and the toolkit's default
  /// location, every libnvrtc already loaded in the process (torch's, say), then the NVRTC of
  /// each `nvidia` package directory given to addPackageDirectories(). No path twice.
  static std::vector<std::string> candidatePaths();

  /// Adds directories of the `nvidia` Python package (where pip's CUDA wheels, torch's
  /// dependencies among them, install NVRTC) to candidatePaths(): the Python package passes
  /// the ones it finds when it is imported. Only a choice made afterwards sees them.
  static void addPackageDirectories(llvm::ArrayRef<std::string> directories);

  /// The path this library was loaded from.
  const std::string& path() const { return path_; }
  /// NVRTC's major version (13 for CUDA 13.0).
  int versionMajor() const { return versionMajor_; }
  /// NVRTC's minor version.
  int versionMinor() const { return versionMinor_; }
  /// "major.minor", e.g. "13.0".
  std::string versionString() const;
  /// NVRTC's version as a CudaVersion.
  CudaVersion cudaVersion() const { return {versionMajor_, versionMinor_}; }
  /// The SM numbers NVRTC can compile for, ascending (e.g. 75, 80, 86, ..., 120).
  llvm::ArrayRef<int> supportedArchs() const { return supportedArchs_; }

  /// NVRTC's name for a result code (e.g. "NVRTC_ERROR_COMPILATION").
  std::string errorString(NvrtcResult result) const;
  /// Throws Error "<what> failed: <NVRTC's error string>" unless `result` is success.
  void check(NvrtcResult result, llvm::StringRef what) const;

  /// nvrtcCreateProgram.
  NvrtcResult (*createProgram)(NvrtcProgram* program, const char* source, const char* name,
                               int numHeaders, const char* const* headers,
                               const char* const* includeNames) = nullptr;
  /// nvrtcCompileProgram.
  NvrtcResult (*compileProgram)(NvrtcProgram program, int numOptions,
                                const char* const* options) = nullptr;
  /// nvrtcDestroyProgram.
  NvrtcResult (*destroyProgram)(NvrtcProgram* program) = nullptr;
  /// nvrtcGetProgramLogSize (the size counts the terminating NUL).
  NvrtcResult (*getProgramLogSize)(NvrtcProgram program, size_t* size) = nullptr;
  /// nvrtcGetProgramLog.
  NvrtcResult (*getProgramLog)(NvrtcProgram program, char* log) = nullptr;
  /// nvrtcGetPTXSize (the size counts the terminating NUL).
  NvrtcResult (*getPtxSize)(NvrtcProgram program, size_t* size) = nullptr;
  /// nvrtcGetPTX.
  NvrtcResult (*getPtx)(NvrtcProgram program, char* ptx) = nullptr;
  /// nvrtcGetCUBINSize (0 when compiled for a virtual arch).
  NvrtcResult (*getCubinSize)(NvrtcProgram program, size_t* size) = nullptr;
  /// nvrtcGetCUBIN.
  NvrtcResult (*getCubin)(NvrtcProgram program, char* cubin) = nullptr;
  /// nvrtcVersion.
  NvrtcResult (*version)(int* major, int* minor) = nullptr;
  /// nvrtcGetErrorString.
  const char* (*getErrorString)(NvrtcResult result) = nullptr;
  /// nvrtcGetNumSupportedArchs.
  NvrtcResult (*getNumSupportedArchs)(int* count) = nullptr;
  /// nvrtcGetSupportedArchs.
  NvrtcResult (*getSupportedArchs)(int* archs) = nullptr;

  NvrtcLibrary(const NvrtcLibrary&) = delete;
  NvrtcLibrary& operator=(const NvrtcLibrary&) = delete;

private:
  NvrtcLibrary() = default;
  /// Loads and resolves `path`; null with `reason` set when it is not a usable NVRTC.
  static std::unique_ptr<NvrtcLibrary> tryLoad(llvm::StringRef path, std::string& reason);
  /// Records the path and queries the version and the supported archs.
  void initialize(llvm::StringRef path);
  /// Loads the libnvrtc-builtins of this NVRTC's own directory, where there is one.
  void preloadBuiltins() const;

  /// The dlopen handle: several paths reaching one library give the same handle.
  void* handle_ = nullptr;
  std::string path_;
  int versionMajor_ = 0;
  int versionMinor_ = 0;
  std::vector<int> supportedArchs_;
};

} // namespace widefuse
