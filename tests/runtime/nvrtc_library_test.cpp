#include "runtime/cuda/nvrtc_library.h"

#include "tests/runtime/runtime_test_support.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace widefuse;
using widefuse::testing::errorOf;
using widefuse::testing::ScopedEnvironment;

namespace {

TEST(NvrtcLibrary, ReportsVersionAndSupportedArchs) {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  EXPECT_GE(nvrtc.versionMajor(), 12);
  EXPECT_EQ(nvrtc.versionString(),
            std::to_string(nvrtc.versionMajor()) + "." + std::to_string(nvrtc.versionMinor()));
  llvm::ArrayRef<int> archs = nvrtc.supportedArchs();
  EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
  EXPECT_TRUE(llvm::is_contained(archs, 80));
  EXPECT_TRUE(llvm::is_contained(archs, 90));
  EXPECT_FALSE(nvrtc.path().empty());
}

TEST(NvrtcLibrary, InstanceIsLoadedOnce) {
  EXPECT_EQ(&NvrtcLibrary::instance(), &NvrtcLibrary::instance());
}

TEST(NvrtcLibrary, ErrorStringNamesTheResult) {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  EXPECT_EQ(nvrtc.errorString(6), "NVRTC_ERROR_COMPILATION");
  std::string message = errorOf([&] { nvrtc.check(6, "nvrtcCompileProgram"); });
  EXPECT_EQ(message, "nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION");
}

TEST(NvrtcLibrary, MissingLibraryNamesThePathAndTheVariable) {
  std::string message = errorOf([] { NvrtcLibrary::load("/nonexistent/libnvrtc.so"); });
  EXPECT_NE(message.find("NVRTC not found"), std::string::npos) << message;
  EXPECT_NE(message.find("/nonexistent/libnvrtc.so"), std::string::npos) << message;
  EXPECT_NE(message.find("WIDEFUSE_NVRTC_LIBRARY"), std::string::npos) << message;
  EXPECT_NE(message.find("needs no NVRTC"), std::string::npos) << message;
}

TEST(NvrtcLibrary, NoToolkitListsEveryPathTriedAndTheFixes) {
  // What instance() reports on a machine without the CUDA Toolkit: none of its candidates load.
  std::vector<std::string> paths = {"/nonexistent/libnvrtc.so.13", "libwidefuse-no-nvrtc.so"};
  std::string message = errorOf([&] { NvrtcLibrary::loadFirst(paths, false); });
  EXPECT_TRUE(
      llvm::StringRef(message).startswith("NVRTC not found (tried /nonexistent/libnvrtc.so.13: "))
      << message;
  EXPECT_NE(message.find("; libwidefuse-no-nvrtc.so: "), std::string::npos) << message;
  EXPECT_NE(message.find("install the CUDA Toolkit's NVRTC"), std::string::npos) << message;
  EXPECT_NE(message.find("set WIDEFUSE_NVRTC_LIBRARY"), std::string::npos) << message;
  EXPECT_NE(message.find("the host backend (backend=host, --backend host) needs no NVRTC"),
            std::string::npos)
      << message;
  // From the variable, the fix is the variable.
  message = errorOf([&] { NvrtcLibrary::loadFirst({"/nonexistent/libnvrtc.so"}, true); });
  EXPECT_NE(message.find("from WIDEFUSE_NVRTC_LIBRARY): point WIDEFUSE_NVRTC_LIBRARY at a "
                         "working libnvrtc.so or unset it"),
            std::string::npos)
      << message;
  // The first path that loads wins.
  std::vector<std::string> withReal = {"/nonexistent/libnvrtc.so", NvrtcLibrary::instance().path()};
  EXPECT_EQ(NvrtcLibrary::loadFirst(withReal, false)->path(), NvrtcLibrary::instance().path());
}

TEST(NvrtcLibrary, LibraryWithoutNvrtcEntryPointsIsRejected) {
  // libm loads fine but is not NVRTC.
  std::string message = errorOf([] { NvrtcLibrary::load("libm.so.6"); });
  EXPECT_NE(message.find("libm.so.6"), std::string::npos) << message;
  EXPECT_NE(message.find("lacks nvrtcCreateProgram"), std::string::npos) << message;
}

TEST(NvrtcLibrary, ExplicitLoadGivesAWorkingLibrary) {
  std::unique_ptr<NvrtcLibrary> nvrtc = NvrtcLibrary::load(NvrtcLibrary::instance().path());
  EXPECT_EQ(nvrtc->versionString(), NvrtcLibrary::instance().versionString());
  EXPECT_EQ(nvrtc->supportedArchs(), NvrtcLibrary::instance().supportedArchs());
}

TEST(NvrtcLibrary, CandidatePathsFollowTheEnvironment) {
  {
    ScopedEnvironment unset("WIDEFUSE_NVRTC_LIBRARY", std::nullopt);
    std::vector<std::string> paths = NvrtcLibrary::candidatePaths();
    std::vector<std::string> expected = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                         "/usr/local/cuda/lib64/libnvrtc.so"};
    EXPECT_EQ(paths, expected);
  }
  {
    ScopedEnvironment set("WIDEFUSE_NVRTC_LIBRARY", "/opt/cuda/lib64/libnvrtc.so.12");
    std::vector<std::string> expected = {"/opt/cuda/lib64/libnvrtc.so.12"};
    EXPECT_EQ(NvrtcLibrary::candidatePaths(), expected);
  }
}

} // namespace
