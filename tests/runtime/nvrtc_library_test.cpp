#include "runtime/cuda/nvrtc_library.h"

#include "tests/runtime/runtime_test_support.h"
#include "tests/support/error_of.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <llvm/ADT/StringSet.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

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
  std::string message = errorOf([&] { NvrtcLibrary::choose(paths, std::nullopt, false); });
  EXPECT_TRUE(
      llvm::StringRef(message).startswith("NVRTC not found (tried /nonexistent/libnvrtc.so.13: "))
      << message;
  EXPECT_NE(message.find("; libwidefuse-no-nvrtc.so: "), std::string::npos) << message;
  EXPECT_NE(message.find("install the CUDA Toolkit's NVRTC"), std::string::npos) << message;
  EXPECT_NE(message.find("set WIDEFUSE_NVRTC_LIBRARY"), std::string::npos) << message;
  EXPECT_NE(message.find("the host backend (backend=host, --backend host) needs no NVRTC"),
            std::string::npos)
      << message;
  // Without a driver there is no CUDA version to name.
  EXPECT_EQ(message.find("the driver supports"), std::string::npos) << message;
  // From the variable, the fix is the variable.
  message =
      errorOf([&] { NvrtcLibrary::choose({"/nonexistent/libnvrtc.so"}, std::nullopt, true); });
  EXPECT_NE(message.find("from WIDEFUSE_NVRTC_LIBRARY): point WIDEFUSE_NVRTC_LIBRARY at a "
                         "working libnvrtc.so or unset it"),
            std::string::npos)
      << message;
  // A path that loads wins over those that do not.
  std::vector<std::string> withReal = {"/nonexistent/libnvrtc.so", NvrtcLibrary::instance().path()};
  EXPECT_EQ(NvrtcLibrary::choose(withReal, std::nullopt, false)->path(),
            NvrtcLibrary::instance().path());
}

TEST(NvrtcLibrary, NotFoundNamesTheDriversVersion) {
  std::string message =
      errorOf([] { NvrtcLibrary::choose({"/nonexistent/libnvrtc.so.12"}, 12040, false); });
  EXPECT_CONTAINS(message, "NVRTC not found (tried /nonexistent/libnvrtc.so.12: ");
  EXPECT_CONTAINS(message, "libnvrtc.so (the driver supports CUDA 12.4: an NVRTC 12.x or older "
                           "suits it); the host backend");
}

// The fake NVRTCs of tests/support/cuda_double, newest first as the default search order is.
const std::vector<std::string> kFakes = {WIDEFUSE_NVRTC_FAKE_13_0, WIDEFUSE_NVRTC_FAKE_12_4,
                                         WIDEFUSE_NVRTC_FAKE_12_0};

// The version of the NVRTC choose() keeps of `paths` for a driver of `driverVersion`.
std::string chosenVersion(llvm::ArrayRef<std::string> paths, std::optional<int> driverVersion) {
  return NvrtcLibrary::choose(paths, driverVersion, false)->versionString();
}

TEST(NvrtcLibrary, ChoosesTheNewestNvrtcTheDriverSupports) {
  // CUDA 13 cubins do not load on a CUDA 12 driver: NVRTC 13 on a 12.4 driver gives way to 12.
  EXPECT_EQ(chosenVersion(kFakes, 12040), "12.4");
  EXPECT_EQ(chosenVersion(kFakes, 13000), "13.0");
  // Within a major, a newer NVRTC's cubins load on an older driver.
  EXPECT_EQ(chosenVersion(kFakes, 12000), "12.4");
  // No driver (a compile-only machine): the newest.
  EXPECT_EQ(chosenVersion(kFakes, std::nullopt), "13.0");
  // None fits: the newest still loads, and a module load error names the mismatch.
  EXPECT_EQ(chosenVersion(kFakes, 11080), "13.0");
  EXPECT_EQ(chosenVersion({WIDEFUSE_NVRTC_FAKE_13_0, WIDEFUSE_NVRTC_FAKE_12_0}, 12040), "12.0");
  // Versions decide, not the order of the search.
  std::vector<std::string> reversed(kFakes.rbegin(), kFakes.rend());
  EXPECT_EQ(chosenVersion(reversed, 12040), "12.4");
  EXPECT_EQ(chosenVersion(reversed, std::nullopt), "13.0");
  // Paths that do not load are passed over; the chosen one keeps the path it was found by.
  std::vector<std::string> withMissing = {"/nonexistent/libnvrtc.so.12", WIDEFUSE_NVRTC_FAKE_12_4};
  EXPECT_EQ(NvrtcLibrary::choose(withMissing, 12040, false)->path(), WIDEFUSE_NVRTC_FAKE_12_4);
}

TEST(NvrtcLibrary, ChoosingAmongVersionsPrefersFitThenNewestThenFirst) {
  using V = CudaVersion;
  std::vector<V> versions = {{13, 0}, {12, 4}, {12, 8}, {12, 8}};
  EXPECT_EQ(chooseNvrtcVersion(versions, V{12, 4}), 2u); // the first of the two 12.8
  EXPECT_EQ(chooseNvrtcVersion(versions, V{13, 0}), 0u);
  EXPECT_EQ(chooseNvrtcVersion(versions, std::nullopt), 0u);
  EXPECT_EQ(chooseNvrtcVersion(versions, V{11, 8}), 0u); // none fits: the newest
  EXPECT_EQ(CudaVersion::fromDriver(12040), (V{12, 4}));
  EXPECT_EQ(CudaVersion::fromDriver(13000).str(), "13.0");
  EXPECT_TRUE(nvrtcFitsDriver(V{12, 8}, V{12, 0}));
  EXPECT_FALSE(nvrtcFitsDriver(V{13, 0}, V{12, 8}));
}

TEST(NvrtcLibrary, ParameterLimitFollowsNvrtcDriverAndDevice) {
  using V = CudaVersion;
  // NVRTC 12.0 cannot emit a kernel taking a 32 KB parameter block, whatever the driver takes.
  V nvrtc120 = NvrtcLibrary::choose({WIDEFUSE_NVRTC_FAKE_12_0}, 12040, false)->cudaVersion();
  V nvrtc124 = NvrtcLibrary::choose({WIDEFUSE_NVRTC_FAKE_12_4}, 12040, false)->cudaVersion();
  EXPECT_EQ(maxKernelParameterBytes(V{12, 4}, 90, nvrtc120), 4096u);
  EXPECT_EQ(maxKernelParameterBytes(V{12, 4}, 90, nvrtc124), 32764u);
  EXPECT_EQ(maxKernelParameterBytes(V{13, 0}, 90, V{13, 0}), 32764u);
  EXPECT_EQ(maxKernelParameterBytes(V{12, 0}, 90, nvrtc124), 4096u); // the driver
  EXPECT_EQ(maxKernelParameterBytes(V{12, 4}, 61, nvrtc124), 4096u); // before Volta
  EXPECT_EQ(maxKernelParameterBytes(V{12, 1}, 70, V{12, 1}), 32764u);
  // No NVRTC loads: nothing is compiled, the driver and the device decide.
  EXPECT_EQ(maxKernelParameterBytes(V{12, 4}, 90, std::nullopt), 32764u);
}

TEST(NvrtcLibrary, CubinVersionNoteNamesBothVersionsAndTheLikelyCause) {
  using V = CudaVersion;
  std::string mismatch = cubinVersionNote(V{13, 0}, V{12, 4});
  EXPECT_CONTAINS(mismatch, "the cubin is from NVRTC 13.0, the driver supports CUDA 12.4: an "
                            "NVRTC newer than the driver (13 > 12) is the likely cause; update "
                            "the driver, or use an NVRTC 12.x: pip install nvidia-cuda-nvrtc-cu12");
  EXPECT_CONTAINS(mismatch, "set WIDEFUSE_NVRTC_LIBRARY to its libnvrtc.so.12");
  EXPECT_EQ(cubinVersionNote(V{12, 4}, V{12, 4}),
            "the cubin is from NVRTC 12.4, the driver supports CUDA 12.4");
  EXPECT_EQ(cubinVersionNote(std::nullopt, V{13, 0}),
            "no NVRTC loads in this process to tell which one compiled the cubin; the driver "
            "supports CUDA 13.0");
  EXPECT_CONTAINS(cubinVersionNote(V{14, 0}, V{13, 0}), "pip install 'nvidia-cuda-nvrtc==13.*'");
}

TEST(NvrtcLibrary, ChosenNvrtcGetsTheBuiltinsBesideIt) {
  // A wheel's NVRTC without a RUNPATH finds its builtins only when they are loaded already.
  namespace fs = std::filesystem;
  // A new directory each run: a library stays loaded after its file is gone (--gtest_repeat).
  static int run = 0;
  fs::path directory =
      fs::temp_directory_path() / fmt::format("widefuse-nvrtc-{}-{}", getpid(), run++);
  fs::create_directories(directory);
  fs::path nvrtc = directory / "libwidefuse_nvrtc_copy.so";
  fs::path builtins = directory / "libnvrtc-builtins.so.12.4";
  fs::copy_file(WIDEFUSE_NVRTC_FAKE_12_4, nvrtc, fs::copy_options::overwrite_existing);
  // Any shared library stands in for the builtins: NVRTC only needs it loaded.
  fs::copy_file(WIDEFUSE_NVRTC_FAKE_12_0, builtins, fs::copy_options::overwrite_existing);
  EXPECT_EQ(dlopen(builtins.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
  EXPECT_EQ(NvrtcLibrary::choose({nvrtc.string()}, 12040, false)->versionString(), "12.4");
  EXPECT_NE(dlopen(builtins.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
  fs::remove_all(directory);
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
    std::vector<std::string> defaults = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                         "/usr/local/cuda/lib64/libnvrtc.so"};
    ASSERT_GE(paths.size(), defaults.size());
    EXPECT_EQ(std::vector<std::string>(paths.begin(), paths.begin() + 4), defaults);
  }
  {
    ScopedEnvironment set("WIDEFUSE_NVRTC_LIBRARY", "/opt/cuda/lib64/libnvrtc.so.12");
    NvrtcLibrary::addPackageDirectories({"/opt/python/site-packages/nvidia"});
    std::vector<std::string> expected = {"/opt/cuda/lib64/libnvrtc.so.12"};
    EXPECT_EQ(NvrtcLibrary::candidatePaths(), expected);
  }
}

TEST(NvrtcLibrary, CandidatesIncludeTheLoadedNvrtcAndThePythonPackages) {
  ScopedEnvironment unset("WIDEFUSE_NVRTC_LIBRARY", std::nullopt);
  // The file the loader opened for this process's NVRTC (the toolkit's, or torch's).
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(NvrtcLibrary::instance().version), &info), 0);
  std::vector<std::string> paths = NvrtcLibrary::candidatePaths();
  EXPECT_TRUE(llvm::is_contained(paths, info.dli_fname)) << info.dli_fname;
  // What pip's CUDA wheels install in each `nvidia` directory, once however often it is added.
  NvrtcLibrary::addPackageDirectories({"/venv/site-packages/nvidia", "/user/site-packages/nvidia"});
  NvrtcLibrary::addPackageDirectories({"/venv/site-packages/nvidia"});
  paths = NvrtcLibrary::candidatePaths();
  std::vector<std::string> packages;
  llvm::copy_if(paths, std::back_inserter(packages), [](llvm::StringRef path) {
    return path.startswith("/venv/") || path.startswith("/user/");
  });
  std::vector<std::string> expected = {"/venv/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
                                       "/venv/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
                                       "/user/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
                                       "/user/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"};
  EXPECT_EQ(packages, expected);
  llvm::StringSet<> unique;
  for (const std::string& path : paths)
    EXPECT_TRUE(unique.insert(path).second) << path << " twice";
}

} // namespace
