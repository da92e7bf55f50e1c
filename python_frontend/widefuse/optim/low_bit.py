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


def _f32(value: Any) -> Any:
    """A hyperparameter as torchao holds it: a float32 number (its lr is a float32 tensor)."""
    if hasattr(value, "definition"):
        return value.definition.apply_op("cast", (value,), dtype=DataType.Float)
    return value


def _inductor_lerp(start: Any, end: Any, weight: Any) -> Any:
    """lerp as torchao's compiled step rounds it on the CPU: Inductor's decomposition,
    ``(weight - 1 or weight) * (end - start) + (end or start)``, compiled without contraction
    (two roundings), which is the IR's own lerp; not torch's eager lerp (one fused rounding,
    Tensor.lerp here)."""
    return start.definition.apply_op("lerp", (start, end, weight))


class _TorchaoAdam(Adam):
    """Adam with torchao's update and quantized moments; the classes below name the format."""

    _format = "int8"
    _decoupled = False

    def __init__(self, params: Any, lr: Any = 1e-3, betas: Any = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: Optional[float] = None,
                 amsgrad: bool = False, *, block_size: Optional[int] = None,
                 bf16_stochastic_round: bool = False, **options: Any) -> None:
        if weight_decay is None:
            weight_decay = 1e-2 if self._decoupled else 0.0
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad,
                         decoupled_weight_decay=self._decoupled, state_format=self._format,
                         block_size=block_size, bf16_stochastic_round=bf16_stochastic_round,
                         **options)

    def __setstate__(self, state: dict) -> None:
        """torch's __setstate__ (also the end of load_state_dict): the weight decay is the
        class's (decoupled for the AdamW forms, L2 for the Adam forms), as torch's
        AdamW.__setstate__ forces it: torchao's groups do not say, and an older torch
        checkpoint's lack the key that would."""
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = self._decoupled

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
        exp_avg = _inductor_lerp(state["exp_avg"].float(), g, 1 - beta1)
        exp_avg_sq = _inductor_lerp(state["exp_avg_sq"].float(), g.square(), 1 - beta2)
        state["exp_avg"].copy_(exp_avg)
        state["exp_avg_sq"].copy_(exp_avg_sq)
        second_moment = exp_avg_sq
        if amsgrad:
            second_moment = torch.maximum(state["max_exp_avg_sq"].float(), exp_avg_sq)
            state["max_exp_avg_sq"].copy_(second_moment)
        denom = second_moment.sqrt() / bias_correction2.sqrt() + eps
        p = p - lr * (exp_avg / bias_correction1) / denom
        weight.copy_(p)
        write_weight(param, state, weight, step)


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
