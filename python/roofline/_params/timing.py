"""Which time the default model prices a streaming kernel at: GPU time, or per-call time.

The streaming latency of ``data/calibration.json`` (``params.memory_latency_s``) is fitted on
kernels timed per call back to back (``triton.testing.do_bench``: CUDA events around each
call), so it holds the host's gap between launches as well as the GPU's own fixed time. A
profiler trace, a CUDA-graph replay and a program's kernels on the GPU see only the GPU's part:
a kernel that moves no data spans about ``kernel_gap_s`` (the host terms' minimum GPU time of a
kernel run back to back, measured on graph chains), not the ~5 µs of a per-call loop.

By default the op functions return GPU time (the core's streaming latency is
:func:`roofline._core.gpu_streaming_latency_s` of the fitted one, and no kernel hides latency
behind its predecessor, since that saving is the host's). Code that predicts rows timed per
call (the measurement predictors of ``roofline.validate`` and ``rl.calibrate``) prices inside
:func:`per_call_timing`, which restores the fitted per-call latency, as the GEMM rows add
``measurement.per_call_overhead_s``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["per_call", "per_call_timing"]

_PER_CALL: ContextVar[bool] = ContextVar("roofline_per_call_timing", default=False)


def per_call() -> bool:
    """True inside :func:`per_call_timing` (this thread or task)."""
    return _PER_CALL.get()


@contextmanager
def per_call_timing() -> Iterator[None]:
    """Price streaming kernels as a per-call benchmark loop times them (the fitted latency)."""
    token = _PER_CALL.set(True)
    try:
        yield
    finally:
        _PER_CALL.reset(token)
