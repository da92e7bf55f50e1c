// The segmenter on the seed's Adam and its variants: kernel counts per mode, constant
// lifting, the hazard plan, and the errors for subgraphs that cannot be one SPMD kernel.

#include "segmenter/components.h"
#include "segmenter/segment.h"
#include "segmenter/segment_report.h"
#include "tests/support/error_of.h"
#include "tests/support/mixed_shapes.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "tools/workloads/seed_adam.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace widefuse;
using widefuse::testing::errorOf;
using widefuse::testing::mixedShapes;

namespace {

/// Adam with L2 weight decay written as a literal, as a tracer emits param groups.
void addAdamMember(FusionDefinition& fd, int index, llvm::ArrayRef<int64_t> shape,
                   double weightDecay, Val lr) {
  Val p = fd.defineTensor(shape, DataType::Float, "p" + std::to_string(index));
  Val g = fd.defineTensor(shape, DataType::Float, "g" + std::to_string(index));
  Val m = fd.defineTensor(shape, DataType::Float, "m" + std::to_string(index));
  Val step = fd.defineTensor({}, DataType::Float, "step" + std::to_string(index));
  Val step1 = step + 1.0;
  Val grad = g + p * weightDecay;
  Val m1 = m * 0.9 + grad * 0.1;
  fd.copy_(p - lr * m1 / (1 - pow(0.9, step1)), p);
  fd.copy_(m1, m);
  fd.copy_(step1, step);
}

/// SGD with momentum: a different signature.
void addSgdMember(FusionDefinition& fd, int index, llvm::ArrayRef<int64_t> shape, Val lr) {
  Val p = fd.defineTensor(shape, DataType::Float, "q" + std::to_string(index));
  Val g = fd.defineTensor(shape, DataType::Float, "h" + std::to_string(index));
  Val buffer = fd.defineTensor(shape, DataType::Float, "b" + std::to_string(index));
  Val buffer1 = buffer * 0.9 + g;
  fd.copy_(p - lr * buffer1, p);
  fd.copy_(buffer1, buffer);
}

/// The segmentation of a fusion of one phase (no value reads a reduction).
SegmentedPhase segmentOne(const Fusion& fusion, const SegmentOptions& options = {}) {
  SegmentedFusion segmented = segment(fusion, options);
  EXPECT_EQ(segmented.phases.size(), 1u);
  return std::move(segmented.phases.front());
}

} // namespace

TEST(Segmenter, SeedAdamGivesOneKernelPerParameterOrOneBatched) {
  for (size_t count : {1u, 2u, 5u, 100u, 1000u}) {
    auto fusion = optim::buildSeedAdam(mixedShapes(count));
    SegmentedPhase perComponent = segmentOne(*fusion, {SegmentationMode::PerComponent});
    EXPECT_EQ(perComponent.numLaunches(), count);
    EXPECT_EQ(perComponent.components.size(), count);
    SegmentedPhase batched = segmentOne(*fusion, {SegmentationMode::Batched});
    EXPECT_EQ(batched.numLaunches(), 1u) << count << " parameters";
    EXPECT_EQ(batched.signatureClasses.size(), 1u);
    EXPECT_EQ(batched.groups[0].members.size(), count);
    EXPECT_EQ(segment(*fusion).numLaunches(), 1u); // auto = batched
    ASSERT_EQ(batched.aliasPlans.size(), 4 * count);
    for (const HazardPlan& plan : batched.aliasPlans) {
      bool isStep = plan.alias.destination->rank() == 0;
      EXPECT_EQ(plan.resolution,
                isStep ? HazardResolution::DeferredWrite : HazardResolution::InPlace)
          << plan.alias.destination->name() << ": " << plan.note;
    }
  }
}

TEST(Segmenter, ComponentsGivenBySegmentsCallerGiveTheSamePlan) {
  // The Python frontend finds the components when a definition ends and hands them to the
  // executor, which segments from them: every mode's plan is the one found from scratch.
  auto fusion = optim::buildSeedAdam(mixedShapes(7));
  FusionComponents components = findComponents(*fusion);
  for (SegmentationMode mode : {SegmentationMode::PerComponent, SegmentationMode::Batched,
                                SegmentationMode::Packed, SegmentationMode::Auto}) {
    EXPECT_EQ(formatSegmentedFusion(segment(*fusion, {mode, &components})),
              formatSegmentedFusion(segment(*fusion, {mode})))
        << modeName(mode).str();
    SegmentedPhase given = segmentOne(*fusion, {mode, &components});
    SegmentedPhase found = segmentOne(*fusion, {mode});
    ASSERT_EQ(given.components.size(), found.components.size());
    for (size_t c = 0; c < given.components.size(); ++c) {
      EXPECT_EQ(given.components[c].exprs, found.components[c].exprs);
      EXPECT_EQ(given.components[c].inputs, found.components[c].inputs);
    }
  }
}

TEST(Segmenter, ComponentsFollowTheParameters) {
  auto fusion = optim::buildSeedAdam({{4, 8}, {3}});
  SegmentedPhase segmented = segmentOne(*fusion);
  ASSERT_EQ(segmented.components.size(), 2u);
  const Component& first = segmented.components[0];
  EXPECT_EQ(componentName(first), "p0");
  EXPECT_EQ(first.domain, (llvm::SmallVector<int64_t, 4>{4, 8}));
  EXPECT_EQ(segmented.components[1].domain, (llvm::SmallVector<int64_t, 4>{3}));
  // p0, g0, m0, v0, step0 plus the four shared scalars, in order of first use.
  std::vector<std::string> names;
  for (const Value* input : first.inputs)
    names.push_back(input->name());
  EXPECT_EQ(names.size(), 9u);
  EXPECT_NE(std::find(names.begin(), names.end(), "lr"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "p1"), names.end());
}

TEST(Segmenter, ParamGroupsWithDifferentLiteralsShareOneKernel) {
  FusionDefinition fd("two_groups");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  addAdamMember(fd, 0, {16}, 0.01, lr);
  addAdamMember(fd, 1, {4, 4}, 0.01, lr);
  addAdamMember(fd, 2, {9}, 0.0, lr);
  auto fusion = fd.finalize();
  SegmentedPhase segmented = segmentOne(*fusion, {SegmentationMode::Batched});
  EXPECT_EQ(segmented.numLaunches(), 1u);
  ASSERT_EQ(segmented.signatureClasses.size(), 1u);
  ASSERT_EQ(segmented.signatureClasses[0].lifted.size(), 1u); // only weight_decay differs
  const LiftedConstant& lifted = segmented.signatureClasses[0].lifted[0];
  EXPECT_EQ(std::get<double>(lifted.values[0]), 0.01);
  EXPECT_EQ(std::get<double>(lifted.values[2]), 0.0);
  std::string report = formatSegmentedFusion(segment(*fusion, {SegmentationMode::Batched}));
  EXPECT_NE(report.find("lifted into the member table"), std::string::npos) << report;
}

TEST(Segmenter, MixedOptimizersBatchIntoTwoAndPackIntoOne) {
  FusionDefinition fd("mixed");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  addAdamMember(fd, 0, {16}, 0.0, lr);
  addSgdMember(fd, 0, {8}, lr);
  addAdamMember(fd, 1, {32}, 0.0, lr);
  addSgdMember(fd, 1, {5, 5}, lr);
  auto fusion = fd.finalize();
  EXPECT_EQ(segment(*fusion, {SegmentationMode::Batched}).numLaunches(), 2u);
  EXPECT_EQ(segment(*fusion, {SegmentationMode::Packed}).numLaunches(), 1u);
  EXPECT_EQ(segment(*fusion, {SegmentationMode::PerComponent}).numLaunches(), 4u);
  nlohmann::json json = segmentedFusionToJson(segment(*fusion, {SegmentationMode::Packed}));
  EXPECT_EQ(json["launches"], 1);
  ASSERT_EQ(json["phases"].size(), 1u);
  EXPECT_EQ(json["phases"][0]["groups"][0]["members"].size(), 4u);
  EXPECT_EQ(json["phases"][0]["groups"][0]["signature_classes"].size(), 2u);
}

TEST(Segmenter, SharedReadOnlyZeroDimTensorsDoNotJoinComponents) {
  FusionDefinition fd("found_inf");
  Val foundInf = fd.defineTensor({}, DataType::Float, "found_inf");
  Val scale = fd.defineTensor({}, DataType::Float, "grad_scale");
  Val inverse = 1.0 / scale; // a 0-d value computed from shared values only: shared too
  for (int i = 0; i < 3; ++i) {
    Val p = fd.defineTensor({10}, DataType::Float, "p" + std::to_string(i));
    Val g = fd.defineTensor({10}, DataType::Float, "g" + std::to_string(i));
    fd.copy_(where(eq(foundInf, 0.0), p - g * inverse, p), p);
  }
  auto fusion = fd.finalize();
  SegmentedPhase segmented = segmentOne(*fusion, {SegmentationMode::PerComponent});
  EXPECT_EQ(segmented.components.size(), 3u);
  // Each component carries the shared division it reads.
  for (const Component& component : segmented.components)
    EXPECT_TRUE(llvm::any_of(component.exprs,
                             [&](const Expr* e) { return e->result() == inverse.value(); }));
}

TEST(Segmenter, AnInputCopiedIntoSeveralTensorsJoinsNone) {
  // Found by the differential fuzzer: a runtime scalar copied into two 0-d tensors joined
  // two subgraphs whose symbolic extents differ at run time, and one kernel ran over both.
  FusionDefinition fd("reset");
  Val value = fd.defineScalar(DataType::Float, "value");
  for (int i = 0; i < 2; ++i) {
    Val x = fd.defineTensor({-1}, DataType::Half, "x" + std::to_string(i));
    Val counter = fd.defineTensor({}, DataType::Int32, "n" + std::to_string(i));
    fd.copy_(trunc(x + counter), x);
    fd.copy_(value, counter);
  }
  auto fusion = fd.finalize();
  SegmentedPhase segmented = segmentOne(*fusion, {SegmentationMode::PerComponent});
  ASSERT_EQ(segmented.components.size(), 2u);
  for (const Component& component : segmented.components)
    EXPECT_EQ(component.aliases.size(), 2u);
}

TEST(Segmenter, SubgraphsThatCannotBeOneKernelAreErrorsNamingValues) {
  // x's update reads bias, which the [8] part writes: two kernels would read the new bias.
  FusionDefinition fd("boundary");
  Val bias = fd.defineTensor({8}, DataType::Float, "bias");
  Val x = fd.defineTensor({4, 8}, DataType::Float, "x");
  fd.copy_(bias * 2.0, bias);
  fd.copy_(x + broadcast_in_dim(bias, {4, 8}, {1}), x);
  auto fusion = fd.finalize();
  std::string message = errorOf([&] { segment(*fusion); });
  EXPECT_NE(message.find("one subgraph writes 'bias' (copy_ of "), std::string::npos) << message;
  EXPECT_NE(message.find("of shape [4, 8], which reads 'bias'"), std::string::npos) << message;
  EXPECT_NE(message.find("would not see the entry value"), std::string::npos) << message;
}

/// The number of expressions of `component` computing `op`.
size_t countOps(const Component& component, OpKind op) {
  return size_t(llvm::count_if(component.exprs, [&](const Expr* e) { return e->op() == op; }));
}

TEST(Segmenter, WritesOfTwoShapesSplitIntoOneComponentPerShape) {
  // y = x + 2 * bias over [4, 8] and 2 * bias over [8]: the doubled bias is computed by
  // both parts (recomputed, never stored), each part a component of its own.
  FusionDefinition fd("two_shapes");
  Val x = fd.defineTensor({4, 8}, DataType::Float, "x");
  Val bias = fd.defineTensor({8}, DataType::Float, "bias");
  Val doubled = bias * 2.0;
  fd.addOutput(x + broadcast_in_dim(doubled, {4, 8}, {1}));
  fd.addOutput(doubled);
  auto fusion = fd.finalize();
  SegmentedPhase segmented = segmentOne(*fusion, {SegmentationMode::Batched});
  ASSERT_EQ(segmented.components.size(), 2u);
  const Component& wide = segmented.components[0];
  const Component& narrow = segmented.components[1];
  EXPECT_EQ(wide.domain, (llvm::SmallVector<int64_t, 4>{4, 8}));
  EXPECT_EQ(narrow.domain, (llvm::SmallVector<int64_t, 4>{8}));
  EXPECT_EQ(wide.outputs.size(), 1u);
  ASSERT_EQ(narrow.outputs.size(), 1u);
  EXPECT_EQ(narrow.outputs[0], doubled.value());
  EXPECT_EQ(countOps(wide, OpKind::Mul), 1u);
  EXPECT_EQ(countOps(narrow, OpKind::Mul), 1u);
  EXPECT_EQ(countOps(narrow, OpKind::BroadcastInDim), 0u);
  EXPECT_EQ(segmented.groups.size(), 2u);
  EXPECT_EQ(wide.subgraph, narrow.subgraph);
  EXPECT_TRUE(llvm::is_contained(segmented.notes,
                                 "a subgraph writes tensors of 2 shapes: components 0 [4, 8], 1 "
                                 "[8], one kernel body each, each recomputing the values it "
                                 "shares"));
}

TEST(Segmenter, SymbolicShapesSplitUnlessTheFusionEquatesThem) {
  // Two broadcasts of one row to run-time row counts k and m: provably different extent
  // classes (two parts); a third output over the first's shape joins the first part.
  FusionDefinition fd("rows");
  Val row = fd.defineTensor({-1}, DataType::Float, "row");
  Val k = fd.defineScalar(DataType::Int64, "k");
  Val m = fd.defineScalar(DataType::Int64, "m");
  Val a = broadcast_in_dim_to_extents(row, {k, -1}, {1});
  Val b = broadcast_in_dim_to_extents(row, {m, -1}, {1});
  fd.addOutput(a);
  fd.addOutput(b * 2.0);
  fd.addOutput(a + 1.0);
  auto fusion = fd.finalize();
  SegmentedPhase segmented = segmentOne(*fusion, {SegmentationMode::PerComponent});
  ASSERT_EQ(segmented.components.size(), 2u);
  EXPECT_EQ(segmented.components[0].outputs.size(), 2u);
  EXPECT_EQ(segmented.components[1].outputs.size(), 1u);
}

TEST(Segmenter, PartsThatReadEachOthersWritesStayOneKernelWhereShapesMayAgree) {
  // A written 0-d step counter read by two parameters joins them; their symbolic extents
  // are not provably equal, but splitting would let one part read the new step: one
  // component, checked at run time.
  FusionDefinition fd("shared_step");
  Val step = fd.defineTensor({}, DataType::Float, "step");
  for (int i = 0; i < 2; ++i) {
    Val p = fd.defineTensor({-1}, DataType::Float, "p" + std::to_string(i));
    fd.copy_(p - step * 0.5, p);
  }
  fd.copy_(step + 1.0, step);
  auto fusion = fd.finalize();
  SegmentedPhase segmented = segmentOne(*fusion, {SegmentationMode::PerComponent});
  ASSERT_EQ(segmented.components.size(), 1u);
  EXPECT_EQ(segmented.components[0].aliases.size(), 3u);
}

TEST(Segmenter, DefinitionErrorsReachUsersBeforeSegmentation) {
  FusionDefinition fd;
  Val a = fd.defineTensor({4, 8}, DataType::Float, "a");
  Val b = fd.defineTensor({8, 4}, DataType::Float, "b");
  EXPECT_NE(errorOf([&] { fd.copy_(a + b, a); }).find("'b'"), std::string::npos);
  fd.copy_(a * 2.0, a);
  EXPECT_NE(errorOf([&] { fd.copy_(a * 3.0, a); }).find("two copies"), std::string::npos);
}

TEST(Segmenter, ModesParseAndPrint) {
  EXPECT_EQ(parseMode("per-component"), SegmentationMode::PerComponent);
  EXPECT_EQ(modeName(parseMode("packed")), "packed");
  EXPECT_NE(errorOf([] { parseMode("fast"); }).find("per-component, batched"), std::string::npos);
}

TEST(Segmenter, ZeroDimAndFullInputsDoNotShareABody) {
  FusionDefinition fd("mixed_reads");
  Val p0 = fd.defineTensor({16}, DataType::Float, "p0");
  Val s0 = fd.defineTensor({}, DataType::Float, "s0");
  Val p1 = fd.defineTensor({16}, DataType::Float, "p1");
  Val s1 = fd.defineTensor({16}, DataType::Float, "s1");
  fd.copy_(p0 * s0, p0);
  fd.copy_(s0 + 1.0, s0);
  fd.copy_(p1 * s1, p1);
  fd.copy_(s1 + 1.0, s1);
  auto fusion = fd.finalize();
  EXPECT_EQ(segmentOne(*fusion, {SegmentationMode::Batched}).signatureClasses.size(), 2u);
}

TEST(Segmenter, ReusedSharedExpressionsKeepOneSignature) {
  FusionDefinition fd("reuse");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  Val half = lr * 0.5; // built while defining the first parameter, reused by the others
  for (int i = 0; i < 3; ++i) {
    Val p = fd.defineTensor({8 + i}, DataType::Float, "p" + std::to_string(i));
    fd.copy_(p - half * p, p);
  }
  auto fusion = fd.finalize();
  EXPECT_EQ(segment(*fusion, {SegmentationMode::Batched}).numLaunches(), 1u);
}

TEST(Segmenter, SignedZeroLiteralsAreLifted) {
  FusionDefinition fd("zeros");
  for (double zero : {0.0, -0.0}) {
    Val p = fd.defineTensor({4}, DataType::Float, std::signbit(zero) ? "n" : "z");
    fd.copy_(p * zero, p);
  }
  auto fusion = fd.finalize();
  EXPECT_EQ(segmentOne(*fusion).signatureClasses.at(0).lifted.size(), 1u);
}

TEST(Segmenter, AReturnedValueOfSharedValuesJoinsNoComponents) {
  // Returning the 0-d value every parameter reads keeps the parameters apart: a 0-d program
  // of its own writes it.
  FusionDefinition fd("returned");
  Val total = fd.defineTensor({}, DataType::Float, "total");
  Val coefficient = minimum(1.0 / (sqrt(total) + 1e-6), 1.0);
  for (int i = 0; i < 2; ++i) {
    Val p = fd.defineTensor({4 + i}, DataType::Float, "p" + std::to_string(i));
    fd.copy_(p * coefficient, p);
  }
  fd.addOutput(coefficient);
  auto fusion = fd.finalize();
  SegmentedPhase segmented = segmentOne(*fusion, {SegmentationMode::Batched});
  ASSERT_EQ(segmented.components.size(), 3u);
  EXPECT_EQ(segmented.signatureClasses.size(), 2u); // both parameters, and the 0-d program
  const Component& program = segmented.components[2];
  EXPECT_EQ(program.outputs.size(), 1u);
  EXPECT_FALSE(program.exprs.empty());
}

TEST(Segmenter, ASubgraphReducingInSeveralWaysIsOneLaunchUnit) {
  // Two parameters: each grad's squares reduced over all elements (one global norm) and over
  // rows; the first also adds x / its blocks' absmax, written by a third body.
  FusionDefinition fd("ways");
  std::vector<Val> squares;
  for (int i = 0; i < 2; ++i) {
    Val g = fd.defineTensor({16, 8}, DataType::Float, "g" + std::to_string(i));
    squares.push_back(g * g);
    fd.addOutput(sum(squares.back(), {1}));
    if (i == 0)
      fd.addOutput(g / expand_blocks(max(abs(g), Blocks{32}), {16, 8}, Blocks{32}));
  }
  fd.addOutput(sum(squares));
  auto fusion = fd.finalize();
  SegmentedPhase batched = segmentOne(*fusion, {SegmentationMode::Batched});
  ASSERT_EQ(batched.components.size(), 5u);
  std::vector<unsigned> units, subgraphs;
  for (const Component& component : batched.components) {
    units.push_back(component.launchUnit);
    subgraphs.push_back(component.subgraph);
  }
  EXPECT_EQ(units, (std::vector<unsigned>{0, 0, 0, 3, 3}));
  EXPECT_EQ(subgraphs[0], subgraphs[2]);
  EXPECT_NE(subgraphs[2], subgraphs[3]);
  // The norm's part reads g and multiplies; the blocks' part has no rows or global sum.
  EXPECT_EQ(countOps(batched.components[0], OpKind::Mul), 1u);
  EXPECT_EQ(countOps(batched.components[1], OpKind::Max), 1u);
  EXPECT_TRUE(batched.components[1].contributions.empty());
  EXPECT_EQ(batched.components[2].contributions.size(), 1u);
  ASSERT_EQ(batched.groups.size(), 1u); // three classes, one launch
  EXPECT_EQ(batched.groups[0].signatureClasses.size(), 3u);
  EXPECT_TRUE(llvm::is_contained(
      batched.notes, "a subgraph reduces in 3 ways: components 0 over all elements, 1 by "
                     "blocks, 2 over rows of dimension 1, one body each (a body reduces one way) "
                     "in one launch, each recomputing the values it shares"));
  EXPECT_EQ(segmentOne(*fusion, {SegmentationMode::PerComponent}).groups.size(), 2u);
  EXPECT_EQ(segmentOne(*fusion, {SegmentationMode::Packed}).groups.size(), 1u);
}

TEST(Segmenter, AWayThatReadsWhatAnotherWritesInPlaceIsAnError) {
  FusionDefinition fd("in_place");
  Val x = fd.defineTensor({16, 8}, DataType::Float, "x");
  fd.addOutput(sum(x * x, {1}));
  fd.addOutput(sum(x));
  fd.copy_(x * 0.5, x);
  auto fusion = fd.finalize();
  EXPECT_EQ(errorOf([&] { segment(*fusion, {SegmentationMode::Batched}); }),
            "fusion 'in_place': 'x' (copy_ of 't3') is written by the kernel body that reduces "
            "over all elements and read by the one that reduces over rows of dimension 1; a "
            "body reduces one way, so the two run side by side in one launch, where that read "
            "could see the new value (read a copy of 'x', or split the fusion)");
}
