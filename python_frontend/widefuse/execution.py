"""Running a defined fusion: ``DefinedFusion``, what FusionDefinition.finalize() fixes, and
its ``Runner``: execute(), validate() and prepare(), their options, their inputs (vector
inputs spread into their entries) handed to the C++ argument reader (arguments.py), the
executors by options, and the outputs as the caller's kind of array (an output aliased to an
input is that input itself). FusionDefinition's execute(), validate() and prepare() are the
Runner's."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from . import _widefuse, torch_tensors
from ._widefuse import Error
from .arguments import read_arguments, read_outputs, set_scalars
from .data_type import DataType, data_type_of, from_short_name
from .errors import ArgumentTypeError, ArgumentValueError

# The names the C++ side takes: backends (auto first) and host executions (the default first).
_BACKENDS = tuple(_widefuse.backend_names())
_HOST_EXECUTIONS = tuple(_widefuse.host_executions())


@dataclass(frozen=True)
class KeptResult:
    """A reduction result that a later phase of the step reads, as a phase boundary sees it:
    the value's `name`, its `reduction` ("sum", "max", "min", "any", "all"), its `dtype`,
    and `array`, a view of the executor's memory (a NumPy array on the host, a DLPack device
    array on the GPU) that the boundary may rewrite in place. Valid during the call only."""

    name: str
    reduction: str
    dtype: DataType
    array: Any

    def torch(self) -> Any:
        """`array` as a torch tensor sharing its memory."""
        if isinstance(self.array, np.ndarray):
            return torch_tensors.host_outputs([self.array], [self.dtype])[0]
        return torch_tensors.device_outputs([self.array])[0]


#: A phase boundary: called with the phase that ended, its kept results, and the step's
#: CUstream (0 on the host): device work is queued there, host work is done before returning.
PhaseBoundary = Callable[[int, list, int], None]


def _kept_results_to(boundary: PhaseBoundary) -> Callable:
    """The extension's boundary call (phase, [(name, reduction, dtype, array)], stream) as
    `boundary`'s, with KeptResults (host arrays viewed in their real dtype)."""

    def call(phase: int, kept: list, stream: int) -> None:
        results = []
        for name, reduction, short_name, array in kept:
            dtype = from_short_name(short_name)
            if isinstance(array, np.ndarray) and array.dtype != dtype.numpy:
                array = array.view(dtype.numpy)
            results.append(KeptResult(name, reduction, dtype, array))
        boundary(phase, results, stream)

    return call


def _assert_matches(output: Any, reference: Any, what: str) -> None:
    """AssertionError unless `output` matches `reference` (see validate())."""
    if torch_tensors.is_tensor(output) or torch_tensors.is_tensor(reference):
        torch = torch_tensors.loaded_torch()
        torch.testing.assert_close(torch.as_tensor(output), torch.as_tensor(reference),
                                   check_device=False, msg=lambda m: f"validate: {what}: {m}")
        return
    output, reference = np.asarray(output), np.asarray(reference)
    if output.shape != reference.shape:
        raise AssertionError(f"validate: {what} has shape {output.shape}, the reference "
                             f"{reference.shape}")
    data_type = data_type_of(output.dtype, "validate")
    if data_type.is_floating_point or data_type.is_complex:
        # torch.testing.assert_close's (rtol, atol) per dtype (a complex type: its part's).
        rtol, atol = {DataType.Half: (1e-3, 1e-5), DataType.BFloat16: (1.6e-2, 1e-5),
                      DataType.Float: (1.3e-6, 1e-5)}.get(data_type.complex_part, (1e-7, 1e-7))
        wide = np.complex128 if data_type.is_complex else np.float64
        np.testing.assert_allclose(output.astype(wide), reference.astype(wide),
                                   rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"validate: {what}")
    else:
        np.testing.assert_array_equal(output, reference, err_msg=f"validate: {what}")


def _laid_out(array: Any, stride_order: list[int], is_torch: bool) -> Any:
    """`array`'s values in a new array whose strides follow `stride_order` (stride_order[d]
    is the rank of dimension d's stride, rank-1 outermost): allocated in that order and
    permuted back, as ``torch.empty(sizes in allocation order).permute(...)`` is."""
    rank = len(stride_order)
    allocation = sorted(range(rank), key=lambda d: -stride_order[d])  # outermost first
    back = [allocation.index(d) for d in range(rank)]
    if is_torch:
        torch = torch_tensors.loaded_torch()
        laid = torch.empty([array.shape[d] for d in allocation], dtype=array.dtype,
                           device=array.device).permute(back)
        laid.copy_(array)
        return laid
    if not isinstance(array, np.ndarray):
        raise Error("add_output(stride_order=): outputs in device memory come back row-major "
                    "unless they are torch tensors")
    laid = np.empty([array.shape[d] for d in allocation], dtype=array.dtype).transpose(back)
    laid[...] = array
    return laid


def options_key(*, backend: str = "auto", mode: str = "auto", block_order: str = "forward",
                host_execution: str = "fast", threads: Optional[int] = None, fmad: bool = True,
                arch: Optional[str] = None, device: Any = None,
                phase_boundary: Optional[PhaseBoundary] = None) -> tuple:
    """execute()'s options as the key of its steady state (a TypeError names an unknown
    option, as execute() would)."""
    return (backend, mode, block_order, host_execution, threads, fmad, arch, device,
            phase_boundary)


@dataclass(frozen=True, eq=False)
class DefinedFusion:
    """A finished definition, as running it needs it (FusionDefinition.finalize() builds it
    once; from_text too).

    `input_arity`: per execute() input, how many fusion inputs it is (a define_vector(n) is n
    Int scalars given as one list). `vector_names`: the vector inputs' printed names by their
    first fusion input. `output_sources`: where each plain add_output's array comes from,
    ("output", i) for the fusion's plain output i or ("input", k) for execute()'s input k (an
    output that returns an input's array); empty for a fusion from text (its outputs in
    order). `output_orders`: add_output(stride_order=...) of fusion output i, where given."""

    fusion: Any  # the extension's _Fusion
    input_arity: tuple[int, ...]
    vector_names: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    output_sources: tuple[tuple[str, int], ...] = ()
    output_orders: Mapping[int, list[int]] = field(default_factory=lambda: MappingProxyType({}))
    # Read from `fusion` once: every run checks its arguments against them.
    output_types: tuple[DataType, ...] = field(init=False)  # of the fusion's plain outputs

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_types", tuple(
            from_short_name(facts["dtype"]) for facts in self.fusion.outputs()))

    @functools.cached_property
    def inputs(self) -> tuple[dict, ...]:
        """Each fusion input's facts (name, dtype, ...), read once, when a message names the
        inputs (a traced optimizer's first call has tens of thousands)."""
        return tuple(self.fusion.inputs())

    @functools.cached_property
    def written_inputs(self) -> tuple[int, ...]:
        """execute()'s inputs that are copy_ destinations (add_output(alias_input=...)), by
        position: torch tensors among them get their version counter bumped after a run."""
        written, first = [], 0
        for k, size in enumerate(self.input_arity):
            if size == 1 and self.inputs[first].get("written"):
                written.append(k)
            first += size
        return tuple(written)

    def input_names(self) -> list[str]:
        """execute()'s inputs by name: a vector input as `V0 ([S1, S2])`."""
        names, first = [], 0
        for size in self.input_arity:
            entries = [facts["name"] for facts in self.inputs[first:first + size]]
            names.append(f"{self.vector_names[first]} ([{', '.join(entries)}])"
                         if first in self.vector_names else entries[0])
            first += size
        return names


class Runner:
    """Runs one DefinedFusion: an executor per set of options (compiled on first use), and
    the last one used (for last_kernels())."""

    def __init__(self, defined: DefinedFusion) -> None:
        self.defined = defined
        self._executors: dict[tuple, Any] = {}
        self.last_executor: Optional[Any] = None
        # By execute()'s options: the executor whose steady state holds the last inputs.
        self._steady: dict[tuple, _SteadyState] = {}

    def execute(self, inputs: Sequence[Any], *, backend: str = "auto", mode: str = "auto",
                block_order: str = "forward", host_execution: str = "fast",
                threads: Optional[int] = None, fmad: bool = True,
                arch: Optional[str] = None, device: Any = None,
                phase_boundary: Optional[PhaseBoundary] = None) -> list[Any]:
        """Runs the fusion on `inputs` (one per define_tensor / runtime define_scalar, in
        definition order) and returns the plain outputs.

        NumPy arrays run on the host backend (the generated kernel compiled for the CPU);
        CUDA arrays (``__cuda_array_interface__`` / ``__dlpack__``) run on the GPU on the
        producer's stream and outputs come back as DLPack-capable device arrays. Inputs
        given to add_output(alias_input=...) are updated in place. `backend` is one of auto,
        cuda, host, reference, none; `mode` one of auto, per-component, batched, packed.
        On the host backend, `threads` CPU threads run the kernel (default: one per core) and
        `host_execution` is "fast" (vectorized loops, the default) or "verify" (every CUDA
        thread emulated in `block_order`, to check that results do not depend on it).
        `device` (nvFuser's argument: an ordinal, "cuda:1", a torch.device) is the CUDA
        device a run of host arrays uses; device arrays run on their own device, which it
        must then name.
        `phase_boundary`: called between the phases of a fusion whose later phase reads a
        reduction, with the phase and its kept results (KeptResult), which it may rewrite in
        place (an all-reduce across processes); not with backend "reference".
        """
        options = options_key(backend=backend, mode=mode, block_order=block_order,
                              host_execution=host_execution, threads=threads, fmad=fmad,
                              arch=arch, device=device, phase_boundary=phase_boundary)
        outputs = self.run_steady(inputs, options)
        if outputs is not None:
            return outputs
        executor, read, values, stream = self._executor_for(
            "execute()", inputs, backend=backend, mode=mode, block_order=block_order,
            host_execution=host_execution, threads=threads, fmad=fmad, arch=arch, device=device,
            phase_boundary=phase_boundary)
        raw = executor.run_checked(read, values, read.on_device, stream)
        ran = backend != "none"
        self._steady[options] = _SteadyState(executor, read.on_device, read.torch_device,
                                             stream, ran)
        return self.outputs_for(raw, read.on_device, read.torch_device, inputs, ran=ran)

    def run_steady(self, inputs: Sequence[Any], options: tuple) -> Optional[list]:
        """execute()'s steady state alone: the outputs when `inputs` are the objects of the
        last accepted call with these `options` (options_key), or new memory laid out as
        before; None when they need the checked path."""
        try:
            steady = self._steady.get(options)
        except TypeError:  # an unhashable option: the checked path names it
            return None
        return None if steady is None else steady.run(self, inputs)

    def match_steady(self, inputs: Sequence[Any], order: Sequence[int],
                     options: tuple) -> Optional[int]:
        """The steady state's comparison alone, ahead of the call that launches it
        (widefuse.thunder.jit's prologue): input i is `inputs[order[i]]`. A token for
        launch_matched when they match, else None."""
        steady = self._steady.get(options)
        if steady is None or self.defined.vector_names:  # inputs are spread into vectors
            return None
        return steady.executor.match_steady(inputs, list(order))

    def launch_matched(self, inputs: Sequence[Any], token: int,
                       options: tuple) -> Optional[list]:
        """The outputs of the launch right after match_steady gave `token`, when `inputs` are
        the matched objects and nothing ran in between; else None."""
        steady = self._steady.get(options)
        if steady is None:
            return None
        raw = steady.executor.launch_matched(inputs, token, steady.launch_stream())
        if raw is None:
            return None
        self.last_executor = steady.executor
        return self.outputs_for(raw, steady.on_device, steady.torch_device, inputs, steady.ran)

    def validate(self, inputs: Sequence[Any], reference_outputs: Sequence[Any],
                 **options: Any) -> None:
        """Runs the fusion (execute()'s options) and raises AssertionError unless each output
        matches its reference (nvFuser's validate): floating-point outputs within
        torch.testing.assert_close's tolerances for their dtype, others exactly."""
        outputs = self.execute(inputs, **options)
        if len(outputs) != len(reference_outputs):
            raise AssertionError(f"validate: the fusion has {len(outputs)} outputs, "
                                 f"{len(reference_outputs)} references given")
        for index, (output, reference) in enumerate(zip(outputs, reference_outputs)):
            _assert_matches(output, reference, f"output {index}")

    def prepare(self, inputs: Sequence[Any], *, outputs: Optional[Sequence[Any]] = None,
                **options: Any) -> PreparedExecution:
        """Checks `inputs`, compiles and binds once, for steps on arrays that stay where they
        are (an optimizer's parameters and state): each call of the result runs one step with
        no checks at all, so its cost does not grow with the number of inputs. The arrays
        must keep their shape, strides and memory while the result is used (the result holds
        them; NumPy then refuses to resize them). `outputs`: arrays (dense, of each plain
        output's dtype and shape, where the inputs are) that every step writes the plain
        outputs into and returns; without them each step returns new arrays, which CUDA
        inputs do not allow. Takes execute()'s options."""
        executor, read, _, stream = self._executor_for("prepare()", inputs, **options)
        on_device, torch_device = read.on_device, read.torch_device
        given = None if outputs is None else read_outputs(self.defined.fusion, outputs,
                                                          on_device)
        if given is None and on_device and self.defined.fusion.outputs():
            raise Error("prepare() on CUDA arrays needs a fusion without plain outputs (the "
                        "outputs would land in host memory) or outputs=[...], device arrays "
                        "every step writes them into; or use execute()")
        return PreparedExecution(self, executor.prepare(read, stream, given), list(inputs),
                                 torch_device, ran=options.get("backend", "auto") != "none",
                                 stream=stream,
                                 torch_stream=on_device and torch_device is not None,
                                 outputs=None if outputs is None else list(outputs))

    def outputs_for(self, raw: list, on_device: bool, torch_device: Optional[str],
                    inputs: Sequence[Any], ran: bool = True) -> list:
        """The executor's outputs as the caller's kind of array (torch tensors for torch
        inputs, else NumPy arrays (host) or DLPack-capable device arrays), one per add_output:
        a value added twice comes back twice, as the same array, and an output aliased to an
        input is that input's own array from `inputs`. Backend "none" (`ran` False) runs
        nothing and returns no outputs."""
        if not ran:
            return []
        defined = self.defined
        if torch_device is not None and defined.written_inputs:
            torch_tensors.mark_written([inputs[k] for k in defined.written_inputs])
        if not raw:
            arrays = []
        elif torch_device is not None:
            arrays = (torch_tensors.device_outputs(raw) if on_device else
                      torch_tensors.host_outputs(raw, defined.output_types))
        else:
            arrays = raw if on_device else _host_outputs(raw, defined.output_types)
        if defined.output_orders:
            arrays = [arrays[i] if i not in defined.output_orders else
                      _laid_out(arrays[i], defined.output_orders[i], torch_device is not None)
                      for i in range(len(arrays))]
        if not defined.output_sources:  # from_text: the fusion's outputs, in order
            return arrays
        return [arrays[index] if kind == "output" else inputs[index]
                for kind, index in defined.output_sources]

    def last_kernels(self) -> list[dict]:
        """The kernels of the last execute(): name, launches per run and CUDA source."""
        if self.last_executor is None:
            raise Error("last_kernels(): execute() has not run yet")
        return self.last_executor.last_kernels()

    def _executor_for(self, what: str, inputs: Sequence[Any], *, backend: str = "auto",
                      mode: str = "auto", block_order: str = "forward",
                      host_execution: str = "fast", threads: Optional[int] = None,
                      fmad: bool = True, arch: Optional[str] = None, device: Any = None,
                      phase_boundary: Optional[PhaseBoundary] = None
                      ) -> tuple[Any, Any, list, Optional[int]]:
        """The executor for these options, the reader's arguments of `inputs` (on_device,
        torch_device: where they are), the inputs with vectors spread, and the stream this
        call launches on (the producer's; None off the device: the legacy stream). The stream
        is per call, not per executor: one executor serves every stream."""
        ordinal = _device_ordinal(what, device)
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads < 1):
            raise ArgumentValueError(f"{what[:-2]}(threads={threads!r}): threads must be an "
                                     "integer >= 1 or None (one per core)")
        if host_execution not in _HOST_EXECUTIONS:
            default, *others = _HOST_EXECUTIONS
            raise ArgumentValueError(
                f"{what[:-2]}(host_execution={host_execution!r}): use {default!r} (the "
                f"default) or {' or '.join(repr(name) for name in others)}")
        if phase_boundary is not None and not callable(phase_boundary):
            raise ArgumentTypeError(f"{what[:-2]}(phase_boundary=...) takes a function of the "
                                    f"phase and its kept results, not a "
                                    f"{type(phase_boundary).__name__}")
        threads = threads or 0
        if backend not in _BACKENDS:
            raise ArgumentValueError(f"unknown backend '{backend}' (expected one of "
                                     f"{', '.join(_BACKENDS)})")
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise ArgumentTypeError(f"{what} takes a list of inputs")
        arity = self.defined.input_arity
        if len(inputs) != len(arity):
            raise ArgumentValueError(f"{what} expects {len(arity)} inputs "
                                     f"({', '.join(self.defined.input_names())}), got "
                                     f"{len(inputs)}")
        values = _flat_inputs(self.defined, inputs)
        read = read_arguments(self.defined.fusion, values)
        # auto: where the arrays are (C++'s rule); a backend that cannot read them raises.
        if (ordinal is not None and read.torch_device not in (None, "cpu") and
                read.torch_device != f"cuda:{ordinal}"):
            raise ArgumentValueError(f"{what[:-2]}(device={device!r}): the inputs are on "
                                     f"{read.torch_device}")
        backend = _widefuse.select_backend(backend, read.on_device)
        key = (backend, mode, block_order, host_execution, threads, fmad, arch, phase_boundary,
               ordinal)
        executor = self._executors.get(key)
        if executor is None:
            boundary = None if phase_boundary is None else _kept_results_to(phase_boundary)
            executor = _widefuse._Executor(self.defined.fusion, backend, mode, block_order,
                                           host_execution, threads, fmad, arch,
                                           phase_boundary=boundary, device=ordinal or 0)
            self._executors[key] = executor
        self.last_executor = executor
        return executor, read, values, (read.stream or 0) if read.on_device else None


def _device_ordinal(what: str, device: Any) -> Optional[int]:
    """The CUDA device execute(device=...) names, as an ordinal (None: not named): an int,
    "cuda" (the current device), "cuda:<n>" or a torch.device of type cuda."""
    if device is None:
        return None
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    text = str(device)  # a torch.device prints as "cuda:1" or "cuda"
    if text == "cuda":
        torch = torch_tensors.loaded_torch()
        return torch.cuda.current_device() if torch is not None else 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ArgumentValueError(f"{what[:-2]}(device={device!r}): name a CUDA device (an ordinal, "
                             "'cuda', 'cuda:1' or a torch.device)")


def _host_outputs(outputs: list, data_types: Sequence[DataType]) -> list:
    """NumPy outputs in their real dtypes (the extension returns bool, f16 and bf16 as
    unsigned integers of the same width)."""
    return [output.view(data_type.numpy) if output.dtype != data_type.numpy else output
            for output, data_type in zip(outputs, data_types)]


def _flat_inputs(defined: DefinedFusion, inputs: Sequence[Any]) -> list:
    """`inputs` with each vector input's list or tuple spread into its entries."""
    if not defined.vector_names:
        return list(inputs)
    flat, first = [], 0
    for value, size, name in zip(inputs, defined.input_arity, defined.input_names()):
        if first not in defined.vector_names:
            flat.append(value)
        elif (torch_tensors.is_tensor(value) or isinstance(value, (str, bytes)) or
              not isinstance(value, Sequence) or len(value) != size):
            raise ArgumentTypeError(f"input {name} is a vector of {size} ints (a list or "
                                    f"tuple, as define_vector({size}) declared it); got "
                                    f"{value!r}")
        else:
            flat.extend(value)
        first += size
    return flat


@dataclass(frozen=True)
class _SteadyState:
    """What execute() needs to run its steady state (the executor's run_steady: the same
    objects as the last accepted call, or new memory laid out as before, compared in C++)."""

    executor: Any
    on_device: bool
    torch_device: Optional[str]
    stream: Optional[int]  # the adopted call's stream (None off the device)
    ran: bool

    def launch_stream(self) -> Optional[int]:
        """The stream of this call: torch's current one for torch CUDA tensors."""
        if self.stream is not None and self.torch_device is not None:
            return torch_tensors.cuda_stream(self.torch_device)
        return self.stream

    def run(self, runner: Runner, inputs: Sequence[Any]) -> Optional[list]:
        """The outputs, or None when these inputs need the checked path. Torch CUDA tensors
        run on torch's current stream of this call (what a CUDA graph capture needs), other
        arrays on the adopted call's stream (the steady state adopts torch tensors and NumPy
        arrays only: a CuPy array, whose interface names its stream, takes the checked path)."""
        stream = self.launch_stream()
        defined = runner.defined
        if defined.vector_names:
            if not isinstance(inputs, (list, tuple)) or len(inputs) != len(defined.input_arity):
                return None  # the checked path says what is wrong
            flat = _flat_inputs(defined, inputs)
        else:
            flat = inputs
        raw = self.executor.run_steady(flat, stream)
        if raw is None:
            return None
        runner.last_executor = self.executor
        return runner.outputs_for(raw, self.on_device, self.torch_device, inputs, self.ran)


class PreparedExecution:
    """A step prepared by FusionDefinition.prepare(): call it to run one step.

    A caller that keeps its own steady state over the prepared step (widefuse.optim's
    PreparedStep) changes what the next step reads with rebind() and set_scalars() and runs
    it with launch_raw(); release_inputs() lets go of arrays it keeps alive itself."""

    def __init__(self, runner: Runner, prepared: Any, inputs: list,
                 torch_device: Optional[str] = None, ran: bool = True,
                 stream: Optional[int] = None, torch_stream: bool = False,
                 outputs: Optional[list] = None) -> None:
        self._runner = runner
        self._outputs = outputs  # where every step writes the plain outputs (None: new ones)
        self._prepared = prepared  # the extension's _PreparedRun
        # Keeps the arrays (and so their memory) alive; None once the caller took that over.
        self._inputs: Optional[list] = inputs
        self._torch_device = torch_device
        self._ran = ran
        self._stream = stream  # prepare()'s stream (None off the device)
        self._torch_stream = torch_stream  # torch CUDA tensors: torch's current stream

    def __call__(self, stream: Optional[int] = None) -> list[Any]:
        """Runs one step on the prepared inputs; returns the plain outputs. On the GPU it
        runs on `stream` (a CUstream address) when given, else on torch's current stream for
        torch CUDA tensors (that of each call, so that a step can be captured by
        torch.cuda.graph on its own stream), else on the stream prepare() found."""
        if stream is None:
            stream = (torch_tensors.cuda_stream(self._torch_device) if self._torch_stream
                      else self._stream)
        raw = self._prepared.launch(stream)
        if self._outputs is not None:
            if self._torch_device is not None and self._ran and self._inputs is not None:
                written = self._runner.defined.written_inputs
                torch_tensors.mark_written([self._inputs[k] for k in written])
            return list(self._outputs) if self._ran else []
        if self._inputs is None:
            raise Error("this prepared step released its inputs (release_inputs()): run it "
                        "with launch_raw()")
        return self._runner.outputs_for(raw, False, self._torch_device, self._inputs, self._ran)

    def rebind(self, indices: Sequence[int], addresses: Sequence[int]) -> None:
        """Points tensor inputs `indices` (positions among the fusion's inputs) at the memory
        at `addresses` (data pointers) for the following steps: memory laid out as the
        prepared array is, as a parameter's new grad is. Checked when set (null, alignment,
        overlap with a copy_ destination): an Error changes nothing."""
        self._prepared.rebind(indices, addresses)

    def set_scalars(self, indices: Sequence[int], values: Sequence[Any]) -> None:
        """Sets runtime scalar inputs `indices` to `values` for the following steps (a
        scheduled learning rate), checked as execute() checks a number."""
        set_scalars(self._prepared, indices, values)

    def launch_raw(self, stream: Optional[int] = None) -> list:
        """Runs one step on `stream` (a CUstream address; None: the executor's) and returns
        the plain outputs as the extension gives them (NumPy arrays in their storage dtypes,
        none with prepare(outputs=...)): the step alone, for a caller that reads its outputs
        from the arrays it gave prepare() and picks its own stream. Torch tensors it writes
        are not marked written (torch_tensors.mark_written): that is the caller's."""
        return self._prepared.launch(stream)

    def release_inputs(self) -> None:
        """Stops keeping the prepared input arrays alive, for a caller that keeps them alive
        and in place itself and rebinds some step after step (an optimizer: a grad must be
        freed when zero_grad drops it). Steps then run through launch_raw()."""
        self._inputs = None
