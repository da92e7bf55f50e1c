// The master weights of buildAdam's mixed precision, on the host backend:
// - Remainders are lossless: after 10 steps the master rebuilt from (parameter, remainder)
//   equals the fp32 run's master bit for bit, and both equal an f32-parameter run's params;
//   the bf16 parameter is the master rounded to nearest with ties away from zero (checked by
//   value, not by bits), the fp32 run's parameter the master rounded to nearest even.
// - The kernel's rebuild and split agree with an independent implementation of TE's rule for
//   every 16-bit remainder under edge-value parameters (±0, subnormals, the largest finite
//   values, ±inf, NaNs).
// - bf16 state: one step from the same state differs from f32 state by at most the bound in
//   docs/user_guide.md §1.3 (m 2^-8, v 2^-7 relative, the weight 2.5% of its step).

#include "tests/tools/workloads/mixed_precision_support.h"

#include <gtest/gtest.h>

#include <memory>

using namespace widefuse;
using namespace widefuse::optim;
using namespace widefuse::optim::testing;

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
