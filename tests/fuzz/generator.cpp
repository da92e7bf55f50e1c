#include "tests/fuzz/generator.h"

#include "tests/fuzz/component_builder.h"
#include "tests/fuzz/reductions.h"
#include "tests/fuzz/values.h"

#include "ir/error.h"
#include "segmenter/phases.h"

#include <fmt/format.h>

#include <numeric>
#include <random>

namespace widefuse::fuzz {
namespace {

/// splitmix64: spreads neighbouring seeds over the whole 64-bit space.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// One case in four of several components: a global reduction over values of two or three
/// of them (as a gradient norm over every parameter), returned and/or read by a pointwise op
/// beside one of its operands. Drawn from a stream of its own.
void reduceAcross(FusionDefinition& fd, const std::vector<ComponentValues>& components,
                  std::mt19937_64& random, GeneratorStats& stats) {
  if (components.size() < 2 || random() % 4 != 0)
    return;
  OpKind op = kReductionOps[random() % std::size(kReductionOps)];
  std::vector<size_t> order(components.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::shuffle(order.begin(), order.end(), random);
  std::vector<ReductionOperand> operands;
  for (size_t k : llvm::ArrayRef<size_t>(order).take_front(2 + random() % 2)) {
    std::vector<const ReductionOperand*> fitting;
    for (const ReductionOperand& value : components[k].reducible)
      if (reductionTakes(op, value.value.dtype()))
        fitting.push_back(&value);
    if (!fitting.empty())
      operands.push_back(*fitting[random() % fitting.size()]);
  }
  if (operands.size() < 2)
    return;
  try {
    bool substituted = false;
    Val result = applyReduction(fd, op, ReductionScope::Global, operands, substituted);
    OpKind drawn = result.value()->definition()->op();
    ++stats.reductions;
    ++stats.reductionsAcross;
    stats.emptyMaxMin += substituted;
    stats.reductionForms.insert(reductionForm(drawn, ReductionScope::Global));
    stats.opsCovered.insert(opName(drawn).str());
    bool returned = random() % 2 == 0;
    if (returned)
      fd.addOutput(result);
    const Val& other = operands[random() % operands.size()].value;
    if (auto readBy = readReduction(fd, result, other, random, stats.rejectedOps)) {
      fd.addOutput(readBy->second);
      ++stats.reductionsRead;
      stats.opsCovered.insert(opName(readBy->first).str());
    } else if (!returned) {
      fd.addOutput(result);
    }
  } catch (const Error&) {
    ++stats.rejectedOps;
  }
}

/// Several components: new ones of random rank and clones of earlier ones (same structure,
/// other extents and constants), plus runtime scalars shared by all of them.
FuzzCase generateOnce(uint64_t seed, const GeneratorOptions& options, GeneratorStats& stats) {
  std::mt19937_64 random(seed);
  FuzzCase result;
  // One fusion name for every case: identical kernels of different cases share the cache.
  FusionDefinition fd(fmt::format("fuzz{}", seed % 1000));
  std::vector<Val> shared;
  for (size_t i = 0, n = random() % 3; i < n; ++i) {
    DataType dtype = kRealDataTypes[random() % std::size(kRealDataTypes)];
    std::string name = fmt::format("s{}", i);
    shared.push_back(fd.defineScalar(dtype, name));
    InputData data;
    data.isScalar = true;
    data.dtype = dtype;
    data.scalar = randomScalar(dtype, random);
    result.inputs[name] = std::move(data);
  }
  bool zeroExtents = random() % 3 == 0;
  std::vector<ComponentPlan> plans;
  std::vector<ComponentValues> values;
  unsigned numComponents = 1 + unsigned(random() % std::max(options.maxComponents, 1u));
  for (unsigned k = 0; k < numComponents; ++k) {
    ComponentPlan plan;
    bool clone = random() % 5 < 2;
    if (k > 0 && clone) {
      plan = plans[random() % plans.size()];
    } else {
      plan.structureSeed = random();
      plan.rank = unsigned(random() % 5);
    }
    plan.valueSeed = random();
    plan.allowZeroExtents = zeroExtents;
    plan.maxExprs = options.maxExprsPerComponent;
    plan.maxElements = options.maxElements;
    plans.push_back(plan);
    values.push_back(buildComponent(fd, result, plan, fmt::format("c{}_", k), shared, stats));
  }
  std::mt19937_64 across(seed ^ 0x6163726f7373ull);
  reduceAcross(fd, values, across, stats);
  for (const ComponentValues& component : values)
    for (const Val& output : component.outputs) {
      if (!llvm::is_contained(fd.fusion().outputs(), output.value()))
        fd.addOutput(output);
    }
  // A fusion must produce something: a copy of its last tensor input (a scalar one would
  // make a scalar output, which fusions do not have; neg would refuse a b8 one).
  if (fd.fusion().outputs().empty() && fd.fusion().aliases().empty()) {
    auto inputs = fd.fusion().inputs();
    auto tensor = std::find_if(inputs.rbegin(), inputs.rend(),
                               [](const Value* input) { return input->isTensor(); });
    if (tensor == inputs.rend())
      throw InternalError("fuzz case without a tensor input");
    fd.addOutput(set(Val(&fd, *tensor)));
  }
  result.fusion = fd.finalize();
  stats.multiPhaseCases += planPhases(*result.fusion).count > 1;
  return result;
}

} // namespace

uint64_t caseSeed(uint64_t seed, uint64_t index) {
  return mix(mix(seed) ^ index);
}

FuzzCase generateCase(uint64_t seed, const GeneratorOptions& options, GeneratorStats& stats) {
  GeneratorStats attempt;
  FuzzCase result = generateOnce(seed, options, attempt);
  stats.add(attempt);
  return result;
}

} // namespace widefuse::fuzz
