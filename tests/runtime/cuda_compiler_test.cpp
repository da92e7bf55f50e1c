#include "runtime/cuda/cuda_compiler.h"

#include "runtime/cuda/nvrtc_library.h"
#include "tests/runtime/runtime_test_support.h"
#include "tests/support/error_of.h"
#include "tests/support/file_contents.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace widefuse;
using widefuse::testing::addKernelSource;
using widefuse::testing::contains;
using widefuse::testing::errorOf;
using widefuse::testing::readFile;
using widefuse::testing::ScopedEnvironment;

namespace {

// The path after "source: " on the last line of a compile error.
std::string sourcePathOf(llvm::StringRef message) {
  size_t at = message.rfind("source: ");
  if (at == llvm::StringRef::npos)
    return {};
  return message.drop_front(at + strlen("source: ")).trim().str();
}

const char* kBrokenSource = "extern \"C\" __global__ void broken(float* out) {\n"
                            "  out[0] = 1.0f\n"
                            "}\n";

class CompileForArch : public ::testing::TestWithParam<const char*> {};

TEST_P(CompileForArch, GivesCubinPtxAndStats) {
  CompileOptions options;
  options.arch = GetParam();
  KernelImage kernel = compileCuda(addKernelSource("add_one"), "add_one", options);
  EXPECT_EQ(kernel.name, "add_one");
  EXPECT_EQ(kernel.target, GetParam());
  ASSERT_GE(kernel.image.size(), 4u);
  EXPECT_EQ(std::string(kernel.image.begin(), kernel.image.begin() + 4), "\x7f"
                                                                         "ELF");
  EXPECT_TRUE(contains(kernel.ptx, ".entry add_one(")) << kernel.ptx;
  EXPECT_TRUE(contains(kernel.ptx, std::string(".target ") + GetParam())) << kernel.ptx;
  EXPECT_TRUE(contains(kernel.log, "Compiling entry function 'add_one'")) << kernel.log;
  EXPECT_GT(kernel.stats.registers, 0) << kernel.log;
  EXPECT_EQ(kernel.stats.spillBytes(), 0) << kernel.log;
  EXPECT_EQ(kernel.stats.stackBytes, 0) << kernel.log;
  EXPECT_GT(kernel.compileMilliseconds, 0);
}

INSTANTIATE_TEST_SUITE_P(Archs, CompileForArch, ::testing::Values("sm_80", "sm_90"));

TEST(CudaCompiler, FmadOffKeepsMultiplyAndAddSeparate) {
  std::string source = "extern \"C\" __global__ void muladd(float* out, const float* a,\n"
                       "                                   const float* b, const float* c) {\n"
                       "  int i = threadIdx.x;\n"
                       "  out[i] = a[i] * b[i] + c[i];\n"
                       "}\n";
  CompileOptions fused;
  KernelImage on = compileCuda(source, "muladd", fused);
  EXPECT_TRUE(contains(on.ptx, "fma.rn.f32")) << on.ptx;

  CompileOptions separate;
  separate.fmad = false;
  KernelImage off = compileCuda(source, "muladd", separate);
  EXPECT_FALSE(contains(off.ptx, "fma.rn.f32")) << off.ptx;
  EXPECT_TRUE(contains(off.ptx, "mul.rn.f32")) << off.ptx;
  EXPECT_TRUE(contains(off.ptx, "add.rn.f32")) << off.ptx;
}

TEST(CudaCompiler, OptionsFollowCompileOptions) {
  CompileOptions options;
  options.arch = "sm_80";
  std::vector<std::string> expected = {"--std=c++17", "-default-device", "-arch=sm_80",
                                       "-Xptxas=-v"};
  EXPECT_EQ(nvrtcOptions(options), expected);
  options.fmad = false;
  expected.push_back("--fmad=false");
  EXPECT_EQ(nvrtcOptions(options), expected);
}

TEST(CudaCompiler, SyntaxErrorGivesTheLogAndASourceFile) {
  ScopedEnvironment noDumpDir("WIDEFUSE_DUMP_DIR", std::nullopt);
  std::string message = errorOf([] { compileCuda(kBrokenSource, "broken", {}); });
  EXPECT_TRUE(contains(message, "kernel 'broken'")) << message;
  EXPECT_TRUE(contains(message, "NVRTC_ERROR_COMPILATION")) << message;
  EXPECT_TRUE(contains(message, "broken.cu(3): error: expected a \";\"")) << message;
  std::string path = sourcePathOf(message);
  ASSERT_TRUE(std::filesystem::exists(path)) << message;
  EXPECT_EQ(readFile(path), kBrokenSource);
  std::filesystem::remove(path);
}

TEST(CudaCompiler, SyntaxErrorSourceGoesToTheDumpDirectory) {
  TempDir dumps;
  std::string directory = dumps.file("nested");
  ScopedEnvironment dumpDir("WIDEFUSE_DUMP_DIR", directory);
  std::string message = errorOf([] { compileCuda(kBrokenSource, "broken", {}); });
  std::string expectedPath = directory + "/broken.cu";
  EXPECT_EQ(sourcePathOf(message), expectedPath) << message;
  EXPECT_EQ(readFile(expectedPath), kBrokenSource);
}

TEST(CudaCompiler, SourceWithoutTheEntryIsAnError) {
  std::string message = errorOf([] { compileCuda(addKernelSource("add_one"), "add_two", {}); });
  EXPECT_TRUE(contains(message, "defines no entry function")) << message;
  EXPECT_TRUE(contains(message, "extern \"C\" __global__ void add_two")) << message;
  std::filesystem::remove(sourcePathOf(message));
}

TEST(CudaCompiler, UnsupportedArchListsTheSupportedOnes) {
  std::string version = NvrtcLibrary::instance().versionString();
  std::string message = errorOf([] { checkArch("sm_91"); });
  EXPECT_TRUE(contains(message, "unsupported arch 'sm_91': NVRTC " + version + " supports ") &&
              contains(message, "sm_80") && contains(message, "sm_90"))
      << message;
  std::string viaCompile = errorOf([] {
    CompileOptions options;
    options.arch = "sm_91";
    compileCuda(addKernelSource("add_one"), "add_one", options);
  });
  EXPECT_EQ(viaCompile, message);
}

TEST(CudaCompiler, MalformedArchListsTheSupportedOnes) {
  for (const char* arch : {"banana", "sm_", "compute_90", "sm_90x", "90", "sm_-90"}) {
    std::string message = errorOf([&] { checkArch(arch); });
    EXPECT_TRUE(contains(message, std::string("invalid arch '") + arch + "'")) << message;
    EXPECT_TRUE(contains(message, "sm_75, sm_80")) << message;
  }
  checkArch("sm_80");
  checkArch("sm_90");
}

TEST(PtxasStats, PicksTheEntryFunctionsOwnLines) {
  const char* log = "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
                    "ptxas info    : Function properties for other\n"
                    "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes "
                    "spill loads\n"
                    "ptxas info    : Used 255 registers, used 0 barriers\n"
                    "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                    "ptxas info    : Function properties for k\n"
                    "ptxas         .     16 bytes stack frame, 12 bytes spill stores, 20 bytes "
                    "spill loads\n"
                    "ptxas info    : Used 38 registers, used 1 barriers, 380 bytes cmem[0]\n"
                    "ptxas info    : Function properties for __internal_accurate_pow\n"
                    "ptxas         .     40 bytes stack frame, 7 bytes spill stores, 9 bytes "
                    "spill loads\n";
  KernelStats k = parsePtxasStats(log, "k");
  EXPECT_EQ(k.registers, 38);
  EXPECT_EQ(k.stackBytes, 16);
  EXPECT_EQ(k.spillStoreBytes, 12);
  EXPECT_EQ(k.spillLoadBytes, 20);
  EXPECT_EQ(k.spillBytes(), 32);

  KernelStats other = parsePtxasStats(log, "other");
  EXPECT_EQ(other.registers, 255);
  EXPECT_EQ(other.stackBytes, 8);
  EXPECT_EQ(other.spillBytes(), 8);

  KernelStats missing = parsePtxasStats(log, "kk");
  EXPECT_EQ(missing.registers, 0);
  EXPECT_EQ(missing.stackBytes, 0);
  EXPECT_EQ(missing.spillBytes(), 0);
}

} // namespace
