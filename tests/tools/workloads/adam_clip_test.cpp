// buildAdam with max_grad_norm, norm type 2 or inf, and found_inf computed in the step
// (GradScaler's unscale and inf check): two param groups of small parameters (empty ones
// included) for a few steps on the host backend, bit for bit against the reference evaluator,
// and against a double-precision loop of torch's clip_grad_norm_ + Adam written here. The
// max-norm is exact in f32, so the returned grad norm is checked bit for bit against the
// loop's f32 maximum; the 2-norm within 4e-6 relative of the loop's double norm. A step whose
// unscaled grads hold an inf or a NaN writes found_inf = 1 and changes nothing else; the other
// steps overwrite a stale found_inf with 0. Phases and launches are counted. max_grad_norm is
// a constant of the fusion (as in widefuse.optim): the grads' size decides whether a step clips.

#include "tools/workloads/adam.h"

#include "ir/error.h"
#include "ir/evaluator.h"
#include "ir/op_kind.h"
#include "runtime/fusion_executor.h"
#include "segmenter/segment.h"
#include "tests/tools/workloads/mixed_precision_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>

using namespace widefuse;
using namespace widefuse::optim;
using widefuse::optim::testing::bitDifferences;
using widefuse::optim::testing::positionsOf;

namespace {

/// The parameters of the two groups: mixed shapes with an empty one in each.
AdamConfig clipConfig(double normType, bool computeFoundInf) {
  AdamConfig config;
  config.groups.push_back({{{0}, {3}, {17}, {6, 5}, {2, 2, 2}}, {1e-2, 0.9, 0.999, 1e-8, 0.01}});
  config.groups.push_back({{{33}, {1, 0}, {4, 4}}, {5e-3, 0.8, 0.99, 1e-6, 0.02}});
  config.decay = WeightDecayKind::Decoupled;
  config.maxGradNorm = 0.002;
  config.normType = normType;
  config.gradScale = computeFoundInf;
  config.computeFoundInf = computeFoundInf;
  return config;
}

/// One tensor per fusion input (empty for the groups' hyperparameters, which take their
/// config's values).
struct State {
  std::vector<HostTensor> tensors;

  std::vector<Argument> arguments(const AdamFusion& adam) {
    std::vector<Argument> list;
    for (size_t k = 0; k < adam.inputs.size(); ++k) {
      if (!adam.fusion->inputs()[k]->isScalar())
        list.push_back(tensors[k].ref());
      else
        list.push_back(ScalarArgument(adam.inputs[k].value));
    }
    return list;
  }
};

/// torch's clip_grad_norm_ followed by AdamW for one step, in double, for every parameter:
/// the unscaled grads' total norm, the coefficient min(maxNorm / (total + 1e-6), 1), then
/// torch's AdamW formula with the clipped grads. Returns the total norm.
struct Loop {
  struct Parameter {
    std::vector<double> param, expAvg, expAvgSq;
    double step = 0;
  };
  std::vector<Parameter> parameters;

  double step(const std::vector<std::vector<double>>& grads, const AdamConfig& config,
              const std::vector<unsigned>& groupOf, double gradScale, double maxNorm) {
    double total = 0;
    for (const std::vector<double>& grad : grads)
      for (double g : grad)
        total = config.normType == 2 ? total + (g / gradScale) * (g / gradScale)
                                     : std::max(total, std::fabs(g / gradScale));
    if (config.normType == 2)
      total = std::sqrt(total);
    double coefficient = std::min(maxNorm / (total + 1e-6), 1.0);
    for (size_t j = 0; j < parameters.size(); ++j) {
      Parameter& r = parameters[j];
      const AdamHyperparameters& hyper = config.groups[groupOf[j]].hyper;
      r.step += 1;
      double bc1 = 1 - std::pow(hyper.beta1, r.step), bc2 = 1 - std::pow(hyper.beta2, r.step);
      for (size_t i = 0; i < r.param.size(); ++i) {
        double grad = grads[j][i] / gradScale * coefficient;
        r.param[i] *= 1 - hyper.lr * hyper.weightDecay;
        r.expAvg[i] += (1 - hyper.beta1) * (grad - r.expAvg[i]);
        r.expAvgSq[i] = r.expAvgSq[i] * hyper.beta2 + (1 - hyper.beta2) * grad * grad;
        double denom = std::sqrt(r.expAvgSq[i]) / std::sqrt(bc2) + hyper.eps;
        r.param[i] -= hyper.lr / bc1 * r.expAvg[i] / denom;
      }
    }
    return total;
  }
};

/// How a run went: launches and phases of the executor's last step.
struct RunCounts {
  size_t phases = 0;
  size_t launches = 0;
};

RunCounts countsOf(const FusionExecutorCache& executor) {
  RunCounts counts;
  if (std::shared_ptr<const CompiledFusion> compiled = executor.lastCompiled()) {
    counts.phases = compiled->segmented->phases.size();
    counts.launches = compiled->numLaunches();
  }
  return counts;
}

/// Runs `steps` steps of `config` on the host backend in `mode` and in the evaluator (bit for
/// bit after each step) and in the double loop (at the end). Step `skipped` (computeFoundInf)
/// plants an inf and a NaN in the grads. The first two steps' grads are clipped, the later
/// ones' are a hundred times smaller and not.
RunCounts runAndCompare(const AdamConfig& config, SegmentationMode mode, int steps, int skipped) {
  AdamFusion adam = buildAdam(config);
  std::mt19937 random(7);
  std::normal_distribution<double> normal;
  State host;
  for (size_t k = 0; k < adam.inputs.size(); ++k) {
    const Value* input = adam.fusion->inputs()[k];
    host.tensors.push_back(input->isScalar() ? HostTensor()
                                             : HostTensor(input->dtype(), input->extents()));
    if (adam.inputs[k].role == AdamRole::Param)
      for (int64_t i = 0; i < host.tensors[k].numel(); ++i)
        setFloatingElement(host.tensors[k], i, normal(random));
  }
  std::vector<size_t> params = positionsOf(adam, AdamRole::Param);
  std::vector<size_t> grads = positionsOf(adam, AdamRole::Grad);
  std::vector<size_t> expAvgs = positionsOf(adam, AdamRole::ExpAvg);
  std::vector<size_t> expAvgSqs = positionsOf(adam, AdamRole::ExpAvgSq);
  std::vector<size_t> gradScale = positionsOf(adam, AdamRole::GradScale);
  std::vector<size_t> foundInf = positionsOf(adam, AdamRole::FoundInf);
  Loop loop;
  std::vector<unsigned> groupOf;
  for (size_t k : params) {
    std::vector<double> values(host.tensors[k].numel());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = floatingElement(host.tensors[k], int64_t(i));
    loop.parameters.push_back(
        {values, std::vector<double>(values.size()), std::vector<double>(values.size())});
    groupOf.push_back(adam.inputs[k].group);
  }
  State reference = host;

  ExecutorOptions options;
  options.backend = "host";
  options.mode = mode;
  FusionExecutorCache executor(*adam.fusion, options);
  const double scale = config.gradScale ? 1024.0 : 1.0;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    bool skip = config.computeFoundInf && step == skipped;
    // Clipped at first (the 2-norm is about 0.01, the inf-norm about 0.003, max_grad_norm
    // 0.002), then not (a hundredth of that). Small grads make the 1e-6 of the coefficient
    // show.
    const double size = step < 2 ? 1e-3 : 1e-5;
    std::vector<std::vector<double>> gradients;
    for (size_t k : grads) {
      std::vector<double> values(host.tensors[k].numel());
      for (size_t i = 0; i < values.size(); ++i) {
        values[i] = float(normal(random) * size * scale);
        if (skip && (i == 1 || i == 2)) // an overflowed backward pass
          values[i] = i == 1 ? INFINITY : NAN;
        setFloatingElement(host.tensors[k], int64_t(i), values[i]);
      }
      reference.tensors[k] = host.tensors[k];
      gradients.push_back(values);
    }
    for (State* state : {&host, &reference}) {
      if (!gradScale.empty())
        setFloatingElement(state->tensors[gradScale[0]], 0, scale);
      if (!foundInf.empty()) // a stale flag: the step must overwrite it
        setFloatingElement(state->tensors[foundInf[0]], 0, skip ? 0.0 : 1.0);
    }
    State before = host;
    RunResult result = executor.run(host.arguments(adam));
    EvaluationResult expected = evaluate(*adam.fusion, reference.arguments(adam));
    if (!adam.gradNormOutput) {
      ADD_FAILURE() << "no grad norm output";
      return {};
    }
    const HostTensor& norm = result.outputs.at(*adam.gradNormOutput);
    EXPECT_EQ(bitDifferences(norm, expected.outputs.at(*adam.gradNormOutput)), 0)
        << "grad_norm: host backend vs reference evaluator";
    for (size_t k = 0; k < adam.inputs.size(); ++k) {
      if (adam.fusion->inputs()[k]->isScalar())
        continue;
      const std::string& name = adam.fusion->inputs()[k]->name();
      EXPECT_EQ(bitDifferences(host.tensors[k], reference.tensors[k]), 0) << name;
      if (skip && adam.inputs[k].role != AdamRole::FoundInf) {
        EXPECT_EQ(bitDifferences(host.tensors[k], before.tensors[k]), 0)
            << name << " changed in a step with an inf grad";
      }
    }
    if (!foundInf.empty()) {
      EXPECT_EQ(floatingElement(host.tensors[foundInf[0]], 0), skip ? 1.0 : 0.0);
    }
    if (skip) {
      EXPECT_FALSE(std::isfinite(floatingElement(norm, 0)));
      continue;
    }
    double total = loop.step(gradients, config, groupOf, scale, *config.maxGradNorm);
    EXPECT_EQ(total > *config.maxGradNorm, step < 2) << "clipped: the norm " << total;
    if (config.normType == 2)
      EXPECT_NEAR(floatingElement(norm, 0), total, 4e-6 * total);
    else // the largest |g / scale| is an f32 value: exact
      EXPECT_EQ(floatingElement(norm, 0), double(float(total)));
  }
  for (size_t j = 0; j < params.size(); ++j) {
    const Loop::Parameter& r = loop.parameters[j];
    // f32 rounding: atol 1e-6 of each tensor's magnitude (param ~ 1, exp_avg ~ 1e-4,
    // exp_avg_sq ~ 1e-9), which an element near zero (the late small grads) needs.
    for (auto [position, values, what, atol] :
         {std::tuple{params[j], &r.param, "param", 1e-6},
          std::tuple{expAvgs[j], &r.expAvg, "exp_avg", 1e-10},
          std::tuple{expAvgSqs[j], &r.expAvgSq, "exp_avg_sq", 1e-15}})
      for (size_t i = 0; i < values->size(); ++i) {
        double actual = floatingElement(host.tensors[position], int64_t(i));
        double wanted = (*values)[i];
        if (!(std::fabs(actual - wanted) <= atol + 1e-5 * std::fabs(wanted))) {
          ADD_FAILURE() << what << " of parameter " << j << ", element " << i << ": " << actual
                        << " vs the loop's " << wanted;
          return countsOf(executor); // the first miss only
        }
      }
  }
  return countsOf(executor);
}

using ClipCase = std::tuple<double /*norm type*/, bool /*computeFoundInf*/>;

std::string clipCaseName(const ::testing::TestParamInfo<ClipCase>& info) {
  auto [normType, computeFoundInf] = info.param;
  return std::string(normType == 2 ? "Norm2" : "NormInf") +
         (computeFoundInf ? "_GradScaleFoundInf" : "");
}

class AdamClip : public ::testing::TestWithParam<ClipCase> {};

} // namespace

TEST_P(AdamClip, MatchesTheEvaluatorBitwiseAndTheDoubleLoop) {
  auto [normType, computeFoundInf] = GetParam();
  AdamConfig config = clipConfig(normType, computeFoundInf);
  // Packed mode: one launch per phase for the one signature class of each.
  RunCounts packed = runAndCompare(config, SegmentationMode::Packed, 5, 2);
  EXPECT_EQ(packed.phases, 2u);
  EXPECT_EQ(packed.launches, 2u);
  RunCounts batched = runAndCompare(config, SegmentationMode::Batched, 3, 1);
  EXPECT_EQ(batched.phases, 2u);
  // The inf norm's output is the reduction's own result, and nothing else is 0-d: one class
  // per phase. (The 2-norm's sqrt and a computed found_inf are 0-d programs of their own: a
  // class, and in batched mode a launch, each.)
  if (normType != 2 && !computeFoundInf) {
    EXPECT_EQ(batched.launches, 2u);
  }
  // Auto, the default: batched, with a phase's 0-d programs in the launch of its first class.
  RunCounts automatic = runAndCompare(config, SegmentationMode::Auto, 2, 1);
  EXPECT_EQ(automatic.phases, 2u);
  EXPECT_EQ(automatic.launches, 2u);
}

INSTANTIATE_TEST_SUITE_P(Cases, AdamClip,
                         ::testing::Combine(::testing::Values(2.0, double(INFINITY)),
                                            ::testing::Bool()),
                         clipCaseName);

TEST(AdamClip, FusionShape) {
  AdamConfig config = clipConfig(2, true);
  AdamFusion adam = buildAdam(config);
  const auto& inputs = adam.fusion->inputs();
  ASSERT_GE(inputs.size(), 3u);
  // ..., each group's lr, betas, eps and weight decay, grad_scale, found_inf; max_grad_norm is
  // a constant (widefuse.optim's trace key holds it), not an input.
  EXPECT_EQ(inputs.back()->name(), "found_inf");
  EXPECT_EQ(inputs[inputs.size() - 2]->name(), "grad_scale");
  EXPECT_EQ(inputs[inputs.size() - 3]->name(), "weight_decay1");
  EXPECT_TRUE(inputs[inputs.size() - 3]->isScalar());
  EXPECT_EQ(adam.inputs[inputs.size() - 3].role, AdamRole::WeightDecay);
  EXPECT_EQ(adam.inputs[inputs.size() - 3].value, 0.02);
  for (const Value* input : inputs)
    EXPECT_NE(input->name(), "max_grad_norm");
  ASSERT_EQ(adam.fusion->outputs().size(), 1u);
  EXPECT_EQ(adam.gradNormOutput, 0u);
  EXPECT_EQ(adam.fusion->outputs()[0]->rank(), 0u);
  EXPECT_EQ(segment(*adam.fusion).phases.size(), 2u);

  // A computed found_inf alone: its own input, no output, still two phases.
  config.maxGradNorm.reset();
  config.gradScale = false;
  AdamFusion flagOnly = buildAdam(config);
  EXPECT_EQ(flagOnly.fusion->inputs().back()->name(), "found_inf");
  EXPECT_TRUE(flagOnly.fusion->outputs().empty());
  EXPECT_FALSE(flagOnly.gradNormOutput.has_value());
  EXPECT_EQ(segment(*flagOnly.fusion).phases.size(), 2u);

  // Without either: one phase, as before.
  config.computeFoundInf = false;
  EXPECT_EQ(segment(*buildAdam(config).fusion).phases.size(), 1u);
}

namespace {

/// One batched step of bf16 parameters with f32 masters and bf16 grads (grad_scale 2, found_inf
/// computed) under `normType`, on the host backend and in the evaluator, compared bit for bit.
/// Returns the grad norm, the norm of the unscaled bf16 grads computed here in double, and
/// whether the returned norm is a reduction's own result.
struct Bf16Step {
  double norm = 0, expected = 0;
  bool reductionResult = false;
};

Bf16Step bf16Step(double normType) {
  AdamConfig config = clipConfig(normType, true);
  config.dtype = DataType::BFloat16;
  config.masterWeights = MasterWeights::Fp32;
  config.maxGradNorm = 0.25;
  AdamFusion adam = buildAdam(config);
  EXPECT_EQ(adam.fusion->outputs()[0]->dtype(), DataType::BFloat16);
  std::mt19937 random(3);
  std::normal_distribution<double> normal;
  State host;
  double total = 0;
  for (size_t k = 0; k < adam.inputs.size(); ++k) {
    const Value* input = adam.fusion->inputs()[k];
    host.tensors.push_back(input->isScalar() ? HostTensor()
                                             : HostTensor(input->dtype(), input->extents()));
    HostTensor& tensor = host.tensors.back();
    AdamRole role = adam.inputs[k].role;
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (role == AdamRole::Grad || role == AdamRole::Param || role == AdamRole::Master)
        setFloatingElement(tensor, i, normal(random));
      if (role == AdamRole::GradScale)
        setFloatingElement(tensor, i, 2.0);
      if (role != AdamRole::Grad)
        continue;
      double unscaled = floatingElement(tensor, i) / 2; // exact: a bf16 value halved
      total = normType == 2 ? total + unscaled * unscaled : std::max(total, std::fabs(unscaled));
    }
  }
  State reference = host;
  ExecutorOptions options;
  options.backend = "host";
  options.mode = SegmentationMode::Batched;
  FusionExecutorCache executor(*adam.fusion, options);
  RunResult result = executor.run(host.arguments(adam));
  EvaluationResult expected = evaluate(*adam.fusion, reference.arguments(adam));
  EXPECT_EQ(bitDifferences(result.outputs[0], expected.outputs[0]), 0);
  for (size_t k = 0; k < adam.inputs.size(); ++k) {
    if (!adam.fusion->inputs()[k]->isScalar()) {
      EXPECT_EQ(bitDifferences(host.tensors[k], reference.tensors[k]), 0)
          << adam.fusion->inputs()[k]->name();
    }
  }
  const Expr* definition = adam.fusion->outputs()[0]->definition();
  return {floatingElement(result.outputs[0], 0), normType == 2 ? std::sqrt(total) : total,
          definition && isReduction(definition->op())};
}

} // namespace

TEST(AdamClip, Bf16GradsNormInTheirDtypeAndMatchTheEvaluator) {
  Bf16Step two = bf16Step(2);
  // bf16 keeps 8 bits: the norm is within half an ulp (2^-9 relative) of the f32 one.
  EXPECT_NEAR(two.norm, two.expected, two.expected / 256);
  Bf16Step inf = bf16Step(INFINITY);
  EXPECT_EQ(inf.norm, inf.expected) << "the largest |g / 2| is a bf16 value";
  // As widefuse.optim's vector_norm, both norms are computed in f32 and cast back to bf16
  // (exact for the max): a 0-d cast after the reduction, which batched mode runs as a 0-d
  // program of its own (auto mode puts it in the launch of the phase's first class).
  EXPECT_FALSE(inf.reductionResult) << "max in f32, then the cast to bf16";
  EXPECT_FALSE(two.reductionResult) << "sqrt, then the cast to bf16";
}

TEST(AdamClip, BadClipOptionsGiveErrors) {
  auto message = [](AdamConfig config) -> std::string {
    try {
      buildAdam(config);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  AdamConfig config = clipConfig(2, false);
  for (double bad : {-1.0, double(NAN), double(INFINITY)}) {
    config.maxGradNorm = bad;
    EXPECT_NE(message(config).find("invalid max_grad_norm"), std::string::npos) << bad;
  }
  config.maxGradNorm = 0.0; // clips every grad to zero, as torch's
  EXPECT_EQ(message(config), "(no error)");
  for (double bad : {1.0, 0.0, -double(INFINITY), double(NAN)}) {
    config.normType = bad;
    EXPECT_NE(message(config).find("invalid norm type for max_grad_norm"), std::string::npos)
        << bad;
  }
}
