"""Bounded memos of priced work (a serving run's steps, a step program's parts).

A memo maps a key to what a pure pricing function returned for it. The key names every input,
and the hardware and efficiency by :func:`pricing_token`: the core structs they resolve to now
(``resolve_cached``'s, kept alive by the key, so an identity is never reused while the entry
exists). Changing the default efficiency, the per-call timing or a packaged file (after
``clear_caches``) resolves to new structs, hence new keys (old entries are never read again). A
memo holds at most ``size`` entries and is emptied when full. :func:`memos_disabled` turns
every memo off (the slow path, for tests and benchmarks comparing the two).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .resolve import resolve_cached

__all__ = ["Memo", "clear_memos", "memos_disabled", "pricing_token"]

_ENABLED = [True]
_ALL: list[Memo] = []


class Memo:
    """A dict of at most ``size`` entries (emptied when full); inert while memos are off."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: dict[Any, Any] = {}
        _ALL.append(self)

    def get(self, key: Any) -> Any:
        """The value stored under ``key``, or None (also while memos are off)."""
        return self._data.get(key) if _ENABLED[0] else None

    def put(self, key: Any, value: Any) -> Any:
        """Store ``value`` under ``key`` (not while memos are off); returns ``value``."""
        if _ENABLED[0]:
            if len(self._data) >= self.size:
                self._data.clear()
            self._data[key] = value
        return value

    def clear(self) -> None:
        """Forget every entry."""
        self._data.clear()


def pricing_token(hardware: Any, efficiency: Any) -> tuple[Any, Any] | None:
    """The core (hardware, efficiency) structs the op functions resolve ``hardware`` and
    ``efficiency`` to now, for a memo key; None when that is not memoized (no explicit
    hardware, an unhashable argument): such work is priced every time."""
    if hardware is None:
        return None
    try:
        hash((hardware, efficiency))
    except TypeError:
        return None
    _, chw, ceff, _ = resolve_cached(hardware, efficiency)
    return chw, ceff


def clear_memos() -> None:
    """Empty every memo."""
    for memo in _ALL:
        memo.clear()


@contextmanager
def memos_disabled() -> Iterator[None]:
    """Price everything afresh inside the block (no memo read or written)."""
    before = _ENABLED[0]
    _ENABLED[0] = False
    try:
        yield
    finally:
        _ENABLED[0] = before
