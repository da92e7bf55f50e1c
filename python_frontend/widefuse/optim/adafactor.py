"""``Adafactor``: a drop-in replacement for ``torch.optim.Adafactor`` (Shazeer and Stern 2018,
"Adafactor: Adaptive Learning Rates with Sublinear Memory Cost", as torch implements it): the
same constructor, state and state_dict, whose step is one widefuse fusion over every parameter
without a host synchronisation.

torch's step reads three numbers on the host per parameter (the step count, ``||param||`` and
``||update||``). Here the step count is a 0-d state tensor the kernel increments, the
step-dependent numbers are computed from it in float64 (as torch computes them with Python
floats), the norms are tensor-scope reductions and the row and column mean squares are
rows-scope reductions (the columns as the rows of ``grad.mT``, which the step reads as a
second input over the grad's memory). The fusion then runs as phases: 4 launches for any
number of factored parameters, 2 when every parameter is 1-D (docs/torch.md §10.5)."""

from __future__ import annotations

import math
from typing import Any, Optional

import torch

from .._widefuse import Error
from ..data_type import DataType
from ..functions import where
from .arguments import InvalidArgument
from .pointwise_optimizer import PointwiseOptimizer
from .step_fusion import step_dtype


class Adafactor(PointwiseOptimizer):
    """torch.optim.Adafactor's algorithm and interface (``foreach`` is accepted and ignored:
    every step is one fusion). For a parameter of rank >= 2 the second moment is factored
    over the last two dimensions into ``row_var`` (the grad's shape with the last extent 1)
    and ``col_var`` (extent 1 at dimension -2); a 0-d or 1-D parameter keeps ``variance``.
    ``step`` is a 0-d float32 tensor, as torch's.

    Unlike torch's, GradScaler's in-step unscaling is accepted (as by every
    PointwiseOptimizer), and so are `max_grad_norm`, `norm_type` and `error_if_nonfinite`
    (clipping the grads by their total norm inside the step)."""

    def __init__(self, params: Any, lr: Any = 1e-2, beta2_decay: float = -0.8,
                 eps: Any = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 mode: str = "packed", threads: Optional[int] = None,
                 max_grad_norm: Optional[float] = None, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False) -> None:
        _check_arguments(lr, beta2_decay, eps, d, weight_decay)
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize),
                         mode=mode, threads=threads, max_grad_norm=max_grad_norm,
                         norm_type=norm_type, error_if_nonfinite=error_if_nonfinite)

    # What torch's Adafactor.__setstate__ gives a group of an older checkpoint.
    _old_checkpoint_defaults = dict(foreach=None)

    def init_state(self, param: torch.Tensor) -> dict:
        if param.is_complex():
            raise Error("Adafactor does not support complex parameters")
        state = {"step": torch.zeros((), dtype=step_dtype(), device=param.device)}
        if param.dim() > 1:
            state["row_var"] = param.new_zeros(_row_shape(param))
            state["col_var"] = param.new_zeros(_col_shape(param))
        else:
            state["variance"] = torch.zeros_like(param, memory_format=torch.preserve_format)
        return state

    def state_shape_for(self, key: str, param: torch.Tensor) -> Optional[tuple]:
        if key == "row_var" and param.dim() > 1:
            return _row_shape(param)
        if key == "col_var" and param.dim() > 1:
            return _col_shape(param)
        return tuple(param.shape)

    def check_state(self, param: Any, state: dict, **_: Any) -> None:
        """The factors a parameter of rank >= 2 needs, ``variance`` for any other."""
        if param.dim() > 1 and hasattr(param, "placements") and \
                any(not placement.is_replicate() for placement in param.placements):
            raise Error("Adafactor's factored second moment reads the row and column sums of "
                        "the whole parameter, and this one is a DTensor sharded across a mesh: "
                        "widefuse does not combine factors over shards (use "
                        "torch.optim.Adafactor for sharded parameters)")
        needed = ("row_var", "col_var") if param.dim() > 1 else ("variance",)
        missing = [key for key in needed if key not in state]
        if missing:
            raise Error(f"its Adafactor state lacks {', '.join(repr(k) for k in missing)} "
                        f"(a rank-{param.dim()} parameter keeps {', '.join(needed)})")

    def update(self, param: Any, grad: Any, state: dict, *, lr: Any, beta2_decay: Any,
               eps: Any, d: Any, weight_decay: Any, maximize: bool, **_: Any) -> None:
        # torch's _single_tensor_adafactor, each Python-float line a float64 0-d value here;
        # a float64 number that torch hands a float32 kernel as a scalar is rounded to the
        # kernel's compute dtype first, as torch rounds it (.to(compute)).
        eps1, eps2 = eps
        if eps1 is None:
            eps1 = torch.finfo(param.dtype.torch).eps
        compute = DataType.Double if param.dtype is DataType.Double else DataType.Float
        numel = math.prod(param.shape)
        # The column mean squares are the rows of grad.mT (read before maximize negates the
        # grad: a norm does not see the sign).
        transposed = grad.mT if grad.ndim > 1 else None
        if maximize:
            grad = -grad
        step = state["step"]
        step.add_(1)
        if grad.ndim > 1:
            _settle(step)
        step_value = step.double()
        one_minus_beta2_t = (step_value**beta2_decay).to(compute)
        rho = (1 / step_value**0.5).clamp(max=lr)  # min(lr, 1 / sqrt(t))
        param_rms = _norm(param).double() / numel**0.5
        alpha = _python_max(eps2, param_rms) * rho
        # Unconditional (x * 1 is x, bit for bit), so weight_decay stays a runtime scalar.
        param.mul_(1 - lr * weight_decay)
        if grad.ndim > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_mean = grad.norm(dim=-1, keepdim=True).square() / grad.shape[-1]
            row_var.lerp_(row_mean, one_minus_beta2_t)
            col_mean = transposed.norm(dim=-1).unsqueeze(-2).square() / grad.shape[-2]
            col_var.lerp_(col_mean, one_minus_beta2_t)
            # Of the new row_var before it is settled: the same values, one phase earlier.
            row_var_mean = row_var.mean(dim=-2, keepdim=True)
            _settle(row_var)
            _settle(col_var)
            # torch's row_var @ col_var: an [R, 1] @ [1, C] product, each element one product.
            var_estimate = row_var * col_var
            var_estimate = var_estimate / row_var_mean.clamp(min=eps1)
        else:
            variance = state["variance"]
            variance.lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = variance
        update = var_estimate.clamp(min=eps1 * eps1).rsqrt() * grad
        denom = _python_max(1.0, _norm(update).double() / (numel**0.5 * d))
        param.add_(update, alpha=(-alpha / denom).to(compute))


def _python_max(floor: Any, value: Any) -> Any:
    """Python's ``max(floor, value)``, which torch's step computes on the norms it reads on
    the host: `value` where it is greater, else `floor`, so a NaN norm gives `floor` (the
    parameter's other elements still step, as in torch)."""
    return where(value > floor, value, floor)


def _norm(tensor: Any) -> Any:
    """torch's tensor.norm(2); a 0-d tensor's as that of its one-element view (kernels
    reduce tensors of rank >= 1)."""
    return torch.linalg.vector_norm(tensor if tensor.ndim else tensor.unsqueeze(0))


def _settle(tensor: Any) -> None:
    """Makes the new value of state `tensor` the result of a reduction (the maximum over a
    trailing extent-1 dimension: each element exactly), so that later passes, and its own
    write, read that result instead of recomputing the value from the state's entry.

    Why: a factored step writes tensors of four shapes (``step``, ``row_var``, ``col_var``,
    ``param``), one kernel each, and the segmenter refuses a kernel that reads a state tensor
    another kernel writes (the read might see the new value). Settled, each state tensor is
    read once, in the phase that computes its new value, and written in a later one."""
    widened = tensor.unsqueeze(-1)
    tensor.copy_(tensor.definition.ops.max(widened, dims=[widened.ndim - 1]))


def _row_shape(param: torch.Tensor) -> tuple:
    return (*param.shape[:-1], 1)


def _col_shape(param: torch.Tensor) -> tuple:
    return (*param.shape[:-2], 1, param.shape[-1])


def _check_arguments(lr: Any, beta2_decay: Any, eps: Any, d: Any, weight_decay: Any) -> None:
    """torch's checks and messages (ValueError), in torch's order."""
    if isinstance(lr, torch.Tensor) and lr.numel() != 1:
        raise InvalidArgument("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise InvalidArgument(f"Learning rate should be >= 0 but is: {lr}")
    if not 0.0 >= beta2_decay:
        raise InvalidArgument(f"beta2_decay should be <= 0 but is: {beta2_decay}")
    if eps[0] is not None and not 0.0 <= eps[0]:
        raise InvalidArgument(f"epsilon1 should be >= 0 but is: {eps[0]}")
    if not 0.0 <= eps[1]:
        raise InvalidArgument(f"epsilon2 should be >= 0 but is: {eps[1]}")
    if not 1.0 <= d:
        raise InvalidArgument(f"Clipping threshold d should be >= 1 but is: {d}")
    if not 0.0 <= weight_decay:
        raise InvalidArgument(f"weight_decay should be >= 0 but is: {weight_decay}")
