"""One optimizer step as one fusion: the optimizer's ``update`` traced over every parameter that
has a grad, each group's numbers as runtime scalars, and the bindings a later step changes
(new grad tensors, a scheduled learning rate) without tracing or checking anything else."""

from __future__ import annotations

import numbers
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from .._widefuse import Error, bound_state_unchanged
from ..arguments import layout_of, read_layouts
from ..data_type import from_short_name
from ..fusion_definition import FusionDefinition, PreparedExecution
from ..torch_tensors import mark_written
from ..functions import vector_norm
from ..values import Tensor, snapshot, specializable
from .dtensor_shards import local_of
from .master_weights import opmath, rounded
from .state_formats import group_format, traced_view


# The tensor whose memory a step updates: a DTensor's local shard, else the tensor.
local = local_of


def capturing() -> bool:
    """True while torch captures a CUDA graph on its current stream (torch.cuda.graph)."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def refuse_tensor_hyperparameters(groups: list[dict], used: list[int]) -> None:
    """Raises Error for a 1-element tensor hyperparameter of a used group: a step reads it
    with .item(), which a CUDA graph capture forbids (call while capturing)."""
    for g in used:
        for name, value in groups[g].items():
            if name != "params" and isinstance(value, torch.Tensor) and value.numel() == 1:
                raise Error(f"param group {g}'s '{name}' is a tensor, and widefuse reads "
                            "hyperparameters as numbers at each step (.item(), which "
                            "synchronizes and cannot be captured into a CUDA graph): pass a "
                            "Python number; its value at capture is what every replay uses")


def stepped(tensor: Any) -> torch.Tensor:
    """The memory a step reads and writes as the fusion sees it: the local shard, and a
    complex tensor as its real view (pairs of reals), as torch's optimizers step it."""
    tensor = local(tensor)
    return torch.view_as_real(tensor) if tensor.is_complex() else tensor


def step_dtype() -> torch.dtype:
    """The dtype of a ``step`` count, as torch's: float64 under
    torch.set_default_dtype(torch.float64), else float32."""
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


def layout(tensor: torch.Tensor) -> tuple:
    """What a traced fusion assumes about a tensor besides its address."""
    return (tensor.dtype, tuple(tensor.shape), tensor.stride(), tensor.device)


@dataclass
class Entry:
    """A parameter that has a grad this step, with its group and state."""

    group: int
    index: int  # within its group, for messages
    param: Any
    grad: Any
    state: dict


def hyperparameter_kind(value: Any, specialized: bool) -> tuple:
    """How a group's hyperparameter enters the fusion: ("scalar",) for a number (a runtime
    scalar), ("scalars", n) for a tuple of n numbers (betas), else ("constant", value), which
    is part of the trace key. A number that Python control flow branched on is `specialized`:
    a constant from then on."""
    value = _one_element(value)
    if not specialized:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return ("scalar",)
        if (isinstance(value, (tuple, list)) and value and
                all(isinstance(_one_element(v), numbers.Real) and not isinstance(v, bool)
                    for v in value)):
            return ("scalars", len(value), type(value))
    if isinstance(value, (tuple, list)):
        value = tuple(_one_element(v) for v in value)
    try:
        hash(value)
    except TypeError:
        raise Error(f"hyperparameter value {value!r} is neither a number nor hashable") from None
    return ("constant", value)


def _one_element(value: Any) -> Any:
    """A 1-element torch tensor or NumPy array as its Python number (torch's optimizers take
    both where they take a number); anything else as it is."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 or \
            isinstance(value, np.ndarray) and value.size == 1:
        return value.item()
    return value


def number(value: Any) -> Any:
    """A hyperparameter number as a Python float or int (a 1-element tensor read once)."""
    value = _one_element(value)
    return float(value) if isinstance(value, float) else value


@dataclass
class Source:
    """Where one fusion input comes from at each step."""

    # "param", "grad", "grad_mT" (the grad's mT), "state", "scalar", "grad_scale",
    # "found_inf", "clip_coef"
    kind: str
    entry: int = -1
    name: str = ""  # state key or hyperparameter name
    group: int = -1
    element: Optional[int] = None  # within a tuple hyperparameter


@dataclass
class StepFusion:
    """The fusion of one trace key, the source of each of its inputs, and the state that
    ``update`` created (``state[key] = value`` for a key the state lacked, as torch's SGD
    creates its momentum buffer at the first step): (entry, key) per plain output."""

    definition: FusionDefinition
    sources: list[Source] = field(default_factory=list)
    new_state: list[tuple[int, str]] = field(default_factory=list)
    # The position of the total gradient norm among the plain outputs (max_grad_norm), or None.
    grad_norm_output: Optional[int] = None
    # The step computes found_inf from the grads and writes it (widefuse.optim.GradScaler).
    writes_found_inf: bool = False


def trace_step(name: str, update: Callable[..., Any], entries: list[Entry], groups: list[dict],
               hyperparameters: list[str], specialized: set[str],
               scaling: tuple, clip: Optional[tuple] = None) -> StepFusion:
    """Traces `update` over `entries`; raises SpecializationRequest when Python control flow
    needs a hyperparameter's value (the caller adds it to `specialized` and traces again).
    `scaling`: whether a grad scale and a found-inf flag (torch.amp.GradScaler) are inputs,
    and the dtype of the 0-d coefficient of a folded clip_grad_norm_ (None: no fold), which
    multiplies every grad first, as that clip would have in place.
    `clip`: (max_norm, norm_type, error_if_nonfinite) to clip the (unscaled) grads by their
    total norm, as torch.nn.utils.clip_grad_norm_ does; the norm is an output of the step, and
    with error_if_nonfinite a non-finite norm leaves parameters and state as they were (the
    caller then raises)."""
    fd = FusionDefinition(name)
    step = StepFusion(fd)
    with fd:
        keywords = {g: _hyperparameter_inputs(fd, step, g, groups[g], hyperparameters, specialized)
                    for g in sorted({entry.group for entry in entries})}
        grad_scale = found_inf = None
        if scaling[0]:
            grad_scale = tensor_input(fd, step, _scale_layout(entries), Source("grad_scale"))
        if scaling[1]:
            found_inf = tensor_input(fd, step, _scale_layout(entries), Source("found_inf"))
        coefficient = None
        if len(scaling) > 2 and scaling[2] is not None:
            coefficient = tensor_input(fd, step, _scale_layout(entries, scaling[2]),
                                       Source("clip_coef"))
        def unscaled(grad: Tensor) -> Tensor:
            if coefficient is not None:  # the folded clip, before the step's unscale as in torch
                grad = scaled_by(grad, coefficient)
            if grad_scale is not None:
                grad = grad / grad_scale.to(grad.dtype)
            return grad

        inputs = []
        for k, entry in enumerate(entries):
            param = tensor_input(fd, step, stepped(entry.param), Source("param", k))
            grad = tensor_input(fd, step, stepped(entry.grad), Source("grad", k))
            state = {key: tensor_input(fd, step, stepped(value), Source("state", k, key))
                     for key, value in entry.state.items()}
            inputs.append((param, unscaled(grad), state))
        grads = [grad for _, grad, _ in inputs]
        total_norm = skip = clip_coefficient = None
        if found_inf is not None and len(scaling) > 3 and scaling[3]:
            # widefuse.optim.GradScaler: this step is the inf check, over the unscaled grads
            # (one global any in phase 1), written to the scaler's found_inf for update().
            found = fd.ops.any([grad.isfinite().logical_not() for grad in grads])
            found_inf.copy_(found.to(torch.float32))
            step.writes_found_inf = True
            skip = found
        elif found_inf is not None:  # a step with an inf or NaN grad changes nothing
            skip = found_inf != 0
        if clip is not None:
            total_norm, clip_coefficient = _clip_coefficient(grads, clip[0], clip[1])
            grads = [scaled_by(grad, clip_coefficient) for grad in grads]
            if len(clip) > 2 and clip[2]:  # error_if_nonfinite: nothing changes, then it raises
                nonfinite = total_norm.isfinite().logical_not()
                skip = nonfinite if skip is None else skip | nonfinite

        def as_given(grad: Tensor) -> Tensor:
            """What update() receives for the raw grad input `grad`."""
            grad = unscaled(grad)
            return grad if clip_coefficient is None else scaled_by(grad, clip_coefficient)

        fd.transposed_inputs = _TransposedGrads(fd, step, entries, grads, as_given)
        for k, (entry, (param, _, state)) in enumerate(zip(entries, inputs)):
            entry_values = [param, *state.values()]
            entries_before = {id(t): snapshot(t) for t in entry_values}
            # Quantized state: update() sees its float32 value, stored back after it.
            view, store = traced_view(group_format(groups[entry.group]), state, param)
            given = dict(view)
            update(param, grads[k], view, **keywords[entry.group])
            _add_new_state(fd, step, k, given, view)
            store(view, skip)
            if skip is not None:
                for tensor in entry_values:
                    before = entries_before[id(tensor)]
                    if tensor.handle is not before.handle:
                        tensor.copy_(torch.where(skip, before, tensor))
        if total_norm is not None:
            step.grad_norm_output = len(step.new_state)
            fd.add_output(total_norm)
        fd.transposed_inputs = None  # the definition ends here; let go of the entries
    return step


def _clip_coefficient(grads: list[Tensor], max_norm: float,
                      norm_type: float) -> tuple[Tensor, Tensor]:
    """The total norm of the grads and the coefficient torch.nn.utils.clip_grad_norm_ scales
    them by: one reduction over every grad (phase 1 of the step), read by every
    update."""
    total_norm = vector_norm(grads, norm_type)
    return total_norm, torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)


class _TransposedGrads:
    """``grad.mT`` in update(): the grad's memory with its last two strides swapped, a second
    read-only input of the fusion (Source "grad_mT", rebound with its grad at every step),
    taken through what update() receives (GradScaler's unscale, the clip) as the grad itself
    is, so that each of its elements is the given grad's element, bit for bit."""

    def __init__(self, fd: FusionDefinition, step: StepFusion, entries: list[Entry],
                 given: list[Tensor], as_given: Callable[[Tensor], Tensor]) -> None:
        self._fd, self._step, self._entries, self._as_given = fd, step, entries, as_given
        # By the handle update() received (the list keeps the handles, and so their ids).
        self._given = given
        self._entry_of = {id(grad.handle): k for k, grad in enumerate(given)}
        self._made: dict[int, Tensor] = {}

    def __call__(self, tensor: Tensor) -> Optional[Tensor]:
        k = self._entry_of.get(id(tensor.handle))
        if k is None:
            return None
        if tensor.ndim < 2:
            raise Error(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                        f"{tensor.ndim}-D tensor.")
        made = self._made.get(k)
        if made is None:
            view = stepped(self._entries[k].grad).mT
            made = self._made[k] = self._as_given(
                tensor_input(self._fd, self._step, view, Source("grad_mT", k)))
        return snapshot(made)


def scaled_by(grad: Tensor, coefficient: Tensor) -> Tensor:
    """`grad` times the 0-d `coefficient` as torch's grad.mul_(coefficient) computes it: in
    float32 for a bf16/f16 grad (the coefficient not rounded to the grad's dtype first), else
    in the grad's dtype; the result in the grad's dtype."""
    compute = opmath(grad)
    return rounded(compute * rounded(coefficient, compute.dtype), grad.dtype)


def _add_new_state(fd: FusionDefinition, step: StepFusion, k: int, given: dict,
                   state: dict) -> None:
    """Makes each state entry `update` added an output (a fresh value, even for an input)."""
    for key, value in state.items():
        if key in given:
            if value is not given[key]:
                raise Error(f"update() replaced state['{key}']; write into it in place "
                            f"(state['{key}'].copy_(...))")
            continue
        if not isinstance(value, Tensor) or value.definition is not fd:
            raise Error(f"update() stored a {type(value).__name__} in state['{key}']; new "
                        "state must be a tensor computed in update()")
        fd.add_output(value.clone())
        step.new_state.append((k, key))
    for key in given:
        if key not in state:
            raise Error(f"update() removed state['{key}']")


def _scale_layout(entries: list[Entry], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A 0-d tensor on the parameters' device: f32 for GradScaler's scale and flag."""
    return torch.empty((), dtype=dtype, device=local(entries[0].param).device)


def tensor_input(fd: FusionDefinition, step: StepFusion, tensor: torch.Tensor,
                 source: Source) -> Tensor:
    """A tensor input of `fd` laid out as `tensor` (checked as a step's tensors are; complex
    refused), its `source` recorded in `step`."""
    stride_order, contiguity = layout_of(tuple(tensor.shape), tensor.stride())
    ((short_name, *_),) = read_layouts([tensor], allow_grad=True,
                                      names=[source.name or source.kind])
    data_type = from_short_name(short_name)
    if data_type.is_complex:  # torch's optimizers step view_as_real(param): pairs of reals
        raise Error(f"{source.name or source.kind}: complex parameters and state "
                    f"({tensor.dtype}) are not supported by widefuse.optim")
    step.sources.append(source)
    return fd.define_tensor(shape=tuple(tensor.shape), contiguity=contiguity, dtype=data_type,
                            stride_order=stride_order)


def _hyperparameter_inputs(fd: FusionDefinition, step: StepFusion, g: int, group: dict,
                           names: list[str], specialized: set[str]) -> dict:
    """The keyword arguments `update` receives for group `g`: runtime scalars for numbers,
    the values themselves for everything else."""
    keywords = {}
    for name in names:
        value = group[name]
        kind = hyperparameter_kind(value, name in specialized)
        if kind[0] == "constant":
            keywords[name] = kind[1]
        elif kind[0] == "scalar":
            step.sources.append(Source("scalar", name=name, group=g))
            keywords[name] = specializable(fd.define_scalar(), name)
        else:
            elements = []
            for i in range(kind[1]):
                step.sources.append(Source("scalar", name=name, group=g, element=i))
                elements.append(specializable(fd.define_scalar(), name))
            keywords[name] = kind[2](elements)
    return keywords


def group_key(groups: list[dict], used: list[int], hyperparameters: list[str],
              specialized: set[str]) -> tuple:
    """How the hyperparameters of groups `used` enter a traced step (constants by value)."""
    return tuple((g, tuple((name, hyperparameter_kind(groups[g][name], name in specialized))
                           for name in hyperparameters)) for g in used)


def trace_key(entries: list[Entry], groups: list[dict], hyperparameters: list[str],
              specialized: set[str], scaling: tuple[bool, bool]) -> tuple:
    """Everything a traced step depends on besides the tensors' addresses and the numbers."""
    used = sorted({entry.group for entry in entries})
    return (
        scaling,
        group_key(groups, used, hyperparameters, specialized),
        tuple((entry.group, layout(local(entry.param)), layout(local(entry.grad)),
               tuple((key, layout(local(value))) for key, value in entry.state.items()))
              for entry in entries))


def step_arguments(step: StepFusion, entries: list[Entry], groups: list[dict],
                   scaling_tensors: tuple) -> list:
    """This step's argument for every input of `step`."""
    return [_argument(source, entries, groups, scaling_tensors) for source in step.sources]


def _argument(source: Source, entries: list[Entry], groups: list[dict],
              scaling_tensors: tuple) -> Any:
    if source.kind == "scalar":
        value = groups[source.group][source.name]
        return number(value if source.element is None else value[source.element])
    if source.kind == "grad_scale":
        return scaling_tensors[0]
    if source.kind == "found_inf":
        return scaling_tensors[1]
    if source.kind == "clip_coef":
        return scaling_tensors[2]
    entry = entries[source.entry]
    if source.kind == "param":
        return stepped(entry.param)
    if source.kind == "grad":
        return stepped(entry.grad)
    if source.kind == "grad_mT":
        return stepped(entry.grad).mT
    return stepped(entry.state[source.name])


def run_once(step: StepFusion, entries: list[Entry], groups: list[dict],
             scaling_tensors: tuple, options: dict) -> tuple[int, Any]:
    """Runs a step that creates state (no binding is kept: the next step's state differs),
    stores the new state in the entries, and returns the kernel launches it took and the
    total grad norm (None without max_grad_norm)."""
    outputs = step.definition.execute(step_arguments(step, entries, groups, scaling_tensors),
                                      **options)
    grad_norm = None if step.grad_norm_output is None else outputs[step.grad_norm_output]
    for (k, key), output in zip(step.new_state, outputs):
        param = entries[k].param
        if local(param).is_complex():  # state made from a complex parameter's real view
            output = torch.view_as_complex(output)
        if hasattr(param, "device_mesh"):  # a DTensor parameter gets DTensor state, as in torch
            from torch.distributed.tensor import DTensor
            output = DTensor.from_local(output, param.device_mesh, param.placements,
                                        shape=param.shape, stride=param.stride())
        entries[k].state[key] = output
    return sum(kernel["launches"] for kernel in step.definition.last_kernels()), grad_norm


class PreparedStep:
    """A traced step bound to this step's tensors; later steps with the same parameters
    rebind what changed (grads, numbers) and launch."""

    def __init__(self, step: StepFusion, entries: list[Entry], groups: list[dict],
                 scaling_tensors: tuple, options: dict, key: tuple,
                 used_groups: list[int]) -> None:
        self.fusion = step
        self.group_key = key  # the groups' part of the trace key
        self.groups = used_groups
        self.scaling_present = tuple(t is not None for t in scaling_tensors)
        # The step computes found_inf itself (widefuse.optim.GradScaler; a trace key part).
        self.computes_found_inf = step.writes_found_inf
        self.params = [entry.param for entry in entries]
        self.param_addresses = [local(entry.param).data_ptr() for entry in entries]
        # Weak references: holding last step's grads would keep a whole set of grads alive
        # after zero_grad(set_to_none=True), into the next forward and backward.
        self.grads = [weakref.ref(entry.grad) for entry in entries]
        # A grad whose storage was swapped (`grad.data = t`, `grad.set_(t)`) is the same object
        # on other memory: it is rebound like a new grad.
        self.grad_addresses = [local(entry.grad).data_ptr() for entry in entries]
        self.grad_layouts = [layout(local(entry.grad)) for entry in entries]
        self.grad_inputs = [i for i, s in enumerate(step.sources) if s.kind == "grad"]
        # The inputs reading a grad's mT, by entry: the same address as the grad's.
        self.grad_mT_inputs = {s.entry: i for i, s in enumerate(step.sources)
                               if s.kind == "grad_mT"}
        self.scalar_inputs = [i for i, s in enumerate(step.sources) if s.kind == "scalar"]
        arguments = step_arguments(step, entries, groups, scaling_tensors)
        self.scalars = [arguments[i] for i in self.scalar_inputs]
        # Each launch goes to torch's current stream of its step (a warm-up's side stream, then
        # torch.cuda.graph's capture stream): only the device is fixed.
        device = local(entries[0].param).device
        self.cuda_device = device if device.type == "cuda" else None
        self.scaling_inputs = [i for i, s in enumerate(step.sources)
                               if s.kind in ("grad_scale", "found_inf", "clip_coef")]
        self.scaling_tensors = [t for t in scaling_tensors if t is not None]
        # The total grad norm goes to a 0-d tensor of the parameters' device that every launch
        # writes (no staging through host memory: no synchronisation, capturable).
        self.grad_norm_buffer = None
        outputs = None
        if step.grad_norm_output is not None:
            defined = step.definition.runner.defined
            self.grad_norm_buffer = torch.empty(
                (), dtype=defined.output_types[step.grad_norm_output].torch, device=device)
            outputs = [self.grad_norm_buffer]
        self.execution: PreparedExecution = step.definition.prepare(arguments, outputs=outputs,
                                                                    **options)
        # The grads must not be kept alive. The state is, here as well as by the optimizer:
        # a state tensor replaced behind the optimizer's back (state[p]["exp_avg"] = t) must
        # not be freed while the prepared kernel still writes into it.
        self.execution.release_inputs()
        self.state_tensors = [value for entry in entries for value in entry.state.values()]
        # What each launch writes in place: marked written after it (mark_written), as
        # torch's optimizers' in-place ops bump the version counters autograd checks.
        self.written = [entry.param for entry in entries] + \
            [value for value in self.state_tensors if isinstance(value, torch.Tensor)]
        # What the kernel writes besides the parameters: each parameter's state dict, its
        # tensors and their memory, checked before each launch (state_unchanged), as the
        # parallel lists _widefuse.bound_state_unchanged takes.
        bound = [entry for entry in entries if entry.state]
        self._bound = ([entry.param for entry in bound], [entry.state for entry in bound])
        tensors = [(owner, key, value) for owner, entry in enumerate(bound)
                   for key, value in entry.state.items() if isinstance(value, torch.Tensor)]
        self._bound_entries = ([owner for owner, _, _ in tensors], [key for _, key, _ in tensors],
                               [value for _, _, value in tensors],
                               [local(value) for _, _, value in tensors],
                               [local(value).data_ptr() for _, _, value in tensors])
        self.launches = 0  # known after the first launch
        self.grad_norm = None  # the last launch's total grad norm (max_grad_norm)

    def same_scaling(self, scaling: tuple) -> bool:
        """True when GradScaler's tensors (or their absence) match the prepared ones."""
        if tuple(t is not None for t in scaling) != self.scaling_present:
            return False
        return all(layout(t) == layout(old) for t, old in
                   zip([t for t in scaling if t is not None], self.scaling_tensors))

    def state_unchanged(self, state: dict) -> bool:
        """True when `state` (the optimizer's) still holds, for every parameter, the dict and
        tensors this step was bound to, on the same memory. False after a reset
        (``state.clear()``, ``del state[p]``), a replaced entry (``state[p]["exp_avg"] = t``)
        or a swapped storage (``.data = t``, ``set_``): the kernel would write memory the
        optimizer no longer holds, so the caller prepares again."""
        return bound_state_unchanged(state, *self._bound, *self._bound_entries)

    def launch(self, changed_grads: list[tuple[int, Any]], groups: list[dict],
               scaling_tensors: list) -> None:
        """Rebinds `changed_grads` ((entry, grad) pairs) and GradScaler's tensors (laid out as
        the prepared ones: the caller checked), sets the numbers of `groups`, and runs the
        step. On an error nothing has run; the caller drops this object."""
        indices, addresses = [], []
        for k, grad in changed_grads:
            address = local(grad).data_ptr()
            self.grad_addresses[k] = address
            indices.append(self.grad_inputs[k])
            addresses.append(address)
            if k in self.grad_mT_inputs:  # its mT: the same memory, the layout checked with it
                indices.append(self.grad_mT_inputs[k])
                addresses.append(address)
        for i, tensor in enumerate(scaling_tensors):
            if tensor is not self.scaling_tensors[i]:
                indices.append(self.scaling_inputs[i])
                addresses.append(tensor.data_ptr())
                self.scaling_tensors[i] = tensor
        if indices:
            self.execution.rebind(indices, addresses)
            for k, grad in changed_grads:
                self.grads[k] = weakref.ref(grad)
        indices, values = [], []
        sources = self.fusion.sources
        for position, i in enumerate(self.scalar_inputs):
            source = sources[i]
            value = groups[source.group][source.name]
            value = number(value if source.element is None else value[source.element])
            if value != self.scalars[position] or type(value) is not type(self.scalars[position]):
                indices.append(i)
                values.append(value)
                self.scalars[position] = value
        if indices:
            self.execution.set_scalars(indices, values)
        self.execution.launch_raw(
            None if self.cuda_device is None else
            torch.cuda.current_stream(self.cuda_device).cuda_stream)
        mark_written(self.written)
        if self.grad_norm_buffer is not None:
            # A snapshot, as torch's clip_grad_norm_ returns a new tensor each step (queued on
            # the step's stream: no synchronisation).
            self.grad_norm = self.grad_norm_buffer.clone()
        if not self.launches:
            self.launches = sum(kernel["launches"]
                                for kernel in self.fusion.definition.last_kernels())
