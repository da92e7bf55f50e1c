"""Zero state without its bytes: the zero tensors ``init_state`` makes come out on the meta
device while it runs, and are then made in the format the state is stored in. A quantized
entry that starts at zero is its codes and scales from the start: no float32 tensor the size
of the parameter is filled, then read back to quantize it.

``init_state`` runs once more, as written, when it does anything else with such a zero (fills
it, converts it, computes from it): only zeros returned as they were made are deferred.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .state_formats import StateFormat, codes_key, scale_key

_aten = torch.ops.aten
# The ops that make a zero tensor, and where each takes its device from when none is given.
_ZERO_OPS = {_aten.zeros.default: None, _aten.zeros_like.default: 0, _aten.new_zeros.default: 0}
# Ops whose result is the same zeros (torch detaches what a factory makes under a mode).
_SAME_ZEROS = (_aten.detach.default, _aten.alias.default)


class _DeferZeros(TorchDispatchMode):
    """Makes each zero tensor on the meta device and remembers the device it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        # By id, each with its tensor: held, so that no other tensor takes its id meanwhile.
        self.made: dict[int, tuple[torch.Tensor, torch.device]] = {}
        self.touched = False

    def device_of(self, value: Any) -> Optional[torch.device]:
        """The device a deferred zero was asked for; None for anything else."""
        entry = self.made.get(id(value)) if isinstance(value, torch.Tensor) else None
        return entry[1] if entry is not None and entry[0] is value else None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _ZERO_OPS:
            like = _ZERO_OPS[func]
            device = kwargs.get("device") or (args[like].device if like is not None
                                              else torch.get_default_device())
            kwargs["device"] = torch.device("meta")
            made = func(*args, **kwargs)
            self.made[id(made)] = (made, torch.device(device))
            return made
        if func in _SAME_ZEROS and self.device_of(args[0]) is not None:
            made = func(*args, **kwargs)
            self.made[id(made)] = (made, self.device_of(args[0]))
            return made
        if any(self.device_of(arg) is not None for arg in tree_leaves((args, kwargs))):
            self.touched = True
        return func(*args, **kwargs)


def make_state(fmt: Optional[StateFormat], param: Any, make: Callable[[], Any]) -> Any:
    """What ``make()`` (the optimizer's init_state) returns, its deferred zeros made: as codes
    and scales where `fmt` quantizes them, as zero tensors elsewhere."""
    if fmt is None or type(param) not in (torch.Tensor, torch.nn.Parameter):
        return make()
    mode = _DeferZeros()
    with mode:
        made = make()
    if not isinstance(made, dict):
        return made
    deferred = [id(value) for value in made.values() if mode.device_of(value) is not None]
    computed_on_meta = any(isinstance(value, torch.Tensor) and value.device.type == "meta" and
                           mode.device_of(value) is None for value in tree_leaves(made))
    if mode.touched or computed_on_meta or len(set(deferred)) != len(deferred):
        return make()
    state = {}
    for key, value in made.items():
        device = mode.device_of(value)
        if device is None:
            state[key] = value
        elif fmt.quantizes(param, key, value):
            state[codes_key(key)], state[scale_key(key)] = fmt.zeros(value.shape, device)
        else:
            state[key] = torch.zeros_like(value, device=device)
    return state
