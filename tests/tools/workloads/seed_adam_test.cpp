// The seed Adam through the reference evaluator equals a direct element-by-element C++ loop
// of the same formula, in the same order and precision, bit for bit.

#include "tools/workloads/seed_adam.h"

#include "ir/evaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace widefuse;

namespace {

struct ParameterState {
  HostTensor param, grad, expAvg, expAvgSq, step;
};

/// torch's _single_tensor_adam (seed rewrite) for one parameter, written out per element:
/// Python numbers become float at the tensor op that uses them, as PyTorch does.
void referenceAdamStep(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m,
                       std::vector<float>& v, float& step, double lr, double beta1, double beta2,
                       double eps) {
  float step1 = step + 1.0f;
  float bias1 = 1.0f - std::pow(float(beta1), step1);
  float bias2 = 1.0f - std::pow(float(beta2), step1);
  float stepSize = float(lr) / bias1;
  float bias2Sqrt = std::sqrt(bias2);
  for (size_t i = 0; i < p.size(); ++i) {
    float m1 = m[i] * float(beta1) + g[i] * float(1.0 - beta1);
    float v1 = v[i] * float(beta2) + float(1.0 - beta2) * g[i] * g[i];
    float denom = std::sqrt(v1) / bias2Sqrt + float(eps);
    p[i] = p[i] + (-stepSize) * m1 / denom;
    m[i] = m1;
    v[i] = v1;
  }
  step = step1;
}

std::vector<float> values(const HostTensor& t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

} // namespace

TEST(SeedAdam, EvaluatorMatchesDirectLoopBitForBit) {
  std::vector<optim::Shape> shapes = {{16, 16}, {7}, {1}, {2, 3, 5}, {33}};
  auto fusion = optim::buildSeedAdam(shapes);
  ASSERT_EQ(fusion->inputs().size(), shapes.size() * 5 + 4);

  std::mt19937 random(1234);
  std::normal_distribution<float> normal;
  std::vector<ParameterState> state;
  std::vector<std::vector<float>> refP, refG, refM, refV;
  std::vector<float> refStep(shapes.size(), 0.0f);
  for (const auto& shape : shapes) {
    ParameterState s{HostTensor(DataType::Float, shape), HostTensor(DataType::Float, shape),
                     HostTensor(DataType::Float, shape), HostTensor(DataType::Float, shape),
                     HostTensor(DataType::Float, {})};
    for (int64_t i = 0; i < s.param.numel(); ++i) {
      s.param.as<float>()[i] = normal(random);
      s.grad.as<float>()[i] = normal(random);
    }
    refP.push_back(values(s.param));
    refG.push_back(values(s.grad));
    refM.push_back(values(s.expAvg));
    refV.push_back(values(s.expAvgSq));
    state.push_back(std::move(s));
  }
  const double lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;

  for (int iteration = 0; iteration < 3; ++iteration) {
    std::vector<Argument> arguments;
    for (ParameterState& s : state)
      for (HostTensor* t : {&s.param, &s.grad, &s.expAvg, &s.expAvgSq, &s.step})
        arguments.push_back(t->ref());
    for (double scalar : {lr, beta1, beta2, eps})
      arguments.push_back(ScalarArgument(scalar));
    evaluate(*fusion, arguments);
    for (size_t k = 0; k < shapes.size(); ++k)
      referenceAdamStep(refP[k], refG[k], refM[k], refV[k], refStep[k], lr, beta1, beta2, eps);
  }

  for (size_t k = 0; k < shapes.size(); ++k) {
    EXPECT_EQ(state[k].step.as<float>()[0], 3.0f);
    for (auto [tensor, reference] :
         {std::pair{&state[k].param, &refP[k]}, std::pair{&state[k].expAvg, &refM[k]},
          std::pair{&state[k].expAvgSq, &refV[k]}}) {
      ASSERT_EQ(size_t(tensor->numel()), reference->size());
      EXPECT_EQ(std::memcmp(tensor->data(), reference->data(), reference->size() * 4), 0)
          << "parameter " << k << " differs from the direct loop";
    }
    EXPECT_NE(values(state[k].param), values(state[k].grad)); // the step changed something
  }
}
