#include "runtime/cuda/cubin_cache.h"

#include "runtime/cuda/nvrtc_library.h"
#include "runtime/kernel_cache_record.h"

#include <chrono>

namespace widefuse {

std::string kernelCacheKey(llvm::StringRef source, llvm::StringRef kernelName,
                           const CompileOptions& options, llvm::StringRef nvrtcVersion) {
  std::string registers = std::to_string(options.maxRegisters);
  return keyMaterial({"widefuse kernel cache key", nvrtcVersion, options.arch,
                      options.fmad ? "fmad" : "no fmad", registers, kernelName, source});
}

CubinCache::CubinCache(KernelCacheOptions options)
    : store_(options, "", ".wfkernel", {"kernel cache record", "recompiling"}) {}

CubinCache& CubinCache::global() {
  // Never destroyed: kernels handed out stay valid for threads still running at exit.
  static CubinCache* cache = new CubinCache();
  return *cache;
}

bool CubinCache::diskEnabled() const {
  return store_.enabled();
}

std::string CubinCache::recordPath(llvm::StringRef source, llvm::StringRef kernelName,
                                   const CompileOptions& options) const {
  return store_.path(
      kernelCacheKey(source, kernelName, options, NvrtcLibrary::instance().versionString()));
}

size_t CubinCache::memoryRecords() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size();
}

void CubinCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.clear();
}

CacheResult CubinCache::compile(llvm::StringRef source, llvm::StringRef kernelName,
                                const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::string key =
      kernelCacheKey(source, kernelName, options, NvrtcLibrary::instance().versionString());
  auto finish = [&](std::shared_ptr<const KernelImage> kernel, CacheOutcome outcome) {
    auto stop = std::chrono::steady_clock::now();
    return CacheResult{std::move(kernel), outcome,
                       std::chrono::duration<double, std::milli>(stop - start).count()};
  };
  // The first kernel to reach the map wins, so every caller of one key shares one object.
  auto publish = [&](std::shared_ptr<const KernelImage> kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    return kernels_.try_emplace(key, std::move(kernel)).first->second;
  };

  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = kernels_.find(key); found != kernels_.end())
      return finish(found->second, CacheOutcome::MemoryHit);
  }
  if (std::optional<KernelImage> loaded = store_.load(key))
    return finish(publish(std::make_shared<const KernelImage>(std::move(*loaded))),
                  CacheOutcome::DiskHit);
  auto compiled = std::make_shared<const KernelImage>(compileCuda(source, kernelName, options));
  store_.store(key, *compiled);
  return finish(publish(std::move(compiled)), CacheOutcome::Miss);
}

} // namespace widefuse
