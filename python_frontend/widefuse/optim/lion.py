"""``Lion`` (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): the sign of
an interpolated momentum, with decoupled weight decay. Not in torch; written on
PointwiseOptimizer in a dozen lines, as a user would write their own optimizer."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .arguments import check_betas, check_lr, check_not_negative
from .pointwise_optimizer import PointwiseOptimizer


class Lion(PointwiseOptimizer):
    """update = sign(beta1 m + (1 - beta1) g); p -= lr (update + weight_decay p);
    m = beta2 m + (1 - beta2) g. State: ``exp_avg`` (m)."""

    def __init__(self, params: Any, lr: Any = 1e-4, betas: Any = (0.9, 0.99),
                 weight_decay: float = 0.0, *, maximize: bool = False,
                 mode: str = "packed", threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = None, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False, state_format: Optional[str] = None,
                 block_size: Optional[int] = None) -> None:
        check_lr(lr)
        check_betas(betas)
        check_not_negative("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay,
                                      maximize=maximize),
                         mode=mode, threads=threads,
                         max_grad_norm=max_grad_norm, norm_type=norm_type,
                         error_if_nonfinite=error_if_nonfinite, state_format=state_format,
                         block_size=block_size)

    def init_state(self, param: torch.Tensor) -> dict:
        return {"exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format)}

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, betas: Any,
               weight_decay: Any, maximize: bool) -> None:
        beta1, beta2 = betas
        if maximize:
            grad = -grad
        exp_avg = state["exp_avg"]
        param.mul_(1 - lr * weight_decay)
        param.add_(torch.sign(exp_avg.lerp(grad, 1 - beta1)), alpha=-lr)
        exp_avg.lerp_(grad, 1 - beta2)
