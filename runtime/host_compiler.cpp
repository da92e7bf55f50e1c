#include "runtime/host_compiler.h"

#include "ir/error.h"
#include "runtime/host_shim.h"
#include "runtime/kernel_cache_record.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace widefuse {
namespace {

namespace fs = std::filesystem;

/// Flags that keep the host's arithmetic that of the reference evaluator (no contraction into
/// fma, no fast-math reassociation; strict ISO C++, which does not contract either) while
/// letting the fast path's loops vectorize for this CPU: errno is never read, so sqrt can be
/// one instruction. Not -fno-trapping-math: with it GCC folds (float)(int)x into trunc(x),
/// which keeps the sign of a negative zero the reference does not (found by the fuzzer).
constexpr const char* kFlags = "-std=c++17 -O3 -march=native -fPIC -shared -ffp-contract=off "
                               "-fno-fast-math -fno-math-errno -w";

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs a shell command; true on exit status 0.
bool runCommand(const std::string& command) {
  int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// `<compiler> --version`, part of the cache key so that a new compiler rebuilds.
const std::string& compilerIdentity() {
  static const std::string identity = [] {
    fs::path log = fs::temp_directory_path() / fmt::format("widefuse-cxx-{}.txt", getpid());
    runCommand(
        fmt::format("{} --version >'{}' 2>&1", HostKernelCache::compilerCommand(), log.string()));
    std::string text = readFile(log);
    std::error_code ignored;
    fs::remove(log, ignored);
    return text;
  }();
  return identity;
}

/// The CPU -march=native compiles for (vendor, model and feature flags of /proc/cpuinfo), part
/// of the cache key: a cache directory shared with another machine rebuilds for this one.
const std::string& hostCpuIdentity() {
  static const std::string identity = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, text;
    while (std::getline(cpuinfo, line)) {
      llvm::StringRef field = llvm::StringRef(line).split(':').first.trim();
      if (field == "vendor_id" || field == "model name" || field == "flags" ||
          field == "Features" || field == "CPU part")
        text += line + "\n";
      if (line.empty() && !text.empty())
        break; // the first processor describes them all
    }
    return text;
  }();
  return identity;
}

std::shared_ptr<const HostKernel> loadKernel(const std::string& path, llvm::StringRef name,
                                             std::string& problem) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    problem = dlerror();
    return nullptr;
  }
  std::string symbol = name.str() + "_host_block";
  std::string fastSymbol = name.str() + "_host_fast_block";
  void* function = dlsym(library, symbol.c_str());
  void* fast =
      dlsym(library, fastSymbol.c_str()); // generated kernels have it; test kernels may not
  if (!function) {
    problem = fmt::format("no symbol {}", symbol);
    dlclose(library);
    return nullptr;
  }
  return std::make_shared<HostKernel>(name.str(), library,
                                      reinterpret_cast<HostKernel::BlockFunction>(function),
                                      reinterpret_cast<HostKernel::FastBlockFunction>(fast));
}

} // namespace

void* HostKernel::symbol(llvm::StringRef name) const {
  return dlsym(library_, name.str().c_str());
}

std::string HostKernelCache::compilerCommand() {
  const char* compiler = std::getenv("WIDEFUSE_HOST_CXX");
  return compiler && *compiler ? compiler : "c++";
}

HostKernelCache::HostKernelCache(KernelCacheOptions options) {
  std::optional<std::string> base =
      options.directory ? options.directory : KernelCache::defaultDirectory();
  if (options.useDisk && base) {
    fs::path directory = fs::path(*base) / "host";
    std::error_code error;
    fs::create_directories(directory, error);
    if (!error && access(directory.c_str(), W_OK) == 0) {
      directory_ = directory.string();
      useDisk_ = true;
    }
  }
  if (!useDisk_) {
    // Shared objects must live in a file to be loaded: a private scratch directory.
    directory_ = (fs::temp_directory_path() / fmt::format("widefuse-host-{}", getpid())).string();
    std::error_code ignored;
    fs::create_directories(directory_, ignored);
  }
}

HostKernelCache& HostKernelCache::global() {
  static HostKernelCache* cache = new HostKernelCache(); // never destroyed: see HostKernel
  return *cache;
}

std::string HostKernelCache::buildSharedObject(llvm::StringRef source, llvm::StringRef kernelName,
                                               const std::string& keyMaterial) {
  std::string stem = cacheRecordFileName(keyMaterial);
  stem = stem.substr(0, stem.find('.'));
  fs::path object = fs::path(directory_) / (stem + ".so");
  fs::path sourcePath =
      fs::path(directory_) / fmt::format("{}-{}.{}.cpp", kernelName.str(), stem, getpid());
  fs::path temporary = fs::path(directory_) / fmt::format("{}.{}.tmp.so", stem, getpid());
  fs::path log = fs::path(directory_) / fmt::format("{}.{}.log", stem, getpid());
  {
    std::ofstream file(sourcePath, std::ios::binary);
    file << hostShim().str() << "\n" << source.str();
    if (!file)
      fail("host backend: cannot write '{}'", sourcePath.string());
  }
  std::string command = fmt::format("{} {} -o '{}' '{}' >'{}' 2>&1", compilerCommand(), kFlags,
                                    temporary.string(), sourcePath.string(), log.string());
  bool built = runCommand(command);
  std::string output = readFile(log);
  std::error_code ignored;
  fs::remove(log, ignored);
  if (!built) {
    fs::remove(temporary, ignored);
    fail("host backend: '{}' failed to compile kernel '{}':\n{}\nsource: {}", compilerCommand(),
         kernelName.str(), output, sourcePath.string());
  }
  fs::remove(sourcePath, ignored);
  // Atomic replacement: a concurrent process sees the old file or the new one, never half.
  fs::rename(temporary, object);
  return object.string();
}

std::shared_ptr<const HostKernel> HostKernelCache::compile(llvm::StringRef source,
                                                           llvm::StringRef kernelName) {
  std::string keyMaterial =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", compilerIdentity(), hostCpuIdentity(), kFlags,
                  hostShim().str(), kernelName.str(), source.str());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = kernels_.find(keyMaterial);
    if (found != kernels_.end())
      return found->second;
  }
  std::string stem = cacheRecordFileName(keyMaterial);
  fs::path object = fs::path(directory_) / (stem.substr(0, stem.find('.')) + ".so");
  std::string problem;
  std::shared_ptr<const HostKernel> kernel;
  if (useDisk_ && fs::exists(object))
    kernel = loadKernel(object.string(), kernelName, problem);
  if (!kernel) {
    if (!problem.empty())
      fmt::print(stderr, "widefuse: warning: host kernel {} does not load ({}); rebuilding\n",
                 object.string(), problem);
    std::string built = buildSharedObject(source, kernelName, keyMaterial);
    kernel = loadKernel(built, kernelName, problem);
    if (!kernel)
      fail("host backend: the shared object built for kernel '{}' does not load: {}",
           kernelName.str(), problem);
    if (!useDisk_) {
      std::error_code ignored;
      fs::remove(built, ignored); // loaded: the mapping outlives the file
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.try_emplace(keyMaterial, kernel).first->second;
}

} // namespace widefuse
