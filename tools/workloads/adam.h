#pragma once
/// torch.optim.Adam / AdamW as one widefuse fusion: the per-parameter graphs of torch's
/// `_single_tensor_adam`, every in-place update a copy_ deferred to the end (as in the seed
/// rewrite, tools/workloads/seed_adam.h), with amsgrad, maximize, L2 or decoupled weight
/// decay, a capturable (tensor) learning rate, AMP's grad_scale / found_inf, gradient clipping
/// by the total norm (max_grad_norm) and several param groups.
///
/// A workload of the tools (`widefuse adam`, the benchmarks, the C++ tests), frozen in
/// features: the optimizer library is widefuse.optim (python_frontend/widefuse/optim), and new
/// optimizer features land there only. The builder writes the fusion widefuse.optim's Adam
/// and AdamW trace, op for op (their update traces torch's own formula, so that it is the
/// reference), and tests/python_frontend/test_optim_adam_structure.py checks that the two are
/// structurally equal over a matrix of options (the test names those it leaves out and why:
/// capturable, which widefuse.optim does not distinguish, its lr always a runtime scalar; f32
/// grads of bf16/f16 parameters, which it refuses; a found_inf given but not computed, which
/// `widefuse adam` cannot ask for).
///
/// The formula, per parameter of a group. lr, beta1, beta2, eps and AdamW's weight decay are
/// runtime f64 scalars of their group (`lr{g}`, `beta1_{g}`, `beta2_{g}`, `eps{g}`,
/// `weight_decay{g}`: a new value runs the same kernels, and groups that differ only in
/// values share a kernel body); Adam's L2 weight decay and max_grad_norm are constants, as in
/// widefuse.optim, where Python branches on the first and the clip's options are part of the
/// trace key. Arithmetic on the scalars (1 - beta1, lr * wd, ...) is f64, like torch's Python
/// floats. A tensor op on bf16/f16 operands is computed in f32 and rounded once to its
/// result's dtype (docs/ir_reference.md); opmath() below is a cast to f32 of a bf16/f16
/// value, rounded() a cast to the dtype of the tensor written. p is the weight Adam updates:
/// the parameter (master weights none), the f32 master (fp32), or the master rebuilt from the
/// parameter and its remainder (remainders; reconstructMaster), written back as the
/// parameter, as the master and its round-to-nearest-even copy in the parameter, or split
/// again (splitMaster):
///
///   grad   = g / grad_scale.to(g's dtype)             (gradScale only)
///   found  = any(!isfinite(grad)) over every grad      (computeFoundInf; written to found_inf)
///   total  = vector_norm(every grad, normType)          (maxGradNorm: computed in f32, the
///            result in the grads' dtype); coef = minimum(max_grad_norm / (total + 1e-6), 1)
///   grad   = rounded(opmath(grad) * coef)             torch's clip_grad_norm_, in the step
///   grad   = -grad                                    (maximize only)
///   step'  = step + 1                                 (0-d f32)
///   p      = p * (1 - lr * wd)                        (Decoupled, always: x * 1 is x)
///   grad   = rounded(opmath(grad) + wd * opmath(p))   (L2, wd != 0; add(alpha=wd), wd
///            rounded to a bf16/f16 promoted type first)
///   m'     = lerp(m, grad, 1 - beta1)                 (bf16/f16 state: torch's kernel, one
///            fma in f32: w * (grad - m) + m for |w| < 0.5, else (w - 1) * (grad - m) + grad)
///   v'     = v * beta2;  v' = v' + (1 - beta2) * opmath(grad) * opmath(grad)
///            (bf16/f16 state: fma((1 - beta2) * grad, grad, v'), as torch's addcmul kernel)
///   bc1    = 1 - beta1 ** f64(step');  bc2Sqrt = sqrt(1 - beta2 ** f64(step'))   (f64)
///   vmax'  = maximum(vmax, v')                        (amsgrad only)
///   denom  = sqrt(amsgrad ? vmax' : v') / bc2Sqrt + eps   (eps rounded to bf16/f16 state)
///   p'     = opmath(p) + (-(lr / bc1)) * opmath(m') / opmath(denom)   (addcdiv_)
///   copy_ of p', m', v', vmax', step'; with foundInf each source is
///   where(found_inf != 0, entry value, new value), so a flagged step changes nothing
///   (with computeFoundInf: where(found, ...), the flag computed in the step).
///
/// With a state format (quantized_state.h) each moment of a parameter torchao's rule
/// quantizes is read from its codes and scales before the update and stored back after it
/// (`m' = read(m_codes, m_scale)`, ..., then each block's new absmax and code); with
/// stochastic rounding (stochastic_rounding.h) the weight is the bf16 parameter in f32 (or
/// its master) and the parameter is written from it rounded stochastically.
///
/// A global reduction (the norm, the computed found_inf) makes the step two phases
/// (segmenter/phases.h): phase 1 reads every grad once for the reductions, phase 2 is the
/// update reading their results; the total norm is the fusion's one plain output.
///
/// Where this differs from torch's order of operations (values are otherwise torch's):
/// - copy_ is deferred to the end; every read sees the entry value or the new SSA value the
///   in-place op in torch would have produced, so the values are the same.
/// - The bias corrections, the step size and the AdamW factor (1 - lr * wd) are always
///   computed in f64 from the f32 step and lr, as the non-capturable path does with Python
///   floats (`_get_value(step)`). torch's capturable path computes them as f32 tensors and
///   folds the step size into the denominator:
///   `denom = (sqrt(v) / (bc2Sqrt * -stepSize)) + eps / -stepSize; p.addcdiv_(m, denom)`;
///   we keep the non-capturable formula in both modes (a capturable lr only changes where lr
///   comes from: a 0-d f32 tensor, widened exactly to f64).
/// - Scalars (1 - beta1, beta2, 1 - beta2, wd, eps, bc2Sqrt, -stepSize) are converted to the
///   tensor op's compute type at the op that uses them, as PyTorch converts a Python number;
///   the L2 term is `grad + (wd * p)` with the product rounded (torch computes
///   `a + alpha * b` in one kernel; with float CUDA or a vectorized CPU path that may be one
///   fma).
/// - addcdiv is `p + (value * m) / denom`, the association of torch's CPU kernel; torch's
///   CUDA kernel computes `p + value * (m / denom)`.
/// - grad_scale: the gradient is divided by it (as torch's fused kernels do) but the unscaled
///   gradient is not written back: gradients are read-only inputs here.
/// - found_inf: any nonzero (or NaN) value skips the step, where torch's fused kernels test
///   `found_inf == 1` and undo the step increment by subtracting found_inf. Computed in the
///   step (computeFoundInf), it is 1.0 or 0.0 and overwrites the entry value, which is not
///   read (GradScaler hands the step a zeroed tensor), and the non-finite check is of
///   g / grad_scale divided as above (torch's unscale multiplies by the reciprocal).
/// - The clip coefficient is `max_grad_norm / (total + 1e-6)`, a division, where torch's
///   `float / tensor` is `tensor.reciprocal() * float`; the norm sums in one reduction tree
///   (docs/reductions.md §3), torch per parameter first.
/// - Adam's L2 decay follows torch's `if weight_decay != 0`: a group with weight decay 0 has
///   no decay op, so groups with zero and nonzero L2 weight decay form two signature classes
///   (two batched kernels).

#include "tools/workloads/param_remainders.h"
#include "tools/workloads/quantized_state.h"
#include "tools/workloads/seed_adam.h"

#include "ir/fusion.h"
#include "ir/fusion_definition.h"

#include <llvm/ADT/StringRef.h>

#include <memory>
#include <optional>
#include <vector>

namespace widefuse::optim {

/// How weight decay is applied: Adam adds wd * param to the gradient, AdamW decays the
/// parameter itself.
enum class WeightDecayKind {
  L2,        ///< torch.optim.Adam
  Decoupled, ///< torch.optim.AdamW
};

/// One param group's hyperparameters (torch's defaults; AdamW's default weight decay is 0.01,
/// set it explicitly).
struct AdamHyperparameters {
  /// The learning rate, betas, eps and (AdamW's) weight decay: the values of the group's
  /// runtime inputs (AdamInput::value, what a run gives them); Adam's L2 weight decay is a
  /// constant of the fusion.
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0;
};

/// A param group: the shapes of its parameters and their hyperparameters.
struct AdamGroup {
  std::vector<Shape> shapes;
  AdamHyperparameters hyper;
};

/// Where the optimizer's truth about a low-precision parameter lives.
enum class MasterWeights {
  /// The parameter itself: each update is computed in f32 and rounded to the parameter's
  /// dtype (torch's behaviour for bf16/f16 parameters).
  None,
  /// An f32 master tensor per parameter (`master{i}`) is updated; the parameter receives its
  /// value rounded to nearest even.
  Fp32,
  /// TransformerEngine's / Apex's `store_param_remainders`: no master tensor; the f32 master
  /// is the bf16 parameter (its high half, rounded) and an int16 remainder (`remainder{i}`,
  /// its low half), rebuilt and split again inside the kernel (see reconstructMaster).
  /// bf16 parameters only.
  Remainders,
};

/// The name used by the CLI and the reports: "none", "fp32" or "remainders".
llvm::StringRef masterWeightsName(MasterWeights masterWeights);

/// Options of one Adam / AdamW step over one or more param groups.
struct AdamConfig {
  /// One or more param groups; parameters are numbered across groups in order.
  std::vector<AdamGroup> groups;
  /// Adam: L2, AdamW: Decoupled.
  WeightDecayKind decay = WeightDecayKind::L2;
  bool amsgrad = false;
  bool maximize = false;
  /// lr of each group as a 0-d f32 tensor input instead of a runtime f64 scalar.
  bool capturable = false;
  /// Optional 0-d f32 tensors shared by all parameters: `grad_scale` divides every grad;
  /// `found_inf` != 0 skips the step.
  bool gradScale = false;
  bool foundInf = false;
  /// Clip the grads by their total norm over every parameter (all groups) before the update,
  /// as torch.nn.utils.clip_grad_norm_(params, max_grad_norm, normType) would: a constant of
  /// the fusion (as in widefuse.optim, where it is part of the trace key), validated here
  /// (finite, >= 0). The total norm is the fusion's plain output.
  std::optional<double> maxGradNorm;
  /// The clip's norm: 2 or infinity (the largest |grad|).
  double normType = 2;
  /// The step computes `found_inf` itself in phase 1, as GradScaler's inf check would: any
  /// non-finite grad (after grad_scale) over every grad writes 1.0 to the 0-d f32 input
  /// `found_inf` (else 0.0) and skips the update. Implies the `found_inf` input.
  bool computeFoundInf = false;
  /// Type of the parameters (a floating-point type); also of the grads and the state unless
  /// gradDtype / stateDtype say otherwise.
  DataType dtype = DataType::Float;
  /// Type of the grads: the parameters' (unset) or f32.
  std::optional<DataType> gradDtype;
  /// Type of exp_avg, exp_avg_sq and max_exp_avg_sq: f32, bf16 or the parameters' dtype.
  /// Unset: f32 with master weights, else the parameters' dtype (torch's zeros_like).
  std::optional<DataType> stateDtype;
  /// None, an f32 master per parameter, or TE's int16 remainders (bf16 parameters).
  MasterWeights masterWeights = MasterWeights::None;
  /// exp_avg, exp_avg_sq and max_exp_avg_sq block-quantized (codes and scales) for every
  /// parameter torchao's rule quantizes (quantizesParameter); the others keep the state dtype.
  std::optional<StateFormat> stateFormat;
  /// bf16 parameters only, master weights none or fp32: the update is computed in f32 and
  /// written to the parameter rounded stochastically, from each parameter's 0-d i64 seed.
  bool stochasticRound = false;
};

/// The grads' dtype of a config (gradDtype, else the parameters').
DataType adamGradDtype(const AdamConfig& config);
/// The state's dtype of a config (stateDtype, else f32 with master weights, else the
/// parameters').
DataType adamStateDtype(const AdamConfig& config);

/// What a fusion input of an Adam step is.
enum class AdamRole {
  Param,        ///< `p{i}`, updated
  Master,       ///< `master{i}`, f32 (MasterWeights::Fp32 only), updated
  Remainder,    ///< `remainder{i}`, i16 (MasterWeights::Remainders only), updated
  Grad,         ///< `g{i}`, read only
  ExpAvg,       ///< `m{i}`, updated
  ExpAvgSq,     ///< `v{i}`, updated
  MaxExpAvgSq,  ///< `vmax{i}` (amsgrad only), updated
  Step,         ///< `step{i}`, 0-d f32, updated
  RoundingSeed, ///< `seed{i}`, 0-d i64 (stochasticRound only), read only
  Lr,           ///< `lr{g}`: f64 runtime scalar, or 0-d f32 tensor when capturable
  Beta1,        ///< `beta1_{g}`, f64 runtime scalar
  Beta2,        ///< `beta2_{g}`, f64 runtime scalar
  Eps,          ///< `eps{g}`, f64 runtime scalar
  WeightDecay,  ///< `weight_decay{g}`, f64 runtime scalar (Decoupled only: L2's is a constant)
  GradScale,    ///< `grad_scale`, 0-d f32 (gradScale only)
  FoundInf,     ///< `found_inf`, 0-d f32 (foundInf or computeFoundInf; written by the latter)
};

/// The role's name as in torch's state and param groups ("param", "master_param",
/// "param_remainder", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step",
/// "rounding_seed", "lr", "beta1", "beta2", "eps", "weight_decay", "grad_scale", "found_inf").
llvm::StringRef adamRoleName(AdamRole role);

/// Which tensor of a moment an input is: the moment itself, or its codes or scales.
enum class StatePart { Value, Codes, Scale };

/// One fusion input: its role and whose it is.
struct AdamInput {
  AdamRole role;
  /// The param group (0 for grad_scale and found_inf).
  unsigned group = 0;
  /// Index of the parameter within its group (0 for the group's hyperparameters, grad_scale
  /// and found_inf).
  unsigned param = 0;
  /// Index of the parameter across all groups, the `i` of its names (0 for the group's
  /// hyperparameters, grad_scale and found_inf).
  unsigned index = 0;
  /// A hyperparameter's value in the config (lr, beta1, beta2, eps, weight decay): what a run
  /// gives the input unless it changes it (0 for the other roles).
  double value = 0;
  /// A quantized moment's codes or scales (Value for everything else).
  StatePart part = StatePart::Value;
};

/// The input's key in torch's state and param groups: adamRoleName, with `_codes` or
/// `_scale` for a quantized moment's tensors ("exp_avg_codes").
std::string adamStateKey(const AdamInput& input);

/// An Adam step and the roles of its inputs, in the order of Fusion::inputs().
struct AdamFusion {
  std::unique_ptr<Fusion> fusion;
  std::vector<AdamInput> inputs;
  /// The position of the total grad norm (0-d, the grads' dtype) among the fusion's plain
  /// outputs: set with maxGradNorm, the only output.
  std::optional<unsigned> gradNormOutput;
};

/// The optimizer state of a step: every state input (masters, remainders, moments or their
/// codes and scales, step counters, seeds) in bytes, and per parameter element (the 0-d
/// inputs left out).
struct AdamStateBytes {
  int64_t total = 0;
  double perElement = 0;
};
AdamStateBytes adamStateBytes(const AdamFusion& adam);

/// Checks a config as torch's constructor does; throws Error naming the bad value and group
/// (no groups, an empty group, lr or eps < 0, a beta outside [0, 1), weight decay < 0, a
/// non-floating dtype), and the dtypes: grads of the parameters' dtype or f32; state f32,
/// bf16 or the parameters' dtype; master weights only for bf16/f16 parameters, remainders
/// only for bf16; a max_grad_norm that is not finite and >= 0, a norm type other than 2 or
/// infinity; a state format's block (validateStateFormat); stochastic rounding of
/// parameters other than bf16 or beside remainders.
void validateAdamConfig(const AdamConfig& config);

/// Builds one Adam / AdamW step (see the file comment for the formula). Inputs, in order: per
/// parameter i `p{i}`, [`master{i}` | `remainder{i}`], `g{i}`, `m{i}`, `v{i}`, [`vmax{i}`]
/// (quantized: `m{i}_codes`, `m{i}_scale`, ...), `step{i}`, [`seed{i}`]; then per group `lr{g}`,
/// `beta1_{g}`, `beta2_{g}`, `eps{g}` and (AdamW) `weight_decay{g}`; then [`grad_scale`],
/// [`found_inf`]. With maxGradNorm or computeFoundInf the fusion runs in two phases. Throws Error
/// for a bad config (validateAdamConfig).
AdamFusion buildAdam(const AdamConfig& config);

} // namespace widefuse::optim
