// The host backend runs the generated kernels on CPU threads, on its fast path (vectorized
// loops) and verifying (the device code in the device emulator): every op and dtype equals the
// reference evaluator bit for bit, and the seed's Adam over 100 parameters of awkward shapes (0, 1,
// 3, 4097, 65537, 1000003 elements and a non-contiguous member) equals it after 10 steps in
// forward, reverse and shuffled block orders, in every mode, on one and several threads. A
// planted bug (the deferred step write made immediate) must make that comparison fail: a
// test of the test.

#include "codegen/body_emitter.h"
#include "runtime/fusion_executor.h"
#include "runtime/host/device_emulator.h"
#include "runtime/host/host_launcher.h"
#include "runtime/launch_binding.h"
#include "tests/codegen/test_fusions.h"
#include "tests/support/host_comparison.h"
#include "tests/support/seed_adam_state.h"

#include "ir/fusion_definition.h"
#include "ir/half_float.h"
#include "segmenter/segment.h"
#include "tools/workloads/seed_adam.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// " = op(operand dtypes)" for a computed value, for failure messages.
std::string describeDefinition(const Value& value) {
  const Expr* expr = value.definition();
  if (!expr)
    return "";
  std::vector<std::string> operands;
  for (const Value* operand : expr->operands())
    operands.push_back(shortName(operand->dtype()).str() +
                       (operand->isConstant() ? " constant" : ""));
  return fmt::format(" = {}({})", opName(expr->op()).str(), fmt::join(operands, ", "));
}

constexpr HostExecution kExecutions[] = {HostExecution::Fast, HostExecution::Verify};

/// Whether this build runs under AddressSanitizer (several times slower: fewer emulated runs).
#ifdef __SANITIZE_ADDRESS__
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

/// Runs `fusion` on random inputs with the host backend (`execution`, on `threads` threads)
/// and the reference evaluator and compares every output and every updated input.
void expectHostMatchesReference(const Fusion& fusion, SegmentationMode mode, int64_t extent,
                                HostExecution execution, unsigned threads = 1) {
  SCOPED_TRACE(fmt::format("{}, {}, {} thread(s)", fusion.name(),
                           hostExecutionName(execution).str(), threads));
  std::mt19937_64 random(42);
  std::vector<HostTensor> host, reference;
  std::vector<Argument> hostArguments, referenceArguments;
  for (const Value* input : fusion.inputs()) {
    if (input->isScalar()) {
      ScalarArgument value = isFloatingPoint(input->dtype())    ? ScalarArgument(0.75)
                             : input->dtype() == DataType::Bool ? ScalarArgument(true)
                                                                : ScalarArgument(int64_t(3));
      hostArguments.push_back(value);
      referenceArguments.push_back(value);
      host.emplace_back();
      reference.emplace_back();
      continue;
    }
    llvm::SmallVector<int64_t, 4> shape;
    for (int64_t e : input->extents())
      shape.push_back(e == kSymbolicExtent ? extent : e);
    HostTensor tensor(input->dtype(), shape);
    fillRandom(tensor, random);
    host.push_back(tensor);
    reference.push_back(tensor);
  }
  for (size_t i = 0; i < host.size(); ++i)
    if (fusion.inputs()[i]->isTensor()) {
      hostArguments.insert(hostArguments.begin() + i, host[i].ref());
      referenceArguments.insert(referenceArguments.begin() + i, reference[i].ref());
    }
  hostArguments.resize(fusion.inputs().size());
  referenceArguments.resize(fusion.inputs().size());
  ExecutorOptions options;
  options.backend = "host";
  options.mode = mode;
  options.host.execution = execution;
  options.host.threads = threads;
  FusionExecutorCache executor(fusion, options);
  RunResult result = executor.run(hostArguments);
  EvaluationResult expected = evaluate(fusion, referenceArguments);
  ASSERT_EQ(result.outputs.size(), expected.outputs.size());
  for (size_t i = 0; i < result.outputs.size(); ++i)
    EXPECT_EQ(countDifferences(result.outputs[i], expected.outputs[i],
                               "output " + fusion.outputs()[i]->name() +
                                   describeDefinition(*fusion.outputs()[i])),
              0);
  for (size_t i = 0; i < host.size(); ++i) {
    if (fusion.inputs()[i]->isTensor()) {
      EXPECT_EQ(countDifferences(host[i], reference[i], "input " + fusion.inputs()[i]->name()), 0);
    }
  }
}

} // namespace

TEST(HostBackend, EveryOpInEveryDtypeEqualsTheReferenceBitwise) {
  for (DataType dtype : kAllDataTypes) {
    std::set<OpKind> covered;
    auto fusion = allOpsFusion(dtype, covered);
    for (HostExecution execution : kExecutions)
      expectHostMatchesReference(*fusion, SegmentationMode::Batched, 37, execution);
  }
}

TEST(HostBackend, EveryConversionAndBroadcastEqualsTheReferenceBitwise) {
  std::set<std::pair<DataType, DataType>> bitcasts;
  auto conversions = conversionsFusion(bitcasts);
  for (HostExecution execution : kExecutions) {
    expectHostMatchesReference(*conversions, SegmentationMode::Packed, 301, execution);
    expectHostMatchesReference(*broadcastFusion(), SegmentationMode::Batched, 13, execution);
    expectHostMatchesReference(*codebookFusion(), SegmentationMode::Batched, 517, execution);
  }
}

TEST(HostBackend, LongRunsOnSeveralThreadsEqualTheReferenceBitwise) {
  // Extents long enough that the fast path splits each member over several blocks and wakes
  // its workers (a tail after the last full vector, too).
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Int32, DataType::Bool}) {
    std::set<OpKind> covered;
    auto fusion = allOpsFusion(dtype, covered);
    for (HostExecution execution : kExecutions)
      expectHostMatchesReference(*fusion, SegmentationMode::Batched, 100003, execution, 3);
  }
}

namespace {

/// Shapes of the 100-parameter test: every awkward size, and [40, 24] for the transposed one.
std::vector<optim::Shape> awkwardShapes() {
  const optim::Shape pattern[] = {{0}, {1}, {3}, {4097}, {64, 32}, {7}, {16, 16}, {3, 5, 2}};
  std::vector<optim::Shape> shapes;
  for (int i = 0; i < 97; ++i)
    shapes.push_back(pattern[i % std::size(pattern)]);
  shapes.push_back({65537});
  shapes.push_back({1000003});
  shapes.push_back({40, 24});
  return shapes;
}
constexpr int kTransposed = 99;
constexpr int kSteps = 10;

/// The 100-parameter state twice: with the transposed member (which makes a batched body
/// strided for every member) and all contiguous (the vector path with its scalar tails).
class AdamOnTheHost : public ::testing::TestWithParam<bool> {
protected:
  static void SetUpTestSuite() {
    fusion_ = optim::buildSeedAdam(awkwardShapes()).release();
    for (int transposed : {kTransposed, -1}) {
      initial_[transposed < 0] = new AdamState(initialAdamState(*fusion_, transposed));
      expected_[transposed < 0] = new AdamState(initial_[transposed < 0]->clone());
      for (int step = 0; step < kSteps; ++step)
        evaluate(*fusion_, expected_[transposed < 0]->arguments());
    }
  }
  static void TearDownTestSuite() {
    for (int i = 0; i < 2; ++i) {
      delete expected_[i];
      delete initial_[i];
    }
    delete fusion_;
  }
  const AdamState& initial() const { return *initial_[GetParam()]; }
  const AdamState& expected() const { return *expected_[GetParam()]; }
  static Fusion* fusion_;
  static AdamState* initial_[2];
  static AdamState* expected_[2];
};
Fusion* AdamOnTheHost::fusion_ = nullptr;
AdamState* AdamOnTheHost::initial_[2] = {};
AdamState* AdamOnTheHost::expected_[2] = {};

} // namespace

TEST_P(AdamOnTheHost, EqualsTheReferenceBitwiseInEveryBlockOrderAndMode) {
  for (HostExecution execution : kExecutions)
    for (SegmentationMode mode :
         {SegmentationMode::PerComponent, SegmentationMode::Batched, SegmentationMode::Packed})
      for (const char* order : {"forward", "reverse", "shuffle:7"}) {
        if (kSanitized && execution == HostExecution::Verify && order[0] != 's')
          continue;
        SCOPED_TRACE(fmt::format("{}, {} in {} order", hostExecutionName(execution).str(),
                                 modeName(mode).str(), order));
        ExecutorOptions options;
        options.backend = "host";
        options.mode = mode;
        options.host.execution = execution;
        options.host.threads = 1;
        options.host.blockOrder = parseBlockOrder(order);
        options.host.interleavings = 1; // the orders are the interleavings
        FusionExecutorCache executor(*fusion_, options);
        AdamState state = initial().clone();
        for (int step = 0; step < kSteps; ++step)
          executor.run(state.arguments());
        EXPECT_EQ(stateDifferences(state, expected()), 0);
        // Every step counter advanced by exactly one per step.
        for (size_t p = 0; p < state.views.size() / 5; ++p)
          EXPECT_EQ(state.buffers[5 * p + 4].as<float>()[0],
                    initial().buffers[5 * p + 4].as<float>()[0] + kSteps);
        EXPECT_EQ(executor.numSpecializations(), 1u);
      }
}

TEST_P(AdamOnTheHost, EqualsTheReferenceWithBlocksOverlappingOnSeveralThreads) {
  for (HostExecution execution : kExecutions)
    for (unsigned threads : {2u, 3u}) {
      SCOPED_TRACE(fmt::format("{} on {} threads", hostExecutionName(execution).str(), threads));
      ExecutorOptions options;
      options.backend = "host";
      options.mode = SegmentationMode::Batched;
      options.host.execution = execution;
      options.host.blockOrder = parseBlockOrder("shuffle:11");
      options.host.interleavings = 1; // one shuffle per thread count
      options.host.threads = threads;
      FusionExecutorCache executor(*fusion_, options);
      AdamState state = initial().clone();
      for (int step = 0; step < kSteps; ++step)
        executor.run(state.arguments());
      EXPECT_EQ(stateDifferences(state, expected()), 0);
    }
}

/// Compiles the fixture's Adam for the host (batched, with `schedule`), with `edit` applied to
/// each kernel's source, and runs kSteps steps on `state` with a `grid`-block launch (at most
/// one block per chunk) in `order`, on `execution`'s path with `workers` threads.
void runOnHostWithGrid(
    const Fusion& fusion, AdamState& state, unsigned grid, const BlockOrder& order,
    HostExecution execution, unsigned workers = 1, const ScheduleOptions& schedule = {},
    const std::function<void(std::string&)>& edit = [](std::string&) {}) {
  FusionCompileOptions options;
  options.mode = SegmentationMode::Batched;
  options.schedule = schedule;
  std::vector<Argument> arguments = state.arguments();
  Specialization specialization = declaredSpecialization(segment(fusion, {options.mode}));
  for (size_t i = 0; i < arguments.size(); ++i)
    if (const TensorRef* tensor = std::get_if<TensorRef>(&arguments[i]))
      specialization.denseInputs[i] = tensor->isContiguous();
  CompiledFusion compiled = compileFusion(fusion, options, &specialization);
  HostKernelCache hostCache(KernelCacheOptions{std::nullopt, false});
  std::vector<std::shared_ptr<const HostKernel>> kernels;
  std::vector<std::shared_ptr<const EmulatedKernel>> emulated;
  for (const FusionKernel& kernel : compiled.kernels) {
    std::string source = kernel.source;
    edit(source);
    if (execution == HostExecution::Fast)
      kernels.push_back(hostCache.compile(source, kernel.plan->name));
    else
      emulated.push_back(
          EmulatedKernel::compile(source, kernel.plan->name, parameterTypeName(*kernel.plan)));
  }
  // What the kernels may touch: the state's tensors (the tables and tickets are added per
  // launch).
  std::vector<EmulationBuffer> tensors;
  for (const Argument& argument : arguments)
    if (const TensorRef* tensor = std::get_if<TensorRef>(&argument))
      tensors.push_back({tensor->data, size_t(tensor->span()) * byteSize(tensor->dtype), "state"});
  RuntimeShapes shapes = inferRuntimeShapes(fusion, arguments);
  std::vector<int> inputIndex(fusion.numValues(), -1);
  for (size_t i = 0; i < fusion.inputs().size(); ++i)
    inputIndex[fusion.inputs()[i]->id()] = int(i);
  auto tensorOf = [&](const Value* value, bool) -> const TensorRef& {
    return std::get<TensorRef>(arguments[size_t(inputIndex[value->id()])]);
  };
  auto scalarOf = [&](const Value* value) {
    return std::get<ScalarArgument>(arguments[size_t(inputIndex[value->id()])]);
  };
  for (int step = 0; step < kSteps; ++step)
    for (const KernelLaunch& launch : compiled.scheduled.launches) {
      const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
      GlobalReductions globals;
      LaunchBinding binding = bindLaunch(plan, launch, shapes, tensorOf, scalarOf, globals, 0);
      std::vector<uint32_t> tickets(launch.members.size(), 0);
      setTableAddresses(binding, binding.table.empty() ? nullptr : binding.table.data(),
                        tickets.data());
      if (execution == HostExecution::Fast)
        runHostGridFast(*kernels[launch.plan], binding.parameters, gridBlocks(binding, grid), order,
                        workers);
      else {
        std::vector<EmulationBuffer> buffers = tensors;
        buffers.push_back({tickets.data(), tickets.size() * 4, "tickets"});
        buffers.push_back({binding.table.data(), binding.table.size(), "member table"});
        EmulationOptions emulation;
        emulation.order = order;
        emulation.workers = workers;
        emulateLaunch(*emulated[launch.plan], binding.parameters, gridBlocks(binding, grid),
                      plan.threadsPerBlock, buffers, emulation);
      }
      for (uint32_t ticket : tickets)
        ASSERT_EQ(ticket, 0u) << "a kernel left a ticket set";
    }
}

TEST_P(AdamOnTheHost, BlocksTakingSeveralChunksEqualTheReferenceInEveryOrder) {
  // Small grids: each block takes a contiguous share of many chunks spanning several members
  // (a member's shared values computed once per share, its deferred step written by whichever
  // block finishes the member's last share).
  // Both loop shapes: plain and prefetching the next vector. The device emulator checks every
  // access of every thread (about 3 M elements a second here): grids of one block, of blocks
  // sharing members, and of many blocks, in reverse and shuffled order (thread interleavings
  // too); under AddressSanitizer one of them.
  for (bool prefetch : kSanitized ? std::vector<bool>{false} : std::vector<bool>{false, true})
    for (unsigned grid : kSanitized ? std::vector<unsigned>{3} : std::vector<unsigned>{1, 3, 40})
      for (const char* order : kSanitized ? std::vector<const char*>{"shuffle:5"}
                                          : std::vector<const char*>{"reverse", "shuffle:5"}) {
        AdamState state = initial().clone();
        runOnHostWithGrid(*fusion_, state, grid, parseBlockOrder(order), HostExecution::Verify, 1,
                          {4, prefetch});
        EXPECT_EQ(stateDifferences(state, expected()), 0)
            << grid << " blocks, " << order << (prefetch ? ", prefetching" : "");
      }
  // The fast path takes any grid: many blocks per member, on several workers at once.
  for (unsigned grid : {1u, 2u, 7u, 40u, 1000u})
    for (const char* order : {"forward", "reverse", "shuffle:5"})
      for (unsigned workers : {1u, 3u}) {
        AdamState state = initial().clone();
        runOnHostWithGrid(*fusion_, state, grid, parseBlockOrder(order), HostExecution::Fast,
                          workers);
        EXPECT_EQ(stateDifferences(state, expected()), 0)
            << "fast path, " << grid << " blocks, " << order << ", " << workers << " workers";
      }
}

TEST_P(AdamOnTheHost, AnImmediateStepWriteFailsTheComparison) {
  // The test of the test: the deferred step write made immediate (every block writes the
  // step when it finishes its share of a member) must be caught in reverse order, on both
  // paths.
  for (HostExecution execution : kExecutions) {
    SCOPED_TRACE(hostExecutionName(execution).str());
    AdamState state = initial().clone();
    bool planted = false;
    runOnHostWithGrid(
        *fusion_, state, 1u << 30, parseBlockOrder("reverse"), execution, 1, {},
        [&](std::string& source) {
          std::string ticket =
              "if (atomicAdd(params.tickets + member, u32(done)) == u32(chunks - done)) {";
          size_t at = source.find(ticket);
          if (at == std::string::npos)
            return;
          source.replace(at, ticket.size(), "if ((void)chunks, (void)done, true) {");
          planted = true;
        });
    ASSERT_TRUE(planted) << "the deferred write's ticket test was not found in the kernel";
    int64_t differences = 0;
    for (size_t i = 0; i < state.buffers.size(); ++i)
      differences += state.buffers[i].byteSize() != 0 && // empty tensors have no data pointer
                     std::memcmp(state.buffers[i].data(), expected().buffers[i].data(),
                                 state.buffers[i].byteSize()) != 0;
    EXPECT_GT(differences, 0) << "the planted bug went unnoticed";
  }
}

INSTANTIATE_TEST_SUITE_P(Layout, AdamOnTheHost, ::testing::Values(false, true),
                         [](const auto& info) {
                           return info.param ? std::string("Contiguous")
                                             : std::string("WithATransposedMember");
                         });

TEST(HostBackend, ViewsStartingMidVectorEqualTheReference) {
  // Tensors that start a few elements past an aligned address (views into larger buffers, as
  // FSDP shards are): when every tensor of a member is off by the same number of elements the
  // kernel peels that head and vectorizes the rest; when they differ it stays scalar. Either
  // way every element equals the reference's.
  std::vector<optim::Shape> shapes = {{4097}, {64, 32}, {3}, {100003}, {8}};
  auto fusion = optim::buildSeedAdam(shapes);
  for (HostExecution execution : kExecutions)
    for (bool prefetch : {false, execution == HostExecution::Verify})
      for (bool samePhase : {true, false}) {
        SCOPED_TRACE(hostExecutionName(execution).str());
        SCOPED_TRACE(samePhase ? "every tensor of a member off by the same elements"
                               : "one tensor off by one element");
        SCOPED_TRACE(prefetch ? "prefetching" : "plain loop");
        std::vector<HostTensor> device, reference;
        std::vector<Argument> onDevice, onReference;
        std::mt19937 random(5);
        std::normal_distribution<float> normal;
        for (size_t i = 0; i < fusion->inputs().size(); ++i) {
          const Value* input = fusion->inputs()[i];
          if (!input->isTensor())
            break;
          size_t member = i / 5, role = i % 5; // p, g, m, v, step
          int64_t offset = role == 4 ? 0 : samePhase ? int64_t(member % 4) : int64_t(role == 1);
          int64_t count = numElements(input->extents());
          HostTensor buffer(DataType::Float, {count + 3});
          for (int64_t k = 0; k < count + 3; ++k)
            buffer.as<float>()[k] = role == 4   ? 2.0f
                                    : role == 3 ? std::fabs(normal(random))
                                                : normal(random);
          device.push_back(buffer);
          reference.push_back(buffer);
          for (auto [tensors, arguments] :
               {std::pair(&device, &onDevice), std::pair(&reference, &onReference)}) {
            TensorRef view{
                DataType::Float,
                llvm::SmallVector<int64_t, 4>(input->extents().begin(), input->extents().end()),
                contiguousStrides(input->extents()), tensors->back().as<float>() + offset};
            arguments->push_back(view);
          }
        }
        // The buffers moved while the vectors grew: point the views at their final addresses.
        for (size_t t = 0; t < device.size(); ++t) {
          auto& a = std::get<TensorRef>(onDevice[t]);
          auto& b = std::get<TensorRef>(onReference[t]);
          int64_t offset = t % 5 == 4 ? 0 : samePhase ? int64_t(t / 5 % 4) : int64_t(t % 5 == 1);
          a.data = device[t].as<float>() + offset;
          b.data = reference[t].as<float>() + offset;
        }
        for (double scalar : {1e-3, 0.9, 0.999, 1e-8}) {
          onDevice.push_back(ScalarArgument(scalar));
          onReference.push_back(ScalarArgument(scalar));
        }
        ExecutorOptions options;
        options.backend = "host";
        options.mode = SegmentationMode::Batched;
        options.host.blockOrder = parseBlockOrder("shuffle:3");
        options.host.execution = execution;
        options.schedule.prefetch = prefetch;
        FusionExecutorCache executor(*fusion, options);
        for (int step = 0; step < 3; ++step) {
          executor.run(onDevice);
          evaluate(*fusion, onReference);
        }
        for (size_t t = 0; t < device.size(); ++t)
          EXPECT_EQ(countDifferences(device[t], reference[t], fmt::format("tensor {}", t)), 0);
      }
}
