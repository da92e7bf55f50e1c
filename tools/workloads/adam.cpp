#include "tools/workloads/adam.h"
#include "tools/workloads/stochastic_rounding.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "ir/half_float.h"
#include "ir/host_tensor.h"

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
  case AdamRole::RoundingSeed:
    return "rounding_seed";
  case AdamRole::Lr:
    return "lr";
  case AdamRole::GradScale:
    return "grad_scale";
  case AdamRole::FoundInf:
    return "found_inf";
  case AdamRole::Beta1:
    return "beta1";
  case AdamRole::Beta2:
    return "beta2";
  case AdamRole::Eps:
    return "eps";
  case AdamRole::WeightDecay:
    return "weight_decay";
  }
  throw InternalError(fmt::format("unknown AdamRole {}", int(role)));
}

std::string adamStateKey(const AdamInput& input) {
  std::string key = adamRoleName(input.role).str();
  if (input.part == StatePart::Codes)
    return key + "_codes";
  return input.part == StatePart::Scale ? key + "_scale" : key;
}

AdamStateBytes adamStateBytes(const AdamFusion& adam) {
  AdamStateBytes bytes;
  int64_t elements = 0, perElement = 0;
  for (size_t i = 0; i < adam.inputs.size(); ++i) {
    const Value* input = adam.fusion->inputs()[i];
    if (!input->isTensor())
      continue;
    int64_t size = numElements(input->extents());
    AdamRole role = adam.inputs[i].role;
    if (role == AdamRole::Param)
      elements += size;
    bool state = role == AdamRole::Master || role == AdamRole::Remainder ||
                 role == AdamRole::ExpAvg || role == AdamRole::ExpAvgSq ||
                 role == AdamRole::MaxExpAvgSq || role == AdamRole::Step ||
                 role == AdamRole::RoundingSeed;
    if (!state)
      continue;
    int64_t tensorBytes = size * int64_t(byteSize(input->dtype()));
    bytes.total += tensorBytes;
    if (input->rank() != 0)
      perElement += tensorBytes;
  }
  bytes.perElement = elements == 0 ? 0.0 : double(perElement) / double(elements);
  return bytes;
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

/// The checks of a state format and of stochastic rounding.
void validateAdamStorage(const AdamConfig& config) {
  if (config.stateFormat)
    validateStateFormat(*config.stateFormat);
  if (!config.stochasticRound)
    return;
  if (config.dtype != DataType::BFloat16)
    fail("Adam: stochastic rounding writes bf16 parameters, not {}", shortName(config.dtype).str());
  if (config.masterWeights == MasterWeights::Remainders)
    fail("Adam: stochastic rounding rounds the bf16 parameter written from an f32 value; "
         "remainders keep that value exactly, so there is nothing to round");
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
  validateAdamStorage(config);
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

/// A moment's input: the tensor itself, or its codes and scales (quantized).
struct Moment {
  Val tensor, scale;
};

/// The fusion inputs of one parameter.
struct Parameter {
  unsigned group = 0;
  Val param, master, remainder, grad, step, seed;
  Moment expAvg, expAvgSq, maxExpAvgSq;
};

/// The runtime scalars of one param group: widefuse.optim traces every number of a group as
/// one (betas as two), except a weight decay Adam's L2 branch reads (a constant there).
struct GroupScalars {
  Val lr, beta1, beta2, eps, weightDecay;
};

/// True for a bf16/f16 value (widefuse.optim's narrow).
bool isNarrow(Val x) {
  return isNarrowFloat(x.dtype());
}

/// The type a torch kernel computes `x` in (widefuse.optim's opmath): f32 for half/bfloat16.
Val opmath(Val x) {
  return isNarrow(x) ? cast(x, DataType::Float) : x;
}

/// `x` rounded once to `dtype`, nothing when it has that dtype (widefuse.optim's rounded).
Val rounded(Val x, DataType dtype) {
  return x.dtype() == dtype ? x : cast(x, dtype);
}

/// A number added to a `dtype` tensor: torch's add rounds a Python scalar (and add's alpha)
/// to a bf16/f16 tensor's dtype before computing in f32.
double scalarAs(double value, DataType dtype) {
  if (dtype == DataType::BFloat16)
    return bfloat16BitsToFloat(toBFloat16Bits(value));
  if (dtype == DataType::Half)
    return halfBitsToFloat(toHalfBits(value));
  return value;
}

/// Builds the graphs, op for op as widefuse.optim traces its Adam (step_fusion.py's
/// trace_step around adam.py's update, master_weights.py's helpers): the same ops on the same
/// operands, so that the two fusions are structurally equal
/// (tests/python_frontend/test_optim_adam_structure.py). A tensor op on bf16/f16 operands is
/// computed in f32 and rounded to its result's dtype by the IR itself; explicit casts stand
/// where widefuse.optim writes them (opmath, rounded, .to(), .float()).
class AdamBuilder {
public:
  AdamBuilder(const AdamConfig& config, AdamFusion& result)
      : config_(config), result_(result), fd_("adam_step"), gradDtype_(adamGradDtype(config)),
        stateDtype_(adamStateDtype(config)) {}

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
             unsigned param, unsigned index, llvm::StringRef prefix,
             StatePart part = StatePart::Value) {
    result_.inputs.push_back({role, group, param, index, 0, part});
    llvm::StringRef suffix = part == StatePart::Codes   ? "_codes"
                             : part == StatePart::Scale ? "_scale"
                                                        : "";
    return fd_.defineTensor(shape, dtype, fmt::format("{}{}{}", prefix.str(), index, suffix.str()));
  }

  /// A moment of a parameter of `shape`: a tensor of the state dtype, or codes and scales.
  Moment moment(const Shape& shape, AdamRole role, unsigned g, unsigned k, unsigned index,
                llvm::StringRef prefix) {
    const std::optional<StateFormat>& format = config_.stateFormat;
    int64_t elements = totalElements({shape});
    if (!format || !quantizesParameter(*format, elements))
      return {tensor(shape, stateDtype_, role, g, k, index, prefix), Val()};
    Moment m;
    m.tensor = tensor(codesShape(*format, shape), codesDtype(*format), role, g, k, index, prefix,
                      StatePart::Codes);
    m.scale = tensor({elements / format->blockSize}, DataType::Float, role, g, k, index, prefix,
                     StatePart::Scale);
    return m;
  }

  /// A moment's value before the update: read from its codes and scales when quantized.
  Val read(const Moment& m, bool isSigned, Val like) {
    if (!m.scale)
      return m.tensor;
    return readQuantized(*config_.stateFormat, m.tensor, m.scale, isSigned, like);
  }

  /// Writes a moment's new value: copy_, or stored as codes and scales.
  void store(Val value, const Moment& m, bool isSigned) {
    if (!m.scale)
      return update(value, m.tensor);
    storeQuantized(fd_, *config_.stateFormat, value, m.tensor, m.scale, isSigned, skip_);
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
    p.expAvg = moment(shape, AdamRole::ExpAvg, g, k, index, "m");
    p.expAvgSq = moment(shape, AdamRole::ExpAvgSq, g, k, index, "v");
    if (config_.amsgrad)
      p.maxExpAvgSq = moment(shape, AdamRole::MaxExpAvgSq, g, k, index, "vmax");
    p.step = tensor({}, DataType::Float, AdamRole::Step, g, k, index, "step");
    if (config_.stochasticRound)
      p.seed = tensor({}, DataType::Int64, AdamRole::RoundingSeed, g, k, index, "seed");
    parameters_.push_back(p);
  }

  /// The runtime f64 scalar `name` of group g, whose value a run gives (`value` by default).
  Val groupScalar(AdamRole role, unsigned g, llvm::StringRef name, double value) {
    result_.inputs.push_back({role, g, 0, 0, value});
    return fd_.defineScalar(DataType::Double, name);
  }

  void defineGroup(unsigned g) {
    const AdamHyperparameters& hyper = config_.groups[g].hyper;
    GroupScalars scalars;
    std::string lr = fmt::format("lr{}", g);
    if (config_.capturable) { // a 0-d f32 lr, widened to f64 once: the rest as with a float
      result_.inputs.push_back({AdamRole::Lr, g, 0, 0, hyper.lr});
      scalars.lr = cast(fd_.defineTensor({}, DataType::Float, lr), DataType::Double);
    } else {
      scalars.lr = groupScalar(AdamRole::Lr, g, lr, hyper.lr);
    }
    scalars.beta1 = groupScalar(AdamRole::Beta1, g, fmt::format("beta1_{}", g), hyper.beta1);
    scalars.beta2 = groupScalar(AdamRole::Beta2, g, fmt::format("beta2_{}", g), hyper.beta2);
    scalars.eps = groupScalar(AdamRole::Eps, g, fmt::format("eps{}", g), hyper.eps);
    if (config_.decay == WeightDecayKind::Decoupled)
      scalars.weightDecay = groupScalar(AdamRole::WeightDecay, g, fmt::format("weight_decay{}", g),
                                        hyper.weightDecay);
    groups_.push_back(scalars);
  }

  void defineInputs() {
    unsigned index = 0;
    for (unsigned g = 0; g < config_.groups.size(); ++g) {
      const AdamGroup& group = config_.groups[g];
      for (unsigned k = 0; k < group.shapes.size(); ++k, ++index)
        defineParameter(group.shapes[k], g, k, index);
    }
    for (unsigned g = 0; g < config_.groups.size(); ++g)
      defineGroup(g);
    if (config_.gradScale) {
      result_.inputs.push_back({AdamRole::GradScale, 0, 0, 0});
      gradScale_ = fd_.defineTensor({}, DataType::Float, "grad_scale");
    }
    if (config_.foundInf || config_.computeFoundInf) {
      result_.inputs.push_back({AdamRole::FoundInf, 0, 0, 0});
      foundInf_ = fd_.defineTensor({}, DataType::Float, "found_inf");
      // A computed flag replaces the entry value, which is then not read (computeFoundInf).
      if (!config_.computeFoundInf)
        skip_ = ne(foundInf_, 0);
    }
  }

  /// The grad the update reads before clipping: `grad / grad_scale.to(grad.dtype)`.
  Val unscaled(const Parameter& p) {
    if (!gradScale_)
      return p.grad;
    return truediv(p.grad, cast(gradScale_, p.grad.dtype()));
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

  /// torch.nn.utils.clip_grad_norm_ over every grad, as widefuse.optim's vector_norm and
  /// clamp: the total norm computed in f32 (f64 for f64 grads) and returned in the grads'
  /// dtype, the coefficient clamp(max_grad_norm / (total + 1e-6), max=1) in that dtype, each
  /// grad multiplied by it (in f32 for bf16/f16 grads, the coefficient not rounded to the
  /// grad's dtype first). The total norm is the fusion's output.
  void clip(std::vector<Val>& grads) {
    const DataType compute = gradDtype_ == DataType::Double ? DataType::Double : DataType::Float;
    std::vector<Val> terms;
    for (Val grad : grads) {
      Val value = rounded(grad, compute);
      terms.push_back(config_.normType == 2 ? value * value : abs(value));
    }
    Val total = rounded(config_.normType == 2 ? sqrt(sum(terms)) : max(terms), gradDtype_);
    Val coefficient = minimum(truediv(*config_.maxGradNorm, total + 1e-6), 1.0);
    for (Val& grad : grads) {
      Val compute = opmath(grad);
      grad = rounded(compute * rounded(coefficient, compute.dtype()), grad.dtype());
    }
    result_.gradNormOutput = 0;
    fd_.addOutput(total);
  }

  /// copy_(source, destination), or with found_inf copy_(where(skip, destination, source)).
  void update(Val source, Val destination) {
    fd_.copy_(skip_ ? where(skip_, destination, source) : source, destination);
  }

  /// The weight Adam updates: the parameter (in f32 when it rounds stochastically), its f32
  /// master, or the master rebuilt from the parameter and its remainder.
  Val weightOf(const Parameter& p) {
    switch (config_.masterWeights) {
    case MasterWeights::None:
      return config_.stochasticRound ? cast(p.param, DataType::Float) : p.param;
    case MasterWeights::Fp32:
      return p.master;
    case MasterWeights::Remainders:
      return reconstructMaster(p.param, p.remainder);
    }
    throw InternalError("unknown MasterWeights");
  }

  /// Writes the updated weight back: to the parameter, or to the master and its rounded copy
  /// in the parameter, or split into the parameter and the remainder. Rounding
  /// stochastically, the parameter's copy is rounded so with the bits of the new `step`.
  void writeWeight(const Parameter& p, Val weight, Val step) {
    Val rounded = config_.stochasticRound
                      ? stochasticBf16(weight, random16Bits(weight, p.seed, step))
                      : Val();
    switch (config_.masterWeights) {
    case MasterWeights::None:
      return update(rounded ? rounded : weight, p.param);
    case MasterWeights::Fp32:
      update(weight, p.master);
      return update(rounded ? rounded : cast(weight, config_.dtype), p.param);
    case MasterWeights::Remainders: {
      auto [param, remainder] = splitMaster(weight);
      update(param, p.param);
      return update(remainder, p.remainder);
    }
    }
  }

  /// grad.add(weight, alpha=weight_decay), out of place (L2 decay), as torch's kernel rounds
  /// it: one fused multiply-add in the opmath type (torch_arithmetic.py's add_scaled).
  Val l2Decayed(Val grad, Val weight, double weightDecay) {
    DataType dtype = promotedFloat(grad.dtype(), weight.dtype()), op = opmathOf(dtype);
    // torch converts alpha to a bf16/f16 result's dtype before computing in f32.
    double alpha = isNarrowFloat(dtype) ? scalarAs(weightDecay, dtype) : weightDecay;
    if (op == DataType::Float)
      alpha = static_cast<float>(alpha);
    return as(fma(alpha, as(weight, op), as(grad, op)), dtype);
  }

  /// The update of one parameter from its grad after unscaling and clipping (adam.py's
  /// update, line for line).
  void buildParameter(const Parameter& p, Val grad) {
    const GroupScalars& s = groups_[p.group];
    const double weightDecay = config_.groups[p.group].hyper.weightDecay;
    if (config_.maximize)
      grad = neg(grad);
    Val step = p.step + 1; // step.add_(1)
    Val weight = weightOf(p);
    // weight.mul_(1 - lr * weight_decay), in place: in the weight's dtype (a capturable lr is a
    // 0-d f64 tensor, which would promote a 0-d weight)
    if (config_.decay == WeightDecayKind::Decoupled)
      weight = rounded(weight * (1 - s.lr * s.weightDecay), weight.dtype());
    else if (weightDecay != 0)
      grad = l2Decayed(grad, weight, weightDecay);
    // exp_avg.lerp_(grad, 1 - beta1)
    // In-place ops keep the state's dtype (a quantized state reads as f32).
    Val expAvg = read(p.expAvg, true, p.param);
    expAvg = as(torchLerp(expAvg, grad, 1 - s.beta1), expAvg.dtype());
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    Val expAvgSq = read(p.expAvgSq, false, p.param) * s.beta2;
    expAvgSq = as(torchAddcmul(expAvgSq, grad, grad, 1 - s.beta2), expAvgSq.dtype());
    // The bias corrections from the step in f64, as torch's Python floats.
    Val stepValue = cast(step, DataType::Double);
    Val biasCorrection1 = 1 - pow(s.beta1, stepValue);
    Val biasCorrection2Sqrt = sqrt(1 - pow(s.beta2, stepValue));
    Val second = expAvgSq, maxExpAvgSq;
    if (config_.amsgrad) // torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
      second = maxExpAvgSq = maximum(read(p.maxExpAvgSq, false, p.param), expAvgSq);
    // denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
    Val denom = truediv(sqrt(second), biasCorrection2Sqrt);
    denom = denom + (isNarrow(denom) ? cast(s.eps, denom.dtype()) : s.eps);
    // weight.addcdiv_(exp_avg, denom, value=-step_size)
    Val stepSize = neg(truediv(s.lr, biasCorrection1));
    Val updated = opmath(weight) + truediv(stepSize * opmath(expAvg), opmath(denom));
    writeWeight(p, rounded(updated, weight.dtype()), step);
    store(expAvg, p.expAvg, true);
    store(expAvgSq, p.expAvgSq, false);
    if (config_.amsgrad)
      store(maxExpAvgSq, p.maxExpAvgSq, false);
    update(step, p.step);
  }

  /// `x` in `dtype`, cast only when it has another (torch_arithmetic.py's _as).
  static Val as(Val x, DataType dtype) { return x.dtype() == dtype ? x : cast(x, dtype); }

  /// torch's result dtype of two real floating tensors: the wider, f32 for bf16 with f16.
  static DataType promotedFloat(DataType a, DataType b) {
    if (a == DataType::Double || b == DataType::Double)
      return DataType::Double;
    return a == b ? a : DataType::Float;
  }

  /// The type torch's kernels compute a dtype in: f32 for bf16 and f16.
  static DataType opmathOf(DataType dtype) {
    return isNarrowFloat(dtype) ? DataType::Float : dtype;
  }

  /// torch's lerp with a scalar weight as its kernels round it: one fused multiply-add,
  /// `weight * (end - start) + start` for |weight| < 0.5, else `(weight - 1) * (end - start)
  /// + end`, chosen by where() on the runtime weight (torch_arithmetic.py's lerp).
  Val torchLerp(Val start, Val end, Val weight) {
    DataType dtype = promotedFloat(start.dtype(), end.dtype()), op = opmathOf(dtype);
    Val low = as(start, op), high = as(end, op);
    Val difference = high - low;
    weight = as(weight, op);
    Val small = lt(abs(weight), 0.5);
    Val coefficient = where(small, weight, weight - 1);
    Val base = where(small, low, high);
    return as(fma(coefficient, difference, base), dtype);
  }

  /// torch's addcmul as its kernels round it: `(value * tensor1) * tensor2 + start` with the
  /// last multiply and the add fused (torch_arithmetic.py's addcmul).
  Val torchAddcmul(Val start, Val tensor1, Val tensor2, Val value) {
    DataType dtype = promotedFloat(promotedFloat(start.dtype(), tensor1.dtype()), tensor2.dtype());
    DataType op = opmathOf(dtype);
    Val scaled = as(value, op) * as(tensor1, op);
    return as(fma(scaled, as(tensor2, op), as(start, op)), dtype);
  }

  const AdamConfig& config_;
  AdamFusion& result_;
  FusionDefinition fd_;
  DataType gradDtype_, stateDtype_;
  llvm::SmallVector<Parameter, 16> parameters_;
  llvm::SmallVector<GroupScalars, 2> groups_;
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
