#include "optim/adam.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"

#include <fmt/format.h>

#include <cmath>

namespace widefuse::optim {

llvm::StringRef adamRoleName(AdamRole role) {
  switch (role) {
  case AdamRole::Param:
    return "param";
  case AdamRole::Grad:
    return "grad";
  case AdamRole::ExpAvg:
    return "exp_avg";
  case AdamRole::ExpAvgSq:
    return "exp_avg_sq";
  case AdamRole::MaxExpAvgSq:
    return "max_exp_avg_sq";
  case AdamRole::Step:
    return "step";
  case AdamRole::Lr:
    return "lr";
  case AdamRole::GradScale:
    return "grad_scale";
  case AdamRole::FoundInf:
    return "found_inf";
  }
  throw InternalError(fmt::format("unknown AdamRole {}", int(role)));
}

void validateAdamConfig(const AdamConfig& config) {
  if (config.groups.empty())
    fail("Adam: the config has no param groups (torch: optimizer got an empty parameter list)");
  if (!isFloatingPoint(config.dtype))
    fail("Adam: params, grads and state must have a floating-point dtype, not {}",
         shortName(config.dtype).str());
  for (size_t g = 0; g < config.groups.size(); ++g) {
    const AdamGroup& group = config.groups[g];
    const AdamHyperparameters& hyper = group.hyper;
    if (group.shapes.empty())
      fail("Adam: param group {} has no parameters", g);
    // The negated comparisons also reject NaN.
    if (!(hyper.lr >= 0))
      fail("Adam: param group {}: invalid learning rate: {} (must be >= 0)", g, hyper.lr);
    if (!(hyper.eps >= 0))
      fail("Adam: param group {}: invalid epsilon value: {} (must be >= 0)", g, hyper.eps);
    if (!(hyper.beta1 >= 0 && hyper.beta1 < 1))
      fail("Adam: param group {}: invalid beta parameter at index 0: {} (must be in [0, 1))", g,
           hyper.beta1);
    if (!(hyper.beta2 >= 0 && hyper.beta2 < 1))
      fail("Adam: param group {}: invalid beta parameter at index 1: {} (must be in [0, 1))", g,
           hyper.beta2);
    if (!(hyper.weightDecay >= 0))
      fail("Adam: param group {}: invalid weight_decay value: {} (must be >= 0)", g,
           hyper.weightDecay);
  }
}

namespace {

/// The fusion inputs of one parameter.
struct Parameter {
  unsigned group = 0;
  Val param, grad, expAvg, expAvgSq, maxExpAvgSq, step;
};

/// Builds the graphs. Each torch tensor op is one `op(...)` below: computed in the compute
/// type of the dtype (up) and rounded to the dtype once (down), as a PyTorch kernel does.
class AdamBuilder {
public:
  AdamBuilder(const AdamConfig& config, AdamFusion& result)
      : config_(config), result_(result), fd_("adam_step"),
        reduced_(isReducedPrecision(config.dtype)) {}

  void build() {
    defineInputs();
    for (const Parameter& p : parameters_)
      buildParameter(p);
    result_.fusion = fd_.finalize();
  }

private:
  Val up(Val x) { return reduced_ ? cast(x, DataType::Float) : x; }
  Val down(Val x) { return reduced_ ? cast(x, config_.dtype) : x; }

  Val tensor(llvm::ArrayRef<int64_t> shape, DataType dtype, AdamRole role, unsigned group,
             unsigned param, unsigned index, llvm::StringRef prefix) {
    result_.inputs.push_back({role, group, param, index});
    return fd_.defineTensor(shape, dtype, fmt::format("{}{}", prefix.str(), index));
  }

  void defineInputs() {
    unsigned index = 0;
    for (unsigned g = 0; g < config_.groups.size(); ++g) {
      const AdamGroup& group = config_.groups[g];
      for (unsigned k = 0; k < group.shapes.size(); ++k, ++index) {
        const Shape& shape = group.shapes[k];
        DataType dtype = config_.dtype;
        Parameter p;
        p.group = g;
        p.param = tensor(shape, dtype, AdamRole::Param, g, k, index, "p");
        p.grad = tensor(shape, dtype, AdamRole::Grad, g, k, index, "g");
        p.expAvg = tensor(shape, dtype, AdamRole::ExpAvg, g, k, index, "m");
        p.expAvgSq = tensor(shape, dtype, AdamRole::ExpAvgSq, g, k, index, "v");
        if (config_.amsgrad)
          p.maxExpAvgSq = tensor(shape, dtype, AdamRole::MaxExpAvgSq, g, k, index, "vmax");
        p.step = tensor({}, DataType::Float, AdamRole::Step, g, k, index, "step");
        parameters_.push_back(p);
      }
    }
    for (unsigned g = 0; g < config_.groups.size(); ++g) {
      result_.inputs.push_back({AdamRole::Lr, g, 0, 0});
      std::string name = fmt::format("lr{}", g);
      // A capturable lr (0-d f32) is widened to f64 once: the step size and the AdamW
      // factor are then computed as with a Python float lr.
      lrs_.push_back(config_.capturable
                         ? cast(fd_.defineTensor({}, DataType::Float, name), DataType::Double)
                         : fd_.defineScalar(DataType::Double, name));
    }
    if (config_.gradScale) {
      result_.inputs.push_back({AdamRole::GradScale, 0, 0, 0});
      gradScale_ = fd_.defineTensor({}, DataType::Float, "grad_scale");
    }
    if (config_.foundInf) {
      result_.inputs.push_back({AdamRole::FoundInf, 0, 0, 0});
      foundInf_ = fd_.defineTensor({}, DataType::Float, "found_inf");
      skip_ = ne(foundInf_, 0.0);
    }
  }

  /// copy_(source, destination), or with found_inf copy_(where(skip, destination, source)).
  void update(Val source, Val destination) {
    fd_.copy_(skip_ ? where(skip_, destination, source) : source, destination);
  }

  void buildParameter(const Parameter& p) {
    const AdamHyperparameters& hyper = config_.groups[p.group].hyper;
    // Python-number arithmetic on hyperparameters happens here, in double, as in torch.
    const double beta1 = hyper.beta1, beta2 = hyper.beta2, eps = hyper.eps;
    const double weightDecay = hyper.weightDecay;
    // f64 scalars and 0-d tensors (lr, the bias corrections) enter tensor ops as Python
    // floats do: converted to the op's compute type.
    Val lr = lrs_[p.group];

    Val grad = p.grad;
    if (gradScale_) // torch's fused kernels: grad / grad_scale
      grad = down(up(grad) / gradScale_);
    if (config_.maximize) // grad = -grad
      grad = down(neg(up(grad)));
    Val step = p.step + 1.0; // step_t += 1

    Val param = p.param;
    if (weightDecay != 0) {
      if (config_.decay == WeightDecayKind::Decoupled) // param.mul_(1 - lr * weight_decay)
        param = down(up(param) * (1.0 - lr * weightDecay));
      else // grad = grad.add(param, alpha=weight_decay)
        grad = down(up(grad) + weightDecay * up(param));
    }
    // exp_avg.lerp_(grad, 1 - beta1)
    Val expAvg = down(lerp(up(p.expAvg), up(grad), 1.0 - beta1));
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad.conj(), value=1 - beta2)
    Val expAvgSq = down(up(p.expAvgSq) * beta2);
    expAvgSq = down(up(expAvgSq) + (1.0 - beta2) * up(grad) * up(grad));

    // step = _get_value(step_t): the bias corrections are Python floats.
    Val stepValue = cast(step, DataType::Double);
    Val biasCorrection1 = 1.0 - pow(beta1, stepValue);
    Val biasCorrection2 = 1.0 - pow(beta2, stepValue);
    Val stepSize = lr / biasCorrection1;
    Val biasCorrection2Sqrt = sqrt(biasCorrection2); // _dispatch_sqrt: math.sqrt

    Val second = expAvgSq;
    Val maxExpAvgSq;
    if (config_.amsgrad) { // torch.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=...)
      maxExpAvgSq = down(maximum(up(p.maxExpAvgSq), up(expAvgSq)));
      second = maxExpAvgSq;
    }
    // denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
    Val denom = down(sqrt(up(second)));
    denom = down(up(denom) / biasCorrection2Sqrt);
    denom = down(up(denom) + eps);
    // param.addcdiv_(exp_avg, denom, value=-step_size)
    param = down(up(param) + neg(stepSize) * up(expAvg) / up(denom));

    update(param, p.param);
    update(expAvg, p.expAvg);
    update(expAvgSq, p.expAvgSq);
    if (config_.amsgrad)
      update(maxExpAvgSq, p.maxExpAvgSq);
    update(step, p.step);
  }

  const AdamConfig& config_;
  AdamFusion& result_;
  FusionDefinition fd_;
  bool reduced_;
  llvm::SmallVector<Parameter, 16> parameters_;
  llvm::SmallVector<Val, 2> lrs_;
  Val gradScale_, foundInf_, skip_;
};

} // namespace

AdamFusion buildAdam(const AdamConfig& config) {
  validateAdamConfig(config);
  AdamFusion result;
  AdamBuilder(config, result).build();
  return result;
}

} // namespace widefuse::optim
