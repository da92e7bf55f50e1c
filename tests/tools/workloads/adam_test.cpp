// torch.optim.Adam / AdamW built by buildAdam, run on the host backend in batched mode: for
// every option combination (Adam/AdamW x amsgrad x maximize x weight decay 0/0.01 x
// capturable x {no AMP, grad_scale, found_inf, both}), 20 parameters in two param groups with
// different hyperparameters (one batched kernel), 5 steps, the host backend equals the
// reference evaluator bit for bit and both match a direct double-precision loop of torch's
// formula within 1e-6 + 1e-5 |expected|. Steps flagged by found_inf (with infinite and NaN
// gradients) leave every tensor bit-identical. Bad configs give Errors like torch's.

#include "tools/workloads/adam.h"

#include "ir/error.h"
#include "ir/evaluator.h"
#include "ir/half_float.h"
#include "runtime/fusion_executor.h"
#include "tests/tools/workloads/mixed_precision_support.h"

#include <gtest/gtest.h>
#include <llvm/ADT/STLExtras.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>

using namespace widefuse;
using namespace widefuse::optim;
using widefuse::optim::testing::positionsOf;

namespace {

// ---- the reference: torch's _single_tensor_adam, in double ------------------------------------

/// One parameter's state in double.
struct ReferenceParameter {
  std::vector<double> param, expAvg, expAvgSq, maxExpAvgSq;
  double step = 0;
};

/// One step of torch's formula for one parameter, straight from torch/optim/adam.py, every
/// value a double. `gradScale` <= 0: none; `skip`: found_inf set, nothing changes.
void referenceAdamStep(ReferenceParameter& r, const std::vector<double>& gradients,
                       const AdamConfig& config, const AdamHyperparameters& hyper, double lr,
                       double gradScale, bool skip) {
  if (skip)
    return;
  r.step += 1;
  const double beta1 = hyper.beta1, beta2 = hyper.beta2, wd = hyper.weightDecay;
  const double biasCorrection1 = 1 - std::pow(beta1, r.step);
  const double biasCorrection2 = 1 - std::pow(beta2, r.step);
  const double stepSize = lr / biasCorrection1;
  const double biasCorrection2Sqrt = std::sqrt(biasCorrection2);
  for (size_t i = 0; i < r.param.size(); ++i) {
    double grad = gradients[i];
    if (gradScale > 0)
      grad /= gradScale;
    if (config.maximize)
      grad = -grad;
    if (wd != 0) {
      if (config.decay == WeightDecayKind::Decoupled)
        r.param[i] *= 1 - lr * wd;
      else
        grad += wd * r.param[i];
    }
    r.expAvg[i] += (1 - beta1) * (grad - r.expAvg[i]);
    r.expAvgSq[i] = r.expAvgSq[i] * beta2 + (1 - beta2) * grad * grad;
    double second = r.expAvgSq[i];
    if (config.amsgrad) {
      r.maxExpAvgSq[i] = std::max(r.maxExpAvgSq[i], r.expAvgSq[i]);
      second = r.maxExpAvgSq[i];
    }
    double denom = std::sqrt(second) / biasCorrection2Sqrt + hyper.eps;
    r.param[i] -= stepSize * r.expAvg[i] / denom;
  }
}

// ---- state of the fusion's inputs ----------------------------------------------------------

std::vector<double> toDoubles(const HostTensor& t) {
  std::vector<double> values(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    values[i] = floatingElement(t, i);
  return values;
}

/// One tensor per fusion input and the lr values (mixed_precision_support.h).
using AdamState = widefuse::optim::testing::State;

std::optional<size_t> positionOf(const AdamFusion& adam, AdamRole role) {
  std::vector<size_t> positions = positionsOf(adam, role);
  if (positions.empty())
    return std::nullopt;
  return positions.front();
}

/// Initial state as torch has it: random params, zero moments, step 0, lr of each group.
AdamState initialState(const AdamConfig& config, const AdamFusion& adam, std::mt19937& random) {
  std::normal_distribution<double> normal;
  AdamState state;
  for (const AdamGroup& group : config.groups)
    state.lrs.push_back(group.hyper.lr);
  for (size_t k = 0; k < adam.inputs.size(); ++k) {
    const Value* input = adam.fusion->inputs()[k];
    if (input->isScalar()) {
      state.tensors.emplace_back();
      continue;
    }
    HostTensor tensor(input->dtype(), input->extents());
    switch (adam.inputs[k].role) {
    case AdamRole::Param:
      for (int64_t i = 0; i < tensor.numel(); ++i)
        setFloatingElement(tensor, i, normal(random));
      break;
    case AdamRole::Lr:
      setFloatingElement(tensor, 0, state.lrs[adam.inputs[k].group]);
      break;
    default: // moments and step start at 0; grads, grad_scale and found_inf are set per step
      break;
    }
    state.tensors.push_back(std::move(tensor));
  }
  return state;
}

/// Elements where a and b differ in bits.
int64_t bitDifferences(const HostTensor& a, const HostTensor& b) {
  size_t size = byteSize(a.dtype());
  int64_t differences = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    differences += std::memcmp(static_cast<const char*>(a.data()) + i * size,
                               static_cast<const char*>(b.data()) + i * size, size) != 0;
  return differences;
}

/// |actual - expected| <= atol + rtol |expected| for every element; reports the first miss.
void expectClose(const HostTensor& actual, const std::vector<double>& expected, double atol,
                 double rtol, const std::string& what) {
  ASSERT_EQ(size_t(actual.numel()), expected.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = floatingElement(actual, int64_t(i)), b = expected[i];
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      ADD_FAILURE() << what << " element " << i << ": " << a << " vs expected " << b;
      return;
    }
  }
}

/// Twenty small parameters of mixed shapes (empty ones included), 10 per group.
std::vector<Shape> parameterShapes(unsigned group) {
  if (group == 0)
    return {{0}, {1}, {3}, {17}, {64, 3}, {5, 5, 2}, {4}, {2, 3}, {7, 1}, {33}};
  return {{1, 1}, {257}, {3, 3, 3}, {8, 8}, {5}, {1, 0}, {2}, {16, 2}, {9}, {31}};
}

/// Two groups with different lr, betas, eps and (nonzero) weight decay.
AdamConfig twoGroupConfig(double weightDecay) {
  AdamConfig config;
  config.groups.push_back({parameterShapes(0), {1e-3, 0.9, 0.999, 1e-8, weightDecay}});
  config.groups.push_back({parameterShapes(1), {5e-3, 0.8, 0.99, 1e-6, 2 * weightDecay}});
  return config;
}

struct StepSchedule {
  /// 0 for none.
  double gradScale = 0;
  /// Steps whose found_inf is 1 (their gradients hold inf and NaN).
  std::vector<int> skipped;
};

/// Tolerances against the double loop.
struct Tolerance {
  double atol = 1e-6, rtol = 1e-5;
};

/// Runs `steps` steps on the host backend (batched) and in the reference evaluator, comparing
/// them bitwise after each step, and at the end with the double loop. Returns the executor's
/// number of launches per run.
size_t runAndCompare(const AdamConfig& config, int steps, const StepSchedule& schedule,
                     Tolerance tolerance = {}) {
  AdamFusion adam = buildAdam(config);
  std::mt19937 random(2024);
  AdamState host = initialState(config, adam, random);
  AdamState reference = host;

  std::vector<size_t> params = positionsOf(adam, AdamRole::Param);
  std::vector<size_t> grads = positionsOf(adam, AdamRole::Grad);
  std::vector<size_t> expAvgs = positionsOf(adam, AdamRole::ExpAvg);
  std::vector<size_t> expAvgSqs = positionsOf(adam, AdamRole::ExpAvgSq);
  std::vector<size_t> maxExpAvgSqs = positionsOf(adam, AdamRole::MaxExpAvgSq);
  std::vector<size_t> stepPositions = positionsOf(adam, AdamRole::Step);
  std::optional<size_t> gradScale = positionOf(adam, AdamRole::GradScale);
  std::optional<size_t> foundInf = positionOf(adam, AdamRole::FoundInf);
  EXPECT_EQ(gradScale.has_value(), config.gradScale);
  EXPECT_EQ(foundInf.has_value(), config.foundInf);

  std::vector<ReferenceParameter> loop;
  for (size_t k : params) {
    ReferenceParameter r;
    r.param = toDoubles(host.tensors[k]);
    r.expAvg.assign(r.param.size(), 0.0);
    r.expAvgSq.assign(r.param.size(), 0.0);
    r.maxExpAvgSq.assign(r.param.size(), 0.0);
    loop.push_back(std::move(r));
  }

  ExecutorOptions options;
  options.backend = "host";
  options.mode = SegmentationMode::Batched;
  FusionExecutorCache executor(*adam.fusion, options);
  std::normal_distribution<double> normal;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    bool skip = foundInf && llvm::is_contained(schedule.skipped, step);
    std::vector<std::vector<double>> gradients;
    for (size_t k : grads) {
      HostTensor& grad = host.tensors[k];
      for (int64_t i = 0; i < grad.numel(); ++i) {
        double value = normal(random) * (gradScale ? schedule.gradScale : 1.0);
        if (skip && i % 3 == 0) // an overflowed backward pass
          value = i % 2 ? NAN : INFINITY;
        setFloatingElement(grad, i, value);
      }
      reference.tensors[k] = grad;
      gradients.push_back(toDoubles(grad));
    }
    for (AdamState* state : {&host, &reference}) {
      if (gradScale)
        setFloatingElement(state->tensors[*gradScale], 0, schedule.gradScale);
      if (foundInf)
        setFloatingElement(state->tensors[*foundInf], 0, skip ? 1.0 : 0.0);
    }
    AdamState before = host;

    executor.run(host.arguments(adam));
    evaluate(*adam.fusion, reference.arguments(adam));
    for (size_t k = 0; k < adam.inputs.size(); ++k) {
      if (adam.fusion->inputs()[k]->isScalar())
        continue;
      const std::string& name = adam.fusion->inputs()[k]->name();
      EXPECT_EQ(bitDifferences(host.tensors[k], reference.tensors[k]), 0)
          << name << ": host backend vs reference evaluator";
      if (skip) {
        EXPECT_EQ(bitDifferences(host.tensors[k], before.tensors[k]), 0)
            << name << " changed in a step skipped by found_inf";
      }
    }

    for (size_t j = 0; j < params.size(); ++j) {
      const AdamInput& input = adam.inputs[params[j]];
      referenceAdamStep(loop[j], gradients[j], config, config.groups[input.group].hyper,
                        config.groups[input.group].hyper.lr, gradScale ? schedule.gradScale : 0,
                        skip);
    }
  }

  for (size_t j = 0; j < params.size(); ++j) {
    std::string name = adam.fusion->inputs()[params[j]]->name();
    const ReferenceParameter& r = loop[j];
    EXPECT_EQ(floatingElement(host.tensors[stepPositions[j]], 0), r.step) << name;
    expectClose(host.tensors[params[j]], r.param, tolerance.atol, tolerance.rtol, name);
    expectClose(host.tensors[expAvgs[j]], r.expAvg, tolerance.atol, tolerance.rtol,
                name + " exp_avg");
    expectClose(host.tensors[expAvgSqs[j]], r.expAvgSq, tolerance.atol, tolerance.rtol,
                name + " exp_avg_sq");
    if (config.amsgrad)
      expectClose(host.tensors[maxExpAvgSqs[j]], r.maxExpAvgSq, tolerance.atol, tolerance.rtol,
                  name + " max_exp_avg_sq");
  }
  return executor.lastCompiled()->numLaunches();
}

// ---- the option matrix --------------------------------------------------------------------

enum class Amp { None, GradScale, FoundInf, Both };

using Options = std::tuple<WeightDecayKind, bool /*amsgrad*/, bool /*maximize*/,
                           double /*weight decay*/, bool /*capturable*/, Amp>;

std::string optionsName(const ::testing::TestParamInfo<Options>& info) {
  auto [decay, amsgrad, maximize, weightDecay, capturable, amp] = info.param;
  const char* ampNames[] = {"NoAmp", "GradScale", "FoundInf", "GradScaleFoundInf"};
  return std::string(decay == WeightDecayKind::L2 ? "Adam" : "AdamW") +
         (amsgrad ? "_Amsgrad" : "") + (maximize ? "_Maximize" : "") +
         (weightDecay != 0 ? "_WeightDecay" : "_NoWeightDecay") +
         (capturable ? "_Capturable" : "") + "_" + ampNames[int(amp)];
}

class AdamOptions : public ::testing::TestWithParam<Options> {};

} // namespace

TEST_P(AdamOptions, HostBackendMatchesEvaluatorBitwiseAndTorchFormula) {
  auto [decay, amsgrad, maximize, weightDecay, capturable, amp] = GetParam();
  AdamConfig config = twoGroupConfig(weightDecay);
  config.decay = decay;
  config.amsgrad = amsgrad;
  config.maximize = maximize;
  config.capturable = capturable;
  config.gradScale = amp == Amp::GradScale || amp == Amp::Both;
  config.foundInf = amp == Amp::FoundInf || amp == Amp::Both;
  StepSchedule schedule{.gradScale = 12.5, .skipped = {1, 3}};
  // Both groups share one signature (their weight decays are both zero or both nonzero).
  EXPECT_EQ(runAndCompare(config, 5, schedule), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, AdamOptions,
    ::testing::Combine(::testing::Values(WeightDecayKind::L2, WeightDecayKind::Decoupled),
                       ::testing::Bool(), ::testing::Bool(), ::testing::Values(0.0, 0.01),
                       ::testing::Bool(),
                       ::testing::Values(Amp::None, Amp::GradScale, Amp::FoundInf, Amp::Both)),
    optionsName);

// ---- fusion shape -------------------------------------------------------------------------

TEST(Adam, InputsAreNamedAndOrderedByRole) {
  AdamConfig config;
  config.groups.push_back({std::vector<Shape>{Shape{2, 3}, Shape{4}}, {}});
  config.groups.push_back({std::vector<Shape>{Shape{5}}, {.lr = 0.1}});
  config.amsgrad = true;
  config.capturable = true;
  config.gradScale = true;
  config.foundInf = true;
  AdamFusion adam = buildAdam(config);
  std::vector<std::string> names;
  for (const Value* input : adam.fusion->inputs())
    names.push_back(input->name());
  std::vector<std::string> expected = {
      "p0",   "g0",  "m0",      "v0",      "vmax0", "step0",      "p1",
      "g1",   "m1",  "v1",      "vmax1",   "step1", "p2",         "g2",
      "m2",   "v2",  "vmax2",   "step2",   "lr0",   "beta1_0",    "beta2_0",
      "eps0", "lr1", "beta1_1", "beta2_1", "eps1",  "grad_scale", "found_inf"};
  EXPECT_EQ(names, expected);
  ASSERT_EQ(adam.inputs.size(), expected.size());
  EXPECT_EQ(adam.inputs[6].role, AdamRole::Param);
  EXPECT_EQ(adam.inputs[6].group, 0u);
  EXPECT_EQ(adam.inputs[6].param, 1u);
  EXPECT_EQ(adam.inputs[6].index, 1u);
  EXPECT_EQ(adam.inputs[16].role, AdamRole::MaxExpAvgSq);
  EXPECT_EQ(adam.inputs[16].group, 1u);
  EXPECT_EQ(adam.inputs[16].param, 0u);
  EXPECT_EQ(adam.inputs[16].index, 2u);
  EXPECT_EQ(adam.inputs[22].role, AdamRole::Lr);
  EXPECT_EQ(adam.inputs[22].group, 1u);
  EXPECT_EQ(adam.inputs[22].value, 0.1);
  // Each group's betas and eps are runtime f64 scalars whose values are the config's.
  for (auto [k, role, group, value] :
       {std::tuple{19, AdamRole::Beta1, 0u, 0.9}, std::tuple{20, AdamRole::Beta2, 0u, 0.999},
        std::tuple{21, AdamRole::Eps, 0u, 1e-8}, std::tuple{24, AdamRole::Beta2, 1u, 0.999}}) {
    EXPECT_EQ(adam.inputs[k].role, role) << k;
    EXPECT_EQ(adam.inputs[k].group, group) << k;
    EXPECT_EQ(adam.inputs[k].value, value) << k;
    EXPECT_TRUE(adam.fusion->inputs()[k]->isScalar()) << k;
    EXPECT_EQ(adam.fusion->inputs()[k]->dtype(), DataType::Double) << k;
  }
  EXPECT_EQ(adamRoleName(adam.inputs[27].role), "found_inf");
  // Capturable: lr is a 0-d f32 tensor; otherwise a runtime f64 scalar.
  EXPECT_TRUE(adam.fusion->inputs()[18]->isTensor());
  EXPECT_EQ(adam.fusion->inputs()[18]->dtype(), DataType::Float);
  config.capturable = false;
  config.amsgrad = false;
  config.gradScale = config.foundInf = false;
  AdamFusion plain = buildAdam(config);
  ASSERT_EQ(plain.fusion->inputs().size(), 3u * 5 + 2 * 4);
  EXPECT_TRUE(plain.fusion->inputs()[15]->isScalar());
  EXPECT_EQ(plain.fusion->inputs()[15]->dtype(), DataType::Double);
  EXPECT_EQ(plain.fusion->inputs()[9]->name(), "step1");
  EXPECT_EQ(plain.fusion->inputs()[9]->rank(), 0u);
  // AdamW's weight decay is a runtime scalar of each group too (Adam's L2 one a constant).
  config.decay = WeightDecayKind::Decoupled;
  AdamFusion adamw = buildAdam(config);
  ASSERT_EQ(adamw.fusion->inputs().size(), 3u * 5 + 2 * 5);
  EXPECT_EQ(adamw.fusion->inputs()[24]->name(), "weight_decay1");
  EXPECT_EQ(adamw.inputs[24].role, AdamRole::WeightDecay);
  EXPECT_EQ(adamRoleName(AdamRole::WeightDecay), "weight_decay");
}

TEST(Adam, GroupsWithDifferentHyperparametersShareOneBatchedKernel) {
  for (WeightDecayKind decay : {WeightDecayKind::L2, WeightDecayKind::Decoupled}) {
    AdamConfig config = twoGroupConfig(0.01);
    config.decay = decay;
    config.groups[1].hyper.weightDecay = 0.1;
    AdamFusion adam = buildAdam(config);
    ExecutorOptions options;
    options.backend = "host";
    options.mode = SegmentationMode::Batched;
    FusionExecutorCache executor(*adam.fusion, options);
    std::mt19937 random(1);
    AdamState state = initialState(config, adam, random);
    executor.run(state.arguments(adam));
    auto compiled = executor.lastCompiled();
    ASSERT_TRUE(compiled);
    EXPECT_EQ(compiled->numLaunches(), 1u);
    ASSERT_EQ(compiled->segmented->phases.size(), 1u);
    const SegmentedPhase& phase = compiled->segmented->phases[0];
    ASSERT_EQ(phase.signatureClasses.size(), 1u);
    // lr, the betas, eps and AdamW's weight decay are each group's runtime scalars; Adam's L2
    // weight decay is a constant of each group's graphs, lifted into the member table.
    EXPECT_EQ(phase.signatureClasses[0].lifted.size(), decay == WeightDecayKind::L2 ? 1u : 0u);
  }
}

TEST(Adam, ZeroAndNonzeroWeightDecayGroupsFormTwoKernels) {
  // torch's Adam skips the L2 decay op when weight_decay == 0, so the groups' graphs differ.
  AdamConfig config = twoGroupConfig(0.01);
  config.groups[1].hyper.weightDecay = 0;
  EXPECT_EQ(runAndCompare(config, 3, {}), 2u);
  // AdamW multiplies by 1 - lr * weight_decay whatever its value (as widefuse.optim's): one.
  config.decay = WeightDecayKind::Decoupled;
  EXPECT_EQ(runAndCompare(config, 3, {}), 1u);
}

TEST(Adam, FoundInfSkipsExactlyAndZeroUpdates) {
  AdamConfig config = twoGroupConfig(0.01);
  config.decay = WeightDecayKind::Decoupled;
  config.amsgrad = true;
  config.foundInf = true;
  StepSchedule schedule{.skipped = {0, 2, 3}};
  EXPECT_EQ(runAndCompare(config, 6, schedule), 1u); // checks the skipped steps bitwise
}

TEST(Adam, OtherDtypesMatchTheEvaluatorBitwise) {
  // Double keeps the float tolerance; half and bfloat16 round every op, so the comparison with
  // the double loop is loose (their exact check is the bitwise one with the evaluator).
  for (auto [dtype, tolerance] :
       {std::pair{DataType::Double, Tolerance{}}, std::pair{DataType::Half, Tolerance{2e-2, 5e-2}},
        std::pair{DataType::BFloat16, Tolerance{5e-2, 1e-1}}}) {
    SCOPED_TRACE(shortName(dtype).str());
    AdamConfig config = twoGroupConfig(0.01);
    config.dtype = dtype;
    // torch's default eps (1e-8) is below half's smallest subnormal: a tiny gradient would
    // give a zero denominator and an infinite step, in torch as here.
    if (dtype != DataType::Double)
      config.groups[0].hyper.eps = config.groups[1].hyper.eps = 1e-3;
    config.decay = WeightDecayKind::Decoupled;
    config.amsgrad = true;
    config.maximize = true;
    config.capturable = true;
    config.gradScale = config.foundInf = true;
    StepSchedule schedule{.gradScale = 4.0, .skipped = {2}};
    EXPECT_EQ(runAndCompare(config, 4, schedule, tolerance), 1u);
  }
}

// ---- validation ---------------------------------------------------------------------------

namespace {

void expectConfigError(const AdamConfig& config, const std::string& fragment) {
  try {
    buildAdam(config);
    ADD_FAILURE() << "no Error for a config that should fail with '" << fragment << "'";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

} // namespace

TEST(Adam, BadConfigsGiveErrors) {
  expectConfigError(AdamConfig{}, "no param groups");
  AdamConfig valid = twoGroupConfig(0.01);
  EXPECT_NO_THROW(buildAdam(valid));

  AdamConfig config = valid;
  config.groups[1].shapes.clear();
  expectConfigError(config, "param group 1 has no parameters");
  config = valid;
  config.groups[0].hyper.lr = -1e-3;
  expectConfigError(config, "param group 0: invalid learning rate: -0.001");
  config = valid;
  config.groups[1].hyper.eps = -1;
  expectConfigError(config, "param group 1: invalid epsilon value");
  config = valid;
  config.groups[0].hyper.beta1 = 1.0;
  expectConfigError(config, "invalid beta parameter at index 0: 1");
  config = valid;
  config.groups[0].hyper.beta2 = -0.1;
  expectConfigError(config, "invalid beta parameter at index 1: -0.1");
  config = valid;
  config.groups[1].hyper.beta2 = NAN;
  expectConfigError(config, "invalid beta parameter at index 1: nan");
  config = valid;
  config.groups[1].hyper.weightDecay = -0.01;
  expectConfigError(config, "param group 1: invalid weight_decay value: -0.01");
  config = valid;
  config.dtype = DataType::Int32;
  expectConfigError(config, "floating-point dtype, not i32");
}
