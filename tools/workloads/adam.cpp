#include "tools/workloads/adam.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "ir/half_float.h"

#include <fmt/format.h>

#include <cmath>

namespace widefuse::optim {

llvm::StringRef adamRoleName(AdamRole role) {
  switch (role) {
  case AdamRole::Param:
    return "param";
  case AdamRole::Master:
    return "master_param";
  case AdamRole::Remainder:
    return "param_remainder";
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
  case AdamRole::MaxGradNorm:
    return "max_grad_norm";
  }
  throw InternalError(fmt::format("unknown AdamRole {}", int(role)));
}

llvm::StringRef masterWeightsName(MasterWeights masterWeights) {
  switch (masterWeights) {
  case MasterWeights::None:
    return "none";
  case MasterWeights::Fp32:
    return "fp32";
  case MasterWeights::Remainders:
    return "remainders";
  }
  throw InternalError(fmt::format("unknown MasterWeights {}", int(masterWeights)));
}

DataType adamGradDtype(const AdamConfig& config) {
  return config.gradDtype.value_or(config.dtype);
}

DataType adamStateDtype(const AdamConfig& config) {
  if (config.stateDtype)
    return *config.stateDtype;
  return config.masterWeights == MasterWeights::None ? config.dtype : DataType::Float;
}

int64_t adamStateBytesPerElement(const AdamConfig& config) {
  int64_t bytes = int64_t(byteSize(adamStateDtype(config))) * (config.amsgrad ? 3 : 2);
  if (config.masterWeights == MasterWeights::Fp32)
    bytes += 4;
  if (config.masterWeights == MasterWeights::Remainders)
    bytes += 2;
  return bytes;
}

namespace {

/// The dtype checks of validateAdamConfig.
void validateAdamDtypes(const AdamConfig& config) {
  const std::string param = shortName(config.dtype).str();
  if (!isFloatingPoint(config.dtype))
    fail("Adam: params, grads and state must have a floating-point dtype, not {}", param);
  DataType grad = adamGradDtype(config);
  if (grad != config.dtype && grad != DataType::Float)
    fail("Adam: the grads must have the parameters' dtype ({}) or f32, not {}", param,
         shortName(grad).str());
  DataType state = adamStateDtype(config);
  if (!isFloatingPoint(state))
    fail("Adam: the optimizer state (exp_avg, exp_avg_sq) must have a floating-point dtype "
         "(f32 or bf16), not {}",
         shortName(state).str());
  if (state != config.dtype && state != DataType::Float && state != DataType::BFloat16)
    fail("Adam: the optimizer state (exp_avg, exp_avg_sq) must be f32, bf16 or the "
         "parameters' dtype ({}), not {}",
         param, shortName(state).str());
  switch (config.masterWeights) {
  case MasterWeights::None:
    return;
  case MasterWeights::Fp32:
    if (!isNarrowFloat(config.dtype))
      fail("Adam: fp32 master weights are for bf16 or f16 parameters; {} parameters are their "
           "own master (use master weights none)",
           param);
    return;
  case MasterWeights::Remainders:
    if (config.dtype != DataType::BFloat16)
      fail("Adam: remainder master weights need bf16 parameters (the parameter is the high "
           "half of the f32 master, the int16 remainder its low half), not {}{}",
           param, config.dtype == DataType::Half ? "; use fp32 master weights for f16" : "");
    return;
  }
}

/// The clip checks of validateAdamConfig (the values widefuse.optim accepts, norm 2 or inf).
void validateAdamClip(const AdamConfig& config) {
  if (config.maxGradNorm && !(*config.maxGradNorm >= 0 && std::isfinite(*config.maxGradNorm)))
    fail("Adam: invalid max_grad_norm: {} (must be a finite number >= 0)", *config.maxGradNorm);
  if (!(config.normType == 2 || config.normType == INFINITY))
    fail("Adam: invalid norm type for max_grad_norm: {} (must be 2 or inf)", config.normType);
}

} // namespace

void validateAdamConfig(const AdamConfig& config) {
  if (config.groups.empty())
    fail("Adam: the config has no param groups (torch: optimizer got an empty parameter list)");
  validateAdamDtypes(config);
  validateAdamClip(config);
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
  Val param, master, remainder, grad, expAvg, expAvgSq, maxExpAvgSq, step;
};

/// The compute type of a tensor op on `x`: float for half/bfloat16, else its own dtype.
Val up(Val x) {
  return isNarrowFloat(x.dtype()) ? cast(x, DataType::Float) : x;
}

/// A tensor op's result rounded once to the dtype of the tensor it lands in (as a PyTorch
/// kernel writes its output); nothing when it already has that dtype.
Val down(Val x, DataType dtype) {
  return x.dtype() == dtype ? x : cast(x, dtype);
}

/// Builds the graphs. Each torch tensor op is one `down(op(up(...)), T)` below: computed in
/// the compute type of its operands and rounded once to T, the dtype of the tensor torch's op
/// writes (the destination of an in-place op, the promoted type of an out-of-place one).
class AdamBuilder {
public:
  AdamBuilder(const AdamConfig& config, AdamFusion& result)
      : config_(config), result_(result), fd_("adam_step"), gradDtype_(adamGradDtype(config)),
        stateDtype_(adamStateDtype(config)),
        weightDtype_(config.masterWeights == MasterWeights::None ? config.dtype : DataType::Float) {
  }

  void build() {
    defineInputs();
    std::vector<Val> grads;
    for (const Parameter& p : parameters_)
      grads.push_back(unscaled(p));
    if (config_.computeFoundInf)
      computeFoundInf(grads);
    if (config_.maxGradNorm)
      clip(grads);
    for (size_t k = 0; k < parameters_.size(); ++k)
      buildParameter(parameters_[k], grads[k]);
    result_.fusion = fd_.finalize();
  }

private:
  Val tensor(llvm::ArrayRef<int64_t> shape, DataType dtype, AdamRole role, unsigned group,
             unsigned param, unsigned index, llvm::StringRef prefix) {
    result_.inputs.push_back({role, group, param, index});
    return fd_.defineTensor(shape, dtype, fmt::format("{}{}", prefix.str(), index));
  }

  void defineParameter(const Shape& shape, unsigned g, unsigned k, unsigned index) {
    Parameter p;
    p.group = g;
    p.param = tensor(shape, config_.dtype, AdamRole::Param, g, k, index, "p");
    if (config_.masterWeights == MasterWeights::Fp32)
      p.master = tensor(shape, DataType::Float, AdamRole::Master, g, k, index, "master");
    if (config_.masterWeights == MasterWeights::Remainders)
      p.remainder = tensor(shape, DataType::Int16, AdamRole::Remainder, g, k, index, "remainder");
    p.grad = tensor(shape, gradDtype_, AdamRole::Grad, g, k, index, "g");
    p.expAvg = tensor(shape, stateDtype_, AdamRole::ExpAvg, g, k, index, "m");
    p.expAvgSq = tensor(shape, stateDtype_, AdamRole::ExpAvgSq, g, k, index, "v");
    if (config_.amsgrad)
      p.maxExpAvgSq = tensor(shape, stateDtype_, AdamRole::MaxExpAvgSq, g, k, index, "vmax");
    p.step = tensor({}, DataType::Float, AdamRole::Step, g, k, index, "step");
    parameters_.push_back(p);
  }

  void defineInputs() {
    unsigned index = 0;
    for (unsigned g = 0; g < config_.groups.size(); ++g) {
      const AdamGroup& group = config_.groups[g];
      for (unsigned k = 0; k < group.shapes.size(); ++k, ++index)
        defineParameter(group.shapes[k], g, k, index);
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
    if (config_.foundInf || config_.computeFoundInf) {
      result_.inputs.push_back({AdamRole::FoundInf, 0, 0, 0});
      foundInf_ = fd_.defineTensor({}, DataType::Float, "found_inf");
      // A computed flag replaces the entry value, which is then not read (computeFoundInf).
      if (!config_.computeFoundInf)
        skip_ = ne(foundInf_, 0.0);
    }
    if (config_.maxGradNorm) {
      result_.inputs.push_back({AdamRole::MaxGradNorm, 0, 0, 0});
      maxGradNorm_ = fd_.defineScalar(DataType::Double, "max_grad_norm");
    }
  }

  /// The grad the update reads before clipping: divided by grad_scale when there is one
  /// (torch's fused kernels: grad / grad_scale).
  Val unscaled(const Parameter& p) {
    if (!gradScale_)
      return p.grad;
    return down(up(p.grad) / gradScale_, gradDtype_);
  }

  /// GradScaler's inf check in the step: any non-finite unscaled grad, over every grad (a
  /// global reduction, phase 1), skips the update and is written to found_inf as 1.0 or 0.0.
  void computeFoundInf(llvm::ArrayRef<Val> grads) {
    std::vector<Val> nonFinite;
    for (Val grad : grads)
      nonFinite.push_back(logical_not(isfinite(grad)));
    skip_ = any(nonFinite);
    fd_.copy_(cast(skip_, DataType::Float), foundInf_);
  }

  /// torch.nn.utils.clip_grad_norm_ over every grad: the total norm (f32 accumulation, then
  /// the grads' dtype, as torch.stack of the per-parameter norms), the coefficient
  /// clamp(max_grad_norm / (total + 1e-6), max=1) in that dtype, each grad multiplied by it
  /// in place (rounded to the grad's dtype). The total norm is the fusion's output.
  void clip(std::vector<Val>& grads) {
    // The max of |grad| is exact in the grads' own dtype, so the inf-norm reduces them as they
    // are: its result is the norm itself, with no 0-d cast after it (a program of its own).
    std::vector<Val> terms;
    for (Val grad : grads)
      terms.push_back(config_.normType == 2 ? up(grad) * up(grad) : abs(grad));
    Val total = config_.normType == 2 ? sqrt(sum(terms)) : max(terms);
    total = down(total, gradDtype_);
    Val coefficient = down(maxGradNorm_ / down(up(total) + 1e-6, gradDtype_), gradDtype_);
    coefficient = down(minimum(up(coefficient), 1.0), gradDtype_);
    for (Val& grad : grads)
      grad = down(up(grad) * up(coefficient), gradDtype_);
    result_.gradNormOutput = 0;
    fd_.addOutput(total);
  }

  /// copy_(source, destination), or with found_inf copy_(where(skip, destination, source)).
  void update(Val source, Val destination) {
    fd_.copy_(skip_ ? where(skip_, destination, source) : source, destination);
  }

  /// The weight Adam updates: the parameter, its f32 master, or the master rebuilt from the
  /// parameter and its remainder.
  Val weightOf(const Parameter& p) {
    switch (config_.masterWeights) {
    case MasterWeights::None:
      return p.param;
    case MasterWeights::Fp32:
      return p.master;
    case MasterWeights::Remainders:
      return reconstructMaster(p.param, p.remainder);
    }
    throw InternalError("unknown MasterWeights");
  }

  /// Writes the updated weight back: to the parameter, or to the master and its rounded copy
  /// in the parameter, or split into the parameter and the remainder.
  void writeWeight(const Parameter& p, Val weight) {
    switch (config_.masterWeights) {
    case MasterWeights::None:
      return update(weight, p.param);
    case MasterWeights::Fp32:
      update(weight, p.master);
      return update(cast(weight, config_.dtype), p.param);
    case MasterWeights::Remainders: {
      auto [param, remainder] = splitMaster(weight);
      update(param, p.param);
      return update(remainder, p.remainder);
    }
    }
  }

  /// The update of one parameter from its grad after unscaling and clipping.
  void buildParameter(const Parameter& p, Val grad) {
    const AdamHyperparameters& hyper = config_.groups[p.group].hyper;
    // Python-number arithmetic on hyperparameters happens here, in double, as in torch.
    const double beta1 = hyper.beta1, beta2 = hyper.beta2, eps = hyper.eps;
    const double weightDecay = hyper.weightDecay;
    // f64 scalars and 0-d tensors (lr, the bias corrections) enter tensor ops as Python
    // floats do: converted to the op's compute type.
    Val lr = lrs_[p.group];
    const DataType S = stateDtype_, W = weightDtype_;

    if (config_.maximize) // grad = -grad
      grad = down(neg(up(grad)), gradDtype_);
    Val step = p.step + 1.0; // step_t += 1

    Val weight = weightOf(p);
    if (weightDecay != 0) {
      if (config_.decay == WeightDecayKind::Decoupled) // param.mul_(1 - lr * weight_decay)
        weight = down(up(weight) * (1.0 - lr * weightDecay), W);
      else { // grad = grad.add(param, alpha=weight_decay): out of place, the promoted type
        DataType promoted = promoteTypes(grad.dtype(), W);
        grad = down(up(grad) + scalarAs(weightDecay, promoted) * up(weight), promoted);
      }
    }
    // exp_avg.lerp_(grad, 1 - beta1)
    Val expAvg = down(lerpOf(p.expAvg, grad, 1.0 - beta1), S);
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad.conj(), value=1 - beta2)
    Val expAvgSq = down(up(p.expAvgSq) * beta2, S);
    expAvgSq = down(addcmulOf(expAvgSq, grad, 1.0 - beta2), S);

    // step = _get_value(step_t): the bias corrections are Python floats.
    Val stepValue = cast(step, DataType::Double);
    Val biasCorrection1 = 1.0 - pow(beta1, stepValue);
    Val biasCorrection2 = 1.0 - pow(beta2, stepValue);
    Val stepSize = lr / biasCorrection1;
    Val biasCorrection2Sqrt = sqrt(biasCorrection2); // _dispatch_sqrt: math.sqrt

    Val second = expAvgSq;
    Val maxExpAvgSq;
    if (config_.amsgrad) { // torch.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=...)
      maxExpAvgSq = down(maximum(up(p.maxExpAvgSq), up(expAvgSq)), S);
      second = maxExpAvgSq;
    }
    // denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
    Val denom = down(sqrt(up(second)), S);
    denom = down(up(denom) / biasCorrection2Sqrt, S);
    denom = down(up(denom) + scalarAs(eps, S), S);
    // param.addcdiv_(exp_avg, denom, value=-step_size)
    weight = down(up(weight) + neg(stepSize) * up(expAvg) / up(denom), W);

    writeWeight(p, weight);
    update(expAvg, p.expAvg);
    update(expAvgSq, p.expAvgSq);
    if (config_.amsgrad)
      update(maxExpAvgSq, p.maxExpAvgSq);
    update(step, p.step);
  }

  /// lerp(m, grad, weight) into the state: widefuse's lerp for f32/f64 state; for bf16/f16
  /// state torch's kernels' f32 form, one fused multiply-add (weight < 0.5:
  /// `weight * (grad - m) + m`, else `(weight - 1) * (grad - m) + grad`).
  Val lerpOf(Val m, Val grad, double weight) {
    if (!isNarrowFloat(stateDtype_))
      return lerp(up(m), up(grad), weight);
    Val difference = up(grad) - up(m);
    if (std::fabs(float(weight)) < 0.5f)
      return fma(weight, difference, up(m));
    return fma(double(float(weight) - 1.0f), difference, up(grad));
  }

  /// v + value * grad * grad: for bf16/f16 state with the last multiply and the add fused, as
  /// torch's addcmul kernels compute it.
  Val addcmulOf(Val v, Val grad, double value) {
    if (!isNarrowFloat(stateDtype_))
      return up(v) + value * up(grad) * up(grad);
    return fma(value * up(grad), up(grad), up(v));
  }

  /// A number added to a `dtype` tensor: torch's add rounds a Python scalar (and add's alpha)
  /// to a bf16/f16 tensor's dtype before computing in f32.
  static double scalarAs(double value, DataType dtype) {
    if (dtype == DataType::BFloat16)
      return bfloat16BitsToFloat(toBFloat16Bits(value));
    if (dtype == DataType::Half)
      return halfBitsToFloat(toHalfBits(value));
    return value;
  }

  const AdamConfig& config_;
  AdamFusion& result_;
  FusionDefinition fd_;
  DataType gradDtype_, stateDtype_;
  /// The dtype of the weight Adam updates: the parameters', or f32 with master weights.
  DataType weightDtype_;
  llvm::SmallVector<Parameter, 16> parameters_;
  llvm::SmallVector<Val, 2> lrs_;
  Val gradScale_, foundInf_, skip_, maxGradNorm_;
};

} // namespace

AdamFusion buildAdam(const AdamConfig& config) {
  validateAdamConfig(config);
  AdamFusion result;
  AdamBuilder(config, result).build();
  return result;
}

} // namespace widefuse::optim
