// Mixed precision in buildAdam: bf16/f16/f32 parameters, f32 grads, f32/bf16 state, and the
// three master-weight policies (none, fp32 master tensors, TransformerEngine's int16
// remainders), run on the host backend in reverse and shuffled block order.
//
// - Every valid dtype configuration (Adam and AdamW, amsgrad, weight decay, two param groups,
//   grad_scale, a step skipped by found_inf) is one batched kernel whose results equal the
//   reference evaluator's bit for bit.
// - Remainders are lossless: after 10 steps the master rebuilt from (parameter, remainder)
//   equals the fp32 run's master bit for bit, and both equal an f32-parameter run's params;
//   the bf16 parameter is the master rounded to nearest with ties away from zero (checked by
//   value, not by bits), the fp32 run's parameter the master rounded to nearest even.
// - The kernel's rebuild and split agree with an independent implementation of TE's rule for
//   every 16-bit remainder under edge-value parameters (±0, subnormals, the largest finite
//   values, ±inf, NaNs).
// - bf16 state: one step from the same state differs from f32 state by at most the bound in
//   docs/user_guide.md (m 2^-8, v 2^-7 relative, the weight 2.5% of its step).
// - Bad dtypes and bad tensors give Errors naming the value, with nothing written.

#include "optim/adam.h"

#include "ir/evaluator.h"
#include "ir/half_float.h"
#include "runtime/fusion_executor.h"

#include <gtest/gtest.h>
#include <llvm/ADT/STLExtras.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

using namespace widefuse;
using namespace widefuse::optim;

namespace {

// ---- TE's rule, written here independently of optim/param_remainders ----------------------

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// (bf16 bits, remainder bits) of a master: the high half rounded up in magnitude when the
/// low half is at least half of it.
std::pair<uint16_t, uint16_t> teSplit(float master) {
  uint32_t bits = bitsOf(master);
  uint32_t low = bits & 0xFFFFu;
  uint32_t high = (bits >> 16) + (low >= 0x8000u ? 1u : 0u);
  return {uint16_t(high & 0xFFFFu), uint16_t(low)};
}

float teReconstruct(uint16_t param, uint16_t remainder) {
  uint32_t high = param;
  if (remainder & 0x8000u) // a negative int16: the high half had been rounded up
    high = (high + 0xFFFFu) & 0xFFFFu;
  return floatOf(high << 16 | remainder);
}

/// The bf16 value nearest to a finite master, ties away from zero, chosen by comparing
/// distances (not bits): truncation toward zero and the next value away from zero.
double nearestTiesAway(float master) {
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

std::string dtypesName(const Dtypes& d) {
  auto name = [](std::optional<DataType> t) { return t ? shortName(*t).str() : "default"; };
  return shortName(d.param).str() + "_grad_" + name(d.grad) + "_state_" + name(d.state) +
         "_master_" + masterWeightsName(d.master).str();
}

/// Every valid combination of parameter, grad and state dtype and master-weight policy.
std::vector<Dtypes> everyDtypeConfiguration() {
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
AdamConfig mixedConfig(const Dtypes& d, WeightDecayKind decay, double weightDecay = 0.01) {
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
        list.push_back(ScalarArgument(lrs[adam.inputs[k].group]));
      else
        list.push_back(tensors[k].ref());
    }
    return list;
  }
};

std::vector<size_t> positionsOf(const AdamFusion& adam, AdamRole role) {
  std::vector<size_t> positions;
  for (size_t k = 0; k < adam.inputs.size(); ++k)
    if (adam.inputs[k].role == role)
      positions.push_back(k);
  return positions;
}

/// f32 masters drawn per parameter in order (the same draws for every policy), held as the
/// parameter rounded to nearest even (none), the master and that rounding (fp32), or TE's
/// split (remainders); zero moments and steps.
State initialState(const AdamConfig& config, const AdamFusion& adam, std::mt19937& random) {
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
    if (adam.inputs[k].role == AdamRole::Master)
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
  }
  return state;
}

/// New gradients in every state (the same values), scaled; with `overflow` some are inf/NaN.
void setGradients(const AdamFusion& adam, llvm::ArrayRef<State*> states, std::mt19937& random,
                  double scale, bool overflow) {
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

int64_t bitDifferences(const HostTensor& a, const HostTensor& b) {
  size_t size = byteSize(a.dtype());
  int64_t differences = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    differences += std::memcmp(static_cast<const char*>(a.data()) + i * size,
                               static_cast<const char*>(b.data()) + i * size, size) != 0;
  return differences;
}

ExecutorOptions hostOptions(BlockOrder order) {
  ExecutorOptions options;
  options.backend = Backend::Host;
  options.mode = SegmentationMode::Batched;
  options.blockOrder = order;
  return options;
}

void setScalarTensor(const AdamFusion& adam, State& state, AdamRole role, double value) {
  for (size_t k : positionsOf(adam, role))
    setFloatingElement(state.tensors[k], 0, value);
}

// ---- every configuration against the evaluator ---------------------------------------------

using Case = std::tuple<Dtypes, WeightDecayKind>;

class MixedPrecision : public ::testing::TestWithParam<Case> {};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  auto [dtypes, decay] = info.param;
  return std::string(decay == WeightDecayKind::L2 ? "Adam_" : "AdamW_") + dtypesName(dtypes);
}

} // namespace

TEST_P(MixedPrecision, HostBackendMatchesEvaluatorBitwiseInReverseAndShuffledOrder) {
  auto [dtypes, decay] = GetParam();
  AdamConfig config = mixedConfig(dtypes, decay);
  config.amsgrad = true;
  config.gradScale = config.foundInf = true;
  AdamFusion adam = buildAdam(config);
  for (BlockOrder order :
       {BlockOrder{BlockOrder::Kind::Reverse}, BlockOrder{BlockOrder::Kind::Shuffle, 7}}) {
    SCOPED_TRACE(formatBlockOrder(order));
    std::mt19937 random(11);
    State host = initialState(config, adam, random);
    State reference = host;
    FusionExecutorCache executor(*adam.fusion, hostOptions(order));
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      bool skip = step == 1;
      setGradients(adam, {&host, &reference}, random, 8.0, skip);
      for (State* state : {&host, &reference}) {
        setScalarTensor(adam, *state, AdamRole::GradScale, 8.0);
        setScalarTensor(adam, *state, AdamRole::FoundInf, skip ? 1.0 : 0.0);
      }
      State before = host;
      executor.run(host.arguments(adam));
      evaluate(*adam.fusion, reference.arguments(adam));
      for (size_t k = 0; k < adam.inputs.size(); ++k) {
        if (adam.fusion->inputs()[k]->isScalar())
          continue;
        const std::string& name = adam.fusion->inputs()[k]->name();
        EXPECT_EQ(bitDifferences(host.tensors[k], reference.tensors[k]), 0)
            << name << ": host backend vs reference evaluator";
        if (skip)
          EXPECT_EQ(bitDifferences(host.tensors[k], before.tensors[k]), 0)
              << name << " changed in a step skipped by found_inf";
        else if (adam.inputs[k].role == AdamRole::ExpAvg && host.tensors[k].numel() > 0)
          EXPECT_GT(bitDifferences(host.tensors[k], before.tensors[k]), 0) << name;
      }
    }
    // One kernel for every parameter of both groups, whatever the dtypes.
    EXPECT_EQ(executor.lastCompiled()->numLaunches(), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, MixedPrecision,
                         ::testing::Combine(::testing::ValuesIn(everyDtypeConfiguration()),
                                            ::testing::Values(WeightDecayKind::L2,
                                                              WeightDecayKind::Decoupled)),
                         caseName);

// ---- remainders are lossless ----------------------------------------------------------------

namespace {

/// Runs `steps` steps of each config from the same masters and grads on the host backend.
std::vector<State> runSideBySide(llvm::ArrayRef<AdamConfig> configs,
                                 llvm::ArrayRef<AdamFusion*> fusions, int steps) {
  std::vector<State> states;
  std::vector<std::unique_ptr<FusionExecutorCache>> executors;
  for (size_t c = 0; c < configs.size(); ++c) {
    std::mt19937 random(5);
    states.push_back(initialState(configs[c], *fusions[c], random));
    executors.push_back(std::make_unique<FusionExecutorCache>(
        *fusions[c]->fusion, hostOptions({BlockOrder::Kind::Shuffle, 3})));
  }
  std::mt19937 random(6);
  for (int step = 0; step < steps; ++step) {
    // Grads drawn once, as bf16 values: the same for every run whatever its grad dtype.
    setGradients(*fusions[0], {&states[0]}, random, 1.0, false);
    std::vector<size_t> grads = positionsOf(*fusions[0], AdamRole::Grad);
    for (size_t c = 0; c < configs.size(); ++c) {
      std::vector<size_t> own = positionsOf(*fusions[c], AdamRole::Grad);
      for (size_t j = 0; j < own.size() && c > 0; ++j) {
        const HostTensor& from = states[0].tensors[grads[j]];
        HostTensor& to = states[c].tensors[own[j]];
        for (int64_t i = 0; i < to.numel(); ++i)
          setFloatingElement(to, i, floatingElement(from, i));
      }
      executors[c]->run(states[c].arguments(*fusions[c]));
    }
  }
  return states;
}

} // namespace

TEST(MixedPrecisionMasters, RemaindersKeepTheFp32MastersBitForBit) {
  for (std::optional<DataType> state :
       {std::optional{DataType::Float}, std::optional{DataType::BFloat16}}) {
    SCOPED_TRACE(shortName(*state).str() + " state");
    AdamConfig remainders = mixedConfig({DataType::BFloat16, {}, state, MasterWeights::Remainders},
                                        WeightDecayKind::Decoupled);
    remainders.amsgrad = true;
    AdamConfig fp32 = remainders;
    fp32.masterWeights = MasterWeights::Fp32;
    // The fp32 master's arithmetic is f32 Adam's: an f32-parameter run with the same grads.
    AdamConfig f32 = remainders;
    f32.dtype = DataType::Float;
    f32.masterWeights = MasterWeights::None;
    AdamFusion a = buildAdam(remainders), b = buildAdam(fp32), c = buildAdam(f32);
    std::vector<State> runs = runSideBySide({remainders, fp32, f32}, {&a, &b, &c}, 10);

    std::vector<size_t> params = positionsOf(a, AdamRole::Param);
    std::vector<size_t> rems = positionsOf(a, AdamRole::Remainder);
    std::vector<size_t> masters = positionsOf(b, AdamRole::Master);
    std::vector<size_t> fp32Params = positionsOf(b, AdamRole::Param);
    std::vector<size_t> f32Params = positionsOf(c, AdamRole::Param);
    int64_t elements = 0;
    for (size_t j = 0; j < params.size(); ++j) {
      const HostTensor& param = runs[0].tensors[params[j]];
      const HostTensor& rem = runs[0].tensors[rems[j]];
      const HostTensor& master = runs[1].tensors[masters[j]];
      const std::string name = a.fusion->inputs()[params[j]]->name();
      EXPECT_EQ(bitDifferences(master, runs[2].tensors[f32Params[j]]), 0)
          << name << ": fp32 master vs f32 parameters";
      for (int64_t i = 0; i < param.numel(); ++i, ++elements) {
        float expected = master.as<float>()[i];
        float rebuilt = teReconstruct(param.as<uint16_t>()[i], rem.as<uint16_t>()[i]);
        ASSERT_EQ(bitsOf(rebuilt), bitsOf(expected)) << name << " element " << i;
        EXPECT_EQ(floatingElement(param, i), nearestTiesAway(expected)) << name << " " << i;
        // The fp32 run's parameter: its master rounded to nearest even.
        EXPECT_EQ(runs[1].tensors[fp32Params[j]].as<uint16_t>()[i], toBFloat16Bits(expected))
            << name << " " << i;
      }
    }
    EXPECT_GT(elements, 500);
    // Moments and steps are the same computation in all three runs.
    for (AdamRole role :
         {AdamRole::ExpAvg, AdamRole::ExpAvgSq, AdamRole::MaxExpAvgSq, AdamRole::Step}) {
      std::vector<size_t> x = positionsOf(a, role), y = positionsOf(b, role),
                          z = positionsOf(c, role);
      for (size_t j = 0; j < x.size(); ++j) {
        EXPECT_EQ(bitDifferences(runs[0].tensors[x[j]], runs[1].tensors[y[j]]), 0);
        EXPECT_EQ(bitDifferences(runs[0].tensors[x[j]], runs[2].tensors[z[j]]), 0);
      }
    }
  }
}

TEST(MixedPrecisionMasters, EveryRemainderPatternAndEdgeValueFollowsTheRule) {
  // Parameters at the edges, each with all 2^16 remainders: rebuilt masters cover ±0, the
  // subnormals, the largest finite values, ±inf and NaNs (quiet and signalling, both signs).
  const std::vector<uint16_t> edges = {0x0000, 0x8000, 0x0001, 0x007F, 0x8001, 0x0080,
                                       0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
                                       0x7F81, 0x7FC0, 0xFFC0, 0x7FFF, 0xFFFF};
  const int64_t count = int64_t(edges.size()) << 16;
  for (double lr : {0.0, 1e-2}) {
    SCOPED_TRACE("lr " + std::to_string(lr));
    AdamConfig remainders;
    remainders.groups.push_back({{{count}}, {lr, 0.9, 0.999, 1e-8, 0}});
    remainders.dtype = DataType::BFloat16;
    remainders.masterWeights = MasterWeights::Remainders;
    AdamConfig fp32 = remainders;
    fp32.masterWeights = MasterWeights::Fp32;
    AdamFusion a = buildAdam(remainders), b = buildAdam(fp32);
    std::mt19937 random(1);
    State ours = initialState(remainders, a, random), theirs = initialState(fp32, b, random);
    // Inputs: p0, remainder0 | master0, g0, m0, v0, step0.
    for (int64_t i = 0; i < count; ++i) {
      uint16_t param = edges[size_t(i >> 16)], rem = uint16_t(i & 0xFFFF);
      ours.tensors[0].as<uint16_t>()[i] = param;
      ours.tensors[1].as<uint16_t>()[i] = rem;
      theirs.tensors[1].as<float>()[i] = teReconstruct(param, rem);
      // A small gradient (zero when lr is 0: the step is then the identity on numbers).
      setFloatingElement(ours.tensors[2], i, lr == 0 ? 0.0 : 0.5 - double(i % 7) / 6);
    }
    theirs.tensors[2] = ours.tensors[2];
    State reference = ours;
    FusionExecutorCache(*a.fusion, hostOptions({BlockOrder::Kind::Reverse})).run(ours.arguments(a));
    FusionExecutorCache(*b.fusion, hostOptions({BlockOrder::Kind::Reverse}))
        .run(theirs.arguments(b));
    evaluate(*a.fusion, reference.arguments(a));
    EXPECT_EQ(bitDifferences(ours.tensors[0], reference.tensors[0]), 0);
    EXPECT_EQ(bitDifferences(ours.tensors[1], reference.tensors[1]), 0);
    int64_t unchanged = 0;
    for (int64_t i = 0; i < count; ++i) {
      // The fp32 run did the arithmetic on the master the rule rebuilds; the remainder run
      // must hold exactly its split.
      float master = theirs.tensors[1].as<float>()[i];
      auto [high, low] = teSplit(master);
      uint16_t param = ours.tensors[0].as<uint16_t>()[i], rem = ours.tensors[1].as<uint16_t>()[i];
      ASSERT_EQ(param, high) << "element " << i << " master " << std::hex << bitsOf(master);
      ASSERT_EQ(rem, low) << "element " << i;
      ASSERT_EQ(bitsOf(teReconstruct(param, rem)), bitsOf(master));
      unchanged += param == edges[size_t(i >> 16)] && rem == uint16_t(i & 0xFFFF);
    }
    if (lr == 0) {
      // Numbers (not NaN) go through a zero step unchanged: split(rebuild(p, r)) is (p, r).
      int64_t nans = 0;
      for (int64_t i = 0; i < count; ++i)
        nans += std::isnan(teReconstruct(edges[size_t(i >> 16)], uint16_t(i & 0xFFFF)));
      EXPECT_GE(unchanged, count - nans);
    }
  }
}

// ---- bf16 state: the bound against f32 state ------------------------------------------------

TEST(MixedPrecisionState, OneStepWithBf16StateStaysWithinTheBoundOfF32State) {
  // From the same entry state (bf16 values, widened exactly for the f32 run) one step rounds
  // m' once (2^-8 relative) and v' twice (mul_ and addcmul_: (1 + 2^-8)^2 - 1); the
  // denominator carries v's error halved by the sqrt and four roundings of its own (sqrt,
  // / bc2, + eps, and eps itself rounded to bf16, at most 2^-8 of the denominator), so the
  // step m' / denom differs from the f32 state's by at most
  // (1 + 2^-8) / (1 - ((1 + 2^-8)^5 - 1)) - 1 < 0.025 of it, plus the f32 rounding of the
  // weight (one ulp of each result).
  const double u = std::ldexp(1.0, -8);
  const double stepBound = (1 + u) / (1 - (std::pow(1 + u, 5) - 1)) - 1;
  ASSERT_LT(stepBound, 0.025);
  AdamConfig bf16 = mixedConfig({DataType::BFloat16, {}, DataType::BFloat16, MasterWeights::Fp32},
                                WeightDecayKind::Decoupled, 0.0);
  bf16.amsgrad = true;
  AdamConfig f32 = bf16;
  f32.stateDtype = DataType::Float;
  AdamFusion a = buildAdam(bf16), b = buildAdam(f32);
  std::mt19937 random(3), other(3);
  State ours = initialState(bf16, a, random), theirs = initialState(f32, b, other);
  FusionExecutorCache ourExecutor(*a.fusion, hostOptions({})),
      theirExecutor(*b.fusion, hostOptions({BlockOrder::Kind::Reverse}));
  double worstStep = 0, worstM = 0, worstV = 0;
  // f32 rounding in the f32 ops both runs share, relative.
  const double slack = 8 * std::ldexp(1.0, -24);
  for (int step = 0; step < 6; ++step) {
    for (size_t k = 0; k < a.inputs.size(); ++k) { // the f32 run enters with our state
      if (a.fusion->inputs()[k]->isScalar())
        continue;
      HostTensor& to = theirs.tensors[k];
      if (to.dtype() != ours.tensors[k].dtype())
        for (int64_t i = 0; i < to.numel(); ++i)
          setFloatingElement(to, i, floatingElement(ours.tensors[k], i));
      else
        to = ours.tensors[k];
    }
    State entry = theirs;
    setGradients(a, {&ours, &theirs}, random, 1.0, false);
    ourExecutor.run(ours.arguments(a));
    theirExecutor.run(theirs.arguments(b));
    for (size_t k = 0; k < a.inputs.size(); ++k) {
      AdamRole role = a.inputs[k].role;
      const HostTensor &x = ours.tensors[k], &y = theirs.tensors[k];
      for (int64_t i = 0; i < (a.fusion->inputs()[k]->isScalar() ? 0 : x.numel()); ++i) {
        double mine = role == AdamRole::Param ? 0 : floatingElement(x, i);
        double exact = role == AdamRole::Param ? 0 : floatingElement(y, i);
        double relative = exact == 0 ? std::fabs(mine) : std::fabs(mine - exact) / std::fabs(exact);
        if (role == AdamRole::ExpAvg) {
          worstM = std::max(worstM, relative);
          ASSERT_LE(relative, u + slack) << "exp_avg element " << i;
        }
        if (role == AdamRole::ExpAvgSq || role == AdamRole::MaxExpAvgSq) {
          worstV = std::max(worstV, relative);
          ASSERT_LE(relative, std::pow(1 + u, 2) - 1 + slack) << "exp_avg_sq element " << i;
        }
        if (role == AdamRole::Master) {
          float before = entry.tensors[k].as<float>()[i];
          double f32Step = std::fabs(exact - before);
          double ulp = std::fabs(std::nextafter(float(exact), INFINITY) - float(exact));
          worstStep = std::max(worstStep, f32Step == 0 ? 0 : std::fabs(mine - exact) / f32Step);
          ASSERT_LE(std::fabs(mine - exact), (stepBound + slack) * f32Step + 2 * ulp)
              << "master element " << i << " step " << step;
        }
      }
    }
  }
  // The bound is not vacuous: the state really is rounded.
  EXPECT_GT(worstM, u / 16);
  EXPECT_GT(worstV, u / 16);
  EXPECT_GT(worstStep, 0.0);
}

// ---- inputs and errors ----------------------------------------------------------------------

TEST(MixedPrecisionInputs, MastersAndRemaindersFollowTheirParameter) {
  AdamConfig config = mixedConfig({DataType::BFloat16, DataType::Float, {}, MasterWeights::Fp32},
                                  WeightDecayKind::L2);
  AdamFusion fp32 = buildAdam(config);
  EXPECT_EQ(fp32.fusion->inputs()[1]->name(), "master0");
  EXPECT_EQ(fp32.fusion->inputs()[1]->dtype(), DataType::Float);
  EXPECT_EQ(fp32.inputs[1].role, AdamRole::Master);
  EXPECT_EQ(adamRoleName(AdamRole::Master), "master_param");
  EXPECT_EQ(fp32.fusion->inputs()[2]->dtype(), DataType::Float); // g0
  EXPECT_EQ(fp32.fusion->inputs()[3]->dtype(), DataType::Float); // m0: f32 with a master
  EXPECT_EQ(adamStateBytesPerElement(config), 12);
  config.masterWeights = MasterWeights::Remainders;
  config.stateDtype = DataType::BFloat16;
  AdamFusion remainders = buildAdam(config);
  EXPECT_EQ(remainders.fusion->inputs()[1]->name(), "remainder0");
  EXPECT_EQ(remainders.fusion->inputs()[1]->dtype(), DataType::Int16);
  EXPECT_EQ(adamRoleName(remainders.inputs[1].role), "param_remainder");
  EXPECT_EQ(remainders.fusion->inputs()[3]->dtype(), DataType::BFloat16);
  EXPECT_EQ(adamStateBytesPerElement(config), 6);
  config.amsgrad = true;
  EXPECT_EQ(adamStateBytesPerElement(config), 8);
  config.masterWeights = MasterWeights::None;
  config.stateDtype.reset();
  EXPECT_EQ(adamStateBytesPerElement(config), 6); // bf16 like the parameter, as torch
}

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

TEST(MixedPrecisionInputs, BadDtypesGiveErrors) {
  auto config = [](DataType param, std::optional<DataType> grad, std::optional<DataType> state,
                   MasterWeights master) {
    return mixedConfig({param, grad, state, master}, WeightDecayKind::L2);
  };
  expectConfigError(config(DataType::Half, {}, {}, MasterWeights::Remainders),
                    "remainder master weights need bf16 parameters (the parameter is the high "
                    "half of the f32 master, the int16 remainder its low half), not f16; use "
                    "fp32 master weights for f16");
  expectConfigError(config(DataType::Float, {}, {}, MasterWeights::Remainders),
                    "need bf16 parameters");
  expectConfigError(config(DataType::Float, {}, {}, MasterWeights::Fp32),
                    "f32 parameters are their own master");
  expectConfigError(config(DataType::BFloat16, DataType::Half, {}, MasterWeights::None),
                    "the grads must have the parameters' dtype (bf16) or f32, not f16");
  expectConfigError(config(DataType::BFloat16, {}, DataType::Int32, MasterWeights::Fp32),
                    "must have a floating-point dtype (f32 or bf16), not i32");
  expectConfigError(config(DataType::BFloat16, {}, DataType::Half, MasterWeights::None),
                    "must be f32, bf16 or the parameters' dtype (bf16), not f16");
  EXPECT_NO_THROW(
      buildAdam(config(DataType::Half, DataType::Float, DataType::BFloat16, MasterWeights::Fp32)));
}

TEST(MixedPrecisionInputs, BadTensorsAreRefusedBeforeAnythingIsWritten) {
  AdamConfig config = mixedConfig({DataType::BFloat16, {}, {}, MasterWeights::Remainders},
                                  WeightDecayKind::Decoupled);
  AdamFusion remainders = buildAdam(config);
  config.masterWeights = MasterWeights::Fp32;
  AdamFusion fp32 = buildAdam(config);
  struct Bad {
    AdamFusion* adam;
    size_t input;
    DataType dtype;
    std::vector<int64_t> shape;
    std::string fragment;
  };
  // Input 7 is the second parameter's remainder / master (shape {1}), input 37 the seventh's
  // (shape {257}).
  std::vector<Bad> cases = {
      {&remainders, 7, DataType::Int32, {1}, "remainder1"},
      {&remainders, 7, DataType::BFloat16, {1}, "remainder1"},
      {&remainders, 37, DataType::Int16, {256}, "remainder6"},
      {&fp32, 7, DataType::Half, {1}, "master1"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.fragment);
    ASSERT_EQ(bad.adam->fusion->inputs()[bad.input]->name(), bad.fragment);
    std::mt19937 random(2);
    State state = initialState(config, *bad.adam, random);
    state.tensors[bad.input] = HostTensor(bad.dtype, bad.shape);
    State before = state;
    FusionExecutorCache executor(*bad.adam->fusion, hostOptions({}));
    try {
      executor.run(state.arguments(*bad.adam));
      ADD_FAILURE() << "no Error";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(bad.fragment), std::string::npos) << error.what();
    }
    for (size_t k = 0; k < state.tensors.size(); ++k)
      if (bad.adam->fusion->inputs()[k]->isTensor())
        EXPECT_EQ(bitDifferences(state.tensors[k], before.tensors[k]), 0) << k;
  }
}
