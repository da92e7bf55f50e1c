"""What PointwiseOptimizer adds to torch's state_dict and load_state_dict: checks before
anything loads, the dtypes of widefuse's own state (masters, remainders, quantized codes and
scales) restored after torch's cast, quantized state stored in the group's format, torchao's
low-bit state read, and a dequantized state_dict that torch's optimizers load."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional

import torch

from .._widefuse import Error
from .dtensor_shards import is_dtensor, like_param, local_of
from .state_formats import dequantize_state, fit_state, group_format

# Param-group options of the state's storage, not of the algorithm: update() does not get them.
FORMAT_OPTIONS = ("state_format", "block_size")


def fits(optimizer: Any, key: str, value: torch.Tensor, param: Any) -> bool:
    """Whether state `key` has the shape `optimizer` expects for `param`."""
    if key.endswith(("_codes", "_scale")):  # quantized: checked by stored_format (fit_state)
        return True
    shape = optimizer.state_shape_for(key, param)
    return shape is None or tuple(value.shape) == tuple(shape)


class CheckpointMethods:
    """The state_dict half of PointwiseOptimizer (a base class of it)."""

    def dequantized_state_dict(self) -> dict:
        """state_dict() with quantized state as float32 tensors under torch's keys
        (``exp_avg`` for ``exp_avg_codes`` and ``exp_avg_scale``): what torch.optim's
        optimizer of the same algorithm loads (torch.optim.AdamW for AdamW8bit)."""
        saved = self.state_dict()
        params = [param for group in self.param_groups for param in group["params"]]
        for group in saved["param_groups"]:
            fmt = group_format(group)
            for index in group["params"]:
                state = saved["state"].get(index)
                if fmt is not None and state is not None:
                    saved["state"][index] = dequantize_state(fmt, state, params[index])
        return saved

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's load_state_dict, after checking that every state tensor fits its parameter
        (nothing changes when one does not); 0-d state such as ``step`` moves to its
        parameter's device. Keys of the state that are not parameters load as in torch.
        The load hooks run where torch runs them: the pre-hooks before the checks, the
        post-hooks after everything."""
        state_dict = state_dict.copy()
        pre_hooks = self._optimizer_load_state_dict_pre_hooks
        post_hooks = self._optimizer_load_state_dict_post_hooks
        for hook in list(pre_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        self._check_loaded_state(state_dict)
        saved = self._saved_state_by_param(state_dict)
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        try:
            super().load_state_dict(state_dict)
        finally:
            self._optimizer_load_state_dict_pre_hooks = pre_hooks
            self._optimizer_load_state_dict_post_hooks = post_hooks
        self._fit_loaded_state(saved)
        self._prepared = None
        for hook in list(post_hooks.values()):
            hook(self)

    def _fit_loaded_state(self, saved: dict) -> None:
        group_of = {id(p): group for group in self.param_groups for p in group["params"]}
        for param, state in self.state.items():
            group = group_of.get(id(param))
            if group is None or not isinstance(state, dict):
                continue  # a key that is not a parameter (hooks write such keys): as loaded
            for key, value in list(state.items()):
                if not isinstance(value, torch.Tensor):
                    continue
                original = saved[id(param)].get(key)
                inner = local_of(original)  # a DTensor's shard: torchao's under FSDP2 too
                if type(inner) not in (torch.Tensor, torch.nn.Parameter) and \
                        callable(getattr(type(inner), "dequantize", None)):
                    # A tensor subclass of quantized state (torchao's low-bit optimizers):
                    # its values, which this optimizer's format quantizes again below.
                    values = inner.dequantize().float().to(device=local_of(param).device)
                    state[key] = like_param(values, param, tuple(param.shape)) \
                        if is_dtensor(original) else values
                    continue
                wanted = self._state_dtype(key, param, group)
                if wanted is not None and value.dtype != wanted:
                    # From the saved tensor: torch cast it to the parameter's dtype.
                    state[key] = saved[id(param)][key].to(device=param.device, dtype=wanted)
                elif value.dim() == 0:
                    state[key] = value.to(device=local_of(param).device)
            self.state[param] = fit_state(group_format(group), param, state)

    def _state_dtype(self, key: str, param: Any, group: dict) -> Optional[torch.dtype]:
        """state_dtype_for, after the dtypes of quantized state (codes and scales)."""
        fmt = group_format(group)
        if fmt is not None and key.endswith("_codes"):
            return fmt.codes_dtype
        if fmt is not None and key.endswith("_scale"):
            return torch.float32
        return self.state_dtype_for(key, param, group)

    def _saved_state_by_param(self, state_dict: dict) -> dict:
        """The saved state of each parameter (by id), as torch's load_state_dict pairs them."""
        saved_groups = state_dict.get("param_groups", [])
        saved_state = state_dict.get("state", {})
        pairs = {}
        for saved, group in zip(saved_groups, self.param_groups):
            for index, param in zip(saved.get("params", ()), group["params"]):
                pairs[id(param)] = saved_state.get(index, {})
        return pairs

    def _check_loaded_state(self, state_dict: dict) -> None:
        saved_groups = state_dict.get("param_groups", [])
        if len(saved_groups) != len(self.param_groups):
            return  # torch's load_state_dict names this mismatch
        for g, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved.get("params", ())) != len(group["params"]):
                return
            hyperparameters = {name: saved.get(name, value)
                               for name, value in self.defaults.items()}
            for i, (index, param) in enumerate(zip(saved["params"], group["params"])):
                where = f"load_state_dict: parameter {i} of param group {g}"
                state = state_dict.get("state", {}).get(index, {})
                for key, value in state.items():
                    if isinstance(value, torch.Tensor) and value.dim() != 0 and \
                            not fits(self, key, value, param):
                        raise Error(
                            f"load_state_dict: state '{key}' of parameter {i} of param group "
                            f"{g} has shape {list(value.shape)}; the parameter has shape "
                            f"{list(param.shape)} (nothing was loaded)")
                try:
                    self.check_state(param, dict(state), **hyperparameters)
                except Error as error:
                    raise Error(f"{where} ({param.dtype}, shape {list(param.shape)}): {error} "
                                "(nothing was loaded)") from None


