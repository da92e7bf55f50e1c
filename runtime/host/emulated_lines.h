#pragma once
/// Lines of an emulated kernel's generated text for its code addresses: what reports print and
/// what coverage counts, looked up in the kernel's image with binutils (addr2line, objdump).

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace widefuse {

/// The line table of one loaded emulated kernel. Thread-safe.
class KernelLines {
public:
  /// `image`: the shared object's bytes; `loadAddress`: where its offset 0 is mapped.
  KernelLines(std::string name, llvm::StringRef image, const void* loadAddress);
  ~KernelLines();

  /// `<name>.cu:<line>` for a return address the hooks saw (the prelude's own file:line
  /// outside the kernel's text; `<name>+<offset>` without line tables or addr2line).
  std::string lineOf(void* pc);
  /// The code of the kernel's text by basic block (the coverage callback starts each one).
  struct BlockMap {
    /// Each basic block's callback call and return address (the pc the callback sees), in
    /// address order.
    std::vector<std::pair<uintptr_t, void*>> blocks;
    /// For each row of the line table in the kernel's text: the block index and the line.
    std::vector<std::pair<size_t, int>> lines;
  };
  BlockMap blockMap();

private:
  /// addr2line's frames (innermost first) for each image offset.
  std::vector<std::vector<std::string>> frames(llvm::ArrayRef<uintptr_t> offsets);
  const std::string& imagePath();
  uintptr_t offsetOf(void* pc) const;

  std::string name_;
  std::string image_;
  uintptr_t load_;
  std::mutex mutex_;
  std::string path_; // the image written out on first use
  std::map<void*, std::string> lines_;
};

} // namespace widefuse
