// Runs the real `widefuse` executable (path from WIDEFUSE_CLI) on files in a temporary
// directory, as a user would.

#include "tests/tools/cli_fixture.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace widefuse;
using namespace widefuse::npy_samples;
using namespace widefuse::testing;

TEST_F(Cli, CheckPrintsTheCanonicalText) {
  CliResult result = run("check axpy.wf");
  EXPECT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out, printFusion(*parseFusion(kAxpyText, "axpy.wf")));
  // The printed text is itself a valid fusion that prints the same.
  EXPECT_EQ(printFusion(*parseFusion(result.out, "printed")), result.out);
  EXPECT_EQ(run("check - < axpy.wf").out, result.out);
}

TEST_F(Cli, RunWritesOutputsAndUpdatedInputs) {
  CliResult result = runAxpy(kGoodInputs);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");

  HostTensor z = readNpy(file("out/z.npy"), DataType::Float);
  ASSERT_EQ(z.shape(), llvm::ArrayRef<int64_t>({2, 3}));
  HostTensor h = readNpy(file("out/h.npy"), DataType::BFloat16);
  ASSERT_EQ(h.shape(), llvm::ArrayRef<int64_t>({2, 3}));
  for (int i = 0; i < 6; ++i) {
    float x = static_cast<float>(i), y = 0.5f * static_cast<float>(i);
    EXPECT_EQ(z.as<float>()[i], 2.5f * x + y) << i;
    EXPECT_EQ(h.as<uint16_t>()[i], bf16Bits(y * 3.0f)) << i;
  }
  HostTensor step = readNpy(file("out/step.npy"), DataType::Float);
  EXPECT_EQ(step.rank(), 0u);
  EXPECT_EQ(step.as<float>()[0], 4.0f);
  EXPECT_EQ(readNpy(file("step.npy")).as<float>()[0], 3.0f) << "the input file is untouched";

  nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["fusion"], "axpy");
  // auto: the generated kernels, on the GPU when there is one, else on the host backend.
  EXPECT_TRUE(report["backend"] == "host" || report["backend"] == "cuda") << report["backend"];
  EXPECT_EQ(report["launches"], 2); // z/h and the lone step counter: two signatures
  ASSERT_EQ(report["phases"].size(), 1u);
  EXPECT_EQ(report["phases"][0]["groups"].size(), 2u);
  ASSERT_EQ(report["outputs"].size(), 2u);
  EXPECT_EQ(report["outputs"][0]["name"], "z");
  EXPECT_EQ(report["outputs"][0]["path"], "out/z.npy");
  EXPECT_EQ(report["outputs"][0]["dtype"], "f32");
  EXPECT_EQ(report["outputs"][0]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(report["outputs"][1]["dtype"], "bf16");
  ASSERT_EQ(report["updated_inputs"].size(), 1u);
  EXPECT_EQ(report["updated_inputs"][0]["name"], "step");
  EXPECT_EQ(report["updated_inputs"][0]["shape"], nlohmann::json::array());
  ASSERT_EQ(report["notes"].size(), 1u);
  EXPECT_NE(report["notes"][0].get<std::string>().find("h is bf16: stored as uint16 bits"),
            std::string::npos);
}

TEST_F(Cli, RunCreatesTheOutputDirectory) {
  CliResult result =
      run(fmt::format("run axpy.wf {} --scalar a=1 --scalar n=1 --out deep/er/out", kGoodInputs));
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_TRUE(llvm::sys::fs::exists(file("deep/er/out/z.npy")));
}

TEST_F(Cli, RunNamesAMissingInputOrScalar) {
  expectOneLineError(runAxpy("--input x=x.npy --input step=step.npy"),
                     "fusion 'axpy' needs --input y=FILE.npy (f32[?, 3])");
  expectOneLineError(runAxpy(kGoodInputs, "--scalar a=2.5"), "needs --scalar n=VALUE (i32)");
  EXPECT_FALSE(llvm::sys::fs::exists(file("out")));
}

TEST_F(Cli, RunRejectsExtraAndRepeatedInputs) {
  expectOneLineError(runAxpy(std::string(kGoodInputs) + " --input w=x.npy"),
                     "--input w: fusion 'axpy' has no input named 'w'");
  expectOneLineError(runAxpy(kGoodInputs, "--scalar a=2.5 --scalar n=3 --scalar q=1"),
                     "--scalar q: fusion 'axpy' has no input named 'q'");
  expectOneLineError(runAxpy(std::string(kGoodInputs) + " --input x=y.npy"),
                     "--input x is given twice");
  expectOneLineError(runAxpy(std::string(kGoodInputs) + " --input a=x.npy"),
                     "'a' is a scalar input; give it as --scalar a=VALUE (f64)");
}

TEST_F(Cli, RunRejectsMalformedNpyFiles) {
  writeFile(file("garbage.npy"), "this is not numpy");
  expectOneLineError(runAxpy("--input x=garbage.npy --input y=y.npy --input step=step.npy"),
                     "input 'x': garbage.npy: not a .npy file (bad magic string");
  std::string truncated = bytesOf(kNumpyF32Arange2x3);
  writeFile(file("short.npy"), llvm::StringRef(truncated).drop_back(4));
  expectOneLineError(runAxpy("--input x=short.npy --input y=y.npy --input step=step.npy"),
                     "input 'x': short.npy: the data is too short");
  expectOneLineError(runAxpy("--input x=absent.npy --input y=y.npy --input step=step.npy"),
                     "input 'x': cannot read 'absent.npy': No such file or directory");
}

TEST_F(Cli, RunRejectsNpyFilesThatDisagreeWithTheDeclaration) {
  writeNpy(file("x64.npy"), HostTensor(DataType::Double, {2, 3}));
  expectOneLineError(runAxpy("--input x=x64.npy --input y=y.npy --input step=step.npy"),
                     "input 'x': x64.npy: holds f64 data (descr '<f8') but f32 was expected");
  writeNpy(file("x32.npy"), HostTensor(DataType::Float, {3, 2}));
  CliResult wrongShape = runAxpy("--input x=x32.npy --input y=y.npy --input step=step.npy");
  expectOneLineError(wrongShape, "'x'");
  EXPECT_NE(wrongShape.err.find("[3, 2]"), std::string::npos) << wrongShape.err;
  writeFile(file("c8.npy"), bytesOf(kNumpyC8));
  expectOneLineError(runAxpy("--input x=c8.npy --input y=y.npy --input step=step.npy"),
                     "holds c64 data (descr '<c8') but f32 was expected");
  EXPECT_FALSE(llvm::sys::fs::exists(file("out")));
}

TEST_F(Cli, RunRejectsScalarsThatDoNotFit) {
  expectOneLineError(runAxpy(kGoodInputs, "--scalar a=2.5 --scalar n=3000000000"),
                     "scalar 'n' (i32): 3000000000 does not fit in i32");
  expectOneLineError(runAxpy(kGoodInputs, "--scalar a=fast --scalar n=3"),
                     "scalar 'a' (f64): expected a number, got 'fast'");
}

TEST_F(Cli, ReportsFusionTextErrors) {
  writeFile(file("undefined.wf"), "fusion f(x: f32[2]) {\n  y = add(x, q)\n  return y\n}\n");
  expectOneLineError(run("check undefined.wf"), "undefined.wf:2:");
  expectOneLineError(run("check undefined.wf"), "'q'");
  expectOneLineError(run("run undefined.wf --input x=x.npy --out out"), "'q'");
  expectOneLineError(run("check nowhere.wf"), "cannot read 'nowhere.wf'");
}

TEST_F(Cli, RunOnTheHostBackendEqualsTheReferenceInEveryBlockOrder) {
  CliResult reference = runAxpy(std::string(kGoodInputs) + " --backend reference");
  ASSERT_EQ(reference.exitCode, 0) << reference.err;
  std::string z = readFile(file("out/z.npy")), h = readFile(file("out/h.npy")),
              step = readFile(file("out/step.npy"));
  for (const char* execution : {"fast", "verify"})
    for (const char* order : {"forward", "reverse", "shuffle:3"}) {
      CliResult host = runAxpy(std::string(kGoodInputs) + " --backend host --host-execution " +
                               execution + " --block-order " + order);
      ASSERT_EQ(host.exitCode, 0) << host.err;
      EXPECT_EQ(nlohmann::json::parse(host.out)["backend"], "host");
      EXPECT_EQ(readFile(file("out/z.npy")), z) << execution << " " << order;
      EXPECT_EQ(readFile(file("out/h.npy")), h) << execution << " " << order;
      EXPECT_EQ(readFile(file("out/step.npy")), step) << execution << " " << order;
    }
  for (const char* threads : {"1", "2", "0"}) {
    CliResult threaded = runAxpy(std::string(kGoodInputs) + " --backend host --threads " + threads);
    ASSERT_EQ(threaded.exitCode, 0) << threaded.err;
    EXPECT_EQ(readFile(file("out/z.npy")), z) << threads;
  }
  expectOneLineError(runAxpy(std::string(kGoodInputs) + " --host-execution slow"),
                     "unknown host execution 'slow'");
  expectOneLineError(runAxpy(std::string(kGoodInputs) + " --block-order sideways"),
                     "unknown block order 'sideways'");
  expectOneLineError(runAxpy(std::string(kGoodInputs) + " --backend gpu"), "unknown backend 'gpu'");
  expectOneLineError(runAxpy(std::string(kGoodInputs) + " --backend none"),
                     "--backend none compiles without running, so there is nothing to write");
}

TEST_F(Cli, RunUpdatesZeroElementInputsNextToOthers) {
  // Empty tensors may share one data address: the updated inputs are found by position.
  writeFile(file("empty.wf"), R"(fusion empty(a: f32[0, 3], b: f32[?], c: f32[0]) {
  copy_(mul(a, 2.0), a)
  copy_(add(b, 1.0), b)
  copy_(neg(c), c)
}
)");
  writeNpy(file("a.npy"), HostTensor(DataType::Float, {0, 3}));
  HostTensor b(DataType::Float, {4});
  for (int i = 0; i < 4; ++i)
    b.as<float>()[i] = static_cast<float>(i);
  writeNpy(file("b.npy"), b);
  writeNpy(file("c.npy"), HostTensor(DataType::Float, {0}));
  for (const char* backend : {"reference", "host"}) {
    CliResult result =
        run(fmt::format("run empty.wf --input a=a.npy --input b=b.npy --input c=c.npy --backend "
                        "{} --out out",
                        backend));
    ASSERT_EQ(result.exitCode, 0) << backend << ": " << result.err;
    auto report = nlohmann::json::parse(result.out);
    ASSERT_EQ(report["updated_inputs"].size(), 3u) << backend;
    EXPECT_EQ(report["updated_inputs"][0]["shape"], nlohmann::json::array({0, 3}));
    HostTensor updated = readNpy(file("out/b.npy"), DataType::Float);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(updated.as<float>()[i], static_cast<float>(i) + 1.0f) << backend;
    EXPECT_EQ(readNpy(file("out/c.npy"), DataType::Float).numel(), 0) << backend;
  }
}

TEST_F(Cli, ShapesTooLargeToAddressAreErrorsInCheckAndCompile) {
  writeFile(file("huge.wf"), R"(fusion huge(x: f32[9223372036854775807, 2]) {
  return neg(x)
}
)");
  for (const char* command : {"check huge.wf", "compile huge.wf --arch sm_90"})
    expectOneLineError(run(command), "input 'x': shape [9223372036854775807, 2] of f32 would "
                                     "take more than 2^63 bytes");
  // A computed shape: a broadcast of two large extents.
  writeFile(file("wide.wf"), R"(fusion wide(x: f32[?]) {
  return broadcast_in_dim(x, [4294967296, 4294967296], [1])
}
)");
  expectOneLineError(run("check wide.wf"), "would take more than 2^63 bytes");
}

TEST_F(Cli, UsageErrorsExitWithStatus2) {
  EXPECT_EQ(run("").exitCode, 2);
  EXPECT_EQ(run("frobnicate").exitCode, 2);
  EXPECT_EQ(run("run axpy.wf").exitCode, 2) << "--out is required";
  CliResult help = run("--help");
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("check"), std::string::npos);
  EXPECT_NE(help.out.find("run"), std::string::npos);
}

TEST_F(Cli, SegmentPrintsTheSegmentationAsTextAndJson) {
  CliResult text = run("segment axpy.wf --mode per-component");
  ASSERT_EQ(text.exitCode, 0) << text.err;
  // z/h and the lone step counter are two components with two signatures.
  EXPECT_NE(text.out.find("2 components, 2 signature classes, 2 launches"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("copy_("), std::string::npos) << text.out;
  CliResult json = run("segment axpy.wf --json --mode packed");
  ASSERT_EQ(json.exitCode, 0) << json.err;
  nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["launches"], 1);
  EXPECT_EQ(report["mode"], "packed");
  expectOneLineError(run("segment axpy.wf --mode fastest"), "unknown mode 'fastest'");
}

TEST_F(Cli, AdamRunsTheSeedExampleInEachMode) {
  CliResult summary = run("adam --steps 1");
  ASSERT_EQ(summary.exitCode, 0) << summary.err;
  EXPECT_NE(summary.out.find("per-component: 2 kernels"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("batched:       1 kernel"), std::string::npos) << summary.out;
  // The README's first command verifies against the reference evaluator by default.
  EXPECT_NE(summary.out.find("verify against the reference evaluator: 0 of"), std::string::npos)
      << summary.out;
  CliResult quiet = run("adam --steps 1 --no-verify");
  ASSERT_EQ(quiet.exitCode, 0) << quiet.err;
  EXPECT_EQ(quiet.out.find("verify against"), std::string::npos) << quiet.out;
  for (auto [mode, kernels] : {std::pair{"per-component", 2}, std::pair{"batched", 1},
                               std::pair{"packed", 1}, std::pair{"auto", 1}}) {
    CliResult json = run(fmt::format("adam --steps 1 --json --mode {}", mode));
    ASSERT_EQ(json.exitCode, 0) << json.err;
    nlohmann::json report = nlohmann::json::parse(json.out);
    EXPECT_EQ(report["launches"], kernels) << mode;
    EXPECT_EQ(report["params"], 2);
    EXPECT_LT(report["max_abs_error_vs_oracle"].get<double>(), 1e-5);
  }
  expectOneLineError(run("adam --backend fpga"), "unknown backend 'fpga'");
  expectOneLineError(run("adam --block-order backwards"), "unknown block order 'backwards'");
  expectOneLineError(run("adam --interleavings 0"),
                     "--interleavings 0: a launch runs in at least 1 interleaving");
}

TEST_F(Cli, CompileReportsKernelStatsAndHitsTheDiskCacheTheSecondTime) {
  CliResult first = run("compile axpy.wf --json");
  ASSERT_EQ(first.exitCode, 0) << first.err;
  nlohmann::json report = nlohmann::json::parse(first.out);
  // z/h and the lone step counter: two signature classes, two kernels.
  EXPECT_EQ(report["launches"], 2);
  EXPECT_EQ(report["kernels"], 2);
  EXPECT_EQ(report["arch"], "sm_90");
  EXPECT_GT(report["compile_ms"].get<double>(), 0);
  ASSERT_EQ(report["kernel_stats"].size(), 2u);
  for (const auto& kernel : report["kernel_stats"]) {
    EXPECT_EQ(kernel["cache"], "miss");
    EXPECT_GT(kernel["registers"].get<int>(), 0);
    // Within the register cap of the blocks per multiprocessor it was compiled for.
    EXPECT_LE(kernel["registers"].get<int>(),
              65536 / (256 * kernel["blocks_per_multiprocessor"].get<int>()) / 8 * 8);
    EXPECT_EQ(kernel["spill_bytes"], 0);
    EXPECT_EQ(kernel["stack_bytes"], 0); // a pointwise kernel keeps everything in registers
    EXPECT_EQ(kernel["index_bits"], 32);
    EXPECT_GT(kernel["nvrtc_ms"].get<double>(), 0);
    EXPECT_GT(kernel["vector_bytes"].get<int>(), 0);
    EXPECT_TRUE(kernel.contains("name"));
  }
  CliResult second = run("compile axpy.wf --json");
  ASSERT_EQ(second.exitCode, 0) << second.err;
  nlohmann::json secondReport = nlohmann::json::parse(second.out);
  for (const auto& kernel : secondReport["kernel_stats"])
    EXPECT_EQ(kernel["cache"], "hit");
  // The text report says the same: registers, spills and the stack frame of each kernel.
  CliResult text = run("compile axpy.wf");
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("0 spill bytes, 0-byte stack frame; NVRTC cache hit"), std::string::npos)
      << text.out;
}

TEST_F(Cli, CompileEmitsCudaOrPtxAndDumpsIntoADirectory) {
  CliResult cuda = run("compile axpy.wf --emit cuda");
  ASSERT_EQ(cuda.exitCode, 0) << cuda.err;
  EXPECT_NE(cuda.out.find("extern \"C\" __global__ void axpy_class0("), std::string::npos);
  EXPECT_NE(cuda.out.find("// fusion 'axpy', batched mode"), std::string::npos);
  CliResult ptx = run("compile axpy.wf --emit ptx --arch sm_80");
  ASSERT_EQ(ptx.exitCode, 0) << ptx.err;
  EXPECT_NE(ptx.out.find(".entry axpy_class0("), std::string::npos);
  EXPECT_NE(ptx.out.find(".target sm_80"), std::string::npos);
  CliResult dumped = run("compile axpy.wf --dump-dir dumps");
  ASSERT_EQ(dumped.exitCode, 0) << dumped.err;
  EXPECT_NE(dumped.out.find("2 kernel launch(es) per run"), std::string::npos) << dumped.out;
  for (const char* name : {"axpy_class0.cu", "axpy_class0.ptx", "axpy_class1.cu"})
    EXPECT_TRUE(llvm::sys::fs::exists(file(std::string("dumps/") + name))) << name;
  EXPECT_EQ(readFile(file("dumps/axpy_class0.cu")) + "\n",
            cuda.out.substr(0, readFile(file("dumps/axpy_class0.cu")).size() + 1));
}

TEST_F(Cli, CompileRejectsBadArchesAndEmitKinds) {
  expectOneLineError(run("compile axpy.wf --arch banana"), "invalid arch 'banana'");
  CliResult unsupported = run("compile axpy.wf --arch sm_91");
  EXPECT_EQ(unsupported.exitCode, 1);
  EXPECT_NE(unsupported.err.find("unsupported arch 'sm_91'"), std::string::npos) << unsupported.err;
  EXPECT_NE(unsupported.err.find("sm_90"), std::string::npos) << unsupported.err;
  expectOneLineError(run("compile axpy.wf --emit asm"), "--emit 'asm': use cuda or ptx");
  expectOneLineError(run("compile missing.wf"), "missing.wf");
}

TEST_F(Cli, CompileWithoutNvrtcIsAClearError) {
  CliResult result = run("compile axpy.wf", "WIDEFUSE_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13");
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_NE(result.err.find("NVRTC not found"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("WIDEFUSE_NVRTC_LIBRARY"), std::string::npos) << result.err;
  // Printing the source needs no NVRTC.
  CliResult cuda =
      run("compile axpy.wf --emit cuda", "WIDEFUSE_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13");
  EXPECT_EQ(cuda.exitCode, 0) << cuda.err;
}

TEST_F(Cli, TheHostBackendNeedsNoNvrtcAndBackendNoneNamesIt) {
  const char* noNvrtc = "WIDEFUSE_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13";
  CliResult host = run(fmt::format("run axpy.wf {} --scalar a=2.5 --scalar n=3 --out out "
                                   "--backend host",
                                   kGoodInputs),
                       noNvrtc);
  EXPECT_EQ(host.exitCode, 0) << host.err;
  EXPECT_TRUE(std::filesystem::exists(file("out/z.npy")));
  CliResult none = run("adam --backend none", noNvrtc);
  EXPECT_EQ(none.exitCode, 1);
  EXPECT_NE(none.err.find("NVRTC not found"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("WIDEFUSE_NVRTC_LIBRARY"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("needs no NVRTC"), std::string::npos) << none.err;
}

TEST_F(Cli, RunWithoutAHostCompilerNamesTheVariableAndWritesNothing) {
  CliResult result = run(fmt::format("run axpy.wf {} --scalar a=2.5 --scalar n=3 --out out "
                                     "--backend host",
                                     kGoodInputs),
                         "WIDEFUSE_HOST_CXX=/nonexistent/bin/c++");
  expectOneLineError(result, "no host C++ compiler: '/nonexistent/bin/c++' (from "
                             "WIDEFUSE_HOST_CXX) cannot be run");
  EXPECT_NE(result.err.find("install g++ or clang++"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(file("out/z.npy")));
}

TEST_F(Cli, RunWithAHostCompilerFailingOnTheKernelShowsItsOutput) {
  writeFile(file("failing-cxx"), "#!/bin/sh\n"
                                 "if [ \"$1\" = --version ]; then echo 'failing 1.0'; exit 0; fi\n"
                                 "echo 'kernel.cpp:3:1: error: simulated' >&2; exit 1\n");
  std::filesystem::permissions(file("failing-cxx"), std::filesystem::perms::owner_all);
  CliResult result = run(fmt::format("run axpy.wf {} --scalar a=2.5 --scalar n=3 --out out "
                                     "--backend host",
                                     kGoodInputs),
                         fmt::format("WIDEFUSE_HOST_CXX='{}'", file("failing-cxx")));
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_TRUE(llvm::StringRef(result.err)
                  .startswith("widefuse: error: host backend: '" + file("failing-cxx") +
                              "' failed to compile kernel 'axpy_"))
      << result.err;
  EXPECT_NE(result.err.find("kernel.cpp:3:1: error: simulated"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("source: "), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(file("out/z.npy")));
  // The kept source, named in the message, is the kernel's (for a bug report).
  size_t at = result.err.find("source: ") + 8;
  std::string source = result.err.substr(at, result.err.find('\n', at) - at);
  EXPECT_NE(readFile(source).find("_host_fast_block"), std::string::npos) << source;
  std::filesystem::remove(source);
}

TEST_F(Cli, CompileWithAnUnwritableCacheWarnsAndKeepsGoing) {
  writeFile(file("not-a-directory"), "x");
  CliResult result = run("compile axpy.wf --json",
                         fmt::format("WIDEFUSE_CACHE_DIR='{}'", file("not-a-directory/cache")));
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.err.find("warning: kernel cache directory"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("caching in memory only"), std::string::npos) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["kernels"], 2);
}
