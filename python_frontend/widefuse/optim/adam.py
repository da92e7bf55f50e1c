"""``Adam`` and ``AdamW``: drop-in replacements for ``torch.optim.Adam`` / ``AdamW`` (the same
constructor arguments, defaults, param groups and state_dict layout) whose step is one
widefuse launch for every parameter.

The update is torch's Adam: the step count is a float32 tensor on the parameter's device,
incremented by the kernel (as in torch's capturable and fused forms), and the bias corrections
are computed from it on the device in float64 (as torch's default form computes them with
Python floats), so a step never synchronizes with the host.

For bf16/f16 parameters, widefuse options (param-group options, like torch's) choose where
the optimizer's truth lives: in the parameter (torch's behaviour), in a float32
``master_param`` per parameter (``master_weights=True``), in the bf16 parameter plus an int16
``param_remainder`` (``store_param_remainders=True``, TransformerEngine's layout) or in the
parameter plus an int8 ``param_correction`` (``master_weight_bits=24``, flashoptim's 24-bit
masters); and ``state_dtype`` the dtype of ``exp_avg``/``exp_avg_sq``.
``bf16_stochastic_round=True`` (torchao's argument) computes a bf16 parameter's update in
float32 and rounds it into the parameter stochastically (master_weights.py, random_bits.py).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from .._widefuse import Error
from .arguments import (InvalidArgument, check_betas, check_lr, check_not_negative,
                        refuse_differentiable, refuse_fused_with_foreach)
from .master_weights import (narrow, opmath, rebuild_corrected, rebuild_master, rounded,
                             scalar_as, split_corrected, split_master, stochastic_bf16)
from .pointwise_optimizer import PointwiseOptimizer
from .random_bits import new_seed, random_16_bits
from .step_fusion import step_dtype

_STATE_DTYPES = (torch.float32, torch.bfloat16)
_MOMENTS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
# widefuse's param-group options of where a parameter's value lives and how it is written.
_MASTER_OPTIONS = ("master_weights", "store_param_remainders", "master_weight_bits",
                   "state_dtype", "bf16_stochastic_round")
# The state key of a bf16 parameter's seed for stochastic rounding (random_bits.py).
ROUNDING_SEED = "rounding_seed"

# Where a master kind keeps the float32 master beside the parameter: its state key, dtype and
# what the dtype is for (in the error that refuses another).
_MASTER_STATE = {
    "fp32": ("master_param", torch.float32,
             "a master weight must be torch.float32 (a float16 master would lose what the "
             "master keeps)"),
    "remainders": ("param_remainder", torch.int16,
                   "the remainder of a bfloat16 parameter is torch.int16 (the master's low 16 "
                   "bits)"),
    "correction": ("param_correction", torch.int8,
                   "the correction of a 24-bit master is torch.int8 (127ths of half the "
                   "parameter's ulp)"),
}


class Adam(PointwiseOptimizer):
    """torch.optim.Adam's algorithm and interface; `foreach` and `fused` are accepted and
    ignored (every step is one fused launch), `differentiable=True` is refused.

    `master_weights`: keep a float32 master (state ``master_param``) of each bf16/f16
    parameter; the step updates the master and rounds it into the parameter.
    `store_param_remainders` (with `master_weights`, bf16 parameters): keep the master as the
    parameter and an int16 ``param_remainder`` instead, half the master's memory, exactly.
    `master_weight_bits=24` (with `master_weights`, bf16/f16 parameters): keep the master as
    the parameter and an int8 ``param_correction`` (flashoptim's 24-bit masters), a quarter of
    the master's memory, within 1/254 of the parameter's ulp.
    `state_dtype`: torch.float32 or torch.bfloat16 for ``exp_avg``, ``exp_avg_sq`` and
    ``max_exp_avg_sq`` (default: float32 with master weights, else the parameter's dtype).
    `state_format` ("int8", "int4", "fp8") and `block_size`: the moments block-quantized as
    torchao keeps them (PointwiseOptimizer); Adam8bit and friends (low_bit.py) set them.
    `bf16_stochastic_round` (torchao's; a param-group option): a bf16 parameter's update is
    computed in float32 (from its float32 master, if any) and written rounded stochastically;
    its state keeps the seed of the random bits (``rounding_seed``).
    """

    def __init__(self, params: Any, lr: Any = 1e-3, betas: Any = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: Any = None, decoupled_weight_decay: bool = False,
                 master_weights: bool = False, store_param_remainders: bool = False,
                 master_weight_bits: Optional[int] = None,
                 state_dtype: Optional[torch.dtype] = None,
                 mode: str = "packed", threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = None, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False, state_format: Optional[str] = None,
                 block_size: Optional[int] = None, bf16_stochastic_round: bool = False) -> None:
        _check_arguments(lr, betas, eps, weight_decay, differentiable, foreach, capturable)
        refuse_fused_with_foreach(fused, foreach)
        _check_master_options(master_weights, store_param_remainders, master_weight_bits,
                              state_dtype, bf16_stochastic_round)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay,
                        master_weights=master_weights,
                        store_param_remainders=store_param_remainders,
                        master_weight_bits=master_weight_bits, state_dtype=state_dtype,
                        bf16_stochastic_round=bool(bf16_stochastic_round))
        super().__init__(params, defaults, mode=mode, threads=threads,
                         max_grad_norm=max_grad_norm, norm_type=norm_type,
                         error_if_nonfinite=error_if_nonfinite, state_format=state_format,
                         block_size=block_size)

    # What torch's Adam.__setstate__ gives a group of an older checkpoint that lacks them.
    _old_checkpoint_defaults = dict(amsgrad=False, maximize=False, foreach=None,
                                    capturable=False, differentiable=False,
                                    decoupled_weight_decay=False, fused=None)

    def __setstate__(self, state: dict) -> None:
        # A checkpoint of torch's Adam has no widefuse options: the constructor's apply.
        super().__setstate__(state)
        defaults = getattr(self, "defaults", {})
        for group in self.param_groups:
            for name in _MASTER_OPTIONS:
                group.setdefault(name, defaults.get(name, _option_default(name)))

    # The state bitsandbytes' Adam keeps as state1 and state2 (checkpoint.py reads it).
    _bitsandbytes_state = ("exp_avg", "exp_avg_sq")

    def add_param_group(self, param_group: dict) -> None:
        # The group's options as they will be: its own, else the constructor's.
        defaults = getattr(self, "defaults", {})
        _check_master_options(*(param_group.get(name, defaults.get(name, _option_default(name)))
                                for name in _MASTER_OPTIONS))
        super().add_param_group(param_group)

    def init_state(self, param: torch.Tensor, *, amsgrad: bool, state_dtype: Any,
                   **options: Any) -> dict:
        kind = _master_kind(param.dtype, options)
        dtype = _moment_dtype(param.dtype, kind, state_dtype)
        zeros = lambda: torch.zeros_like(param, dtype=dtype, memory_format=torch.preserve_format)
        state = {"step": torch.zeros((), dtype=step_dtype(), device=param.device),
                 "exp_avg": zeros(), "exp_avg_sq": zeros()}
        if amsgrad:
            state["max_exp_avg_sq"] = zeros()
        state.update(_new_master(param, kind))
        _fit_rounding_seed(param, state, options.get("bf16_stochastic_round", False))
        return state

    def check_state(self, param: Any, state: dict, **options: Any) -> None:
        """The master, remainder or correction and the moments a parameter's state must have
        for its group's options: raises Error for a wrong dtype, shape or combination; adds a
        missing master (the parameter's value), remainder or correction (zero: the master is
        the parameter)."""
        kind = _master_kind(param.dtype, options)
        _fit_rounding_seed(param, state, options.get("bf16_stochastic_round", False))
        for key in _MOMENTS:
            value = state.get(key)
            if value is not None and not value.dtype.is_floating_point and \
                    not (value.dtype == param.dtype and param.is_complex()):
                raise Error(f"state '{key}' is {value.dtype}; the optimizer state must have a "
                            "floating-point dtype (torch.float32 or torch.bfloat16)")
        for other, (key, _, _) in _MASTER_STATE.items():
            if other != kind and key in state:
                raise Error(f"the state has a '{key}' but the group has {_kind_options(kind)}"
                            "; load a checkpoint made with the same options")
        if kind == "none":
            return
        key, dtype, why = _MASTER_STATE[kind]
        master = state.get(key)
        if master is None:
            state.update(_new_master(param, kind))
        elif master.dtype != dtype:
            raise Error(f"its {key} is {master.dtype}; {why}")
        elif master.shape != param.shape:
            raise Error(f"its {key} has shape {list(master.shape)}; the parameter has shape "
                        f"{list(param.shape)}")

    def state_dtype_for(self, key: str, param: torch.Tensor, group: dict) -> Optional[torch.dtype]:
        if key == ROUNDING_SEED:  # torch's load_state_dict casts it to the parameter's dtype
            return torch.int64
        kind = _master_kind(param.dtype, group)
        for master_key, dtype, _ in _MASTER_STATE.values():
            if key == master_key:
                return dtype
        if key in _MOMENTS:
            return _moment_dtype(param.dtype, kind, group.get("state_dtype"))
        return None

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, betas: Any, eps: Any,
               weight_decay: Any, amsgrad: bool, maximize: bool, decoupled_weight_decay: bool,
               **_: Any) -> None:
        # Every line is one torch op: computed in float32 for bf16/f16 operands (opmath) and
        # rounded once to the dtype of the tensor it writes, as torch's kernels do (lerp_,
        # addcmul_ and add's alpha fused as torch's kernels fuse them: torch_arithmetic.py).
        beta1, beta2 = betas
        grad, step, weight = begin_step(param, grad, state, maximize)
        if decoupled_weight_decay:
            # Unconditional (x * 1 is x, bit for bit), so that groups with and without weight
            # decay share one kernel body and the weight decay stays a runtime scalar.
            weight.mul_(1 - lr * weight_decay)
        elif weight_decay != 0:
            grad = grad.add(weight, alpha=weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_value = step.double()
        bias_correction1 = 1 - beta1**step_value
        bias_correction2_sqrt = (1 - beta2**step_value).sqrt()
        if amsgrad:
            max_exp_avg_sq = state["max_exp_avg_sq"]
            torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            second_moment = max_exp_avg_sq
        else:
            second_moment = exp_avg_sq
        denom = second_moment.sqrt() / bias_correction2_sqrt
        denom.add_(scalar_as(eps, denom.dtype) if narrow(denom) else eps)
        # weight.addcdiv_(exp_avg, denom, value=-step_size)
        step_size = -(lr / bias_correction1)
        weight.copy_(opmath(weight) + step_size * opmath(exp_avg) / opmath(denom))
        write_weight(param, state, weight, step)


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2)."""

    def __init__(self, params: Any, lr: Any = 1e-3, betas: Any = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Any = None, capturable: bool = False, differentiable: bool = False,
                 fused: Any = None, master_weights: bool = False,
                 store_param_remainders: bool = False, master_weight_bits: Optional[int] = None,
                 state_dtype: Optional[torch.dtype] = None,
                 mode: str = "packed", threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = None, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False, state_format: Optional[str] = None,
                 block_size: Optional[int] = None, bf16_stochastic_round: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True, master_weights=master_weights,
                         store_param_remainders=store_param_remainders,
                         master_weight_bits=master_weight_bits,
                         state_dtype=state_dtype, mode=mode, threads=threads,
                         max_grad_norm=max_grad_norm, norm_type=norm_type,
                         error_if_nonfinite=error_if_nonfinite, state_format=state_format,
                         block_size=block_size, bf16_stochastic_round=bf16_stochastic_round)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:  # as torch's AdamW.__setstate__
            group["decoupled_weight_decay"] = True


def _check_arguments(lr: Any, betas: Any, eps: Any, weight_decay: Any, differentiable: bool,
                     foreach: Any, capturable: bool) -> None:
    """torch's argument checks and messages (ValueError), in torch's order: a tensor lr or
    beta that torch's foreach path refuses is refused here too (a drop-in keeps torch's
    errors), though widefuse's step reads either."""
    tensor_refused = bool(foreach) and not capturable
    if isinstance(lr, torch.Tensor) and tensor_refused:
        raise InvalidArgument("lr as a Tensor is not supported for capturable=False and "
                              "foreach=True")
    check_lr(lr)
    check_not_negative("epsilon value", eps)
    check_betas(betas)
    check_not_negative("weight_decay value", weight_decay)
    if not (all(isinstance(beta, float) for beta in betas) or
            all(isinstance(beta, torch.Tensor) for beta in betas)):
        raise InvalidArgument("betas must be either both floats or both Tensors")
    for i, beta in enumerate(betas):
        if isinstance(beta, torch.Tensor) and tensor_refused:
            raise InvalidArgument(f"betas[{i}] as a Tensor is not supported for "
                                  "capturable=False and foreach=True")
    refuse_differentiable(differentiable, "Adam")


def begin_step(param: Any, grad: Any, state: dict, maximize: bool) -> tuple:
    """What every Adam update starts with (traced): the grad (negated to maximize), the step
    count incremented in place, and the weight it updates (weight_of)."""
    if maximize:
        grad = -grad
    step = state["step"]
    step.add_(1)
    return grad, step, weight_of(param, state)


def weight_of(param: Any, state: dict) -> Any:
    """What Adam updates (traced): the parameter, its float32 master, the master rebuilt from
    the parameter and its remainder or correction, or, rounding stochastically, the parameter
    in float32."""
    if "param_remainder" in state:
        return rebuild_master(param, state["param_remainder"])
    if "param_correction" in state:
        return rebuild_corrected(param, state["param_correction"])
    if "master_param" in state:
        return state["master_param"]
    return param.float() if ROUNDING_SEED in state else param


def write_weight(param: Any, state: dict, weight: Any, step: Any) -> None:
    """Writes the updated master back: split into the parameter and its remainder or
    correction, or into the parameter rounded to nearest even or stochastically (the master
    itself was updated in place); `step` is the new step count (the random bits' counter)."""
    if ROUNDING_SEED in state:  # torchao's _fp32_to_bf16_sr, its bits counter-based
        param.copy_(stochastic_bf16(weight, random_16_bits(weight, state[ROUNDING_SEED], step)))
        return
    if "param_remainder" in state:
        high, low = split_master(weight)
        param.copy_(high)
        state["param_remainder"].copy_(low)
    elif "param_correction" in state:
        rounded_weight, correction = split_corrected(weight, param.dtype)
        param.copy_(rounded_weight)
        state["param_correction"].copy_(correction)
    elif "master_param" in state:
        param.copy_(weight)


def _fit_rounding_seed(param: Any, state: dict, stochastic_round: bool) -> None:
    """A bf16 parameter rounds stochastically when its group says so: its state then holds
    its seed (drawn now where a checkpoint has none), and otherwise holds none."""
    if stochastic_round and param.dtype == torch.bfloat16:
        if ROUNDING_SEED not in state:
            state[ROUNDING_SEED] = new_seed()
    else:
        state.pop(ROUNDING_SEED, None)


def _option_default(name: str) -> Any:
    """What a group without the widefuse option `name` means: no master, the default state
    dtype, rounding to nearest."""
    return None if name in ("master_weight_bits", "state_dtype") else False


def _check_master_options(master_weights: Any, store_param_remainders: Any,
                          master_weight_bits: Any, state_dtype: Any,
                          stochastic_round: bool) -> None:
    if store_param_remainders and not master_weights:
        raise InvalidArgument("store_param_remainders=True keeps the float32 master weights as "
                    "remainders: it needs master_weights=True")
    if master_weight_bits not in (None, 24):
        raise InvalidArgument(f"master_weight_bits={master_weight_bits!r}: 24 keeps each master "
                              "as the parameter and an int8 correction; None keeps it whole")
    if master_weight_bits == 24 and not master_weights:
        raise InvalidArgument("master_weight_bits=24 keeps the float32 master weights in 24 "
                              "bits: it needs master_weights=True")
    if master_weight_bits == 24 and store_param_remainders:
        raise InvalidArgument("master_weight_bits=24 and store_param_remainders=True are two "
                              "ways to keep the master beside the parameter; choose one")
    if stochastic_round and store_param_remainders:
        raise InvalidArgument("bf16_stochastic_round=True rounds the bf16 parameter written "
                              "from a float32 value; store_param_remainders=True keeps that "
                              "value exactly, so there is nothing to round")
    if stochastic_round and master_weight_bits == 24:
        raise InvalidArgument("bf16_stochastic_round=True rounds the bf16 parameter written "
                              "from a float32 value; master_weight_bits=24 keeps that value in "
                              "the parameter rounded to nearest and a correction, so there is "
                              "nothing to round")
    if state_dtype is not None and state_dtype not in _STATE_DTYPES:
        raise InvalidArgument(f"state_dtype={state_dtype!r}: the optimizer state must have a "
                    "floating-point dtype, torch.float32 or torch.bfloat16 (None: float32 with "
                    "master weights, else the parameter's dtype)")


def _master_kind(dtype: torch.dtype, options: dict) -> str:
    """"none", "fp32", "remainders" or "correction" for a parameter of `dtype` in a group of
    `options`; raises Error (without the parameter's name, which the caller adds) for a dtype
    the options do not fit."""
    master_weights = options.get("master_weights", False)
    if options.get("store_param_remainders", False):
        if dtype != torch.bfloat16:
            raise Error(f"it is {dtype}, but store_param_remainders=True needs bfloat16 "
                        "parameters (the parameter is the high half of the float32 master); "
                        "give it a param group with store_param_remainders=False")
        return "remainders"
    if master_weights and options.get("master_weight_bits") == 24:
        if dtype not in (torch.bfloat16, torch.float16):
            raise Error(f"it is {dtype}, but master_weight_bits=24 is for bfloat16 and float16 "
                        "parameters (the master is the parameter and a correction); give it a "
                        "param group with master_weights=False")
        return "correction"
    if master_weights:
        if dtype not in (torch.bfloat16, torch.float16):
            raise Error(f"it is {dtype}, but master_weights=True is for bfloat16 and float16 "
                        "parameters (a float32 parameter is its own master); give it a param "
                        "group with master_weights=False")
        return "fp32"
    return "none"


def _kind_options(kind: str) -> str:
    return {"none": "master_weights=False", "fp32": "float32 master weights",
            "remainders": "store_param_remainders=True",
            "correction": "master_weight_bits=24"}[kind]


def _moment_dtype(param_dtype: torch.dtype, kind: str, state_dtype: Any) -> torch.dtype:
    if state_dtype is not None:
        return state_dtype
    return param_dtype if kind == "none" else torch.float32


def _new_master(param: torch.Tensor, kind: str) -> dict:
    """The master state of a parameter that has none yet: its value as a float32 master, or a
    zero remainder or correction (the master is then the parameter exactly: TE fixed NaNs that
    uninitialised remainders caused)."""
    if kind == "fp32":
        return {"master_param": param.detach().to(torch.float32, copy=True,
                                                  memory_format=torch.preserve_format)}
    if kind == "none":
        return {}
    key, dtype, _ = _MASTER_STATE[kind]
    return {key: torch.zeros_like(param, dtype=dtype, memory_format=torch.preserve_format)}
