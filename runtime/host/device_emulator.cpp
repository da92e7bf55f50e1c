#include "runtime/host/device_emulator.h"

#include "ir/error.h"
#include "runtime/host/emulated_block.h"
#include "runtime/host/host_thread_pool.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <exception>
#include <map>

namespace widefuse {

// ---- the kernel ----

std::shared_ptr<const EmulatedKernel> EmulatedKernel::compile(llvm::StringRef source,
                                                              llvm::StringRef name,
                                                              llvm::StringRef parameterType) {
  // Lines of the kernel's text keep their numbers (`<name>.cu:<line>` in reports, as in a
  // dumped .cu file); the entry the emulator calls comes after it.
  std::string unit =
      fmt::format("#line 1 \"{0}.cu\"\n{1}\n#line 1 \"{0}.emulator-entry\"\n"
                  "WF_EMU_EXPORT void {0}_emulated_entry(const void* p) "
                  "{{\n  {0}(*static_cast<const {2}*>(p));\n}}\n"
                  "WF_EMU_EXPORT const unsigned {0}_parameter_bytes = sizeof({2});\n",
                  name.str(), source.str(), parameterType.str());
  auto built = HostKernelCache::global().compile(unit, name, HostBuild::Emulated);
  // One kernel object per build, so that its hooks are installed once.
  static std::mutex mutex;
  static auto* kernels = new std::unordered_map<const HostKernel*, std::weak_ptr<EmulatedKernel>>;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::shared_ptr<EmulatedKernel> known = (*kernels)[built.get()].lock())
    return known;
  auto kernel = std::make_shared<EmulatedKernel>(std::move(built));
  kernel->source_ = source.str();
  (*kernels)[kernel->built_.get()] = kernel;
  return kernel;
}

namespace {

/// The module loaded at `base`: its mapped segments and this thread's TLS block.
struct ModuleScan {
  const void* base = nullptr;
  std::vector<std::pair<uintptr_t, uintptr_t>> segments;
  size_t tlsModule = 0; // its TLS module id (0: none)
  size_t tlsBytes = 0;
};

int scanModule(dl_phdr_info* info, size_t, void* data) {
  auto& scan = *static_cast<ModuleScan*>(data);
  const ElfW(Phdr)* first = info->dlpi_phdr;
  bool match = false;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (first[i].p_type == PT_LOAD && first[i].p_offset == 0 &&
        reinterpret_cast<const void*>(info->dlpi_addr + first[i].p_vaddr) == scan.base)
      match = true;
  if (!match)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = first[i];
    if (header.p_type == PT_LOAD)
      scan.segments.push_back(
          {info->dlpi_addr + header.p_vaddr, info->dlpi_addr + header.p_vaddr + header.p_memsz});
    if (header.p_type == PT_TLS) {
      scan.tlsModule = info->dlpi_tls_modid;
      scan.tlsBytes = header.p_memsz;
    }
  }
  return 1;
}

ModuleScan scan(const HostKernel& built) {
  ModuleScan result;
  result.base = built.loadAddress();
  dl_iterate_phdr(scanModule, &result);
  return result;
}

} // namespace

EmulatedKernel::EmulatedKernel(std::shared_ptr<const HostKernel> built) : built_(std::move(built)) {
  entry_ = reinterpret_cast<void (*)(const void*)>(built_->symbol(name() + "_emulated_entry"));
  auto install = reinterpret_cast<void (*)(const wf_emu_hooks*)>(built_->symbol("wf_emu_install"));
  WF_ASSERT(entry_ && install, "emulated kernel '{}' lacks its entry points", name());
  install(&emulationHooks());
  parameterBytes_ = *static_cast<const unsigned*>(built_->symbol(name() + "_parameter_bytes"));
  ModuleScan found = scan(*built_);
  segments_ = found.segments;
  tlsModule_ = found.tlsModule;
  tlsBytes_ = found.tlsBytes;
  lines_ = std::make_unique<KernelLines>(name(), built_->image(), built_->loadAddress());
}

EmulatedKernel::~EmulatedKernel() = default;

/// The dynamic linker's lookup of a module's thread-local block (x86-64 and AArch64 ABI).
struct TlsIndex {
  unsigned long module, offset;
};
extern "C" void* __tls_get_addr(TlsIndex*);

llvm::MutableArrayRef<std::byte> EmulatedKernel::sharedStorage() const {
  // The calling thread's block, allocated on first use: what the kernel's own accesses to its
  // thread_local statics reach. (dl_iterate_phdr's dlpi_tls_data may be null while another
  // thread loads a module.)
  TlsIndex index{tlsModule_, 0};
  WF_ASSERT(tlsModule_ != 0, "emulated kernel '{}' has no thread-local block", name());
  return {static_cast<std::byte*>(__tls_get_addr(&index)), tlsBytes_};
}

bool EmulatedKernel::inImage(const void* address) const {
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  return llvm::any_of(segments_,
                      [&](const auto& range) { return at >= range.first && at < range.second; });
}

void EmulatedKernel::addCovered(const std::unordered_set<void*>& blocks) const {
  std::lock_guard<std::mutex> lock(coveredMutex_);
  covered_.insert(blocks.begin(), blocks.end());
}

std::vector<CoveredLine> EmulatedKernel::coverage() const {
  KernelLines::BlockMap map = lines_->blockMap();
  std::map<int, bool> executed;
  std::lock_guard<std::mutex> lock(coveredMutex_);
  for (const auto& [block, line] : map.lines)
    executed[line] = executed[line] || covered_.count(map.blocks[block].second) > 0;
  std::vector<CoveredLine> lines;
  for (const auto& [line, ran] : executed)
    lines.push_back({line, ran});
  return lines;
}

namespace {

std::mutex coverageMutex;
std::atomic<bool> coverageOn{false};
std::unordered_map<const EmulatedKernel*, std::shared_ptr<const EmulatedKernel>> coverageKernels;

} // namespace

void EmulationCoverage::start() {
  std::lock_guard<std::mutex> lock(coverageMutex);
  coverageKernels.clear();
  setCoverageHook(true);
  coverageOn = true;
}

std::vector<std::shared_ptr<const EmulatedKernel>> EmulationCoverage::stop() {
  std::lock_guard<std::mutex> lock(coverageMutex);
  coverageOn = false;
  setCoverageHook(false);
  std::vector<std::shared_ptr<const EmulatedKernel>> kernels;
  for (auto& [raw, kernel] : coverageKernels)
    kernels.push_back(kernel);
  coverageKernels.clear();
  return kernels;
}

bool EmulationCoverage::recording() {
  return coverageOn.load(std::memory_order_relaxed);
}

void EmulationCoverage::launched(const EmulatedKernel& kernel) {
  std::lock_guard<std::mutex> lock(coverageMutex);
  if (coverageOn)
    coverageKernels.try_emplace(&kernel, kernel.shared_from_this());
}

// ---- the launch ----

EmulatedLaunch::EmulatedLaunch(const EmulatedKernel& kernel, llvm::ArrayRef<std::byte> parameters,
                               unsigned grid, unsigned threads,
                               llvm::ArrayRef<EmulationBuffer> buffers,
                               const EmulationOptions& options)
    : kernel_(kernel), parameters_(parameters.begin(), parameters.end()), grid_(grid),
      threads_(threads), options_(options) {
  for (const EmulationBuffer& buffer : buffers)
    if (buffer.bytes > 0)
      buffers_.push_back(buffer);
  llvm::sort(buffers_,
             [](const EmulationBuffer& a, const EmulationBuffer& b) { return a.data < b.data; });
}

const EmulationBuffer* EmulatedLaunch::bufferOf(const void* address, size_t bytes) const {
  auto after = std::upper_bound(
      buffers_.begin(), buffers_.end(), address,
      [](const void* at, const EmulationBuffer& buffer) { return at < buffer.data; });
  // Buffers may overlap (views of one storage): any that holds the whole access will do.
  for (auto it = after; it != buffers_.begin();) {
    --it;
    auto begin = static_cast<const std::byte*>(it->data);
    auto at = static_cast<const std::byte*>(address);
    if (at + bytes <= begin + it->bytes)
      return &*it;
    if (after - it > 8)
      break;
  }
  return nullptr;
}

std::pair<uintptr_t, uintptr_t> EmulatedLaunch::keepOriginal(const void* address, size_t bytes) {
  const EmulationBuffer* buffer = originals_ ? bufferOf(address, bytes) : nullptr;
  if (!buffer)
    return {0, 0};
  originals_->save(*buffer);
  auto begin = reinterpret_cast<uintptr_t>(buffer->data);
  return {begin, begin + buffer->bytes};
}

std::string EmulatedLaunch::whereIs(const void* address, size_t bytes) const {
  auto at = reinterpret_cast<uintptr_t>(address);
  const EmulationBuffer* nearest = nullptr;
  uintptr_t distance = ~uintptr_t(0);
  for (const EmulationBuffer& buffer : buffers_) {
    uintptr_t begin = reinterpret_cast<uintptr_t>(buffer.data), end = begin + buffer.bytes;
    uintptr_t gap = at < begin ? begin - at : at + bytes > end ? at + bytes - end : 0;
    if (gap < distance) {
      distance = gap;
      nearest = &buffer;
    }
  }
  Dl_info info{};
  if (dladdr(address, &info) && info.dli_sname)
    return fmt::format("in {} of {}, not a buffer of the launch", info.dli_sname,
                       info.dli_fname ? info.dli_fname : "the process");
  if (!nearest)
    return "the launch was given no buffer";
  uintptr_t begin = reinterpret_cast<uintptr_t>(nearest->data), end = begin + nearest->bytes;
  if (at >= end)
    return fmt::format("{} bytes past the end of {} ({} bytes at {})", at - end, nearest->name,
                       nearest->bytes, nearest->data);
  if (at >= begin)
    return fmt::format("runs over the end of {} ({} bytes at {})", nearest->name, nearest->bytes,
                       nearest->data);
  return fmt::format("{} bytes before {} ({} bytes at {})", begin - at, nearest->name,
                     nearest->bytes, nearest->data);
}

void EmulatedLaunch::record(EmulationReport report, bool fatal) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fatal)
    stopped_ = true;
  // One report per fault, block and place: a loop's every iteration says the same.
  for (const EmulationReport& known : reports_)
    if (known.fault == report.fault && known.sites.size() == report.sites.size() &&
        std::equal(known.sites.begin(), known.sites.end(), report.sites.begin(),
                   [](const EmulationSite& a, const EmulationSite& b) { return a.pc == b.pc; }))
      return;
  if (reports_.size() < 16)
    reports_.push_back(std::move(report));
}

void TicketLedger::note(const unsigned* address, const EmulatedKernel& kernel, unsigned block,
                        EmulationSite site) {
  std::lock_guard<std::mutex> lock(mutex_);
  atomics_[address] = {&kernel, block, site};
}

void TicketLedger::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<EmulationReport> reports;
  std::vector<const EmulatedKernel*> kernels;
  for (const auto& [address, last] : atomics_) {
    unsigned value = __atomic_load_n(address, __ATOMIC_SEQ_CST);
    if (value == 0)
      continue;
    EmulationReport report;
    report.fault = EmulationFault::TicketNotReset;
    report.kernel = last.kernel->name();
    report.block = last.block;
    report.sites = {last.site};
    report.detail = fmt::format("the ticket at {} holds {} after the step: the next step finds "
                                "its count wrong (the last atomicAdd on it is shown)",
                                static_cast<const void*>(address), value);
    reports.push_back(std::move(report));
    kernels.push_back(last.kernel);
  }
  atomics_.clear();
  failWithReports("", reports, [&](const EmulationReport& report) -> const EmulatedKernel& {
    return *kernels[&report - reports.data()];
  });
}

void failWithReports(llvm::StringRef kernelName, llvm::MutableArrayRef<EmulationReport> reports,
                     llvm::function_ref<const EmulatedKernel&(const EmulationReport&)> kernelOf) {
  if (reports.empty())
    return;
  std::string text =
      fmt::format("device emulator: {} fault{}{}:", reports.size(), reports.size() == 1 ? "" : "s",
                  kernelName.empty() ? "" : fmt::format(" in kernel '{}'", kernelName.str()));
  for (EmulationReport& report : reports)
    text += "\n  " + describe(report, kernelOf(report));
  fail("{}", text);
}

void EmulatedLaunch::run() {
  if (EmulationCoverage::recording())
    EmulationCoverage::launched(kernel_);
  std::vector<unsigned> blocks(grid_);
  for (unsigned b = 0; b < grid_; ++b)
    blocks[b] = b;
  if (options_.order.kind == BlockOrder::Kind::Reverse)
    std::reverse(blocks.begin(), blocks.end());
  if (options_.order.kind == BlockOrder::Kind::Shuffle) {
    uint64_t random = options_.order.seed * 0x9e3779b97f4a7c15ull;
    for (size_t i = blocks.size(); i > 1; --i) {
      random = random * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(blocks[i - 1], blocks[(random >> 33) % i]);
    }
  }
  std::exception_ptr failure;
  std::mutex failureMutex;
  HostThreadPool::global().run(grid_, std::max(1u, options_.workers), [&](unsigned task) {
    if (stopped())
      return;
    try {
      EmulatedBlock(*this, blocks[task]).run();
    } catch (...) {
      std::lock_guard<std::mutex> lock(failureMutex);
      failure = std::current_exception();
      stopped_ = true;
    }
  });
  if (failure)
    std::rethrow_exception(failure);
  failWithReports(kernel_.name(), reports_,
                  [&](const EmulationReport&) -> const EmulatedKernel& { return kernel_; });
}

// ---- interleavings ----

BlockOrder interleaving(const BlockOrder& first, unsigned run) {
  if (run == 0)
    return first;
  return {BlockOrder::Kind::Shuffle, first.seed * 0x9e3779b97f4a7c15ull + run};
}

void emulateLaunch(const EmulatedKernel& kernel, llvm::ArrayRef<std::byte> parameters,
                   unsigned grid, unsigned threads, llvm::ArrayRef<EmulationBuffer> buffers,
                   const EmulationOptions& options) {
  if (options.interleavings <= 1) {
    EmulatedLaunch(kernel, parameters, grid, threads, buffers, options).run();
    return;
  }
  // A result that depends on the interleaving is a race the shared-memory checks cannot see
  // (through global memory, or between blocks): every run starts from the same bytes.
  BufferOriginals originals;
  BufferOriginals::Contents firstResult;
  for (unsigned run = 0; run < options.interleavings; ++run) {
    EmulationOptions each = options;
    each.order = interleaving(options.order, run);
    if (run > 0)
      originals.restore();
    EmulatedLaunch launch(kernel, parameters, grid, threads, buffers, each);
    launch.keepOriginals(&originals);
    launch.run();
    if (run == 0) {
      firstResult = originals.current();
      continue;
    }
    std::string difference = originals.difference(firstResult, formatBlockOrder(options.order),
                                                  formatBlockOrder(each.order));
    if (!difference.empty())
      throw Error(fmt::format("kernel {}: the result depends on the interleaving: {}",
                              kernel.name(), difference));
  }
}

} // namespace widefuse
