// The host backend's compiler and its disk cache under faults: damaged records, a record of
// another compiler, a cache directory that cannot be written or fills up, two threads and two
// processes building one kernel at once, a missing or failing host compiler. Each gives the
// right kernel (rebuilt, or without the disk cache after one warning) or a widefuse::Error
// that says what is wrong and how to fix it; never a crash or a wrong kernel.

#include "runtime/host/host_compiler.h"

#include "codegen/prelude.h"

#include "tests/runtime/runtime_test_support.h"
#include "tests/support/error_of.h"
#include "tests/support/file_contents.h"
#include "tests/support/temp_dir.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>

#include <signal.h>
#include <sys/resource.h>

using namespace widefuse;
using widefuse::testing::contains;
using widefuse::testing::errorOf;
using widefuse::testing::hostKernelSource;
using widefuse::testing::kHostKernelMagic;
using widefuse::testing::readFile;
using widefuse::testing::ScopedEnvironment;
using widefuse::testing::writeFile;

namespace fs = std::filesystem;

namespace {

/// What block 3 of `kernel` stores.
int runBlockThree(const HostKernel& kernel) {
  int out[4] = {0, 0, 0, 0};
  int* parameters = out;
  kernel.runBlockFast(&parameters, 3, 4);
  return out[3];
}

KernelCacheOptions onDisk(const std::string& directory) {
  KernelCacheOptions options;
  options.directory = directory;
  return options;
}

/// The cache records under `directory`/host (temporary and probe files are not records).
std::vector<std::string> records(const std::string& directory) {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(fs::path(directory) / "host", error))
    if (entry.is_regular_file())
      found.push_back(entry.path().string());
  std::sort(found.begin(), found.end());
  return found;
}

size_t lines(const std::string& text) {
  return std::count(text.begin(), text.end(), '\n');
}

/// Builds the test kernel into one cache, puts its record changed by `damage` into a second
/// cache directory (so that no library this process has loaded shares its path), and checks
/// that a cache there warns once, rebuilds, gives the right kernel and repairs the record.
void expectDamagedRecordIsRebuilt(const std::function<std::string(std::string)>& damage,
                                  const std::string& warning) {
  TempDir origin, directory;
  std::string source = hostKernelSource("damaged");
  {
    HostKernelCache first(onDisk(origin.path()));
    EXPECT_EQ(runBlockThree(*first.compile(source, "damaged")), kHostKernelMagic + 3);
  }
  std::vector<std::string> built = records(origin.path());
  ASSERT_EQ(built.size(), 1u);
  fs::create_directories(directory.file("host"));
  std::string record = (fs::path(directory.file("host")) / fs::path(built[0]).filename()).string();
  writeFile(record, damage(readFile(built[0])));

  HostKernelCache second(onDisk(directory.path()));
  ::testing::internal::CaptureStderr();
  std::shared_ptr<const HostKernel> kernel = second.compile(source, "damaged");
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(runBlockThree(*kernel), kHostKernelMagic + 3);
  EXPECT_TRUE(contains(warnings, "widefuse: warning: host kernel cache record " + record))
      << warnings;
  EXPECT_TRUE(contains(warnings, warning)) << warnings;
  EXPECT_EQ(lines(warnings), 1u) << warnings;

  // The record was replaced by a good one: a third cache loads it without a word.
  HostKernelCache third(onDisk(directory.path()));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runBlockThree(*third.compile(source, "damaged")), kHostKernelMagic + 3);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(records(directory.path()), std::vector<std::string>{record});
}

TEST(HostKernelCache, ASecondCacheLoadsTheRecordFromDisk) {
  TempDir directory;
  std::string source = hostKernelSource("reused");
  {
    HostKernelCache first(onDisk(directory.path()));
    EXPECT_EQ(runBlockThree(*first.compile(source, "reused")), kHostKernelMagic + 3);
  }
  std::vector<std::string> built = records(directory.path());
  ASSERT_EQ(built.size(), 1u);
  fs::file_time_type written = fs::last_write_time(built[0]);
  HostKernelCache second(onDisk(directory.path()));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(runBlockThree(*second.compile(source, "reused")), kHostKernelMagic + 3);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(fs::last_write_time(built[0]), written); // loaded, not rebuilt
  EXPECT_EQ(records(directory.path()), built);       // and nothing else left behind
}

TEST(HostKernelCache, ATruncatedRecordIsRebuilt) {
  expectDamagedRecordIsRebuilt(
      [](std::string record) { return record.substr(0, record.size() / 2); }, "rebuilding");
}

TEST(HostKernelCache, AnEmptyRecordIsRebuilt) {
  expectDamagedRecordIsRebuilt([](std::string) { return std::string(); }, "rebuilding");
}

TEST(HostKernelCache, ARecordWhoseCodeWasAlteredIsRebuiltNotRun) {
  // The stored constant changed in the machine code: the file still loads, and without a
  // checksum it would run and store the wrong value.
  expectDamagedRecordIsRebuilt(
      [](std::string record) {
        int magic = kHostKernelMagic;
        std::string pattern(reinterpret_cast<const char*>(&magic), sizeof magic);
        size_t at = record.find(pattern);
        EXPECT_NE(at, std::string::npos) << "the constant is not in the machine code";
        if (at != std::string::npos)
          record[at] ^= 0x01;
        return record;
      },
      "rebuilding");
}

TEST(HostKernelCache, ARecordTruncatedInPlaceWhileItsKernelRunsHarmsNothing) {
  // Another process truncates the record in place (not by renaming a new file over it) while
  // this one runs the kernel: a kernel mapped from the record itself would die of SIGBUS.
  TempDir directory;
  std::string source = hostKernelSource("inplace");
  {
    HostKernelCache first(onDisk(directory.path()));
    first.compile(source, "inplace");
  }
  HostKernelCache second(onDisk(directory.path()));
  std::shared_ptr<const HostKernel> kernel = second.compile(source, "inplace"); // from disk
  std::vector<std::string> built = records(directory.path());
  ASSERT_EQ(built.size(), 1u);
  writeFile(built[0], "");
  EXPECT_EQ(runBlockThree(*kernel), kHostKernelMagic + 3);
}

/// A shell script at `path` standing in for a compiler: `body` runs for compilations;
/// `--version` prints `version`.
void writeCompiler(const std::string& path, const std::string& version, const std::string& body) {
  writeFile(path, fmt::format("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{}'; exit 0; fi\n"
                              "{}\n",
                              version, body));
  fs::permissions(path, fs::perms::owner_all);
}

TEST(HostKernelCache, ARecordOfAnotherCompilerIsRebuilt) {
  // Two "compilers" that build different code from one source (the second adds 1000) and
  // report different versions. The second's record put where the first's belongs must be
  // recognised as foreign, not run.
  TempDir directory;
  std::string compiler = fmt::format("exec {} \"$@\"", HostKernelCache::compilerCommand());
  writeCompiler(directory.file("cxx-a"), "test compiler A 1.0", compiler);
  writeCompiler(
      directory.file("cxx-b"), "test compiler B 2.0",
      fmt::format("exec {} -DWF_TEST_EXTRA=1000 \"$@\"", HostKernelCache::compilerCommand()));
  std::string source = hostKernelSource("foreign");
  std::string cacheA = directory.file("a"), cacheB = directory.file("b");
  {
    ScopedEnvironment cxx("WIDEFUSE_HOST_CXX", directory.file("cxx-b"));
    HostKernelCache cache(onDisk(cacheB));
    EXPECT_EQ(runBlockThree(*cache.compile(source, "foreign")), kHostKernelMagic + 1000 + 3);
  }
  ScopedEnvironment cxx("WIDEFUSE_HOST_CXX", directory.file("cxx-a"));
  {
    HostKernelCache cache(onDisk(cacheA));
    EXPECT_EQ(runBlockThree(*cache.compile(source, "foreign")), kHostKernelMagic + 3);
  }
  std::vector<std::string> a = records(cacheA), b = records(cacheB);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NE(fs::path(a[0]).filename(), fs::path(b[0]).filename()); // the compiler is in the key
  // B's record under A's name, in a third directory (no library loaded here has its path).
  std::string cacheC = directory.file("c");
  fs::create_directories(fs::path(cacheC) / "host");
  fs::copy_file(b[0], fs::path(cacheC) / "host" / fs::path(a[0]).filename());
  HostKernelCache cache(onDisk(cacheC));
  ::testing::internal::CaptureStderr();
  std::shared_ptr<const HostKernel> kernel = cache.compile(source, "foreign");
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(runBlockThree(*kernel), kHostKernelMagic + 3);
  EXPECT_TRUE(contains(warnings, "belongs to another key")) << warnings;
  EXPECT_EQ(lines(warnings), 1u) << warnings;
}

TEST(HostKernelCache, AWrapperThatChangesTheFlagsIsAnotherCompiler) {
  // Two wrapper scripts around one compiler report one version, but the second adds a flag
  // that changes the code: sharing one cache directory, each must get its own kernel.
  TempDir directory;
  writeCompiler(directory.file("cxx-plain"), "test compiler 1.0",
                fmt::format("exec {} \"$@\"", HostKernelCache::compilerCommand()));
  writeCompiler(
      directory.file("cxx-extra"), "test compiler 1.0",
      fmt::format("exec {} -DWF_TEST_EXTRA=1000 \"$@\"", HostKernelCache::compilerCommand()));
  std::string source = hostKernelSource("wrapped");
  std::string cache = directory.file("cache");
  {
    ScopedEnvironment cxx("WIDEFUSE_HOST_CXX", directory.file("cxx-plain"));
    HostKernelCache plain(onDisk(cache));
    EXPECT_EQ(runBlockThree(*plain.compile(source, "wrapped")), kHostKernelMagic + 3);
  }
  ScopedEnvironment cxx("WIDEFUSE_HOST_CXX", directory.file("cxx-extra"));
  HostKernelCache extra(onDisk(cache));
  EXPECT_EQ(runBlockThree(*extra.compile(source, "wrapped")), kHostKernelMagic + 1000 + 3);
  EXPECT_EQ(records(cache).size(), 2u);
}

/// A test kernel that starts as generated kernels do: comment lines, then the device prelude.
std::string preludeKernelSource(const std::string& name, int addend = 0) {
  return "// a kernel as codegen writes it\n" + devicePrelude().str() +
         hostKernelSource(name, addend);
}

/// The files under `directory`/host whose names start with "prelude-".
std::vector<std::string> preludeFiles(const std::string& directory) {
  std::vector<std::string> found;
  for (const std::string& file : records(directory))
    if (llvm::StringRef(fs::path(file).filename().string()).startswith("prelude-"))
      found.push_back(fs::path(file).filename().string());
  return found;
}

/// Whether the host compiler is GCC, whose precompiled headers these tests check (clang reads
/// the header's text instead, which is also correct but not what they look for).
bool hostCompilerIsGcc() {
  std::string command = HostKernelCache::compilerCommand() + " --version 2>&1";
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[256];
    while (size_t read = std::fread(buffer, 1, sizeof buffer, pipe))
      output.append(buffer, read);
    pclose(pipe);
  }
  return contains(output, "Free Software Foundation") && !contains(output, "clang");
}

/// Writes `<directory>/cxx`, a compiler that logs to the returned file, for each kernel it
/// compiles, whether the translation unit includes the header instead of holding the prelude's
/// text, and whether GCC read the .gch (-H marks a precompiled header it used with '!'); and
/// "header" for each header it builds.
std::string writeLoggingCompiler(const TempDir& directory) {
  std::string log = directory.file("log");
  writeCompiler(directory.file("cxx"), "test compiler 1.0",
                fmt::format("for a; do last=$a; done\n"
                            "case \"$*\" in *c++-header*) echo header >>'{0}'; exec {1} \"$@\";; "
                            "esac\n"
                            "if grep -q '#include \".*/prelude-' \"$last\"; then echo included "
                            ">>'{0}'; else echo plain >>'{0}'; fi\n"
                            "{1} -H \"$@\" 2>'{0}.h'; status=$?\n"
                            "grep -q '^! .*prelude-.*[.]gch' '{0}.h' && echo gch >>'{0}'\n"
                            "exit $status",
                            log, HostKernelCache::compilerCommand()));
  return log;
}

/// A scratch directory, the logging compiler (writeLoggingCompiler) as the host compiler while
/// it lives, and a cache directory.
struct LoggedCompiler {
  TempDir directory;
  std::string log = writeLoggingCompiler(directory);
  ScopedEnvironment cxx{"WIDEFUSE_HOST_CXX", directory.file("cxx")};
  std::string cache = directory.file("cache");
};

TEST(HostPrecompiledPrelude, GeneratedKernelsIncludeThePreludeBuiltOncePerDirectory) {
  if (!hostCompilerIsGcc())
    GTEST_SKIP() << "the host compiler is not GCC";
  LoggedCompiler setup;
  const std::string &log = setup.log, &cache = setup.cache;
  {
    HostKernelCache first(onDisk(cache));
    EXPECT_EQ(runBlockThree(*first.compile(preludeKernelSource("pch_a"), "pch_a")),
              kHostKernelMagic + 3);
    EXPECT_EQ(runBlockThree(*first.compile(preludeKernelSource("pch_b", 5), "pch_b")),
              kHostKernelMagic + 5 + 3);
  }
  HostKernelCache second(onDisk(cache)); // another process, in effect: the files are reused
  EXPECT_EQ(runBlockThree(*second.compile(preludeKernelSource("pch_c", 7), "pch_c")),
            kHostKernelMagic + 7 + 3);
  // The first kernel compiles from the plain text while the header builds beside it (the two
  // lines in either order); the next one waits for the header and reads the .gch.
  std::string logged = readFile(log);
  std::string firstTwo = logged.substr(0, logged.find('\n', logged.find('\n') + 1) + 1);
  EXPECT_TRUE(firstTwo == "header\nplain\n" || firstTwo == "plain\nheader\n") << logged;
  EXPECT_EQ(logged.substr(firstTwo.size()), "included\ngch\nincluded\ngch\n") << logged;
  std::vector<std::string> files = preludeFiles(cache);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_TRUE(llvm::StringRef(files[0]).endswith(".h")) << files[0];
  EXPECT_EQ(files[1], files[0] + ".gch");
  // A test kernel without the prelude compiles as it is.
  EXPECT_EQ(runBlockThree(*second.compile(hostKernelSource("pch_plain"), "pch_plain")),
            kHostKernelMagic + 3);
  EXPECT_TRUE(llvm::StringRef(readFile(log)).endswith("included\ngch\nplain\n")) << readFile(log);
}

TEST(HostPrecompiledPrelude, PreparedAheadTheHeaderIsBuiltOnceAndNoKernelWaitsForIt) {
  if (!hostCompilerIsGcc())
    GTEST_SKIP() << "the host compiler is not GCC";
  LoggedCompiler setup;
  const std::string &log = setup.log, &cache = setup.cache;
  {
    HostKernelCache first(onDisk(cache));
    first.preparePrelude(); // builds in the background; the destructor waits for it
    first.preparePrelude(); // already building: nothing more
  }
  EXPECT_EQ(readFile(log), "header\n");
  EXPECT_EQ(preludeFiles(cache).size(), 2u);
  HostKernelCache second(onDisk(cache));
  second.preparePrelude(); // there already
  EXPECT_EQ(runBlockThree(*second.compile(preludeKernelSource("ahead_a"), "ahead_a")),
            kHostKernelMagic + 3);
  EXPECT_EQ(readFile(log), "header\nincluded\ngch\n");

  // Prepared just before the first kernel: that kernel does not wait for the header (it reads
  // the plain text when the header is still building, or the .gch when it is done), the header
  // builds once, and the next kernel reads it.
  std::string other = setup.directory.file("other");
  writeFile(log, "");
  HostKernelCache third(onDisk(other));
  third.preparePrelude();
  EXPECT_EQ(runBlockThree(*third.compile(preludeKernelSource("ahead_b", 2), "ahead_b")),
            kHostKernelMagic + 2 + 3);
  EXPECT_EQ(runBlockThree(*third.compile(preludeKernelSource("ahead_c", 4), "ahead_c")),
            kHostKernelMagic + 4 + 3);
  std::string logged = readFile(log);
  llvm::SmallVector<llvm::StringRef, 8> entries;
  llvm::StringRef(logged).split(entries, '\n', -1, /*KeepEmpty=*/false);
  EXPECT_EQ(llvm::count(entries, "header"), 1) << logged;
  llvm::erase_value(entries, "header"); // its line comes in any order with the first kernel's
  std::string kernels = llvm::join(entries, " ");
  EXPECT_TRUE(kernels == "plain included gch" || kernels == "included gch included gch") << logged;
}

TEST(HostPrecompiledPrelude, ATruncatedHeaderIsDroppedAndKernelsStillCompile) {
  if (!hostCompilerIsGcc())
    GTEST_SKIP() << "the host compiler is not GCC";
  // GCC stops with "while reading precompiled header" on a truncated .gch: the kernel is
  // compiled from the plain text instead, the .gch is removed, and nothing is said.
  TempDir directory;
  std::string cache = directory.file("cache");
  {
    HostKernelCache first(onDisk(cache));
    first.compile(preludeKernelSource("truncated_a"), "truncated_a");
  }
  std::vector<std::string> files = preludeFiles(cache);
  ASSERT_EQ(files.size(), 2u);
  std::string gch = (fs::path(cache) / "host" / files[1]).string();
  writeFile(gch, readFile(gch).substr(0, 1000));
  HostKernelCache second(onDisk(cache));
  ::testing::internal::CaptureStderr();
  std::shared_ptr<const HostKernel> kernel =
      second.compile(preludeKernelSource("truncated_b", 9), "truncated_b");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(runBlockThree(*kernel), kHostKernelMagic + 9 + 3);
  EXPECT_FALSE(fs::exists(gch));
}

TEST(HostPrecompiledPrelude, AMemoryOnlyCacheWritesNoHeader) {
  TempDir directory;
  ScopedEnvironment home("WIDEFUSE_CACHE_DIR", directory.path());
  KernelCacheOptions options;
  options.useDisk = false;
  HostKernelCache cache(options);
  EXPECT_EQ(runBlockThree(*cache.compile(preludeKernelSource("memory_only"), "memory_only")),
            kHostKernelMagic + 3);
  EXPECT_TRUE(fs::is_empty(directory.path()));
}

TEST(HostKernelCache, AnUnwritableDirectoryWarnsOnceAndBuildsWithoutIt) {
  // /proc/self exists, and no process, root included, can create files in it.
  KernelCacheOptions options = onDisk("/proc/self");
  ::testing::internal::CaptureStderr();
  HostKernelCache cache(options);
  std::shared_ptr<const HostKernel> first = cache.compile(hostKernelSource("ro", 1), "ro");
  std::shared_ptr<const HostKernel> second = cache.compile(hostKernelSource("ro", 2), "ro");
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(runBlockThree(*first), kHostKernelMagic + 1 + 3);
  EXPECT_EQ(runBlockThree(*second), kHostKernelMagic + 2 + 3);
  EXPECT_TRUE(contains(warnings, "widefuse: warning: kernel cache directory '/proc/self/host' is "
                                 "not writable ("))
      << warnings;
  EXPECT_TRUE(contains(warnings, "caching in memory only")) << warnings;
  EXPECT_EQ(lines(warnings), 1u) << warnings;
}

TEST(HostKernelCache, ADirectoryWhoseWritesStartFailingWarnsOnceAndBuildsWithoutIt) {
  // The cache directory goes away after the cache has checked it, and a file takes its place
  // (as when a disk fills up or is remounted read-only, every write into it now fails).
  TempDir directory;
  HostKernelCache cache(onDisk(directory.path()));
  fs::remove_all(directory.file("host"));
  writeFile(directory.file("host"), "not a directory");
  ::testing::internal::CaptureStderr();
  std::shared_ptr<const HostKernel> first = cache.compile(hostKernelSource("gone", 1), "gone");
  std::shared_ptr<const HostKernel> second = cache.compile(hostKernelSource("gone", 2), "gone");
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(runBlockThree(*first), kHostKernelMagic + 1 + 3);
  EXPECT_EQ(runBlockThree(*second), kHostKernelMagic + 2 + 3);
  EXPECT_TRUE(contains(warnings, "widefuse: warning: kernel cache directory '" +
                                     directory.file("host") + "' is not writable ("))
      << warnings;
  EXPECT_EQ(lines(warnings), 1u) << warnings;
}

/// In a child process: caps the size of every file written (this process's and the
/// compiler's) at 1 KiB, compiles a kernel into `directory`, and exits 0 when that worked,
/// 3 after printing the widefuse::Error it threw.
[[noreturn]] void compileWithFilesCappedAt1KiB(const std::string& directory) {
  signal(SIGXFSZ, SIG_IGN); // report the failed write instead of dying of it
  rlimit limit{1024, 1024};
  setrlimit(RLIMIT_FSIZE, &limit);
  HostKernelCache cache(onDisk(directory));
  try {
    cache.compile(hostKernelSource("full"), "full");
  } catch (const Error& error) {
    fmt::print(stderr, "error: {}\n", error.what());
    std::exit(3);
  }
  std::exit(0);
}

TEST(HostKernelCacheDeathTest, AFullDiskIsAClearErrorNotACrash) {
  // RLIMIT_FSIZE makes every write past 1 KiB fail (EFBIG, "File too large"), as on a full
  // disk: no kernel can be built anywhere, and compile() must say which write failed.
  TempDir directory;
  EXPECT_EXIT(compileWithFilesCappedAt1KiB(directory.path()), ::testing::ExitedWithCode(3),
              "error: host backend: cannot write the source of kernel 'full' .*File too large");
}

TEST(HostKernelCache, TwoThreadsBuildingOneKernelAtOnceBothGetIt) {
  TempDir directory;
  HostKernelCache cache(onDisk(directory.path()));
  constexpr int kThreads = 6;
  std::vector<std::shared_ptr<const HostKernel>> kernels(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        kernels[t] = cache.compile(hostKernelSource("together"), "together");
      } catch (const std::exception& error) {
        failures[t] = error.what();
      }
    });
  for (std::thread& thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(failures[t], "") << "thread " << t;
    EXPECT_EQ(kernels[t], kernels[0]) << "thread " << t;
  }
  EXPECT_EQ(runBlockThree(*kernels[0]), kHostKernelMagic + 3);
  EXPECT_EQ(records(directory.path()).size(), 1u);
}

TEST(HostKernelCache, AMissingCompilerNamesTheVariableAndTheFix) {
  ScopedEnvironment cxx("WIDEFUSE_HOST_CXX", "/nonexistent/bin/c++");
  TempDir directory;
  HostKernelCache cache(onDisk(directory.path()));
  std::string message = errorOf([&] { cache.compile(hostKernelSource("nocxx"), "nocxx"); });
  EXPECT_TRUE(contains(message, "no host C++ compiler")) << message;
  EXPECT_TRUE(contains(message, "'/nonexistent/bin/c++'")) << message;
  EXPECT_TRUE(contains(message, "WIDEFUSE_HOST_CXX")) << message;
  EXPECT_TRUE(contains(message, "install g++")) << message;
}

TEST(HostKernelCache, ACompilerFailingOnTheGeneratedCodeIsAnErrorWithItsOutput) {
  TempDir directory;
  writeCompiler(directory.file("cxx"), "failing compiler 1.0",
                "echo 'kernel.cpp:1:1: error: simulated failure' >&2; exit 1");
  ScopedEnvironment cxx("WIDEFUSE_HOST_CXX", directory.file("cxx"));
  HostKernelCache cache(onDisk(directory.file("cache")));
  std::string message = errorOf([&] { cache.compile(hostKernelSource("broken"), "broken"); });
  EXPECT_TRUE(
      contains(message, "'" + directory.file("cxx") + "' failed to compile kernel 'broken'"))
      << message;
  EXPECT_TRUE(contains(message, "error: simulated failure")) << message;
  EXPECT_TRUE(contains(message, "WIDEFUSE_HOST_CXX")) << message;
  // The source is kept where the message says, for a bug report.
  size_t at = message.find("source: ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string path = message.substr(at + 8);
  path = path.substr(0, path.find_first_of(" \n)"));
  EXPECT_TRUE(contains(readFile(path), "broken_host_fast_block")) << path;
  fs::remove(path);
  EXPECT_TRUE(records(directory.file("cache")).empty());
}

} // namespace
