"""``SGD``: torch.optim.SGD (momentum, dampening, Nesterov, weight decay, maximize) written on
PointwiseOptimizer in torch's own single-tensor style; an example of a user-written
optimizer as much as a drop-in one."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .arguments import (InvalidArgument, check_lr, check_not_negative, refuse_differentiable,
                        refuse_fused_with_foreach)
from .pointwise_optimizer import PointwiseOptimizer


class SGD(PointwiseOptimizer):
    """torch.optim.SGD's algorithm, arguments and state (``momentum_buffer``, created by the
    first step as a copy of the grad)."""

    def __init__(self, params: Any, lr: Any = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Any = None, differentiable: bool = False, fused: Any = None,
                 mode: str = "packed", threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = None, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False, state_format: Optional[str] = None,
                 block_size: Optional[int] = None) -> None:
        check_lr(lr)
        check_not_negative("momentum value", momentum)
        check_not_negative("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise InvalidArgument("Nesterov momentum requires a momentum and zero dampening")
        refuse_differentiable(differentiable, "SGD")
        refuse_fused_with_foreach(fused, foreach)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused),
                         mode=mode, threads=threads,
                         max_grad_norm=max_grad_norm, norm_type=norm_type,
                         error_if_nonfinite=error_if_nonfinite, state_format=state_format,
                         block_size=block_size)

    # What torch's SGD.__setstate__ gives a group of an older checkpoint that lacks them.
    _old_checkpoint_defaults = dict(nesterov=False, maximize=False, foreach=None,
                                    differentiable=False, fused=False)

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, momentum: Any,
               dampening: Any, weight_decay: Any, nesterov: bool, maximize: bool,
               **_: Any) -> None:
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = torch.clone(grad).detach()
                state["momentum_buffer"] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)
