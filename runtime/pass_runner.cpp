#include "runtime/pass_runner.h"

#include "ir/runtime_shapes.h"
#include "runtime/fusion_executor.h"
#include "runtime/prepared_run.h"

namespace widefuse {

PassRunner::PassRunner(const Fusion& fusion, const Backend& backend, ExecutorOptions options)
    : fusion_(fusion), backend_(backend), plan_(splitPasses(fusion)) {
  options.components = nullptr; // the whole fusion's: each pass is a fusion of its own
  for (const Pass& pass : plan_.passes)
    executors_.push_back(std::make_unique<FusionExecutorCache>(*pass.fusion, options));
  results_.resize(plan_.results.size());
}

PassRunner::~PassRunner() = default;

std::vector<std::shared_ptr<const CompiledFusion>> PassRunner::lastCompiled() const {
  std::vector<std::shared_ptr<const CompiledFusion>> compiled;
  for (const auto& executor : executors_)
    compiled.push_back(executor->lastCompiled());
  return compiled;
}

PassRunner::Bound PassRunner::bind(llvm::ArrayRef<Argument> arguments,
                                   llvm::ArrayRef<TensorRef> outputs, std::vector<KeptTensor>& held,
                                   std::vector<HostTensor>& fresh) {
  // check, shapes: the whole fusion's, before any pass writes anything.
  checkArguments(fusion_, arguments);
  RuntimeShapes shapes = inferRuntimeShapes(fusion_, arguments);
  if (!outputs.empty())
    checkCallerOutputs(fusion_, outputs, shapes);
  Bound bound;
  bound.outputs.assign(outputs.begin(), outputs.end());
  if (outputs.empty()) {
    for (const Value* output : fusion_.outputs())
      fresh.emplace_back(output->dtype(), shapes.of(output));
    for (HostTensor& output : fresh)
      bound.outputs.push_back(output.ref());
  }
  // A result the fusion also returns lives in that output; the others in `held`.
  bound.results.resize(plan_.results.size());
  std::vector<bool> inOutput(plan_.results.size(), false);
  for (const Pass& pass : plan_.passes)
    for (const PassOutput& output : pass.outputs)
      if (output.result >= 0 && output.fusionOutput >= 0) {
        bound.results[size_t(output.result)] = bound.outputs[size_t(output.fusionOutput)];
        inOutput[size_t(output.result)] = true;
      }
  held.resize(plan_.results.size());
  for (size_t r = 0; r < plan_.results.size(); ++r) {
    if (inOutput[r])
      continue;
    const Value* value = plan_.results[r].value;
    if (!held[r].holds(value->dtype(), shapes.of(value)))
      held[r] = backend_.allocate(value->dtype(), shapes.of(value));
    bound.results[r] = held[r].ref;
  }
  return bound;
}

std::vector<Argument> PassRunner::passArguments(size_t p, llvm::ArrayRef<Argument> arguments,
                                                const Bound& bound) const {
  std::vector<Argument> result;
  for (const PassInput& input : plan_.passes[p].inputs)
    result.push_back(input.kind == PassInput::Kind::FusionInput
                         ? arguments[input.index]
                         : Argument(bound.results[input.index]));
  return result;
}

std::vector<TensorRef> PassRunner::passOutputs(size_t p, const Bound& bound) const {
  std::vector<TensorRef> result;
  for (const PassOutput& output : plan_.passes[p].outputs)
    result.push_back(output.result >= 0 ? bound.results[size_t(output.result)]
                                        : bound.outputs[size_t(output.fusionOutput)]);
  return result;
}

RunResult PassRunner::run(llvm::ArrayRef<Argument> arguments, llvm::ArrayRef<TensorRef> outputs,
                          std::optional<void*> stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  RunResult result;
  Bound bound = bind(arguments, outputs, results_, result.outputs);
  for (size_t p = 0; p < plan_.passes.size(); ++p)
    executors_[p]->run(passArguments(p, arguments, bound), passOutputs(p, bound), stream);
  return result;
}

std::unique_ptr<PreparedRun> PassRunner::prepare(FusionExecutorCache& executor,
                                                 llvm::ArrayRef<Argument> arguments,
                                                 std::optional<void*> stream,
                                                 llvm::ArrayRef<TensorRef> callerOutputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The prepared run owns its memory: the results, and the fusion's outputs unless the
  // caller gave them. Reserved first: growing a vector of HostTensor copies them (their move
  // may throw), which would leave the bound references behind.
  std::vector<KeptTensor> results;
  std::vector<HostTensor> outputs;
  outputs.reserve(fusion_.outputs().size());
  Bound bound = bind(arguments, callerOutputs, results, outputs);
  std::vector<std::unique_ptr<PreparedRun>> passes;
  std::vector<std::vector<std::pair<unsigned, unsigned>>> uses(arguments.size());
  for (size_t p = 0; p < plan_.passes.size(); ++p) {
    passes.push_back(
        executors_[p]->prepare(passArguments(p, arguments, bound), stream, passOutputs(p, bound)));
    const Pass& pass = plan_.passes[p];
    for (size_t j = 0; j < pass.inputs.size(); ++j)
      if (pass.inputs[j].kind == PassInput::Kind::FusionInput)
        uses[pass.inputs[j].index].push_back({unsigned(p), unsigned(j)});
  }
  std::vector<Argument> copied(arguments.begin(), arguments.end());
  return std::unique_ptr<PreparedRun>(new PreparedRun(executor, std::move(copied),
                                                      std::move(passes), std::move(uses),
                                                      std::move(results), std::move(outputs)));
}

} // namespace widefuse
