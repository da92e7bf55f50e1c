#pragma once
// Shared by the mixed-precision Adam tests: TransformerEngine's remainder rule written
// independently of tools/workloads/param_remainders, the dtype configurations, and the state of an
// Adam fusion's inputs drawn from f32 masters.

#include "tools/workloads/adam.h"

#include "ir/evaluator.h"
#include "ir/half_float.h"
#include "runtime/fusion_executor.h"

#include <llvm/ADT/ArrayRef.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace widefuse::optim::testing {

// ---- TE's rule, written here independently of tools/workloads/param_remainders -------------

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// (bf16 bits, remainder bits) of a master: the high half rounded up in magnitude when the
/// low half is at least half of it.
inline std::pair<uint16_t, uint16_t> teSplit(float master) {
  uint32_t bits = bitsOf(master);
  uint32_t low = bits & 0xFFFFu;
  uint32_t high = (bits >> 16) + (low >= 0x8000u ? 1u : 0u);
  return {uint16_t(high & 0xFFFFu), uint16_t(low)};
}

inline float teReconstruct(uint16_t param, uint16_t remainder) {
  uint32_t high = param;
  if (remainder & 0x8000u) // a negative int16: the high half had been rounded up
    high = (high + 0xFFFFu) & 0xFFFFu;
  return floatOf(high << 16 | remainder);
}

/// The bf16 value nearest to a finite master, ties away from zero, chosen by comparing
/// distances (not bits): truncation toward zero and the next value away from zero.
inline double nearestTiesAway(float master) {
  uint32_t bits = bitsOf(master);
  double down = double(floatOf(bits & 0xFFFF0000u));
  double up = double(floatOf((bits & 0xFFFF0000u) + 0x10000u));
  double x = double(master);
  return std::fabs(x - down) < std::fabs(up - x) ? down : up;
}

// ---- configurations and state -------------------------------------------------------------

struct Dtypes {
  DataType param;
  std::optional<DataType> grad, state;
  MasterWeights master;
};

inline std::string dtypesName(const Dtypes& d) {
  auto name = [](std::optional<DataType> t) { return t ? shortName(*t).str() : "default"; };
  return shortName(d.param).str() + "_grad_" + name(d.grad) + "_state_" + name(d.state) +
         "_master_" + masterWeightsName(d.master).str();
}

/// Every valid combination of parameter, grad and state dtype and master-weight policy.
inline std::vector<Dtypes> everyDtypeConfiguration() {
  std::vector<Dtypes> list;
  for (DataType param : {DataType::Float, DataType::BFloat16, DataType::Half})
    for (MasterWeights master :
         {MasterWeights::None, MasterWeights::Fp32, MasterWeights::Remainders}) {
      if (master == MasterWeights::Fp32 && param == DataType::Float)
        continue;
      if (master == MasterWeights::Remainders && param != DataType::BFloat16)
        continue;
      for (std::optional<DataType> grad :
           {std::optional<DataType>{}, std::optional{DataType::Float}}) {
        if (grad && param == DataType::Float)
          continue;
        // The default state dtype: the parameters' (none), f32 (master weights).
        DataType byDefault = master == MasterWeights::None ? param : DataType::Float;
        list.push_back({param, grad, {}, master});
        for (DataType state : {DataType::Float, DataType::BFloat16})
          if (state != byDefault)
            list.push_back({param, grad, state, master});
      }
    }
  return list;
}

/// Two param groups of small parameters (empty and odd sizes, one past a vector multiple).
inline AdamConfig mixedConfig(const Dtypes& d, WeightDecayKind decay, double weightDecay = 0.01) {
  AdamConfig config;
  config.groups.push_back(
      {{{0}, {1}, {3}, {17}, {64, 3}, {5, 5, 2}}, {2e-3, 0.9, 0.999, 1e-6, weightDecay}});
  config.groups.push_back(
      {{{257}, {8, 8}, {1, 0}, {33}}, {5e-3, 0.8, 0.99, 1e-5, 2 * weightDecay}});
  config.decay = decay;
  config.dtype = d.param;
  config.gradDtype = d.grad;
  config.stateDtype = d.state;
  config.masterWeights = d.master;
  return config;
}

/// One tensor per fusion input (empty for a runtime scalar lr) and the lr values.
struct State {
  std::vector<HostTensor> tensors;
  std::vector<double> lrs;

  std::vector<Argument> arguments(const AdamFusion& adam) {
    std::vector<Argument> list;
    for (size_t k = 0; k < adam.inputs.size(); ++k) {
      if (adam.fusion->inputs()[k]->isScalar())
        list.push_back(ScalarArgument(adam.inputs[k].role == AdamRole::Lr
                                          ? lrs[adam.inputs[k].group]
                                          : adam.inputs[k].value)); // betas, eps, weight decay
      else
        list.push_back(tensors[k].ref());
    }
    return list;
  }
};

inline std::vector<size_t> positionsOf(const AdamFusion& adam, AdamRole role) {
  std::vector<size_t> positions;
  for (size_t k = 0; k < adam.inputs.size(); ++k)
    if (adam.inputs[k].role == role)
      positions.push_back(k);
  return positions;
}

/// f32 masters drawn per parameter in order (the same draws for every policy), held as the
/// parameter rounded to nearest even (none), the master and that rounding (fp32), or TE's
/// split (remainders); zero moments and steps.
inline State initialState(const AdamConfig& config, const AdamFusion& adam, std::mt19937& random) {
  std::normal_distribution<float> normal;
  State state;
  for (const AdamGroup& group : config.groups)
    state.lrs.push_back(group.hyper.lr);
  std::vector<std::vector<float>> masters;
  for (size_t k = 0; k < adam.inputs.size(); ++k) {
    const Value* input = adam.fusion->inputs()[k];
    state.tensors.push_back(input->isScalar() ? HostTensor()
                                              : HostTensor(input->dtype(), input->extents()));
    if (adam.inputs[k].role != AdamRole::Param)
      continue;
    HostTensor& param = state.tensors.back();
    std::vector<float> values(param.numel());
    for (float& value : values)
      value = normal(random);
    for (int64_t i = 0; i < param.numel(); ++i)
      setFloatingElement(param, i, values[i]);
    masters.push_back(std::move(values));
  }
  size_t j = 0;
  for (size_t k = 0; k < adam.inputs.size(); ++k) {
    HostTensor& tensor = state.tensors[k];
    if (adam.inputs[k].role == AdamRole::Master && tensor.byteSize() != 0) // no data if empty
      std::memcpy(tensor.data(), masters[j].data(), tensor.byteSize());
    if (adam.inputs[k].role == AdamRole::Remainder) {
      HostTensor& param = state.tensors[k - 1];
      for (int64_t i = 0; i < tensor.numel(); ++i) {
        auto [high, low] = teSplit(masters[j][i]);
        param.as<uint16_t>()[i] = high;
        tensor.as<uint16_t>()[i] = low;
      }
    }
    if (adam.inputs[k].role == AdamRole::Step)
      ++j;
    if (adam.inputs[k].role == AdamRole::Lr && adam.fusion->inputs()[k]->isTensor())
      setFloatingElement(tensor, 0, state.lrs[adam.inputs[k].group]); // capturable
  }
  return state;
}

/// New gradients in every state (the same values), scaled; with `overflow` some are inf/NaN.
inline void setGradients(const AdamFusion& adam, llvm::ArrayRef<State*> states,
                         std::mt19937& random, double scale, bool overflow) {
  std::normal_distribution<double> normal;
  for (size_t k : positionsOf(adam, AdamRole::Grad)) {
    HostTensor& grad = states[0]->tensors[k];
    for (int64_t i = 0; i < grad.numel(); ++i) {
      double value = normal(random) * scale;
      if (overflow && i % 3 == 0)
        value = i % 2 ? NAN : INFINITY;
      setFloatingElement(grad, i, value);
    }
    for (State* other : states.drop_front())
      other->tensors[k] = grad;
  }
}

inline int64_t bitDifferences(const HostTensor& a, const HostTensor& b) {
  size_t size = byteSize(a.dtype());
  int64_t differences = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    differences += std::memcmp(static_cast<const char*>(a.data()) + i * size,
                               static_cast<const char*>(b.data()) + i * size, size) != 0;
  return differences;
}

inline ExecutorOptions hostOptions(BlockOrder order) {
  ExecutorOptions options;
  options.backend = "host";
  options.mode = SegmentationMode::Batched;
  options.host.blockOrder = order;
  return options;
}

inline void setScalarTensor(const AdamFusion& adam, State& state, AdamRole role, double value) {
  for (size_t k : positionsOf(adam, role))
    setFloatingElement(state.tensors[k], 0, value);
}

} // namespace widefuse::optim::testing
