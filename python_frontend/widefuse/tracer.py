"""``widefuse.trace(fn)``: runs `fn` on proxies once per trace key, records the
FusionDefinition it builds, and executes that definition on every call.

Array arguments (anywhere in nested lists, tuples and dicts) become tensor inputs; the same
array object passed twice is one input. Python numbers, strings and None stay Python values:
they are constants of the recorded definition and part of the cache key, as in Thunder.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import operator
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, Optional

import numpy as np

from ._widefuse import Error, prepare_host_compiler, select_backend, structure_key
from .arguments import layout_of, read_layouts
from .data_type import from_short_name
from .execution import options_key
from .declarations import tensor_declaration
from .fusion_definition import FusionDefinition
from .values import Tensor, Value


def _is_array(value: Any) -> bool:
    return any(hasattr(value, attribute) for attribute in
               ("__array_interface__", "__cuda_array_interface__", "__dlpack__"))


class _Leaf(int):
    """A position in the argument structure holding an array: the index of its input. An int,
    so that making one (a first call makes one per array) runs no Python code."""

    __slots__ = ()

    @property
    def input(self) -> int:
        return int(self)


def _layouts(arrays: list) -> tuple:
    """The trace key's part after the structure key: each array's (dtype short name, shape,
    strides in elements, on device), read in C++ by the argument reader (whose refusals this
    raises, naming "argument i")."""
    return tuple(read_layouts(arrays))


def _runs_on_host(backend: str, layouts: tuple) -> bool:
    """Whether execute() with `backend` runs arrays of these layouts on the host backend (the
    C++ rule of auto); False too where it refuses them (execute() then says why)."""
    try:  # (map and itemgetter: no Python call per array)
        return select_backend(backend, any(map(operator.itemgetter(3), layouts))) == "host"
    except Error:
        return False


def _leaf_key(value: Any) -> Optional[tuple]:
    """For the C++ structure walk (structure_key): None for an array, else the constant key
    of a leaf that is neither a container nor a NumPy or torch array."""
    if _is_array(value) and not isinstance(value, (str, bytes, np.generic)):
        return None
    return _constant_key(value)


def _constant_key(value: Any) -> tuple:
    """The cache key of a non-array argument, which becomes a constant of the recording."""
    if isinstance(value, np.generic):  # NumPy scalars are numbers, not arrays
        value = value.item()
    if isinstance(value, Value):
        raise Error("a traced function was given a widefuse value; pass arrays")
    if not isinstance(value, Hashable):
        raise Error(f"traced functions take arrays, numbers, strings, None and lists, tuples "
                    f"and dicts of them; got {type(value).__name__}")
    # Floats by their bits: -0.0 is not 0.0, and every NaN argument is the same constant
    # (complex numbers too, part by part).
    if type(value) is float:
        return ("constant", "float", value.hex())
    if type(value) is complex:
        return ("constant", "complex", value.real.hex(), value.imag.hex())
    return ("constant", type(value).__name__, value)


def _structure(value: Any, seen: dict) -> Any:
    """`value` with each array replaced by _Leaf(its input index), as structure_key numbered
    them (`seen`: input index by id); built only when a new trace key is recorded."""
    # `seen` holds arrays only, all alive while this runs: an id found there is that array
    # (asking a torch tensor for the array attributes costs more than the whole lookup).
    index = seen.get(id(value))
    if index is not None:
        return _Leaf(index)
    if isinstance(value, (list, tuple)):
        # The arrays directly in a list (an optimizer's parameters) without a further call.
        items = []
        for item in value:
            index = seen.get(id(item))
            items.append(_structure(item, seen) if index is None else _Leaf(index))
        if isinstance(value, list):
            return items
        # A namedtuple keeps its type (optimizer code reads hyperparameters by field name).
        return type(value)._make(items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {name: _structure(item, seen) for name, item in value.items()}
    return value.item() if isinstance(value, np.generic) else value


def _substitute(structure: Any, proxies: list) -> Any:
    if isinstance(structure, _Leaf):
        return proxies[structure]
    if isinstance(structure, list):
        return [proxies[item] if type(item) is _Leaf else _substitute(item, proxies)
                for item in structure]
    if isinstance(structure, tuple):
        items = [_substitute(item, proxies) for item in structure]
        return type(structure)._make(items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, dict):
        return {name: _substitute(item, proxies) for name, item in structure.items()}
    return structure


def _proxies(fd: FusionDefinition, layouts: tuple) -> list:
    """One tensor input of `fd` per array, declared from its layout (_layouts). An optimizer's
    arrays share a few layouts, so each layout is declared once, and each run of arrays of one
    declaration is defined in one call. A run is defined before the next new layout is
    declared, so errors come in the order of the arrays."""
    proxies: list = []
    declarations: dict = {}
    declaration, length = None, 0  # the run not defined yet
    last = None  # the last layout looked up (read_layouts makes equal layouts one object)
    for layout in layouts:
        if layout is not last:
            found = declarations.get(layout)
            if found is None:
                if length:
                    proxies += fd.define_declared_tensors(declaration, length)
                    declaration, length = None, 0
                name, shape, strides, _ = layout
                stride_order, contiguity = layout_of(shape, strides)
                found = declarations[layout] = tensor_declaration(
                    shape, contiguity, from_short_name(name), stride_order)
            if found is not declaration:
                if length:
                    proxies += fd.define_declared_tensors(declaration, length)
                declaration, length = found, 0
            last = layout
        length += 1
    if length:
        proxies += fd.define_declared_tensors(declaration, length)
    return proxies


@contextlib.contextmanager
def _no_cyclic_collection() -> Iterator[None]:
    """No cyclic garbage collection inside: a first call (the trace key, the recording, the
    first execute()) makes a few objects per array and per op and frees almost none of them,
    so the collector would only walk the growing heap again and again (0.16 s of 330
    collections at 10,000 parameters, outside the recording itself). Nested uses leave it to
    the outermost."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@dataclass
class _Recording:
    """One trace key's definition and where its outputs go in the return value."""

    definition: FusionDefinition
    result: Any  # the return structure with _Leaf(i) for output i


class TracedFunction:
    """The callable `widefuse.trace(fn)` returns."""

    def __init__(self, function: Callable[..., Any], mode: str, backend: str,
                 execute_options: dict) -> None:
        functools.update_wrapper(self, function)
        self._function = function
        self._mode = mode
        self._backend = backend
        self._execute_options = execute_options
        self._recordings: dict[tuple, _Recording] = {}
        # By structure key: the recording the last call of that structure ran, whose
        # execute() steady state a next call tries first.
        self._by_structure: dict[tuple, _Recording] = {}
        try:
            self._options: Optional[tuple] = options_key(mode=mode, backend=backend,
                                                         **execute_options)
        except TypeError:  # an unknown option: execute() names it at the first call
            self._options = None
        self.last_definition: Optional[FusionDefinition] = None

    @property
    def cache_size(self) -> int:
        """Number of trace keys recorded so far."""
        return len(self._recordings)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The steady state: the structure alone finds the recording, whose execute() then
        # compares the arrays' layouts in C++; anything else builds the whole trace key.
        arrays: list = []
        structure = structure_key((args, kwargs), arrays, _leaf_key)
        recording = self._by_structure.get(structure)
        if recording is not None and self._options is not None:
            outputs = recording.definition.runner.run_steady(arrays, self._options)
            if outputs is not None:
                self.last_definition = recording.definition
                return _substitute(recording.result, outputs)
        with _no_cyclic_collection():
            recording, arrays = self._recording_for(args, kwargs, structure, arrays)
            self._by_structure[structure] = recording
            outputs = recording.definition.execute(arrays, mode=self._mode,
                                                   backend=self._backend,
                                                   **self._execute_options)
        return _substitute(recording.result, outputs)

    def prepare(self, *args: Any, **kwargs: Any) -> Callable[[], Any]:
        """Records (if needed) and prepares a call for arrays that stay in place: the result,
        called with no arguments, runs the step again on the same arrays without building the
        trace key or checking anything (FusionDefinition.prepare), which makes a step's cost
        independent of the number of parameters. The arrays must keep their shape, strides
        and memory while it is used; Python values are those of this call."""
        with _no_cyclic_collection():
            recording, arrays = self._recording_for(args, kwargs)
            prepared = recording.definition.prepare(arrays, mode=self._mode,
                                                    backend=self._backend,
                                                    **self._execute_options)
        return lambda: _substitute(recording.result, prepared())

    def _recording_for(self, args: tuple, kwargs: dict, structure: Optional[tuple] = None,
                       arrays: Optional[list] = None) -> tuple[_Recording, list]:
        """The recording of this call's trace key (made now if new) and its arrays.
        `structure` and `arrays`: the call's structure_key and arrays, when already walked."""
        if structure is None or arrays is None:
            arrays = []
            structure = structure_key((args, kwargs), arrays, _leaf_key)
        layouts = _layouts(arrays)
        trace_key = (structure, layouts)
        recording = self._recordings.get(trace_key)
        if recording is None:
            if _runs_on_host(self._backend, layouts):
                # The host compiler's prelude builds while the function records.
                prepare_host_compiler()
            seen = {id(array): index for index, array in enumerate(arrays)}
            recording = self._record(_structure((args, kwargs), seen), layouts)
            self._recordings[trace_key] = recording
        self.last_definition = recording.definition
        return recording, arrays

    def _record(self, structure: Any, layouts: tuple) -> _Recording:
        name = getattr(self._function, "__name__", "traced")
        fd = FusionDefinition(name if name.isidentifier() else "traced")
        with _no_cyclic_collection(), fd:
            proxies = _proxies(fd, layouts)
            args, kwargs = _substitute(structure, proxies)
            returned = self._function(*args, **kwargs)
            outputs: list = []
            result = self._outputs(fd, returned, outputs)
        return _Recording(fd, result)

    def _outputs(self, fd: FusionDefinition, returned: Any, outputs: list) -> Any:
        """Adds every tensor in the return value as an output; returns the structure."""
        if isinstance(returned, Value):
            if not isinstance(returned, Tensor):
                raise Error("a traced function returned a scalar expression; return tensors")
            # An output is always a fresh value, even when the function returns an input.
            fd.add_output(fd.ops.set(returned))
            outputs.append(returned)
            return _Leaf(len(outputs) - 1)
        if isinstance(returned, (list, tuple)):
            items = [self._outputs(fd, item, outputs) for item in returned]
            return items if isinstance(returned, list) else tuple(items)
        if isinstance(returned, dict):
            return {name: self._outputs(fd, item, outputs) for name, item in returned.items()}
        return returned


def trace(function: Optional[Callable[..., Any]] = None, *, mode: str = "auto",
          backend: str = "auto", **execute_options: Any) -> Any:
    """Traces `function` into a fusion per trace key and runs it on each call.

    Usable as ``trace(fn)``, ``@trace`` or ``@trace(mode="batched")``. `mode`, `backend` and
    further options (block_order, host_execution, threads, fmad, arch) are passed to
    FusionDefinition.execute. The returned callable's ``last_definition`` is the
    FusionDefinition of the last call (``repr`` it, or read ``last_cuda_code()``).
    """
    if function is None:
        return lambda inner: trace(inner, mode=mode, backend=backend, **execute_options)
    return TracedFunction(function, mode, backend, execute_options)
