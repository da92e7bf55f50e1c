#include "runtime/cuda/cuda_compiler.h"

#include "ir/error.h"
#include "runtime/cuda/nvrtc_library.h"

#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/xxhash.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace widefuse {
namespace {

// Destroys the NVRTC program on every path out of compileCuda, including throws.
class ProgramHandle {
public:
  explicit ProgramHandle(const NvrtcLibrary& nvrtc) : nvrtc_(nvrtc) {}
  ProgramHandle(const ProgramHandle&) = delete;
  ProgramHandle& operator=(const ProgramHandle&) = delete;
  ~ProgramHandle() {
    if (program_)
      nvrtc_.destroyProgram(&program_);
  }
  NvrtcProgram* address() { return &program_; }
  NvrtcProgram get() const { return program_; }

private:
  const NvrtcLibrary& nvrtc_;
  NvrtcProgram program_ = nullptr;
};

std::string programLog(const NvrtcLibrary& nvrtc, NvrtcProgram program) {
  size_t size = 0;
  if (nvrtc.getProgramLogSize(program, &size) != kNvrtcSuccess || size == 0)
    return {};
  std::string log(size, '\0');
  if (nvrtc.getProgramLog(program, log.data()) != kNvrtcSuccess)
    return {};
  log.resize(size - 1); // The size counts the terminating NUL.
  while (!log.empty() && (log.back() == '\n' || log.back() == '\0'))
    log.pop_back();
  return log;
}

// Kernel names are C identifiers, but a file name must be safe whatever the caller passes.
std::string fileStem(llvm::StringRef kernelName) {
  std::string stem;
  for (char c : kernelName)
    stem += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return stem.empty() ? "kernel" : stem;
}

// Writes the source of a failed compilation where the user can open it; returns a phrase
// for the error message: the path, or why there is none.
std::string dumpSource(llvm::StringRef source, llvm::StringRef kernelName) {
  namespace fs = std::filesystem;
  fs::path path;
  std::error_code code;
  if (const char* dumpDir = std::getenv("WIDEFUSE_DUMP_DIR"); dumpDir && *dumpDir) {
    fs::create_directories(dumpDir, code);
    path = fs::path(dumpDir) / (fileStem(kernelName) + ".cu");
  } else {
    // The hash keeps concurrent failures of different sources from overwriting each other.
    fs::path directory = fs::temp_directory_path(code);
    if (code)
      return fmt::format("(the source could not be saved: {})", code.message());
    path = directory /
           fmt::format("widefuse-{}-{:016x}.cu", fileStem(kernelName), llvm::xxHash64(source));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(source.data(), static_cast<std::streamsize>(source.size()));
  out.close();
  if (!out)
    return fmt::format("(the source could not be saved to {})", path.string());
  return path.string();
}

std::string supportedArchList(const NvrtcLibrary& nvrtc) {
  std::string list;
  for (int arch : nvrtc.supportedArchs())
    list += fmt::format("{}sm_{}", list.empty() ? "" : ", ", arch);
  return list;
}

// The decimal number just before the first `suffix` in `text` ("... 38 registers"), or 0.
int numberBefore(llvm::StringRef text, llvm::StringRef suffix) {
  size_t end = text.find(suffix);
  if (end == llvm::StringRef::npos)
    return 0;
  llvm::StringRef head = text.take_front(end).rtrim();
  size_t start = head.find_last_not_of("0123456789");
  llvm::StringRef digits = start == llvm::StringRef::npos ? head : head.drop_front(start + 1);
  int value = 0;
  if (digits.getAsInteger(10, value))
    return 0;
  return value;
}

} // namespace

std::vector<std::string> nvrtcOptions(const CompileOptions& options) {
  // -default-device: generated code has no __device__ annotations on helpers, and the
  // prelude serves the host compiler too. -Xptxas=-v puts register and spill counts in the
  // log so they can be kept with the kernel.
  std::vector<std::string> flags = {"--std=c++17", "-default-device",
                                    fmt::format("-arch={}", options.arch), "-Xptxas=-v"};
  if (!options.fmad)
    flags.push_back("--fmad=false");
  if (options.maxRegisters)
    flags.push_back(fmt::format("--maxrregcount={}", options.maxRegisters));
  return flags;
}

void checkArch(llvm::StringRef arch) {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  llvm::StringRef digits = arch;
  unsigned number = 0;
  if (!digits.consume_front("sm_") || digits.empty() ||
      digits.find_first_not_of("0123456789") != llvm::StringRef::npos ||
      digits.getAsInteger(10, number))
    fail("invalid arch '{}': expected sm_<number>; NVRTC {} supports {}", arch,
         nvrtc.versionString(), supportedArchList(nvrtc));
  if (!llvm::is_contained(nvrtc.supportedArchs(), static_cast<int>(number)))
    fail("unsupported arch '{}': NVRTC {} supports {}", arch, nvrtc.versionString(),
         supportedArchList(nvrtc));
}

KernelImage compileCuda(llvm::StringRef source, llvm::StringRef kernelName,
                        const CompileOptions& options) {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  checkArch(options.arch);

  ProgramHandle program(nvrtc);
  std::string sourceText = source.str();
  std::string programName = fileStem(kernelName) + ".cu"; // How the log names the source.
  nvrtc.check(nvrtc.createProgram(program.address(), sourceText.c_str(), programName.c_str(), 0,
                                  nullptr, nullptr),
              "nvrtcCreateProgram");

  std::vector<std::string> flags = nvrtcOptions(options);
  llvm::SmallVector<const char*, 8> flagPointers;
  for (const std::string& flag : flags)
    flagPointers.push_back(flag.c_str());

  auto start = std::chrono::steady_clock::now();
  NvrtcResult result = nvrtc.compileProgram(program.get(), static_cast<int>(flagPointers.size()),
                                            flagPointers.data());
  auto stop = std::chrono::steady_clock::now();

  KernelImage kernel;
  kernel.name = kernelName.str();
  kernel.target = options.arch;
  kernel.log = programLog(nvrtc, program.get());
  kernel.compileMilliseconds = std::chrono::duration<double, std::milli>(stop - start).count();
  if (result != kNvrtcSuccess)
    fail("NVRTC failed to compile kernel '{}' for {} ({}):\n{}\nsource: {}", kernelName,
         options.arch, nvrtc.errorString(result), kernel.log, dumpSource(source, kernelName));

  size_t ptxSize = 0;
  nvrtc.check(nvrtc.getPtxSize(program.get(), &ptxSize), "nvrtcGetPTXSize");
  kernel.ptx.assign(ptxSize, '\0');
  nvrtc.check(nvrtc.getPtx(program.get(), kernel.ptx.data()), "nvrtcGetPTX");
  while (!kernel.ptx.empty() && kernel.ptx.back() == '\0')
    kernel.ptx.pop_back();

  size_t cubinSize = 0;
  nvrtc.check(nvrtc.getCubinSize(program.get(), &cubinSize), "nvrtcGetCUBINSize");
  kernel.image.resize(cubinSize);
  nvrtc.check(nvrtc.getCubin(program.get(), kernel.image.data()), "nvrtcGetCUBIN");
  WF_ASSERT(!kernel.image.empty(), "NVRTC gave no cubin for the real arch {}", options.arch);

  // A source that compiles but lacks the entry (a typo, a missing extern "C") would only
  // fail at launch, far from its cause.
  if (!llvm::StringRef(kernel.ptx).contains(fmt::format(".entry {}(", kernelName)))
    fail("the source compiled for kernel '{}' defines no entry function of that name (expected "
         "extern \"C\" __global__ void {}(...))\nsource: {}",
         kernelName, kernelName, dumpSource(source, kernelName));

  kernel.stats = parsePtxasStats(kernel.log, kernelName);
  return kernel;
}

KernelStats parsePtxasStats(llvm::StringRef log, llvm::StringRef kernelName) {
  // ptxas -v prints, per entry function:
  //   ptxas info    : Compiling entry function 'k' for 'sm_90'
  //   ptxas info    : Function properties for k
  //   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 38 registers, used 1 barriers
  // followed by "Function properties for <callee>" blocks of non-inlined callees. The
  // register line belongs to the last entry being compiled; a stack line to the last
  // "Function properties" header.
  KernelStats stats;
  llvm::StringRef compiling;  // The entry function ptxas is compiling.
  llvm::StringRef properties; // The function whose properties come next.
  llvm::SmallVector<llvm::StringRef, 32> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (size_t at = line.find("Compiling entry function '"); at != llvm::StringRef::npos) {
      llvm::StringRef rest = line.drop_front(at + strlen("Compiling entry function '"));
      compiling = rest.take_until([](char c) { return c == '\''; });
      properties = {};
      continue;
    }
    if (size_t at = line.find("Function properties for "); at != llvm::StringRef::npos) {
      properties = line.drop_front(at + strlen("Function properties for ")).trim();
      continue;
    }
    if (line.contains("bytes stack frame")) {
      if (properties == kernelName) {
        stats.stackBytes = numberBefore(line, "bytes stack frame");
        stats.spillStoreBytes = numberBefore(line, "bytes spill stores");
        stats.spillLoadBytes = numberBefore(line, "bytes spill loads");
      }
      properties = {};
      continue;
    }
    if (line.contains("Used ") && line.contains(" registers") && !compiling.empty()) {
      if (compiling == kernelName)
        stats.registers = numberBefore(line, " registers");
      compiling = {}; // One register line per entry.
    }
  }
  return stats;
}

} // namespace widefuse
