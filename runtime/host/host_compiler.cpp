#include "runtime/host/host_compiler.h"

#include "codegen/emulation_prelude.h"
#include "codegen/host_prelude.h"
#include "ir/error.h"
#include "runtime/cache_directory.h"
#include "runtime/host/host_precompiled_prelude.h"
#include "runtime/kernel_cache_record.h"

#include <fmt/format.h>
#include <llvm/ADT/ScopeExit.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace widefuse {
namespace {

namespace fs = std::filesystem;

/// Flags that keep the host's arithmetic that of the reference evaluator (no contraction into
/// fma, no fast-math reassociation; strict ISO C++, which does not contract either) while
/// letting the fast path's loops vectorize for this CPU: errno is never read, so sqrt can be
/// one instruction. Not -fno-trapping-math: with it GCC folds (float)(int)x into trunc(x),
/// which keeps the sign of a negative zero the reference does not (found by the fuzzer).
///
/// -fno-builtin-<f> for every libm function the prelude calls that glibc does not round
/// correctly: GCC folds such a call on a constant argument at compile time with MPFR (correctly
/// rounded), where the reference evaluator calls glibc at run time, so log10f(3) differed by
/// 1 ulp (found by the fuzzer). The exact ones (sqrt, fabs, fma, fmod, trunc, copysign,
/// nextafter) stay builtins: folding them cannot change a bit, and sqrt vectorizes. The prelude
/// calls the C names (expf, not std::exp): libstdc++'s std:: overloads call __builtin_<f>,
/// which these flags do not reach.
// clang-format off
#define WF_LIBM(name) " -fno-builtin-" #name " -fno-builtin-" #name "f"
#define WF_LIBM_FLAGS \
    WF_LIBM(exp) WF_LIBM(exp2) WF_LIBM(expm1) WF_LIBM(log) WF_LIBM(log2) WF_LIBM(log10) \
    WF_LIBM(log1p) WF_LIBM(pow) WF_LIBM(sin) WF_LIBM(cos) WF_LIBM(tan) WF_LIBM(asin) \
    WF_LIBM(acos) WF_LIBM(atan) WF_LIBM(atan2) WF_LIBM(sinh) WF_LIBM(cosh) WF_LIBM(tanh) \
    WF_LIBM(asinh) WF_LIBM(acosh) WF_LIBM(atanh) WF_LIBM(erf) WF_LIBM(erfc) WF_LIBM(hypot) \
    WF_LIBM(lgamma) " -fno-builtin-lgamma_r -fno-builtin-lgammaf_r"
constexpr const char* kFlags =
    "-std=c++17 -O3 -march=native -fPIC -ffp-contract=off -fno-fast-math "
    "-fno-math-errno -w" WF_LIBM_FLAGS;
/// The emulator's build: the same arithmetic; -Og (every access of the source, a dead load
/// included) with line tables (reports name lines);
/// hidden symbols, none of them unique (a kernel's __shared__ arrays are its thread_local
/// statics: another kernel of the same name must not bind to them);
/// every load and store a call of the emulation prelude's __tsan_* functions (ThreadSanitizer's
/// instrumentation, which tells reads from writes and keeps both of `x[i] += v`; no runtime
/// linked), every basic block to its coverage callback; the device's typed vector
/// accesses (wf_load) alias freely.
constexpr const char* kEmulationFlags =
    "-std=c++17 -Og -g1 -fPIC -ffp-contract=off -fno-fast-math -fno-math-errno "
    "-fno-strict-aliasing -fvisibility=hidden -fno-gnu-unique -w -fsanitize=thread "
    "--param tsan-instrument-func-entry-exit=0 "
    "-fsanitize-coverage=trace-pc" WF_LIBM_FLAGS;
#undef WF_LIBM_FLAGS
#undef WF_LIBM
// clang-format on

const char* buildFlags(HostBuild build) {
  return build == HostBuild::Native ? kFlags : kEmulationFlags;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---- Fault handling: the compiler, scratch files and cache records (not the cache key). ----

/// Runs a shell command; its exit status, or -1 when it could not run or was killed.
int runCommand(const std::string& command) {
  int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// A number no other file of this process has used: names of scratch files are never reused,
/// so dlopen, which recognises a loaded library by its path, never mistakes one for another.
unsigned nextFileNumber() {
  static std::atomic<unsigned> counter{0};
  return counter++;
}

/// The directory of the host compiler's files ($TMPDIR, else /tmp); Error naming the fix when
/// there is none.
fs::path temporaryDirectory() {
  std::error_code error;
  fs::path directory = fs::temp_directory_path(error);
  if (error)
    fail("host backend: no temporary directory for the host compiler's files ({}): set TMPDIR "
         "to a writable directory",
         error.message());
  return directory;
}

/// Writes `bytes` to a new file `widefuse-<name>-<pid>-<n>-<random>.<extension>` in the
/// temporary directory (unique in this process by <n>, among processes by the random part and
/// exclusive creation). Returns its path, or "" with `reason` set (nothing is left behind).
std::string writeScratchFile(llvm::StringRef name, llvm::StringRef extension, llvm::StringRef bytes,
                             std::string& reason) {
  fs::path model = temporaryDirectory() / fmt::format("widefuse-{}-{}-{}-%%%%%%%%.{}", name.str(),
                                                      getpid(), nextFileNumber(), extension.str());
  int fd = -1;
  llvm::SmallString<256> path;
  if (std::error_code code = llvm::sys::fs::createUniqueFile(model.string(), fd, path)) {
    reason = fmt::format("cannot create a file in '{}': {}", model.parent_path().string(),
                         code.message());
    return {};
  }
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out << bytes;
  out.close();
  if (!out.has_error())
    return std::string(path);
  reason = fmt::format("writing '{}' failed: {}", std::string(path), out.error().message());
  out.clear_error(); // raw_fd_ostream aborts the process on an unchecked error.
  llvm::sys::fs::remove(path);
  return {};
}

/// The 16 hex digits that name the record of `keyMaterial`.
std::string recordStem(llvm::StringRef keyMaterial) {
  return cacheRecordStem(keyMaterial);
}

/// Where the host compiler command comes from, for messages.
std::string compilerOrigin() {
  const char* variable = std::getenv("WIDEFUSE_HOST_CXX");
  return variable && *variable ? "from WIDEFUSE_HOST_CXX"
                               : "the default, as WIDEFUSE_HOST_CXX is unset";
}

/// `<compiler> --version`, part of the cache key so that a new compiler rebuilds. Remembered
/// per compiler command ($WIDEFUSE_HOST_CXX may change while a process runs). Throws Error
/// naming the compiler and the fix when it cannot be run.
const std::string& compilerIdentity() {
  static std::mutex* mutex = new std::mutex; // never destroyed: see HostKernel
  static auto* identities = new std::map<std::string, std::string>;
  std::string command = HostKernelCache::compilerCommand();
  std::lock_guard<std::mutex> lock(*mutex);
  if (auto found = identities->find(command); found != identities->end())
    return found->second;
  std::string output;
  int status = -1;
  if (FILE* pipe = popen((command + " --version 2>&1").c_str(), "r")) {
    char buffer[512];
    while (size_t read = std::fread(buffer, 1, sizeof buffer, pipe))
      output.append(buffer, read);
    int raw = pclose(pipe);
    status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  }
  if (status != 0) {
    llvm::StringRef said = llvm::StringRef(output).trim();
    fail("host backend: no host C++ compiler: '{}' ({}) cannot be run ({}); install g++ or "
         "clang++ (Debian: apt-get install g++), or set WIDEFUSE_HOST_CXX to a C++17 compiler",
         command, compilerOrigin(),
         said.empty() ? fmt::format("exit status {}", status) : said.str());
  }
  return identities->emplace(command, std::move(output)).first->second;
}

/// The CPU -march=native compiles for (vendor, model and feature flags of /proc/cpuinfo), part
/// of the cache key: a cache directory shared with another machine rebuilds for this one.
const std::string& hostCpuIdentity() {
  static const std::string identity = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, text;
    while (std::getline(cpuinfo, line)) {
      llvm::StringRef field = llvm::StringRef(line).split(':').first.trim();
      if (field == "vendor_id" || field == "model name" || field == "flags" ||
          field == "Features" || field == "CPU part")
        text += line + "\n";
      if (line.empty() && !text.empty())
        break; // the first processor describes them all
    }
    return text;
  }();
  return identity;
}

std::shared_ptr<const HostKernel> loadKernel(const std::string& path, llvm::StringRef name,
                                             HostBuild build, llvm::StringRef image,
                                             std::string& problem) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    problem = dlerror();
    return nullptr;
  }
  if (build == HostBuild::Emulated) {
    std::string entry = name.str() + "_emulated_entry";
    if (!dlsym(library, entry.c_str())) {
      problem = fmt::format("no symbol {}", entry);
      dlclose(library);
      return nullptr;
    }
    return std::make_shared<HostKernel>(name.str(), library, nullptr, image.str());
  }
  std::string symbol = name.str() + "_host_fast_block";
  void* fast = dlsym(library, symbol.c_str());
  if (!fast) {
    problem = fmt::format("no symbol {}", symbol);
    dlclose(library);
    return nullptr;
  }
  return std::make_shared<HostKernel>(name.str(), library,
                                      reinterpret_cast<HostKernel::FastBlockFunction>(fast));
}

} // namespace

void* HostKernel::symbol(llvm::StringRef name) const {
  return dlsym(library_, name.str().c_str());
}

const void* HostKernel::loadAddress() const {
  Dl_info info{};
  void* any = dlsym(library_, (name_ + "_emulated_entry").c_str());
  if (!any)
    any = dlsym(library_, (name_ + "_host_fast_block").c_str());
  return any && dladdr(any, &info) ? info.dli_fbase : nullptr;
}

std::string HostKernelCache::compilerCommand() {
  const char* compiler = std::getenv("WIDEFUSE_HOST_CXX");
  return compiler && *compiler ? compiler : "c++";
}

HostKernelCache::HostKernelCache(KernelCacheOptions options)
    : store_(options, "host", ".wfhost", {"host kernel cache record", "rebuilding"}) {
  if (store_.enabled())
    prelude_ = std::make_unique<HostPrecompiledPrelude>(store_.directory());
}

HostKernelCache::~HostKernelCache() = default;

void HostKernelCache::preparePrelude() {
  if (!prelude_)
    return;
  try {
    prelude_->prepare(compilerCommand(), kFlags, compilerIdentity() + hostCpuIdentity());
  } catch (const Error&) {
    // No compiler: the first kernel's compile says so, with the fix.
  }
}

HostKernelCache& HostKernelCache::global() {
  static HostKernelCache* cache = new HostKernelCache(); // never destroyed: see HostKernel
  return *cache;
}

bool HostKernelCache::diskEnabled() const {
  return store_.enabled();
}

HostKernelCache::CompileAttempt HostKernelCache::compileUnit(llvm::StringRef unit,
                                                             llvm::StringRef kernelName,
                                                             llvm::StringRef flags,
                                                             HostBuild build) {
  std::string reason;
  CompileAttempt attempt;
  attempt.sourcePath = writeScratchFile(kernelName, "cpp", unit, reason);
  if (attempt.sourcePath.empty())
    fail("host backend: cannot write the source of kernel '{}' ({}): free space in the "
         "temporary directory or set TMPDIR to another one",
         kernelName.str(), reason);
  std::string base = attempt.sourcePath.substr(0, attempt.sourcePath.size() - 4); // no ".cpp"
  attempt.object = base + ".so";
  std::string log = base + ".log";
  std::string objectFile = base + ".o";
  std::string command =
      build == HostBuild::Emulated
          ? fmt::format(
                "{0} {1} -c -o '{2}' '{3}' >'{4}' 2>&1 && {0} -shared -o '{5}' '{2}' >>'{4}' 2>&1",
                compilerCommand(), flags.str(), objectFile, attempt.sourcePath, log, attempt.object)
          : fmt::format("{} {} -shared -o '{}' '{}' >'{}' 2>&1", compilerCommand(), flags.str(),
                        attempt.object, attempt.sourcePath, log);
  attempt.status = runCommand(command);
  attempt.output = readFile(log);
  std::error_code ignored;
  fs::remove(log, ignored);
  fs::remove(objectFile, ignored);
  if (attempt.status != 0)
    fs::remove(attempt.object, ignored);
  return attempt;
}

std::string HostKernelCache::buildSharedObject(llvm::StringRef source, llvm::StringRef kernelName,
                                               HostBuild build) {
  HostPrecompiledPrelude::Unit unit =
      build == HostBuild::Emulated
          ? HostPrecompiledPrelude::Unit{emulationPrelude().str() + "\n" + source.str(), ""}
      : prelude_ ? prelude_->translationUnit(source, compilerCommand(), kFlags,
                                             compilerIdentity() + hostCpuIdentity())
                 : HostPrecompiledPrelude::Unit{hostPrelude().str() + "\n" + source.str(), ""};
  CompileAttempt attempt = compileUnit(unit.text, kernelName, buildFlags(build), build);
  std::error_code ignored;
  if (attempt.status != 0 && !unit.header.empty()) {
    // The precompiled prelude is only a speed-up: compile the plain text, and stop using it
    // when that works (GCC stops on a truncated .gch; a compiler may not read its own).
    fs::remove(attempt.sourcePath, ignored);
    bool namedHeader = llvm::StringRef(attempt.output).contains("precompiled header");
    attempt = compileUnit(hostPrelude().str() + "\n" + source.str(), kernelName, kFlags);
    if (attempt.status == 0)
      prelude_->discard(unit.header, namedHeader);
  }
  if (attempt.status != 0)
    fail("host backend: '{}' failed to compile kernel '{}' ({}):\n{}\nsource: {}\nThe generated "
         "code is C++17 that g++ and clang++ build: check that '{}' is a working C++17 compiler "
         "or set WIDEFUSE_HOST_CXX to one; if it is, this is a widefuse bug: please report it "
         "with the source file.",
         compilerCommand(), kernelName.str(),
         attempt.status == -1 ? std::string("it did not exit normally")
                              : fmt::format("exit status {}", attempt.status),
         attempt.output, attempt.sourcePath, compilerCommand());
  fs::remove(attempt.sourcePath, ignored);
  return attempt.object;
}

std::shared_ptr<const HostKernel>
HostKernelCache::loadImage(llvm::StringRef image, llvm::StringRef kernelName, HostBuild build,
                           const std::string& stem, std::string& problem) {
  // A private copy under a name used once: the process never maps the cache record itself, so
  // another process rewriting or truncating it cannot pull code from under running kernels.
  std::string copy = writeScratchFile(stem, "so", image, problem);
  if (copy.empty())
    return nullptr;
  std::shared_ptr<const HostKernel> kernel = loadKernel(copy, kernelName, build, image, problem);
  std::error_code ignored;
  fs::remove(copy, ignored); // loaded (or not): the mapping outlives the file
  return kernel;
}

std::shared_ptr<const HostKernel> HostKernelCache::loadRecord(const std::string& keyMaterial,
                                                              llvm::StringRef kernelName,
                                                              HostBuild build) {
  std::optional<KernelImage> record = store_.load(keyMaterial);
  if (!record)
    return nullptr;
  std::string problem;
  std::shared_ptr<const HostKernel> kernel =
      loadImage(llvm::StringRef(record->image.data(), record->image.size()), kernelName, build,
                recordStem(keyMaterial), problem);
  if (!kernel)
    store_.warnUnusable(keyMaterial, problem);
  return kernel;
}

void HostKernelCache::storeRecord(const std::string& keyMaterial, llvm::StringRef kernelName,
                                  llvm::StringRef image) {
  if (image.empty())
    return;
  KernelImage record;
  record.name = kernelName.str();
  record.target = "host";
  record.image.assign(image.begin(), image.end());
  store_.store(keyMaterial, record);
}

std::shared_ptr<const HostKernel> HostKernelCache::buildAndStore(const std::string& keyMaterial,
                                                                 llvm::StringRef source,
                                                                 llvm::StringRef kernelName,
                                                                 HostBuild build) {
  std::string object = buildSharedObject(source, kernelName, build);
  auto removeObject = llvm::make_scope_exit([&] {
    std::error_code ignored;
    fs::remove(object, ignored); // loaded: the mapping outlives the file
  });
  std::string problem;
  std::string image = readFile(object);
  std::shared_ptr<const HostKernel> kernel = loadKernel(object, kernelName, build, image, problem);
  if (!kernel)
    fail("host backend: the shared object built for kernel '{}' does not load: {}",
         kernelName.str(), problem);
  storeRecord(keyMaterial, kernelName, image);
  return kernel;
}

std::shared_ptr<const HostKernel> HostKernelCache::loadOrBuild(const std::string& keyMaterial,
                                                               llvm::StringRef source,
                                                               llvm::StringRef kernelName,
                                                               HostBuild build) {
  {
    // One thread builds a key at a time; the others wait and share its kernel (or, when its
    // build failed, try in turn and report their own error).
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      if (auto found = kernels_.find(keyMaterial); found != kernels_.end())
        return found->second;
      if (building_.insert(keyMaterial).second)
        break;
      built_.wait(lock);
    }
  }
  auto finished = llvm::make_scope_exit([&] {
    std::lock_guard<std::mutex> lock(mutex_);
    building_.erase(keyMaterial);
    built_.notify_all();
  });
  std::shared_ptr<const HostKernel> kernel = loadRecord(keyMaterial, kernelName, build);
  if (!kernel)
    kernel = buildAndStore(keyMaterial, source, kernelName, build);
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.try_emplace(keyMaterial, std::move(kernel)).first->second;
}

// ---- The cache key. ----

std::shared_ptr<const HostKernel>
HostKernelCache::compile(llvm::StringRef source, llvm::StringRef kernelName, HostBuild build) {
  // The command as well as its --version: a wrapper script (WIDEFUSE_HOST_CXX) that adds or
  // drops flags reports the compiler's version but builds another kernel.
  std::string command = compilerCommand(), identity = compilerIdentity(), cpu = hostCpuIdentity();
  bool native = build == HostBuild::Native;
  std::string key =
      keyMaterial({native ? "widefuse host kernel cache key" : "widefuse emulated kernel cache key",
                   command, identity, cpu, buildFlags(build),
                   native ? hostPrelude() : emulationPrelude(), kernelName, source});
  return loadOrBuild(key, source, kernelName, build);
}

} // namespace widefuse
