#include "runtime/cuda/cubin_cache.h"
#include "runtime/kernel_cache_record.h"

#include "tests/runtime/runtime_test_support.h"
#include "tests/support/error_of.h"
#include "tests/support/file_contents.h"
#include "tests/support/temp_dir.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace widefuse;
using widefuse::testing::addKernelSource;
using widefuse::testing::contains;
using widefuse::testing::errorOf;
using widefuse::testing::readFile;
using widefuse::testing::ScopedEnvironment;
using widefuse::testing::writeFile;

namespace {

KernelCacheOptions onDisk(const TempDir& directory) {
  KernelCacheOptions options;
  options.directory = directory.path();
  return options;
}

KernelCacheOptions inMemory() {
  KernelCacheOptions options;
  options.useDisk = false;
  return options;
}

void expectSameKernel(const KernelImage& a, const KernelImage& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.image, b.image);
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.stats.registers, b.stats.registers);
  EXPECT_EQ(a.stats.spillBytes(), b.stats.spillBytes());
  EXPECT_EQ(a.stats.stackBytes, b.stats.stackBytes);
  EXPECT_EQ(a.compileMilliseconds, b.compileMilliseconds);
}

TEST(CubinCache, MissThenMemoryHit) {
  CubinCache cache(inMemory());
  EXPECT_FALSE(cache.diskEnabled());
  EXPECT_EQ(cache.directory(), "");
  std::string source = addKernelSource("add_one");
  CacheResult first = cache.compile(source, "add_one", {});
  EXPECT_EQ(first.outcome, CacheOutcome::Miss);
  EXPECT_GT(first.kernel->stats.registers, 0);
  CacheResult second = cache.compile(source, "add_one", {});
  EXPECT_EQ(second.outcome, CacheOutcome::MemoryHit);
  EXPECT_EQ(second.kernel, first.kernel); // The very same object.
  EXPECT_EQ(cache.memoryRecords(), 1u);
}

TEST(CubinCache, EveryOptionIsPartOfTheKey) {
  CubinCache cache(inMemory());
  std::string source = addKernelSource("add_one");
  CompileOptions sm80;
  sm80.arch = "sm_80";
  CompileOptions noFmad;
  noFmad.fmad = false;
  EXPECT_EQ(cache.compile(source, "add_one", {}).outcome, CacheOutcome::Miss);
  EXPECT_EQ(cache.compile(source, "add_one", sm80).outcome, CacheOutcome::Miss);
  EXPECT_EQ(cache.compile(source, "add_one", noFmad).outcome, CacheOutcome::Miss);
  EXPECT_EQ(cache.compile(addKernelSource("add_one", 2), "add_one", {}).outcome,
            CacheOutcome::Miss);
  EXPECT_EQ(cache.compile(source, "add_one", sm80).kernel->target, "sm_80");
  EXPECT_EQ(cache.memoryRecords(), 4u);
}

TEST(CubinCache, SecondCacheLoadsFromDisk) {
  TempDir directory;
  std::string source = addKernelSource("add_one");
  std::shared_ptr<const KernelImage> compiled;
  {
    CubinCache cache(onDisk(directory));
    EXPECT_TRUE(cache.diskEnabled());
    EXPECT_EQ(cache.directory(), directory.path());
    CacheResult result = cache.compile(source, "add_one", {});
    EXPECT_EQ(result.outcome, CacheOutcome::Miss);
    compiled = result.kernel;
    EXPECT_TRUE(std::filesystem::exists(cache.recordPath(source, "add_one", {})));
  }
  CubinCache later(onDisk(directory));
  CacheResult loaded = later.compile(source, "add_one", {});
  EXPECT_EQ(loaded.outcome, CacheOutcome::DiskHit);
  expectSameKernel(*loaded.kernel, *compiled);
  EXPECT_EQ(later.compile(source, "add_one", {}).outcome, CacheOutcome::MemoryHit);
  // clearMemory() forgets the kernel but not the entry.
  later.clearMemory();
  EXPECT_EQ(later.compile(source, "add_one", {}).outcome, CacheOutcome::DiskHit);
  // Only entries are left behind: no temporary or probe files.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory.path())) {
    EXPECT_EQ(entry.path().extension(), ".wfkernel") << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

// Damages the entry of `source` as `damage` says, then checks that a fresh cache warns,
// recompiles, and leaves a valid entry behind.
void expectDamagedEntryIsRecompiled(const std::function<std::string(std::string)>& damage) {
  TempDir directory;
  std::string source = addKernelSource("add_one");
  CubinCache first(onDisk(directory));
  std::shared_ptr<const KernelImage> compiled = first.compile(source, "add_one", {}).kernel;
  std::string path = first.recordPath(source, "add_one", {});
  std::string entry = readFile(path);
  writeFile(path, damage(entry));

  CubinCache second(onDisk(directory));
  ::testing::internal::CaptureStderr();
  CacheResult result = second.compile(source, "add_one", {});
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(result.outcome, CacheOutcome::Miss);
  EXPECT_TRUE(contains(warnings, "widefuse: warning: kernel cache record " + path +
                                     " is corrupt; recompiling"))
      << warnings;
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
  EXPECT_EQ(result.kernel->image, compiled->image);

  // The entry was overwritten with a valid one.
  CubinCache third(onDisk(directory));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(third.compile(source, "add_one", {}).outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(CubinCache, TruncatedEntryIsRecompiled) {
  expectDamagedEntryIsRecompiled(
      [](std::string entry) { return entry.substr(0, entry.size() / 2); });
}

TEST(CubinCache, EmptyEntryIsRecompiled) {
  expectDamagedEntryIsRecompiled([](std::string) { return std::string(); });
}

TEST(CubinCache, FlippedByteIsRecompiled) {
  expectDamagedEntryIsRecompiled([](std::string entry) {
    entry[entry.size() / 2] ^= 0x01;
    return entry;
  });
}

TEST(CubinCache, BadMagicIsRecompiled) {
  expectDamagedEntryIsRecompiled([](std::string entry) {
    entry[0] = 'X';
    return entry;
  });
}

TEST(CubinCache, EntryOfAnotherKernelIsRecompiled) {
  TempDir directory;
  CubinCache cache(onDisk(directory));
  std::string one = addKernelSource("add_one", 1);
  std::string two = addKernelSource("add_two", 2);
  cache.compile(one, "add_one", {});
  // Put add_one's (valid) entry where add_two's belongs.
  std::filesystem::copy_file(cache.recordPath(one, "add_one", {}),
                             cache.recordPath(two, "add_two", {}));
  ::testing::internal::CaptureStderr();
  CacheResult result = cache.compile(two, "add_two", {});
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(result.outcome, CacheOutcome::Miss);
  EXPECT_EQ(result.kernel->name, "add_two");
  EXPECT_TRUE(contains(result.kernel->ptx, ".entry add_two(")) << result.kernel->ptx;
  EXPECT_TRUE(contains(warnings, "is corrupt; recompiling")) << warnings;
}

TEST(CubinCache, UnwritableDirectoryCachesInMemory) {
  TempDir directory;
  // A regular file where a parent directory should be: unwritable even for root.
  writeFile(directory.file("blocker"), "not a directory");
  KernelCacheOptions options;
  options.directory = directory.file("blocker") + "/cache";
  ::testing::internal::CaptureStderr();
  CubinCache cache(options);
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.diskEnabled());
  EXPECT_TRUE(contains(warnings, "widefuse: warning: kernel cache directory '" +
                                     *options.directory + "' is not writable ("))
      << warnings;
  EXPECT_TRUE(contains(warnings, "); caching in memory only")) << warnings;
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;

  ::testing::internal::CaptureStderr();
  std::string source = addKernelSource("add_one");
  EXPECT_EQ(cache.compile(source, "add_one", {}).outcome, CacheOutcome::Miss);
  EXPECT_EQ(cache.compile(source, "add_one", {}).outcome, CacheOutcome::MemoryHit);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), ""); // Warned once, at construction.
}

TEST(CubinCache, RecordOfAnotherNvrtcVersionIsRecompiled) {
  // A valid record of this very kernel, but keyed for another NVRTC (a toolkit upgrade, or a
  // cache shared between machines), found where this NVRTC's record belongs.
  TempDir directory;
  std::string source = addKernelSource("add_one");
  CubinCache cache(onDisk(directory));
  CacheResult compiled = cache.compile(source, "add_one", {});
  std::string path = cache.recordPath(source, "add_one", {});
  writeFile(path,
            encodeCacheRecord(kernelCacheKey(source, "add_one", {}, "11.8"), *compiled.kernel));
  CubinCache later(onDisk(directory));
  ::testing::internal::CaptureStderr();
  CacheResult result = later.compile(source, "add_one", {});
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(result.outcome, CacheOutcome::Miss);
  EXPECT_TRUE(contains(warnings, "kernel cache record " + path +
                                     " is corrupt; recompiling (it "
                                     "belongs to another key)"))
      << warnings;
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
  EXPECT_EQ(result.kernel->image, compiled.kernel->image);
}

TEST(CubinCache, ExistingDirectoryNobodyCanWriteCachesInMemory) {
  // /proc/self exists, and no process, root included, can create files in it.
  KernelCacheOptions options;
  options.directory = "/proc/self";
  ::testing::internal::CaptureStderr();
  CubinCache cache(options);
  std::string source = addKernelSource("add_one");
  EXPECT_EQ(cache.compile(source, "add_one", {}).outcome, CacheOutcome::Miss);
  EXPECT_EQ(cache.compile(source, "add_one", {}).outcome, CacheOutcome::MemoryHit);
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache.diskEnabled());
  EXPECT_TRUE(contains(warnings, "kernel cache directory '/proc/self' is not writable ("))
      << warnings;
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
}

TEST(CubinCache, DirectoryWhoseWritesStartFailingWarnsOnceAndCachesInMemory) {
  // The directory is replaced by a file after the cache checked it: every write now fails.
  TempDir directory;
  std::string cacheDirectory = directory.file("cache");
  KernelCacheOptions options;
  options.directory = cacheDirectory;
  CubinCache cache(options);
  std::filesystem::remove_all(cacheDirectory);
  writeFile(cacheDirectory, "not a directory");
  ::testing::internal::CaptureStderr();
  CacheResult one = cache.compile(addKernelSource("add_one", 1), "add_one", {});
  CacheResult two = cache.compile(addKernelSource("add_two", 2), "add_two", {});
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(one.kernel->ptx, ".entry add_one(")) << one.kernel->ptx;
  EXPECT_TRUE(contains(two.kernel->ptx, ".entry add_two(")) << two.kernel->ptx;
  EXPECT_FALSE(cache.diskEnabled());
  EXPECT_TRUE(contains(warnings,
                       "kernel cache directory '" + cacheDirectory + "' is not writable (writing "))
      << warnings;
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1) << warnings;
}

/// In a child process: caps every file written at 1 KiB (a record is larger: the disk is
/// "full" once the probe file has passed), compiles two kernels, and exits 0 when both are
/// right, exactly one warning was printed and no partial file is left in `directory`.
[[noreturn]] void compileWithFilesCappedAt1KiB(const std::string& directory) {
  signal(SIGXFSZ, SIG_IGN); // report the failed write instead of dying of it
  rlimit limit{1024, 1024};
  setrlimit(RLIMIT_FSIZE, &limit);
  KernelCacheOptions options;
  options.directory = directory;
  CubinCache cache(options);
  // Standard error into a pipe (gtest's capture is taken by the death test itself).
  int saved = dup(2), captured[2];
  if (pipe(captured) != 0)
    std::exit(2);
  dup2(captured[1], 2);
  CacheResult one = cache.compile(addKernelSource("add_one", 1), "add_one", {});
  CacheResult two = cache.compile(addKernelSource("add_two", 2), "add_two", {});
  std::fflush(stderr);
  dup2(saved, 2);
  close(captured[1]);
  std::string warnings;
  char buffer[256];
  for (ssize_t read; (read = ::read(captured[0], buffer, sizeof buffer)) > 0;)
    warnings.append(buffer, size_t(read));
  fmt::print(stderr, "{}", warnings);
  bool right = contains(one.kernel->ptx, ".entry add_one(") &&
               contains(two.kernel->ptx, ".entry add_two(") && !cache.diskEnabled();
  bool oneWarning = std::count(warnings.begin(), warnings.end(), '\n') == 1;
  bool empty = std::filesystem::is_empty(directory);
  std::exit(right && oneWarning && empty ? 0 : 1);
}

TEST(KernelCacheDeathTest, FullDiskWarnsOnceAndCachesInMemory) {
  TempDir directory;
  EXPECT_EXIT(compileWithFilesCappedAt1KiB(directory.path()), ::testing::ExitedWithCode(0),
              "kernel cache directory '.*' is not writable \\(writing .* failed: File too "
              "large\\); caching in memory only");
}

TEST(CubinCache, CompileErrorsPropagateAndCacheNothing) {
  TempDir directory;
  CubinCache cache(onDisk(directory));
  ScopedEnvironment dumpDir("WIDEFUSE_DUMP_DIR", directory.file("dumps"));
  std::string message = errorOf([&] { cache.compile("this is not CUDA", "nothing", {}); });
  EXPECT_TRUE(contains(message, "kernel 'nothing'")) << message;
  EXPECT_EQ(cache.memoryRecords(), 0u);
  CompileOptions badArch;
  badArch.arch = "sm_91";
  message = errorOf([&] { cache.compile(addKernelSource("add_one"), "add_one", badArch); });
  EXPECT_TRUE(contains(message, "unsupported arch 'sm_91'")) << message;
  EXPECT_EQ(cache.memoryRecords(), 0u);
}

TEST(CubinCache, ConcurrentCompilesAgree) {
  TempDir directory;
  CubinCache cache(onDisk(directory));
  constexpr int kThreads = 8;
  // Every thread compiles one shared source and one of four per-group sources, so both
  // same-key races and different keys in flight happen at once.
  auto groupName = [](int thread) { return "add_" + std::to_string(thread % 4); };
  std::vector<CacheResult> shared(kThreads), own(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        shared[t] = cache.compile(addKernelSource("shared"), "shared", {});
        own[t] = cache.compile(addKernelSource(groupName(t), t % 4), groupName(t), {});
      } catch (const std::exception& error) {
        failures[t] = error.what();
      }
    });
  for (std::thread& thread : threads)
    thread.join();

  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(failures[t], "") << "thread " << t;
    EXPECT_EQ(shared[t].kernel, shared[0].kernel) << "thread " << t; // One object per key.
    EXPECT_EQ(own[t].kernel, own[t % 4].kernel) << "thread " << t;
    EXPECT_EQ(own[t].kernel->name, groupName(t));
    EXPECT_TRUE(contains(own[t].kernel->ptx, ".entry " + groupName(t) + "(")) << "thread " << t;
  }
  EXPECT_EQ(cache.memoryRecords(), 5u);

  // What reached the disk is what a new process would load.
  CubinCache later(onDisk(directory));
  for (int group = 0; group < 4; ++group) {
    CacheResult result =
        later.compile(addKernelSource(groupName(group), group), groupName(group), {});
    EXPECT_EQ(result.outcome, CacheOutcome::DiskHit);
    EXPECT_EQ(result.kernel->image, own[group].kernel->image);
  }
}

TEST(CubinCache, DefaultDirectoryFollowsTheEnvironment) {
  ScopedEnvironment cacheDir("WIDEFUSE_CACHE_DIR", "/tmp/wf-cache");
  ScopedEnvironment xdg("XDG_CACHE_HOME", "/tmp/xdg");
  ScopedEnvironment home("HOME", "/tmp/home");
  EXPECT_EQ(defaultCacheDirectory(), "/tmp/wf-cache");
  {
    ScopedEnvironment noCacheDir("WIDEFUSE_CACHE_DIR", std::nullopt);
    EXPECT_EQ(defaultCacheDirectory(), "/tmp/xdg/widefuse");
    {
      ScopedEnvironment emptyXdg("XDG_CACHE_HOME", "");
      EXPECT_EQ(defaultCacheDirectory(), "/tmp/home/.cache/widefuse");
      ScopedEnvironment noHome("HOME", std::nullopt);
      EXPECT_EQ(defaultCacheDirectory(), std::nullopt);
    }
  }
}

TEST(CubinCache, DefaultOptionsUseTheEnvironmentsDirectory) {
  TempDir directory;
  ScopedEnvironment cacheDir("WIDEFUSE_CACHE_DIR", directory.file("from-env"));
  CubinCache cache;
  EXPECT_TRUE(cache.diskEnabled());
  EXPECT_EQ(cache.directory(), directory.file("from-env"));
  EXPECT_TRUE(std::filesystem::is_directory(directory.file("from-env")));
}

TEST(CubinCache, OutcomeNames) {
  EXPECT_EQ(cacheOutcomeName(CacheOutcome::Miss), "miss");
  EXPECT_EQ(cacheOutcomeName(CacheOutcome::MemoryHit), "memory hit");
  EXPECT_EQ(cacheOutcomeName(CacheOutcome::DiskHit), "disk hit");
}

} // namespace
