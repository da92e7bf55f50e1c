"""``widefuse.optim.clip_grad_norm_``: torch.nn.utils.clip_grad_norm_ with the total norm computed
by one widefuse fusion over every grad (one launch), and the scaling either folded into the
next step of the widefuse optimizer that owns exactly those grads (no second launch over the
grads: that step's kernel multiplies them by the coefficient) or done in place by a second
fusion, as torch does it (docs/torch.md §10.3)."""

from __future__ import annotations

import math
import types
import warnings
from collections import OrderedDict
from typing import Any, Optional

import torch

from .. import reductions
from .._widefuse import Error
from ..data_type import DataType
from ..fusion_definition import FusionDefinition
from .fold import PendingFold, live_optimizers
from .mesh_reduction import MeshReduction, mesh_of
from .pointwise_optimizer import nonfinite_message
from .step_fusion import tensor_input, layout, local, scaled_by, Source, StepFusion

# The dtypes a widefuse fusion reduces; other grads (complex, float8) go to torch's clip.
_FUSED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# Traced fusions by the grads' layouts (and the norm's order): a training loop's clip traces
# and compiles once. Bounded, as a long-lived process may clip many models.
_CACHE_SIZE = 16
_norm_fusions: "OrderedDict[tuple, FusionDefinition]" = OrderedDict()
_scale_fusions: "OrderedDict[tuple, FusionDefinition]" = OrderedDict()

#: Kernel launches of the last clip_grad_norm_ (0 when torch's clip ran, or no grad): what
#: the tests and benchmarks count.
last_launches = 0


@torch.no_grad()
def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Optional[bool] = None, *,
                    fold: bool = True) -> torch.Tensor:
    """torch.nn.utils.clip_grad_norm_: scales the grads of `parameters` so that their total
    `norm_type` norm is at most `max_norm`, and returns that total norm (a 0-d tensor on the
    first grad's device, in the dtype torch returns). `foreach` is accepted and ignored.

    The norm is one widefuse launch over every grad. With `fold` (default), when the
    parameters with grads are exactly those of one widefuse optimizer, the scaling is left
    to that optimizer's next step(), whose kernel multiplies the grads by the coefficient:
    ``p.grad`` is then not scaled until the step (code that reads the grads in between should
    pass fold=False). Otherwise a second launch scales every grad in place, as torch does.
    DTensor grads (FSDP2, HSDP) have their shards' norm combined across the mesh: one
    all-reduce per sharded mesh dimension, a DTensor total returned as torch returns it.
    Grads on several devices, other placements, complex grads, repeated parameters and
    norm_type 0 run torch's own clip_grad_norm_."""
    global last_launches
    last_launches = 0
    # torch's conversions and checks, in torch's order, before anything is read or written.
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    with_grads = [p for p in parameters if p.grad is not None]
    norm_type = float(norm_type)
    max_norm_value = float(max_norm)
    if not with_grads:
        return torch.tensor(0.0)
    mesh = _mesh(with_grads)
    if mesh is False or not _fusable(with_grads, norm_type):
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm_value, norm_type,
                                              error_if_nonfinite, foreach)
    grads = [local(p.grad) for p in with_grads]  # a DTensor's shard: the norm is combined
    if math.isinf(norm_type) and any(p.grad.numel() == 0 for p in with_grads):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {norm_type} norm on an empty "
                           "tensor because the operation does not have an identity")
    owner = _owner(with_grads) if fold else None
    options = owner.fusion_options if owner is not None else dict(
        mode="packed", threads=torch.get_num_threads())
    launches = _apply_pending(with_grads, options)  # a second clip: the first one's scaling
    total, coefficient, count = _norm(grads, max_norm_value, norm_type, options, mesh)
    launches += count
    last_launches = launches
    if error_if_nonfinite and not bool(torch.isfinite(total)):  # torch's synchronisation
        raise RuntimeError(nonfinite_message(norm_type))
    if owner is not None:
        owner.set_pending_fold(PendingFold(coefficient, with_grads))
    else:
        last_launches = launches + _scale(grads, coefficient, options)
    if mesh is not None:  # torch's clip returns a DTensor total for DTensor grads
        from torch.distributed.tensor import DTensor, Replicate
        return DTensor.from_local(total, mesh.mesh, [Replicate()] * mesh.mesh.ndim)
    return total


def _mesh(params: list) -> Any:
    """The MeshReduction that combines a norm of `params`' DTensor shards (None: no DTensor;
    False: placements only torch's clip handles)."""
    try:
        found = mesh_of(params, [f"parameter {k}" for k in range(len(params))])
    except Error:
        return False
    return None if found is None else MeshReduction(*found)


def _fusable(params: list, norm_type: float) -> bool:
    """Whether widefuse computes this clip: dense real grads of one CPU or CUDA device, each
    parameter once. torch's 0-norm of the grads' 0-norms is the number of nonzero grads, not
    a count of elements: that one stays torch's."""
    if norm_type == 0 or len({id(p) for p in params}) != len(params):
        return False
    device = None
    for p in params:
        grad = local(p.grad)
        if type(grad) is not torch.Tensor or grad.layout != torch.strided or \
                grad.dtype not in _FUSED_DTYPES or grad.device.type not in ("cpu", "cuda") or \
                grad.is_conj() or grad.is_neg():
            return False
        if any(stride == 0 and size > 1 for stride, size in zip(grad.stride(), grad.shape)):
            return False  # an expanded grad: its in-place scaling is torch's error
        if device is None:
            device = grad.device
        elif grad.device != device:
            return False
    return True


def _owner(params: list) -> Any:
    """The one widefuse optimizer whose parameters with grads are exactly `params`, or None."""
    wanted = {id(p) for p in params}
    owners = []
    for optimizer in list(live_optimizers):
        have = {id(p) for group in optimizer.param_groups for p in group["params"]
                if p.grad is not None}
        if have == wanted:
            owners.append(optimizer)
    return owners[0] if len(owners) == 1 else None


def _apply_pending(params: list, options: dict) -> int:
    """Scales in place the grads of a fold still pending on an optimizer that holds any of
    `params` (a second clip before the step sees them clipped, as with torch); drops a stale
    one. Returns the launches."""
    wanted = {id(p) for p in params}
    launches = 0
    for optimizer in list(live_optimizers):
        pending = optimizer.pending_fold
        if pending is None or not wanted & pending.grads.keys():
            continue
        mine = [(f"parameter {i} of param group {g}", p)
                for g, group in enumerate(optimizer.param_groups)
                for i, p in enumerate(group["params"]) if p.grad is not None]
        optimizer.set_pending_fold(None)  # applied, stale or refused: raised once
        if pending.verdict(mine):
            launches += _scale([local(p.grad) for _, p in mine if id(p) in pending.grads],
                               pending.coefficient, options)
    return launches


def _cached(cache: OrderedDict, key: tuple, build: Any) -> FusionDefinition:
    fusion = cache.get(key)
    if fusion is None:
        fusion = build()
        cache[key] = fusion
        if len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return fusion


def _launches(fusion: FusionDefinition) -> int:
    return sum(kernel["launches"] for kernel in fusion.last_kernels())


def _norm(grads: list, max_norm: float, norm_type: float, options: dict,
          mesh: Optional[MeshReduction]) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The total norm of `grads` from one fusion (one launch per signature class, one in
    packed mode), combined over `mesh` when the grads are shards (one all-reduce per sharded
    dimension), and torch's coefficient clamp(max_norm / (total + 1e-6), max=1), both 0-d
    in the total's dtype; and the fusion's launches."""

    # torch.stack of the grads' norms promotes their dtypes: the total's dtype. The sums are
    # in float32 (float64 with a float64 grad), as torch.linalg.vector_norm accumulates.
    dtype = grads[0].dtype
    for g in grads[1:]:
        dtype = torch.promote_types(dtype, g.dtype)
    compute = DataType.Double if dtype == torch.float64 else DataType.Float

    def build() -> FusionDefinition:
        fd = FusionDefinition("clip_grad_norm_")
        sink = StepFusion(fd)  # only for tensor_input's checks and declarations
        with fd:
            inputs = [tensor_input(fd, sink, g, Source("grad", k)) for k, g in enumerate(grads)]
            values = [x if x.dtype is compute else x.to(compute) for x in inputs]
            if math.isinf(norm_type):
                op, elements = ("max" if norm_type > 0 else "min"), [x.abs() for x in values]
            elif norm_type == 2:
                op, elements = "sum", [x * x for x in values]
            elif norm_type == 1:
                op, elements = "sum", [x.abs() for x in values]
            else:
                op, elements = "sum", [x.abs() ** norm_type for x in values]
            fd.add_output(reductions.reduce(fd, op, elements))
        return fd

    key = (tuple(layout(g) for g in grads), norm_type)
    fusion = _cached(_norm_fusions, key, build)
    reduced = fusion.execute(list(grads), **options)[0].reshape(())
    if mesh is not None:
        op = "sum" if not math.isinf(norm_type) else "max" if norm_type > 0 else "min"
        mesh.combine([reduced], [op])
    # The root, the cast and the coefficient by torch's ops on the 0-d result: in the fusion
    # each would read the reduction, a second phase (no epilogue values: docs/status.md,
    # docs/segmenter.md §9.5), one more launch than these tiny ops.
    if norm_type == 2:
        reduced = reduced.sqrt()
    elif not (math.isinf(norm_type) or norm_type == 1):
        reduced = reduced ** (1.0 / norm_type)
    total = reduced.to(dtype)
    coefficient = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return total, coefficient, _launches(fusion)


def _scale(grads: list, coefficient: torch.Tensor, options: dict) -> int:
    """Multiplies every grad by the 0-d `coefficient` in place, as torch's
    _clip_grads_with_norm_ does: one fusion. Returns its launches."""

    def build() -> FusionDefinition:
        fd = FusionDefinition("clip_grads_with_norm_")
        sink = StepFusion(fd)
        with fd:
            coef = tensor_input(fd, sink, coefficient, Source("clip_coef"))
            for k, g in enumerate(grads):
                grad = tensor_input(fd, sink, g, Source("grad", k))
                grad.copy_(scaled_by(grad, coef))
        return fd

    key = (tuple(layout(g) for g in grads), layout(coefficient))
    fusion = _cached(_scale_fusions, key, build)
    fusion.execute([coefficient, *grads], **options)
    return _launches(fusion)
