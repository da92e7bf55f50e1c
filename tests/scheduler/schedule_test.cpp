// The scheduler's decisions on the seed's Adam and variants: one plan per signature class
// (shared by per-component launches), vector widths per dtype mix, shared parameters vs
// per-member slots, deferred writes, strided bodies for broadcasts, table placement, and the
// errors for what codegen cannot do.

#include "scheduler/schedule.h"
#include "segmenter/segment.h"
#include "tests/support/error_of.h"
#include "tests/support/mixed_shapes.h"

#include "ir/fusion_definition.h"
#include "tools/workloads/seed_adam.h"

#include <gtest/gtest.h>
#include <llvm/Support/MathExtras.h>

using namespace widefuse;
using widefuse::testing::errorOf;
using widefuse::testing::mixedShapes;

namespace {

/// Segments and schedules with the declared signature for the default device.
struct Scheduled {
  std::unique_ptr<Fusion> fusion;
  SegmentedFusion segmented;
  ScheduledFusion scheduled;
};

Scheduled scheduleFusion(std::unique_ptr<Fusion> fusion, SegmentationMode mode) {
  Scheduled result;
  result.fusion = std::move(fusion);
  result.segmented = segment(*result.fusion, {mode});
  result.scheduled =
      schedule(result.segmented, declaredSpecialization(result.segmented), defaultDevice());
  return result;
}

const Slot* findSlot(const BodyPlan& body, llvm::StringRef name) {
  for (const Slot& slot : body.slots)
    if (slot.name == name)
      return &slot;
  return nullptr;
}

} // namespace

TEST(Scheduler, BatchedAdamIsOnePlanWithOneLaunchOverAllMembers) {
  Scheduled s = scheduleFusion(optim::buildSeedAdam(mixedShapes(1000)), SegmentationMode::Batched);
  ASSERT_EQ(s.scheduled.plans.size(), 1u);
  ASSERT_EQ(s.scheduled.launches.size(), 1u);
  EXPECT_EQ(s.scheduled.launches[0].members.size(), 1000u);
  const KernelPlan& plan = s.scheduled.plans[0];
  EXPECT_EQ(plan.name, "adam_step_class0");
  ASSERT_EQ(plan.bodies.size(), 1u);
  const BodyPlan& body = plan.bodies[0];
  EXPECT_EQ(body.indexing, Indexing::Flat);
  EXPECT_EQ(body.vectorElements, 4u); // f32: 16-byte accesses
  EXPECT_EQ(plan.indexBits, 32u);
  // 1000 entries do not fit in 32 KB of parameters.
  EXPECT_EQ(plan.tableLocation, TableLocation::DeviceMemory);
  EXPECT_TRUE(plan.needsTickets);
  EXPECT_EQ(plan.maxGridBlocks, 132u * plan.minBlocksPerMultiprocessor);

  const Slot* step = findSlot(body, "step0");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->kind, SlotKind::UniformTensor);
  EXPECT_TRUE(step->read && step->written && step->deferred);
  EXPECT_FALSE(step->shared);
  const Slot* param = findSlot(body, "p0");
  ASSERT_NE(param, nullptr);
  EXPECT_EQ(param->kind, SlotKind::ElementTensor);
  EXPECT_TRUE(param->read && param->written && !param->deferred);
  const Slot* grad = findSlot(body, "g0");
  ASSERT_NE(grad, nullptr);
  EXPECT_TRUE(grad->read && !grad->written);
  // lr is one fusion input read by every member: a parameter, not a table column.
  const Slot* lr = findSlot(body, "lr");
  ASSERT_NE(lr, nullptr);
  EXPECT_TRUE(lr->shared);
  EXPECT_EQ(lr->kind, SlotKind::Scalar);
  EXPECT_GE(lr->offset, widefuse::abi::kParameterHeaderBytes);
  EXPECT_LT(lr->offset, plan.tableOffset);
}

TEST(Scheduler, SmallTablesLiveInKernelParameters) {
  Scheduled s = scheduleFusion(optim::buildSeedAdam(mixedShapes(3)), SegmentationMode::Batched);
  const KernelPlan& plan = s.scheduled.plans[0];
  EXPECT_EQ(plan.tableLocation, TableLocation::KernelParameters);
  EXPECT_EQ(plan.tableCapacity, 3u);
  EXPECT_EQ(plan.parameterBytes, plan.tableOffset + 3 * plan.entryBytes);
  EXPECT_LE(plan.parameterBytes, kMaxParameterBytes);
}

TEST(Scheduler, OldDriversWithSmallParameterBlocksGetDeviceMemoryTables) {
  auto fusion = optim::buildSeedAdam(mixedShapes(100));
  SegmentedFusion segmented = segment(*fusion, {SegmentationMode::Batched});
  DeviceDescription device = defaultDevice();
  EXPECT_EQ(schedule(segmented, declaredSpecialization(segmented), device).plans[0].tableLocation,
            TableLocation::KernelParameters);
  device.maxParameterBytes = 4096; // drivers before CUDA 12.1
  const KernelPlan plan = schedule(segmented, declaredSpecialization(segmented), device).plans[0];
  EXPECT_EQ(plan.tableLocation, TableLocation::DeviceMemory);
  EXPECT_LE(plan.parameterBytes, 4096u);
}

TEST(Scheduler, PerComponentLaunchesShareOneCompiledPlanPerSignature) {
  Scheduled s =
      scheduleFusion(optim::buildSeedAdam(mixedShapes(100)), SegmentationMode::PerComponent);
  EXPECT_EQ(s.scheduled.launches.size(), 100u);
  ASSERT_EQ(s.scheduled.plans.size(), 1u);
  for (size_t i = 0; i < s.scheduled.launches.size(); ++i) {
    EXPECT_EQ(s.scheduled.launches[i].plan, 0u);
    ASSERT_EQ(s.scheduled.launches[i].members.size(), 1u);
    EXPECT_EQ(s.scheduled.launches[i].members[0], i);
  }
  EXPECT_EQ(s.scheduled.plans[0].tableCapacity, 1u);
}

TEST(Scheduler, VectorWidthGivesTheNarrowestTypeSixteenBytes) {
  Scheduled bf16 = scheduleFusion(optim::buildSeedAdam(mixedShapes(4), DataType::BFloat16),
                                  SegmentationMode::Batched);
  EXPECT_EQ(bf16.scheduled.plans[0].bodies[0].vectorElements, 8u);
  EXPECT_EQ(widestAccessBytes(bf16.scheduled.plans[0]), 16u);

  // A bf16 parameter with an f32 remainder (TransformerEngine's layout): 8 elements, so bf16
  // moves 16 bytes and f32 32 bytes (two 16-byte accesses).
  FusionDefinition fd("mixed");
  Val p = fd.defineTensor({128}, DataType::BFloat16, "p");
  Val r = fd.defineTensor({128}, DataType::Float, "r");
  Val g = fd.defineTensor({128}, DataType::Float, "g");
  Val master = cast(p, DataType::Float) + r - g * 0.01;
  fd.copy_(master, p);
  fd.copy_(master - cast(cast(master, DataType::BFloat16), DataType::Float), r);
  Scheduled mixed = scheduleFusion(fd.finalize(), SegmentationMode::Batched);
  EXPECT_EQ(mixed.scheduled.plans[0].bodies[0].vectorElements, 8u);

  // bf16 parameters with f32 optimizer state (mixed precision): still 8 elements, the
  // register budget allows 22 bytes of tensors per element at that width.
  FusionDefinition amp("amp");
  Val p16 = amp.defineTensor({64}, DataType::BFloat16, "p");
  Val g16 = amp.defineTensor({64}, DataType::BFloat16, "g");
  Val m32 = amp.defineTensor({64}, DataType::Float, "m");
  Val v32 = amp.defineTensor({64}, DataType::Float, "v");
  Val gradient = cast(g16, DataType::Float);
  Val m1 = m32 * 0.9 + gradient * 0.1;
  Val v1 = v32 * 0.999 + gradient * gradient * 0.001;
  amp.copy_(cast(p16, DataType::Float) - m1 / (sqrt(v1) + 1e-8), p16);
  amp.copy_(m1, m32);
  amp.copy_(v1, v32);
  Scheduled ampPlan = scheduleFusion(amp.finalize(), SegmentationMode::Batched);
  EXPECT_EQ(ampPlan.scheduled.plans[0].bodies[0].vectorElements, 8u);

  // Many tensors per element: fewer elements per access rather than spills.
  FusionDefinition wide("wide");
  Val source = wide.defineTensor({64}, DataType::Float, "source");
  for (int i = 0; i < 12; ++i)
    wide.addOutput(source * double(i));
  Scheduled widePlan = scheduleFusion(wide.finalize(), SegmentationMode::Batched);
  EXPECT_EQ(widePlan.scheduled.plans[0].bodies[0].vectorElements, 2u); // 52 bytes per element

  Scheduled f64 = scheduleFusion(optim::buildSeedAdam(mixedShapes(2), DataType::Double),
                                 SegmentationMode::Batched);
  EXPECT_EQ(f64.scheduled.plans[0].bodies[0].vectorElements, 2u);
}

TEST(Scheduler, BroadcastsAreIndexedWithStridesUnderEveryView) {
  FusionDefinition fd("bias");
  Val x = fd.defineTensor({4, 8}, DataType::Float, "x");
  Val b = fd.defineTensor({8}, DataType::Float, "b");
  Val c = fd.defineTensor({4}, DataType::Float, "c");
  Val square = fd.defineTensor({8, 8}, DataType::Float, "square");
  Val row = broadcast_in_dim(b, {4, 8}, {1});
  Val column = broadcast_in_dim(c, {4, 8}, {0});
  fd.copy_(x * row + column, x);
  // One vector read under two views: as rows and as columns of an 8x8 domain.
  Val d = fd.defineTensor({8}, DataType::Float, "d");
  Val dd = d * 2.0;
  fd.copy_(square + broadcast_in_dim(dd, {8, 8}, {0}) + broadcast_in_dim(dd, {8, 8}, {1}), square);
  Scheduled s = scheduleFusion(fd.finalize(), SegmentationMode::Batched);
  ASSERT_EQ(s.scheduled.plans.size(), 2u);
  const BodyPlan& first = s.scheduled.plans[0].bodies[0];
  EXPECT_EQ(first.indexing, Indexing::Strided);
  EXPECT_EQ(first.domainRank, 2u);
  EXPECT_EQ(first.vectorElements, 1u);
  const Slot* bias = findSlot(first, "b");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->view, (ElementView{1}));
  const Slot* columnSlot = findSlot(first, "c");
  ASSERT_NE(columnSlot, nullptr);
  EXPECT_EQ(columnSlot->view, (ElementView{0}));

  const BodyPlan& second = s.scheduled.plans[1].bodies[0];
  // d read as rows and as columns: two slots with their own strides.
  const Slot* rows = findSlot(second, "d");
  const Slot* columns = findSlot(second, "d_view1");
  ASSERT_NE(rows, nullptr);
  ASSERT_NE(columns, nullptr);
  EXPECT_EQ(rows->source.index, columns->source.index);
  EXPECT_NE(rows->view, columns->view);
}

TEST(Scheduler, PackedKernelsHoldOneBodyPerSignature) {
  FusionDefinition fd("two");
  Val p = fd.defineTensor({16}, DataType::Float, "p");
  Val q = fd.defineTensor({16}, DataType::Half, "q");
  fd.copy_(p * 2.0, p);
  fd.copy_(q + 1.0, q);
  Scheduled s = scheduleFusion(fd.finalize(), SegmentationMode::Packed);
  ASSERT_EQ(s.scheduled.plans.size(), 1u);
  const KernelPlan& plan = s.scheduled.plans[0];
  ASSERT_EQ(plan.bodies.size(), 2u);
  EXPECT_EQ(plan.bodies[0].index, 0u);
  EXPECT_EQ(plan.bodies[1].index, 1u);
  EXPECT_EQ(plan.bodies[1].vectorElements, 8u);
  EXPECT_EQ(plan.entryBytes, std::max(plan.bodies[0].entryBytes, plan.bodies[1].entryBytes));
}

TEST(Scheduler, LiftedConstantsArePerMemberSlots) {
  FusionDefinition fd("lifted");
  for (int i = 0; i < 3; ++i) {
    Val p = fd.defineTensor({32}, DataType::Float, "p" + std::to_string(i));
    fd.copy_(p * (0.5 + i), p);
  }
  Scheduled s = scheduleFusion(fd.finalize(), SegmentationMode::Batched);
  const BodyPlan& body = s.scheduled.plans[0].bodies[0];
  const Slot* lifted = findSlot(body, "lifted0");
  ASSERT_NE(lifted, nullptr);
  EXPECT_EQ(lifted->kind, SlotKind::LiftedConstant);
  EXPECT_FALSE(lifted->shared);
  EXPECT_EQ(lifted->dtype, DataType::Double);
  EXPECT_EQ(lifted->offset % 8, 0u);
}

TEST(Scheduler, NamesThatAreNotValidCppGetASuffix) {
  FusionDefinition fd("names");
  Val x = fd.defineTensor({8}, DataType::Float, "int");
  Val y = fd.defineTensor({8}, DataType::Float, "threadIdx");
  Val z = fd.defineTensor({8}, DataType::Float, "_hidden");
  fd.copy_(x + y + z, x);
  Scheduled s = scheduleFusion(fd.finalize(), SegmentationMode::Batched);
  const BodyPlan& body = s.scheduled.plans[0].bodies[0];
  EXPECT_NE(findSlot(body, "int_1"), nullptr);
  EXPECT_NE(findSlot(body, "threadIdx_1"), nullptr);
  EXPECT_NE(findSlot(body, "v_hidden"), nullptr);
}

TEST(Scheduler, SixtyFourBitIndicesOnlyWhereAMemberNeedsThem) {
  Scheduled small = scheduleFusion(optim::buildSeedAdam({{1 << 20}}), SegmentationMode::Batched);
  EXPECT_EQ(small.scheduled.plans[0].indexBits, 32u);
  Scheduled large =
      scheduleFusion(optim::buildSeedAdam({{int64_t(3) << 30}}), SegmentationMode::Batched);
  EXPECT_EQ(large.scheduled.plans[0].indexBits, 64u);
  // Per component: only the large member's launch takes 64-bit indices.
  Scheduled mixed = scheduleFusion(optim::buildSeedAdam({{1 << 20}, {int64_t(3) << 30}}),
                                   SegmentationMode::PerComponent);
  ASSERT_EQ(mixed.scheduled.launches.size(), 2u);
  EXPECT_EQ(mixed.scheduled.plans[mixed.scheduled.launches[0].plan].indexBits, 32u);
  EXPECT_EQ(mixed.scheduled.plans[mixed.scheduled.launches[1].plan].indexBits, 64u);
  // The threshold leaves room for a chunk past the last element.
  Scheduled edge = scheduleFusion(optim::buildSeedAdam({{kMaxInt32IndexElements - 1}}),
                                  SegmentationMode::Batched);
  EXPECT_EQ(edge.scheduled.plans[0].indexBits, 32u);
  Scheduled over =
      scheduleFusion(optim::buildSeedAdam({{kMaxInt32IndexElements}}), SegmentationMode::Batched);
  EXPECT_EQ(over.scheduled.plans[0].indexBits, 64u);
}

TEST(Scheduler, DeferredWriteOfABroadcastReadTensorIsAClearError) {
  FusionDefinition fd("broadcast_write");
  Val x = fd.defineTensor({4, 8}, DataType::Float, "x");
  Val b = fd.defineTensor({4, 8}, DataType::Float, "b");
  fd.copy_(x + broadcast_in_dim(b, {4, 8}, {0, 1}), x);
  fd.copy_(b * 2.0, b);
  auto fusion = fd.finalize();
  SegmentedFusion segmented = segment(*fusion, {SegmentationMode::Batched});
  std::string message =
      errorOf([&] { schedule(segmented, declaredSpecialization(segmented), defaultDevice()); });
  EXPECT_NE(message.find("copy_("), std::string::npos) << message;
  EXPECT_NE(message.find("'b'"), std::string::npos) << message;
  EXPECT_NE(message.find("0-d"), std::string::npos) << message;
}

TEST(Scheduler, ArchNamesAreCheckedAndSizeTheGrid) {
  EXPECT_EQ(deviceForArch("sm_80").multiprocessorCount, 108u);
  EXPECT_EQ(deviceForArch("sm_90").computeCapability, 90u);
  EXPECT_NE(errorOf([] { deviceForArch("banana"); }).find("invalid arch 'banana'"),
            std::string::npos);
  EXPECT_NE(errorOf([] { deviceForArch("sm_60"); }).find("too old"), std::string::npos);
  EXPECT_NE(errorOf([] { deviceForArch("sm_"); }).find("invalid arch"), std::string::npos);
}

TEST(Scheduler, PlanTextNamesEveryDecision) {
  Scheduled s = scheduleFusion(optim::buildSeedAdam(mixedShapes(2)), SegmentationMode::Batched);
  std::string text = formatKernelPlan(s.scheduled.plans[0]);
  for (const char* expected : {"kernel adam_step_class0 for sm_90", "flat", "step0",
                               "written deferred", "16 bytes per access", "ticket"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
}

TEST(Schedule, TheCombineChainIsAtMostItsLoadsPerThreadAndTheBlockTree) {
  // Every partial count up to 2^20, and the largest members of the corpus: GPT-2's wte
  // (37,693 chunks of 1024) and a LLaMA embedding (128,000 chunks).
  std::vector<int64_t> counts = {37693, 128000, int64_t(1) << 24, (int64_t(1) << 31) - 1};
  for (int64_t partials = 1; partials <= (int64_t(1) << 20); ++partials)
    counts.push_back(partials);
  for (int64_t partials : counts)
    ASSERT_LE(combineSteps(partials, 256), llvm::divideCeil(partials, 256) + 8)
        << partials << " partials";
  // The model counts what the prelude does: one load round and the block tree's 8 levels for
  // a block's worth, a pair per thread one combine more, 16 per thread two rounds of 8.
  EXPECT_EQ(combineSteps(1, 256), 9);
  EXPECT_EQ(combineSteps(256, 256), 9);
  EXPECT_EQ(combineSteps(257, 256), 10);
  EXPECT_EQ(combineSteps(4096, 256), 17);
  EXPECT_EQ(combineSteps(4097, 256), 3 * 4 + 1 + 2 + 8);
  EXPECT_EQ(combineSteps(100, 32), 1 + 2 + 5);
}

TEST(Schedule, ThreadsPerBlockIsAPowerOfTwoFrom32To1024) {
  auto fusion = optim::buildSeedAdam(mixedShapes(3));
  SegmentedFusion segmented = segment(*fusion, {SegmentationMode::Auto});
  ScheduleOptions options;
  options.threadsPerBlock = 64;
  ScheduledFusion scheduled =
      schedule(segmented, declaredSpecialization(segmented), defaultDevice(), options);
  for (const KernelPlan& plan : scheduled.plans) {
    EXPECT_EQ(plan.threadsPerBlock, 64u);
    for (const BodyPlan& body : plan.bodies)
      EXPECT_EQ(body.chunkElements % (64 * 4), 0);
  }
  for (unsigned threads : {0u, 16u, 100u, 2048u}) {
    options.threadsPerBlock = threads;
    EXPECT_CONTAINS(
        errorOf([&] {
          schedule(segmented, declaredSpecialization(segmented), defaultDevice(), options);
        }),
        fmt::format("threads per block must be a power of two from 32 to 1024, not {}", threads));
  }
}
