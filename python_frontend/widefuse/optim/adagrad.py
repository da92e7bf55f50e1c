"""``Adagrad``: torch.optim.Adagrad (learning-rate decay, weight decay, initial accumulator,
maximize) on PointwiseOptimizer, in torch's single-tensor style; dense grads only."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .._widefuse import Error
from .pointwise_optimizer import PointwiseOptimizer


class Adagrad(PointwiseOptimizer):
    """torch.optim.Adagrad's algorithm, arguments and state (``step``, ``sum``)."""

    def __init__(self, params: Any, lr: Any = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: Any = None,
                 *, maximize: bool = False, differentiable: bool = False, fused: Any = None,
                 mode: str = "packed", threads: Optional[int] = None) -> None:
        if differentiable:
            raise Error("differentiable=True is not supported")
        if (float(lr) < 0.0 or lr_decay < 0.0 or weight_decay < 0.0 or
                initial_accumulator_value < 0.0 or eps < 0.0):
            raise Error(f"Invalid Adagrad arguments: lr={float(lr)}, lr_decay={lr_decay}, "
                        f"weight_decay={weight_decay}, initial_accumulator_value="
                        f"{initial_accumulator_value}, eps={eps}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused),
                         mode=mode, threads=threads)

    def init_state(self, param: torch.Tensor, *, initial_accumulator_value: Any,
                   **_: Any) -> dict:
        return {"step": torch.zeros((), dtype=torch.float32, device=param.device),
                "sum": torch.full_like(param, initial_accumulator_value,
                                       memory_format=torch.preserve_format)}

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, lr_decay: Any, eps: Any,
               weight_decay: Any, maximize: bool, **_: Any) -> None:
        step = state["step"]
        step.add_(1)
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum = state["sum"]
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)
