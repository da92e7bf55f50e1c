#pragma once
// The fixture of the command-line tests: a temporary directory with a small fusion and its
// .npy inputs, and a runner for build/bin/widefuse itself.

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/support/file_contents.h"
#include "tests/support/temp_dir.h"
#include "tests/tools/numpy_samples.h"
#include "tools/npy_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace widefuse::testing {

using namespace widefuse::npy_samples;

constexpr const char* kAxpyText = R"(# z = a * x + y, h = bf16(y * n), step += 1
fusion axpy(x: f32[2, 3], y: f32[?, 3], a: f64, n: i32, step: f32[]) {
  z = add(mul(a, x), y)
  h = cast(mul(y, n), bf16)
  copy_(add(step, 1.0), step)
  return z, h
}
)";

/// What one run of the executable produced.
struct CliResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

class Cli : public ::testing::Test {
protected:
  void SetUp() override {
    writeFile(file("axpy.wf"), kAxpyText);
    writeFile(file("x.npy"), bytesOf(kNumpyF32Arange2x3)); // 0..5, written by NumPy
    HostTensor y(DataType::Float, {2, 3});
    for (int i = 0; i < 6; ++i)
      y.as<float>()[i] = 0.5f * static_cast<float>(i);
    writeNpy(file("y.npy"), y);
    HostTensor step(DataType::Float, {});
    step.as<float>()[0] = 3.0f;
    writeNpy(file("step.npy"), step);
  }

  std::string file(llvm::StringRef name) const { return dir_.file(name); }

  /// Runs `widefuse ARGS` in the temporary directory, with `environment` (`NAME=value ...`)
  /// and a kernel cache inside that directory unless the environment names another.
  CliResult run(const std::string& args, const std::string& environment = "") const {
    std::string command =
        fmt::format("cd '{}' && WIDEFUSE_CACHE_DIR='{}' {} '{}' {} >stdout.txt 2>stderr.txt",
                    dir_.path(), file("kernel-cache"), environment, WIDEFUSE_CLI, args);
    int status = std::system(command.c_str());
    CliResult result;
    if (status != -1 && WIFEXITED(status))
      result.exitCode = WEXITSTATUS(status);
    result.out = readFile(file("stdout.txt"));
    result.err = readFile(file("stderr.txt"));
    return result;
  }

  /// `run axpy.wf INPUTS SCALARS --out out`; the scalars default to good ones.
  CliResult runAxpy(const std::string& inputs,
                    const std::string& scalars = "--scalar a=2.5 --scalar n=3") const {
    return run(fmt::format("run axpy.wf {} {} --out out", inputs, scalars));
  }

  static constexpr const char* kGoodInputs =
      "--input x=x.npy --input y=y.npy --input step=step.npy";

private:
  TempDir dir_;
};

/// The run failed with exit status 1 and one line on stderr containing `expected`; nothing
/// was written.
inline void expectOneLineError(const CliResult& result, llvm::StringRef expected) {
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_TRUE(llvm::StringRef(result.err).startswith("widefuse: error: ")) << result.err;
  EXPECT_TRUE(llvm::StringRef(result.err).endswith("\n")) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_NE(result.err.find(expected.str()), std::string::npos)
      << "stderr: " << result.err << "expected: " << expected.str();
  EXPECT_EQ(result.out, "");
}

/// The bits of a float that bfloat16 represents exactly.
inline uint16_t bf16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  EXPECT_EQ(bits & 0xffff, 0u) << value << " is not exact in bf16";
  return static_cast<uint16_t>(bits >> 16);
}

} // namespace widefuse::testing