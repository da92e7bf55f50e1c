#include "runtime/host/emulated_buffers.h"

#include <fmt/format.h>

#include <algorithm>

namespace widefuse {

namespace {

const std::byte* bytesOf(const EmulationBuffer& buffer) {
  return static_cast<const std::byte*>(buffer.data);
}

} // namespace

void BufferOriginals::save(const EmulationBuffer& buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!index_.try_emplace({buffer.data, buffer.bytes}, saved_.size()).second)
    return;
  saved_.push_back({buffer, {bytesOf(buffer), bytesOf(buffer) + buffer.bytes}});
}

void BufferOriginals::restore() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto saved = saved_.rbegin(); saved != saved_.rend(); ++saved)
    // The launch's buffers are those its kernel writes.
    std::copy(saved->bytes.begin(), saved->bytes.end(),
              static_cast<std::byte*>(const_cast<void*>(saved->buffer.data)));
}

BufferOriginals::Contents BufferOriginals::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Contents contents;
  for (const Saved& saved : saved_)
    contents.emplace_back(bytesOf(saved.buffer), bytesOf(saved.buffer) + saved.buffer.bytes);
  return contents;
}

std::string BufferOriginals::difference(const Contents& result, llvm::StringRef resultRun,
                                        llvm::StringRef run) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < saved_.size(); ++i) {
    // A buffer the first run left alone still holds its original bytes there.
    const std::vector<std::byte>& expected = i < result.size() ? result[i] : saved_[i].bytes;
    const std::byte* now = bytesOf(saved_[i].buffer);
    auto [at, _] = std::mismatch(expected.begin(), expected.end(), now);
    if (at == expected.end())
      continue;
    size_t offset = size_t(at - expected.begin());
    return fmt::format("byte {} of {} is {:#04x} after the {} run and {:#04x} after the {} run",
                       offset, saved_[i].buffer.name, unsigned(*at), resultRun,
                       unsigned(now[offset]), run);
  }
  return "";
}

} // namespace widefuse
