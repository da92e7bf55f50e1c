"""What a gradient scaler hands an optimizer's step, and how the step reads it.

Two scalers hand a step its ``grad_scale`` (the grads are divided by it) and ``found_inf`` (a
step with an inf or NaN grad changes nothing):

- torch.amp.GradScaler sets them as attributes of the optimizer around ``step()`` and deletes
  them after (torch's protocol for an optimizer with ``_step_supports_amp_scaling``); a
  caller may set them by hand the same way.
- widefuse.optim.GradScaler hands a ``StepScaling`` through ``PointwiseOptimizer.scaled()``:
  the same two tensors, and whether the step computes ``found_inf`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from .arguments import InvalidArgument


@dataclass(frozen=True)
class StepScaling:
    """What widefuse.optim.GradScaler hands the steps inside ``with optimizer.scaled(...)``:
    `grad_scale` and `found_inf` as torch's GradScaler makes them (1-element float32
    tensors), and `computes_found_inf`: `found_inf` is handed zeroed and the step computes
    it from the grads (its inf check), instead of reading the result of torch's check."""

    grad_scale: torch.Tensor
    found_inf: torch.Tensor
    computes_found_inf: bool = False


def scaling_tensors(optimizer: Any, handed: Optional[StepScaling]) -> tuple:
    """(grad_scale, found_inf) as the 0-d float32 views the step reads, each None when not
    given: `handed`'s, else the optimizer's attributes (torch's protocol)."""
    if handed is not None:
        return (scaling_tensor(handed.grad_scale, "grad_scale"),
                scaling_tensor(handed.found_inf, "found_inf"))
    return (scaling_tensor(getattr(optimizer, "grad_scale", None), "grad_scale"),
            scaling_tensor(getattr(optimizer, "found_inf", None), "found_inf"))


def scaling_tensor(tensor: Any, name: str) -> Optional[torch.Tensor]:
    """GradScaler's `name` (grad_scale, found_inf) as the 0-d float32 view the step reads:
    torch's fused kernels take 0-d and [1]-shaped ones."""
    if tensor is None:
        return None
    if not isinstance(tensor, torch.Tensor) or tensor.numel() != 1 or tensor.dim() > 1:
        shape = list(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
        raise InvalidArgument(f"optimizer.{name} must be a 1-element tensor (0-d or [1], as "
                              f"torch.amp.GradScaler makes it), got {shape}")
    if tensor.dtype != torch.float32:
        raise InvalidArgument(f"optimizer.{name} is {tensor.dtype}; GradScaler's tensors are "
                              "torch.float32")
    return tensor.view(()) if tensor.dim() == 1 else tensor
