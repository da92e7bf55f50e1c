// Several processes compiling one kernel into one cache directory at the same moment: each gets
// the right kernel, and the directory ends with one valid record and no temporary files. The
// children (kernel_cache_child) block on a pipe until all of them are running, then compile.

#include "runtime/cuda/cubin_cache.h"
#include "runtime/host/host_compiler.h"

#include "tests/runtime/runtime_test_support.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

using namespace widefuse;

namespace fs = std::filesystem;

namespace {

constexpr int kChildren = 4;

/// Starts kChildren `kernel_cache_child <kind> <directory>` at once; their exit statuses.
std::vector<int> compileInChildren(const std::string& kind, const std::string& directory) {
  int start[2];
  EXPECT_EQ(pipe(start), 0);
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, start[1]); // EOF comes when the parent closes it
    std::string fd = std::to_string(start[0]);
    std::string child = WIDEFUSE_KERNEL_CACHE_CHILD;
    char* argv[] = {child.data(), const_cast<char*>(kind.c_str()),
                    const_cast<char*>(directory.c_str()), fd.data(), nullptr};
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, child.c_str(), &actions, nullptr, argv, environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    children.push_back(pid);
  }
  close(start[0]);
  close(start[1]); // every child is running (or has failed to start): go
  std::vector<int> statuses;
  for (pid_t pid : children) {
    int status = -1;
    waitpid(pid, &status, 0);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return statuses;
}

/// The regular files of `directory`.
std::vector<std::string> filesIn(const std::string& directory) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error))
    if (entry.is_regular_file())
      files.push_back(entry.path().filename().string());
  return files;
}

TEST(KernelCacheProcesses, ProcessesCompilingOneCubinAtOnceAllGetIt) {
  TempDir directory;
  EXPECT_EQ(compileInChildren("nvrtc", directory.path()), std::vector<int>(kChildren, 0));
  std::vector<std::string> files = filesIn(directory.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(fs::path(files[0]).extension(), ".wfkernel");
  KernelCacheOptions options;
  options.directory = directory.path();
  CubinCache cache(options);
  ::testing::internal::CaptureStderr();
  CacheResult result = cache.compile(widefuse::testing::addKernelSource("shared"), "shared", {});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(result.outcome, CacheOutcome::DiskHit);
  EXPECT_NE(result.kernel->ptx.find(".entry shared("), std::string::npos);
}

TEST(KernelCacheProcesses, ProcessesBuildingOneHostKernelAtOnceAllGetIt) {
  TempDir directory;
  EXPECT_EQ(compileInChildren("host", directory.path()), std::vector<int>(kChildren, 0));
  std::vector<std::string> files = filesIn(directory.file("host"));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(fs::path(files[0]).extension(), ".wfhost");
  KernelCacheOptions options;
  options.directory = directory.path();
  HostKernelCache cache(options);
  ::testing::internal::CaptureStderr();
  std::shared_ptr<const HostKernel> kernel =
      cache.compile(widefuse::testing::hostKernelSource("shared"), "shared");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), ""); // loaded, not rebuilt
  int out[4] = {0, 0, 0, 0};
  int* parameters = out;
  kernel->runBlockFast(&parameters, 3, 4);
  EXPECT_EQ(out[3], widefuse::testing::kHostKernelMagic + 3);
}

} // namespace
