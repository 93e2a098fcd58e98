"""Streaming elementwise kernels: ``rl.elementwise``."""

from __future__ import annotations

import numbers
from typing import Any, overload

import numpy as np

from .. import _core
from .._checks import (
    ArrayLike,
    Scalar,
    broadcast,
    checked_int_arrays,
    is_int,
    nonnegative_int_array,
    positive_int_array,
)
from .._dtypes import DTYPES, label
from .._dtypes import dtype as parse_dtype
from .._params.resolve import resolve, resolve_cached
from ..efficiency import EfficiencyLike
from ..estimate import Array, Estimate, from_columns, inputs_meta
from ..explain import peak_meta
from ..hardware import HardwareLike


@overload
def elementwise(
    numel: Scalar,
    reads: Scalar = 1,
    writes: Scalar = 1,
    flops_per_element: float = 0.0,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    efficiency: EfficiencyLike = "default",
    kernels: int = 1,
) -> Estimate[float]: ...
@overload
def elementwise(
    numel: ArrayLike,
    reads: ArrayLike = 1,
    writes: ArrayLike = 1,
    flops_per_element: float = 0.0,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    efficiency: EfficiencyLike = "default",
    kernels: int = 1,
) -> Estimate[Array]: ...


def elementwise(
    numel: ArrayLike,
    reads: ArrayLike = 1,
    writes: ArrayLike = 1,
    flops_per_element: float = 0.0,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    efficiency: EfficiencyLike = "default",
    kernels: int = 1,
) -> Estimate[Any]:
    """Estimate one memory-bound elementwise kernel (or a chain of them) over ``numel`` elements.

    Parameters
    ----------
    numel : int or array_like of int
        Elements per tensor.
    reads, writes : int or array_like of int
        Tensors of ``numel`` elements read and written (``reads=2`` for ``a + b``).
    flops_per_element : float
        Arithmetic per output element (counted at the fp32 vector peak).
    dtype : str
        Element format of every tensor.
    kernels : int
        Kernels launched back to back by one call (``reads`` and ``writes`` are then their
        totals): eager ``silu(x) * y`` is ``reads=3, writes=2, kernels=2``.

    Notes
    -----
    Bytes = numel·(reads + writes)·bytes_per_element; FLOPs = numel·flops_per_element
    (the core's ``elementwise_cost``). A streaming kernel's GPU time in the default model is
    its latency (launch, pipeline fill and drain; less for kernels too small to fill the
    pipeline: a kernel moving no data spans the host terms' ``kernel_gap_s``, ~1.4 µs) plus its
    bytes at the achievable bandwidth. Timed per call back to back (do_bench), a small kernel
    costs more (~5 µs: the host's launch gap) and each kernel after the first of a chain hides
    part of that behind its predecessor's drain; ``roofline.validate`` prices such rows so
    (``roofline._params.timing.per_call_timing``).
    """
    fn = "elementwise"
    dt = parse_dtype(fn, dtype)
    if isinstance(flops_per_element, (bool, np.bool_)) or not isinstance(
        flops_per_element, (numbers.Real, np.floating, np.integer)
    ):
        raise TypeError(
            f"{fn}: flops_per_element must be a real number, got {flops_per_element!r}"
        )
    try:
        fpe = float(flops_per_element)
    except OverflowError:  # an int beyond float range
        fpe = np.inf
    if not np.isfinite(fpe) or fpe < 0:
        raise ValueError(
            f"{fn}: flops_per_element must be finite and >= 0, got {str(flops_per_element)[:40]}"
        )
    if fpe > 1e12:  # keeps FLOPs finite for any numel up to 2**53 (documented limit)
        raise ValueError(f"{fn}: flops_per_element must be at most 1e12, got {fpe!r}")
    (num, r, w), shape = broadcast(
        fn,
        numel=positive_int_array(fn, "numel", numel),
        reads=nonnegative_int_array(fn, "reads", reads),
        writes=nonnegative_int_array(fn, "writes", writes),
    )
    if ((r + w) == 0).any():
        i = int(np.flatnonzero((r + w) == 0)[0])
        raise ValueError(
            f"{fn}: reads + writes must be at least 1 (a kernel that moves no data), "
            f"got reads={int(r[i])}, writes={int(w[i])}"
        )
    if not is_int(kernels) or not 1 <= kernels <= 1_000_000:
        raise ValueError(f"{fn}: kernels must be an integer from 1 to 1000000, got {kernels!r}")
    hw, chw, ceff = resolve(hardware, efficiency)
    cols = _core.elementwise_sweep(num, r, w, fpe, dt, chw, ceff, float(kernels))
    return from_columns(cols, shape, label=f"elementwise {label(dt)}", hardware=hw.name,
                        meta={**peak_meta(hw, _core.DType.fp32), **inputs_meta(
                            shape, {"numel": num, "reads": r, "writes": w}, dtype=label(dt))})


def elementwise_columns(numel: np.ndarray, reads: np.ndarray, writes: np.ndarray, dtype: str,
                        hardware: Any, efficiency: EfficiencyLike) -> np.ndarray | None:
    """The columns (``len(numel)`` x 6: time, compute, memory, overhead, FLOPs, bytes) of
    ``elementwise(numel, reads, writes, 0.0, dtype, hardware)`` (one kernel each) over
    equal-length 1-d integer arrays, for a known dtype spelling and explicit hardware: the
    same core sweep without the Estimate. None where :func:`elementwise` must run instead
    (an input it rejects, a time it refuses)."""
    arrays = checked_int_arrays(1, numel)
    counts = checked_int_arrays(0, reads, writes)
    if arrays is None or counts is None or hardware is None or dtype not in DTYPES or not (
            len(numel) == len(reads) == len(writes)) or bool(np.any(counts[0] + counts[1] == 0)):
        return None
    _, chw, ceff, _ = resolve_cached(hardware, efficiency)
    cols = np.stack(_core.elementwise_sweep(arrays[0], counts[0], counts[1], 0.0, DTYPES[dtype],
                                            chw, ceff, 1.0), axis=1)
    t = cols[:, 0]
    return cols if bool(np.all(np.isfinite(t) & (t >= 0))) else None
