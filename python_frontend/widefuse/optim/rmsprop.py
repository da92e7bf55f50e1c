"""``RMSprop``: torch.optim.RMSprop (centered or not, momentum, weight decay, maximize) on
PointwiseOptimizer, in torch's single-tensor style."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .arguments import check_lr, check_not_negative, refuse_differentiable
from .pointwise_optimizer import PointwiseOptimizer
from .step_fusion import step_dtype


class RMSprop(PointwiseOptimizer):
    """torch.optim.RMSprop's algorithm, arguments and state (``step``, ``square_avg``,
    ``momentum_buffer`` with momentum, ``grad_avg`` when centered)."""

    def __init__(self, params: Any, lr: Any = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False, mode: str = "packed",
                 threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = None, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False) -> None:
        check_lr(lr)
        check_not_negative("epsilon value", eps)
        check_not_negative("momentum value", momentum)
        check_not_negative("weight_decay value", weight_decay)
        check_not_negative("alpha value", alpha)
        refuse_differentiable(differentiable, "RMSprop")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable),
                         mode=mode, threads=threads,
                         max_grad_norm=max_grad_norm, norm_type=norm_type,
                         error_if_nonfinite=error_if_nonfinite)

    # What torch's RMSprop.__setstate__ gives a group of an older checkpoint that lacks them.
    _old_checkpoint_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False,
                                    differentiable=False, capturable=False)

    def init_state(self, param: torch.Tensor, *, momentum: Any, centered: bool,
                   **_: Any) -> dict:
        zeros = lambda: torch.zeros_like(param, memory_format=torch.preserve_format)
        state = {"step": torch.zeros((), dtype=step_dtype(), device=param.device),
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
