// The device emulator runs a kernel's CUDA text under the GPU's execution model and checks it
// as compute-sanitizer would. Each planted defect — the barrier between the warps' trees
// removed, a barrier only some threads reach, the workspace given one element too far, a ticket
// never reset, one shared half for every round of warp trees — must be reported with its kernel,
// block, thread and line of the generated text; the kernels as generated run clean and equal
// the evaluator. Every device line of a corpus of generated kernels runs (coverage).

#include "runtime/host/device_emulator.h"

#include "runtime/fusion_compiler.h"
#include "runtime/fusion_executor.h"
#include "runtime/launch_binding.h"
#include "scheduler/schedule.h"
#include "segmenter/segment.h"
#include "tests/codegen/test_fusions.h"
#include "tests/runtime/host_evaluator_runs.h"
#include "tests/support/error_of.h"

#include "codegen/body_emitter.h"
#include "ir/evaluator.h"
#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <regex>
#include <set>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// A global sum over members of awkward sizes: a kernel with chunk partials, a last-block
/// combine per member, every member's tree and a global ticket.
std::unique_ptr<Fusion> globalSum() {
  FusionDefinition fd("planted");
  std::vector<Val> squares;
  for (int64_t size : {1023, 4097, 1, 600}) {
    Val x = fd.defineTensor({size}, DataType::Float, fmt::format("x{}", size));
    squares.push_back(x * x);
  }
  fd.addOutput(sum(squares));
  return fd.finalize();
}

/// What a planted run changes: the kernel's text, and where its workspace starts.
struct Plant {
  std::function<void(std::string&)> edit = [](std::string&) {};
  /// Bytes the workspace the kernel is given is moved past the one allocated.
  size_t workspaceShift = 0;
  /// Whether tickets are checked after the step.
  bool checkTickets = true;
  /// Kernels with 64-bit element indices, as members of 2^31 elements or more get.
  bool wideIndices = false;
  /// Blocks in the grid (0: as the launch binds it).
  unsigned grid = 0;
};

/// Runs the one launch of `fusion` (one phase) `steps` times in the emulator with `plant`,
/// on `arguments`; returns the first output of the last step.
float runPlanted(const Fusion& fusion, std::vector<Argument>& arguments, const Plant& plant,
                 int steps = 1, BlockOrder order = {}) {
  FusionCompileOptions compileOptions;
  Specialization specialization = declaredSpecialization(segment(fusion, {compileOptions.mode}));
  for (std::vector<bool>& phase : specialization.needsInt64Index)
    phase.assign(phase.size(), plant.wideIndices);
  CompiledFusion compiled = compileFusion(fusion, compileOptions, &specialization);
  EXPECT_EQ(compiled.scheduled.launches.size(), 1u);
  EXPECT_EQ(compiled.scheduled.plans[0].indexBits, plant.wideIndices ? 64u : 32u);
  const KernelLaunch& launch = compiled.scheduled.launches.front();
  const KernelPlan& plan = compiled.scheduled.plans[launch.plan];
  std::string source = compiled.kernels[launch.plan].source;
  plant.edit(source);
  auto kernel = EmulatedKernel::compile(source, plan.name, parameterTypeName(plan));
  RuntimeShapes shapes = inferRuntimeShapes(fusion, arguments);
  HostTensor output(DataType::Float, {});
  TensorRef outputRef = output.ref();
  auto tensorOf = [&](const Value* value, bool asOutput) -> const TensorRef& {
    for (size_t i = 0; i < fusion.inputs().size(); ++i)
      if (fusion.inputs()[i] == value && !asOutput)
        return std::get<TensorRef>(arguments[i]);
    return outputRef;
  };
  auto scalarOf = [&](const Value*) { return ScalarArgument(0.0); };
  GlobalReductions globals;
  LaunchBinding binding = bindLaunch(plan, launch, shapes, tensorOf, scalarOf, globals, 0);
  std::vector<uint32_t> tickets(launch.members.size(), 0u);
  setTableAddresses(binding, binding.table.empty() ? nullptr : binding.table.data(),
                    tickets.data());
  // 16-byte aligned, zeroed (the binding cache's workspace), and exactly as large as bound.
  auto workspace = std::make_unique<std::byte[]>(binding.workspaceBytes + 64);
  std::byte* base = workspace.get() + (16 - reinterpret_cast<uintptr_t>(workspace.get()) % 16);
  std::fill(base, base + binding.workspaceBytes, std::byte{0});
  std::vector<void*> bases = {base + plant.workspaceShift};
  setWorkspaceAddresses(binding, bases);
  std::vector<EmulationBuffer> buffers = {
      {tickets.data(), tickets.size() * sizeof(uint32_t), "the tickets"},
      {base, size_t(binding.workspaceBytes), "the workspace"},
      {output.data(), sizeof(float), "the output"}};
  for (size_t i = 0; i < arguments.size(); ++i) {
    const TensorRef& tensor = std::get<TensorRef>(arguments[i]);
    buffers.push_back({tensor.data, size_t(tensor.numel()) * 4, fmt::format("input {}", i)});
  }
  EmulationOptions options;
  options.order = order;
  TicketLedger ledger;
  options.tickets = plant.checkTickets ? &ledger : nullptr;
  for (int step = 0; step < steps; ++step) {
    *static_cast<float*>(output.data()) = -1.0f; // what a step that writes nothing leaves
    emulateLaunch(*kernel, binding.parameters,
                  plant.grid ? plant.grid : gridBlocks(binding, plan.maxGridBlocks),
                  plan.threadsPerBlock, buffers, options);
    ledger.check();
  }
  return *static_cast<const float*>(output.data());
}

/// Replaces the one occurrence of `from` in `source`.
std::function<void(std::string&)> replacing(std::string from, std::string to) {
  return [from, to](std::string& source) {
    size_t at = source.find(from);
    ASSERT_NE(at, std::string::npos) << "the generated text no longer has: " << from;
    source.replace(at, from.size(), to);
  };
}

/// The line of `source` holding `text` (1-based), as reports name it.
int lineOf(const std::string& source, const std::string& text) {
  size_t at = source.find(text);
  return at == std::string::npos ? -1
                                 : int(std::count(source.begin(), source.begin() + at, '\n')) + 1;
}

/// The generated text of the global sum's kernel.
std::string plantedSource() {
  auto fusion = globalSum();
  return compileFusion(*fusion, {}).kernels.front().source;
}

class PlantedDefects : public ::testing::Test {
protected:
  void SetUp() override {
    fusion_ = globalSum();
    inputs_ = randomInputs(*fusion_, 7);
    arguments_ = argumentsOf(*fusion_, inputs_);
    expected_ = *static_cast<const float*>(evaluate(*fusion_, arguments_).outputs.front().data());
  }
  /// The error message of a planted run, with the report's `fault` and a thread at `line`.
  std::string faultOf(const Plant& plant, const std::string& fault, int line) {
    std::string message = errorOf([&] { runPlanted(*fusion_, arguments_, plant); });
    EXPECT_NE(message.find(fault), std::string::npos) << message;
    EXPECT_TRUE(std::regex_search(message, std::regex("kernel planted_class0, block [0-9]+")))
        << message;
    EXPECT_NE(message.find(fmt::format("at planted_class0.cu:{}", line)), std::string::npos)
        << "line " << line << " not named in: " << message;
    return message;
  }

  std::unique_ptr<Fusion> fusion_;
  std::vector<HostTensor> inputs_;
  std::vector<Argument> arguments_;
  float expected_ = 0;
};

} // namespace

TEST_F(PlantedDefects, TheKernelAsGeneratedRunsCleanAndEqualsTheEvaluator) {
  for (const char* order : {"forward", "reverse", "shuffle:3", "shuffle:11"}) {
    float sum = runPlanted(*fusion_, arguments_, {}, 2, parseBlockOrder(order));
    EXPECT_EQ(std::memcmp(&sum, &expected_, sizeof sum), 0) << order;
  }
}

TEST_F(PlantedDefects, SixtyFourBitIndicesEqualTheEvaluator) {
  Plant wide;
  wide.wideIndices = true;
  for (const char* order : {"forward", "shuffle:5"}) {
    float sum = runPlanted(*fusion_, arguments_, wide, 2, parseBlockOrder(order));
    EXPECT_EQ(std::memcmp(&sum, &expected_, sizeof sum), 0) << order;
  }
}

TEST_F(PlantedDefects, ABarrierRemovedBetweenTheWarpsTreesIsARace) {
  std::string source = plantedSource();
  std::string barrier = "__syncthreads(); // every warp's trees of the chunk are written";
  Plant plant;
  plant.edit = replacing(barrier, "");
  std::string message = faultOf(plant, "shared-memory race",
                                lineOf(source, "r0_warps[half][row][threadIdx.x / 32u] ="));
  EXPECT_NE(message.find("thread "), std::string::npos);
}

TEST_F(PlantedDefects, ABarrierOnlySomeThreadsReachIsDivergent) {
  std::string source = plantedSource();
  std::string barrier = "__syncthreads(); // every warp's trees of the chunk are written";
  Plant plant;
  plant.edit = replacing(barrier, "if (threadIdx.x < 128) __syncthreads();");
  std::string message = faultOf(plant, "divergent barrier", lineOf(source, barrier));
  EXPECT_NE(message.find("threads 0, 1, 2"), std::string::npos) << message;
}

TEST_F(PlantedDefects, AWorkspaceOneElementTooFarIsOutOfBounds) {
  Plant plant;
  plant.workspaceShift = sizeof(float);
  std::string message = errorOf([&] { runPlanted(*fusion_, arguments_, plant); });
  EXPECT_NE(message.find("out-of-bounds access"), std::string::npos) << message;
  EXPECT_NE(message.find("past the end of the workspace"), std::string::npos) << message;
  EXPECT_TRUE(std::regex_search(message, std::regex("block [0-9]+: .*thread [0-9]+ at "
                                                    "planted_class0.cu:[0-9]+")))
      << message;
}

TEST_F(PlantedDefects, ATicketNotResetIsReportedAndBreaksTheNextStep) {
  std::string source = plantedSource();
  std::string reset = "    *entry.r0_ticket = 0u; // ready for the next launch";
  ASSERT_NE(source.find(reset), std::string::npos) << source;
  Plant plant;
  plant.edit = replacing(reset, "");
  faultOf(plant, "ticket not reset", lineOf(source, "= atomicAdd(entry.r0_ticket"));
  // Unchecked, the first step is right and the second wrong: its combine never runs.
  plant.checkTickets = false;
  float first = runPlanted(*fusion_, arguments_, plant, 1);
  EXPECT_EQ(std::memcmp(&first, &expected_, sizeof first), 0);
  float second = runPlanted(*fusion_, arguments_, plant, 2);
  EXPECT_NE(std::memcmp(&second, &expected_, sizeof second), 0);
}

TEST_F(PlantedDefects, OneHalfForEveryChunkIsARace) {
  // The warps' trees of every chunk in one place: a warp's next chunk's tree may overwrite its
  // last before warp 0 has read it, with no barrier between.
  std::string source = plantedSource();
  std::string write = "r0_warps[half][row][threadIdx.x / 32u] = r0_warp;";
  std::string read = "wf_warps_tree<wf_tree_sum, 256>(r0_warps[half][row]);";
  Plant plant;
  plant.grid = 1; // a block with several chunks in a row
  plant.edit = [=](std::string& text) {
    replacing(write, "r0_warps[0][row][threadIdx.x / 32u] = r0_warp;")(text);
    replacing(read, "wf_warps_tree<wf_tree_sum, 256>(r0_warps[0][row]);")(text);
  };
  std::string message = faultOf(plant, "shared-memory race", lineOf(source, write));
  EXPECT_NE(message.find("thread "), std::string::npos) << message;
}

namespace {

/// A line's text as a construct of the generator or prelude: trimmed, the kernel's name as K
/// and every number as # (the same construct in every kernel, slot, width and type size that
/// has it).
std::string construct(const std::string& source, int line, const std::string& kernel) {
  size_t begin = 0;
  for (int l = 1; l < line && begin != std::string::npos; ++l)
    begin = source.find('\n', begin) == std::string::npos ? std::string::npos
                                                          : source.find('\n', begin) + 1;
  if (begin == std::string::npos)
    return {};
  std::string text = source.substr(begin, source.find('\n', begin) - begin);
  for (size_t at; (at = text.find(kernel)) != std::string::npos;)
    text.replace(at, kernel.size(), "K");
  return std::regex_replace(llvm::StringRef(text).trim().str(), std::regex("[0-9]+"), "#");
}

/// Runs `fusion` on the host backend's verify path (the device emulator) on random inputs
/// with NaN, infinities and denormals among them, and (`finite`: inputs whose dtypes
/// fillFinite knows) once more on finite values.
void emulate(const Fusion& fusion, SegmentationMode mode = SegmentationMode::Auto,
             bool finite = true, ScheduleOptions schedule = {}) {
  HostOptions verify;
  verify.execution = HostExecution::Verify;
  verify.blockOrder = {BlockOrder::Kind::Shuffle, 3};
  ExecutorOptions options;
  options.backend = "host";
  options.mode = mode;
  options.host = verify;
  options.schedule = schedule;
  FusionExecutorCache executor(fusion, options);
  for (bool specials : {true, !finite}) {
    std::vector<HostTensor> inputs = randomInputs(fusion, 5, specials);
    executor.run(argumentsOf(fusion, inputs));
  }
}

} // namespace

TEST(DeviceCoverage, EveryDeviceLineOfTheCorpusRuns) {
  // The corpus: every reduction op in tensor, global and row scope over empty, short and long
  // members; a clipped step in two phases; pointwise kernels batched, packed and per component
  // with vector, scalar and strided bodies (a transposed member, a broadcast); narrow and
  // complex types; 64-bit indices. A device construct no kernel of it runs is dead code or an
  // untested path: the test names each one.
  EmulationCoverage::start();
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Bool}) {
    FusionDefinition fd("scopes");
    std::vector<Val> xs;
    for (int64_t size : {0, 1, 1023, 4097})
      xs.push_back(fd.defineTensor({size}, dtype, fmt::format("x{}", size)));
    Val rows = fd.defineTensor({3, 1023}, dtype, "rows");
    bool numeric = dtype != DataType::Bool;
    for (Val x : xs) {
      if (numeric)
        fd.addOutput(sum(x));
      if (x.value()->extents()[0] > 0) { // max and min of nothing have no value
        fd.addOutput(max(x));
        fd.addOutput(min(x));
      }
      fd.addOutput(any(x));
      fd.addOutput(all(x));
    }
    fd.addOutput(max(xs));
    fd.addOutput(min(xs));
    fd.addOutput(any(xs));
    fd.addOutput(all(xs));
    if (numeric)
      fd.addOutput(sum(xs));
    // Every op over the rows of `x` (sum of numbers only).
    auto everyRowReduction = [numeric](FusionDefinition& into, Val x) {
      if (numeric)
        into.addOutput(sum(x, {1}));
      into.addOutput(any(x, {1}));
      into.addOutput(all(x, {1}));
      into.addOutput(max(x, {1}));
      into.addOutput(min(x, {1}));
    };
    everyRowReduction(fd, rows);
    emulate(*fd.finalize());
    // Rows with no elements (their results the identity), in a kernel of their own.
    FusionDefinition empty("empty_rows");
    Val none = empty.defineTensor({4, 0}, dtype, "rows");
    empty.addOutput(any(none, {1}));
    if (numeric)
      empty.addOutput(sum(none, {1}));
    emulate(*empty.finalize());
    // Rows across memory (a transposed view, as Adafactor's column sums): tiles of 32 x 32,
    // the last partial in both directions.
    FusionDefinition tiled("tiled_rows");
    everyRowReduction(tiled, tiled.defineTensor({40, 45}, dtype, "rows"));
    HostTensor storage(dtype, {45, 40});
    std::mt19937_64 random(4);
    fillFinite(storage, random);
    TensorRef transposed = storage.ref();
    transposed.shape = {40, 45};
    transposed.strides = {1, 40};
    ExecutorOptions options;
    options.backend = "host";
    options.host.execution = HostExecution::Verify;
    FusionExecutorCache(*tiled.finalize(), options).run({transposed});
  }
  {
    // Two phases: the norm, then the update reading it; a 0-d step written after the last
    // chunk (deferred).
    FusionDefinition fd("phases");
    std::vector<Val> ps, gs, steps, squares;
    for (int64_t size : {1023, 0, 4097}) {
      ps.push_back(fd.defineTensor({size}, DataType::Float, fmt::format("p{}", size)));
      gs.push_back(fd.defineTensor({size}, DataType::BFloat16, fmt::format("g{}", size)));
      steps.push_back(fd.defineTensor({}, DataType::Float, fmt::format("step{}", size)));
      Val g = cast(gs.back(), DataType::Float);
      squares.push_back(g * g);
    }
    Val scale = minimum(1.0 / (sqrt(sum(squares)) + 1e-6), 1.0);
    for (size_t i = 0; i < ps.size(); ++i) {
      fd.copy_(ps[i] - cast(gs[i], DataType::Float) * scale * steps[i], ps[i]);
      fd.copy_(steps[i] + 1.0, steps[i]);
    }
    emulate(*fd.finalize());
  }
  std::set<OpKind> covered;
  {
    // Complex arithmetic on values made from real inputs (c64 and c128).
    for (DataType real : {DataType::Float, DataType::Double}) {
      FusionDefinition fd("complex");
      Val x = fd.defineTensor({1000}, real, "x");
      Val c = cast(x, real == DataType::Float ? DataType::ComplexFloat : DataType::ComplexDouble);
      fd.addOutput(c * c + c / (c + 1.0));
      fd.addOutput(c / (c * 0.0)); // a division by exactly zero
      fd.addOutput(abs(c));
      emulate(*fd.finalize());
    }
  }
  for (DataType dtype : {DataType::Float, DataType::BFloat16, DataType::Half})
    for (SegmentationMode mode :
         {SegmentationMode::PerComponent, SegmentationMode::Batched, SegmentationMode::Packed})
      emulate(*allOpsFusion(dtype, covered), mode, false);
  std::set<std::pair<DataType, DataType>> bitcasts;
  emulate(*conversionsFusion(bitcasts), SegmentationMode::Packed, false);
  emulate(*broadcastFusion(), SegmentationMode::Batched);
  {
    // Narrow floats at the edges of their binades and subnormal ranges, from f32 and from
    // f64 (another rounding path): rounding that carries into the next binade, past the
    // largest finite value, results below the smallest normal; and remainders whose fmod and
    // divisor differ in sign.
    const double edges[2][8] = {
        {0.99999994f, 1.9999999f, 3.0e-5f, 6.1e-5f, 1.0e-7f, 447.9f, 0.0019f, 239.99f},
        {1.9999999999, 65519.99, 1.0e-7, 3.0e-5, 1.0e-39, 3.3961e38, 0.0019, 447.9}};
    for (DataType wide : {DataType::Float, DataType::Double}) {
      FusionDefinition fd("narrow_edges");
      Val x = fd.defineTensor({16}, wide, "x");
      for (DataType narrow :
           {DataType::Half, DataType::BFloat16, DataType::Float8_e4m3fn, DataType::Float8_e5m2})
        fd.addOutput(cast(x, narrow));
      auto fusion = fd.finalize();
      HostTensor values(wide, {16});
      for (int i = 0; i < 16; ++i) {
        double value = (i < 8 ? 1.0 : -1.0) * edges[wide == DataType::Double][i % 8];
        if (wide == DataType::Double)
          values.as<double>()[i] = value;
        else
          values.as<float>()[i] = float(value);
      }
      ExecutorOptions options;
      options.backend = "host";
      options.host.execution = HostExecution::Verify;
      FusionExecutorCache(*fusion, options).run({values.ref()});
      FusionDefinition signs("remainders");
      Val y = signs.defineTensor({16}, wide, "x");
      signs.addOutput(remainder(y, 3.0));
      signs.addOutput(remainder(y, -3.0));
      FusionExecutorCache(*signs.finalize(), options).run({values.ref()});
    }
  }
  {
    // Combines of more values than a block has threads, in passes: a member of 301 chunks,
    // a global sum over 300 members.
    FusionDefinition fd("wide_combine");
    Val x = fd.defineTensor({301 * 1024 - 5}, DataType::Float, "x");
    fd.addOutput(sum(x));
    fd.addOutput(max(x));
    std::vector<Val> ys;
    for (int i = 0; i < 300; ++i)
      ys.push_back(fd.defineTensor({3}, DataType::Float, fmt::format("y{}", i)));
    fd.addOutput(sum(ys));
    emulate(*fd.finalize());
  }
  {
    // The combine's other passes, with blocks of 32 threads (chunks of 128 elements): a member
    // of 600 chunks takes a pass of groups of 8, one of 400 ends with groups of 16, and a
    // global sum over 520 members a pass of 8 too.
    FusionDefinition fd("wider_combine");
    Val x = fd.defineTensor({600 * 128 - 3}, DataType::Float, "x");
    Val y = fd.defineTensor({400 * 128}, DataType::Float, "y");
    fd.addOutput(sum(x));
    fd.addOutput(max(y));
    std::vector<Val> zs;
    for (int i = 0; i < 520; ++i)
      zs.push_back(fd.defineTensor({1}, DataType::Float, fmt::format("z{}", i)));
    fd.addOutput(sum(zs));
    ScheduleOptions narrow;
    narrow.threadsPerBlock = 32;
    emulate(*fd.finalize(), SegmentationMode::Auto, true, narrow);
  }
  {
    // Pass 1 with vector accesses (reductions.md §8): whole chunks aligned (vector loads) and
    // one element in (scalar loads), a partial last chunk, and f64's two rows per chunk.
    FusionDefinition fd("vector_pass1");
    const int64_t n = 2 * 1024 + 5;
    Val y0 = fd.defineTensor({n}, DataType::Float, "y0");
    Val y = fd.defineTensor({n}, DataType::Float, "y");
    Val z0 = fd.defineTensor({n}, DataType::Float, "z0");
    Val d = fd.defineTensor({n}, DataType::Double, "d");
    fd.addOutput(sum(y0));
    fd.addOutput(max(y));
    fd.addOutput(min(z0));
    fd.addOutput(sum(d));
    auto fusion = fd.finalize();
    std::vector<HostTensor> storage;
    std::mt19937_64 random(11);
    for (const Value* input : fusion->inputs()) {
      storage.emplace_back(input->dtype(), llvm::SmallVector<int64_t, 4>{n + 1});
      fillFinite(storage.back(), random);
    }
    ExecutorOptions options;
    options.backend = "host";
    options.host.execution = HostExecution::Verify;
    FusionExecutorCache executor(*fusion, options);
    for (int64_t shift : {0, 1}) {
      std::vector<Argument> arguments;
      for (HostTensor& tensor : storage) {
        TensorRef view = tensor.ref();
        view.shape = {n};
        view.data = static_cast<std::byte*>(view.data) + shift * byteSize(tensor.dtype());
        arguments.push_back(view);
      }
      RunResult result = executor.run(arguments);
      EvaluationResult expected = evaluate(*fusion, arguments);
      for (size_t o = 0; o < expected.outputs.size(); ++o)
        EXPECT_EQ(countDifferences(result.outputs[o], expected.outputs[o], "vector_pass1"), 0);
    }
  }
  {
    // A view that starts mid-vector: the elements before the vector path.
    FusionDefinition fd("mid_vector");
    Val x = fd.defineTensor({1000}, DataType::Float, "x");
    fd.addOutput(x * 2.0 + 1.0);
    auto fusion = fd.finalize();
    HostTensor storage(DataType::Float, {1001});
    TensorRef view = storage.ref();
    view.shape = {1000};
    view.data = storage.as<float>() + 1;
    ExecutorOptions options;
    options.backend = "host";
    options.host.execution = HostExecution::Verify;
    FusionExecutorCache(*fusion, options).run({view});
  }
  {
    auto fusion = globalSum();
    std::vector<HostTensor> inputs = randomInputs(*fusion, 9);
    std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
    Plant wide;
    wide.wideIndices = true;
    runPlanted(*fusion, arguments, wide);
    // 8 chunks on 5 blocks of 2 chunks each: the last block has none.
    Plant idle;
    idle.grid = 5;
    EXPECT_EQ(runPlanted(*fusion, arguments, idle), runPlanted(*fusion, arguments, {}));
  }
  {
    // A tensor one element past a 16-byte boundary: no vector path, scalar accesses. One
    // whose address is not a multiple of its element size would fault on the device: refused
    // before anything runs. The body is mid_vector's.
    FusionDefinition fd("misaligned");
    Val x = fd.defineTensor({100}, DataType::Float, "x");
    fd.addOutput(x * 2.0 + 1.0);
    auto fusion = fd.finalize();
    HostTensor storage(DataType::Float, {101});
    TensorRef view = storage.ref();
    view.data = static_cast<std::byte*>(storage.data()) + 4;
    view.shape = {100};
    for (int64_t i = 0; i < 101; ++i)
      static_cast<float*>(storage.data())[i] = float(i);
    ExecutorOptions options;
    options.backend = "host";
    options.host.execution = HostExecution::Verify;
    RunResult result = FusionExecutorCache(*fusion, options).run({view});
    EXPECT_EQ(static_cast<const float*>(result.outputs[0].data())[99], 201.0f);
    view.data = static_cast<std::byte*>(storage.data()) + 2;
    EXPECT_CONTAINS(errorOf([&] { FusionExecutorCache(*fusion, options).run({view}); }),
                    "is not aligned to its element size (4 bytes for f32)");
  }
  std::vector<std::shared_ptr<const EmulatedKernel>> kernels = EmulationCoverage::stop();
  ASSERT_GT(kernels.size(), 10u);
  // Per construct: whether any kernel ran it.
  std::map<std::string, bool> constructs;
  std::map<std::string, std::string> example;
  size_t lines = 0;
  for (const auto& kernel : kernels)
    for (const CoveredLine& line : kernel->coverage()) {
      std::string text = construct(kernel->source(), line.line, kernel->name());
      constructs[text] = constructs[text] || line.executed;
      example.try_emplace(text, fmt::format("{}.cu:{}", kernel->name(), line.line));
      ++lines;
    }
  ASSERT_GT(constructs.size(), 100u) << "no line table: is addr2line or objdump missing?";
  std::string never;
  for (const auto& [text, ran] : constructs)
    if (!ran)
      never += fmt::format("\n  {} (e.g. {})", text, example[text]);
  EXPECT_TRUE(never.empty()) << "device constructs no kernel of the corpus ran (" << lines
                             << " lines of " << kernels.size() << " kernels):" << never;
}
