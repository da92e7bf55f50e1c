#pragma once
// Shared by the tests that run fusions on the host backend against the reference evaluator:
// host options over every execution, order and thread count, random inputs, and the
// comparison of every output and updated input, bit for bit.

#include "runtime/fusion_executor.h"
#include "tests/support/host_comparison.h"

#include "ir/evaluator.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace widefuse::testing {

/// Host options covering the orders and thread counts of the fast and verify paths (under
/// AddressSanitizer, where the device emulator's every access costs several times more, the
/// verify path shuffled on three threads only).
inline std::vector<HostOptions> hostVariants() {
#ifdef __SANITIZE_ADDRESS__
  constexpr bool sanitized = true;
#else
  constexpr bool sanitized = false;
#endif
  std::vector<HostOptions> variants;
  for (HostExecution execution : {HostExecution::Fast, HostExecution::Verify})
    for (BlockOrder::Kind order :
         {BlockOrder::Kind::Forward, BlockOrder::Kind::Reverse, BlockOrder::Kind::Shuffle})
      for (unsigned threads : {1u, 3u}) {
        if (sanitized && execution == HostExecution::Verify &&
            (order != BlockOrder::Kind::Shuffle || threads != 3))
          continue;
        HostOptions options;
        options.execution = execution;
        options.blockOrder = {order, 7};
        options.interleavings = 1; // the variants are the interleavings
        options.threads = threads;
        options.elementsPerWorker = 64;
        variants.push_back(options);
      }
  return variants;
}

/// Finite floats with every mantissa bit in use (so that the order of a sum shows in its
/// bits), a zero of either sign now and then; small integers; random bools.
inline void fillFinite(HostTensor& tensor, std::mt19937_64& random) {
  std::normal_distribution<double> normal(0.0, 3.0);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    double value = random() % 17 == 0 ? (random() % 2 ? 0.0 : -0.0) : normal(random);
    if (!isFloatingPoint(tensor.dtype()))
      value = std::round(value);
    if (tensor.dtype() == DataType::Float)
      tensor.as<float>()[i] = float(value);
    else if (tensor.dtype() == DataType::Double)
      tensor.as<double>()[i] = value;
    else if (tensor.dtype() == DataType::Int32)
      tensor.as<int32_t>()[i] = int32_t(value);
    else if (tensor.dtype() == DataType::Bool)
      tensor.as<bool>()[i] = value > 0;
    else if (tensor.dtype() == DataType::UInt8)
      tensor.as<uint8_t>()[i] = uint8_t(int(value));
    else
      tensor.as<uint16_t>()[i] = toNarrowBits(tensor.dtype(), value, float(value));
  }
}

/// Random inputs of the fusion's types (a symbolic extent is 3): finite values, or every
/// special value (fillRandom: infinities, NaN, denormals) when `specials`.
inline std::vector<HostTensor> randomInputs(const Fusion& fusion, uint64_t seed,
                                            bool specials = false) {
  std::mt19937_64 random(seed);
  std::vector<HostTensor> tensors;
  for (const Value* input : fusion.inputs()) {
    llvm::SmallVector<int64_t, 4> shape;
    if (input->isTensor())
      for (int64_t extent : input->extents())
        shape.push_back(extent == kSymbolicExtent ? 3 : extent);
    tensors.emplace_back(input->isTensor() ? input->dtype() : DataType::Float, shape);
    if (input->isTensor() && specials)
      fillRandom(tensors.back(), random);
    else if (input->isTensor())
      fillFinite(tensors.back(), random);
  }
  return tensors;
}

/// A transposed [rows, columns] view of `storage`, a [columns, rows] tensor filled with finite
/// values from `seed`: the layout a grad's `mT` has.
inline TensorRef transposedView(HostTensor& storage, uint64_t seed) {
  std::mt19937_64 random(seed);
  fillFinite(storage, random);
  TensorRef view = storage.ref();
  view.shape = {storage.shape()[1], storage.shape()[0]};
  view.strides = {1, storage.shape()[1]};
  return view;
}

inline std::vector<Argument> argumentsOf(const Fusion& fusion, std::vector<HostTensor>& tensors) {
  std::vector<Argument> arguments;
  for (size_t i = 0; i < tensors.size(); ++i)
    arguments.push_back(fusion.inputs()[i]->isTensor() ? Argument(tensors[i].ref())
                                                       : Argument(ScalarArgument(0.25)));
  return arguments;
}

/// Runs `fusion` `steps` times on the host backend with `options` and on the evaluator, and
/// compares the outputs of every step and the updated inputs at the end.
inline void expectHostEqualsEvaluator(const Fusion& fusion, const HostOptions& host, int steps = 2,
                                      bool specials = false) {
  SCOPED_TRACE(fmt::format("{} {} {} threads", hostExecutionName(host.execution).str(),
                           formatBlockOrder(host.blockOrder), host.threads));
  std::vector<HostTensor> hostInputs = randomInputs(fusion, 3, specials);
  std::vector<HostTensor> referenceInputs = hostInputs;
  std::vector<Argument> hostArguments = argumentsOf(fusion, hostInputs);
  std::vector<Argument> referenceArguments = argumentsOf(fusion, referenceInputs);
  ExecutorOptions options;
  options.backend = "host";
  options.host = host;
  FusionExecutorCache executor(fusion, options);
  for (int step = 0; step < steps; ++step) {
    RunResult result = executor.run(hostArguments);
    EvaluationResult expected = evaluate(fusion, referenceArguments);
    ASSERT_EQ(result.outputs.size(), expected.outputs.size());
    for (size_t o = 0; o < expected.outputs.size(); ++o)
      EXPECT_EQ(countDifferences(result.outputs[o], expected.outputs[o],
                                 fmt::format("step {} output {}", step, o)),
                0);
  }
  for (size_t i = 0; i < hostInputs.size(); ++i)
    if (fusion.inputs()[i]->isTensor())
      EXPECT_EQ(countDifferences(hostInputs[i], referenceInputs[i],
                                 "input " + fusion.inputs()[i]->name()),
                0);
}

} // namespace widefuse::testing
