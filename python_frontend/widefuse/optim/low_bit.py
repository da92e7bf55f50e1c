"""``Adam8bit``, ``AdamW8bit``, ``Adam4bit``, ``AdamW4bit``, ``AdamFp8``, ``AdamWFp8``: the names
and arguments of torchao's low-bit optimizers (``torchao.optim``), with the rest of widefuse's
``Adam``/``AdamW`` (``max_grad_norm``, master weights, GradScaler). The moments are block-quantized as torchao
keeps them (state_formats.py) and the step is still one launch for every parameter.

The update is torchao's, op for op (``torchao/optim/adam.py``, ``single_param_adam``): in
float32, weight decay ``p - lr * wd * p``, both moments by lerp, float32 bias corrections,
``p - lr * (m / bc1) / (sqrt(v) / sqrt(bc2) + eps)``. So a code rounds as torchao rounds it,
and results follow torchao's, not torch.optim.AdamW's (which differs in rounding). Adam with
``state_format`` is torch's Adam on quantized moments.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ..data_type import DataType
from .adam import Adam, begin_step, write_weight
from .master_weights import stochastic_bf16
from .random_bits import new_seed, random_16_bits

# The state key of a bf16 parameter's seed for stochastic rounding (random_bits.py).
ROUNDING_SEED = "rounding_seed"


def _f32(value: Any) -> Any:
    """A hyperparameter as torchao holds it: a float32 number (its lr is a float32 tensor)."""
    if hasattr(value, "definition"):
        return value.definition.apply_op("cast", (value,), dtype=DataType.Float)
    return value


class _TorchaoAdam(Adam):
    """Adam with torchao's update and quantized moments; the classes below name the format."""

    _format = "int8"
    _decoupled = False

    def __init__(self, params: Any, lr: Any = 1e-3, betas: Any = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: Optional[float] = None,
                 amsgrad: bool = False, *, block_size: Optional[int] = None,
                 bf16_stochastic_round: bool = False, **options: Any) -> None:
        if bf16_stochastic_round:
            _check_rounding_beside_masters(options)
        self.bf16_stochastic_round = bool(bf16_stochastic_round)
        if weight_decay is None:
            weight_decay = 1e-2 if self._decoupled else 0.0
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad,
                         decoupled_weight_decay=self._decoupled, state_format=self._format,
                         block_size=block_size, **options)

    def init_state(self, param: torch.Tensor, **hyperparameters: Any) -> dict:
        state = super().init_state(param, **hyperparameters)
        self._fit_rounding_seed(param, state)
        return state

    def check_state(self, param: Any, state: dict, **hyperparameters: Any) -> None:
        super().check_state(param, state, **hyperparameters)
        self._fit_rounding_seed(param, state)

    def state_dtype_for(self, key: str, param: torch.Tensor, group: dict) -> Optional[torch.dtype]:
        if key == ROUNDING_SEED:  # torch's load_state_dict casts it to the parameter's dtype
            return torch.int64
        return super().state_dtype_for(key, param, group)

    def _fit_rounding_seed(self, param: Any, state: dict) -> None:
        """A bf16 parameter rounds stochastically when the optimizer says so: its state then
        holds its seed (drawn now where a checkpoint has none), and otherwise holds none."""
        if self.bf16_stochastic_round and param.dtype == torch.bfloat16:
            if ROUNDING_SEED not in state:
                state[ROUNDING_SEED] = new_seed()
        else:
            state.pop(ROUNDING_SEED, None)

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, betas: Any, eps: Any,
               weight_decay: Any, amsgrad: bool, maximize: bool, decoupled_weight_decay: bool,
               **_: Any) -> None:
        beta1, beta2 = betas
        grad, step, weight = begin_step(param, grad, state, maximize)
        p, g = weight.float(), grad.float()
        lr = _f32(lr)
        if decoupled_weight_decay:
            p = p - lr * _f32(weight_decay) * p
        else:
            g = g + _f32(weight_decay) * p
        steps = step.float()
        bias_correction1 = 1 - _f32(beta1) ** steps
        bias_correction2 = 1 - _f32(beta2) ** steps
        exp_avg = state["exp_avg"].float().lerp(g, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"].float().lerp(g.square(), 1 - beta2)
        state["exp_avg"].copy_(exp_avg)
        state["exp_avg_sq"].copy_(exp_avg_sq)
        second_moment = exp_avg_sq
        if amsgrad:
            second_moment = torch.maximum(state["max_exp_avg_sq"].float(), exp_avg_sq)
            state["max_exp_avg_sq"].copy_(second_moment)
        denom = second_moment.sqrt() / bias_correction2.sqrt() + eps
        p = p - lr * (exp_avg / bias_correction1) / denom
        if ROUNDING_SEED not in state:
            weight.copy_(p)
            write_weight(param, state, weight)
            return
        # torchao's _fp32_to_bf16_sr, its random bits from the counter-based generator; a
        # float32 master keeps the value itself.
        if weight is not param:
            weight.copy_(p)
        param.copy_(stochastic_bf16(p, random_16_bits(p, state[ROUNDING_SEED], step)))


def _check_rounding_beside_masters(options: dict) -> None:
    """Stochastic rounding writes the parameter from the float32 value; a master kept beside
    the parameter (remainder, correction) needs the parameter rounded to nearest."""
    if options.get("store_param_remainders"):
        raise ValueError("bf16_stochastic_round=True rounds the bf16 parameter written from a "
                         "float32 value; store_param_remainders=True keeps that value exactly, "
                         "so there is nothing to round")
    if options.get("master_weight_bits") == 24:
        raise ValueError("bf16_stochastic_round=True rounds the bf16 parameter written from a "
                         "float32 value; master_weight_bits=24 keeps that value in the "
                         "parameter rounded to nearest and a correction, so there is nothing "
                         "to round")


class Adam8bit(_TorchaoAdam):
    """torchao.optim.Adam8bit: moments in 8-bit codes of the dynamic maps (signed for
    ``exp_avg``, unsigned for ``exp_avg_sq``), one float32 absmax per block of `block_size`
    (default 256)."""


class AdamW8bit(_TorchaoAdam):
    """torchao.optim.AdamW8bit (bitsandbytes.optim.AdamW8bit's format too): decoupled weight
    decay (default 1e-2) and 8-bit moments."""

    _decoupled = True


class Adam4bit(_TorchaoAdam):
    """torchao.optim.Adam4bit: moments in 4-bit codes, two per byte (the even element's in
    the high nibble) of ``dynamic4_signed`` for ``exp_avg`` and the zero-free linear map
    ``linear4_unsigned`` for ``exp_avg_sq``, one float32 absmax per block of `block_size`
    (default 128)."""

    _format = "int4"


class AdamW4bit(_TorchaoAdam):
    """torchao.optim.AdamW4bit: decoupled weight decay (default 1e-2) and 4-bit moments."""

    _format = "int4"
    _decoupled = True


class AdamFp8(_TorchaoAdam):
    """torchao.optim.AdamFp8: moments in float8_e4m3fn, scaled per block of `block_size`
    (default 256) by the block's absmax / 448."""

    _format = "fp8"


class AdamWFp8(_TorchaoAdam):
    """torchao.optim.AdamWFp8: decoupled weight decay and float8_e4m3fn moments."""

    _format = "fp8"
    _decoupled = True
