#include "tests/fuzz/runner.h"

#include "tests/support/same_element.h"

#include "tests/fuzz/oracle.h"

#include "ir/error.h"
#include "ir/evaluator.h"
#include "ir/half_float.h"
#include "ir/parser.h"
#include "ir/printer.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace widefuse::fuzz {
namespace {

using widefuse::testing::sameElement;

std::string hexBits(const std::byte* p, size_t size) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, size); // little-endian: the element's value
  return fmt::format("0x{:0{}x}", bits, size * 2);
}

/// The first element where `actual` and `expected` (both `bytes` long) differ, described;
/// empty when they agree.
std::string firstDifference(const std::byte* actual, const std::byte* expected, size_t bytes,
                            DataType dtype) {
  size_t size = byteSize(dtype);
  for (size_t at = 0; at + size <= bytes; at += size)
    if (!sameElement(actual + at, expected + at, dtype))
      return fmt::format("element {} ({}): host {} reference {}", at / size, shortName(dtype).str(),
                         hexBits(actual + at, size), hexBits(expected + at, size));
  return {};
}

/// Runs one configuration and compares it with the reference's outputs and final inputs.
RunOutcome runConfig(const FuzzCase& fuzzCase, const RunConfig& config,
                     const EvaluationResult& expected,
                     const std::vector<std::vector<std::byte>>& expectedInputs) {
  const Fusion& fusion = *fuzzCase.fusion;
  std::vector<std::vector<std::byte>> storage;
  std::vector<Argument> arguments = bindArguments(fusion, fuzzCase.inputs, storage);
  ExecutorOptions options;
  options.backend = "host";
  options.mode = config.mode;
  options.host.blockOrder = config.order;
  options.host.threads = config.threads;
  options.host.execution = config.execution;
  options.host.interleavings = 1; // the configurations are the interleavings
  options.host.elementsPerWorker = 1;
  options.schedule.rowSegmentColumns = kFuzzRowSegmentColumns;
  RunResult result;
  RunOutcome outcome;
  outcome.kind = RunOutcome::Kind::Mismatch;
  try {
    FusionExecutorCache executor(fusion, options);
    result = executor.run(arguments);
  } catch (const Error& e) {
    // A documented limitation (e.g. a written input read through a broadcast): the backend
    // refuses with a reason, which the design allows. Counted, not a mismatch.
    outcome.kind = RunOutcome::Kind::Rejected;
    outcome.message = fmt::format("{}: the host backend refused: {}", config.name(), e.what());
    outcome.signature = "backend-refused";
    return outcome;
  } catch (const std::exception& e) {
    outcome.message = fmt::format("{}: the host backend threw: {}", config.name(), e.what());
    outcome.signature = fmt::format("throws/{}", modeName(config.mode).str());
    return outcome;
  }
  if (result.outputs.size() != expected.outputs.size()) {
    outcome.message = fmt::format("{}: {} outputs, the reference has {}", config.name(),
                                  result.outputs.size(), expected.outputs.size());
    outcome.signature = "output count";
    return outcome;
  }
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    const HostTensor& a = result.outputs[i];
    const HostTensor& b = expected.outputs[i];
    std::string difference =
        a.shape() != b.shape() || a.dtype() != b.dtype()
            ? std::string("shape or dtype differs")
            : firstDifference(static_cast<const std::byte*>(a.data()),
                              static_cast<const std::byte*>(b.data()), a.byteSize(), a.dtype());
    if (!difference.empty()) {
      outcome.message =
          fmt::format("{}: output {}: {}", config.name(), fusion.outputs()[i]->name(), difference);
      outcome.signature = fmt::format("output/{}", modeName(config.mode).str());
      return outcome;
    }
  }
  for (size_t i = 0; i < storage.size(); ++i) {
    const Value* input = fusion.inputs()[i];
    if (input->isScalar())
      continue;
    std::string difference = firstDifference(storage[i].data(), expectedInputs[i].data(),
                                             storage[i].size(), input->dtype());
    if (!difference.empty()) {
      outcome.message =
          fmt::format("{}: input {} (after copy_): {}", config.name(), input->name(), difference);
      outcome.signature = fmt::format("input/{}", modeName(config.mode).str());
      return outcome;
    }
  }
  return RunOutcome{};
}

/// The text form must give the fusion back: the reducer and the regression files
/// (tests/fuzz/replay.h) read it, reductions included (`sum(x)`, `sum(a, b)`, `sum(x, [1])`).
/// Empty when printing the parsed text gives the same text again.
std::string textFormProblem(const Fusion& fusion) {
  std::string text = printFusion(fusion);
  std::string again;
  try {
    again = printFusion(*parseFusion(text, "printed"));
  } catch (const Error& e) {
    return fmt::format("the text form does not parse: {}\n{}", e.what(), text);
  }
  if (again == text)
    return {};
  return fmt::format("the text form prints otherwise once parsed:\n{}parsed and printed:\n{}", text,
                     again);
}

} // namespace

std::string RunConfig::name() const {
  return fmt::format("{}/{}/{} thread{}/{}", modeName(mode).str(), formatBlockOrder(order), threads,
                     threads == 1 ? "" : "s", hostExecutionName(execution).str());
}

std::vector<RunConfig> allConfigs() {
  std::vector<RunConfig> configs;
  for (SegmentationMode mode :
       {SegmentationMode::PerComponent, SegmentationMode::Batched, SegmentationMode::Packed})
    for (BlockOrder::Kind kind :
         {BlockOrder::Kind::Forward, BlockOrder::Kind::Reverse, BlockOrder::Kind::Shuffle})
      for (unsigned threads : {1u, 3u})
        for (HostExecution execution : {HostExecution::Verify, HostExecution::Fast})
          configs.push_back({mode, BlockOrder{kind, 12345}, threads, execution});
  return configs;
}

std::vector<Argument> bindArguments(const Fusion& fusion,
                                    const std::map<std::string, InputData>& inputs,
                                    std::vector<std::vector<std::byte>>& storage) {
  std::vector<Argument> arguments;
  storage.clear();
  storage.reserve(fusion.inputs().size()); // no reallocation: views point into it
  for (const Value* input : fusion.inputs()) {
    auto found = inputs.find(input->name());
    if (found == inputs.end())
      throw InternalError(fmt::format("fuzz case has no argument for input '{}'", input->name()));
    const InputData& data = found->second;
    storage.push_back(data.storage);
    if (data.isScalar) {
      arguments.push_back(data.scalar);
      continue;
    }
    TensorRef view;
    view.dtype = data.dtype;
    view.shape = data.shape;
    view.strides = data.strides;
    view.data = storage.back().data();
    arguments.push_back(view);
  }
  return arguments;
}

RunOutcome runCase(const FuzzCase& fuzzCase, const RunnerOptions& options) {
  const Fusion& fusion = *fuzzCase.fusion;
  if (std::string problem = textFormProblem(fusion); !problem.empty())
    return {RunOutcome::Kind::Mismatch, problem, "text form"};
  std::vector<std::vector<std::byte>> expectedInputs;
  std::vector<Argument> arguments = bindArguments(fusion, fuzzCase.inputs, expectedInputs);
  EvaluationResult expected;
  try {
    expected = evaluate(fusion, arguments);
  } catch (const Error& e) {
    return {RunOutcome::Kind::Rejected, fmt::format("the reference rejected it: {}", e.what()),
            "rejected"};
  }
  for (size_t i = 0; i < options.configs.size(); ++i) {
    RunOutcome outcome = runConfig(fuzzCase, options.configs[i], expected, expectedInputs);
    if (outcome.kind != RunOutcome::Kind::Pass) {
      outcome.configIndex = int(i);
      return outcome;
    }
  }
  if (options.oracle)
    if (std::optional<std::string> problem = checkOracle(fuzzCase, expected))
      return {RunOutcome::Kind::Mismatch, *problem, "oracle"};
  return {};
}

} // namespace widefuse::fuzz
