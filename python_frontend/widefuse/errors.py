"""widefuse's exceptions beyond ``widefuse.Error``.

Every error widefuse raises is a ``widefuse.Error`` (a RuntimeError, as nvFuser's fusion
errors are) with widefuse's message. Where Python's conventions, and so nvFuser's tests, expect
another class, the error is also an instance of that class: an argument of the wrong type is a
TypeError, an argument of the right type but a value the call cannot take is a ValueError, a
dimension outside a tensor's rank is an IndexError. ``except widefuse.Error`` still catches all
of them.

Where nvFuser's tests match a phrase of nvFuser's message, widefuse's message begins with that
phrase (the functions below) and its own explanation follows.
"""

from __future__ import annotations

from typing import Any

from ._widefuse import Error


class UnsupportedOperationError(Error, AttributeError):
    """An operation widefuse does not trace (a reduction over a middle dimension, an
    in-place method, ...).

    Also an AttributeError, so ``hasattr(tensor, "sum")`` is simply False.
    """


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type (a string where a value or number goes, a float extent,
    a list of the wrong kind of items), or the wrong number of arguments."""


class ArgumentValueError(Error, ValueError):
    """An argument of the right type whose value the call cannot take (an extent out of
    range, a stride order that is no permutation, a constant its dtype cannot hold)."""


class DimensionIndexError(Error, IndexError):
    """A dimension index outside a tensor's rank (``t.size(2)`` of a 2-d tensor)."""


class SpecializationRequest(Error):
    """Python control flow (``if weight_decay != 0:``) on a scalar computed only from runtime
    scalars that may be specialized, such as an optimizer's hyperparameters: whoever defined
    them catches this and traces again with `names` as constants."""

    def __init__(self, value: Any, names: frozenset) -> None:
        super().__init__(
            f"the value of '{value.name}' depends on the runtime scalar(s) "
            f"{', '.join(sorted(names))}, which are only known when the fusion runs")
        self.names = names


def incompatible_arguments(function: str) -> str:
    """nvFuser's words for arguments its binding cannot convert (a float extent, an int past
    64 bits), from pybind's TypeError."""
    return f"{function}(): incompatible function arguments."


def not_an_extent(value: int, index: int) -> str:
    """nvFuser's words for an extent below -1 at `index` of a shape or vector."""
    return (f"The value {value} at index {index} was neither symbolic(-1), zero_element(0), "
            "broadcast(1), or static(>1).")


def out_of_boundary(index: int, total: int) -> str:
    """nvFuser's words for an index outside `total` entries (a dimension, a vector entry); a
    negative index is shown wrapped once, as nvFuser shows it (-9 of 8 is -1)."""
    shown = index + total if index < 0 else index
    return f"Tried to access out of boundary index {shown}. total index: {total}."
