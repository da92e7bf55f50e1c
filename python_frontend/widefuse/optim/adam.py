"""``Adam`` and ``AdamW``: drop-in replacements for ``torch.optim.Adam`` / ``AdamW`` (the same
constructor arguments, defaults, param groups and state_dict layout) whose step is one
widefuse launch for every parameter.

The update is torch's Adam as its capturable and fused forms compute it: the step count is a
float32 tensor on the parameter's device, incremented by the kernel, and the bias corrections
are computed from it on the device, so a step never synchronizes with the host.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from .._widefuse import Error
from .pointwise_optimizer import PointwiseOptimizer


class Adam(PointwiseOptimizer):
    """torch.optim.Adam's algorithm and interface; `foreach` and `fused` are accepted and
    ignored (every step is one fused launch), `differentiable=True` is refused."""

    def __init__(self, params: Any, lr: Any = 1e-3, betas: Any = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: Any = None, decoupled_weight_decay: bool = False,
                 mode: str = "packed", threads: Optional[int] = None) -> None:
        _check_arguments(lr, betas, eps, weight_decay, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults, mode=mode, threads=threads)

    def init_state(self, param: torch.Tensor, *, amsgrad: bool, **_: Any) -> dict:
        state = {
            "step": torch.zeros((), dtype=torch.float32, device=param.device),
            "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
            "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
        }
        if amsgrad:
            state["max_exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
        return state

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, betas: Any, eps: Any,
               weight_decay: Any, amsgrad: bool, maximize: bool, decoupled_weight_decay: bool,
               **_: Any) -> None:
        beta1, beta2 = betas
        if maximize:
            grad = -grad
        step = state["step"]
        step.add_(1)
        if decoupled_weight_decay:
            # Unconditional (x * 1 is x, bit for bit), so that groups with and without weight
            # decay share one kernel body and the weight decay stays a runtime scalar.
            param.mul_(1 - lr * weight_decay)
        elif weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = (1 - beta2**step).sqrt()
        if amsgrad:
            max_exp_avg_sq = state["max_exp_avg_sq"]
            torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            second_moment = max_exp_avg_sq
        else:
            second_moment = exp_avg_sq
        denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-(lr / bias_correction1))


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2)."""

    def __init__(self, params: Any, lr: Any = 1e-3, betas: Any = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Any = None, capturable: bool = False, differentiable: bool = False,
                 fused: Any = None, mode: str = "packed",
                 threads: Optional[int] = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True, mode=mode, threads=threads)


def _check_arguments(lr: Any, betas: Any, eps: Any, weight_decay: Any,
                     differentiable: bool) -> None:
    """torch's argument checks, as widefuse.Error (a RuntimeError; torch raises ValueError)."""
    if differentiable:
        raise Error("differentiable=True is not supported: a widefuse step records no autograd "
                    "graph")
    if isinstance(lr, torch.Tensor) and lr.numel() != 1:
        raise Error("Tensor lr must be 1-element")
    if not 0.0 <= float(lr):
        raise Error(f"Invalid learning rate: {float(lr)}")
    if not 0.0 <= eps:
        raise Error(f"Invalid epsilon value: {eps}")
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise Error(f"betas must be a pair of numbers, got {betas!r}")
    for i, beta in enumerate(betas):
        if not 0.0 <= float(beta) < 1.0:
            raise Error(f"Invalid beta parameter at index {i}: {float(beta)}")
    if not 0.0 <= weight_decay:
        raise Error(f"Invalid weight_decay value: {weight_decay}")
