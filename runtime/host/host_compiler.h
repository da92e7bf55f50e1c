#pragma once
/// The host backend's compiler: a generated kernel's source, with the host prelude in front, built
/// by the host C++ compiler into a shared object, cached on disk like cubins and loaded with
/// dlopen.

#include "runtime/kernel_store.h"

#include <llvm/ADT/StringRef.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace widefuse {

class HostPrecompiledPrelude;

/// What the host compiler builds a kernel's source for.
enum class HostBuild {
  /// The host backend's build: the host prelude in front, optimized for this CPU; entry
  /// `<name>_host_fast_block`.
  Native,
  /// The device emulator's build (runtime/host/device_emulator.h): the emulation prelude in front,
  /// the device
  /// code itself compiled with every memory access instrumented and line tables; the source
  /// ends with its own entry, `<name>_emulated_entry`.
  Emulated,
};

/// A generated kernel compiled for the CPU: natively, its `<name>_host_fast_block` entry (one
/// loop per member run); for the device emulator, its device code (device_emulator.h).
class HostKernel {
public:
  using FastBlockFunction = void (*)(const void* parameters, unsigned block, unsigned grid);
  HostKernel(std::string name, void* library, FastBlockFunction fast, std::string image = {})
      : name_(std::move(name)), library_(library), fast_(fast), image_(std::move(image)) {}
  HostKernel(const HostKernel&) = delete;
  HostKernel& operator=(const HostKernel&) = delete;

  /// Runs block `block` of a `grid`-block launch on the calling thread as one loop per member
  /// run; any grid size is valid (blocks take contiguous shares of the chunks). Only for
  /// native builds.
  void runBlockFast(const void* parameters, unsigned block, unsigned grid) const {
    fast_(parameters, block, grid);
  }
  /// Whether the kernel has the fast path's entry.
  bool hasFastEntry() const { return fast_ != nullptr; }
  const std::string& name() const { return name_; }
  /// Another symbol of the kernel's shared object (its `<name>_launch_abi`, say); null when
  /// there is none.
  void* symbol(llvm::StringRef name) const;
  /// The shared object's bytes, kept for emulated builds (their reports look lines up in it);
  /// empty for native builds.
  llvm::StringRef image() const { return image_; }
  /// Where the shared object is mapped (the address its file offset 0 is loaded at).
  const void* loadAddress() const;

private:
  std::string name_;
  void* library_; // kept loaded for the process's lifetime: kernels may run until exit
  FastBlockFunction fast_;
  std::string image_;
};

/// Compiles and loads host kernels; thread-safe. Records live in `<cache dir>/host/` keyed by
/// the source, the compiler's identity and its flags, in the cubin cache's self-checking record
/// format; one that is damaged, of another key or does not load is rebuilt (one warning each).
/// Builds happen in files of their own under $TMPDIR, so a cache directory that
/// cannot be written (or stops accepting writes) only costs the disk cache, with one warning
/// per process. One thread builds a given kernel at a time; the others wait for it.
class HostKernelCache {
public:
  /// Uses the base directory and disk setting of `options` (records in its `host/`).
  explicit HostKernelCache(KernelCacheOptions options = {});
  ~HostKernelCache();

  /// The loaded kernel for `source` built for `build` (see HostBuild for its entry). Throws
  /// Error with the compiler's output and the path of the source when compilation fails, and
  /// naming the fix when there is no compiler or no writable temporary directory.
  std::shared_ptr<const HostKernel> compile(llvm::StringRef source, llvm::StringRef kernelName,
                                            HostBuild build = HostBuild::Native);

  /// Starts building the precompiled prelude in the background when this cache's directory
  /// lacks it (a caller about to record a fusion for the host backend), so that the first
  /// kernel finds it ready; returns at once.
  void preparePrelude();

  /// Whether records are read from and written to `<cache dir>/host/` (false without a usable
  /// directory, and after a write there failed).
  bool diskEnabled() const;

  /// The host compiler: $WIDEFUSE_HOST_CXX, else `c++`.
  static std::string compilerCommand();
  /// The process-wide cache with default options.
  static HostKernelCache& global();

private:
  std::shared_ptr<const HostKernel> loadOrBuild(const std::string& keyMaterial,
                                                llvm::StringRef source, llvm::StringRef kernelName,
                                                HostBuild build);
  std::shared_ptr<const HostKernel> loadRecord(const std::string& keyMaterial,
                                               llvm::StringRef kernelName, HostBuild build);
  std::shared_ptr<const HostKernel> buildAndStore(const std::string& keyMaterial,
                                                  llvm::StringRef source,
                                                  llvm::StringRef kernelName, HostBuild build);
  std::string buildSharedObject(llvm::StringRef source, llvm::StringRef kernelName,
                                HostBuild build);
  /// One run of the host compiler on a translation unit, written to a scratch file.
  struct CompileAttempt {
    int status = -1;        // the compiler's exit status (-1: it did not exit normally)
    std::string output;     // what it printed
    std::string sourcePath; // the scratch source, left for the caller (its path goes in errors)
    std::string object;     // the shared object when status is 0
  };
  /// `build` Emulated: compiled, then linked without the flags (the instrumentation must not
  /// link a sanitizer runtime: the emulation prelude defines its callbacks).
  CompileAttempt compileUnit(llvm::StringRef unit, llvm::StringRef kernelName,
                             llvm::StringRef flags, HostBuild build = HostBuild::Native);
  std::shared_ptr<const HostKernel> loadImage(llvm::StringRef image, llvm::StringRef kernelName,
                                              HostBuild build, const std::string& stem,
                                              std::string& problem);
  void storeRecord(const std::string& keyMaterial, llvm::StringRef kernelName,
                   llvm::StringRef image);

  /// Records in `<cache dir>/host/`, `<hash>.wfhost`.
  KernelStore store_;
  mutable std::mutex mutex_;
  std::condition_variable built_;
  std::unordered_set<std::string> building_; // keys some thread is building
  std::unordered_map<std::string, std::shared_ptr<const HostKernel>> kernels_;
  /// The host and device preludes precompiled in the store's directory (null without a usable disk
  /// cache).
  std::unique_ptr<HostPrecompiledPrelude> prelude_;
};

} // namespace widefuse
