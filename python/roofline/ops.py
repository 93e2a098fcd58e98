"""Op-level estimates: GEMMs and memory-bound elementwise kernels."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import _core
from ._bridge import get_num_threads, require_peak, resolve
from ._dtypes import default_out, label
from ._dtypes import dtype as parse_dtype
from ._validate import ArrayLike, broadcast, nonnegative_int_array, positive_int_array
from .efficiency import EfficiencyLike
from .estimate import Estimate, from_columns
from .explain import peak_meta


def gemm(
    m: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    dtype: Any = "bf16",
    hardware: Any = None,
    *,
    batch: ArrayLike = 1,
    out_dtype: Any = None,
    efficiency: EfficiencyLike = "default",
) -> Estimate:
    """Estimate ``C = A @ B`` with A of shape (batch, m, k) and B of shape (batch, k, n).

    Parameters
    ----------
    m, k, n : int or array_like of int
        GEMM dimensions in torchao's order (A is m x k, B is k x n). Arrays broadcast.
    dtype : str
        Input format: ``"bf16"``, ``"fp16"``, ``"fp32"``, ``"tf32"``, ``"fp8"`` (e4m3),
        ``"e5m2"``, ``"int8"``, ``"fp4"``, block-scaled ``"mxfp8"``, ``"mxfp4"``, ``"nvfp4"``,
        ``"fp8_block_1x128"``; a torch dtype is matched by name.
    hardware : Hardware or str, optional
        Accelerator; default: the detected GPU, else ``rl.set_default_hardware`` /
        ``ROOFLINE_HARDWARE``.
    batch : int or array_like of int
        Independent GEMMs of this shape in one kernel (bmm).
    out_dtype : str, optional
        Output format; default bf16 for 8/4-bit inputs, int32 for int8, else the input format.
    efficiency : {"default", "peak", "torchao"} or Efficiency
        Efficiency model.

    Returns
    -------
    Estimate
        Floats for scalar inputs, arrays of the broadcast shape otherwise.

    Notes
    -----
    FLOPs = 2·batch·m·k·n at the dense peak of the input format's class (fp8 for MX fp8,
    fp4 for MX fp4 / NVFP4). Bytes = batch·(m·k·b_A + k·n·b_B + m·n·b_C) plus block scales,
    assuming each operand crosses DRAM exactly once (ideal tiling, no L2 reuse beyond that).
    Time = max(compute, memory, floor) under the efficiency model.
    """
    fn = "gemm"
    dt = parse_dtype(fn, dtype)
    out = default_out(dt) if out_dtype is None else parse_dtype(fn, out_dtype, "out_dtype")
    arrays, shape = broadcast(
        fn,
        m=positive_int_array(fn, "m", m),
        k=positive_int_array(fn, "k", k),
        n=positive_int_array(fn, "n", n),
        batch=positive_int_array(fn, "batch", batch),
    )
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    cols = _core.gemm_sweep(*arrays, dt, dt, out, False, chw, ceff, get_num_threads())
    return from_columns(cols, shape, label=_gemm_label(m, k, n, batch, dt), hardware=hw.name,
                        meta=peak_meta(hw, dt))


def elementwise(
    numel: ArrayLike,
    reads: ArrayLike = 1,
    writes: ArrayLike = 1,
    flops_per_element: float = 0.0,
    dtype: Any = "bf16",
    hardware: Any = None,
    *,
    efficiency: EfficiencyLike = "default",
) -> Estimate:
    """Estimate one memory-bound elementwise kernel over ``numel`` elements.

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

    Notes
    -----
    Bytes = numel·(reads + writes)·bytes_per_element; FLOPs = numel·flops_per_element.
    One kernel launch.
    """
    fn = "elementwise"
    dt = parse_dtype(fn, dtype)
    if isinstance(flops_per_element, (bool, np.bool_)) or not isinstance(
        flops_per_element, (numbers.Real, np.floating, np.integer)
    ):
        raise TypeError(
            f"{fn}: flops_per_element must be a real number, got {flops_per_element!r}"
        )
    fpe = float(flops_per_element)
    if not np.isfinite(fpe) or fpe < 0:
        raise ValueError(
            f"{fn}: flops_per_element must be finite and >= 0, got {flops_per_element!r}"
        )
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
    hw, chw, ceff = resolve(hardware, efficiency)
    b = _core.bytes_per_element(dt)
    cols = _core.cost_sweep(
        num * fpe, num * r * b, num * w * b, _core.PeakClass.fp32, 1.0, chw, ceff,
        get_num_threads(),
    )
    return from_columns(cols, shape, label=f"elementwise {label(dt)}", hardware=hw.name,
                        meta=peak_meta(hw, _core.DType.fp32))


def _gemm_label(m: Any, k: Any, n: Any, batch: Any, dt: Any) -> str:
    if all(np.ndim(v) == 0 for v in (m, k, n, batch)):
        b = f"{int(batch)}x" if int(batch) != 1 else ""
        return f"gemm {b}{int(m)}x{int(k)}x{int(n)} {label(dt)}"
    return f"gemm {label(dt)}"
