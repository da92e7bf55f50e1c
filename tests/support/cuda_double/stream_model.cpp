#include "tests/support/cuda_double/stream_model.h"

#include <algorithm>
#include <cstdlib>

namespace widefuse::cuda_double {

/// CUDA_ERROR_ILLEGAL_ADDRESS: what a kernel that touches memory it must not gets.
constexpr int kIllegalAddress = 700;

void StreamModel::violate(const std::string& line) {
  violations_ += line + "\n";
  stickyError_ = kIllegalAddress;
}

void StreamModel::clearViolations() {
  violations_.clear();
  stickyError_ = 0;
}

Allocation& StreamModel::allocate(size_t bytes, int device) {
  // 256-byte aligned, as cuMemAlloc's are; device memory is host memory.
  void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  auto allocation = std::make_unique<Allocation>();
  allocation->base = reinterpret_cast<uintptr_t>(memory);
  allocation->size = bytes;
  allocation->device = device;
  allocation->id = nextAllocation_++;
  Allocation& result = *allocation;
  allocations_[result.base] = std::move(allocation);
  return result;
}

bool StreamModel::free(uintptr_t base) {
  auto found = allocations_.find(base);
  if (found == allocations_.end())
    return false;
  drainAll(); // the memory must outlive queued work; this orders nothing for the host
  std::free(reinterpret_cast<void*>(base));
  allocations_.erase(found);
  return true;
}

Allocation* StreamModel::find(uintptr_t address, size_t bytes) {
  auto after = allocations_.upper_bound(address);
  if (after == allocations_.begin())
    return nullptr;
  Allocation& candidate = *std::prev(after)->second;
  if (address + bytes > candidate.base + std::max<size_t>(candidate.size, 1))
    return nullptr;
  return &candidate;
}

Stream& StreamModel::legacyStream(int device) {
  std::unique_ptr<Stream>& stream = legacy_[device];
  if (!stream) {
    stream = std::make_unique<Stream>();
    stream->device = device;
    stream->legacy = true;
    stream->name = "the legacy default stream";
  }
  return *stream;
}

Stream* StreamModel::createStream(int device, bool nonBlocking) {
  streams_.push_back(std::make_unique<Stream>());
  Stream& stream = *streams_.back();
  stream.device = device;
  stream.nonBlocking = nonBlocking;
  stream.name = std::string(nonBlocking ? "non-blocking" : "blocking") + " stream #" +
                std::to_string(streams_.size());
  return &stream;
}

void StreamModel::destroyStream(Stream* stream) {
  if (stream->last)
    execute(*stream->last); // the driver lets queued work finish; the host learns nothing
  stream->last = nullptr;
}

Stream* StreamModel::streamOf(void* handle, int device) {
  if (!handle)
    return &legacyStream(device);
  Stream* stream = anyStream(handle);
  // A stream of another device's context is not a valid handle here.
  return stream && stream->device == device ? stream : nullptr;
}

Stream* StreamModel::anyStream(void* handle) {
  for (const auto& stream : streams_)
    if (stream.get() == handle)
      return stream.get();
  return nullptr;
}

namespace {

/// `into` also covers what `other` covers.
void join(Clock& into, const Clock& other) {
  for (const auto& [stream, id] : other)
    into[stream] = std::max(into[stream], id);
}

} // namespace

Operation& StreamModel::enqueue(Stream& stream, std::string what, std::vector<Allocation*> writes,
                                std::function<void(Operation&)> run) {
  operations_.push_back(std::make_unique<Operation>());
  Operation& operation = *operations_.back();
  operation.id = nextId_++;
  operation.stream = &stream;
  operation.what = std::move(what);
  operation.writes = std::move(writes);
  operation.run = std::move(run);
  operation.clock = hostKnows_;
  auto after = [&](Operation* earlier) {
    if (!earlier)
      return;
    join(operation.clock, earlier->clock);
    if (!earlier->done)
      operation.waitsFor.push_back(earlier);
  };
  after(stream.last);
  // The legacy stream's implicit synchronisation with the device's blocking streams.
  if (stream.legacy) {
    for (const auto& other : streams_)
      if (other->device == stream.device && !other->nonBlocking)
        after(other->last);
  } else if (!stream.nonBlocking) {
    after(legacyStream(stream.device).last);
  }
  operation.clock[&stream] = operation.id;
  stream.last = &operation;
  for (Allocation* allocation : operation.writes)
    allocation->writes[&stream].push_back(&operation);
  return operation;
}

void StreamModel::execute(Operation& operation) {
  // The operation and everything it waits for, run in queue order (what it waits for was
  // queued earlier); iterative, so long queues do not deepen the stack.
  std::vector<Operation*> pending = {&operation}, closure;
  while (!pending.empty()) {
    Operation* next = pending.back();
    pending.pop_back();
    if (next->done || std::find(closure.begin(), closure.end(), next) != closure.end())
      continue;
    closure.push_back(next);
    pending.insert(pending.end(), next->waitsFor.begin(), next->waitsFor.end());
  }
  std::sort(closure.begin(), closure.end(),
            [](const Operation* a, const Operation* b) { return a->id < b->id; });
  for (Operation* next : closure)
    runNow(*next);
}

void StreamModel::runNow(Operation& operation) {
  operation.run(operation);
  operation.run = nullptr; // frees what it captured (staged host data)
  operation.done = true;
}

void StreamModel::waitFor(Stream& stream, Operation& operation) {
  Operation& marker = enqueue(stream, "cuStreamWaitEvent", {}, [](Operation&) {});
  join(marker.clock, operation.clock);
  if (!operation.done)
    marker.waitsFor.push_back(&operation);
}

void StreamModel::synchronizeWith(Operation& operation) {
  execute(operation);
  join(hostKnows_, operation.clock);
}

void StreamModel::synchronize(Stream& stream) {
  if (!stream.last)
    return;
  execute(*stream.last);
  join(hostKnows_, stream.last->clock);
}

void StreamModel::drainAll() {
  for (const auto& operation : operations_)
    if (!operation->done)
      runNow(*operation); // queue order respects every wait
}

void StreamModel::synchronizeAll() {
  drainAll();
  for (const auto& operation : operations_)
    hostKnows_[operation->stream] = std::max(hostKnows_[operation->stream], operation->id);
}

void StreamModel::checkOrdered(const Operation& reader, const Allocation& allocation,
                               const std::string& where) {
  for (const auto& [stream, writes] : allocation.writes) {
    // The last write of that stream queued before the reader: ordering it orders the rest.
    const Operation* latest = nullptr;
    for (const Operation* write : writes)
      if (write->id < reader.id)
        latest = write;
    auto known = reader.clock.find(stream);
    if (latest && (known == reader.clock.end() || known->second < latest->id))
      violate(reader.what + " on " + reader.stream->name + " reads " + where + ", which " +
              latest->what + " queued on " + latest->stream->name +
              " earlier writes, but nothing orders that write before it");
  }
}

} // namespace widefuse::cuda_double
