// Reductions on the host backend: a fusion with reductions runs as its phases, and every
// result, output and updated input equals the reference evaluator's bits, on the fast path
// and verifying in forward, reverse and shuffled block and thread orders, on one and several
// CPU threads, over members of awkward sizes (0, 1, 1023, 1025, 4097 elements).

#include "runtime/cuda/fusion_cubins.h"
#include "runtime/fusion_executor.h"
#include "runtime/prepared_run.h"
#include "segmenter/segment.h"
#include "tests/runtime/host_evaluator_runs.h"
#include "tests/support/error_of.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "ir/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <tuple>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

const std::vector<int64_t> kSizes = {1023, 0, 1, 4097, 1025, 7, 256};

/// Adam's momentum step with the gradients clipped by their global norm.
std::unique_ptr<Fusion> clippedMomentum(DataType dtype) {
  FusionDefinition fd("clipped");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  std::vector<Val> params, grads, moments, squares;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    params.push_back(fd.defineTensor({kSizes[i]}, dtype, fmt::format("p{}", i)));
    grads.push_back(fd.defineTensor({kSizes[i]}, dtype, fmt::format("g{}", i)));
    moments.push_back(fd.defineTensor({kSizes[i]}, DataType::Float, fmt::format("m{}", i)));
    Val g = cast(grads.back(), DataType::Float);
    squares.push_back(g * g);
  }
  Val squared = sum(squares);
  Val coefficient = minimum(1.0 / (sqrt(squared) + 1e-6), 1.0);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    Val m1 = moments[i] * 0.9 + cast(grads[i], DataType::Float) * coefficient * 0.1;
    fd.copy_(cast(params[i] - lr * m1, dtype), params[i]);
    fd.copy_(m1, moments[i]);
  }
  fd.addOutput(squared);
  return fd.finalize();
}

} // namespace

TEST(HostReductions, ClippedStepsEqualTheEvaluatorInEveryOrder) {
  auto fusion = clippedMomentum(DataType::Float);
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host);
}

TEST(HostReductions, ClippedStepIsTwoLaunches) {
  auto fusion = clippedMomentum(DataType::BFloat16);
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 1);
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  executor.run(arguments);
  // One executor runs both phases: the norm's, then the update reading it.
  ASSERT_EQ(executor.lastCompiled()->segmented->phases.size(), 2u);
  EXPECT_EQ(executor.lastCompiled()->numLaunches(), 2u);
  EXPECT_EQ(executor.lastCompiled()->scheduled.launches.back().phase, 1u);
  HostOptions verify;
  verify.execution = HostExecution::Verify;
  verify.blockOrder = {BlockOrder::Kind::Shuffle, 3};
  expectHostEqualsEvaluator(*fusion, verify);
}

TEST(HostReductions, EveryOpOfEveryScopeAndDtype) {
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Double, DataType::Int32,
                         DataType::Bool, DataType::Half}) {
    SCOPED_TRACE(shortName(dtype).str());
    FusionDefinition fd("every_op");
    std::vector<Val> xs;
    for (size_t i = 0; i < 3; ++i)
      xs.push_back(fd.defineTensor({kSizes[i + 3], 2}, dtype, fmt::format("x{}", i)));
    bool numeric = dtype != DataType::Bool;
    for (Val x : xs) {
      if (numeric)
        fd.addOutput(sum(x));
      fd.addOutput(max(x));
      fd.addOutput(min(x));
      fd.addOutput(any(x));
      fd.addOutput(all(x));
    }
    fd.addOutput(max(xs));
    fd.addOutput(any(xs));
    if (numeric)
      fd.addOutput(sum(xs));
    auto fusion = fd.finalize();
    HostOptions verify;
    verify.execution = HostExecution::Verify;
    verify.blockOrder = {BlockOrder::Kind::Reverse, 0};
    for (const HostOptions& host : {HostOptions{}, verify})
      for (bool specials : {false, true}) // NaN and infinities: max/min/any/all see them
        expectHostEqualsEvaluator(*fusion, host, 1, specials);
  }
}

TEST(HostReductions, CombinesOfMoreValuesThanABlockHasThreadsEqualTheEvaluator) {
  // The last block combines more values than it has threads: a member of 301 chunks (each
  // thread a pair of partials) and a global over 300 members (likewise), in f32 (the sum's
  // bits show the tree's shape) and f64.
  for (DataType dtype : {DataType::Float, DataType::Double}) {
    SCOPED_TRACE(shortName(dtype).str());
    FusionDefinition fd("wide_combine");
    Val x = fd.defineTensor({301 * 1024 - 5}, dtype, "x");
    fd.addOutput(sum(x));
    fd.addOutput(max(x));
    std::vector<Val> ys;
    for (int i = 0; i < 300; ++i)
      ys.push_back(fd.defineTensor({3}, dtype, fmt::format("y{}", i)));
    fd.addOutput(sum(ys));
    fd.addOutput(min(ys));
    auto fusion = fd.finalize();
    HostOptions verify;
    verify.execution = HostExecution::Verify;
    verify.blockOrder = {BlockOrder::Kind::Shuffle, 17};
    for (const HostOptions& host : {HostOptions{}, verify})
      expectHostEqualsEvaluator(*fusion, host, 1);
  }
}

TEST(HostReductions, EveryBlockSizeGivesTheEvaluatorsBits) {
  // The block size sets the chunk (4 rows of threads), the warps per block tree, the combine's
  // passes and the rows' tiles: 32 threads (one warp; passes of 8 from 513 partials), 64 and
  // 1024 (32 warps: a tile row per warp), each on the device code in the emulator.
  FusionDefinition fd("block_sizes");
  Val x = fd.defineTensor({70001}, DataType::Float, "x");
  Val along = fd.defineTensor({70, 45}, DataType::Float, "along");
  Val across = fd.defineTensor({70, 45}, DataType::Float, "across");
  fd.addOutput(sum(x));
  fd.addOutput(max(x));
  fd.addOutput(sum(along, {1}));
  fd.addOutput(sum(across, {1}));
  auto fusion = fd.finalize();
  std::vector<HostTensor> inputs = randomInputs(*fusion, 5);
  HostTensor storage(DataType::Float, {45, 70});
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  arguments[2] = transposedView(storage, 6);
  EvaluationResult expected = evaluate(*fusion, arguments);
  for (unsigned threads : {32u, 64u, 1024u}) {
    SCOPED_TRACE(fmt::format("{} threads per block", threads));
    ExecutorOptions options;
    options.backend = "host";
    options.host.execution = HostExecution::Verify;
    options.host.blockOrder = {BlockOrder::Kind::Shuffle, 5};
    options.schedule.threadsPerBlock = threads;
    RunResult result = FusionExecutorCache(*fusion, options).run(arguments);
    for (size_t o = 0; o < expected.outputs.size(); ++o)
      EXPECT_EQ(
          countDifferences(result.outputs[o], expected.outputs[o], fmt::format("output {}", o)), 0);
  }
}

TEST(HostReductions, EveryOpOverRowsOfEveryDtype) {
  // Rows longer than a block, more rows than a chunk, empty rows and no rows, rank 3, and
  // rows of a dimension followed by static 1s.
  const std::vector<std::vector<int64_t>> shapes = {{3, 1023},   {1500, 3},   {4, 0},   {0, 5},
                                                    {2, 3, 257}, {7, 300, 1}, {9, 1, 1}};
  const std::vector<int64_t> dims = {1, 1, 1, 1, 2, 1, 0};
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Double, DataType::Int32,
                         DataType::Bool, DataType::Half}) {
    SCOPED_TRACE(shortName(dtype).str());
    FusionDefinition fd("rows");
    for (size_t i = 0; i < shapes.size(); ++i) {
      Val x = fd.defineTensor(shapes[i], dtype, fmt::format("x{}", i));
      int64_t inner = dims[i];
      if (dtype != DataType::Bool)
        fd.addOutput(sum(x, {inner}));
      if (shapes[i][size_t(inner)] > 0) { // max and min of an empty row have no value
        fd.addOutput(max(x, {inner}));
        fd.addOutput(min(x, {inner}));
      }
      fd.addOutput(any(x, {inner}));
      fd.addOutput(all(x, {inner}));
    }
    auto fusion = fd.finalize();
    HostOptions verify;
    verify.execution = HostExecution::Verify;
    verify.blockOrder = {BlockOrder::Kind::Shuffle, 5};
    verify.threads = 3;
    for (const HostOptions& host : {HostOptions{}, verify})
      for (bool specials : {false, true})
        expectHostEqualsEvaluator(*fusion, host, 1, specials);
  }
}

TEST(HostReductions, RowResultsFeedTheUpdate) {
  // Adafactor's row factor: each row's mean square, read back along its row by phase 2.
  FusionDefinition fd("factored");
  for (int i = 0; i < 3; ++i) {
    int64_t rows = 5 + 300 * i, columns = 700 - 200 * i;
    Val p = fd.defineTensor({rows, columns}, DataType::Float, fmt::format("p{}", i));
    Val g = fd.defineTensor({rows, columns}, DataType::Float, fmt::format("g{}", i));
    Val meanSquare = sum(g * g, {1}) / double(columns);
    Val scale = broadcast_in_dim(1.0 / sqrt(meanSquare + 1e-30), {rows, columns}, {0});
    fd.copy_(p - g * scale * 0.01, p);
  }
  auto fusion = fd.finalize();
  EXPECT_EQ(segment(*fusion).phases.size(), 2u);
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host);
}

TEST(HostReductions, RowsOfATransposedView) {
  // A column sum as a row sum of the transposed view (strides swapped), as Adafactor's is: the
  // device takes it in tiles of 32 rows x 32 columns. A partial tile (6 rows, 33 column tiles
  // with a partial last one) and several (70 rows: 3 tiles, the last partial).
  for (auto [rows, columns] : {std::pair<int64_t, int64_t>{6, 1029}, {70, 45}}) {
    FusionDefinition fd("columns");
    Val x = fd.defineTensor({rows, columns}, DataType::Float, "x");
    fd.addOutput(sum(x, {1}));
    fd.addOutput(max(x, {1}));
    auto fusion = fd.finalize();
    HostTensor storage(DataType::Float, {columns, rows});
    std::mt19937_64 random(9);
    fillFinite(storage, random);
    TensorRef transposed = storage.ref();
    transposed.shape = {rows, columns};
    transposed.strides = {1, rows};
    std::vector<Argument> arguments{transposed};
    EvaluationResult expected = evaluate(*fusion, arguments);
    for (const HostOptions& host : hostVariants()) {
      ExecutorOptions options;
      options.backend = "host";
      options.host = host;
      FusionExecutorCache executor(*fusion, options);
      RunResult result = executor.run(arguments);
      EXPECT_EQ(countDifferences(result.outputs[0], expected.outputs[0], "column sums"), 0);
      EXPECT_EQ(countDifferences(result.outputs[1], expected.outputs[1], "column maxima"), 0);
    }
  }
}

TEST(HostReductions, MaxOfAnEmptyRowFailsBeforeAnythingIsWritten) {
  FusionDefinition fd("empty_rows");
  Val x = fd.defineTensor({3, -1}, DataType::Float, "x");
  Val p = fd.defineTensor({3}, DataType::Float, "p");
  fd.copy_(p + max(x, {1}), p);
  auto fusion = fd.finalize();
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  HostTensor empty(DataType::Float, {3, 0}), pTensor(DataType::Float, {3});
  pTensor.as<float>()[1] = 2.0f;
  std::vector<Argument> arguments{empty.ref(), pTensor.ref()};
  EXPECT_CONTAINS(errorOf([&] { executor.run(arguments); }), "max over zero elements has no value");
  EXPECT_EQ(pTensor.as<float>()[1], 2.0f);
}

TEST(HostReductions, StridedMembersAndTensorScopeNorms) {
  // Per-tensor norms (LAMB's trust ratio) over members read through a broadcast.
  FusionDefinition fd("trust");
  for (int i = 0; i < 3; ++i) {
    Val p = fd.defineTensor({33 + i, 40}, DataType::Float, fmt::format("p{}", i));
    Val row = fd.defineTensor({40}, DataType::Float, fmt::format("b{}", i));
    Val u = p * 0.01 + broadcast_in_dim(row, {33 + i, 40}, {1});
    Val trust = sqrt(sum(p * p)) / (sqrt(sum(u * u)) + 1e-6);
    fd.copy_(p - u * trust, p);
  }
  auto fusion = fd.finalize();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host);
}

TEST(HostReductions, MaxOfNothingFailsBeforeAnythingIsWritten) {
  FusionDefinition fd("empty");
  Val x = fd.defineTensor({-1}, DataType::Float, "x");
  Val p = fd.defineTensor({4}, DataType::Float, "p");
  Val q = fd.defineTensor({4}, DataType::Float, "q");
  fd.copy_(q * 0.5, q); // phase 1 would write q
  fd.copy_(p + max(x), p);
  auto fusion = fd.finalize();
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  HostTensor empty(DataType::Float, {0}), pTensor(DataType::Float, {4}),
      qTensor(DataType::Float, {4});
  for (int i = 0; i < 4; ++i)
    pTensor.as<float>()[i] = qTensor.as<float>()[i] = float(i);
  std::vector<Argument> arguments{empty.ref(), pTensor.ref(), qTensor.ref()};
  EXPECT_CONTAINS(errorOf([&] { executor.run(arguments); }), "max over zero elements has no value");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(pTensor.as<float>()[i], float(i));
    EXPECT_EQ(qTensor.as<float>()[i], float(i));
  }
}

TEST(HostReductions, NvrtcCompilesTheDeviceHalfOfEveryPhase) {
  // The device path (rows of threads by shared-memory trees, block barriers; a thread per row
  // for reductions over rows) runs only on a GPU; NVRTC compiles it here, for every op and
  // dtype the host tests run.
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Int32, DataType::Bool}) {
    FusionDefinition fd("device_half");
    std::vector<Val> xs;
    for (int i = 0; i < 2; ++i)
      xs.push_back(fd.defineTensor({5 + i, 3}, dtype, fmt::format("x{}", i)));
    fd.addOutput(max(xs));
    fd.addOutput(any(xs[0]));
    fd.addOutput(all(xs[1]));
    if (dtype != DataType::Bool)
      fd.addOutput(sum(xs));
    Val y = fd.defineTensor({4, 9}, dtype, "y"); // rows: a thread per row
    fd.addOutput(max(y, {1}));
    auto fusion = fd.finalize();
    CubinCache cache(KernelCacheOptions{std::nullopt, /*useDisk=*/false});
    CompiledFusion compiled = compileFusionToCubins(*fusion, FusionCompileOptions{}, cache);
    ASSERT_FALSE(compiled.kernels.empty()) << shortName(dtype).str();
    for (const FusionKernel& kernel : compiled.kernels)
      EXPECT_FALSE(kernel.compiled->image.empty()) << kernel.plan->name;
  }
}

TEST(HostReductions, APreparedRunOfPhasesRebindsAGradAndEqualsTheEvaluator) {
  auto fusion = clippedMomentum(DataType::Float);
  std::vector<HostTensor> hostInputs = randomInputs(*fusion, 5), referenceInputs = hostInputs;
  std::vector<Argument> hostArguments = argumentsOf(*fusion, hostInputs);
  std::vector<Argument> referenceArguments = argumentsOf(*fusion, referenceInputs);
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  std::unique_ptr<PreparedRun> prepared = executor.prepare(hostArguments);
  // A fresh grad for g3 in other memory: every phase that reads it must read it from there.
  size_t grad = 0;
  while (fusion->inputs()[grad]->name() != "g3")
    ++grad;
  HostTensor freshGrad = hostInputs[grad];
  std::mt19937_64 random(9);
  fillFinite(freshGrad, random);
  for (int step = 0; step < 3; ++step) {
    if (step == 2) {
      prepared->rebindTensor(grad, freshGrad.data());
      std::memcpy(referenceInputs[grad].data(), freshGrad.data(), freshGrad.byteSize());
    }
    RunResult result = prepared->launch();
    EvaluationResult expected = evaluate(*fusion, referenceArguments);
    ASSERT_EQ(result.outputs.size(), 1u);
    EXPECT_EQ(countDifferences(result.outputs[0], expected.outputs[0], "the squared norm"), 0);
  }
  for (size_t i = 0; i < hostInputs.size(); ++i)
    if (fusion->inputs()[i]->isTensor() && i != grad)
      EXPECT_EQ(countDifferences(hostInputs[i], referenceInputs[i], fusion->inputs()[i]->name()),
                0);
}

TEST(HostReductions, AGlobalReductionOverSeveralLaunchesCombinesOnce) {
  // f32 and bf16 operands are two signature classes: in batched mode two launches contribute
  // to one sum, whose last contributor (in the second launch) combines them.
  FusionDefinition fd("two_launches");
  std::vector<Val> xs;
  for (int i = 0; i < 4; ++i)
    xs.push_back(fd.defineTensor({kSizes[i]}, i % 2 ? DataType::BFloat16 : DataType::Float,
                                 fmt::format("x{}", i)));
  fd.addOutput(sum(xs));
  fd.addOutput(max(xs));
  auto fusion = fd.finalize();
  ExecutorOptions options;
  options.backend = "host";
  options.mode = SegmentationMode::Batched;
  FusionExecutorCache executor(*fusion, options);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 8);
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  RunResult result = executor.run(arguments);
  EXPECT_EQ(executor.lastCompiled()->scheduled.launches.size(), 2u);
  EvaluationResult expected = evaluate(*fusion, arguments);
  for (size_t o = 0; o < 2; ++o)
    EXPECT_EQ(countDifferences(result.outputs[o], expected.outputs[o], "output"), 0);
  HostOptions verify;
  verify.execution = HostExecution::Verify;
  verify.blockOrder = {BlockOrder::Kind::Shuffle, 5};
  expectHostEqualsEvaluator(*fusion, verify);
}

TEST(HostReductions, APreparedRunOfPhasesWritesTheCallersOutputs) {
  auto fusion = clippedMomentum(DataType::Float);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 6), referenceInputs = inputs;
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  std::vector<Argument> referenceArguments = argumentsOf(*fusion, referenceInputs);
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  HostTensor squared(DataType::Float, {});
  std::vector<TensorRef> outputs{squared.ref()};
  std::unique_ptr<PreparedRun> prepared = executor.prepare(arguments, std::nullopt, outputs);
  for (int step = 0; step < 2; ++step) {
    EXPECT_TRUE(prepared->launch().outputs.empty()); // in the caller's tensor instead
    EvaluationResult expected = evaluate(*fusion, referenceArguments);
    EXPECT_EQ(countDifferences(squared, expected.outputs[0], "the squared norm"), 0);
  }
}

TEST(HostReductions, AnUnreadReductionIsNotComputed) {
  // Nothing reads `sum(x)`: the fusion is one phase whose kernel computes neg(x) alone.
  FusionDefinition fd("unread");
  Val x = fd.defineTensor({1500}, DataType::Float, "x");
  Val unread = sum(x * 2.0);
  (void)unread;
  fd.addOutput(-x);
  auto fusion = fd.finalize();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host, 1);
}

TEST(HostReductions, AReductionOfZeroDValuesIsRefusedNamingIt) {
  FusionDefinition fd("zero_d");
  Val x = fd.defineTensor({}, DataType::Float, "x");
  fd.addOutput(sum(x));
  auto fusion = fd.finalize();
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  HostTensor value(DataType::Float, {});
  std::vector<Argument> arguments{value.ref()};
  EXPECT_CONTAINS(errorOf([&] { executor.run(arguments); }), "reduces the 0-d value 'x'");
}

TEST(HostReductions, AZeroDOutputBesideAReductionIsWritten) {
  // `t` is a 0-d output of the component that computes the sum's operand: the host's
  // reduction rows, which stand in for the elements function, write it too.
  FusionDefinition fd("zero_d_beside");
  Val a = fd.defineTensor({}, DataType::Float, "a");
  Val x = fd.defineTensor({3000}, DataType::Float, "x");
  Val t = abs(a);
  fd.addOutput(sum(t + x));
  fd.copy_(t, a);
  fd.addOutput(t);
  auto fusion = fd.finalize();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host, 2);
}

TEST(HostReductions, EveryDtypeEachOpAllowsInEveryScope) {
  // Every data type, each op and scope the IR takes for it (the builder refuses the rest):
  // random values with every special (NaN, infinities, signed zeros, denormals) give the
  // evaluator's bits on the fast path and verifying in a shuffled order on 3 threads.
  HostOptions verify;
  verify.execution = HostExecution::Verify;
  verify.blockOrder = {BlockOrder::Kind::Shuffle, 13};
  verify.threads = 3;
  int built = 0;
  for (DataType dtype : kAllDataTypes) {
    SCOPED_TRACE(shortName(dtype).str());
    FusionDefinition fd("every_dtype");
    Val a = fd.defineTensor({1029}, dtype, "a");
    Val b = fd.defineTensor({5, 7}, dtype, "b");
    Val c = fd.defineTensor({6, 301}, dtype, "c"); // rows only: a value is reduced one way
    int outputs = 0;
    using Tensor = Val (*)(const Val&);
    using Global = Val (*)(llvm::ArrayRef<Val>);
    using Rows = Val (*)(const Val&, llvm::ArrayRef<int64_t>);
    const std::tuple<Tensor, Global, Rows> ops[] = {
        {&widefuse::sum, &widefuse::sum, &widefuse::sum},
        {&widefuse::max, &widefuse::max, &widefuse::max},
        {&widefuse::min, &widefuse::min, &widefuse::min},
        {&widefuse::any, &widefuse::any, &widefuse::any},
        {&widefuse::all, &widefuse::all, &widefuse::all}};
    for (auto [tensor, global, rows] : ops) {
      const std::function<Val()> scopes[] = {[&] { return tensor(a); },
                                             [&] {
                                               return global({a, b});
                                             },
                                             [&] { return rows(c, {1}); }};
      for (const auto& reduce : scopes) {
        try {
          fd.addOutput(reduce());
          ++outputs;
        } catch (const Error&) {
          // a dtype the op refuses (complex max, say): the IR names it; nothing to run
        }
      }
    }
    if (outputs == 0)
      continue;
    built += outputs;
    auto fusion = fd.finalize();
    for (const HostOptions& host : {HostOptions{}, verify})
      expectHostEqualsEvaluator(*fusion, host, 1, /*specials=*/true);
  }
  EXPECT_GT(built, 100); // most of the 17 x 15 pairs are allowed
}

TEST(HostReductions, ARowLongerThanAWarpCounterHoldsIsRefused) {
  // kMaxRowElements: a warp's counter holds 2^32 - 1 subtrees of 32. An expanded view (stride
  // 0, one stored element) one element longer is refused when the launch is bound, before
  // anything runs.
  FusionDefinition fd("long_rows");
  Val x = fd.defineTensor({1, -1}, DataType::Float, "x");
  fd.addOutput(sum(x, {1}));
  auto fusion = fd.finalize();
  HostTensor storage(DataType::Float, {1});
  TensorRef expanded = storage.ref();
  expanded.shape = {1, kMaxRowElements + 1};
  expanded.strides = {0, 0};
  ExecutorOptions options;
  options.backend = "host";
  EXPECT_CONTAINS(errorOf([&] { FusionExecutorCache(*fusion, options).run({expanded}); }),
                  fmt::format("reduces rows of {} elements; a kernel reduces rows of at most {}",
                              kMaxRowElements + 1, kMaxRowElements));
}
