#include "runtime/host/host_precompiled_prelude.h"

#include "codegen/host_prelude.h"
#include "codegen/prelude.h"
#include "runtime/cache_directory.h"
#include "runtime/kernel_cache_record.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/FileSystem.h>

#include <cstdlib>
#include <filesystem>

#include <sys/wait.h>
#include <unistd.h>

namespace widefuse {
namespace {

namespace fs = std::filesystem;

/// What the header holds: the text it stands for in every kernel's translation unit.
std::string headerText() {
  return hostPrelude().str() + "\n" + devicePrelude().str();
}

/// Whether `path` can stand in an #include line and in the shell's single quotes as it is.
bool plainPath(llvm::StringRef path) {
  return path.find_first_of("\"'\\\n") == llvm::StringRef::npos;
}

} // namespace

HostPrecompiledPrelude::HostPrecompiledPrelude(const std::string& directory) {
  // Absolute: the #include is resolved from the scratch source's directory, not from ours.
  std::error_code error;
  if (!directory.empty())
    directory_ = fs::absolute(directory, error).string();
}

std::string HostPrecompiledPrelude::headerPath(llvm::StringRef compilerCommand,
                                               llvm::StringRef flags,
                                               llvm::StringRef identity) const {
  if (directory_.empty() || !plainPath(directory_))
    return "";
  std::string stem =
      cacheRecordStem(fmt::format("precompiled prelude\n{}\n{}\n{}\n{}", compilerCommand.str(),
                                  identity.str(), flags.str(), headerText()));
  return joinCachePath(directory_, "prelude-" + stem + ".h");
}

void HostPrecompiledPrelude::prepare(llvm::StringRef compilerCommand, llvm::StringRef flags,
                                     llvm::StringRef identity) {
  std::string header = headerPath(compilerCommand, flags, identity);
  if (!header.empty())
    ensureBuilt(header, compilerCommand, flags, /*forKernel=*/false);
}

HostPrecompiledPrelude::Unit
HostPrecompiledPrelude::translationUnit(llvm::StringRef source, llvm::StringRef compilerCommand,
                                        llvm::StringRef flags, llvm::StringRef identity) {
  Unit plain{hostPrelude().str() + "\n" + source.str(), ""};
  size_t at = source.find(devicePrelude());
  if (directory_.empty() || !plainPath(directory_) || at == llvm::StringRef::npos)
    return plain;
  // Only comments may stand before it: GCC takes a precompiled header only when it is
  // included before the first C token.
  llvm::SmallVector<llvm::StringRef, 16> lines;
  source.take_front(at).split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (!line.trim().empty() && !line.trim().startswith("//"))
      return plain;
  std::string header = headerPath(compilerCommand, flags, identity);
  if (!ensureBuilt(header, compilerCommand, flags, /*forKernel=*/true))
    return plain;
  return {source.take_front(at).str() + fmt::format("#include \"{}\"\n", header) +
              source.drop_front(at + devicePrelude().size()).str(),
          header};
}

void HostPrecompiledPrelude::discard(const std::string& header, bool removeFile) {
  std::lock_guard<std::mutex> lock(mutex_);
  states_[header] = State::Unavailable;
  std::error_code ignored;
  if (removeFile)
    fs::remove(header + ".gch", ignored);
}

HostPrecompiledPrelude::~HostPrecompiledPrelude() {
  std::vector<std::thread> builds;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    builds.swap(builds_);
  }
  for (std::thread& thread : builds)
    thread.join();
}

bool HostPrecompiledPrelude::ensureBuilt(const std::string& header, llvm::StringRef compilerCommand,
                                         llvm::StringRef flags, bool forKernel) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (auto known = states_.find(header); known != states_.end()) {
    if (known->second == State::Building && (!forKernel || compiledBeside_.insert(header).second))
      return false;
    built_.wait(lock, [&] { return known->second != State::Building; });
    return known->second == State::Ready;
  }
  std::string gch = header + ".gch";
  std::error_code error;
  if (fs::exists(gch, error) && fs::exists(header, error)) {
    states_[header] = State::Ready;
    return true;
  }
  // A header that cannot be built (a full disk, a compiler without precompiled headers) only
  // costs the speed-up: kernels compile from the plain text, without a word.
  states_[header] = State::Unavailable;
  if (!writeCacheFileAtomically(header, headerText()).empty())
    return false;
  // Built into a file no other process or thread uses, then renamed into place, so that a
  // compile elsewhere sees the whole .gch or none. The shell renames it (or removes it), so
  // that a process which ends while its header builds still leaves a whole header behind and
  // no scratch file.
  int fd = -1;
  llvm::SmallString<256> scratch;
  if (llvm::sys::fs::createUniqueFile(gch + ".tmp-%%%%%%%%", fd, scratch))
    return false;
  ::close(fd);
  std::string command =
      fmt::format("{0} {1} -x c++-header -o '{2}' '{3}' >/dev/null 2>&1 && mv -f '{2}' '{4}' || "
                  "{{ rm -f '{2}'; exit 1; }}",
                  compilerCommand.str(), flags.str(), std::string(scratch), header, gch);
  states_[header] = State::Building;
  if (forKernel)
    compiledBeside_.insert(header);
  builds_.emplace_back(&HostPrecompiledPrelude::build, this, header, std::move(command));
  return false;
}

void HostPrecompiledPrelude::build(const std::string& header, const std::string& command) {
  int status = std::system(command.c_str());
  bool ready = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::lock_guard<std::mutex> lock(mutex_);
  states_[header] = ready ? State::Ready : State::Unavailable;
  built_.notify_all();
}

} // namespace widefuse
