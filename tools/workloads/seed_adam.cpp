#include "tools/workloads/seed_adam.h"

#include "ir/fusion_definition.h"

#include <fmt/format.h>

namespace widefuse::optim {

std::unique_ptr<Fusion> buildSeedAdam(llvm::ArrayRef<Shape> shapes, DataType dtype) {
  FusionDefinition fd("adam_step");
  struct Parameter {
    Val param, grad, expAvg, expAvgSq, step;
  };
  llvm::SmallVector<Parameter, 8> parameters;
  for (size_t i = 0; i < shapes.size(); ++i)
    parameters.push_back({fd.defineTensor(shapes[i], dtype, fmt::format("p{}", i)),
                          fd.defineTensor(shapes[i], dtype, fmt::format("g{}", i)),
                          fd.defineTensor(shapes[i], dtype, fmt::format("m{}", i)),
                          fd.defineTensor(shapes[i], dtype, fmt::format("v{}", i)),
                          fd.defineTensor({}, DataType::Float, fmt::format("step{}", i))});
  Val lr = fd.defineScalar(DataType::Double, "lr");
  Val beta1 = fd.defineScalar(DataType::Double, "beta1");
  Val beta2 = fd.defineScalar(DataType::Double, "beta2");
  Val eps = fd.defineScalar(DataType::Double, "eps");

  for (const Parameter& p : parameters) {
    // Each line keeps torch's association of operations, e.g. ((1 - beta2) * grad) * grad.
    // (C++ may create a line's expressions in another order; the computed values are the
    // same.)
    Val step = p.step + 1;
    Val expAvg = p.expAvg * beta1 + p.grad * (1.0 - beta1);
    Val expAvgSq = p.expAvgSq * beta2 + (1.0 - beta2) * p.grad * p.grad;
    Val biasCorrection1 = 1 - pow(beta1, step);
    Val biasCorrection2 = 1 - pow(beta2, step);
    Val stepSize = lr / biasCorrection1;
    Val biasCorrection2Sqrt = sqrt(biasCorrection2); // _dispatch_sqrt of a tensor
    Val denom = sqrt(expAvgSq) / biasCorrection2Sqrt + eps;
    Val param = p.param + (-stepSize) * expAvg / denom;
    fd.copy_(param, p.param);
    fd.copy_(expAvg, p.expAvg);
    fd.copy_(expAvgSq, p.expAvgSq);
    fd.copy_(step, p.step);
  }
  return fd.finalize();
}

llvm::SmallVector<Shape, 2> seedExampleShapes() {
  return {{1024, 1024}, {1024, 1024}};
}

} // namespace widefuse::optim
