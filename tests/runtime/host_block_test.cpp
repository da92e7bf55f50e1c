// Reductions over blocks read in the kernel that computes them (docs/reductions.md §2, §9), on
// the host backend: every result, output and updated input equals the reference evaluator's
// bits on the fast path and on the device code in the emulator, in every block and thread
// order, for every block size, short last blocks, strided bodies and blocks of threads of 32
// to 1024; what kernels do not compute by blocks yet is refused by name.

#include "runtime/fusion_executor.h"
#include "tests/codegen/test_fusions.h"
#include "tests/runtime/host_evaluator_runs.h"
#include "tests/support/error_of.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// Every op over blocks of every size, of 2500 elements (the last block short), in one
/// kernel: each result returned, and each absmax read back per element through expand_blocks.
std::unique_ptr<Fusion> everyOpByBlocks() {
  FusionDefinition fd("every_block");
  const int64_t n = 2500;
  Val x = fd.defineTensor({n}, DataType::Float, "x");
  Val h = fd.defineTensor({n}, DataType::BFloat16, "h");
  Val k = fd.defineTensor({n}, DataType::Int32, "k");
  Val b = fd.defineTensor({n}, DataType::Bool, "b");
  Val d = fd.defineTensor({n}, DataType::Double, "d");
  for (int64_t block : {1, 2, 32, 64, 256, 1024}) {
    Val absmax = max(abs(x), Blocks{block});
    fd.addOutput(sum(x, Blocks{block}));
    fd.addOutput(absmax);
    fd.addOutput(min(h, Blocks{block}));
    fd.addOutput(sum(k, Blocks{block}));
    fd.addOutput(any(b, Blocks{block}));
    fd.addOutput(all(b, Blocks{block}));
    fd.addOutput(sum(d * d, Blocks{block}));
    fd.addOutput(x / expand_blocks(absmax, {n}, Blocks{block}));
  }
  return fd.finalize();
}

/// Blockwise quantization's shape: each member's state dequantized by its blocks' scales,
/// updated, its new absmax per block, each element divided by it; state and scales in place.
std::unique_ptr<Fusion> scaledState(llvm::ArrayRef<int64_t> sizes, int64_t block) {
  FusionDefinition fd("scaled_state");
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t n = sizes[i], blocks = (n + block - 1) / block;
    Val x = fd.defineTensor({n}, DataType::Float, fmt::format("x{}", i));
    Val g = fd.defineTensor({n}, DataType::Float, fmt::format("g{}", i));
    Val scales = fd.defineTensor({blocks}, DataType::Float, fmt::format("scales{}", i));
    Val m = x * expand_blocks(scales, {n}, Blocks{block}) * 0.9 + g * 0.1;
    Val absmax = max(abs(m), Blocks{block});
    fd.copy_(m / maximum(expand_blocks(absmax, {n}, Blocks{block}), 1e-12), x);
    fd.copy_(absmax, scales);
  }
  return fd.finalize();
}

} // namespace

TEST(HostBlocks, ASecondLevelOfBlocksPacksPairsAsTheEvaluatorDoes) {
  for (int64_t n : {int64_t(4096), int64_t(2500)}) {
    auto fusion = packedPairsFusion(n);
    for (const HostOptions& host : hostVariants())
      expectHostEqualsEvaluator(*fusion, host, 2);
  }
}

TEST(HostBlocks, EveryOpAndBlockSizeEqualsTheEvaluator) {
  auto fusion = everyOpByBlocks();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host, 1);
}

TEST(HostBlocks, ScaledStateUpdatesInPlaceByBlocksOverManyMembers) {
  // Members of one class and several sizes: whole blocks, a short last one, a lone element.
  auto fusion = scaledState({1000, 256, 1, 3000, 4096}, 256);
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host, 3);
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 1);
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  executor.run(arguments);
  EXPECT_EQ(executor.lastCompiled()->numLaunches(), 1u); // every member, one launch
}

TEST(HostBlocks, StridedBodiesReadBlocksInLogicalOrder) {
  // A transposed view and a broadcast make the body strided; blocks still run over the
  // domain's logical order, across its rows.
  FusionDefinition fd("strided_blocks");
  Val x = fd.defineTensor({70, 45}, DataType::Float, "x");
  Val bias = fd.defineTensor({45}, DataType::Float, "bias");
  Val y = x + broadcast_in_dim(bias, {70, 45}, {1});
  Val absmax = max(abs(y), Blocks{64});
  fd.addOutput(absmax);
  fd.addOutput(y / expand_blocks(absmax, {70, 45}, Blocks{64}));
  auto fusion = fd.finalize();
  std::vector<HostTensor> inputs = randomInputs(*fusion, 2);
  HostTensor storage(DataType::Float, {45, 70});
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  arguments[0] = transposedView(storage, 4);
  EvaluationResult expected = evaluate(*fusion, arguments);
  for (const HostOptions& host : hostVariants()) {
    ExecutorOptions options;
    options.backend = "host";
    options.host = host;
    RunResult result = FusionExecutorCache(*fusion, options).run(arguments);
    for (size_t o = 0; o < expected.outputs.size(); ++o)
      EXPECT_EQ(
          countDifferences(result.outputs[o], expected.outputs[o], fmt::format("output {}", o)), 0);
  }
}

TEST(HostBlocks, EveryThreadsPerBlockHoldsWholeBlocks) {
  // 32 threads hold a block of 1024 in one chunk of 32 rows; 1024 threads one of 16 per warp.
  auto fusion = scaledState({5000, 700}, 1024);
  auto small = scaledState({5000, 700}, 16);
  for (unsigned threads : {32u, 64u, 1024u}) {
    SCOPED_TRACE(fmt::format("{} threads per block", threads));
    for (const Fusion* each : {fusion.get(), small.get()}) {
      std::vector<HostTensor> inputs = randomInputs(*each, 3);
      std::vector<HostTensor> reference = inputs;
      std::vector<Argument> arguments = argumentsOf(*each, inputs);
      std::vector<Argument> referenceArguments = argumentsOf(*each, reference);
      ExecutorOptions options;
      options.backend = "host";
      options.host.execution = HostExecution::Verify;
      options.host.blockOrder = {BlockOrder::Kind::Shuffle, 5};
      options.schedule.threadsPerBlock = threads;
      FusionExecutorCache(*each, options).run(arguments);
      evaluate(*each, referenceArguments);
      for (size_t i = 0; i < inputs.size(); ++i)
        EXPECT_EQ(countDifferences(inputs[i], reference[i], each->inputs()[i]->name()), 0);
    }
  }
}

TEST(HostBlocks, WhatKernelsDoNotComputeByBlocksIsRefusedByName) {
  ExecutorOptions options;
  options.backend = "host";
  auto refusal = [&](const std::function<void(FusionDefinition&, Val)>& build) {
    FusionDefinition fd("refused");
    Val x = fd.defineTensor({512}, DataType::Float, "x");
    build(fd, x);
    auto fusion = fd.finalize();
    std::vector<HostTensor> inputs = randomInputs(*fusion, 1);
    std::vector<HostTensor> before = inputs;
    std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
    // The reference evaluator runs each of them.
    std::vector<HostTensor> reference = inputs;
    std::vector<Argument> referenceArguments = argumentsOf(*fusion, reference);
    evaluate(*fusion, referenceArguments);
    std::string error = errorOf([&] { FusionExecutorCache(*fusion, options).run(arguments); });
    for (size_t i = 0; i < inputs.size(); ++i) // nothing was written
      EXPECT_EQ(countDifferences(inputs[i], before[i], "input"), 0);
    return error;
  };
  EXPECT_CONTAINS(refusal([](FusionDefinition& fd, Val x) {
                    Val first = max(abs(x), Blocks{64});
                    Val scaled = x / expand_blocks(first, {512}, Blocks{64});
                    fd.addOutput(sum(scaled, Blocks{128}));
                  }),
                  "reduces over blocks a value computed from another reduction over blocks");
  EXPECT_CONTAINS(refusal([](FusionDefinition& fd, Val x) {
                    Val absmax = max(abs(x), Blocks{64});
                    fd.addOutput(sum(x / expand_blocks(absmax, {512}, Blocks{64})));
                  }),
                  "reduces over all its elements a value computed by blocks; a kernel body that "
                  "reads by blocks reduces nothing else, so far");
  EXPECT_CONTAINS(refusal([](FusionDefinition& fd, Val x) {
                    Val absmax = max(abs(x), Blocks{64});
                    Val halves = expand_blocks(absmax, {16}, Blocks{2});
                    fd.addOutput(x * expand_blocks(halves, {512}, Blocks{32}));
                  }),
                  "other than through expand_blocks(…, block=64)");
}

TEST(HostBlocks, ABlockTensorMustBeContiguous) {
  auto fusion = scaledState({1024}, 256);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 1);
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  HostTensor wide(DataType::Float, {8});
  TensorRef strided = wide.ref();
  strided.shape = {4};
  strided.strides = {2};
  arguments[2] = strided;
  HostTensor before = inputs[0];
  ExecutorOptions options;
  options.backend = "host";
  EXPECT_CONTAINS(errorOf([&] { FusionExecutorCache(*fusion, options).run(arguments); }),
                  "'scales0' holds one element per block of 256 and must be contiguous; it has "
                  "stride 2");
  EXPECT_EQ(countDifferences(inputs[0], before, "x0"), 0);
}
