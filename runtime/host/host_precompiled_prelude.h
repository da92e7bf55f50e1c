#pragma once
/// The host prelude and the device prelude, which every generated kernel starts with, as a
/// precompiled header in the host kernel cache's directory: the host compiler then parses them
/// once per cache directory instead of once per kernel, about half of a kernel's compile time.

#include <llvm/ADT/StringRef.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace widefuse {

/// Builds `<directory>/prelude-<key>.h` and its `.h.gch` on first use and rewrites a kernel's
/// source to include it. GCC reads the .gch when the include comes before the first C token and
/// the flags match; otherwise (clang, another GCC) it reads the header's text, which is the
/// very text it replaces, so the kernel is the same either way. Thread-safe.
///
/// The .gch builds on a thread of its own, started by prepare() (a caller that knows kernels
/// are coming: a trace starting to record) or by the kernel that first needs it. The first
/// kernel that finds it missing or building compiles from the plain text meanwhile (about as
/// long as the header takes), so a cold cache directory's first kernel never waits for the
/// header on top of its own compile. Kernels after it wait for the header when it is still
/// building, as they did when it built in line.
class HostPrecompiledPrelude {
public:
  /// `directory` is the host cache's directory; "" turns the header off.
  explicit HostPrecompiledPrelude(const std::string& directory);
  /// Waits for the headers still building.
  ~HostPrecompiledPrelude();
  HostPrecompiledPrelude(const HostPrecompiledPrelude&) = delete;
  HostPrecompiledPrelude& operator=(const HostPrecompiledPrelude&) = delete;

  /// A kernel's translation unit.
  struct Unit {
    std::string text;   ///< what the compiler reads
    std::string header; ///< the header `text` includes; "" when it holds the plain text
  };

  /// The translation unit for `source` (the host prelude goes first): the prelude replaced by an
  /// #include of the header once it is built, else the plain text (also while this call has
  /// just started building it). `compilerCommand`, `flags`
  /// (those of the kernel, without -shared) and `identity` (the compiler's version and the
  /// CPU) name the header, so another compiler or CPU gets another.
  Unit translationUnit(llvm::StringRef source, llvm::StringRef compilerCommand,
                       llvm::StringRef flags, llvm::StringRef identity);

  /// Starts building the header for kernels compiled with these arguments (as
  /// translationUnit takes them) when it is missing, and returns at once.
  void prepare(llvm::StringRef compilerCommand, llvm::StringRef flags, llvm::StringRef identity);

  /// Stops using `header` in this process: a compile with it failed where the plain text did
  /// not. `removeFile` (the compiler named the precompiled header: a damaged .gch) also
  /// removes its .gch, so that the next process builds it anew.
  void discard(const std::string& header, bool removeFile);

private:
  enum class State { Building, Ready, Unavailable };
  /// The header's path for these arguments; "" where no header is used (no directory, or one
  /// an #include cannot name).
  std::string headerPath(llvm::StringRef compilerCommand, llvm::StringRef flags,
                         llvm::StringRef identity) const;
  /// True when `header` and its .gch are there; when they are missing, starts building them
  /// and returns false. A kernel (`forKernel`) waits for a build in progress unless it is the
  /// first kernel to find it so.
  bool ensureBuilt(const std::string& header, llvm::StringRef compilerCommand,
                   llvm::StringRef flags, bool forKernel);
  /// Runs `command`, which builds `header`'s .gch, and records whether it did.
  void build(const std::string& header, const std::string& command);

  std::string directory_;
  std::mutex mutex_;
  std::condition_variable built_;       // a header's state left Building
  std::map<std::string, State> states_; // by header path; guarded by mutex_
  /// Headers a kernel compiled from the plain text beside while they built; guarded by mutex_.
  std::set<std::string> compiledBeside_;
  std::vector<std::thread> builds_; // guarded by mutex_; joined by the destructor
};

} // namespace widefuse
