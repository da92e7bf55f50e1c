// Rows longer than a segment (docs/reductions.md §9): a rows chunk is a group of rows by one
// segment of kRowSegmentColumns columns, so a few long rows spread over many blocks. Each
// segment leaves a partial, and the last block done with a group's segments combines them.
// The result must be the reference evaluator's bits in every block and thread order, on the
// host's fast path and on the device code in the emulator, along memory (a warp per row) and
// across it (tiles), and again on the next step (the group tickets back at zero).

#include "runtime/fusion_executor.h"
#include "runtime/launch_binding.h"
#include "scheduler/schedule.h"
#include "segmenter/segment.h"
#include "tests/runtime/host_evaluator_runs.h"
#include "tests/support/error_of.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "ir/runtime_shapes.h"

#include <gtest/gtest.h>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

struct RowShape {
  int64_t rows, columns;
  DataType dtype;
};

/// Rows of one segment exactly, one column past it, two row groups of several segments, and a
/// few rows of many segments with a short last one: sums, maxima and truth values, one member
/// each, its results feeding an update (as Adafactor's factors do), so that the second step
/// reads what the first wrote.
std::unique_ptr<Fusion> longRows() {
  const RowShape shapes[] = {{4, kRowSegmentColumns, DataType::Float},
                             {33, kRowSegmentColumns + 1, DataType::Int32},
                             {40, 2 * kRowSegmentColumns + 6, DataType::Float},
                             {3, 5 * kRowSegmentColumns + 40, DataType::BFloat16},
                             {2, 2 * kRowSegmentColumns + 6, DataType::Bool}};
  FusionDefinition fd("long_rows");
  for (size_t i = 0; i < std::size(shapes); ++i) {
    auto [rows, columns, dtype] = shapes[i];
    Val x = fd.defineTensor({rows, columns}, dtype, fmt::format("x{}", i));
    if (dtype == DataType::Bool) {
      fd.addOutput(any(x, {1}));
      fd.addOutput(all(x, {1}));
      continue;
    }
    fd.addOutput(max(x, {1}));
    if (dtype != DataType::Float) {
      fd.addOutput(sum(x, {1}));
      continue;
    }
    Val p = fd.defineTensor({rows, columns}, dtype, fmt::format("p{}", i));
    Val meanSquare = sum(x * x, {1}) / double(columns);
    Val scale = broadcast_in_dim(1.0 / sqrt(meanSquare + 1e-30), {rows, columns}, {0});
    fd.copy_(p - x * scale * 0.01, p);
  }
  return fd.finalize();
}

} // namespace

TEST(HostRowSegments, LongRowsEqualTheEvaluatorInEveryOrder) {
  auto fusion = longRows();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host);
}

TEST(HostRowSegments, TransposedLongRowsEqualTheEvaluatorForEveryBlockSize) {
  // Column sums of a grad, as Adafactor's: tiles of 32 rows by 32 columns, each segment's tiles
  // one chunk. 70 rows are three row groups (the last of 6 rows) of three segments each; with
  // 32-thread blocks a chunk is 4 rows, with 1024 threads a tile row per warp.
  const int64_t rows = 70, columns = 2 * kRowSegmentColumns + 33;
  FusionDefinition fd("column_sums");
  Val x = fd.defineTensor({rows, columns}, DataType::Float, "x");
  fd.addOutput(sum(x, {1}));
  fd.addOutput(min(x, {1}));
  auto fusion = fd.finalize();
  HostTensor storage(DataType::Float, {columns, rows});
  std::vector<Argument> arguments{transposedView(storage, 11)};
  EvaluationResult expected = evaluate(*fusion, arguments);
  for (unsigned threads : {32u, 256u, 1024u})
    for (HostExecution execution : {HostExecution::Fast, HostExecution::Verify}) {
      SCOPED_TRACE(
          fmt::format("{} threads per block, {}", threads, hostExecutionName(execution).str()));
      ExecutorOptions options;
      options.backend = "host";
      options.host.execution = execution;
      options.host.blockOrder = {BlockOrder::Kind::Shuffle, 3};
      options.host.threads = 3;
      options.schedule.threadsPerBlock = threads;
      FusionExecutorCache executor(*fusion, options);
      for (int step = 0; step < 2; ++step) { // the second step finds the tickets at zero
        RunResult result = executor.run(arguments);
        EXPECT_EQ(countDifferences(result.outputs[0], expected.outputs[0], "column sums"), 0);
        EXPECT_EQ(countDifferences(result.outputs[1], expected.outputs[1], "column minima"), 0);
      }
    }
}

TEST(HostRowSegments, AFewLongRowsSpreadOverManyChunks) {
  // Adafactor's column factor of GPT-2's embedding: 768 rows of 50,257 (the transposed grad).
  // A chunk of whole rows would give 24 blocks work; segments give each row group 99 chunks,
  // with a partial per row and segment and a ticket per row group in the workspace. Rows no
  // longer than a segment keep one chunk per row group and no partials. Each chunk weighs its
  // elements, by which the blocks share the launch (codegen/chunk_shares.h).
  for (auto [rows, columns] : {std::pair<int64_t, int64_t>{768, 50257}, {50257, 512}}) {
    FusionDefinition fd("factor");
    Val g = fd.defineTensor({rows, columns}, DataType::Float, "g");
    fd.addOutput(sum(g * g, {1}));
    auto fusion = fd.finalize();
    SegmentedFusion segmented = segment(*fusion, {SegmentationMode::Batched});
    ScheduledFusion scheduled =
        schedule(segmented, declaredSpecialization(segmented), defaultDevice());
    ASSERT_EQ(scheduled.launches.size(), 1u);
    const KernelPlan& plan = scheduled.plans[scheduled.launches[0].plan];
    int64_t rowsPerChunk = plan.bodies[0].chunkElements;
    HostTensor result(DataType::Float, {rows});
    TensorRef input{DataType::Float, {rows, columns}, {columns, 1}, nullptr};
    std::vector<Argument> arguments{input};
    RuntimeShapes shapes = inferRuntimeShapes(*fusion, arguments);
    TensorRef output = result.ref();
    auto tensorOf = [&](const Value* value, bool) -> const TensorRef& {
      return value == fusion->inputs()[0] ? input : output;
    };
    GlobalReductions globals;
    LaunchBinding binding = bindLaunch(
        plan, scheduled.launches[0], shapes, tensorOf,
        [](const Value*) { return ScalarArgument(0.0); }, globals, 0);
    int64_t groups = (rows + rowsPerChunk - 1) / rowsPerChunk;
    int64_t segments = (columns + kRowSegmentColumns - 1) / kRowSegmentColumns;
    EXPECT_EQ(int64_t(binding.numChunks), groups * segments) << rows << " x " << columns;
    // Blocks share work: a chunk weighs its rows times its segment's columns.
    EXPECT_EQ(binding.work,
              groups * segments * rowsPerChunk * std::min(columns, kRowSegmentColumns));
    uint64_t partials = segments > 1 ? uint64_t(rows * segments) * sizeof(float) : 0;
    uint64_t tickets = segments > 1 ? uint64_t(groups) * sizeof(uint32_t) : 0;
    EXPECT_GE(binding.workspaceBytes, partials + tickets);
    EXPECT_LT(binding.workspaceBytes, partials + tickets + 64);
  }
}

TEST(HostRowSegments, ASegmentThatIsNotAPowerOfTwoIsRefused) {
  FusionDefinition fd("bad_segment");
  Val x = fd.defineTensor({4, 100}, DataType::Float, "x");
  fd.addOutput(sum(x, {1}));
  auto fusion = fd.finalize();
  SegmentedFusion segmented = segment(*fusion, {SegmentationMode::Batched});
  for (int64_t columns : {int64_t(48), int64_t(16), int64_t(1) << 21}) {
    ScheduleOptions options;
    options.rowSegmentColumns = columns;
    EXPECT_CONTAINS(errorOf([&] {
                      schedule(segmented, declaredSpecialization(segmented), defaultDevice(),
                               options);
                    }),
                    fmt::format("row segments must be a power of two from 32 to 2^20 columns, "
                                "not {}",
                                columns));
  }
}
