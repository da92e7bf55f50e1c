// Phases on the host backend: one executor runs every phase of a fusion whose values read
// reductions, keeping each phase's results for the next, to the whole fusion's bits on the
// evaluator; an operation the caller supplies runs between the phases; the components a
// caller found are segmented as given, not found again.

#include "runtime/fusion_executor.h"
#include "runtime/prepared_run.h"
#include "segmenter/components.h"
#include "tests/runtime/host_evaluator_runs.h"
#include "tests/segmenter/phase_fusions.h"
#include "tests/support/error_of.h"
#include "tests/support/mixed_shapes.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// A few host variants: fast and verifying, several block orders and threads.
std::vector<HostOptions> someHostVariants() {
  std::vector<HostOptions> variants = hostVariants();
  std::vector<HostOptions> some;
  for (size_t i = 0; i < variants.size(); i += 3)
    some.push_back(variants[i]);
  return some;
}

/// s = sum(x * x); p = p * s + y, with the sum multiplied by `factor` where the fusion says so
/// (the reference for a phase boundary that multiplies the kept sum).
std::unique_ptr<Fusion> scaledBySum(double factor) {
  FusionDefinition fd("scaled");
  Val x = fd.defineTensor({1500}, DataType::Float, "x");
  Val p = fd.defineTensor({700}, DataType::Float, "p");
  Val s = sum(x * x);
  if (factor != 1.0)
    s = s * factor;
  fd.copy_(p * s + 1.0, p);
  fd.addOutput(sqrt(s));
  return fd.finalize();
}

} // namespace

TEST(HostPhases, EveryPhaseFusionEqualsTheEvaluator) {
  std::vector<std::unique_ptr<Fusion>> fusions;
  fusions.push_back(clippedAdam(mixedShapes(9)));
  fusions.push_back(lambLike());
  fusions.push_back(reductionChain());
  fusions.push_back(loggedNorm());
  fusions.push_back(movedWrite());
  fusions.push_back(samePhaseWrite());
  fusions.push_back(rowShift());
  for (const auto& fusion : fusions) {
    SCOPED_TRACE(fusion->name());
    for (const HostOptions& host : someHostVariants())
      expectHostEqualsEvaluator(*fusion, host);
  }
}

TEST(HostPhases, AnOperationBetweenPhasesRewritesTheKeptResults) {
  // A boundary doubling the kept sum, as an all-reduce over two equal ranks would: the step
  // equals a fusion that doubles it itself (exactly: a power of two).
  auto fusion = scaledBySum(1.0);
  auto doubled = scaledBySum(2.0);
  std::vector<unsigned> ended;
  ExecutorOptions options;
  options.backend = "host";
  options.phaseBoundary = [&](const PhaseResults& results) {
    ended.push_back(results.phase);
    ASSERT_EQ(results.memory.size(), 1u);
    ASSERT_EQ(results.values.size(), 1u);
    EXPECT_EQ(results.values[0]->definition()->op(), OpKind::Sum);
    ASSERT_EQ(results.memory[0].dtype, DataType::Float);
    EXPECT_EQ(results.stream, nullptr);
    *static_cast<float*>(results.memory[0].data) *= 2.0f;
  };
  FusionExecutorCache executor(*fusion, options);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 4), expectedInputs = inputs;
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  std::vector<Argument> expectedArguments = argumentsOf(*doubled, expectedInputs);
  for (int step = 0; step < 2; ++step) {
    RunResult result = executor.run(arguments);
    EvaluationResult expected = evaluate(*doubled, expectedArguments);
    EXPECT_EQ(countDifferences(result.outputs[0], expected.outputs[0], "the norm"), 0);
  }
  EXPECT_EQ(countDifferences(inputs[1], expectedInputs[1], "p"), 0);
  EXPECT_EQ(ended, (std::vector<unsigned>{0, 0}));
  // A prepared run crosses the same boundary.
  std::unique_ptr<PreparedRun> prepared = executor.prepare(arguments);
  prepared->launch();
  evaluate(*doubled, expectedArguments);
  EXPECT_EQ(countDifferences(inputs[1], expectedInputs[1], "p, prepared"), 0);
  EXPECT_EQ(ended.size(), 3u);
}

TEST(HostPhases, ThreePhasesCrossTwoBoundaries) {
  auto fusion = reductionChain();
  std::vector<std::pair<unsigned, size_t>> ended;
  ExecutorOptions options;
  options.backend = "host";
  options.phaseBoundary = [&](const PhaseResults& results) {
    ended.push_back({results.phase, results.memory.size()});
  };
  FusionExecutorCache executor(*fusion, options);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 2);
  executor.run(argumentsOf(*fusion, inputs));
  EXPECT_EQ(ended, (std::vector<std::pair<unsigned, size_t>>{{0, 1}, {1, 1}}));
}

TEST(HostPhases, TheReferenceBackendRefusesAnOperationBetweenPhases) {
  auto fusion = scaledBySum(1.0);
  ExecutorOptions options;
  options.backend = "reference";
  options.phaseBoundary = [](const PhaseResults&) {};
  EXPECT_CONTAINS(errorOf([&] { FusionExecutorCache executor(*fusion, options); }),
                  "cannot run an operation between its phases");
}

TEST(HostPhases, TheExecutorSegmentsTheComponentsItIsGiven) {
  // Marked components: the executor's segmentation holds the marks, so it did not find its
  // own again.
  auto fusion = clippedAdam(mixedShapes(4));
  auto found = std::make_shared<FusionComponents>(findComponents(*fusion));
  for (std::vector<Component>& phase : found->ofPhase)
    for (Component& component : phase)
      component.subgraph += 1000;
  ExecutorOptions options;
  options.backend = "host";
  options.components = found;
  FusionExecutorCache executor(*fusion, options);
  std::vector<HostTensor> inputs = randomInputs(*fusion, 1);
  executor.run(argumentsOf(*fusion, inputs));
  for (const SegmentedPhase& phase : executor.lastCompiled()->segmented->phases)
    for (const Component& component : phase.components)
      EXPECT_GE(component.subgraph, 1000u);
}
