"""widefuse's exceptions beyond ``widefuse.Error``.

Every error widefuse raises is a ``widefuse.Error`` (a RuntimeError, as nvFuser's fusion
errors are) with widefuse's message. Where Python's conventions, and so nvFuser's tests, expect
another class, the error is also an instance of that class: an argument of the wrong type is a
TypeError, an argument of the right type but a value the call cannot take is a ValueError, a
dimension outside a tensor's rank is an IndexError. ``except widefuse.Error`` still catches all
of them.
"""

from __future__ import annotations

from ._widefuse import Error


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type (a string where a value or number goes, a float extent,
    a list of the wrong kind of items), or the wrong number of arguments."""


class ArgumentValueError(Error, ValueError):
    """An argument of the right type whose value the call cannot take (an extent out of
    range, a stride order that is no permutation, a constant its dtype cannot hold)."""


class DimensionIndexError(Error, IndexError):
    """A dimension index outside a tensor's rank (``t.size(2)`` of a 2-d tensor)."""
