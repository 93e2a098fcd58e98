"""Threads of the array sweeps (``rl.set_num_threads`` / ``rl.get_num_threads``)."""

from __future__ import annotations

__all__ = ["MAX_THREADS", "get_num_threads", "set_num_threads"]

_threads = 0

#: Most sweep threads ``set_num_threads`` accepts.
MAX_THREADS = 1024


def set_num_threads(n: int) -> None:
    """Threads used by array sweeps (0 = all cores; small sweeps use one)."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads: n must be an int, got {n!r}")
    if not 0 <= n <= MAX_THREADS:
        raise ValueError(
            f"set_num_threads: n must be an integer in [0, {MAX_THREADS}], got {n!r}"[:200]
        )
    _threads = n


def get_num_threads() -> int:
    """Threads used by array sweeps (0 = all cores)."""
    return _threads
