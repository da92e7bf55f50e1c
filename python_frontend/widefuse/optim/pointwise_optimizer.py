"""``PointwiseOptimizer``: a ``torch.optim.Optimizer`` whose step is written one parameter at a
time in ordinary torch style and runs as one widefuse fusion over all parameters.

    class Lion(PointwiseOptimizer):
        def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
            super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

        def init_state(self, param):
            return {"exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format)}

        def update(self, param, grad, state, *, lr, betas, weight_decay):
            beta1, beta2 = betas
            exp_avg = state["exp_avg"]
            param.mul_(1 - lr * weight_decay)
            param.add_(torch.sign(exp_avg.lerp(grad, 1 - beta1)), alpha=-lr)
            exp_avg.lerp_(grad, 1 - beta2)

``update`` receives proxies: in-place methods and ``out=`` update the parameter and its state
(the writes land when the step's kernel ends, later reads in ``update`` see them), and numbers
among the group's hyperparameters are runtime scalars, so a scheduled ``lr`` never recompiles.
A hyperparameter that Python control flow branches on (``if weight_decay != 0:``) becomes a
constant of the traced step: changing it traces again.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import Any, Callable, Iterator, Optional

import torch

from .._widefuse import Error
from ..errors import SpecializationRequest
from .checkpoint import FORMAT_OPTIONS as _FORMAT_OPTIONS, CheckpointMethods, fits
from .deferred_zeros import make_state
from .fold import PendingFold, live_optimizers
from .mesh_reduction import MeshReduction, mesh_of
from .scaling import StepScaling, scaling_tensors
from .state_formats import StateFormat, fit_state, group_format, state_format as checked_format
from .step_fusion import (Entry, PreparedStep, StepFusion, capturing, group_key,
                          layout, local, refuse_tensor_hyperparameters, run_once, step_dtype,
                          trace_key, trace_step)


class PointwiseOptimizer(CheckpointMethods, torch.optim.Optimizer):
    """Base class of widefuse's optimizers: subclasses write ``init_state`` and ``update``.

    `mode` is the segmentation mode of the step's fusion: "packed" (default) runs every
    parameter in one kernel launch, up to 8 signature classes (distinct dtypes, param groups
    with different branches) per kernel; "batched" one launch per signature class;
    "per-component" one launch per parameter. ``launches_per_step`` is the number of
    kernel launches of the last step. `threads`: CPU threads for parameters in host memory
    (default torch.get_num_threads()).

    `max_grad_norm` clips the grads by their total norm inside the step, as
    ``torch.nn.utils.clip_grad_norm_(params, max_grad_norm, norm_type)`` before ``step()``
    would (after GradScaler's unscale): the step is then two launches, the norm's and the
    update's, with no host synchronisation. ``grad_norm`` is the last step's total norm, a 0-d
    tensor (what clip_grad_norm_ returns), and the grads themselves are left unscaled.
    `error_if_nonfinite` (with `max_grad_norm`): a step whose total norm is inf or NaN raises
    torch's RuntimeError and changes nothing (parameters, state, step count), as
    ``clip_grad_norm_(..., error_if_nonfinite=True)`` raises before torch's step.

    `state_format` ("int8", "int4" or "fp8", a param-group option) keeps the state
    block-quantized as torchao does, in blocks of `block_size` elements (default 256; 128 for
    int4; a group that names its own format gets that format's default): each state tensor
    ``K`` of a parameter of at least 4096 elements, a multiple of the block, is stored as
    ``K_codes`` and ``K_scale``, and ``update`` still reads and writes ``state["K"]``
    (state_formats.py). ``dequantized_state_dict()`` is the state_dict torch's optimizers
    load.
    """

    def __init__(self, params: Any, defaults: dict, *, mode: str = "packed",
                 threads: Optional[int] = None, max_grad_norm: Optional[float] = None,
                 norm_type: float = 2.0, error_if_nonfinite: bool = False,
                 state_format: Optional[str] = None, block_size: Optional[int] = None) -> None:
        self._prepared: Optional[PreparedStep] = None  # add_param_group runs in super().__init__
        self._traced: dict[tuple, StepFusion] = {}
        self._specialized: set[str] = set()
        self._clip = _clip_option(max_grad_norm, norm_type, error_if_nonfinite)
        self.grad_norm: Optional[torch.Tensor] = None
        # widefuse.optim.clip_grad_norm_'s scaling, folded into the next step (fold.py).
        self._pending_fold: Optional[PendingFold] = None
        # What widefuse.optim.GradScaler hands the steps inside scaled() (scaling.py).
        self._handed_scaling: Optional[StepScaling] = None
        # How the step's fusion runs: `threads` CPU threads on the host backend (default:
        # torch's intra-op thread count), ignored on the GPU.
        self._options = dict(mode=mode, threads=threads or torch.get_num_threads())
        self.launches_per_step = 0
        # The all-reduce between a step's phases over DTensor parameters (mesh_reduction.py).
        self._mesh_reduction: Optional[MeshReduction] = None
        if state_format is not None or block_size is not None:
            fmt = checked_format(state_format, block_size)
            defaults = dict(defaults, state_format=fmt.name, block_size=fmt.block_size)
        super().__init__(params, defaults)
        self._hyperparameters = [name for name in self.defaults if name not in _FORMAT_OPTIONS]
        self._init_takes_hyperparameters = len(
            inspect.signature(self.init_state).parameters) > 1
        live_optimizers.add(self)

    # What subclasses write
    def init_state(self, param: torch.Tensor, **hyperparameters: Any) -> dict:
        """The state tensors of a parameter before its first step (e.g. zeros like it). A
        subclass may also accept the group's hyperparameters as keyword arguments."""
        return {}

    def update(self, param: Any, grad: Any, state: dict, **hyperparameters: Any) -> None:
        """One parameter's step, in torch style, on proxies (see the module's docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must define update()")

    def check_state(self, param: Any, state: dict, **hyperparameters: Any) -> None:
        """Checks the state a parameter has (made by init_state, loaded, or set by hand)
        against its group's hyperparameters before a step traces it and before
        load_state_dict loads it: raises Error to refuse it (the parameter's name is added),
        and may add missing entries to `state`. Default: nothing."""

    def state_dtype_for(self, key: str, param: torch.Tensor, group: dict) -> Optional[Any]:
        """The dtype load_state_dict gives state `key` of `param`; None for torch's rule (a
        floating-point parameter's dtype; ``step`` float32). Optimizers whose state has other
        dtypes (master weights, remainders) say so here."""
        return None

    def state_shape_for(self, key: str, param: torch.Tensor) -> Optional[tuple]:
        """The shape state `key` of `param` must have unless it is 0-d (``step``): the
        parameter's by default. Optimizers with factored state (Adafactor's ``row_var``) say
        so here; None accepts any shape."""
        return tuple(param.shape)

    # What __setstate__ gives a group of an older checkpoint that lacks them (a subclass
    # equal to a torch optimizer lists what torch's __setstate__ fills); then the defaults.
    _old_checkpoint_defaults: dict = {}

    # torch.optim.Optimizer
    def __getstate__(self) -> dict:
        """torch's state plus widefuse's options; the compiled step is left out (a copy or
        an unpickled optimizer traces and compiles again at its first step)."""
        state = super().__getstate__()
        state.update(_options=self._options, launches_per_step=self.launches_per_step,
                     _specialized=set(self._specialized),
                     _hyperparameters=list(self._hyperparameters), _clip=self._clip,
                     grad_norm=self.grad_norm)
        return state

    def __setstate__(self, state: dict) -> None:
        """torch's __setstate__ (also the end of load_state_dict); a group lacking a
        hyperparameter (an older checkpoint) gets torch's value for it, else the default."""
        super().__setstate__(state)
        self.__dict__.setdefault("_prepared", None)
        self.__dict__.setdefault("_traced", {})
        self.__dict__.setdefault("_specialized", set())
        self.__dict__.setdefault("_options", dict(mode="packed",
                                                  threads=torch.get_num_threads()))
        self.__dict__.setdefault("launches_per_step", 0)
        self.__dict__.setdefault("_clip", None)  # an optimizer pickled before max_grad_norm
        if self._clip is not None and len(self._clip) == 2:  # ... or before error_if_nonfinite
            self._clip = (*self._clip, False)
        self.__dict__.setdefault("_pending_fold", None)  # a fold is not pickled: its grads aren't
        self.__dict__.setdefault("_handed_scaling", None)
        self.__dict__.setdefault("grad_norm", None)
        # What update() receives: the constructor's defaults (torch's __setstate__ adds
        # "differentiable" to the defaults of an optimizer that has none).
        self.__dict__.setdefault("_hyperparameters", [
            name for name in self.defaults
            if name != "differentiable" and name not in _FORMAT_OPTIONS])
        self._init_takes_hyperparameters = len(
            inspect.signature(self.init_state).parameters) > 1
        for group in self.param_groups:
            for name, value in self._old_checkpoint_defaults.items():
                group.setdefault(name, value)
            for name in self._hyperparameters:
                group.setdefault(name, self.defaults[name])
            for name in _FORMAT_OPTIONS:  # a checkpoint of another optimizer: this one's format
                if name in self.defaults:
                    group.setdefault(name, self.defaults[name])
        self._prepared = None
        live_optimizers.add(self)

    def add_param_group(self, param_group: dict) -> None:
        if "state_format" in param_group and "block_size" not in param_group:
            # The block size of the group's own format, not the optimizer's default format's.
            fmt = checked_format(param_group["state_format"], None)
            param_group["block_size"] = None if fmt is None else fmt.block_size
        checked_format(param_group.get("state_format", self.defaults.get("state_format")),
                       param_group.get("block_size", self.defaults.get("block_size")))
        super().add_param_group(param_group)
        self._prepared = None

    # Not traced by torch.compile: the step is one fused launch already, which a compiled
    # caller runs as it is (a graph break), as torch's own step functions are disabled.
    @torch._disable_dynamo
    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One optimizer step over every parameter with a grad: a single fusion launch (per
        signature class in batched mode). Returns the closure's loss, if given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        scaling = (*scaling_tensors(self, self._handed_scaling), self._fold_coefficient())
        if not self._launch_prepared(scaling):
            if capturing():
                # Preparing checks, traces, allocates state and loads kernels: none of it can
                # be captured, and a graph without it would replay nothing.
                raise Error(f"{type(self).__name__}.step() under CUDA graph capture needs a "
                            "step prepared before the capture, with the same parameters, grad "
                            "layouts, state and hyperparameter kinds: run two steps first (the "
                            "first creates the state), as torch's recipe warms up on a side "
                            "stream; then capture, on any stream")
            self._prepare_and_launch(scaling)
        self._pending_fold = None
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """torch's zero_grad; a clip_grad_norm_ still folded into the next step is dropped
        with the grads it was for (a step skipped, as GradScaler skips an overflow)."""
        self._pending_fold = None
        super().zero_grad(set_to_none)

    def _fold_coefficient(self) -> Optional[torch.Tensor]:
        """The coefficient of the clip_grad_norm_ folded into this step, None without one or
        when the grads it was for are gone (fold.py; raises Error when any was written)."""
        pending = self._pending_fold
        if pending is None:
            return None
        params = [(f"parameter {i} of param group {g}", param)
                  for g, group in enumerate(self.param_groups)
                  for i, param in enumerate(group["params"]) if param.grad is not None]
        try:
            apply = pending.verdict(params)
        except Error:
            self._pending_fold = None  # refused once: the next clip or step starts afresh
            raise
        if apply:
            return pending.coefficient  # dropped once the step has launched
        self._pending_fold = None  # stale: a new backward replaced every grad
        return None

    # What other parts of widefuse.optim hand the step
    @property
    def fusion_options(self) -> dict:
        """execute()'s options for this optimizer's fusions (mode, threads): what
        widefuse.optim.clip_grad_norm_ runs its fusions over these grads with."""
        return dict(self._options)

    def set_fusion_options(self, **options: Any) -> None:
        """Adds execute() options for the step's fusions (host backend: ``block_order``,
        ``host_execution="verify"`` to run the device code in the emulator): what tests of a
        format's kernels use. The next step prepares again."""
        self._options = dict(self._options, **options)
        self._prepared = None
        self._traced.clear()

    @property
    def pending_fold(self) -> Optional[PendingFold]:
        """The clip_grad_norm_ scaling left to the next step() (fold.py), or None."""
        return self._pending_fold

    def set_pending_fold(self, fold: Optional[PendingFold]) -> None:
        """Leaves `fold`, widefuse.optim.clip_grad_norm_'s scaling of exactly this optimizer's
        grads, to the next step(), whose kernel multiplies the grads by its coefficient; None
        drops a pending one (a second clip applied it in place, or it went stale)."""
        self._pending_fold = fold

    @property
    def _step_supports_amp_scaling(self) -> bool:
        """torch.amp.GradScaler's question "does step() unscale the grads itself?": yes to
        torch's GradScaler (and its subclasses), which then hands its scale and inf flag to
        step() as attributes (scaling.py). No to anyone else who asks: a wrapper reads the
        flag to decide whether to unscale before it reads the grads itself (Lightning's
        precision plugins, before clipping: they refuse to clip for an optimizer that says
        yes), and then unscales first, as for torch's default AdamW."""
        return sys._getframe(1).f_globals.get("__name__") == "torch.amp.grad_scaler"

    @contextlib.contextmanager
    def scaled(self, scaling: StepScaling) -> Iterator[None]:
        """Hands `scaling` (widefuse.optim.GradScaler's scale and inf flag) to the step()s
        inside the block, in place of torch's ``optimizer.grad_scale`` and
        ``optimizer.found_inf`` attributes, which step() reads otherwise."""
        previous, self._handed_scaling = self._handed_scaling, scaling
        try:
            yield
        finally:
            self._handed_scaling = previous

    def _found_inf_in_step(self) -> bool:
        """True when the step computes found_inf itself (StepScaling.computes_found_inf)
        instead of reading the result of torch's inf check."""
        handed = self._handed_scaling
        return handed is not None and handed.computes_found_inf

    # The steady state
    def _launch_prepared(self, scaling: tuple) -> bool:
        """Runs the step with the prepared bindings when only grads (same layout) and numbers
        changed; False when something else did (the caller traces or prepares again)."""
        prepared = self._prepared
        if prepared is None:
            return False
        # The step launches on torch's current stream (PreparedStep.launch), whichever it is.
        if prepared.cuda_device is not None and capturing():
            refuse_tensor_hyperparameters(self.param_groups, prepared.groups)
            if self._clip is not None and self._clip[2]:
                raise Error(f"{type(self).__name__}(error_if_nonfinite=True).step() cannot be "
                            "captured into a CUDA graph: it reads the total norm on the host to "
                            "raise (a synchronisation); use error_if_nonfinite=False")
        params, grads, addresses = prepared.params, prepared.grads, prepared.param_addresses
        grad_layouts, grad_addresses = prepared.grad_layouts, prepared.grad_addresses
        count = len(params)
        changed = []
        k = 0
        for group in self.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if k == count or param is not params[k] or \
                        local(param).data_ptr() != addresses[k]:
                    return False
                if grad is not grads[k]() or local(grad).data_ptr() != grad_addresses[k]:
                    if layout(local(grad)) != grad_layouts[k] or grad.is_sparse:
                        return False
                    changed.append((k, grad))
                k += 1
        scaling_tensors = [t for t in scaling if t is not None]
        if k != count or not prepared.same_scaling(scaling) or \
                prepared.computes_found_inf != self._found_inf_in_step() or \
                prepared.group_key != self._group_key(prepared.groups) or \
                not prepared.state_unchanged(self.state):
            return False
        try:
            prepared.launch(changed, self.param_groups, scaling_tensors)
        except Exception:
            self._prepared = None
            raise
        self.launches_per_step = prepared.launches
        self._refuse_nonfinite(prepared.grad_norm)
        self._grad_norm_from(prepared.grad_norm)
        return True

    def _refuse_nonfinite(self, output: Any, entries: Optional[list[Entry]] = None,
                          had_state: Optional[set] = None) -> None:
        """With error_if_nonfinite, raises torch's RuntimeError for a step whose total norm
        is inf or NaN (its kernels changed nothing: trace_step skips the update). The state
        made for parameters stepped for the first time (`entries` without `had_state`) is
        dropped again, so the optimizer is as before the step."""
        if self._clip is None or not self._clip[2] or output is None:
            return
        norm = output if isinstance(output, torch.Tensor) else torch.from_numpy(output)
        if bool(torch.isfinite(norm.reshape(()))):  # the one host synchronisation, as torch's
            return
        for entry in entries or ():
            if id(entry.param) not in had_state:
                self.state.pop(entry.param, None)
        if entries is not None:
            self._prepared = None  # it holds the dropped state
        raise RuntimeError(nonfinite_message(self._clip[1]))

    def _grad_norm_from(self, output: Any) -> None:
        """Keeps a step's total grad norm as torch's clip_grad_norm_ returns it: a 0-d tensor
        on the parameters' device."""
        if output is None:
            return
        norm = output if isinstance(output, torch.Tensor) else torch.from_numpy(output)
        device = local(self.param_groups[0]["params"][0]).device
        self.grad_norm = norm.reshape(()).to(device)

    def _group_key(self, groups: list[int]) -> tuple:
        formats = tuple(group_format(self.param_groups[g]) for g in groups)
        return (group_key(self.param_groups, groups, self._hyperparameters, self._specialized),
                formats)

    # Tracing and preparing
    def _prepare_and_launch(self, scaling: tuple) -> None:
        """Checks every parameter with a grad, traces the step (once per trace key), binds it
        and launches it. Nothing is written, not even new state, until every check passed."""
        self._prepared = None
        entries = self._entries()
        if not entries:
            self.launches_per_step = 0
            return
        present = (scaling[0] is not None, scaling[1] is not None,
                   None if scaling[2] is None else scaling[2].dtype,
                   scaling[1] is not None and self._found_inf_in_step())
        step = self._traced_step(entries, present)
        options = self._step_options(step, entries)
        had_state = {id(entry.param) for entry in entries if entry.param in self.state}
        if step.new_state:
            self.launches_per_step, grad_norm = run_once(step, entries, self.param_groups,
                                                         scaling, options)
            self._refuse_nonfinite(grad_norm)
            self._grad_norm_from(grad_norm)
            self._store_state(entries)
            return
        groups = sorted({entry.group for entry in entries})
        prepared = PreparedStep(step, entries, self.param_groups, scaling, options,
                                self._group_key(groups), groups)
        self._store_state(entries)
        prepared.launch([], self.param_groups, [t for t in scaling if t is not None])
        self._prepared = prepared
        self.launches_per_step = prepared.launches
        self._refuse_nonfinite(prepared.grad_norm, entries, had_state)
        self._grad_norm_from(prepared.grad_norm)

    def _step_options(self, step: StepFusion, entries: list[Entry]) -> dict:
        """The fusion options of `step`: over DTensor parameters, a step whose later phase
        reads a reduction (the clip's norm, an inf check, LAMB's norms) all-reduces it across
        the mesh between the phases (mesh_reduction.py); refused before anything runs where
        that cannot be right."""
        if step.definition.phases == 1:
            return self._options
        found = mesh_of([entry.param for entry in entries],
                        [f"parameter {entry.index} of param group {entry.group}"
                         for entry in entries])
        if found is None:
            return self._options
        reduction = self._mesh_reduction
        if reduction is None or reduction.mesh != found[0] or reduction.sharded != found[1]:
            reduction = self._mesh_reduction = MeshReduction(*found)
        return dict(self._options, phase_boundary=reduction)

    @property
    def collectives_per_step(self) -> int:
        """The all-reduces the last step issued across a DTensor mesh (0 without one)."""
        reduction = self._mesh_reduction
        return 0 if reduction is None else reduction.last_collectives

    def _store_state(self, entries: list[Entry]) -> None:
        # As torch: a parameter without state (SGD without momentum) has no entry at all.
        for entry in entries:
            if entry.state or entry.param in self.state:
                self.state[entry.param] = entry.state

    def _traced_step(self, entries: list[Entry], present: tuple[bool, bool]) -> StepFusion:
        while True:
            key = (self._options["mode"], self._clip,
                   trace_key(entries, self.param_groups, self._hyperparameters,
                             self._specialized, present))
            step = self._traced.get(key)
            if step is not None:
                return step
            try:
                step = trace_step(type(self).__name__, self.update, entries, self.param_groups,
                                  self._hyperparameters, self._specialized, present, self._clip)
            except SpecializationRequest as request:
                if request.names <= self._specialized:
                    raise
                self._specialized |= request.names  # a constant from now on: trace again
                continue
            self._traced[key] = step
            return step

    def _entries(self) -> list[Entry]:
        """The parameters with a grad, checked, with their state (new state not yet stored)."""
        entries: list[Entry] = []
        first: Optional[tuple[str, torch.device]] = None
        seen: dict[int, str] = {}
        for g, group in enumerate(self.param_groups):
            hyperparameters = {name: group[name] for name in self._hyperparameters}
            for i, param in enumerate(group["params"]):
                grad = param.grad
                if grad is None:
                    continue
                where = f"parameter {i} of param group {g} (shape {list(param.shape)})"
                if seen.setdefault(id(param), where) is not where:
                    # torch warns at construction and steps it twice; one launch writes each
                    # parameter once.
                    raise Error(f"{where} is also {seen[id(param)]}: a parameter listed twice "
                                "is stepped twice by torch.optim (which warns that this will "
                                "become an error); pass each parameter once")
                _check_grad(param, grad, where)
                device = local(param).device
                if first is None:
                    first = (where, device)
                elif device != first[1]:
                    raise Error(f"{where} is on {device} but {first[0]} is on {first[1]}; a "
                                "widefuse optimizer steps the parameters of one device")
                if param.is_meta or grad.is_meta:
                    raise Error(f"{where} is a meta tensor (or its grad is): a meta tensor "
                                "has no data to step; materialize the model (to_empty, load) "
                                "before stepping")
                entries.append(Entry(g, i, param, grad,
                                     self._state_of(param, hyperparameters, where,
                                                    group_format(group))))
        return entries

    def _state_of(self, param: Any, hyperparameters: dict, where: str,
                  fmt: Optional[StateFormat] = None) -> dict:
        """A copy of the parameter's state, made by init_state before its first step; numbers
        (as old checkpoints hold ``step``) become 0-d float32 tensors; the entries `fmt`
        quantizes as codes and scales."""
        state = self.state.get(param)
        if not state:
            try:
                made = make_state(fmt, param, lambda: (
                    self.init_state(param, **hyperparameters)
                    if self._init_takes_hyperparameters else self.init_state(param)))
            except Error as error:
                raise Error(f"{where}: {error}") from None
            if not isinstance(made, dict):
                raise Error(f"{type(self).__name__}.init_state must return a dict of tensors, "
                            f"got {type(made).__name__}")
            state = made
        device = local(param).device
        copied = {}
        for key, value in state.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = torch.tensor(float(value), dtype=step_dtype(), device=device)
            if not isinstance(value, torch.Tensor):
                raise Error(f"state '{key}' of {where} is a {type(value).__name__}; widefuse "
                            "optimizers keep tensors in their state")
            if local(value).device != device:
                raise Error(f"state '{key}' of {where} is on {local(value).device}; the "
                            f"parameter is on {device}")
            if value.dim() != 0 and not fits(self, key, value, param):
                raise Error(f"state '{key}' of {where} has shape {list(value.shape)}")
            copied[key] = value
        try:
            self.check_state(param, copied, **hyperparameters)
            return fit_state(fmt, param, copied)
        except Error as error:
            raise Error(f"{where}: {error}") from None

def nonfinite_message(norm_type: float) -> str:
    """torch's clip_grad_norm_(error_if_nonfinite=True) message for a non-finite total norm."""
    return (f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")


def _clip_option(max_grad_norm: Any, norm_type: Any,
                 error_if_nonfinite: Any = False) -> Optional[tuple]:
    """(max_norm, norm_type, error_if_nonfinite) for a step that clips, checked; None when it
    does not."""
    if not isinstance(error_if_nonfinite, bool):
        raise TypeError(f"error_if_nonfinite must be a bool, not "
                        f"{type(error_if_nonfinite).__name__}")
    if max_grad_norm is None:
        if error_if_nonfinite:
            raise ValueError("error_if_nonfinite=True needs max_grad_norm: without it the step "
                             "computes no norm")
        return None
    if isinstance(max_grad_norm, bool) or not isinstance(max_grad_norm, (int, float)):
        raise TypeError(f"max_grad_norm must be a number or None, not "
                        f"{type(max_grad_norm).__name__}")
    if not 0.0 <= max_grad_norm < float("inf"):
        raise ValueError(f"Invalid max_grad_norm: {max_grad_norm} (a finite number >= 0)")
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)):
        raise TypeError(f"norm_type must be a number, not {type(norm_type).__name__}")
    if norm_type != float("inf") and not norm_type > 0:
        raise ValueError(f"Invalid norm_type: {norm_type} (a number > 0, or inf)")
    return (float(max_grad_norm), float(norm_type), error_if_nonfinite)


def _check_grad(param: Any, grad: Any, where: str) -> None:
    if grad.is_sparse:
        raise Error(f"{where}: its grad is sparse: widefuse optimizers do not support sparse "
                    "gradients (the step is one dense kernel); use torch.optim's optimizer "
                    "(SGD, Adagrad) or torch.optim.SparseAdam for sparse grads")
    if grad.shape != param.shape:
        raise Error(f"{where}: its grad has shape {list(grad.shape)}")
    if grad.dtype != param.dtype:
        raise Error(f"{where} is {param.dtype} but its grad is {grad.dtype}")
    if local(grad).device != local(param).device:
        raise Error(f"{where} is on {local(param).device} but its grad is on "
                    f"{local(grad).device}")
    if local(grad).shape != local(param).shape:
        raise Error(f"{where}: its grad's local shard has shape {list(local(grad).shape)}, the "
                    f"parameter's {list(local(param).shape)}")
