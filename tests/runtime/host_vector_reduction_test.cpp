// Pass 1 of tensor and global reductions with vector accesses (docs/reductions.md §8): each
// thread's consecutive elements loaded by one access where the member's tensors are aligned,
// one at a time where a view starts mid-vector, their tree a subtree of the row's. Either way
// every result and written element equals the reference evaluator's bits, on the device code
// in the emulator and on the fast path, in every block and thread order.

#include "runtime/fusion_executor.h"
#include "tests/runtime/host_evaluator_runs.h"

#include "ir/evaluator.h"
#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// Members of dtypes 1 to 8 bytes wide (b8, bf16, f32, f64) (4 to 16 elements an access), whole and
/// partial last chunks; each reduces its squares and its largest magnitude, and writes a scaled
/// copy (a pass-1 body that stores as well as reduces). Two members read views one element in.
std::unique_ptr<Fusion> reductionsOfEveryWidth() {
  FusionDefinition fd("widths");
  std::vector<Val> squares;
  const std::pair<DataType, int64_t> members[] = {
      {DataType::Float, 5000},  {DataType::Float, 4096},   {DataType::BFloat16, 3001},
      {DataType::Double, 2050}, {DataType::Bool, 1027},    {DataType::Float, 1},
      {DataType::Float, 1023},  {DataType::BFloat16, 4096}};
  for (size_t i = 0; i < std::size(members); ++i) {
    auto [dtype, n] = members[i];
    Val x = fd.defineTensor({n}, dtype, fmt::format("x{}", i));
    Val wide = cast(x, dtype == DataType::Double ? DataType::Double : DataType::Float);
    squares.push_back(cast(wide * wide, DataType::Float));
    fd.addOutput(max(abs(wide)));
    fd.addOutput(wide * 0.5);
  }
  fd.addOutput(sum(squares));
  return fd.finalize();
}

/// `storage` viewed from its second element: a member whose vector accesses would be
/// misaligned.
TensorRef shiftedByOne(HostTensor& storage) {
  TensorRef view = storage.ref();
  view.shape = {storage.shape()[0] - 1};
  view.data = static_cast<std::byte*>(view.data) + byteSize(storage.dtype());
  return view;
}

} // namespace

TEST(HostVectorReductions, AlignedMembersEqualTheEvaluatorInEveryVariant) {
  auto fusion = reductionsOfEveryWidth();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host, 1);
}

TEST(HostVectorReductions, MisalignedViewsTakeScalarAccessesWithTheSameBits) {
  auto fusion = reductionsOfEveryWidth();
  std::vector<HostTensor> inputs = randomInputs(*fusion, 9);
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  // Members 0 (f32) and 2 (bf16) read one element into a tensor one longer.
  std::vector<HostTensor> storage;
  for (size_t member : {0u, 2u}) {
    const Value* input = fusion->inputs()[member];
    storage.emplace_back(input->dtype(), llvm::SmallVector<int64_t, 4>{input->extents()[0] + 1});
  }
  for (size_t k = 0; k < storage.size(); ++k) {
    std::mt19937_64 random(k + 1);
    fillFinite(storage[k], random);
  }
  arguments[0] = shiftedByOne(storage[0]);
  arguments[2] = shiftedByOne(storage[1]);
  EvaluationResult expected = evaluate(*fusion, arguments);
  for (const HostOptions& host : hostVariants()) {
    SCOPED_TRACE(fmt::format("{} {} {} threads", hostExecutionName(host.execution).str(),
                             formatBlockOrder(host.blockOrder), host.threads));
    ExecutorOptions options;
    options.backend = "host";
    options.host = host;
    RunResult result = FusionExecutorCache(*fusion, options).run(arguments);
    ASSERT_EQ(result.outputs.size(), expected.outputs.size());
    for (size_t o = 0; o < expected.outputs.size(); ++o)
      EXPECT_EQ(
          countDifferences(result.outputs[o], expected.outputs[o], fmt::format("output {}", o)), 0);
  }
}
