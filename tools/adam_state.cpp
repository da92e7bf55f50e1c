#include "tools/adam_state.h"

#include "tools/npy_file.h"

#include "ir/error.h"
#include "ir/half_float.h"

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

AdamState initialAdamState(const optim::AdamFusion& adam) {
  AdamState state;
  std::mt19937 random(0);
  std::normal_distribution<double> normal;
  const Fusion& fusion = *adam.fusion;
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const Value* input = fusion.inputs()[i];
    const optim::AdamInput& role = adam.inputs[i];
    if (input->isScalar()) { // a runtime lr
      state.scalars.push_back(ScalarArgument(groupLearningRate(role.group)));
      continue;
    }
    HostTensor tensor(input->dtype(), input->extents());
    bool random01 = role.role == optim::AdamRole::Param || role.role == optim::AdamRole::Grad;
    for (int64_t k = 0; k < tensor.numel(); ++k) {
      double value = random01 ? normal(random) : 0.0;
      if (role.role == optim::AdamRole::Lr)
        value = groupLearningRate(role.group);
      if (role.role == optim::AdamRole::GradScale)
        value = 1.0;
      setFloatingElement(tensor, k, value);
    }
    state.tensors.push_back(std::move(tensor));
  }
  return state;
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

double maxErrorAgainstOracle(const Fusion& fusion, const AdamState& state,
                             const EvaluationResult& oracle) {
  std::vector<size_t> tensorIndex(fusion.inputs().size(), 0);
  size_t next = 0;
  for (size_t i = 0; i < fusion.inputs().size(); ++i)
    if (fusion.inputs()[i]->isTensor())
      tensorIndex[i] = next++;
  double worst = 0;
  for (size_t k = 0; k < fusion.aliases().size(); ++k) {
    size_t input = size_t(llvm::find(fusion.inputs(), fusion.aliases()[k].destination) -
                          fusion.inputs().begin());
    const HostTensor& value = state.tensors[tensorIndex[input]];
    const HostTensor& exact = oracle.aliasFinalValues[k];
    for (int64_t i = 0; i < value.numel(); ++i)
      worst = std::max(worst, std::fabs(floatingElement(value, i) - exact.as<double>()[i]));
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
}

nlohmann::json adamTensorManifest(const optim::AdamFusion& adam) {
  nlohmann::json tensors = nlohmann::json::array();
  for (size_t i = 0; i < adam.fusion->inputs().size(); ++i) {
    const Value* input = adam.fusion->inputs()[i];
    tensors.push_back({{"name", input->name()},
                       {"role", optim::adamRoleName(adam.inputs[i].role).str()},
                       {"group", adam.inputs[i].group},
                       {"dtype", shortName(input->dtype()).str()},
                       {"shape", input->extents().vec()},
                       {"kind", input->isTensor() ? "tensor" : "scalar"}});
  }
  return tensors;
}

} // namespace widefuse
