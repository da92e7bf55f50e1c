#include "runtime/cuda/nvrtc_library.h"

#include "runtime/cuda/cuda_driver.h"
#include "runtime/shared_library.h"

#include "ir/error.h"

#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringSet.h>
#include <llvm/Support/Path.h>

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace widefuse {
namespace {

constexpr const char* kEnvironmentVariable = "WIDEFUSE_NVRTC_LIBRARY";

// What runs without NVRTC, for the messages of a missing one.
constexpr const char* kHostHint = "the host backend (backend=host, --backend host) needs no NVRTC";

// Where NVRTC is looked for unless $WIDEFUSE_NVRTC_LIBRARY is set. choose() takes the newest
// that suits the driver wherever it is, so the order only decides between equal versions. The
// sonames first (the dynamic loader's search path and ld.so cache find an installed toolkit),
// the toolkit's default location for installs the cache lacks.
constexpr const char* kDefaultPaths[] = {
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so",
    "/usr/local/cuda/lib64/libnvrtc.so",
};

// NVRTC in an `nvidia` package directory (site-packages/nvidia): the CUDA 13 wheel
// (nvidia-cuda-nvrtc 13.x) puts every library of the toolkit in cu13/lib, the CUDA 12 one
// (nvidia-cuda-nvrtc-cu12, which torch's CUDA 12 wheels depend on) in cuda_nvrtc/lib.
constexpr const char* kPackagePaths[] = {
    "cu13/lib/libnvrtc.so.13",
    "cuda_nvrtc/lib/libnvrtc.so.12",
};

// The file names of NVRTC begin so; its builtins ("libnvrtc-builtins.so") do not.
constexpr llvm::StringLiteral kFileNamePrefix = "libnvrtc.so";

// The `nvidia` package directories the Python package found (addPackageDirectories).
struct PackageDirectories {
  std::mutex mutex;
  std::vector<std::string> directories;
};

PackageDirectories& packageDirectories() {
  // Never destroyed: a choice may still be made by a thread running at exit.
  static auto* packages = new PackageDirectories();
  return *packages;
}

// Every NVRTC the process has loaded already (torch's, a CUDA Python library's), by the path
// the loader opened: such a library is known to load here.
std::vector<std::string> loadedNvrtcPaths() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        llvm::StringRef name = info->dlpi_name ? info->dlpi_name : "";
        if (llvm::sys::path::filename(name).startswith(kFileNamePrefix))
          static_cast<std::vector<std::string>*>(data)->push_back(name.str());
        return 0;
      },
      &paths);
  return paths;
}

// The driver's cuDriverGetVersion, or nullopt without a usable driver (a compile-only
// machine; the toolkit's stub libcuda answers every call with an error).
std::optional<int> processDriverVersion() {
  try {
    const CudaDriver& driver = CudaDriver::instance();
    int version = 0;
    if (driver.cuDriverGetVersion(&version) == kCudaSuccess && version > 0)
      return version;
  } catch (const Error&) {
  }
  return std::nullopt;
}

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

// The error of choose() when none of the paths is a usable NVRTC.
[[noreturn]] void failNotFound(llvm::ArrayRef<std::pair<std::string, std::string>> attempts,
                               std::optional<CudaVersion> driver, bool fromEnvironment) {
  std::string suits =
      driver ? fmt::format(" (the driver supports CUDA {}: an NVRTC {}.x or older suits it)",
                           driver->str(), driver->major)
             : std::string();
  if (fromEnvironment)
    fail("NVRTC not found (tried {} from {}): point {} at a working libnvrtc.so or unset it{}; "
         "{}",
         joinAttempts(attempts), kEnvironmentVariable, kEnvironmentVariable, suits, kHostHint);
  fail("NVRTC not found (tried {}): install the CUDA Toolkit's NVRTC or set {} to the path of "
       "libnvrtc.so{}; {}",
       joinAttempts(attempts), kEnvironmentVariable, suits, kHostHint);
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
  std::vector<std::string> paths(std::begin(kDefaultPaths), std::end(kDefaultPaths));
  llvm::append_range(paths, loadedNvrtcPaths());
  {
    PackageDirectories& packages = packageDirectories();
    std::lock_guard<std::mutex> lock(packages.mutex);
    for (const std::string& directory : packages.directories)
      for (const char* file : kPackagePaths)
        paths.push_back(fmt::format("{}/{}", directory, file));
  }
  llvm::StringSet<> seen;
  llvm::erase_if(paths, [&](const std::string& path) { return !seen.insert(path).second; });
  return paths;
}

void NvrtcLibrary::addPackageDirectories(llvm::ArrayRef<std::string> directories) {
  PackageDirectories& packages = packageDirectories();
  std::lock_guard<std::mutex> lock(packages.mutex);
  for (const std::string& directory : directories)
    if (!directory.empty() && !llvm::is_contained(packages.directories, directory))
      packages.directories.push_back(directory);
}

const NvrtcLibrary& NvrtcLibrary::instance() {
  // A magic static: initialised once under the compiler's lock, and retried on the next call
  // when the initialiser throws. Never destroyed, so threads still compiling at exit are safe.
  static const NvrtcLibrary* library = [] {
    const char* explicitPath = std::getenv(kEnvironmentVariable);
    return choose(candidatePaths(), processDriverVersion(), explicitPath && *explicitPath)
        .release();
  }();
  return *library;
}

std::optional<CudaVersion> NvrtcLibrary::instanceVersion() noexcept {
  try {
    return instance().cudaVersion();
  } catch (...) {
    return std::nullopt;
  }
}

std::unique_ptr<NvrtcLibrary> NvrtcLibrary::choose(llvm::ArrayRef<std::string> paths,
                                                   std::optional<int> driverVersion,
                                                   bool fromEnvironment) {
  std::optional<CudaVersion> driver;
  if (driverVersion)
    driver = CudaVersion::fromDriver(*driverVersion);
  std::vector<std::unique_ptr<NvrtcLibrary>> loaded;
  llvm::SmallVector<std::pair<std::string, std::string>, 4> attempts;
  for (const std::string& path : paths) {
    std::string reason;
    std::unique_ptr<NvrtcLibrary> library = tryLoad(path, reason);
    if (!library) {
      attempts.emplace_back(path, reason);
      continue;
    }
    // A soname, its symlinks and the path of a loaded library often reach one file: the first
    // path stands for it, and the extra reference goes.
    if (llvm::any_of(loaded, [&](const auto& other) { return other->handle_ == library->handle_; }))
      dlclose(library->handle_);
    else
      loaded.push_back(std::move(library));
  }
  if (loaded.empty())
    failNotFound(attempts, driver, fromEnvironment);
  llvm::SmallVector<CudaVersion, 4> versions;
  for (const auto& library : loaded)
    versions.push_back(library->cudaVersion());
  size_t chosen = chooseNvrtcVersion(versions, driver);
  // The others have compiled nothing, so unloading them is safe and returns their memory.
  for (size_t i = 0; i < loaded.size(); ++i)
    if (i != chosen)
      dlclose(loaded[i]->handle_);
  loaded[chosen]->preloadBuiltins();
  return std::move(loaded[chosen]);
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
  l.handle_ = handle;
  try {
    l.initialize(path);
  } catch (const Error& error) {
    // One broken candidate must not hide the others from choose().
    reason = error.what();
    return nullptr;
  }
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

void NvrtcLibrary::preloadBuiltins() const {
  // NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name while it compiles, through the
  // loader's search path, which lacks NVRTC's own directory when the library has no RUNPATH
  // (the CUDA 13 wheel's has none). A loaded library of that name answers the lookup, so the
  // one beside NVRTC is loaded now; where there is none, NVRTC searches as it always does.
  link_map* map = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name)
    return;
  llvm::StringRef directory = llvm::sys::path::parent_path(map->l_name);
  if (directory.empty())
    return;
  std::string builtins = fmt::format("{}/libnvrtc-builtins.so.{}", directory, versionString());
  dlopen(builtins.c_str(), RTLD_NOW | RTLD_LOCAL);
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
