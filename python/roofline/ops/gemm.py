"""GEMMs: ``rl.gemm`` (dense, batched, scaled 8-bit), and the scaling and label helpers that
grouped GEMMs share."""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from .. import _core
from .._checks import (
    MAX_DIM,
    ArrayLike,
    Scalar,
    broadcast,
    checked_int_arrays,
    flag,
    one_of,
    positive_int_array,
)
from .._dtypes import DTYPES, default_out, label
from .._dtypes import dtype as parse_dtype
from .._params.resolve import require_peak, resolve, resolve_cached
from .._params.threads import get_num_threads
from ..efficiency import EfficiencyLike
from ..estimate import Array, Estimate, from_columns, from_scalars, inputs_meta
from ..explain import peak_meta
from ..hardware import HardwareLike


@overload
def gemm(
    m: Scalar,
    k: Scalar,
    n: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    batch: Scalar = 1,
    out_dtype: Any = None,
    efficiency: EfficiencyLike = "default",
    scaling: str | None = None,
    a_transposed: bool = False,
) -> Estimate[float]: ...
@overload
def gemm(
    m: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    batch: ArrayLike = 1,
    out_dtype: Any = None,
    efficiency: EfficiencyLike = "default",
    scaling: str | None = None,
    a_transposed: bool = False,
) -> Estimate[Array]: ...


def gemm(
    m: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    batch: ArrayLike = 1,
    out_dtype: Any = None,
    efficiency: EfficiencyLike = "default",
    scaling: str | None = None,
    a_transposed: bool = False,
) -> Estimate[Any]:
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
    scaling : {None, "tensorwise", "rowwise"}
        How fp8 inputs are scaled, as ``torch._scaled_mm`` takes them: ``None`` or
        ``"tensorwise"`` (one fp32 scale per tensor) or ``"rowwise"`` (one fp32 scale per
        row of A and per column of B). Rowwise adds ``4·(m + n)`` scale bytes per GEMM and,
        in the default model, the fixed cost of its epilogue. Only for 8-bit inputs
        (ValueError otherwise); block-scaled formats carry their own scales.
    a_transposed : bool
        A is a transposed view stored k x m (leading dimension m), as the activations X^T of
        a weight gradient ``dW = X^T dY`` (m, n: the features, k: the tokens). cuBLAS needs
        16-byte operand rows for its TMA kernels; a row is the contiguous extent of each
        operand: k for A (m for a transposed A) and n for B and C. With ``a_transposed`` the
        tokens (k) set no stride, so an odd token count takes no unaligned penalty.

    Returns
    -------
    Estimate
        Floats for scalar inputs, arrays of the broadcast shape otherwise.

    Notes
    -----
    FLOPs = 2·batch·m·k·n at the dense peak of the input format's class (fp8 for MX fp8,
    fp4 for MX fp4 / NVFP4). Bytes = batch·(m·k·b_A + k·n·b_B + m·n·b_C) plus block scales
    (and rowwise scales), assuming each operand crosses DRAM exactly once (ideal tiling, no
    L2 reuse beyond that). Time = max(compute, memory, floor) under the plain presets.

    The default model describes the library PyTorch calls (cuBLAS for ``F.linear`` /
    ``torch._scaled_mm``): the best of its tiles and split-K factors, the tensor rate its
    heuristic tiles sustain, operand traffic at the bandwidth a GEMM's K-loop pipeline
    reaches, a DRAM ramp for memory-bound (skinny) GEMMs and a fixed time per call (launch,
    prologue, epilogue, the launch gap of per-call timing); see docs/model.md, "GEMMs as
    cuBLAS and torch._grouped_mm run them". Block-scaled formats (``fp8_block_1x128``,
    MX, NVFP4) keep the idealized tuned-kernel model (DeepGEMM-style kernels).
    """
    if (type(m) is int and type(k) is int and type(n) is int and type(batch) is int
            and 0 < m <= MAX_DIM and 0 < k <= MAX_DIM and 0 < n <= MAX_DIM
            and 0 < batch <= MAX_DIM and hardware is not None and scaling is None
            and out_dtype is None and type(dtype) is str and dtype in DTYPES
            and a_transposed is False):
        return _gemm_scalar(m, k, n, dtype, hardware, batch, efficiency)
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
    sc = scaling_of(fn, scaling, dt)
    at = flag(fn, "a_transposed", a_transposed)
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    m_a, k_a, n_a, b_a = arrays
    cols = _core.gemm_sweep(m_a, k_a, n_a, b_a, dt, dt, out, False, chw, ceff, get_num_threads(),
                            sc, at)
    return from_columns(cols, shape, label=gemm_label(m, k, n, batch, dt), hardware=hw.name,
                        meta={**peak_meta(hw, dt), **inputs_meta(
                            shape, dict(zip(("m", "k", "n", "batch"), arrays, strict=True)),
                            dtype=label(dt))})


def gemm_columns(m: np.ndarray, k: np.ndarray, n: np.ndarray, batch: np.ndarray,
                 dtype: str, hardware: Any, efficiency: EfficiencyLike,
                 a_transposed: bool = False) -> np.ndarray | None:
    """The columns (``len(m)`` x 6: time, compute, memory, overhead, FLOPs, bytes) of
    :func:`gemm` over equal-length 1-d integer arrays, for a known dtype spelling, explicit
    hardware and default out_dtype / scaling: the same core sweep without the Estimate.
    None where :func:`gemm` must run instead (a size it rejects, a time it refuses)."""
    arrays = checked_int_arrays(1, m, k, n, batch)
    if arrays is None or hardware is None or dtype not in DTYPES or not (
            len(m) == len(k) == len(n) == len(batch)):
        return None
    hw, chw, ceff, _ = resolve_cached(hardware, efficiency)
    dt = DTYPES[dtype]
    require_peak("gemm", hw, dt)
    m_a, k_a, n_a, b_a = arrays
    cols = np.stack(_core.gemm_sweep(m_a, k_a, n_a, b_a, dt, dt, default_out(dt), False, chw, ceff,
                                     get_num_threads(), _core.Scaling.none, a_transposed),
                    axis=1)
    t = cols[:, 0]
    return cols if bool(np.all(np.isfinite(t) & (t >= 0))) else None


def _gemm_scalar(m: int, k: int, n: int, dtype: str, hardware: Any, batch: int,
                 efficiency: EfficiencyLike) -> Estimate[Any]:
    """:func:`gemm` for Python ints already checked, a known dtype spelling, explicit
    hardware and default out_dtype / scaling: the same estimate, without numpy."""
    hw, chw, ceff, memo = resolve_cached(hardware, efficiency)
    info = memo.get(dtype)  # keyed by the spelling: a core enum hashes slowly
    if info is None:
        dt = DTYPES[dtype]
        require_peak("gemm", hw, dt)
        out = default_out(dt)
        info = memo[dtype] = (_core.GemmOne(chw, ceff, dt, dt, out, False, _core.Scaling.none),
                              label(dt), peak_meta(hw, dt))
    one, name, meta = info
    values = one(m, k, n, batch)
    b = f"{batch}x" if batch != 1 else ""
    return from_scalars(values, f"gemm {b}{m}x{k}x{n} {name}", hw.name,
                        {**meta, "inputs": {"m": m, "k": k, "n": n, "batch": batch, "dtype": name}})


_SCALINGS = {"none": "none", "tensorwise": "tensorwise", "rowwise": "rowwise"}

#: Input formats torch._scaled_mm scales per tensor or per row (8-bit, no block scales).
_SCALED_DTYPES = ("fp8_e4m3", "fp8_e5m2", "int8")


def scaling_of(fn: str, scaling: str | None, dt: Any) -> Any:
    """The core Scaling for ``scaling=`` (None = unscaled), checked against the dtype."""
    if scaling is None:
        return _core.Scaling.none
    name = one_of(fn, "scaling", scaling, _SCALINGS)
    if name == "none":
        return _core.Scaling.none
    if dt.name not in _SCALED_DTYPES:
        raise ValueError(
            f"{fn}: scaling={scaling!r} needs 8-bit inputs (fp8, e5m2, int8), got dtype "
            f"{label(dt)}"
        )
    return getattr(_core.Scaling, name)


def gemm_label(m: Any, k: Any, n: Any, batch: Any, dt: Any) -> str:
    if all(np.ndim(v) == 0 for v in (m, k, n, batch)):
        b = f"{int(batch)}x" if int(batch) != 1 else ""
        return f"gemm {b}{int(m)}x{int(k)}x{int(n)} {label(dt)}"
    return f"gemm {label(dt)}"
