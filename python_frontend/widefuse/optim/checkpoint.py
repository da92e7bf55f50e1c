"""What PointwiseOptimizer adds to torch's state_dict and load_state_dict: checks before
anything loads, the dtypes of widefuse's own state (masters, remainders, quantized codes and
scales) restored after torch's cast, quantized state stored in the group's format (which a
checkpoint does not change), torchao's and bitsandbytes' low-bit state read, and a dequantized
state_dict that torch's optimizers load."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional

import torch

from .._widefuse import Error
from .dtensor_shards import is_dtensor, like_param, local_of
from .state_formats import (StateFormat, codes_key, dequantize_state, fit_state, group_format,
                            is_signed, scale_key, stored_format)

# Param-group options of the state's storage, not of the algorithm: update() does not get them.
# They are the optimizer's own: load_state_dict keeps them and stores the loaded state so.
FORMAT_OPTIONS = ("state_format", "block_size")
# Where bitsandbytes' state_dict() hides a parameter's quantized state from FSDP's gathering.
_BNB_WRAPPED = "__bnb_optimizer_quant_state__"
# bitsandbytes' per-parameter state: its buffers, their maps and block absmaxes, and scratch
# buffers of options widefuse does not have (max_unorm, percentile clipping), which go.
_BNB_KEYS = {"state1", "state2", "qmap1", "qmap2", "absmax1", "absmax2"}
_BNB_SCRATCH = {"unorm_vec", "gnorm_vec"}
_BNB_BLOCK = 256  # bitsandbytes' 8-bit blockwise optimizers' block, fixed in its code
# torchao's low-bit state tensors (torchao/optim/subclass_*.py) by the format they store.
_TORCHAO_FORMATS = {"OptimState8bit": "int8", "OptimState4bit": "int4", "OptimStateFp8": "fp8"}


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
        post-hooks after everything.

        Each group keeps its own ``state_format`` and ``block_size``: state saved in another
        format (or none) is read back and stored in the group's (float32 state for a group
        without one; torchao's codes of the group's format and map are taken as they are).
        bitsandbytes' Adam state (``state1``/``state2`` with their maps and absmaxes) loads
        into the Adam family as ``exp_avg``/``exp_avg_sq``."""
        state_dict = state_dict.copy()
        pre_hooks = self._optimizer_load_state_dict_pre_hooks
        post_hooks = self._optimizer_load_state_dict_post_hooks
        for hook in list(pre_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        state_dict = self._read_bitsandbytes(state_dict)
        self._check_loaded_state(state_dict)
        saved = self._saved_state_by_param(state_dict)
        formats = [{name: group[name] for name in FORMAT_OPTIONS if name in group}
                   for group in self.param_groups]
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        try:
            super().load_state_dict(state_dict)
        finally:
            self._optimizer_load_state_dict_pre_hooks = pre_hooks
            self._optimizer_load_state_dict_post_hooks = post_hooks
        for group, kept in zip(self.param_groups, formats):
            for name in FORMAT_OPTIONS:  # torch took the checkpoint's groups whole
                if name in kept:
                    group[name] = kept[name]
                else:
                    group.pop(name, None)
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
            fmt = group_format(group)
            for key, value in list(state.items()):
                if not isinstance(value, torch.Tensor):
                    continue
                original = saved[id(param)].get(key)
                inner = local_of(original)  # a DTensor's shard: torchao's under FSDP2 too
                if type(inner) not in (torch.Tensor, torch.nn.Parameter) and \
                        callable(getattr(type(inner), "dequantize", None)):
                    # A tensor subclass of quantized state (torchao's low-bit optimizers): its
                    # codes where they are this group's, else its values, quantized below.
                    exact = None if is_dtensor(original) else \
                        _torchao_codes(inner, key, fmt, param)
                    if exact is not None:
                        del state[key]
                        state[codes_key(key)], state[scale_key(key)] = exact
                        continue
                    values = inner.dequantize().float().to(device=local_of(param).device)
                    state[key] = like_param(values, param, tuple(param.shape)) \
                        if is_dtensor(original) else values
                    continue
                if key.endswith(("_codes", "_scale")) and isinstance(original, torch.Tensor):
                    # Codes of whatever format they were saved in (torch cast them to the
                    # parameter's dtype): fit_state reads them back below.
                    wanted = original.dtype
                else:
                    wanted = self._state_dtype(key, param, group)
                if wanted is not None and value.dtype != wanted:
                    # From the saved tensor: torch cast it to the parameter's dtype.
                    state[key] = saved[id(param)][key].to(device=param.device, dtype=wanted)
                elif value.dim() == 0:
                    state[key] = value.to(device=local_of(param).device)
            fitted = fit_state(fmt, param, state)
            for key, value in fitted.items():
                # State read back from codes is float32: as the group keeps it unquantized.
                wanted = None if key.endswith(("_codes", "_scale")) else \
                    self._state_dtype(key, param, group)
                if isinstance(value, torch.Tensor) and value.dim() != 0 and \
                        value.is_floating_point() and wanted is not None and \
                        value.dtype != wanted:
                    fitted[key] = value.to(wanted)
            self.state[param] = fitted

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
                    if not isinstance(value, (torch.Tensor, int, float)) or \
                            isinstance(value, bool):
                        raise ValueError(
                            f"{where}: state '{key}' is a {type(value).__name__}; widefuse "
                            "optimizers keep tensors (and a number 'step') in their state "
                            "(nothing was loaded)")
                    if isinstance(value, torch.Tensor) and value.dim() != 0 and \
                            not fits(self, key, value, param):
                        raise Error(
                            f"load_state_dict: state '{key}' of parameter {i} of param group "
                            f"{g} has shape {list(value.shape)}; the parameter has shape "
                            f"{list(param.shape)} (nothing was loaded)")
                _check_quantized(state, param, where)
                try:
                    self.check_state(param, dict(state), **hyperparameters)
                except Error as error:
                    raise Error(f"{where} ({param.dtype}, shape {list(param.shape)}): {error} "
                                "(nothing was loaded)") from None

    def _read_bitsandbytes(self, state_dict: dict) -> dict:
        """`state_dict` with bitsandbytes' state of each parameter (its buffers ``state1`` and
        ``state2``, blockwise 8-bit or float32) as this optimizer's float32 state, under the
        keys of ``_bitsandbytes_state`` (a new dict: the caller's is left as it is). An
        optimizer without them refuses such state (ValueError, before anything loads)."""
        states = state_dict.get("state", {})
        if not any(_bitsandbytes_state(state) is not None for state in states.values()):
            return state_dict
        names = getattr(self, "_bitsandbytes_state", None)
        index_of = {index: (g, i) for g, group in enumerate(state_dict.get("param_groups", []))
                    for i, index in enumerate(group.get("params", ()))}
        converted = {}
        for index, state in states.items():
            buffers = _bitsandbytes_state(state)
            if buffers is not None:
                g, i = index_of.get(index, ("?", "?"))
                where = f"load_state_dict: parameter {i} of param group {g}"
                group = self.param_groups[g] if isinstance(g, int) and \
                    g < len(self.param_groups) else None
                param = group["params"][i] if group is not None and \
                    i < len(group["params"]) else None
                state = _from_bitsandbytes(state, buffers, names, type(self).__name__, where,
                                           None if group is None else group_format(group),
                                           param)
            converted[index] = state
        return dict(state_dict, state=converted)


def _check_quantized(state: dict, param: Any, where: str) -> None:
    """Raises ValueError, naming the parameter and key, for codes and scales in `state` that
    are no quantized state of `param` in any format: a scale without its codes or codes
    without their scale, codes that are not uint8 or float8_e4m3fn of the parameter's shape
    (int4: flat, half its elements), or not one float32 scale per block."""
    for key in state:
        if not key.endswith(("_codes", "_scale")):
            continue
        base = key[:-len("_codes")] if key.endswith("_codes") else key[:-len("_scale")]
        codes, scale = state.get(codes_key(base)), state.get(scale_key(base))
        if not isinstance(codes, torch.Tensor) or not isinstance(scale, torch.Tensor):
            missing = codes_key(base) if codes is None else scale_key(base)
            raise ValueError(f"{where}: state '{key}' comes without '{missing}' (quantized "
                             "state is codes and a scale per block) (nothing was loaded)")
        if not key.endswith("_codes"):
            continue
        expected = None
        try:
            fmt = stored_format(base, codes, scale, param.shape)
            expected = fmt.codes_shape(param.shape)
        except (Error, ValueError):
            fmt = None
        if fmt is None or tuple(codes.shape) != tuple(expected) or scale.dim() != 1:
            wanted = f"shape {list(expected)} for {fmt.name} with block_size " \
                f"{fmt.block_size}" if fmt is not None else \
                "uint8 or float8_e4m3fn codes (int4: two per byte, flat) and one float32 " \
                "scale per block of a power of two elements"
            raise ValueError(
                f"{where} ({param.dtype}, shape {list(param.shape)}): state '{key}' "
                f"({codes.dtype}, shape {list(codes.shape)}) and '{scale_key(base)}' "
                f"({scale.dtype}, shape {list(scale.shape)}) do not fit the parameter: its "
                f"codes need {wanted} (nothing was loaded)")


def _torchao_codes(value: Any, key: str, fmt: Optional[StateFormat],
                   param: Any) -> Optional[tuple]:
    """Copies of the codes and scales of torchao's state tensor `value` when they are this
    format's exactly (its format, block size and map, and a parameter this format
    quantizes), on the parameter's device; None otherwise (the caller requantizes its
    values)."""
    name = _TORCHAO_FORMATS.get(type(value).__name__)
    if fmt is None or name != fmt.name or getattr(value, "block_size", None) != fmt.block_size \
            or not fmt.quantizes(param, key, param):
        return None
    codes, scale = value.codes, value.scale
    if codes.dtype != fmt.codes_dtype or tuple(codes.shape) != fmt.codes_shape(param.shape) \
            or scale.dtype != torch.float32 or \
            tuple(scale.shape) != (param.numel() // fmt.block_size,):
        return None
    if name != "fp8":
        if bool(value.signed) != is_signed(key) or \
                not _same_map(value.qmap, fmt.codebook(is_signed(key))):
            return None
    device = local_of(param).device
    return codes.detach().to(device, copy=True), scale.detach().to(device, copy=True)


def _bitsandbytes_state(state: Any) -> Optional[dict]:
    """bitsandbytes' buffers in a parameter's saved state (wrapped for FSDP, as its
    state_dict() saves them, or not, as older versions did); None for any other state."""
    if not isinstance(state, dict):
        return None
    wrapped = state.get(_BNB_WRAPPED)
    if isinstance(wrapped, dict):
        return wrapped
    if "state1" in state and isinstance(state["state1"], torch.Tensor):
        return {key: value for key, value in state.items()
                if key in _BNB_KEYS | _BNB_SCRATCH}
    return None


def _from_bitsandbytes(state: dict, buffers: dict, names: Optional[tuple], optimizer: str,
                       where: str, fmt: Optional[StateFormat], param: Any) -> dict:
    """A parameter's bitsandbytes state as `names` (state1's, state2's): codes and absmaxes
    as they are where they are `fmt`'s (int8 in blocks of 256, torchao's map and ours, whole
    blocks), else float32, dequantized as bitsandbytes does, ``qmap[code] * absmax`` per
    block of 256 (the last may be partial); ValueError for state this cannot read."""
    unknown = sorted(set(buffers) - _BNB_KEYS - _BNB_SCRATCH)
    count = sum(f"state{n}" in buffers for n in (1, 2))
    if names is None or unknown or count != len(names):
        why = f"its keys {sorted(buffers)} are not the blockwise 8-bit or 32-bit state of " \
            "bitsandbytes' Adam" if names is not None else \
            f"{optimizer} does not read bitsandbytes' state (widefuse reads bitsandbytes' " \
            "Adam8bit/AdamW8bit state into Adam, AdamW and their low-bit forms)"
        raise ValueError(
            f"{where} holds bitsandbytes' optimizer state, and {why}; load it into the "
            "bitsandbytes optimizer that saved it and pass torch's state instead (its "
            "dequantized moments under torch's keys) (nothing was loaded)")
    converted = {key: value for key, value in state.items()
                 if key != _BNB_WRAPPED and key not in _BNB_KEYS | _BNB_SCRATCH}
    for n, name in enumerate(names, start=1):
        value = buffers[f"state{n}"]
        exact = _bitsandbytes_codes(value, buffers.get(f"qmap{n}"), buffers.get(f"absmax{n}"),
                                    name, fmt, param)
        if exact is not None:
            converted[codes_key(name)], converted[scale_key(name)] = exact
            continue
        if value.dtype == torch.uint8:
            value = _bitsandbytes_values(value, buffers.get(f"qmap{n}"),
                                         buffers.get(f"absmax{n}"), f"{where}: state{n}")
        elif not value.is_floating_point():
            raise ValueError(f"{where}: bitsandbytes' state{n} is {value.dtype}; its state is "
                             "uint8 codes or float32 (nothing was loaded)")
        converted[name] = value.float()
    return converted


def _bitsandbytes_codes(codes: torch.Tensor, qmap: Any, absmax: Any, key: str,
                        fmt: Optional[StateFormat], param: Any) -> Optional[tuple]:
    """Copies of bitsandbytes' blockwise codes and absmaxes of state `key` where they are
    `fmt`'s as they are, else None."""
    if fmt is None or fmt != StateFormat("int8", _BNB_BLOCK) or param is None or \
            is_dtensor(param) or codes.dtype != torch.uint8 or \
            tuple(codes.shape) != tuple(param.shape) or not fmt.quantizes(param, key, param) \
            or not isinstance(qmap, torch.Tensor) or not isinstance(absmax, torch.Tensor) or \
            tuple(absmax.shape) != (param.numel() // _BNB_BLOCK,) or \
            not _same_map(qmap, fmt.codebook(is_signed(key))):
        return None
    return codes.detach().clone(), absmax.detach().float().clone()


def _same_map(theirs: torch.Tensor, ours: torch.Tensor) -> bool:
    """Whether a saved map is widefuse's: torchao and bitsandbytes build theirs with
    torch.linspace on the saving CPU, one or two ulps away from widefuse's on some CPUs."""
    theirs = theirs.detach().cpu()
    if theirs.dtype != torch.float32 or theirs.shape != ours.shape:
        return False
    ulps = (theirs.view(torch.int32).long() - ours.view(torch.int32).long()).abs()
    return int(ulps.max()) <= 2


def _bitsandbytes_values(codes: torch.Tensor, qmap: Any, absmax: Any,
                         where: str) -> torch.Tensor:
    """The float32 values of bitsandbytes' blockwise 8-bit `codes` (its dequantize_blockwise:
    the last block may be partial)."""
    blocks = -(-codes.numel() // _BNB_BLOCK)
    if not isinstance(qmap, torch.Tensor) or qmap.numel() != 256 or \
            not isinstance(absmax, torch.Tensor) or absmax.numel() != blocks:
        raise ValueError(
            f"{where} is uint8 codes of {codes.numel()} elements; bitsandbytes' blockwise "
            f"8-bit state has a 256-entry map and {blocks} absmaxes (one per block of "
            f"{_BNB_BLOCK}), the checkpoint "
            f"{'no map' if not isinstance(qmap, torch.Tensor) else f'a map of {qmap.numel()}'}"
            f" and {'no' if not isinstance(absmax, torch.Tensor) else absmax.numel()} "
            "absmaxes (nothing was loaded)")
    values = qmap.float().to(codes.device)[codes.reshape(-1).long()]
    padded = torch.nn.functional.pad(values, (0, blocks * _BNB_BLOCK - values.numel()))
    scaled = padded.reshape(blocks, _BNB_BLOCK) * absmax.float().to(codes.device)[:, None]
    return scaled.reshape(-1)[:codes.numel()].reshape(codes.shape)
