#include "tools/adam_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

namespace widefuse {

int64_t tensorBytes(const optim::AdamFusion& adam) {
  int64_t bytes = 0;
  for (const Value* input : adam.fusion->inputs())
    if (input->isTensor() && input->rank() != 0)
      bytes += numElements(input->extents()) * byteSize(input->dtype());
  return bytes;
}

int64_t bytesPerStep(const optim::AdamFusion& adam, const optim::AdamConfig& config) {
  bool twoPhases = config.maxGradNorm || config.computeFoundInf;
  int64_t bytes = 0;
  for (size_t i = 0; i < adam.inputs.size(); ++i) {
    const Value* input = adam.fusion->inputs()[i];
    if (!input->isTensor() || input->rank() == 0)
      continue;
    int64_t size = numElements(input->extents()) * byteSize(input->dtype());
    bool grad = adam.inputs[i].role == optim::AdamRole::Grad;
    bytes += grad ? (twoPhases ? 2 * size : size) : 2 * size;
  }
  return bytes;
}

nlohmann::json dtypesJson(const optim::AdamConfig& config, const optim::AdamFusion& adam) {
  optim::AdamStateBytes bytes = optim::adamStateBytes(adam);
  nlohmann::json json = {{"param_dtype", shortName(config.dtype).str()},
                         {"grad_dtype", shortName(optim::adamGradDtype(config)).str()},
                         {"state_dtype", shortName(optim::adamStateDtype(config)).str()},
                         {"master_weights", optim::masterWeightsName(config.masterWeights).str()},
                         {"state_bytes_per_element", bytes.perElement},
                         {"state_bytes", bytes.total}};
  if (config.stateFormat) {
    json["state_format"] = optim::stateFormatName(config.stateFormat->kind).str();
    json["block_size"] = config.stateFormat->blockSize;
  }
  json["stochastic_round"] = config.stochasticRound;
  return json;
}

std::string formatBytes(int64_t bytes) {
  if (bytes < 10'000)
    return fmt::format("{} bytes", bytes);
  const char* units[] = {"kB", "MB", "GB", "TB"};
  double value = double(bytes) / 1e3;
  size_t unit = 0;
  while (value >= 1000 && unit + 1 < std::size(units)) {
    value /= 1000;
    ++unit;
  }
  return fmt::format("{:.3g} {}", value, units[unit]);
}

void printDtypes(const optim::AdamConfig& config, const optim::AdamFusion& adam) {
  optim::AdamStateBytes bytes = optim::adamStateBytes(adam);
  const char* kept = config.masterWeights == optim::MasterWeights::Fp32         ? ", f32 masters"
                     : config.masterWeights == optim::MasterWeights::Remainders ? ", i16 remainders"
                                                                                : "";
  std::string format = config.stateFormat
                           ? fmt::format(", {} in blocks of {}",
                                         optim::stateFormatName(config.stateFormat->kind).str(),
                                         config.stateFormat->blockSize)
                           : std::string();
  fmt::print("  dtypes: params {}, grads {}, state {}{}, master weights {}{}: optimizer state "
             "{:.4g} bytes per parameter element (exp_avg, exp_avg_sq{}{}), {} in all\n",
             shortName(config.dtype).str(), shortName(optim::adamGradDtype(config)).str(),
             shortName(optim::adamStateDtype(config)).str(), format,
             optim::masterWeightsName(config.masterWeights).str(),
             config.stochasticRound ? ", bf16 rounded stochastically" : "", bytes.perElement,
             config.amsgrad ? ", max_exp_avg_sq" : "", kept, formatBytes(bytes.total));
}

AdamStepRecord adamStepRecord(const optim::AdamFusion& adam, const AdamState& state,
                              const std::vector<HostTensor>& outputs) {
  AdamStepRecord record;
  if (adam.gradNormOutput)
    record.gradNorm = outputs.at(*adam.gradNormOutput);
  record.foundInf = adamScalarOf(adam, state, optim::AdamRole::FoundInf);
  return record;
}

int64_t gradNormsDifferent(const std::vector<AdamStepRecord>& actual,
                           const std::vector<AdamStepRecord>& expected) {
  int64_t different = 0;
  for (size_t k = 0; k < actual.size(); ++k) {
    const std::optional<HostTensor>& a = actual[k].gradNorm;
    const std::optional<HostTensor>& b = expected[k].gradNorm;
    if (!a || !b) {
      different += a.has_value() != b.has_value();
      continue;
    }
    different += a->dtype() != b->dtype() || a->byteSize() != b->byteSize() ||
                 std::memcmp(a->data(), b->data(), a->byteSize()) != 0;
  }
  return different;
}

nlohmann::json stepsJson(const std::vector<AdamStepRecord>& steps) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t k = 0; k < steps.size(); ++k) {
    nlohmann::json step = {{"step", k + 1}};
    if (steps[k].gradNorm) {
      double norm = floatingElement(*steps[k].gradNorm, 0);
      step["grad_norm"] = std::isfinite(norm) ? nlohmann::json(norm) : nlohmann::json();
    }
    if (steps[k].foundInf)
      step["found_inf"] = *steps[k].foundInf != 0;
    list.push_back(std::move(step));
  }
  return list;
}

void printSteps(const std::vector<AdamStepRecord>& steps, std::optional<double> maxGradNorm) {
  // Long runs show their last step only.
  size_t first = steps.size() > 10 ? steps.size() - 1 : 0;
  for (size_t k = first; k < steps.size(); ++k) {
    const AdamStepRecord& step = steps[k];
    std::string line;
    if (step.gradNorm) {
      double norm = floatingElement(*step.gradNorm, 0);
      line = fmt::format("grad_norm {:.6g} ({})", norm,
                         !std::isfinite(norm) ? "not finite"
                         : maxGradNorm && norm > *maxGradNorm
                             ? fmt::format("clipped to {:g}", *maxGradNorm)
                             : std::string("not clipped"));
    }
    if (step.foundInf)
      line += fmt::format("{}found_inf {}", line.empty() ? "" : ", ",
                          *step.foundInf != 0 ? "1 (skipped: params and state unchanged)" : "0");
    if (!line.empty())
      fmt::print("  step {}{}: {}\n", k + 1, first > 0 ? " (the last)" : "", line);
  }
}

} // namespace widefuse
