"""``LAMB`` (You et al. 2020, "Large Batch Optimization for Deep Learning: Training BERT in 76
minutes"): Adam's direction scaled, per parameter, by the trust ratio ||p|| / ||update||. Not
in torch; its defaults and options are timm's ``Lamb`` (docs/torch.md §10.4). Written on
PointwiseOptimizer, whose step then runs as two phases (the norms of every parameter, then the
update) because the update reads reductions of its own values."""

from __future__ import annotations

from typing import Any, Optional

import torch

from .arguments import check_betas, check_lr, check_not_negative
from .pointwise_optimizer import PointwiseOptimizer
from .step_fusion import step_dtype


class LAMB(PointwiseOptimizer):
    """m = beta1 m + (1 - beta1) g (grad_averaging; else beta1 m + g);
    v = beta2 v + (1 - beta2) g^2;
    u = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay p;
    p -= lr * trust * u, trust = ||p|| / ||u|| where both are positive, else 1, applied to
    parameters with weight decay (and to all with ``always_adapt``), at most 1 with
    ``trust_clip``. The defaults are timm's ``Lamb`` (and Apex's ``FusedLAMB`` with
    ``use_nvlamb=False``): weight_decay 0.01, the grads clipped to a global norm of 1.0
    (``max_grad_norm``), the trust ratio only where a group decays. ``always_adapt=True`` (Apex's
    ``use_nvlamb=True``, NVIDIA's and the paper's LAMB) applies it everywhere.
    ``bias_correction=False`` leaves out the two corrections. State: ``step``, ``exp_avg`` (m),
    ``exp_avg_sq`` (v)."""

    def __init__(self, params: Any, lr: Any = 1e-3, betas: Any = (0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0.01, *, bias_correction: bool = True,
                 grad_averaging: bool = True, always_adapt: bool = False,
                 trust_clip: bool = False, mode: str = "packed", threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = 1.0, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False) -> None:
        check_lr(lr)
        check_betas(betas)
        check_not_negative("epsilon value", eps)
        check_not_negative("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      bias_correction=bias_correction,
                                      grad_averaging=grad_averaging, always_adapt=always_adapt,
                                      trust_clip=trust_clip),
                         mode=mode, threads=threads,
                         max_grad_norm=max_grad_norm, norm_type=norm_type,
                         error_if_nonfinite=error_if_nonfinite)

    def init_state(self, param: torch.Tensor) -> dict:
        return {"step": torch.zeros((), dtype=step_dtype(), device=param.device),
                "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format)}

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, betas: Any, eps: Any,
               weight_decay: Any, bias_correction: bool, grad_averaging: bool,
               always_adapt: bool, trust_clip: bool) -> None:
        beta1, beta2 = betas
        step, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
        step.add_(1)
        if grad_averaging:
            exp_avg.lerp_(grad, 1 - beta1)
        else:
            exp_avg.mul_(beta1).add_(grad)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        first, second = exp_avg, exp_avg_sq
        if bias_correction:
            first = exp_avg / (1 - beta1**step)
            second = exp_avg_sq / (1 - beta2**step)
        update = first / (second.sqrt() + eps) + weight_decay * param
        # The branch makes weight_decay's zeroness a trace constant of its group (HF-style
        # groups without decay on biases and norms trace once).
        if always_adapt or weight_decay != 0:
            weight_norm = torch.linalg.vector_norm(param)
            update_norm = torch.linalg.vector_norm(update)
            trust = torch.where((weight_norm > 0) & (update_norm > 0),
                                weight_norm / update_norm, 1.0)
            if trust_clip:
                trust = torch.clamp(trust, max=1.0)
            update = trust * update
        param.sub_(lr * update)
