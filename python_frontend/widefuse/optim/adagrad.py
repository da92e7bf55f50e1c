"""``Adagrad``: torch.optim.Adagrad (learning-rate decay, weight decay, initial accumulator,
maximize) on PointwiseOptimizer, in torch's single-tensor style; dense grads only."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .arguments import (check_lr, check_not_negative, refuse_differentiable,
                        refuse_fused_with_foreach)
from .pointwise_optimizer import PointwiseOptimizer
from .step_fusion import step_dtype


class Adagrad(PointwiseOptimizer):
    """torch.optim.Adagrad's algorithm, arguments and state (``step``, ``sum``)."""

    def __init__(self, params: Any, lr: Any = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: Any = None,
                 *, maximize: bool = False, differentiable: bool = False, fused: Any = None,
                 mode: str = "packed", threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = None, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False) -> None:
        check_lr(lr)
        check_not_negative("lr_decay value", lr_decay)
        check_not_negative("weight_decay value", weight_decay)
        check_not_negative("initial_accumulator_value value", initial_accumulator_value)
        check_not_negative("epsilon value", eps)
        refuse_differentiable(differentiable, "Adagrad")
        refuse_fused_with_foreach(fused, foreach)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused),
                         mode=mode, threads=threads,
                         max_grad_norm=max_grad_norm, norm_type=norm_type,
                         error_if_nonfinite=error_if_nonfinite)
        # As torch's Adagrad: every parameter given to the constructor has its state at once
        # (a later add_param_group's parameters get theirs at their first step).
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = self.init_state(
                    p, initial_accumulator_value=group["initial_accumulator_value"])

    # What torch's Adagrad.__setstate__ gives a group of an older checkpoint that lacks them.
    _old_checkpoint_defaults = dict(foreach=None, maximize=False, differentiable=False,
                                    fused=None)

    def init_state(self, param: torch.Tensor, *, initial_accumulator_value: Any,
                   **_: Any) -> dict:
        if param.is_complex():  # torch's accumulator: the value in both halves
            initial_accumulator_value = complex(initial_accumulator_value,
                                                initial_accumulator_value)
        return {"step": torch.zeros((), dtype=step_dtype(), device=param.device),
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
        # In float64, as torch computes it from the step's Python float.
        clr = lr / (1 + (step.double() - 1) * lr_decay)
        state_sum = state["sum"]
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)
