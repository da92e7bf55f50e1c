#include "runtime/host/emulated_block.h"

#include "runtime/host/device_emulator.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <utility>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#endif

// AddressSanitizer (a sanitizer build of widefuse) is told of every switch between stacks.
#ifdef __SANITIZE_ADDRESS__
#define WF_SWITCH_START(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define WF_SWITCH_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define WF_SWITCH_START(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define WF_SWITCH_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

namespace widefuse {

namespace ctx = boost::context;

namespace {

/// Room for a kernel's frames on the fiber: its parameter block (up to 32 KB, copied by the
/// entry), local arrays, and the hooks (larger under AddressSanitizer). Stacks are aligned to
/// their size, so the kernel's callbacks tell its own locals by their address alone.
constexpr size_t kStackBytes = WF_EMU_STACK_BYTES;
constexpr unsigned kWarpSize = 32;

thread_local EmulatedBlock* tCurrentBlock = nullptr;

} // namespace

/// Fiber stacks of one CPU thread, reused from block to block (a block needs one per thread).
class FiberStacks {
public:
  ~FiberStacks() {
    for (void* base : free_)
      std::free(base);
  }
  ctx::stack_context allocate() {
    // The free list holds each stack by its first byte (what the allocator returned).
    void* base = nullptr;
    if (!free_.empty()) {
      base = free_.back();
      free_.pop_back();
    } else {
      base = std::aligned_alloc(kStackBytes, kStackBytes);
    }
    last_.size = kStackBytes;
    last_.sp = static_cast<char*>(base) + kStackBytes;
    return last_;
  }
  /// The stack handed out last (the fiber just created runs on it).
  const ctx::stack_context& last() const { return last_; }
  void deallocate(ctx::stack_context& stack) {
    free_.push_back(static_cast<char*>(stack.sp) - stack.size);
  }
  static FiberStacks& local() {
    thread_local FiberStacks stacks;
    return stacks;
  }

private:
  std::vector<void*> free_;
  ctx::stack_context last_;
};

namespace {

/// The StackAllocator Boost.Context takes: this CPU thread's pool.
struct PooledStack {
  ctx::stack_context allocate() { return FiberStacks::local().allocate(); }
  void deallocate(ctx::stack_context& stack) { FiberStacks::local().deallocate(stack); }
};

} // namespace

/// One CUDA thread of the block.
struct EmulatedBlock::Lane {
  wf_emu_thread ids{};
  ctx::fiber fiber;
  Wait wait = Wait::Ready;
  void* pc = nullptr; // where it waits
  // Its stack, so that its own locals pass the checks at once.
  uintptr_t stackLow = 0, stackHigh = 0;
  // A pending warp collective.
  int kind = 0;
  unsigned mask = 0;
  uint64_t value = 0, result = 0;
  int operand = 0, width = 0;
};

/// Who last wrote and read a byte of shared memory, and in which barrier interval.
struct EmulatedBlock::SharedByte {
  uint32_t writeEpoch = 0, readEpoch = 0;
  unsigned writer = 0, reader = 0;
  bool readers = false; // more than one thread read it in readEpoch
  void* writePc = nullptr;
  void* readPc = nullptr;
};

EmulatedBlock* EmulatedBlock::current() {
  return tCurrentBlock;
}

EmulatedBlock::EmulatedBlock(EmulatedLaunch& launch, unsigned block)
    : launch_(launch), block_(block), lanes_(launch.threads()),
      random_(launch.options().order.seed * 0x9e3779b97f4a7c15ull + block + 1) {
  llvm::MutableArrayRef<std::byte> shared = launch.kernel().sharedStorage();
  shared_ = shared.data();
  sharedBytes_ = shared.size();
  shadow_.resize(sharedBytes_);
  for (unsigned t = 0; t < lanes_.size(); ++t) {
    Lane& lane = lanes_[t];
    lane.ids = {t, block, launch.threads(), launch.grid()};
    lane.fiber = ctx::fiber(std::allocator_arg, PooledStack(), [this, &lane](ctx::fiber&& from) {
      WF_SWITCH_FINISH(nullptr, &schedulerStack_, &schedulerStackSize_);
      scheduler_ = std::move(from);
      launch_.kernel().enter(launch_.parameters());
      lane.wait = Wait::Exited;
      WF_SWITCH_START(nullptr, schedulerStack_, schedulerStackSize_);
      return std::move(scheduler_);
    });
    const ctx::stack_context& stack = FiberStacks::local().last();
    lane.stackHigh = reinterpret_cast<uintptr_t>(stack.sp);
    lane.stackLow = lane.stackHigh - stack.size;
  }
}

EmulatedBlock::~EmulatedBlock() {
  if (stopped_)
    abandon();
  if (!coveredBlocks_.empty())
    launch_.kernel().addCovered(coveredBlocks_);
}

void EmulatedBlock::abandon() {
  // A suspended fiber's frames are the kernel's, compiled without the unwind Boost would use
  // to destroy it: the fibers and their stacks are left as they are (a stopped launch is an
  // error report; its memory is not reused).
  static std::mutex mutex;
  // Kept reachable (their stacks by their first byte), so that a leak checker sees memory
  // set aside, not lost.
  static auto* abandoned = new std::vector<ctx::fiber>;
  static auto* stacks = new std::vector<void*>;
  std::lock_guard<std::mutex> lock(mutex);
  for (Lane& lane : lanes_)
    if (lane.fiber) {
      abandoned->push_back(std::move(lane.fiber));
      stacks->push_back(reinterpret_cast<void*>(lane.stackLow));
    }
}

void EmulatedBlock::resume(Lane& lane) {
  running_ = &lane;
  tCurrentBlock = this;
  [[maybe_unused]] void* save = nullptr;
  WF_SWITCH_START(&save, reinterpret_cast<const void*>(lane.stackLow),
                  lane.stackHigh - lane.stackLow);
  lane.fiber = std::move(lane.fiber).resume();
  WF_SWITCH_FINISH(save, nullptr, nullptr);
  tCurrentBlock = nullptr;
  running_ = nullptr;
}

void EmulatedBlock::yield() {
  [[maybe_unused]] void* save = nullptr;
  WF_SWITCH_START(&save, schedulerStack_, schedulerStackSize_);
  scheduler_ = std::move(scheduler_).resume();
  WF_SWITCH_FINISH(save, nullptr, nullptr);
}

void EmulatedBlock::run() {
  std::vector<unsigned> order(lanes_.size());
  for (unsigned t = 0; t < order.size(); ++t)
    order[t] = t;
  const BlockOrder& kind = launch_.options().order;
  if (kind.kind == BlockOrder::Kind::Reverse)
    std::reverse(order.begin(), order.end());
  while (!stopped_) {
    if (kind.kind == BlockOrder::Kind::Shuffle)
      for (size_t i = order.size(); i > 1; --i) {
        random_ = random_ * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(order[i - 1], order[(random_ >> 33) % i]);
      }
    bool ran = false;
    for (unsigned t : order) {
      if (lanes_[t].wait != Wait::Ready)
        continue;
      resume(lanes_[t]);
      ran = true;
      if (stopped_ || launch_.stopped()) {
        stopped_ = true;
        return;
      }
    }
    if (!ran && !settle())
      return;
  }
}

bool EmulatedBlock::settle() {
  if (convergeActive())
    return true;
  std::vector<EmulationSite> waiting, exited, warp;
  for (const Lane& lane : lanes_) {
    if (lane.wait == Wait::Barrier)
      waiting.push_back({lane.ids.thread, lane.pc});
    else if (lane.wait == Wait::Exited)
      exited.push_back({lane.ids.thread, nullptr});
    else if (lane.wait == Wait::Warp)
      warp.push_back({lane.ids.thread, lane.pc});
  }
  if (waiting.empty() && warp.empty())
    return false; // every thread ended
  auto list = [](const std::vector<EmulationSite>& sites) {
    std::string text;
    for (size_t i = 0; i < sites.size() && i < 8; ++i)
      text += (i ? ", " : "") + std::to_string(sites[i].thread);
    return sites.size() > 8 ? text + fmt::format(", ... ({} threads)", sites.size()) : text;
  };
  if (!warp.empty()) {
    const Lane& first = lanes_[warp.front().thread];
    launch_.record(report(EmulationFault::WarpMask,
                          fmt::format("a warp collective with mask {:#010x} waits for lanes that "
                                      "never call it (threads waiting: {})",
                                      first.mask, list(warp)),
                          {warp.front()}),
                   true);
    stopped_ = true;
    return false;
  }
  std::vector<EmulationSite> elsewhere;
  for (const EmulationSite& site : waiting)
    if (site.pc != waiting.front().pc)
      elsewhere.push_back(site);
  if (!exited.empty() || !elsewhere.empty()) {
    std::string detail =
        !exited.empty()
            ? fmt::format("__syncthreads reached by threads {} while threads {} exited "
                          "without reaching it",
                          list(waiting), list(exited))
            : fmt::format("threads wait at different __syncthreads: threads {} at one, {} at "
                          "another",
                          list(waiting), list(elsewhere));
    std::vector<EmulationSite> sites = {waiting.front()};
    sites.push_back(!elsewhere.empty() ? elsewhere.front() : exited.front());
    launch_.record(report(EmulationFault::BarrierDivergence, detail, sites), true);
    stopped_ = true;
    return false;
  }
  for (Lane& lane : lanes_)
    if (lane.wait == Wait::Barrier)
      lane.wait = Wait::Ready;
  ++epoch_;
  return true;
}

EmulationReport EmulatedBlock::report(EmulationFault fault, std::string detail,
                                      std::vector<EmulationSite> sites) const {
  EmulationReport report;
  report.fault = fault;
  report.kernel = launch_.kernel().name();
  report.block = block_;
  report.sites = std::move(sites);
  report.detail = std::move(detail);
  return report;
}

void EmulatedBlock::stop(std::optional<EmulationReport> report) {
  if (report)
    launch_.record(std::move(*report), true);
  stopped_ = true;
  running_->wait = Wait::Exited;
  yield();
  std::abort(); // a stopped thread is never resumed
}

// ---- the hooks ----

void EmulatedBlock::access(const void* address, size_t bytes, bool write, void* pc) {
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  Lane& lane = *running_;
  // The thread's own stack (its locals and registers spilled by the host compiler).
  if (at >= lane.stackLow && at + bytes <= lane.stackHigh)
    return;
  if (launch_.stopped())
    stop(std::nullopt); // another block's fault stopped the launch
  bool sized = bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
  uintptr_t shared = reinterpret_cast<uintptr_t>(shared_);
  bool inShared = at >= shared && at + bytes <= shared + sharedBytes_;
  bool inBuffer = !inShared && inRecentBuffer(at, bytes);
  if ((inShared || inBuffer) && sized && at % bytes != 0)
    stop(report(EmulationFault::Misaligned,
                fmt::format("{} of {} bytes at {} is not aligned to its size",
                            write ? "a write" : "a read", bytes, address),
                {{lane.ids.thread, pc}}));
  if (inShared) {
    sharedAccess(at - shared, bytes, write, pc);
    return;
  }
  if (inBuffer) {
    keepOriginal(at, bytes);
    // A shuffle also interleaves threads at global accesses.
    if (launch_.options().order.kind == BlockOrder::Kind::Shuffle) {
      random_ = random_ * 6364136223846793005ull + 1442695040888963407ull;
      if ((random_ >> 60) == 0)
        yield();
    }
    return;
  }
  if (!write && launch_.kernel().inImage(address))
    return;
  stop(report(EmulationFault::OutOfBounds,
              fmt::format("{} of {} bytes at {}: {}", write ? "a write" : "a read", bytes, address,
                          launch_.whereIs(address, bytes)),
              {{lane.ids.thread, pc}}));
}

bool EmulatedBlock::inRecentBuffer(uintptr_t at, size_t bytes) {
  for (const auto& [begin, end] : recent_)
    if (at >= begin && at + bytes <= end)
      return true;
  const EmulationBuffer* buffer = launch_.bufferOf(reinterpret_cast<const void*>(at), bytes);
  if (!buffer)
    return false;
  uintptr_t begin = reinterpret_cast<uintptr_t>(buffer->data);
  recent_[nextRecent_++ % recent_.size()] = {begin, begin + buffer->bytes};
  return true;
}

void EmulatedBlock::keepOriginal(uintptr_t at, size_t bytes) {
  for (const auto& [begin, end] : saved_)
    if (at >= begin && at + bytes <= end)
      return;
  auto range = launch_.keepOriginal(reinterpret_cast<const void*>(at), bytes);
  if (range.second != 0)
    saved_[nextSaved_++ % saved_.size()] = range;
}

void EmulatedBlock::sharedAccess(size_t offset, size_t bytes, bool write, void* pc) {
  unsigned self = running_->ids.thread;
  for (size_t i = offset; i < offset + bytes; ++i) {
    SharedByte& byte = shadow_[i];
    const char* fault = nullptr;
    EmulationSite other;
    if (byte.writeEpoch == epoch_ && byte.writer != self) {
      fault = write ? "write after write" : "read after write";
      other = {byte.writer, byte.writePc};
    } else if (write && byte.readEpoch == epoch_ && (byte.reader != self || byte.readers)) {
      fault = "write after read";
      other = {byte.reader, byte.readPc};
    }
    if (fault) {
      launch_.record(report(EmulationFault::SharedRace,
                            fmt::format("{} of shared memory byte {} by different threads with "
                                        "no __syncthreads between them",
                                        fault, i),
                            {other, {self, pc}}),
                     false);
      // One report per pair of accesses: later bytes of the same access say the same.
      byte.writeEpoch = byte.readEpoch = 0;
      return;
    }
    if (write) {
      byte.writeEpoch = epoch_;
      byte.writer = self;
      byte.writePc = pc;
    } else if (byte.readEpoch != epoch_) {
      byte.readEpoch = epoch_;
      byte.reader = self;
      byte.readers = false;
      byte.readPc = pc;
    } else if (byte.reader != self) {
      byte.readers = true;
    }
  }
}

void EmulatedBlock::barrier(void* pc) {
  running_->wait = Wait::Barrier;
  running_->pc = pc;
  yield();
}

unsigned EmulatedBlock::atomicAdd(unsigned* address, unsigned value, void* pc) {
  access(address, sizeof(unsigned), true, pc);
  if (TicketLedger* tickets = launch_.options().tickets)
    tickets->note(address, launch_.kernel(), block_, {running_->ids.thread, pc});
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}

uint64_t EmulatedBlock::warp(int kind, unsigned mask, uint64_t value, int operand, int width,
                             void* pc) {
  Lane& lane = *running_;
  unsigned lanes = lane.ids.thread % kWarpSize, base = lane.ids.thread - lanes;
  if (!(mask >> lanes & 1u))
    stop(report(EmulationFault::WarpMask,
                fmt::format("a warp collective's mask {:#010x} leaves out lane {}, which calls it",
                            mask, lanes),
                {{lane.ids.thread, pc}}));
  lane.wait = Wait::Warp;
  lane.pc = pc;
  lane.kind = kind;
  lane.mask = mask;
  lane.value = value;
  lane.operand = operand;
  lane.width = width;
  bool all = true;
  for (unsigned l = 0; l < kWarpSize; ++l) {
    if (!(mask >> l & 1u))
      continue;
    if (base + l >= lanes_.size())
      stop(report(EmulationFault::WarpMask,
                  fmt::format("a warp collective's mask {:#010x} names lane {}, past the block's "
                              "{} threads",
                              mask, l, lanes_.size()),
                  {{lane.ids.thread, pc}}));
    const Lane& other = lanes_[base + l];
    if (other.wait == Wait::Exited || other.wait == Wait::Barrier || other.wait == Wait::Active ||
        (other.wait == Wait::Warp && (other.pc != pc || other.mask != mask || other.kind != kind)))
      stop(
          report(EmulationFault::WarpMask,
                 fmt::format("lane {} of mask {:#010x} {} instead of this warp collective", l, mask,
                             other.wait == Wait::Exited    ? "exited"
                             : other.wait == Wait::Barrier ? "waits at __syncthreads"
                             : other.wait == Wait::Active  ? "calls __activemask"
                                                           : "calls another warp collective"),
                 {{lane.ids.thread, pc}, {other.ids.thread, other.pc}}));
    all = all && other.wait == Wait::Warp;
  }
  if (all)
    completeWarp(lane);
  else
    yield();
  return lane.result;
}

void EmulatedBlock::completeWarp(Lane& last) {
  unsigned base = last.ids.thread - last.ids.thread % kWarpSize, mask = last.mask;
  int width = last.width > 0 && last.width <= int(kWarpSize) ? last.width : int(kWarpSize);
  uint64_t ballot = 0;
  for (unsigned l = 0; l < kWarpSize; ++l)
    if (mask >> l & 1u)
      ballot |= uint64_t(lanes_[base + l].value != 0) << l;
  for (unsigned l = 0; l < kWarpSize; ++l) {
    if (!(mask >> l & 1u))
      continue;
    Lane& lane = lanes_[base + l];
    int segment = int(l) / width * width, source = int(l);
    switch (last.kind) {
    case wf_emu_shfl:
      source = segment + lane.operand % width;
      break;
    case wf_emu_shfl_up:
      source = int(l) - lane.operand >= segment ? int(l) - lane.operand : int(l);
      break;
    case wf_emu_shfl_down:
      source = int(l) + lane.operand < segment + width ? int(l) + lane.operand : int(l);
      break;
    case wf_emu_shfl_xor:
      source = int(l) ^ lane.operand;
      break;
    default:
      break;
    }
    if (last.kind <= wf_emu_shfl_xor)
      lane.result = source >= 0 && source < int(kWarpSize) && (mask >> source & 1u)
                        ? lanes_[base + source].value
                        : lane.value; // an inactive source lane: undefined on the device
    else if (last.kind == wf_emu_ballot)
      lane.result = ballot;
    else if (last.kind == wf_emu_any)
      lane.result = ballot != 0;
    else if (last.kind == wf_emu_all)
      lane.result = ballot == mask;
    else
      lane.result = 0;
    lane.wait = Wait::Ready;
  }
}

unsigned EmulatedBlock::activeMask(void* pc) {
  // The lanes converged here: it waits until every lane of the warp has either come here too
  // or stopped elsewhere (exited, or waiting at a barrier or collective); settle() answers.
  running_->wait = Wait::Active;
  running_->pc = pc;
  yield();
  return unsigned(running_->result);
}

bool EmulatedBlock::convergeActive() {
  bool any = false;
  for (Lane& lane : lanes_) {
    if (lane.wait != Wait::Active)
      continue;
    unsigned base = lane.ids.thread - lane.ids.thread % kWarpSize, mask = 0;
    for (unsigned l = 0; l < kWarpSize && base + l < lanes_.size(); ++l)
      if (lanes_[base + l].wait == Wait::Active && lanes_[base + l].pc == lane.pc)
        mask |= 1u << l;
    for (unsigned l = 0; l < kWarpSize; ++l)
      if (mask >> l & 1u) {
        lanes_[base + l].result = mask;
        lanes_[base + l].wait = Wait::Ready;
      }
    any = true;
  }
  return any;
}

bool EmulatedBlock::isGlobal(const void* address) const {
  // The device's answer: the address is not in the block's shared or a thread's local memory
  // (whether it lies in a buffer is the accesses' check).
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  uintptr_t shared = reinterpret_cast<uintptr_t>(shared_);
  return !(at >= shared && at < shared + sharedBytes_) &&
         !(at >= running_->stackLow && at < running_->stackHigh);
}

const wf_emu_thread* EmulatedBlock::self() const {
  return &running_->ids;
}

void EmulatedBlock::fail(const char* what, void* pc) {
  stop(report(EmulationFault::Assumption, fmt::format("{} does not hold", what),
              {{running_->ids.thread, pc}}));
}

namespace {

wf_emu_hooks& hooks() {
  static wf_emu_hooks table = {
      [](const void* address, unsigned long bytes, int write, void* pc) {
        EmulatedBlock::current()->access(address, bytes, write != 0, pc);
      },
      [](void* pc) { EmulatedBlock::current()->barrier(pc); },
      [](unsigned* address, unsigned value, void* pc) {
        return EmulatedBlock::current()->atomicAdd(address, value, pc);
      },
      [](int kind, unsigned mask, unsigned long long value, int operand, int width, void* pc) {
        return static_cast<unsigned long long>(
            EmulatedBlock::current()->warp(kind, mask, value, operand, width, pc));
      },
      [](void* pc) { return EmulatedBlock::current()->activeMask(pc); },
      [](const void* address) { return int(EmulatedBlock::current()->isGlobal(address)); },
      [] { return EmulatedBlock::current()->self(); },
      [](const char* what, void* pc) { EmulatedBlock::current()->fail(what, pc); },
      nullptr,
  };
  return table;
}

} // namespace

const wf_emu_hooks& emulationHooks() {
  return hooks();
}

void setCoverageHook(bool on) {
  void (*record)(void*) = [](void* pc) {
    if (EmulatedBlock* block = EmulatedBlock::current()) // not the emulator's own calls
      block->covered(pc);
  };
  hooks().covered = on ? record : nullptr;
}

} // namespace widefuse
