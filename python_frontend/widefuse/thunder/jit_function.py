"""``widefuse.thunder.jit(fn)``: ``thunder.jit`` for a step that widefuse runs whole, such as
an optimizer step, with Thunder's per-call work done by widefuse, once, in C++.

    step = widefuse.thunder.jit(optimizer_step)

On every call a ``thunder.jit`` function computes its cache info (with an alias search that
asks every tensor for its storage, about 1 us a tensor), runs its prologue (which checks each
tensor's shape, device, dtype and requires_grad in Python, about 2.4 us a tensor), and the
widefuse region then compares the same tensors again. Here:

- **The steady call** (steady_call.py): under torch.no_grad() (as optimizer steps
  run), a call like the last one skips Thunder's dispatch. Its structure key and the
  region's steady state (both in C++) check what the prologue and the cache info would, and
  the cache entry's computation runs. Anything else goes through Thunder, which decides.
- **The gate**: through Thunder, the prologue's tensor checks become one check whose first
  try is the region's steady state; the region then launches without comparing again. When
  that fails (a first call, another layout, grad mode on), Thunder's own checks run, tensor
  by tensor, with Thunder's outcome: a tensor of another shape or dtype is a cache miss and
  Thunder traces again.

The step must be one widefuse region: a fusion pass that leaves anything else in the trace
raises an Error saying so (use ``thunder.jit(fn, executors=[widefuse.thunder.executor])``).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable, Optional

import thunder
import torch
from thunder.core.prims import OpTags, PrimIDs
from thunder.core.symbol import Symbol
from thunder.core.trace import TraceCtx, from_trace, is_tracing
from thunder.core.transform_common import Transform

from .._widefuse import Error
from .regions import WidefuseExecutor, WidefuseFusion
from .steady_call import SteadyCall, record, thunder_check as _thunder_check

_gates = itertools.count()
# What a step's fused trace may hold besides its one widefuse region.
_ALLOWED = {PrimIDs.RETURN, PrimIDs.COMMENT, PrimIDs.UNPACK_TRIVIAL, PrimIDs.UNPACK_SEQUENCE,
            PrimIDs.UNPACK_EMPTY_DICT, PrimIDs.DEL}


def jit(fn: Callable[..., Any], *, mode: str = "batched", threads: Optional[int] = None,
        **options: Any) -> Callable[..., Any]:
    """``thunder.jit(fn)`` with widefuse as its executor and its tensor checks (see the
    module's docstring). `mode` and `threads` are WidefuseExecutor's; `options` go to
    thunder.jit (not `executors` or `transforms`)."""
    for taken in ("executors", "transforms"):
        if taken in options:
            raise TypeError(f"widefuse.thunder.jit() sets {taken}= itself; use thunder.jit for "
                            "other choices")
    executor = GatedExecutor(f"widefuse_jit{next(_gates)}", mode=mode, threads=threads)
    jitted = thunder.jit(fn, executors=[executor], transforms=[_InputChecks(executor)], **options)
    # A module's prologue unpacks its parameters, which a steady call does not check: its
    # ThunderModule is returned as it is.
    return jitted if isinstance(fn, torch.nn.Module) else JitFunction(jitted)


class JitFunction:
    """A widefuse.thunder.jit function: tries the steady call of the last call's cache entry
    first (steady_call.py), else calls the thunder.jit function and records its
    steady call. thunder.last_traces, cache_hits and the other inspection functions work on
    it as on the thunder.jit function."""

    def __init__(self, jitted: Callable[..., Any]) -> None:
        self._jitted = jitted
        self._steady: Optional[SteadyCall] = None
        self._plans: dict = {}  # record()'s reading of each cache entry
        self.steady_calls = 0  # calls that took the steady call
        self.not_steady_because = "no call yet"  # why the last recording failed, if it did
        functools.update_wrapper(self, jitted)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        steady = self._steady
        if steady is not None and not is_tracing():
            done, result = steady.call(args, kwargs)
            if done:
                stats = self._jitted._lc_cs
                stats.calls += 1
                stats.cache_hits += 1
                self.steady_calls += 1
                return result
        self._steady = None
        result = self._jitted(*args, **kwargs)
        if not is_tracing():
            self._steady, self.not_steady_because = record(self._jitted, args, kwargs,
                                                               self._plans)
        return result

    def __getattr__(self, name: str) -> Any:  # _lc_cd, _lc_cs, ... of the thunder.jit function
        return getattr(self._jitted, name)


class _Gate:
    """One compiled trace's tensor checks: its prologue calls `check` with the tensors in the
    prologue's order; once the fusion pass has bound the region, the first try is the
    region's steady state."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.region: Optional[WidefuseFusion] = None
        self.order: Optional[list[int]] = None  # region input i is tensors[order[i]]
        self.unmatched: list[int] = []  # the other tensors

    def bind(self, region: WidefuseFusion) -> None:
        positions = {name: i for i, name in enumerate(self.names)}
        order = [positions.get(name) for name in region.input_names]
        self.region = region
        self.order = None if None in order else order
        self.unmatched = [i for i in range(len(self.names)) if i not in set(order)]

    def check(self, tensors: tuple, expected: tuple) -> None:
        region = self.region
        # Under grad mode Thunder's trace may depend on requires_grad: its checks decide.
        if (region is not None and self.order is not None and not torch.is_grad_enabled() and
                region.prematch(tensors, self.order)):
            for index in self.unmatched:  # checked tensors the region does not read
                _thunder_check(tensors[index], *expected[index])
            return
        for tensor, facts in zip(tensors, expected):
            _thunder_check(tensor, *facts)


class _InputChecks(Transform):
    """Replaces a prologue's per-tensor checks with one _Gate check."""

    def __init__(self, executor: GatedExecutor) -> None:
        self._executor = executor

    def transform_traces_pre_prologue(self, prologue: TraceCtx, computation: TraceCtx,
                                      epilogue: Optional[TraceCtx], **kwargs: Any) -> tuple:
        checks = [b for b in prologue.bound_symbols
                  if b.sym.id == PrimIDs.CHECK_TENSOR_SHAPE_AND_METADATA]
        if not checks:
            return prologue, computation, epilogue
        gate = _Gate([b.args[0].name for b in checks])
        name = f"widefuse_check_inputs_{next(_gates)}"
        # DONT_DCE: the check has no outputs, and the prologue's dce would drop it.
        symbol = Symbol(name=name, meta=None, id=name, is_prim=True, python_impl=gate.check,
                        tags=(OpTags.DONT_DCE,))
        gated = symbol.bind(tuple(b.args[0] for b in checks),
                            tuple(tuple(b.args[1:]) for b in checks), output=None,
                            _call_ctx={name: gate.check})
        kept = [b for b in prologue.bound_symbols
                if b.sym.id != PrimIDs.CHECK_TENSOR_SHAPE_AND_METADATA]
        at = next((i for i, b in enumerate(kept) if b.sym.id == PrimIDs.RETURN), len(kept))
        transformed = from_trace(prologue)
        transformed.bound_symbols = kept[:at] + [gated] + kept[at:]
        self._executor.pending_gate = gate
        return transformed, computation, epilogue


class GatedExecutor(WidefuseExecutor):
    """WidefuseExecutor for widefuse.thunder.jit: its fusion pass requires the step to be one
    region and binds that region to the prologue's gate."""

    def __init__(self, name: str, **options: Any) -> None:
        super().__init__(name, **options)
        self.pending_gate: Optional[_Gate] = None

    def fusion_pass(self, trace: TraceCtx) -> TraceCtx:
        fused = super().fusion_pass(trace)
        regions = [b for b in fused.bound_symbols if b.sym.name.startswith("widefuse")]
        others = [b for b in fused.bound_symbols
                  if b not in regions and b.sym.id not in _ALLOWED]
        if len(regions) != 1 or others:
            left = ", ".join(sorted({b.sym.name for b in others})) or "none"
            raise Error(f"widefuse.thunder.jit runs functions that are one widefuse region (an "
                        f"optimizer step); this one has {len(regions)} regions and other "
                        f"symbols: {left}. Use thunder.jit(fn, executors="
                        "[widefuse.thunder.executor]) instead")
        region = fused.python_ctx()[regions[0].sym.name]
        if self.pending_gate is not None:
            self.pending_gate.bind(region)
            self.pending_gate = None
        return fused
