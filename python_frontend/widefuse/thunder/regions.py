"""The Lightning Thunder fusion executor behind ``widefuse.thunder`` (see that package): the
claimed prims, the fusion pass that makes consecutive claimed symbols one region, and the
region's callable, which builds a FusionDefinition per input layout and runs it.

Needs Thunder (``lightning-thunder``); the rest of widefuse does not.
"""

from __future__ import annotations

import functools
import operator
import time
from typing import Any, Callable, Optional, Sequence

try:
    import thunder
    import torch
    from thunder.core.prims import OpTags, PrimIDs
    from thunder.core.proxies import NumberProxy, Proxy, TensorProxy, unvariableify, variableify
    from thunder.core.symbol import BoundSymbol
    from thunder.core.trace import TraceCtx, TraceProvenance, from_trace
    from thunder.core.transform_common import order_proxies
    from thunder.executors.data_dependent_partition import Node, fuse_bound_symbols
    from thunder.executors.passes import update_fusion_call_ctx
    from thunder.extend import FusionExecutor, register_executor
except ImportError as error:  # pragma: no cover - exercised only without Thunder
    raise ImportError("widefuse.thunder needs Lightning Thunder: pip install lightning-thunder"
                      ) from error

from .._widefuse import Error
from ..arguments import layout_of
from ..data_type import DataType, from_torch
from ..execution import options_key
from ..fusion_definition import FusionDefinition
from ..values import Tensor, Value

# Thunder prims and the widefuse ops they become.
_UNARY = {
    PrimIDs.ABS: "abs", PrimIDs.CEIL: "ceil", PrimIDs.COS: "cos", PrimIDs.EXP: "exp",
    PrimIDs.EXP2: "exp2", PrimIDs.EXPM1: "expm1", PrimIDs.FLOOR: "floor",
    PrimIDs.ISFINITE: "isfinite", PrimIDs.LOG: "log", PrimIDs.LOG1P: "log1p",
    PrimIDs.LOG2: "log2", PrimIDs.NEG: "neg", PrimIDs.RECIPROCAL: "reciprocal",
    PrimIDs.ROUND: "round", PrimIDs.RSQRT: "rsqrt", PrimIDs.SIGN: "sign", PrimIDs.SIN: "sin",
    PrimIDs.SQRT: "sqrt", PrimIDs.TANH: "tanh", PrimIDs.TRUNC: "trunc",
    PrimIDs.BITWISE_NOT: "bitwise_not", PrimIDs.ACOS: "acos", PrimIDs.ACOSH: "acosh",
    PrimIDs.ASIN: "asin", PrimIDs.ASINH: "asinh", PrimIDs.ATAN: "atan", PrimIDs.ATANH: "atanh",
    PrimIDs.COSH: "cosh", PrimIDs.SINH: "sinh", PrimIDs.TAN: "tan", PrimIDs.ERF: "erf",
    PrimIDs.ERFC: "erfc", PrimIDs.ERFINV: "erfinv", PrimIDs.ERFCINV: "erfcinv",
    PrimIDs.LGAMMA: "lgamma", PrimIDs.LOG10: "log10", PrimIDs.SIGNBIT: "signbit",
}
_BINARY = {
    PrimIDs.ADD: "add", PrimIDs.SUB: "sub", PrimIDs.MUL: "mul", PrimIDs.DIV: "div",
    PrimIDs.POW: "pow", PrimIDs.ATAN2: "atan2", PrimIDs.FMOD: "fmod",
    PrimIDs.MAXIMUM: "maximum", PrimIDs.MINIMUM: "minimum", PrimIDs.EQ: "eq", PrimIDs.NE: "ne",
    PrimIDs.LT: "lt", PrimIDs.LE: "le", PrimIDs.GT: "gt", PrimIDs.GE: "ge",
    PrimIDs.BITWISE_AND: "bitwise_and", PrimIDs.BITWISE_OR: "bitwise_or",
    PrimIDs.BITWISE_XOR: "bitwise_xor", PrimIDs.BITWISE_LEFT_SHIFT: "shift_left",
    PrimIDs.BITWISE_RIGHT_SHIFT: "shift_right", PrimIDs.REMAINDER: "remainder",
    PrimIDs.NEXTAFTER: "nextafter",
}
_TERNARY = {PrimIDs.WHERE: "where", PrimIDs.LERP: "lerp"}
_COMMENTS = {PrimIDs.COMMENT, PrimIDs.UNPACK_TRIVIAL, PrimIDs.UNPACK_EMPTY_DICT}


def _torch_dtype(dtype: Any) -> Any:
    return thunder.dtypes.to_torch_dtype(dtype)


def _supported_tensor(proxy: TensorProxy) -> bool:
    device = proxy.device
    data_type = from_torch(_torch_dtype(proxy.dtype))
    # Complex tensors stay with Thunder's other executors: most of the prims claimed here
    # (comparisons, floor, atan2, ...) are not defined on complex values.
    return (data_type is not None and not data_type.is_complex and
            device.type in ("cpu", "cuda"))


def _supported_operands(*operands: Any) -> bool:
    """Tensors widefuse reads, or numbers; at least one tensor (number-only arithmetic stays
    with Thunder, which computes it in Python)."""
    tensors = [x for x in operands if isinstance(x, TensorProxy)]
    for x in operands:
        if isinstance(x, Proxy) and not isinstance(x, (TensorProxy, NumberProxy)):
            return False
        if isinstance(x, (complex,)) or (isinstance(x, NumberProxy) and x.python_type is complex):
            return False
    return bool(tensors) and all(_supported_tensor(t) for t in tensors)


@functools.lru_cache(maxsize=None)
def _op_accepts(op: str, operands: tuple) -> bool:
    """Whether IR op `op` accepts operands of these kinds (("tensor" or "scalar", short
    dtype name) each): the IR's own typing rules decide, on a probe definition (once per
    combination), so the executor never claims what widefuse then refuses (bool + bool,
    nextafter of f16, ...)."""
    probe = FusionDefinition("probe")
    try:
        with probe:
            values = [probe.define_tensor(shape=[1], contiguity=[True], dtype=DataType(dtype))
                      if kind == "tensor" else probe.define_scalar(dtype=DataType(dtype))
                      for kind, dtype in operands]
            probe.add_output(probe.apply_op(op, values))
    except Error:
        return False
    return True


def _accepted_by(op: str) -> Callable[..., bool]:
    """Thunder's support check of the prim that becomes IR op `op`: supported operands
    (_supported_operands) whose dtypes the op takes (_op_accepts)."""
    numbers = {bool: "b8", int: "i64", float: "f64"}

    def check(*operands: Any) -> bool:
        if not _supported_operands(*operands):
            return False
        kinds = []
        for x in operands:
            if isinstance(x, TensorProxy):
                kinds.append(("tensor", from_torch(_torch_dtype(x.dtype)).value))
                continue
            kind = numbers.get(x.python_type if isinstance(x, NumberProxy) else type(x))
            if kind is None:
                return False
            kinds.append(("scalar", kind))
        return _op_accepts(op, tuple(kinds))

    return check


def _writes_a_view(bsym: BoundSymbol, producers: dict, executor: Any) -> bool:
    """A copy_ (or a torch-level symbol made of one) into a tensor that a shape op made in
    this trace (a slice, a view, a transpose of an input): its base may be another input of
    the same region, which one launch cannot both write through the view and read whole.
    torch runs such a symbol."""
    return any(_copies_into_a_view(flat, producers, executor)
               for flat in executor.flatten(bsym))


def _copies_into_a_view(bsym: BoundSymbol, producers: dict, executor: Any) -> bool:
    if bsym.sym.id != PrimIDs.COPY_:
        return False
    destination = bsym.args[1]
    while True:
        producer = producers.get(destination, None)
        if producer is None:
            return False  # an input of the trace
        if producer.sym.id != PrimIDs.UPDATE_ALIASES:
            return _is_shape_op(producer)
        # Thunder's renaming of a tensor that may alias others: what it renames.
        index = [out.name for out in producer.output].index(destination.name)
        destination = producer.args[0][index]


def _is_shape_op(bsym: BoundSymbol) -> bool:
    """Whether `bsym` is or contains one of Thunder's shape ops (OpTags.SHAPE_OP: slice,
    transpose, reshape, ...), which may return a view of their operand."""
    return OpTags.SHAPE_OP in (bsym.sym.tags or ()) or \
        any(_is_shape_op(sub) for sub in bsym.subsymbols)


class WidefuseExecutor(FusionExecutor):
    """Fuses consecutive pointwise symbols, connected or not, into widefuse fusions.

    `mode`: the segmentation mode, "batched" (default: one kernel per signature class, one for
    an optimizer step) or "per-component" (one kernel per connected subgraph: per parameter).
    `threads`: the host backend's CPU threads for CPU tensors (None: one per core).
    """

    def __init__(self, name: str = "widefuse", *, mode: str = "batched",
                 threads: Optional[int] = None) -> None:
        from .. import __version__
        super().__init__(name, version=__version__)
        self.mode = mode
        self.threads = threads
        for ids in (_UNARY, _BINARY, _TERNARY):
            for prim_id, op in ids.items():
                self.register_supported(prim_id, _accepted_by(op))
        self.register_supported(PrimIDs.CONVERT_ELEMENT_TYPE,
                                lambda a, dtype: isinstance(a, TensorProxy) and
                                _supported_tensor(a) and
                                from_torch(_torch_dtype(dtype)) is not None)
        self.register_supported(PrimIDs.BROADCAST_IN_DIM,
                                lambda a, shape, dims: isinstance(a, TensorProxy) and
                                _supported_tensor(a))
        self.register_supported(PrimIDs.COPY_, lambda source, destination, **_: (
            isinstance(source, TensorProxy) and isinstance(destination, TensorProxy) and
            _supported_operands(source, destination)))
        self.register_supported(PrimIDs.UPDATE_ALIASES, lambda aliases: all(
            isinstance(a, TensorProxy) and _supported_tensor(a) for a in aliases))

    def get_fuel(self, amount: int = 1, /) -> bool:
        return True

    def set_fuel(self, value: Any) -> None:
        pass

    def flatten(self, bsym: BoundSymbol) -> list[BoundSymbol]:
        """The symbols widefuse executes, with unclaimed torch-level ones decomposed."""
        if self.can_execute(bsym):
            return [bsym]
        return [flat for sub in bsym.subsymbols for flat in self.flatten(sub)]

    def fuse(self, region: Any, fusion_counter: int) -> BoundSymbol:
        # `region`: a _Region of fusion_pass, or Thunder's own (update_fusion_call_ctx
        # re-fuses each fusion with a region holding Variables).
        inputs = [unvariableify(x) for x in region.inputs]
        outputs = [unvariableify(x) for x in region.outputs]
        bsyms = [flat for bsym in region.bound_symbols for flat in self.flatten(bsym)]
        if not outputs:
            # A region of in-place updates only: return one copy_ result, because Thunder
            # 0.2.6's dce drops every symbol without outputs (remove_duplicate_number_proxies
            # treats "no outputs" as "all outputs duplicated"), DONT_DCE tag or not.
            copies = [b for b in bsyms if b.sym.id == PrimIDs.COPY_]
            outputs = [copies[-1].output] if copies else []
        name = f"widefuse{fusion_counter}"
        fusion = WidefuseFusion(name, bsyms, inputs, outputs, self.mode, self.threads)
        return self.register_temporary_operation(name, fusion, inputs=inputs, outputs=outputs,
                                                 bsyms=bsyms)

    def fusion_pass(self, trace: TraceCtx) -> TraceCtx:
        start = time.perf_counter_ns()
        fused = from_trace(trace)
        producers, consumers = thunder.core.utils.producers_and_consumers(trace)

        def claimed(bsym: BoundSymbol) -> bool:
            return self.can_fuse(bsym) and not _writes_a_view(bsym, producers, self)

        def fusible(node: Node) -> bool:
            return len(node.group_bsyms) > 1 or claimed(node.group_bsyms[0])

        groups = fuse_bound_symbols(trace, lambda a, b: fusible(a) and fusible(b))
        bsyms: list[BoundSymbol] = []
        counter = 0
        for group in groups:
            if len(group) == 1 and not claimed(group[0]):
                bsyms.append(group[0])
                continue
            bsyms.append(self.fuse(_Region(producers, consumers, group), counter))
            counter += 1
        fused.bound_symbols = bsyms
        # No dce here (nvFuser's pass has one): the trace comes dce'd from Thunder's
        # transform_for_execution, fusing kills nothing, and Thunder 0.2.6's dce is quadratic in
        # a region's size (_remove_noop_subsymbols gathers the whole fusion's tags once per
        # subsymbol): 10 s of the 200-parameter seed's fusion pass, minutes at 1000.
        fused = update_fusion_call_ctx(fused)
        elapsed = (time.perf_counter_ns() - start) // 1_000_000
        fused.set_provenance(TraceProvenance(f"widefuse fusion (took {elapsed} milliseconds)"))
        return fused


class _Region:
    """A group of symbols with the proxies it reads from before it (`inputs`) and those it
    produces for symbols after it (`outputs`), each in order of first appearance.

    Thunder's own Region tests membership with `in` on a list of BoundSymbols, whose `__eq__`
    compares structurally: quadratic in the region's size, which for an optimizer step over
    hundreds of parameters is minutes. Membership here is the same test in a set (BoundSymbols
    hash consistently with their `__eq__`).
    """

    def __init__(self, producers: dict, consumers: dict, bsyms: list[BoundSymbol]) -> None:
        self.bound_symbols = bsyms
        members = set(bsyms)
        consumed: dict[Any, Proxy] = {}
        produced: dict[Any, Proxy] = {}
        for bsym in bsyms:
            for x in bsym.flat_outs:
                if isinstance(x, Proxy) and producers.get(x, None) in members:
                    produced.setdefault(variableify(x), x)
            if bsym.sym.id in _COMMENTS:  # comments may produce but never consume
                continue
            for x in bsym.flat_args:
                if isinstance(x, Proxy):
                    consumed.setdefault(variableify(x), x)
        order = order_proxies(bsyms)
        inputs = [x for x in consumed.values() if producers.get(x, None) not in members]
        outputs = [x for x in produced.values()
                   if any(c not in members for c in consumers.get(x, ()))]
        self.inputs = sorted(inputs, key=lambda p: order[p.name])
        self.outputs = sorted(outputs, key=lambda p: order[p.name])


class WidefuseFusion:
    """The callable of one region: builds its FusionDefinition once per input layout (the
    tensors' strides, the numbers' types) and runs it on the tensors Thunder passes, in place,
    with no copies."""

    def __init__(self, name: str, bsyms: Sequence[BoundSymbol], inputs: Sequence[Proxy],
                 outputs: Sequence[Proxy], mode: str, threads: Optional[int] = None) -> None:
        self.name = name
        self.mode = mode
        self.threads = threads
        self._bsyms = list(bsyms)
        self._inputs = list(inputs)
        self._outputs = list(outputs)
        self._definitions: dict[tuple, tuple[FusionDefinition, Callable]] = {}
        self._last: Optional[tuple[FusionDefinition, Callable]] = None  # the entry last run
        self._matched: Optional[int] = None  # prematch's token, for the next call
        self._options = options_key(mode=mode, threads=threads)  # what execute() gets
        self.last_used: Optional[FusionDefinition] = None

    def __repr__(self) -> str:
        return f"<widefuse fusion {self.name}: {len(self._bsyms)} symbols>"

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self._inputs):
            raise Error(f"{self.name} takes {len(self._inputs)} inputs "
                        f"({', '.join(p.name for p in self._inputs)}), got {len(args)}")
        if not torch.is_grad_enabled():  # as optimizer steps run
            return self._run(args)
        with torch.no_grad():  # widefuse reads and writes parameters that require grad
            return self._run(args)

    def _run(self, args: tuple) -> Any:
        # The steady state: the last definition's execute() compares the tensors with
        # those of its last call in C++ (the same parameters and state, new grads), unless
        # widefuse.thunder.jit's prologue compared them already (prematch).
        if self._last is not None:
            fd, pick = self._last
            runner = fd.runner
            matched, self._matched = self._matched, None
            plain = (runner.launch_matched(args, matched, self._options)
                     if matched is not None else None)
            if plain is None:
                plain = runner.run_steady(args, self._options)
            if plain is not None:
                return pick(args, plain)
        # The definition depends on the layouts only: dtypes are Thunder's (its prologue
        # checks them, and execute() refuses others).
        # Shapes too: with cache="symbolic values" Thunder runs one trace over many.
        key = tuple((a.shape, a.stride()) if isinstance(a, torch.Tensor) else type(a)
                    for a in args)
        entry = self._definitions.get(key)
        if entry is None:
            entry = self._build(args)
            self._definitions[key] = entry
        fd, pick = entry
        self.last_used = fd
        self._last = entry
        try:
            plain = fd.execute(list(args), mode=self.mode, threads=self.threads)
        except Error as error:
            raise Error(f"{self.name}: {error}") from error
        return pick(args, plain)

    @property
    def input_names(self) -> list[str]:
        """The names of the region's inputs (Thunder's proxies), in call order."""
        return [proxy.name for proxy in self._inputs]

    def prematch(self, tensors: Sequence[Any], order: Sequence[int]) -> bool:
        """Compares the inputs of the next call, `tensors[order[i]]` for input i, with the
        steady state in C++ (rebinding new grads) ahead of the call, which then launches
        without comparing again; False when they need the call's own path."""
        if self._last is None:
            return False
        with torch.no_grad():
            token = self._last[0].runner.match_steady(tensors, order, self._options)
        self._matched = token
        return token is not None

    def _build(self, args: Sequence[Any]) -> tuple[FusionDefinition, Callable]:
        """The region's FusionDefinition for arguments laid out as `args`, and the function
        that picks the region's outputs from a call's inputs and the fusion's plain
        outputs."""
        fd = FusionDefinition(self.name)
        values: dict[str, Any] = {}
        try:
            with fd:
                for proxy, arg in zip(self._inputs, args):
                    values[proxy.name] = self._define_input(fd, proxy, arg)
                for bsym in self._bsyms:
                    self._translate(fd, bsym, values)
                sources = self._add_outputs(fd, values)
        except Error as error:
            raise Error(f"{self.name}: {error}") from error
        return fd, _picker(sources, len(args))

    @staticmethod
    def _define_input(fd: FusionDefinition, proxy: Proxy, arg: Any) -> Value:
        if isinstance(proxy, TensorProxy):
            # Thunder's dtype; the shape and layout of this call's tensor (a symbolic trace's
            # proxy has no fixed shape).
            if isinstance(arg, torch.Tensor):
                shape, strides = tuple(arg.shape), arg.stride()
            else:
                shape, strides = tuple(proxy.shape), ()
            if len(strides) != len(shape):
                raise Error(f"input '{proxy.name}' is a tensor of shape {list(shape)}; got "
                            f"{type(arg).__name__}")
            stride_order, contiguity = layout_of(shape, strides)
            return fd.define_tensor(shape=shape, contiguity=contiguity,
                                    dtype=from_torch(_torch_dtype(proxy.dtype)),
                                    stride_order=stride_order)
        dtype = {bool: "b8", int: "i64", float: "f64"}.get(type(arg))
        if dtype is None:
            raise Error(f"input '{proxy.name}' is a {type(arg).__name__}: widefuse takes tensors "
                        "and numbers")
        return fd.define_scalar(dtype=dtype)

    def _translate(self, fd: FusionDefinition, bsym: BoundSymbol, values: dict) -> None:
        def value(x: Any) -> Any:
            return values[x.name] if isinstance(x, Proxy) else x

        prim_id = bsym.sym.id
        args = [value(x) for x in bsym.args]
        if prim_id == PrimIDs.UPDATE_ALIASES:
            for alias, out in zip(bsym.args[0], bsym.output):
                values[out.name] = values[alias.name]
            return
        if prim_id == PrimIDs.COPY_:
            source, destination = args[0], args[1]
            if not isinstance(destination, Tensor):
                raise Error(f"copy_ into '{bsym.args[1].name}', which is not a tensor input")
            destination.copy_(source)
            values[bsym.output.name] = destination
            return
        if prim_id == PrimIDs.CONVERT_ELEMENT_TYPE:
            result = fd.ops.cast(args[0], from_torch(_torch_dtype(bsym.args[1])))
        elif prim_id == PrimIDs.BROADCAST_IN_DIM:
            result = fd.ops.broadcast_in_dim(args[0], list(bsym.args[1]), list(bsym.args[2]))
        else:
            op = _UNARY.get(prim_id) or _BINARY.get(prim_id) or _TERNARY.get(prim_id)
            result = fd.apply_op(op, args)
        output = bsym.output
        expected = from_torch(_torch_dtype(output.dtype))
        if isinstance(result, Value) and result.dtype is not expected:
            result = result.to(expected)  # Thunder decided the result type; follow it
        values[output.name] = result

    def _add_outputs(self, fd: FusionDefinition, values: dict) -> list:
        """Where each region output comes from: ("input", i) for an input (written in place
        or passed through) or ("output", j) for the fusion's plain output j."""
        input_values = {id(values[p.name]): i for i, p in enumerate(self._inputs)}
        sources: list = []
        plain = 0
        for proxy in self._outputs:
            result = values[proxy.name]
            if id(result) in input_values:  # an input, written in place or not
                sources.append(("input", input_values[id(result)]))
                continue
            fd.add_output(result.clone())  # a fresh value, even where it is an input's
            sources.append(("output", plain))
            plain += 1
        return sources


def _picker(sources: Sequence[tuple[str, int]], inputs: int) -> Callable:
    """pick(args, plain): the region's outputs from `sources` (_add_outputs), in C (an
    optimizer step returns thousands of them)."""
    indices = [index if kind == "input" else inputs + index for kind, index in sources]
    if not indices:
        return lambda args, plain: ()
    pick = operator.itemgetter(*indices)
    if len(indices) == 1:
        return lambda args, plain: (pick((*args, *plain)),)
    if all(kind == "input" for kind, _ in sources):
        return lambda args, plain: pick(args)
    return lambda args, plain: pick((*args, *plain))


executor = register_executor(WidefuseExecutor())
"""The executor to pass to ``thunder.jit(fn, executors=[widefuse.thunder.executor])``."""
