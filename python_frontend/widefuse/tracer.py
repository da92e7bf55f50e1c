"""``widefuse.trace(fn)``: runs `fn` on proxies once per trace key, records the
FusionDefinition it builds, and executes that definition on every call.

Array arguments (anywhere in nested lists, tuples and dicts) become tensor inputs; the same
array object passed twice is one input. Python numbers, strings and None stay Python values:
they are constants of the recorded definition and part of the cache key, as in Thunder.
"""

from __future__ import annotations

import functools
import gc
import sys
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional

import numpy as np

from ._widefuse import Error, structure_key
from .arguments import array_view, layout_of
from .execution import options_key
from .declarations import tensor_declaration
from .fusion_definition import FusionDefinition
from .values import Tensor, Value


def _is_array(value: Any) -> bool:
    return any(hasattr(value, attribute) for attribute in
               ("__array_interface__", "__cuda_array_interface__", "__dlpack__"))


@dataclass
class _Leaf:
    """A position in the argument structure holding an array (index into the inputs)."""

    input: int


# The array types every call meets (an optimizer's parameters, grads and state), whose
# arrays the walk below takes without asking what else they are: NumPy's, and torch's once
# the program has imported torch.
_PLAIN_ARRAYS: set = {np.ndarray}


def _plain_arrays() -> set:
    if len(_PLAIN_ARRAYS) == 1 and "torch" in sys.modules:
        torch = sys.modules["torch"]
        _PLAIN_ARRAYS.update((torch.Tensor, torch.nn.Parameter))
    return _PLAIN_ARRAYS


def _collect(value: Any, arrays: list, seen: dict, key: list, views: dict) -> None:
    """Appends every distinct array in `value` to `arrays` (`seen` maps id -> index) and the
    trace key of `value` to `key` (each array's dtype, shape, strides and device), and the
    views of arrays other than NumPy's to `views` by index (recording declares from them). The walk
    is the one structure_key does in C++ for the structure key (bindings/structure_key.cpp):
    both take the same arrays in the same order."""
    plain = _plain_arrays()
    if type(value) in plain:
        _collect_array(value, arrays, seen, key, views)
    elif isinstance(value, (list, tuple)):
        key.append((type(value).__name__, len(value)))
        for item in value:
            if type(item) in plain:
                index = seen.get(id(item))
                if index is None:
                    seen[id(item)] = len(arrays)
                    arrays.append(item)
                    key.append(_describe(item, len(arrays) - 1, views))
                else:
                    key.append(("same array", index))
            else:
                _collect(item, arrays, seen, key, views)
    elif isinstance(value, dict):
        key.append(("dict", tuple(value)))
        for item in value.values():
            _collect(item, arrays, seen, key, views)
    elif _is_array(value) and not isinstance(value, (str, bytes, np.generic)):
        _collect_array(value, arrays, seen, key, views)
    else:
        key.append(_constant_key(value))


def _leaf_key(value: Any) -> Optional[tuple]:
    """For the C++ structure walk (structure_key): None for an array, else the constant key
    of a leaf that is neither a container nor a NumPy or torch array."""
    if _is_array(value) and not isinstance(value, (str, bytes, np.generic)):
        return None
    return _constant_key(value)


def _describe(array: Any, index: int, views: dict) -> tuple:
    """An array's part of the trace key; its view goes to `views` (NumPy arrays' need none)."""
    if type(array) is np.ndarray:
        return (array.dtype, array.shape, array.strides)
    view = views[index] = array_view(array, f"argument {index}")
    return ("array", view.dtype.value, view.shape, view.strides, view.on_device)


def _collect_array(value: Any, arrays: list, seen: dict, key: list, views: dict) -> None:
    index = seen.get(id(value))
    if index is None:
        seen[id(value)] = len(arrays)
        arrays.append(value)
        key.append(_describe(value, len(arrays) - 1, views))
    else:
        key.append(("same array", index))


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
    """`value` with each array replaced by _Leaf(its input index), as _collect numbered them;
    built only when a new trace key is recorded."""
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
        return proxies[structure.input]
    if isinstance(structure, list):
        return [proxies[item.input] if type(item) is _Leaf else _substitute(item, proxies)
                for item in structure]
    if isinstance(structure, tuple):
        items = [_substitute(item, proxies) for item in structure]
        return type(structure)._make(items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, dict):
        return {name: _substitute(item, proxies) for name, item in structure.items()}
    return structure


def _proxies(fd: FusionDefinition, arrays: list, views: dict) -> list:
    """One tensor input of `fd` per array, declared from the array's view. An optimizer's
    arrays share a few layouts, so each layout is declared once (by NumPy layout and
    alignment, on which a NumPy array's view depends alone, and by view), and each run of
    arrays of one declaration is defined in one call. A run is defined before the next new
    layout is looked at, so errors come in the order of the arrays. `views`: the arrays'
    views the trace key was built from, by index (NumPy arrays' are made here)."""
    proxies: list = []
    declarations: dict = {}
    by_view: dict = {}
    run: list = [None, 0]  # the declaration and length of the run not defined yet
    for index, array in enumerate(arrays):
        layout = ((array.dtype, array.shape, array.strides)
                  if type(array) is np.ndarray and array.flags.aligned else None)
        declaration = declarations.get(layout)
        if declaration is None:
            if run[1]:
                proxies += fd.define_declared_tensors(*run)
                run = [None, 0]
            view = views.get(index) or array_view(array, f"argument {index}")
            described = (view.dtype, view.shape, view.strides)
            declaration = by_view.get(described)
            if declaration is None:
                stride_order, contiguity = layout_of(view.shape, view.strides)
                declaration = by_view[described] = tensor_declaration(
                    view.shape, contiguity, view.dtype, stride_order)
            if layout is not None:
                declarations[layout] = declaration
        if declaration is not run[0]:
            if run[1]:
                proxies += fd.define_declared_tensors(*run)
            run = [declaration, 0]
        run[1] += 1
    if run[1]:
        proxies += fd.define_declared_tensors(*run)
    return proxies


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
            outputs = recording.definition._running("execute()").run_steady(arrays, self._options)
            if outputs is not None:
                self.last_definition = recording.definition
                return _substitute(recording.result, outputs)
        recording, arrays = self._recording_for(args, kwargs)
        self._by_structure[structure] = recording
        outputs = recording.definition.execute(arrays, mode=self._mode, backend=self._backend,
                                               **self._execute_options)
        return _substitute(recording.result, outputs)

    def prepare(self, *args: Any, **kwargs: Any) -> Callable[[], Any]:
        """Records (if needed) and prepares a call for arrays that stay in place: the result,
        called with no arguments, runs the step again on the same arrays without building the
        trace key or checking anything (FusionDefinition.prepare), which makes a step's cost
        independent of the number of parameters. The arrays must keep their shape, strides
        and memory while it is used; Python values are those of this call."""
        recording, arrays = self._recording_for(args, kwargs)
        prepared = recording.definition.prepare(arrays, mode=self._mode, backend=self._backend,
                                                **self._execute_options)
        return lambda: _substitute(recording.result, prepared())

    def _recording_for(self, args: tuple, kwargs: dict) -> tuple[_Recording, list]:
        """The recording of this call's trace key (made now if new) and its arrays."""
        arrays: list = []
        key: list = []
        seen: dict = {}
        views: dict = {}
        _collect((args, kwargs), arrays, seen, key, views)
        trace_key = tuple(key)
        recording = self._recordings.get(trace_key)
        if recording is None:
            recording = self._record(_structure((args, kwargs), seen), arrays, views)
            self._recordings[trace_key] = recording
        self.last_definition = recording.definition
        return recording, arrays

    def _record(self, structure: Any, arrays: list, views: dict) -> _Recording:
        name = getattr(self._function, "__name__", "traced")
        fd = FusionDefinition(name if name.isidentifier() else "traced")
        # Recording makes a few objects per op and frees none of them: the cyclic garbage
        # collector would only walk the growing heap again and again.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with fd:
                proxies = _proxies(fd, arrays, views)
                args, kwargs = _substitute(structure, proxies)
                returned = self._function(*args, **kwargs)
                outputs: list = []
                result = self._outputs(fd, returned, outputs)
        finally:
            if collecting:
                gc.enable()
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
