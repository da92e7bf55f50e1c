// Phases: a fusion whose values read reductions is segmented into phases that run one after
// another. Each case checks the phase count docs/segmenter.md 9.4 gives, where each reduction
// and copy_ goes, what is kept between phases, and each phase's components. That the phases
// run to the whole fusion's bits is tests/runtime/host_phases_test.cpp's.

#include "segmenter/segment.h"
#include "segmenter/segment_report.h"
#include "tests/segmenter/phase_fusions.h"
#include "tests/support/mixed_shapes.h"

#include "ir/fusion_definition.h"
#include "ir/printer.h"
#include "ir/reduction.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// The copy_ destinations a phase writes, by name.
std::vector<std::string> writtenIn(const SegmentedPhase& phase) {
  std::vector<std::string> names;
  for (const HazardPlan& plan : phase.aliasPlans)
    names.push_back(plan.alias.destination->name());
  return names;
}

} // namespace

TEST(Phases, ClippedAdamIsTwoPhasesOverAnyNumberOfParameters) {
  for (size_t count : {1u, 3u, 20u}) {
    auto fusion = clippedAdam(mixedShapes(count));
    SegmentedFusion segmented = segment(*fusion);
    ASSERT_EQ(segmented.phases.size(), 2u) << printFusion(*fusion);
    // Phase 1 only reads the gradients; every copy_ is in phase 2, which reads the total.
    const SegmentedPhase& first = segmented.phases[0];
    EXPECT_TRUE(first.aliasPlans.empty());
    ASSERT_EQ(first.components.size(), count);
    for (const Component& component : first.components) {
      ASSERT_EQ(component.inputs.size(), 1u);
      EXPECT_EQ(component.inputs[0]->name()[0], 'g');
    }
    EXPECT_EQ(segmented.phases[1].aliasPlans.size(), 2 * count);
    ASSERT_EQ(segmented.kept.size(), 1u);
    EXPECT_EQ(segmented.kept[0].phase, 0u);
    EXPECT_EQ(segmented.phases[1].name, "clipped_adam_phase2");
  }
}

TEST(Phases, PerTensorNormsLikeLambAreTwoPhases) {
  auto fusion = lambLike();
  SegmentedFusion segmented = segment(*fusion);
  EXPECT_EQ(segmented.phases.size(), 2u);
  EXPECT_EQ(segmented.kept.size(), 6u);
}

TEST(Phases, AReductionOfAClippedValueIsAThirdPhase) {
  auto fusion = reductionChain();
  SegmentedFusion segmented = segment(*fusion);
  ASSERT_EQ(segmented.phases.size(), 3u);
  ASSERT_EQ(segmented.kept.size(), 2u);
  EXPECT_EQ(segmented.kept[0].phase, 0u);
  EXPECT_EQ(segmented.kept[1].phase, 1u);
}

TEST(Phases, AResultOnlyReturnedNeedsNoSecondPhase) {
  auto fusion = loggedNorm();
  SegmentedFusion segmented = segment(*fusion);
  ASSERT_EQ(segmented.phases.size(), 1u);
  EXPECT_TRUE(segmented.kept.empty());
  EXPECT_EQ(segmented.phases[0].name, fusion->name());
  // The norm is computed beside the update: the only component both writes and reduces.
  ASSERT_EQ(segmented.phases[0].components.size(), 1u);
  EXPECT_EQ(segmented.phases[0].components[0].contributions.size(), 1u);
}

TEST(Phases, ACopyMovesToTheLastPhaseReadingItsDestination) {
  // q is written from its entry value, but phase 2 reads q too: its write moves to phase 2.
  auto fusion = movedWrite();
  SegmentedFusion segmented = segment(*fusion);
  ASSERT_EQ(segmented.phases.size(), 2u);
  EXPECT_TRUE(segmented.phases[0].aliasPlans.empty());
  EXPECT_EQ(writtenIn(segmented.phases[1]), std::vector<std::string>{"q"});
}

TEST(Phases, ATensorReducedAndWrittenInOnePhaseReadsItsEntryValue) {
  auto fusion = samePhaseWrite();
  SegmentedFusion segmented = segment(*fusion);
  ASSERT_EQ(segmented.phases.size(), 2u);
  EXPECT_EQ(writtenIn(segmented.phases[0]), std::vector<std::string>{"p"});
  EXPECT_EQ(writtenIn(segmented.phases[1]), std::vector<std::string>{"q"});
}

TEST(Phases, RowsResultsAreReadThroughBroadcasts) {
  auto fusion = rowShift();
  SegmentedFusion segmented = segment(*fusion);
  ASSERT_EQ(segmented.phases.size(), 2u);
  ASSERT_EQ(segmented.phases[1].components.size(), 1u);
  // x and the row maxima, read from memory (the extent of x's rows is a scalar).
  std::vector<const Value*> tensors;
  for (const Value* input : segmented.phases[1].components[0].inputs)
    if (input->isTensor())
      tensors.push_back(input);
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(llvm::count_if(tensors, [](const Value* v) { return v->isInput(); }), 1);
  EXPECT_EQ(llvm::count_if(tensors, [](const Value* v) { return isReductionResult(*v); }), 1);
  ASSERT_EQ(segmented.kept.size(), 1u);
  EXPECT_TRUE(llvm::is_contained(tensors, segmented.kept[0].value));
}

TEST(Phases, EachPhaseIsOneLaunchAndAReductionJoinsNoComponents) {
  auto fusion = clippedAdam(mixedShapes(9));
  SegmentedFusion segmented = segment(*fusion, {SegmentationMode::Batched});
  ASSERT_EQ(segmented.phases.size(), 2u);
  EXPECT_EQ(segmented.numLaunches(), 2u);
  // One component per gradient, each computing its own operand of the global sum.
  const SegmentedPhase& first = segmented.phases[0];
  ASSERT_EQ(first.components.size(), 9u);
  for (unsigned c = 0; c < 9; ++c) {
    ASSERT_EQ(first.components[c].contributions.size(), 1u);
    EXPECT_EQ(first.components[c].contributions[0].second, c);
    EXPECT_TRUE(first.components[c].outputs.empty());
  }
  EXPECT_EQ(segmented.phases[1].components.size(), 9u);
}

TEST(Phases, GivenComponentsSegmentAsFoundOnes) {
  auto fusion = clippedAdam(mixedShapes(5));
  FusionComponents found = findComponents(*fusion);
  for (SegmentationMode mode :
       {SegmentationMode::Auto, SegmentationMode::PerComponent, SegmentationMode::Packed}) {
    SegmentedFusion given = segment(*fusion, {mode, &found});
    EXPECT_EQ(formatSegmentedFusion(given), formatSegmentedFusion(segment(*fusion, {mode})))
        << modeName(mode).str();
  }
}

TEST(Phases, TheReportListsEveryPhaseAndWhatIsKept) {
  auto fusion = clippedAdam(mixedShapes(3));
  SegmentedFusion segmented = segment(*fusion);
  std::string report = formatSegmentedFusion(segmented);
  EXPECT_NE(report.find("2 phases, 6 components"), std::string::npos) << report;
  EXPECT_NE(report.find("phase 2 (clipped_adam_phase2)"), std::string::npos) << report;
  EXPECT_NE(report.find("kept between phases: '"), std::string::npos) << report;
  EXPECT_NE(report.find("is computed in phase 1"), std::string::npos) << report;
  nlohmann::json json = segmentedFusionToJson(segmented);
  EXPECT_EQ(json["phases"].size(), 2u);
  EXPECT_EQ(json["kept"].size(), 1u);
  EXPECT_EQ(json["launches"], 2);
}
