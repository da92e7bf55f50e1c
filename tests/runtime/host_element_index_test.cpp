// element_index on the host backend: each element's row-major index in its tensor, in flat,
// strided, reducing and by-blocks bodies, packed members of several sizes and a 0-d tensor,
// equal to the reference evaluator on the fast path and on the device code in the emulator;
// what kernels do not index yet is refused by name.

#include "runtime/fusion_executor.h"
#include "tests/codegen/test_fusions.h"
#include "tests/runtime/host_evaluator_runs.h"
#include "tests/support/error_of.h"

#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

using namespace widefuse;
using namespace widefuse::testing;

TEST(HostElementIndex, EveryKindOfBodyEqualsTheEvaluator) {
  auto fusion = elementIndexFusion();
  for (const HostOptions& host : hostVariants())
    expectHostEqualsEvaluator(*fusion, host, 2);
}

TEST(HostElementIndex, EachElementGetsItsRowMajorIndex) {
  FusionDefinition fd("positions");
  Val x = fd.defineTensor({3, 5}, DataType::Float, "x");
  fd.addOutput(element_index(x));
  auto fusion = fd.finalize();
  std::vector<HostTensor> inputs = randomInputs(*fusion, 1);
  std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
  ExecutorOptions options;
  options.backend = "host";
  std::vector<HostTensor> outputs = FusionExecutorCache(*fusion, options).run(arguments).outputs;
  ASSERT_EQ(outputs.size(), 1u);
  for (int64_t i = 0; i < 15; ++i)
    EXPECT_EQ(outputs[0].as<int64_t>()[i], i);
}

TEST(HostElementIndex, WhatKernelsDoNotIndexIsRefusedByName) {
  ExecutorOptions options;
  options.backend = "host";
  auto errorFor = [&](const std::function<void(FusionDefinition&)>& build) {
    FusionDefinition fd("refused");
    build(fd);
    auto fusion = fd.finalize();
    std::vector<HostTensor> inputs = randomInputs(*fusion, 1);
    std::vector<Argument> arguments = argumentsOf(*fusion, inputs);
    return errorOf([&] { FusionExecutorCache(*fusion, options).run(arguments); });
  };
  EXPECT_CONTAINS(errorFor([](FusionDefinition& fd) {
                    Val row = fd.defineTensor({16}, DataType::Float, "row");
                    Val grid = fd.defineTensor({8, 16}, DataType::Float, "grid");
                    Val index = cast(element_index(row), DataType::Float);
                    fd.addOutput(grid + broadcast_in_dim(index, {8, 16}, {1}));
                  }),
                  "element_index of a value broadcast into a larger domain");
  EXPECT_CONTAINS(errorFor([](FusionDefinition& fd) {
                    Val grid = fd.defineTensor({8, 16}, DataType::Float, "grid");
                    fd.addOutput(sum(grid + cast(element_index(grid), DataType::Float), {1}));
                  }),
                  "element_index in a body reduced over rows");
}
