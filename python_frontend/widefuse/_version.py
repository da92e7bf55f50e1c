"""widefuse's version, comparable the way nvFuser's ``nvfuser.version()`` is (tracers gate
features on ``version() >= "0.2.0"``)."""

from __future__ import annotations

import re
from typing import Any

__version__ = "0.1.0"


class Version(str):
    """A release number ``MAJOR.MINOR.PATCH`` that compares numerically with another Version
    or a version string (``Version("0.10.0") > "0.9.1"``); otherwise the string itself."""

    def _key(self) -> tuple[int, ...]:
        return _numbers(str(self))

    def _other(self, other: Any) -> tuple[int, ...]:
        if not isinstance(other, str):
            raise TypeError(f"cannot compare a widefuse Version with {type(other).__name__}")
        return _numbers(other)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, str) and self._key() == _numbers(other)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __lt__(self, other: Any) -> bool:
        return self._key() < self._other(other)

    def __le__(self, other: Any) -> bool:
        return self._key() <= self._other(other)

    def __gt__(self, other: Any) -> bool:
        return self._key() > self._other(other)

    def __ge__(self, other: Any) -> bool:
        return self._key() >= self._other(other)

    def __hash__(self) -> int:
        return hash(self._key())


def _numbers(text: str) -> tuple[int, ...]:
    match = re.fullmatch(r"\s*v?(\d+(?:\.\d+)*)\s*", text)
    if not match:
        raise ValueError(f"'{text}' is not a version number (expected MAJOR.MINOR.PATCH)")
    numbers = [int(part) for part in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:  # "1.0" == "1.0.0"
        numbers.pop()
    return tuple(numbers)


def version() -> Version:
    """widefuse's version (nvFuser's ``version()``)."""
    return Version(__version__)
