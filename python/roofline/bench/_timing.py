"""Timers: the median time of one call, warm-up first, L2 flushed between runs on a GPU.

A timer is called as ``timer(fn, flush=True)`` and returns seconds per call. On a GPU each
repeat is bracketed by CUDA events after a write of a buffer larger than twice the L2 cache
(or ``triton.testing.do_bench`` does the same when triton is installed); on the CPU each
repeat is timed with ``time.perf_counter``. The number of repeats adapts to the call's cost:
enough to fill ``target_s`` of measurement, within ``[min_repeats, max_repeats]``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Timer", "cpu_time", "cuda_time", "make_timer"]

#: Lower bound on the L2 flush buffer (bytes); triton's do_bench uses 256 MiB as well.
_MIN_FLUSH_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Budget:
    """How long to measure one call: warm-up and timed time, repeat bounds."""

    warmup_s: float
    target_s: float
    min_repeats: int
    max_repeats: int


#: Per-suite budgets. CPU quick is small so that ``--quick`` stays well under a minute.
BUDGETS = {
    ("cpu", "quick"): Budget(0.005, 0.04, 3, 15),
    ("cpu", "full"): Budget(0.02, 0.2, 5, 50),
    ("cuda", "quick"): Budget(0.01, 0.04, 10, 200),
    ("cuda", "full"): Budget(0.025, 0.1, 20, 1000),
}


def _calls(fn: Callable[[], Any], sync: Callable[[], None], seconds: float) -> float:
    """Warm up: run ``fn`` for about ``seconds`` (at least twice, at most 1000 times) and
    return the mean time per call."""
    fn()
    sync()
    n, t0 = 0, time.perf_counter()
    elapsed = 0.0
    while n < 1000:
        fn()
        n += 1
        sync()
        elapsed = time.perf_counter() - t0
        if n >= 2 and elapsed >= seconds:
            break
    return max(elapsed / n, 1e-9)


def cpu_time(fn: Callable[[], Any], budget: Budget) -> float:
    """Median seconds per call of ``fn`` on the CPU (``time.perf_counter`` around each call)."""
    once = _calls(fn, lambda: None, budget.warmup_s)
    repeats = int(min(budget.max_repeats, max(budget.min_repeats, budget.target_s / once)))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(statistics.median(times))


def cuda_time(fn: Callable[[], Any], budget: Budget, flush: Any | None) -> float:
    """Median seconds per call of ``fn`` on the current GPU, from CUDA events.

    ``flush`` is a buffer written (``zero_()``) before every timed call so that each call
    starts with a cold L2, or None (tiny kernels whose point is the launch).
    """
    import torch

    once = _calls(fn, torch.cuda.synchronize, budget.warmup_s)
    repeats = int(min(budget.max_repeats, max(budget.min_repeats, budget.target_s / once)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]  # type: ignore[no-untyped-call]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]  # type: ignore[no-untyped-call]
    for start, end in zip(starts, ends, strict=True):
        if flush is not None:
            flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
    return float(statistics.median(times)) * 1e-3


def _do_bench(fn: Callable[[], Any], budget: Budget, flush: Any | None) -> float:
    """``triton.testing.do_bench`` median (it flushes L2 itself), in seconds."""
    from triton.testing import do_bench

    if flush is None:
        return cuda_time(fn, budget, None)
    ms = do_bench(fn, warmup=max(1, int(budget.warmup_s * 1e3)),
                  rep=max(1, int(budget.target_s * 1e3)), return_mode="median")
    return float(ms) * 1e-3


class Timer:
    """``timer(fn, flush=True)`` -> median seconds per call on one device.

    Attributes
    ----------
    method : str
        How the times are taken, for the rows' ``source`` field.
    """

    def __init__(self, device: str, suite: str) -> None:
        self.device = device
        self.budget = BUDGETS[(device, suite)]
        self._flush: Any | None = None
        self._triton = False
        if device == "cuda":
            import torch

            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            l2 = int(getattr(props, "L2_cache_size", 0) or 0)
            nbytes = max(2 * l2, _MIN_FLUSH_BYTES)
            self._flush = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda")
            try:
                import triton.testing  # noqa: F401

                self._triton = True
            except ImportError:
                pass
            if self._triton:
                self.method = "triton do_bench median (L2 flushed before each run)"
            else:
                self.method = (f"CUDA events median (warm-up, {nbytes / 2**20:.0f} MiB written "
                               "before each run to flush L2)")
        else:
            self.method = "time.perf_counter median per call (warm-up first)"

    def __call__(self, fn: Callable[[], Any], flush: bool = True) -> float:
        if self.device == "cuda":
            buf = self._flush if flush else None
            if self._triton:
                return _do_bench(fn, self.budget, buf)
            return cuda_time(fn, self.budget, buf)
        return cpu_time(fn, self.budget)


def make_timer(device: str, suite: str) -> Timer:
    """The timer for ``device`` ("cuda" or "cpu") and ``suite`` ("quick" or "full")."""
    return Timer(device, suite)
