#include "runtime/host/emulated_lines.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace widefuse {
namespace {

/// What a command prints on its standard output ("" when it cannot run).
std::string outputOf(const std::string& command) {
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    while (size_t read = std::fread(buffer, 1, sizeof buffer, pipe))
      output.append(buffer, read);
    pclose(pipe);
  }
  return output;
}

/// The line number in `file:line` when the file is `<name>.cu`; 0 otherwise.
int kernelLine(llvm::StringRef frame, llvm::StringRef file) {
  size_t at = frame.find(file);
  if (at == llvm::StringRef::npos)
    return 0;
  int line = 0;
  frame.substr(at + file.size()).split(' ').first.getAsInteger(10, line);
  return line;
}

} // namespace

KernelLines::KernelLines(std::string name, llvm::StringRef image, const void* loadAddress)
    : name_(std::move(name)), image_(image.str()), load_(reinterpret_cast<uintptr_t>(loadAddress)) {
}

KernelLines::~KernelLines() {
  if (!path_.empty())
    llvm::sys::fs::remove(path_);
}

const std::string& KernelLines::imagePath() {
  if (path_.empty()) {
    llvm::SmallString<128> path;
    int fd = -1;
    if (!llvm::sys::fs::createTemporaryFile("widefuse-emulated-" + name_, "so", fd, path)) {
      llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
      out << image_;
      path_ = std::string(path);
    }
  }
  return path_;
}

uintptr_t KernelLines::offsetOf(void* pc) const {
  // A return address: the call it returns from ends one byte before.
  return reinterpret_cast<uintptr_t>(pc) - 1 - load_;
}

std::vector<std::vector<std::string>> KernelLines::frames(llvm::ArrayRef<uintptr_t> offsets) {
  std::vector<std::vector<std::string>> result(offsets.size());
  if (offsets.empty() || imagePath().empty())
    return result;
  // Addresses in a file (a kernel has thousands of basic blocks); -a prints each address
  // before its frames.
  llvm::SmallString<128> list;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("widefuse-addresses", "txt", fd, list))
    return result;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    for (uintptr_t offset : offsets)
      out << fmt::format("{:#x}\n", offset);
  }
  std::string output =
      outputOf(fmt::format("addr2line -a -i -e '{}' < '{}' 2>/dev/null", imagePath(), list.str()));
  llvm::sys::fs::remove(list);
  llvm::SmallVector<llvm::StringRef, 64> lines;
  llvm::StringRef(output).split(lines, '\n', -1, false);
  int index = -1;
  for (llvm::StringRef line : lines) {
    if (line.startswith("0x")) {
      ++index;
      continue;
    }
    if (index >= 0 && size_t(index) < result.size())
      result[size_t(index)].push_back(line.str());
  }
  return result;
}

std::string KernelLines::lineOf(void* pc) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto found = lines_.find(pc); found != lines_.end())
    return found->second;
  std::vector<std::string> chain = frames({offsetOf(pc)}).front();
  std::string line = fmt::format("{}+{:#x}", name_, offsetOf(pc));
  // Outside the kernel's text (the emulation prelude): the innermost frame as it is.
  if (!chain.empty() && !llvm::StringRef(chain.front()).startswith("??"))
    line = llvm::sys::path::filename(llvm::StringRef(chain.front()).split(' ').first).str();
  std::string file = name_ + ".cu:";
  for (const std::string& frame : chain)
    if (int number = kernelLine(frame, file)) {
      line = file + std::to_string(number);
      break;
    }
  return lines_[pc] = line;
}

namespace {

/// An instruction line of `objdump -d`: "  1234:\tcall ..." gives its address.
bool instructionAddress(llvm::StringRef line, uint64_t& address) {
  llvm::StringRef trimmed = line.trim();
  return line.startswith(" ") && trimmed.contains(':') &&
         !trimmed.split(':').first.getAsInteger(16, address);
}

} // namespace

KernelLines::BlockMap KernelLines::blockMap() {
  std::lock_guard<std::mutex> lock(mutex_);
  BlockMap map;
  if (imagePath().empty())
    return map;
  // Each basic block begins with a call of the coverage callback (after the prologue of a
  // function's first block); the instruction after the call is the pc the callback sees.
  std::string listing =
      outputOf(fmt::format("objdump -d --no-show-raw-insn '{}' 2>/dev/null", imagePath()));
  llvm::SmallVector<llvm::StringRef, 256> lines;
  llvm::StringRef(listing).split(lines, '\n', -1, false);
  std::vector<uint64_t> functions; // where each function starts
  uint64_t call = 0;
  bool afterCall = false;
  for (llvm::StringRef line : lines) {
    uint64_t address = 0;
    if (line.endswith(">:") && !line.split(' ').first.getAsInteger(16, address)) {
      functions.push_back(address);
      continue;
    }
    if (!instructionAddress(line, address))
      continue;
    if (afterCall)
      map.blocks.push_back({call, reinterpret_cast<void*>(load_ + address)});
    afterCall = line.contains("call") && line.contains("<__sanitizer_cov_trace_pc");
    call = address;
  }
  // The line table's rows in the kernel's text, each in the block whose code holds it: from
  // its callback's call to the next one; a function's prologue belongs to its first block.
  std::string table =
      outputOf(fmt::format("objdump --dwarf=decodedline '{}' 2>/dev/null", imagePath()));
  lines.clear();
  llvm::StringRef(table).split(lines, '\n', -1, false);
  std::string file = name_ + ".cu";
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 6> fields;
    line.split(fields, ' ', -1, false);
    int number = 0;
    uint64_t address = 0;
    if (fields.size() < 3 || fields[0] != file || fields[1].getAsInteger(10, number) ||
        fields[2].getAsInteger(0, address))
      continue;
    auto after = std::upper_bound(
        map.blocks.begin(), map.blocks.end(), address,
        [](uint64_t at, const std::pair<uintptr_t, void*>& block) { return at < block.first; });
    auto function = std::upper_bound(functions.begin(), functions.end(), address);
    uint64_t start = function == functions.begin() ? 0 : *(function - 1);
    if (after == map.blocks.begin() || (after - 1)->first < start) {
      if (after == map.blocks.end())
        continue;
      map.lines.push_back({size_t(after - map.blocks.begin()), number});
    } else {
      map.lines.push_back({size_t(after - 1 - map.blocks.begin()), number});
    }
  }
  return map;
}

} // namespace widefuse
