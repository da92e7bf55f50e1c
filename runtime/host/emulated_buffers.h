#pragma once
/// The memory a launch in the device emulator was given, and the bytes its buffers held before
/// the launch wrote them: what runs in other interleavings start from and are compared with.

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace widefuse {

/// A memory range a launch was given (an input, output, workspace, table or ticket array).
struct EmulationBuffer {
  const void* data = nullptr;
  size_t bytes = 0;
  std::string name;
};

/// Each buffer's bytes from before its first access, over several runs of one launch. The
/// emulator saves a buffer when a thread first reads or writes it, so a run pays for the
/// buffers it touches, not for every one it was given (the driver double gives a launch every
/// allocation). Reads count: the instrumented build does not report a store to an address
/// the same thread has just loaded (`x[i] += v`), so only a read may announce a written
/// buffer.
class BufferOriginals {
public:
  /// Copies `buffer`'s bytes unless it is saved; call before accessing it. Thread-safe: a
  /// thread accessing a buffer another thread is saving waits for the copy.
  void save(const EmulationBuffer& buffer);
  /// Puts back every saved buffer's bytes. Overlapping buffers (views of one storage) are
  /// restored in reverse order of saving, so each byte gets the copy taken before any write.
  void restore() const;
  /// The saved buffers' bytes as they are now, to compare later runs with (`difference`).
  using Contents = std::vector<std::vector<std::byte>>;
  Contents current() const;
  /// "" when every saved buffer holds what `result` says (or, saved after it was taken, its
  /// original bytes); otherwise the first difference, naming `resultRun` and `run`.
  std::string difference(const Contents& result, llvm::StringRef resultRun,
                         llvm::StringRef run) const;

private:
  struct Saved {
    EmulationBuffer buffer;
    std::vector<std::byte> bytes;
  };
  mutable std::mutex mutex_;
  std::vector<Saved> saved_; // in order of saving
  std::map<std::pair<const void*, size_t>, size_t> index_;
};

} // namespace widefuse
