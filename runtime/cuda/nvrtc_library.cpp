#include "runtime/cuda/nvrtc_library.h"

#include "runtime/shared_library.h"

#include "ir/error.h"

#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

namespace widefuse {
namespace {

constexpr const char* kEnvironmentVariable = "WIDEFUSE_NVRTC_LIBRARY";

// What runs without NVRTC, for the messages of a missing one.
constexpr const char* kHostHint = "the host backend (backend=host, --backend host) needs no NVRTC";

// The sonames first (the dynamic loader's search path and ld.so cache find an installed
// toolkit), newest first; the toolkit's default location last for installs the cache lacks.
constexpr const char* kDefaultPaths[] = {
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so",
    "/usr/local/cuda/lib64/libnvrtc.so",
};

std::string lastDlError() {
  const char* message = dlerror();
  return message ? message : "unknown error";
}

std::string joinAttempts(llvm::ArrayRef<std::pair<std::string, std::string>> attempts) {
  std::string text;
  for (const auto& [path, reason] : attempts) {
    if (!text.empty())
      text += "; ";
    text += fmt::format("{}: {}", path, reason);
  }
  return text;
}

} // namespace

std::unique_ptr<NvrtcLibrary> NvrtcLibrary::load(llvm::StringRef path) {
  std::string reason;
  std::unique_ptr<NvrtcLibrary> library = tryLoad(path, reason);
  if (!library)
    fail("NVRTC not found (tried {}: {}): install the CUDA Toolkit's NVRTC or set {} to the "
         "path of libnvrtc.so; {}",
         path, reason, kEnvironmentVariable, kHostHint);
  return library;
}

std::vector<std::string> NvrtcLibrary::candidatePaths() {
  const char* explicitPath = std::getenv(kEnvironmentVariable);
  if (explicitPath && *explicitPath)
    return {explicitPath};
  return {std::begin(kDefaultPaths), std::end(kDefaultPaths)};
}

const NvrtcLibrary& NvrtcLibrary::instance() {
  // A magic static: initialised once under the compiler's lock, and retried on the next call
  // when the initialiser throws. Never destroyed, so threads still compiling at exit are safe.
  static const NvrtcLibrary* library = [] {
    const char* explicitPath = std::getenv(kEnvironmentVariable);
    return loadFirst(candidatePaths(), explicitPath && *explicitPath).release();
  }();
  return *library;
}

std::unique_ptr<NvrtcLibrary> NvrtcLibrary::loadFirst(llvm::ArrayRef<std::string> paths,
                                                      bool fromEnvironment) {
  llvm::SmallVector<std::pair<std::string, std::string>, 4> attempts;
  for (const std::string& path : paths) {
    std::string reason;
    if (std::unique_ptr<NvrtcLibrary> loaded = tryLoad(path, reason))
      return loaded;
    attempts.emplace_back(path, reason);
  }
  if (fromEnvironment)
    fail("NVRTC not found (tried {} from {}): point {} at a working libnvrtc.so or unset it; {}",
         joinAttempts(attempts), kEnvironmentVariable, kEnvironmentVariable, kHostHint);
  fail("NVRTC not found (tried {}): install the CUDA Toolkit's NVRTC or set {} to the path of "
       "libnvrtc.so; {}",
       joinAttempts(attempts), kEnvironmentVariable, kHostHint);
}

std::unique_ptr<NvrtcLibrary> NvrtcLibrary::tryLoad(llvm::StringRef path, std::string& reason) {
  // RTLD_LOCAL keeps NVRTC's symbols out of the global namespace of the process.
  void* handle = dlopen(path.str().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    reason = lastDlError();
    return nullptr;
  }
  std::unique_ptr<NvrtcLibrary> library(new NvrtcLibrary());
  NvrtcLibrary& l = *library;
  auto symbols = [handle](const char* name) { return dlsym(handle, name); };
  bool ok = resolveSymbol(symbols, "nvrtcCreateProgram", l.createProgram, reason) &&
            resolveSymbol(symbols, "nvrtcCompileProgram", l.compileProgram, reason) &&
            resolveSymbol(symbols, "nvrtcDestroyProgram", l.destroyProgram, reason) &&
            resolveSymbol(symbols, "nvrtcGetProgramLogSize", l.getProgramLogSize, reason) &&
            resolveSymbol(symbols, "nvrtcGetProgramLog", l.getProgramLog, reason) &&
            resolveSymbol(symbols, "nvrtcGetPTXSize", l.getPtxSize, reason) &&
            resolveSymbol(symbols, "nvrtcGetPTX", l.getPtx, reason) &&
            resolveSymbol(symbols, "nvrtcGetCUBINSize", l.getCubinSize, reason) &&
            resolveSymbol(symbols, "nvrtcGetCUBIN", l.getCubin, reason) &&
            resolveSymbol(symbols, "nvrtcVersion", l.version, reason) &&
            resolveSymbol(symbols, "nvrtcGetErrorString", l.getErrorString, reason) &&
            resolveSymbol(symbols, "nvrtcGetNumSupportedArchs", l.getNumSupportedArchs, reason) &&
            resolveSymbol(symbols, "nvrtcGetSupportedArchs", l.getSupportedArchs, reason);
  if (!ok) {
    // Not NVRTC (or one too old for cubin output): leave it loaded rather than risk running
    // an arbitrary library's unload-time code.
    return nullptr;
  }
  l.initialize(path);
  return library;
}

void NvrtcLibrary::initialize(llvm::StringRef path) {
  path_ = path.str();
  check(version(&versionMajor_, &versionMinor_), "nvrtcVersion");
  int count = 0;
  check(getNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  supportedArchs_.assign(std::max(count, 0), 0);
  if (count > 0)
    check(getSupportedArchs(supportedArchs_.data()), "nvrtcGetSupportedArchs");
  llvm::sort(supportedArchs_);
}

std::string NvrtcLibrary::versionString() const {
  return fmt::format("{}.{}", versionMajor_, versionMinor_);
}

std::string NvrtcLibrary::errorString(NvrtcResult result) const {
  const char* text = getErrorString ? getErrorString(result) : nullptr;
  return text ? text : fmt::format("NVRTC error {}", result);
}

void NvrtcLibrary::check(NvrtcResult result, llvm::StringRef what) const {
  if (result != kNvrtcSuccess)
    fail("{} failed: {}", what, errorString(result));
}

} // namespace widefuse
