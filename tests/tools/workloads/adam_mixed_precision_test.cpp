// Mixed precision in buildAdam: bf16/f16/f32 parameters, f32 grads, f32/bf16 state, and the
// three master-weight policies (none, fp32 master tensors, TransformerEngine's int16
// remainders), run on the host backend in reverse and shuffled block order.
//
// - Every valid dtype configuration (Adam and AdamW, amsgrad, weight decay, two param groups,
//   grad_scale, a step skipped by found_inf, a capturable lr with AdamW) is one batched kernel
//   whose results equal the reference evaluator's bit for bit.
// - Masters and remainders are inputs named after their parameter; bad dtypes and bad tensors
//   give Errors naming the value, with nothing written.
// The masters themselves (lossless remainders, TE's rule, bf16 state): adam_master_weights_test.

#include "tests/tools/workloads/mixed_precision_support.h"

#include "ir/error.h"

#include <gtest/gtest.h>

using namespace widefuse;
using namespace widefuse::optim;
using namespace widefuse::optim::testing;

namespace {

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
  config.capturable = decay == WeightDecayKind::Decoupled; // lr as a 0-d tensor
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
        if (skip) {
          EXPECT_EQ(bitDifferences(host.tensors[k], before.tensors[k]), 0)
              << name << " changed in a step skipped by found_inf";
        } else if (adam.inputs[k].role == AdamRole::ExpAvg && host.tensors[k].numel() > 0) {
          EXPECT_GT(bitDifferences(host.tensors[k], before.tensors[k]), 0) << name;
        }
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
  EXPECT_EQ(adamStateBytes(fp32).perElement, 12);
  config.masterWeights = MasterWeights::Remainders;
  config.stateDtype = DataType::BFloat16;
  AdamFusion remainders = buildAdam(config);
  EXPECT_EQ(remainders.fusion->inputs()[1]->name(), "remainder0");
  EXPECT_EQ(remainders.fusion->inputs()[1]->dtype(), DataType::Int16);
  EXPECT_EQ(adamRoleName(remainders.inputs[1].role), "param_remainder");
  EXPECT_EQ(remainders.fusion->inputs()[3]->dtype(), DataType::BFloat16);
  EXPECT_EQ(adamStateBytes(remainders).perElement, 6);
  config.amsgrad = true;
  EXPECT_EQ(adamStateBytes(buildAdam(config)).perElement, 8);
  config.masterWeights = MasterWeights::None;
  config.stateDtype.reset();
  EXPECT_EQ(adamStateBytes(buildAdam(config)).perElement, 6); // bf16 like the parameter
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
    for (size_t k = 0; k < state.tensors.size(); ++k) {
      if (bad.adam->fusion->inputs()[k]->isTensor()) {
        EXPECT_EQ(bitDifferences(state.tensors[k], before.tensors[k]), 0) << k;
      }
    }
  }
}
