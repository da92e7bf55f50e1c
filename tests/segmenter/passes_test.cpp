// Passes: fusions with reductions cut into fusions that run one after another. Each case runs
// its passes in order on the reference evaluator and must give the whole fusion's bits
// (outputs and every copied-into input), with the pass count docs/segmenter.md 9.4 gives.

#include "segmenter/passes.h"
#include "segmenter/segment.h"
#include "tests/support/error_of.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"
#include "ir/printer.h"
#include "tests/support/mixed_shapes.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace widefuse;

namespace {

/// Random inputs for a fusion (floats in [-2, 2], integers 0..9, scalars 0.5).
std::vector<HostTensor> randomInputs(const Fusion& fusion, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-2, 2);
  std::vector<HostTensor> tensors;
  for (const Value* input : fusion.inputs()) {
    if (!input->isTensor()) {
      tensors.emplace_back();
      continue;
    }
    llvm::SmallVector<int64_t, 4> shape(input->extents().begin(), input->extents().end());
    for (int64_t& extent : shape)
      extent = extent == kSymbolicExtent ? 3 : extent;
    HostTensor tensor(input->dtype(), shape);
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (input->dtype() == DataType::Float)
        tensor.as<float>()[i] = value(random);
      else if (input->dtype() == DataType::Int64)
        tensor.as<int64_t>()[i] = int64_t(random() % 10);
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

std::vector<Argument> argumentsOf(const Fusion& fusion, std::vector<HostTensor>& tensors) {
  std::vector<Argument> arguments;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (fusion.inputs()[i]->isTensor())
      arguments.push_back(tensors[i].ref());
    else
      arguments.push_back(ScalarArgument(0.5));
  return arguments;
}

/// Runs the passes in order, as the runtime will: each pass's inputs are the whole fusion's
/// arguments or earlier passes' results. Returns the whole fusion's outputs.
std::vector<HostTensor> runPasses(const Fusion& fusion, const PassPlan& plan,
                                  llvm::ArrayRef<Argument> arguments) {
  std::vector<HostTensor> results(plan.results.size());
  std::vector<HostTensor> outputs(fusion.outputs().size());
  for (const Pass& pass : plan.passes) {
    std::vector<Argument> passArguments;
    for (const PassInput& input : pass.inputs)
      passArguments.push_back(input.kind == PassInput::Kind::FusionInput
                                  ? arguments[input.index]
                                  : Argument(results[input.index].ref()));
    EvaluationResult evaluated = evaluate(*pass.fusion, passArguments);
    for (size_t o = 0; o < pass.outputs.size(); ++o) {
      if (pass.outputs[o].result >= 0)
        results[size_t(pass.outputs[o].result)] = evaluated.outputs[o];
      if (pass.outputs[o].fusionOutput >= 0)
        outputs[size_t(pass.outputs[o].fusionOutput)] = evaluated.outputs[o];
    }
  }
  return outputs;
}

void expectSameBits(const HostTensor& actual, const HostTensor& expected, const std::string& what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  // An empty tensor has no memory (a null pointer memcmp may not take).
  if (expected.byteSize() > 0)
    EXPECT_EQ(std::memcmp(actual.data(), expected.data(), expected.byteSize()), 0) << what;
}

/// Splits `fusion`, checks the pass count, and compares the passes run in order with the
/// whole fusion on the evaluator, bit for bit.
PassPlan expectSameAsWhole(const Fusion& fusion, size_t passes) {
  PassPlan plan = splitPasses(fusion);
  EXPECT_EQ(plan.passes.size(), passes) << printFusion(fusion);
  std::vector<HostTensor> wholeInputs = randomInputs(fusion, 5), passInputs = wholeInputs;
  std::vector<Argument> wholeArguments = argumentsOf(fusion, wholeInputs);
  std::vector<Argument> passArguments = argumentsOf(fusion, passInputs);
  EvaluationResult whole = evaluate(fusion, wholeArguments);
  std::vector<HostTensor> outputs = runPasses(fusion, plan, passArguments);
  for (size_t o = 0; o < outputs.size(); ++o)
    expectSameBits(outputs[o], whole.outputs[o], "output " + fusion.outputs()[o]->name());
  for (size_t i = 0; i < wholeInputs.size(); ++i)
    if (fusion.inputs()[i]->isTensor())
      expectSameBits(passInputs[i], wholeInputs[i], "input " + fusion.inputs()[i]->name());
  return plan;
}

/// Adam with the gradients clipped by their global norm first (torch's clip_grad_norm_).
std::unique_ptr<Fusion> clippedAdam(llvm::ArrayRef<optim::Shape> shapes) {
  FusionDefinition fd("clipped_adam");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  std::vector<Val> params, grads, moments, squares;
  for (size_t i = 0; i < shapes.size(); ++i) {
    params.push_back(fd.defineTensor(shapes[i], DataType::Float, fmt::format("p{}", i)));
    grads.push_back(fd.defineTensor(shapes[i], DataType::Float, fmt::format("g{}", i)));
    moments.push_back(fd.defineTensor(shapes[i], DataType::Float, fmt::format("m{}", i)));
    squares.push_back(grads.back() * grads.back());
  }
  Val squared = sum(squares);
  Val coefficient = minimum(1.0 / (sqrt(squared) + 1e-6), 1.0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    Val g = grads[i] * coefficient;
    Val m1 = moments[i] * 0.9 + g * 0.1;
    fd.copy_(params[i] - lr * m1, params[i]);
    fd.copy_(m1, moments[i]);
  }
  fd.addOutput(squared);
  return fd.finalize();
}

} // namespace

TEST(Passes, ClippedAdamIsTwoPassesOverAnyNumberOfParameters) {
  for (size_t count : {1u, 3u, 20u}) {
    auto fusion = clippedAdam(widefuse::testing::mixedShapes(count));
    PassPlan plan = expectSameAsWhole(*fusion, 2);
    ASSERT_EQ(plan.passes.size(), 2u);
    // Pass 1 only reads the gradients; every copy_ is in pass 2, which reads the total.
    EXPECT_TRUE(plan.passes[0].fusion->aliases().empty());
    EXPECT_EQ(plan.passes[0].fusion->inputs().size(), count);
    EXPECT_EQ(plan.passes[1].aliases.size(), 2 * count);
    ASSERT_EQ(plan.results.size(), 1u);
    EXPECT_EQ(plan.results[0].pass, 0u);
  }
}

TEST(Passes, PerTensorNormsLikeLambAreTwoPasses) {
  FusionDefinition fd("lamb_like");
  for (int i = 0; i < 3; ++i) {
    Val p = fd.defineTensor({4, 5 + i}, DataType::Float, fmt::format("p{}", i));
    Val g = fd.defineTensor({4, 5 + i}, DataType::Float, fmt::format("g{}", i));
    Val u = g * 0.5 + p * 0.01;
    Val trust = sqrt(sum(p * p)) / sqrt(sum(u * u));
    fd.copy_(p - u * trust, p);
  }
  auto fusion = fd.finalize();
  PassPlan plan = expectSameAsWhole(*fusion, 2);
  EXPECT_EQ(plan.results.size(), 6u);
}

TEST(Passes, AReductionOfAClippedValueIsAThirdPass) {
  FusionDefinition fd("chain");
  Val x = fd.defineTensor({8}, DataType::Float, "x");
  Val y = fd.defineTensor({3, 8}, DataType::Float, "y");
  Val first = sum(x * x);
  Val second = max(y * first, {1}); // rows, reading the first result
  fd.addOutput(x + broadcast_in_dim(second, {3, 8}, {0}) * 0.0 + first);
  fd.addOutput(second);
  auto fusion = fd.finalize();
  expectSameAsWhole(*fusion, 3);
}

TEST(Passes, AResultOnlyReturnedNeedsNoSecondPass) {
  FusionDefinition fd("logged");
  Val p = fd.defineTensor({6}, DataType::Float, "p");
  Val g = fd.defineTensor({6}, DataType::Float, "g");
  fd.copy_(p - g * 0.1, p);
  fd.addOutput(sum(g * g));
  auto fusion = fd.finalize();
  PassPlan plan = expectSameAsWhole(*fusion, 1);
  EXPECT_EQ(plan.passes[0].outputs[0].fusionOutput, 0);
}

TEST(Passes, ACopyMovesToTheLastPassReadingItsDestination) {
  // q is written from its entry value, but pass 2 reads q too: its write moves to pass 2.
  FusionDefinition fd("moved");
  Val p = fd.defineTensor({5}, DataType::Float, "p");
  Val q = fd.defineTensor({5}, DataType::Float, "q");
  fd.copy_(q * 2.0, q);
  Val s = sum(p);
  fd.addOutput(q + s);
  auto fusion = fd.finalize();
  PassPlan plan = expectSameAsWhole(*fusion, 2);
  EXPECT_TRUE(plan.passes[0].fusion->aliases().empty());
  EXPECT_EQ(plan.passes[1].aliases, std::vector<unsigned>{0});
}

TEST(Passes, ATensorReducedAndWrittenInOnePassReadsItsEntryValue) {
  FusionDefinition fd("same_pass");
  Val p = fd.defineTensor({7}, DataType::Float, "p");
  Val q = fd.defineTensor({7}, DataType::Float, "q");
  fd.copy_(p * 0.5, p);
  fd.copy_(q * sum(p), q);
  auto fusion = fd.finalize();
  PassPlan plan = expectSameAsWhole(*fusion, 2);
  EXPECT_EQ(plan.passes[0].aliases, std::vector<unsigned>{0});
}

TEST(Passes, RowsResultsAreReadThroughBroadcasts) {
  FusionDefinition fd("rows");
  Val x = fd.defineTensor({-1, 6}, DataType::Float, "x");
  Val rowMax = max(x, {1});
  Val shifted = x - broadcast_in_dim_to_extents(rowMax, {size(x, 0), 6}, {0});
  fd.addOutput(shifted);
  auto fusion = fd.finalize();
  PassPlan plan = expectSameAsWhole(*fusion, 2);
  ASSERT_EQ(plan.passes.size(), 2u);
  EXPECT_EQ(plan.passes[1].fusion->inputs().size(), 2u); // x and the row maxima
}

TEST(Passes, EachPassSegmentsIntoOneLaunchAndAReductionJoinsNoComponents) {
  auto fusion = clippedAdam(widefuse::testing::mixedShapes(9));
  PassPlan plan = splitPasses(*fusion);
  ASSERT_EQ(plan.passes.size(), 2u);
  SegmentedFusion first = segment(*plan.passes[0].fusion, {SegmentationMode::Batched});
  SegmentedFusion second = segment(*plan.passes[1].fusion, {SegmentationMode::Batched});
  EXPECT_EQ(first.numLaunches() + second.numLaunches(), 2u);
  // One component per gradient, each computing its own operand of the global sum.
  ASSERT_EQ(first.components.size(), 9u);
  for (unsigned c = 0; c < 9; ++c) {
    ASSERT_EQ(first.components[c].contributions.size(), 1u);
    EXPECT_EQ(first.components[c].contributions[0].second, c);
    EXPECT_TRUE(first.components[c].outputs.empty());
  }
  EXPECT_EQ(second.components.size(), 9u);
}

TEST(Passes, AWholeFusionReadingItsReductionIsNotOneSegment) {
  auto fusion = clippedAdam(widefuse::testing::mixedShapes(2));
  EXPECT_CONTAINS(widefuse::testing::errorOf([&] { segment(*fusion, {}); }),
                  "cut the fusion into passes first");
}
