// A subgraph that reduces in several ways (over all elements, over rows of a dimension, by
// blocks) runs as bodies of one launch (docs/segmenter.md §2.5), on the host backend: every
// result and updated input equals the reference evaluator's bits on the fast path and on the
// device code in the emulator, in every block and thread order and every mode, in as many
// launches as a subgraph that reduces one way; what the bodies cannot keep correct side by
// side is refused by name with nothing written.

#include "runtime/fusion_executor.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"
#include "tests/runtime/host_evaluator_runs.h"
#include "tests/support/error_of.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// A clipped step's first phase beside Adafactor's factors, as a new user writes it: the
/// total norm over every grad (global), each matrix's row sums of g*g (the value the norm
/// reduces too) and of |g| (another value), and the largest |g| of each grad (tensor scope).
std::unique_ptr<Fusion> clipBesideRowSums() {
  FusionDefinition fd("clip_rows");
  std::vector<std::pair<int64_t, int64_t>> matrices = {{37, 301}, {1, 5}, {64, 64}, {3, 1}};
  std::vector<Val> squares;
  for (size_t i = 0; i < matrices.size(); ++i) {
    auto [rows, columns] = matrices[i];
    Val g = fd.defineTensor({rows, columns}, DataType::Float, fmt::format("g{}", i));
    Val square = g * g;
    squares.push_back(square);
    fd.addOutput(sum(square, {1}));
    fd.addOutput(sum(abs(g), {1}));
    fd.addOutput(max(abs(g)));
  }
  Val bias = fd.defineTensor({300}, DataType::BFloat16, "bias");
  Val wide = cast(bias, DataType::Float);
  squares.push_back(wide * wide);
  fd.addOutput(sum(squares)); // the clip's squared total norm, one global reduction
  return fd.finalize();
}

/// Rows of two dimensions and all elements of one value: a [40, 30, 1] tensor reduced over
/// dimension 1 (followed by a static 1), over dimension 2 and over every element.
std::unique_ptr<Fusion> rowsOfTwoDimensions() {
  FusionDefinition fd("two_dims");
  Val x = fd.defineTensor({40, 30, 1}, DataType::Float, "x");
  Val y = x * 1.5 + 0.25;
  fd.addOutput(sum(y, {1}));
  fd.addOutput(max(y, {2}));
  fd.addOutput(sum(y));
  return fd.finalize();
}

/// Blocks beside a tensor reduction: each element over its block's absmax, and the sum of
/// every element.
std::unique_ptr<Fusion> blocksBesideASum() {
  FusionDefinition fd("blocks_sum");
  Val x = fd.defineTensor({1000}, DataType::Float, "x");
  Val absmax = max(abs(x), Blocks{64});
  fd.addOutput(x / expand_blocks(absmax, {1000}, Blocks{64}));
  fd.addOutput(sum(x));
  fd.addOutput(sum(x, {0}));
  return fd.finalize();
}

/// Launches of one run in `mode`.
size_t launchesIn(const Fusion& fusion, SegmentationMode mode) {
  return segment(fusion, {mode}).numLaunches();
}

} // namespace

TEST(HostReductionWays, ClipBesideRowSumsEqualsTheEvaluator) {
  auto fusion = clipBesideRowSums();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host, 1);
}

TEST(HostReductionWays, RowsOfTwoDimensionsAndAllElementsEqualTheEvaluator) {
  for (auto* build : {rowsOfTwoDimensions, blocksBesideASum}) {
    auto fusion = build();
    SCOPED_TRACE(fusion->name());
    for (const HostOptions& host : hostVariants())
      expectHostEqualsEvaluator(*fusion, host, 1);
  }
}

TEST(HostReductionWays, EveryModeRunsTheWaysInOneLaunch) {
  auto fusion = clipBesideRowSums();
  // One launch per subgraph per component mode: the parts of a subgraph share it.
  EXPECT_EQ(launchesIn(*fusion, SegmentationMode::PerComponent), 5u);
  EXPECT_EQ(launchesIn(*fusion, SegmentationMode::Batched), 2u);
  EXPECT_EQ(launchesIn(*fusion, SegmentationMode::Packed), 1u);
  SegmentedFusion segmented = segment(*fusion, {SegmentationMode::Batched});
  const SegmentedPhase& phase = segmented.phases.front();
  EXPECT_EQ(phase.components.size(), 9u); // each matrix: all elements, rows; the bias: one
  std::string report = formatSegmentedFusion(segmented);
  EXPECT_CONTAINS(report, "a subgraph reduces in 2 ways: components 0 over all elements, 1 "
                          "over rows of dimension 1, one body each");
  for (SegmentationMode mode : {SegmentationMode::PerComponent, SegmentationMode::Packed}) {
    ExecutorOptions options;
    options.backend = "host";
    options.mode = mode;
    options.host.execution = HostExecution::Verify;
    std::vector<HostTensor> inputs = randomInputs(*fusion, 4);
    std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
    RunResult result = FusionExecutorCache(*fusion, options).run(arguments);
    EvaluationResult expected = evaluate(*fusion, arguments);
    for (size_t o = 0; o < expected.outputs.size(); ++o)
      EXPECT_EQ(countDifferences(result.outputs[o], expected.outputs[o], fmt::format("{}", o)), 0);
  }
  EXPECT_EQ(launchesIn(*rowsOfTwoDimensions(), SegmentationMode::PerComponent), 1u);
  EXPECT_EQ(launchesIn(*blocksBesideASum(), SegmentationMode::Batched), 1u);
}

TEST(HostReductionWays, AnInPlaceWriteReadByAnotherWayIsRefusedWithNothingWritten) {
  // The rows body reads x's entry value while the body over all elements writes x: side by
  // side in one launch, that read could see the new value.
  FusionDefinition fd("in_place");
  Val x = fd.defineTensor({16, 8}, DataType::Float, "x");
  fd.addOutput(sum(x, {1}));
  fd.addOutput(sum(x));
  fd.copy_(x * 0.5, x);
  auto fusion = fd.finalize();
  std::vector<HostTensor> inputs = randomInputs(*fusion, 5);
  std::vector<HostTensor> before = inputs;
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  ExecutorOptions options;
  options.backend = "host";
  EXPECT_CONTAINS(errorOf([&] { FusionExecutorCache(*fusion, options).run(arguments); }),
                  "'x' (copy_ of '");
  EXPECT_CONTAINS(errorOf([&] { FusionExecutorCache(*fusion, options).run(arguments); }),
                  "is written by the kernel body that reduces over all elements and read by the "
                  "one that reduces over rows of dimension 1");
  EXPECT_EQ(countDifferences(inputs[0], before[0], "x"), 0);
  std::vector<HostTensor> reference = before; // the evaluator runs it
  std::vector<Argument> referenceArguments = argumentsOf(*fusion, reference);
  EvaluationResult expected = evaluate(*fusion, referenceArguments);
  EXPECT_EQ(expected.outputs.size(), 2u);
}
