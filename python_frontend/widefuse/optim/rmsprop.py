"""``RMSprop``: torch.optim.RMSprop (centered or not, momentum, weight decay, maximize) on
PointwiseOptimizer, in torch's single-tensor style."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .._widefuse import Error
from .pointwise_optimizer import PointwiseOptimizer


class RMSprop(PointwiseOptimizer):
    """torch.optim.RMSprop's algorithm, arguments and state (``step``, ``square_avg``,
    ``momentum_buffer`` with momentum, ``grad_avg`` when centered)."""

    def __init__(self, params: Any, lr: Any = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False, mode: str = "packed",
                 threads: Optional[int] = None) -> None:
        if differentiable:
            raise Error("differentiable=True is not supported")
        if float(lr) < 0.0 or eps < 0.0 or momentum < 0.0 or weight_decay < 0.0 or alpha < 0.0:
            raise Error(f"Invalid RMSprop arguments: lr={float(lr)}, alpha={alpha}, eps={eps}, "
                        f"momentum={momentum}, weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable),
                         mode=mode, threads=threads)

    def init_state(self, param: torch.Tensor, *, momentum: Any, centered: bool,
                   **_: Any) -> dict:
        zeros = lambda: torch.zeros_like(param, memory_format=torch.preserve_format)
        state = {"step": torch.zeros((), dtype=torch.float32, device=param.device),
                 "square_avg": zeros()}
        if momentum > 0:
            state["momentum_buffer"] = zeros()
        if centered:
            state["grad_avg"] = zeros()
        return state

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, alpha: Any, eps: Any,
               weight_decay: Any, momentum: Any, centered: bool, maximize: bool,
               **_: Any) -> None:
        if maximize:
            grad = -grad
        state["step"].add_(1)
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)
