"""Constructor argument checks with torch's error class and torch's words: a bad argument is
a ValueError (``except ValueError`` catches it, as with torch's optimizers) that is also a
``widefuse.Error``; each argument has its own message, torch's phrase first."""

from __future__ import annotations

from typing import Any

import torch

from .._widefuse import Error


class InvalidArgument(Error, ValueError):
    """A constructor argument torch's optimizer would refuse too, or one widefuse refuses."""


def check_lr(lr: Any) -> None:
    """torch's checks of `lr`: a number or a 1-element tensor, not negative."""
    if isinstance(lr, torch.Tensor) and lr.numel() != 1:
        raise InvalidArgument("Tensor lr must be 1-element")
    if not 0.0 <= lr:  # TypeError for what is no number, as torch's comparison raises
        raise InvalidArgument(f"Invalid learning rate: {float(lr)}")


def check_not_negative(what: str, value: Any) -> None:
    """torch's ``Invalid <what>: <value>`` for a negative number (`what`: "momentum value")."""
    if not 0.0 <= value:
        raise InvalidArgument(f"Invalid {what}: {value}")


def check_betas(betas: Any) -> None:
    """A pair of numbers in [0, 1), torch's message per index."""
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise InvalidArgument(f"betas must be a pair of numbers, got {betas!r}")
    for i, beta in enumerate(betas):
        if isinstance(beta, torch.Tensor) and beta.numel() != 1:
            raise InvalidArgument(f"Tensor betas[{i}] must be 1-element")
        if not 0.0 <= float(beta) < 1.0:
            raise InvalidArgument(f"Invalid beta parameter at index {i}: {float(beta)}")


def refuse_differentiable(differentiable: Any, name: str) -> None:
    """differentiable=True is refused before anything is built: the step is a fused kernel
    that records no autograd graph."""
    if differentiable:
        raise InvalidArgument(
            "differentiable=True is not supported: a widefuse step is one fused kernel and "
            f"records no autograd graph; use torch.optim.{name}(differentiable=True) to "
            "differentiate through the step")


def refuse_fused_with_foreach(fused: Any, foreach: Any) -> None:
    """torch's RuntimeError for fused=True with foreach=True (widefuse ignores both: every
    step is one fused launch, but a drop-in refuses what torch refuses)."""
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
