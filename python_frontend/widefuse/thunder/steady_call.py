"""A widefuse.thunder.jit function's steady call: the last Thunder call replayed without
Thunder's dispatch.

Each call of a ``thunder.jit`` function computes its cache info (grad mode, autocast, default
dtype and device, an alias search that asks every tensor for its storage), tries its cache
entries' prologues, and runs the one that passes. For an optimizer step over N parameters that
is several microseconds a tensor in Python, more than the step itself on the CPU. When a
step's trace is one widefuse region, the checks its prologue makes can be made otherwise:

| the prologue checks | the steady call checks |
|---|---|
| lengths, keys and constants of the arguments | the structure key (C++): containers, lengths, dict keys, every constant by type and value, repeated tensors |
| each tensor's shape, device, dtype, requires_grad | the region's steady state (C++): address, sizes, strides, dtype, device; memory shared with a copy_ destination is refused |
| grad mode, autocast, default dtype and device | the same, asked of torch |
| Thunder's alias search (no two tensors share storage) | the region: a tensor sharing memory with one that copy_ writes is refused |

A steady call is recorded after a call through Thunder, from that call's cache entry, when
the prologue holds only the symbols above; it is tried first on the next call. When any of its
checks fails the call goes through Thunder, which decides (a cache hit, or a trace of the new
inputs), and the steady call is recorded again from that call.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Sequence

import torch
from thunder.common import CACHE_OPTIONS
from thunder.executors.torchex import no_autocast

from .._widefuse import structure_key
from .regions import WidefuseFusion

try:  # Thunder's own tensor check, as its prologue runs it
    from thunder.executors.pythonex import _check_tensor_shape_and_metadata_impl as thunder_check
except ImportError as error:  # pragma: no cover - other Thunder versions
    raise ImportError("widefuse.thunder.jit needs Thunder's prologue check "
                      "(thunder.executors.pythonex); this Thunder version lacks it") from error

# Constants a structure key compares by type and value; any other leaf makes the call go
# through Thunder.
_CONSTANT_TYPES = (int, bool, str, type(None), torch.dtype, torch.device)
# Prologue symbols that only check what the structure key compares.
_ARGUMENT_CHECKS = {"check_len", "check_number_type_and_value", "check_string_value",
                    "check_literal_like", "check_none", "check_empty"}
_IGNORED = {"python_del", "comment", "python_return"}


def leaf_key(value: Any) -> Any:
    """A constant's part of the structure key: equal keys for the same type and value (floats
    by their bits), a key equal to nothing for anything else."""
    kind = type(value)
    if kind is float:
        return (float, value.hex())
    if kind is complex:
        return (complex, value.real.hex(), value.imag.hex())
    if kind in _CONSTANT_TYPES:
        return (kind, value)
    return object()


def _environment() -> tuple:
    """What Thunder's cache info holds that a widefuse step can depend on, read from torch."""
    return (torch.is_grad_enabled(), torch.is_autocast_enabled("cuda"),
            torch.is_autocast_enabled("cpu"), torch.get_default_dtype(),
            torch.get_default_device())


def _closure(fn: Callable) -> dict[str, Any]:
    return dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))


_NO_GRAD = torch.no_grad()(lambda: None).__code__
_NO_AUTOCAST = no_autocast(lambda: None).__code__


def _undecorated(fn: Callable) -> Callable:
    """`fn` without the decorators Thunder puts on a computation that do nothing in a steady
    call's environment (grad mode and autocast off): torch.no_grad() and Thunder's
    no_autocast (when it restores autocast off). Any other decorator stays."""
    while True:
        code = getattr(fn, "__code__", None)
        if code is _NO_GRAD:
            factory = _closure(fn).get("ctx_factory")
            if type(getattr(factory, "__self__", None)) is not torch.no_grad:
                return fn
            fn = _closure(fn)["func"]
        elif code is _NO_AUTOCAST:
            closure = _closure(fn)
            if closure.get("prev") is not False or closure.get("prev_cpu") is not False:
                return fn
            fn = closure["fn"]
        else:
            return fn


class SteadyCall:
    """One cache entry's replay: the call's structure key, where the computation's inputs and
    the region's inputs are among the call's tensors, and the tensors the prologue checks that
    the region does not read."""

    def __init__(self, key: tuple, environment: tuple, entry: Any, region: WidefuseFusion,
                 inputs: list[int], order: list[int], others: list[tuple[int, tuple]]) -> None:
        self.key = key
        self.environment = environment
        self._computation = _undecorated(entry.computation_fn)
        self._epilogue = entry.epilogue_fn
        self._region = region
        self._inputs = _getter(inputs)
        self._order = order
        self._others = others

    def call(self, args: tuple, kwargs: dict) -> tuple[bool, Any]:
        """(True, the result) when the call's arguments pass every check; (False, None) when
        the call must go through Thunder. Nothing is launched or written before the checks
        pass."""
        if _environment() != self.environment:
            return False, None
        tensors: list = []
        if structure_key((args, kwargs), tensors, leaf_key) != self.key:
            return False, None
        try:
            for index, facts in self._others:
                thunder_check(tensors[index], *facts)
        except Exception:  # Thunder's check failed: Thunder decides what this call is
            return False, None
        if not self._region.prematch(tensors, self._order):
            return False, None
        result = self._computation(*self._inputs(tensors))
        return True, self._epilogue(*result)


def _getter(indices: Sequence[int]) -> Callable[[list], tuple]:
    if not indices:
        return lambda tensors: ()
    if len(indices) == 1:
        index = indices[0]
        return lambda tensors: (tensors[index],)
    return operator.itemgetter(*indices)


def record(jitted: Any, args: tuple, kwargs: dict,
           plans: dict) -> tuple[Optional[SteadyCall], str]:
    """The steady call of the cache entry the last call of `jitted` (a thunder.jit function)
    ran, for arguments like `args` and `kwargs`; (None, why) when its prologue checks what a
    steady call cannot. `plans` keeps each entry's reading of its prologue (_plan), so a
    function whose calls keep going through Thunder reads it once."""
    environment = _environment()
    if environment[0] or environment[1] or environment[2]:
        return None, "grad mode or autocast is on"
    cd, cs = jitted._lc_cd, jitted._lc_cs
    if cd.cache_option is not CACHE_OPTIONS.CONSTANT_VALUES:
        return None, f"the cache option is {cd.cache_option}"
    if getattr(cd.fn, "use_ddp", False) or getattr(cd.fn, "use_fsdp", False):
        return None, "the function is data parallel"
    entry = next((e for e in cs.interpreter_cache if e.prologue_fn is cs.last_prologue), None)
    if entry is None:
        return None, "the last call ran no cache entry"
    if entry.prologue_fn not in plans:
        plans[entry.prologue_fn] = _plan(entry)
    plan, why = plans[entry.prologue_fn]
    if plan is None:
        return None, why
    paths, tensor_checks, cache_checks, returned, region = plan
    if not _environment_matches(cache_checks):
        return None, "the prologue checks cache info other than the environment's"
    tensors: list = []
    key = structure_key((args, kwargs), tensors, leaf_key)
    position = {id(t): i for i, t in enumerate(tensors)}

    def index_of(name: str) -> Optional[int]:
        path = paths.get(name)
        if path is None or path[0] not in ("args", "kwargs"):
            return None
        value = args if path[0] == "args" else kwargs
        try:
            for step in path[1:]:
                value = value[step]
        except (IndexError, KeyError, TypeError):
            return None
        return position.get(id(value))

    inputs, pro_to_epi = returned
    indices = [index_of(name) for name in inputs]
    order = [index_of(name) for name in region.input_names]
    if pro_to_epi or None in indices or None in order:
        return None, "a computation input is not one of the call's tensors"
    read = set(region.input_names)
    others = []
    for name, facts in tensor_checks:
        if name not in read:
            index = index_of(name)
            if index is None:
                return None, f"the prologue checks {name}, which is not one of the call's tensors"
            others.append((index, facts))
    return SteadyCall(key, environment, entry, region, indices, order, others), ""


def _plan(entry: Any) -> tuple[Optional[tuple], str]:
    """An entry's prologue read (_read_prologue) and its region; (None, why) when it has no
    steady call."""
    if entry.backward_fn is not None or entry.epilogue_fn is None:
        return None, "the cache entry has a backward or no epilogue"
    plan, why = _read_prologue(entry.prologue_traces[-1])
    if plan is None:
        return None, why
    region = _the_region(entry)
    if region is None:
        return None, "the computation is not one widefuse region"
    return (*plan, region), ""


def _read_prologue(prologue: Any) -> tuple[Optional[tuple], str]:
    """The prologue's paths (name -> ("args" | "kwargs" | "cache_info", key, ...)), its tensor
    checks [(name, facts)], its cache-info checks {key: value} and the names it returns
    (computation inputs, epilogue inputs); (None, why) for a symbol a steady call cannot
    check."""
    paths: dict[str, tuple] = {}
    tensor_checks: list[tuple[str, tuple]] = []
    cache_checks: dict[str, Any] = {}
    returned: Optional[tuple] = None
    for bsym in prologue.bound_symbols:
        name = bsym.sym.name
        if name == "unpack_trivial":
            out = getattr(bsym.output, "name", None)
            if out not in ("args", "kwargs"):
                return None, f"the prologue unpacks {out}"
            paths[out] = (out,)
        elif name == "unpack_cache_info":
            paths[bsym.output.name] = ("cache_info",)
        elif name == "unpack_getitem":
            source, item = bsym.args[0], bsym.args[1]
            if source.name not in paths:
                return None, f"the prologue reads an item of {source.name}"
            paths[bsym.output.name] = paths[source.name] + (item,)
        elif name == "unpack_sequence":
            source = bsym.args[0]
            if source.name not in paths:
                return None, f"the prologue unpacks {source.name}"
            for i, out in enumerate(bsym.output):
                paths[out.name] = paths[source.name] + (i,)
        elif name in _ARGUMENT_CHECKS:
            path = paths.get(getattr(bsym.args[0], "name", None))
            if path is None:
                return None, f"the prologue's {name} checks a value it did not unpack"
            if path[0] == "cache_info":
                if len(path) != 2 or len(bsym.args) < 2:
                    return None, f"the prologue's {name} checks cache info {path}"
                cache_checks[path[1]] = bsym.args[1]
        elif name.startswith("widefuse_check_inputs") or name == "check_tensor_shape_and_metadata":
            proxies, facts = ((bsym.args[0], bsym.args[1]) if name.startswith("widefuse")
                              else ((bsym.args[0],), (tuple(bsym.args[1:]),)))
            tensor_checks.extend((p.name, tuple(f)) for p, f in zip(proxies, facts))
        elif name in _IGNORED:
            if name == "python_return":
                inputs, pro_to_epi = bsym.args[0]
                returned = ([p.name for p in inputs], list(pro_to_epi))
        else:
            return None, f"the prologue has {name}"
    if returned is None:
        return None, "the prologue returns nothing"
    return (paths, tensor_checks, cache_checks, returned), ""


def _environment_matches(cache_checks: dict[str, Any]) -> bool:
    """True when the prologue's cache-info checks are the environment's, each with the value
    the current environment has (so comparing _environment() repeats them)."""
    grad, cuda_autocast, cpu_autocast, dtype, device = _environment()
    known = {"default_dtype": dtype, "default_device": device,
             "is_autocast_enabled": cuda_autocast or cpu_autocast,
             "is_grad_enabled": grad, "alias_tensor_indices": "", "no_grad_sync": False}
    for key, value in cache_checks.items():
        if key not in known or value != known[key] or type(value) is not type(known[key]):
            return False
    return not grad and not cuda_autocast and not cpu_autocast


def _the_region(entry: Any) -> Optional[WidefuseFusion]:
    trace = entry.computation_traces[-1]
    names = [b.sym.name for b in trace.bound_symbols if b.sym.name.startswith("widefuse")]
    if len(names) != 1:
        return None
    region = trace.python_ctx().get(names[0])
    return region if isinstance(region, WidefuseFusion) else None
