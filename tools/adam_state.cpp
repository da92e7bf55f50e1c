#include "tools/adam_state.h"

#include "tools/npy_file.h"

#include "ir/error.h"
#include "ir/half_float.h"
#include "tools/workloads/param_remainders.h"
#include "tools/workloads/stochastic_rounding.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <random>

namespace widefuse {

std::vector<Argument> AdamState::arguments(const Fusion& fusion) {
  std::vector<Argument> list;
  size_t tensor = 0, scalar = 0;
  for (const Value* input : fusion.inputs())
    list.push_back(input->isTensor() ? Argument(tensors[tensor++].ref()) : scalars[scalar++]);
  return list;
}

double groupLearningRate(unsigned group) {
  return 1e-3 * (group + 1);
}

namespace {

/// The tensor of each input position (-1 for a scalar input).
std::vector<int> tensorPositions(const Fusion& fusion) {
  std::vector<int> positions;
  int next = 0;
  for (const Value* input : fusion.inputs())
    positions.push_back(input->isTensor() ? next++ : -1);
  return positions;
}

/// Fills the parameter (and its master or remainder) of the inputs starting at `param` from
/// f32 masters drawn now.
void drawMasters(const optim::AdamFusion& adam, size_t param, std::vector<HostTensor>& tensors,
                 const std::vector<int>& positions, std::mt19937& random) {
  std::normal_distribution<double> normal;
  HostTensor& p = tensors[positions[param]];
  std::vector<float> masters(p.numel());
  for (float& master : masters)
    master = float(normal(random));
  for (int64_t k = 0; k < p.numel(); ++k)
    setFloatingElement(p, k, masters[k]); // round to nearest even
  // A master or a remainder is the input right after its parameter.
  optim::AdamRole next = adam.inputs[param + 1].role;
  if (next == optim::AdamRole::Master) {
    HostTensor& master = tensors[positions[param + 1]];
    if (master.byteSize() != 0) // an empty tensor may have no data pointer
      std::memcpy(master.data(), masters.data(), master.byteSize());
  }
  if (next == optim::AdamRole::Remainder)
    for (int64_t k = 0; k < p.numel(); ++k) {
      HostTensor& remainder = tensors[positions[param + 1]];
      optim::SplitMaster split = optim::splitMasterValue(masters[k]);
      p.as<uint16_t>()[k] = split.paramBits;
      remainder.as<int16_t>()[k] = split.remainder;
    }
}

} // namespace

AdamState initialAdamState(const optim::AdamFusion& adam, const AdamRunValues& values) {
  AdamState state;
  std::mt19937 random(0);
  std::normal_distribution<double> normal;
  const Fusion& fusion = *adam.fusion;
  std::vector<int> positions = tensorPositions(fusion);
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const Value* input = fusion.inputs()[i];
    if (input->isScalar()) // a group's hyperparameter: the config's value
      state.scalars.push_back(ScalarArgument(adam.inputs[i].value));
    else
      state.tensors.emplace_back(input->dtype(), input->extents());
  }
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const optim::AdamInput& role = adam.inputs[i];
    if (positions[i] < 0 || role.role == optim::AdamRole::Master ||
        role.role == optim::AdamRole::Remainder)
      continue;
    if (role.role == optim::AdamRole::Param) {
      drawMasters(adam, i, state.tensors, positions, random);
      continue;
    }
    HostTensor& tensor = state.tensors[positions[i]];
    if (role.role == optim::AdamRole::RoundingSeed) {
      tensor.as<int64_t>()[0] = optim::roundingSeed(role.index);
      continue;
    }
    if (role.part == optim::StatePart::Codes) // zero codes, as made (torchao's zeros)
      continue;
    for (int64_t k = 0; k < tensor.numel(); ++k) {
      double value = role.role == optim::AdamRole::Grad ? normal(random) : 0.0;
      if (role.role == optim::AdamRole::Lr) // a capturable lr
        value = role.value;
      if (role.role == optim::AdamRole::GradScale)
        value = values.gradScale;
      setFloatingElement(tensor, k, value);
    }
  }
  return state;
}

std::optional<double> adamScalarOf(const optim::AdamFusion& adam, const AdamState& state,
                                   optim::AdamRole role) {
  std::vector<int> positions = tensorPositions(*adam.fusion);
  for (size_t i = 0; i < adam.inputs.size(); ++i)
    if (adam.inputs[i].role == role && positions[i] >= 0)
      return floatingElement(state.tensors[positions[i]], 0);
  return std::nullopt;
}

StateComparison compareStates(const AdamState& actual, const AdamState& expected) {
  StateComparison result;
  for (size_t t = 0; t < actual.tensors.size(); ++t) {
    const HostTensor& a = actual.tensors[t];
    const HostTensor& b = expected.tensors[t];
    size_t size = byteSize(a.dtype());
    for (int64_t i = 0; i < a.numel(); ++i) {
      ++result.elements;
      auto* left = static_cast<const unsigned char*>(a.data()) + i * size;
      auto* right = static_cast<const unsigned char*>(b.data()) + i * size;
      if (std::memcmp(left, right, size) == 0)
        continue;
      ++result.different;
      double x = floatingElement(a, i), y = floatingElement(b, i);
      result.maxAbsolute = std::max(result.maxAbsolute, std::fabs(x - y));
      if (y != 0)
        result.maxRelative = std::max(result.maxRelative, std::fabs(x - y) / std::fabs(y));
    }
  }
  return result;
}

namespace {

/// The f32 masters a bf16 parameter and its remainder hold (bits of a floating tensor: an f64
/// tensor of the oracle holds bf16 values exactly).
std::vector<float> rebuiltMasters(const HostTensor& param, const HostTensor& remainder) {
  std::vector<float> masters(param.numel());
  for (int64_t k = 0; k < param.numel(); ++k) {
    uint16_t bits = param.dtype() == DataType::BFloat16 ? param.as<uint16_t>()[k]
                                                        : toBFloat16Bits(param.as<double>()[k]);
    masters[k] = optim::reconstructMasterValue(bits, remainder.as<int16_t>()[k]);
  }
  return masters;
}

} // namespace

double maxErrorAgainstOracle(const optim::AdamFusion& adam, const AdamState& state,
                             const EvaluationResult& oracle) {
  const Fusion& fusion = *adam.fusion;
  std::vector<int> positions = tensorPositions(fusion);
  auto inputIndex = [&](const Value* value) {
    return size_t(llvm::find(fusion.inputs(), value) - fusion.inputs().begin());
  };
  // The oracle's final value of each input that a copy_ writes.
  std::vector<const HostTensor*> finalValue(fusion.inputs().size(), nullptr);
  for (size_t k = 0; k < fusion.aliases().size(); ++k)
    finalValue[inputIndex(fusion.aliases()[k].destination)] = &oracle.aliasFinalValues[k];
  double worst = 0;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const HostTensor* exact = finalValue[i];
    // A quantized moment's codes: its error is the value's, seen in the next step.
    if (!exact || adam.inputs[i].part == optim::StatePart::Codes)
      continue;
    const HostTensor& value = state.tensors[positions[i]];
    if (isFloatingPoint(value.dtype()))
      for (int64_t k = 0; k < value.numel(); ++k)
        worst = std::max(worst, std::fabs(floatingElement(value, k) - exact->as<double>()[k]));
    if (adam.inputs[i].role != optim::AdamRole::Remainder)
      continue;
    // The remainder's error is its master's: rebuilt from ours and from the oracle's halves.
    std::vector<float> ours = rebuiltMasters(state.tensors[positions[i - 1]], value);
    std::vector<float> theirs = rebuiltMasters(*finalValue[i - 1], *exact);
    for (size_t k = 0; k < ours.size(); ++k)
      worst = std::max(worst, std::fabs(double(ours[k]) - double(theirs[k])));
  }
  return worst;
}

void exportAdamState(const std::string& directory, const optim::AdamFusion& adam,
                     const AdamState& state, llvm::StringRef prefix, nlohmann::json& manifest) {
  size_t t = 0;
  for (const Value* input : adam.fusion->inputs()) {
    if (!input->isTensor())
      continue;
    std::string file = fmt::format("{}_{}.npy", prefix.str(), input->name());
    writeNpy(directory + "/" + file, state.tensors[t++]);
    manifest["files"].push_back({{"file", file}, {"tensor", input->name()}, {"state", prefix}});
  }
  const Fusion& fusion = *adam.fusion;
  std::vector<int> positions = tensorPositions(fusion);
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    if (adam.inputs[i].role != optim::AdamRole::Remainder)
      continue;
    const HostTensor& param = state.tensors[positions[i - 1]];
    HostTensor master(DataType::Float, param.shape());
    std::vector<float> values = rebuiltMasters(param, state.tensors[positions[i]]);
    if (master.byteSize() != 0) // an empty tensor may have no data pointer
      std::memcpy(master.data(), values.data(), master.byteSize());
    std::string name = fmt::format("master{}", adam.inputs[i].index);
    std::string file = fmt::format("{}_{}.npy", prefix.str(), name);
    writeNpy(directory + "/" + file, master);
    manifest["files"].push_back(
        {{"file", file},
         {"tensor", name},
         {"state", prefix},
         {"derived", fmt::format("rebuilt from {} and {}", fusion.inputs()[i - 1]->name(),
                                 fusion.inputs()[i]->name())}});
  }
}

nlohmann::json adamTensorManifest(const optim::AdamFusion& adam) {
  nlohmann::json tensors = nlohmann::json::array();
  for (size_t i = 0; i < adam.fusion->inputs().size(); ++i) {
    const Value* input = adam.fusion->inputs()[i];
    tensors.push_back({{"name", input->name()},
                       {"role", optim::adamStateKey(adam.inputs[i])},
                       {"group", adam.inputs[i].group},
                       {"dtype", shortName(input->dtype()).str()},
                       {"shape", input->extents().vec()},
                       {"kind", input->isTensor() ? "tensor" : "scalar"}});
  }
  return tensors;
}

} // namespace widefuse
