"""``widefuse.optim.GradScaler``: torch.amp.GradScaler whose inf check, for a widefuse
optimizer, is part of the optimizer's step (docs/torch.md section 10.2).

torch's ``scaler.step(optimizer)`` first checks every grad for inf and NaN (a multi-tensor
pass of its own), then hands the optimizer the scale and the flag. For a widefuse optimizer
this scaler hands over a zeroed flag instead: the step's first phase computes it from the
unscaled grads (one global ``any``, beside the clip's norm), and the second phase writes it and
skips the update when it is set. ``update()`` then reads that flag as it reads torch's, on the
device: the host never waits for it. The scale and the flag reach the step as a
``StepScaling`` (``with optimizer.scaled(...)``, scaling.py), not as the attributes torch's
scaler sets. Everything else (``scale``, ``unscale_``, ``update``, ``state_dict``, other
optimizers) is torch's.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch.amp.grad_scaler import OptState

from .pointwise_optimizer import PointwiseOptimizer
from .scaling import StepScaling


class GradScaler(torch.amp.GradScaler):
    """torch.amp.GradScaler with the same constructor, methods and state_dict; for a
    widefuse optimizer (a PointwiseOptimizer) in the READY stage, ``step`` launches no inf
    check of its own: the optimizer's step computes ``found_inf``. After ``unscale_``
    (torch's recipe for clipping with torch's ``clip_grad_norm_``), and for any other
    optimizer, it is torch's ``step``."""

    def step(self, optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Optional[Any]:
        if not self._enabled or not isinstance(optimizer, PointwiseOptimizer):
            return super().step(optimizer, *args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.UNSCALED:  # unscale_ ran torch's check: read its flag
            return super().step(optimizer, *args, **kwargs)
        scale = self._get_scale_async()
        assert scale is not None  # _check_scale_growth_tracker refused an unused scaler
        # The tensor update() reads, zeroed: the step writes 1.0 on an inf or NaN.
        found_inf = torch.zeros((1,), dtype=torch.float32, device=scale.device)
        state["found_inf_per_device"] = {scale.device: found_inf}
        # As torch's step: a grad_scale the caller set on the optimizer multiplies the scale,
        # and neither attribute outlives the step.
        handed = StepScaling(scale * getattr(optimizer, "grad_scale", 1), found_inf,
                             computes_found_inf=True)
        try:
            with optimizer.scaled(handed):
                result = optimizer.step(*args, **kwargs)
        finally:
            for name in ("grad_scale", "found_inf"):
                if hasattr(optimizer, name):
                    delattr(optimizer, name)
        state["stage"] = OptState.STEPPED
        return result
