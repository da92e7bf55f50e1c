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
  Allocation& result = *allocation;
  allocations_[result.base] = std::move(allocation);
  return result;
}

bool StreamModel::free(uintptr_t base) {
  auto found = allocations_.find(base);
  if (found == allocations_.end())
    return false;
  synchronizeAll();
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
  synchronize(*stream); // the driver lets queued work finish
  stream->last = nullptr;
}

Stream* StreamModel::streamOf(void* handle, int device) {
  if (!handle)
    return &legacyStream(device);
  for (const auto& stream : streams_)
    if (stream.get() == handle)
      return stream.get();
  return nullptr;
}

Operation& StreamModel::enqueue(Stream& stream, std::string what, std::vector<Allocation*> writes,
                                std::function<void(Operation&)> run) {
  operations_.push_back(std::make_unique<Operation>());
  Operation& operation = *operations_.back();
  operation.id = nextId_++;
  operation.stream = &stream;
  operation.what = std::move(what);
  operation.writes = std::move(writes);
  operation.run = std::move(run);
  auto waitFor = [&](Operation* earlier) {
    if (earlier && !earlier->done)
      operation.waitsFor.push_back(earlier);
  };
  waitFor(stream.last);
  // The legacy stream's implicit synchronisation with the device's blocking streams.
  if (stream.legacy) {
    for (const auto& other : streams_)
      if (other->device == stream.device && !other->nonBlocking)
        waitFor(other->last);
  } else if (!stream.nonBlocking) {
    waitFor(legacyStream(stream.device).last);
  }
  stream.last = &operation;
  for (Allocation* allocation : operation.writes)
    allocation->pendingWrites.push_back(&operation);
  return operation;
}

void StreamModel::execute(Operation& operation) {
  if (operation.done)
    return;
  for (Operation* earlier : operation.waitsFor)
    execute(*earlier);
  operation.run(operation);
  operation.run = nullptr; // frees what it captured (staged host data)
  operation.done = true;
  for (Allocation* allocation : operation.writes) {
    auto& pending = allocation->pendingWrites;
    pending.erase(std::remove(pending.begin(), pending.end(), &operation), pending.end());
  }
}

void StreamModel::synchronize(Stream& stream) {
  if (stream.last)
    execute(*stream.last);
}

void StreamModel::synchronizeAll() {
  for (const auto& operation : operations_)
    execute(*operation);
}

void StreamModel::checkOrdered(const Operation& reader, const Allocation& allocation,
                               const std::string& where) {
  for (const Operation* write : allocation.pendingWrites)
    if (write->id < reader.id)
      violate(reader.what + " on " + reader.stream->name + " reads " + where + ", which " +
              write->what + " queued on " + write->stream->name +
              " earlier writes, but nothing orders that write before it");
}

} // namespace widefuse::cuda_double
