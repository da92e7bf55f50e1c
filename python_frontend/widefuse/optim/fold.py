"""A gradient clip folded into an optimizer's next step: ``widefuse.optim.clip_grad_norm_``
computes the total norm and the scaling coefficient now, and the step of the one widefuse
optimizer that owns exactly those grads multiplies them by the coefficient inside its kernel
instead of a second launch writing every grad now (docs/torch.md §10.3).

The fold is valid only for the grads the clip read: it remembers each one's identity and
``_version`` (torch's counter of in-place writes), and the step (or a second clip) checks them."""

from __future__ import annotations

import weakref
from typing import Any

import torch

from .._widefuse import Error
from .dtensor_shards import local_of

# Every live PointwiseOptimizer, so that a clip can find the one owning its parameters.
live_optimizers: "weakref.WeakSet[Any]" = weakref.WeakSet()


class PendingFold:
    """The coefficient of a clip not yet applied, and the grads it is for."""

    def __init__(self, coefficient: torch.Tensor, params: list) -> None:
        self.coefficient = coefficient  # 0-d, in the total norm's dtype, on the grads' device
        # Weak references: a pending fold must not keep a set of grads alive after zero_grad.
        self.grads = {id(p): (weakref.ref(p.grad), p.grad._version, local_of(p.grad).data_ptr())
                      for p in params}

    def verdict(self, params: list[tuple[str, Any]]) -> bool:
        """True to apply the fold to `params` ((description, parameter) of every parameter that
        has a grad now): every grad is one the clip read, unwritten since. False when it is
        stale: every grad is a new tensor (a new backward after zero_grad). Raises Error when
        a grad the clip read was written since (in place, or its storage swapped: torch's
        clip would have scaled it before that write), or when only some grads are new: the
        norm no longer describes them. A grad the clip read that is gone now (set to None) is
        not stepped, as after torch's in-place clip."""
        unchanged, replaced, changed = 0, 0, None
        for where, param in params:
            grad = param.grad
            known = self.grads.get(id(param))
            if known is None or known[0]() is not grad:
                replaced += 1
                changed = changed or where
            elif known[1] == grad._version and known[2] == local_of(grad).data_ptr():
                unchanged += 1
            else:
                changed = where  # written: refused even when every grad was
                break
        else:
            if not replaced:
                return unchanged > 0
            if not unchanged:
                return False
        raise Error(f"the grad of {changed} changed after clip_grad_norm_ folded its scaling "
                    "into this step; call clip_grad_norm_(..., fold=False) to scale the grads "
                    "in place")

