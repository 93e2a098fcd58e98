"""Weight-only quantized GEMMs (int4 / int8 weights, 16-bit activations): Marlin."""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from .. import _core
from .._checks import (
    ArrayLike,
    Scalar,
    broadcast,
    flag,
    nonnegative_int_array,
    one_of,
    positive_int_array,
)
from .._dtypes import dtype as parse_dtype
from .._dtypes import label
from .._errors import ArgumentTypeError, ArgumentValueError
from .._params.architecture import architecture
from .._params.resolve import require_peak, resolve
from ..efficiency import EfficiencyLike
from ..estimate import Array, Estimate, from_columns, inputs_meta
from ..explain import peak_meta
from ..hardware import HardwareLike

__all__ = ["WEIGHT_DTYPES", "weight_only_gemm", "weight_only_grouped_gemm",
           "weight_only_weight_bytes"]

#: Stored weight formats and their bits per element.
WEIGHT_DTYPES: dict[str, int] = {"int4": 4, "uint4": 4, "int8": 8, "uint8": 8}

#: Activation formats the kernels take (the scales are stored in the same format).
_ACT_DTYPES = ("bf16", "fp16")


def weight_only_weight_bytes(bits: int, group_size: int, zero_points: bool = False,
                             scale_bytes: float = 2.0) -> float:
    """Bytes of one stored weight element, scales and zero points included.

    ``bits/8 + scale_bytes/group_size (+ bits/8/group_size with zero points)``; a per-column
    scale (``group_size=0``) adds nothing per element. int4 at group 128: 0.515625 bytes.
    """
    if group_size <= 0:
        return bits / 8.0
    return bits / 8.0 + (scale_bytes + (bits / 8.0 if zero_points else 0.0)) / group_size


def check_group_size(fn: str, group_size: Any) -> int:
    """``group_size`` as an int (0 or -1 for one scale per column); an error naming it
    otherwise."""
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)):
        raise ArgumentTypeError(fn, "group_size", f"must be an integer (0 or -1: one scale "
                                f"per column), got {group_size!r}")
    g = int(group_size)
    if g < -1:
        raise ArgumentValueError(fn, "group_size", f"must be positive (or 0 / -1: one scale "
                                 f"per column), got {group_size!r}")
    return max(g, 0)


@overload
def weight_only_gemm(
    m: Scalar, k: Scalar, n: Scalar, weight_dtype: str = "int4", dtype: Any = "bf16",
    hardware: HardwareLike = None, *, group_size: int = 128, zero_points: bool = False,
    out_dtype: Any = None, efficiency: EfficiencyLike = "default", kernel: str = "auto",
) -> Estimate[float]: ...
@overload
def weight_only_gemm(
    m: ArrayLike, k: ArrayLike, n: ArrayLike, weight_dtype: str = "int4", dtype: Any = "bf16",
    hardware: HardwareLike = None, *, group_size: int = 128, zero_points: bool = False,
    out_dtype: Any = None, efficiency: EfficiencyLike = "default", kernel: str = "auto",
) -> Estimate[Array]: ...


def weight_only_gemm(
    m: ArrayLike, k: ArrayLike, n: ArrayLike, weight_dtype: str = "int4", dtype: Any = "bf16",
    hardware: HardwareLike = None, *, group_size: int = 128, zero_points: bool = False,
    out_dtype: Any = None, efficiency: EfficiencyLike = "default", kernel: str = "auto",
) -> Estimate[Any]:
    """Estimate ``C = A @ dequant(W)``: 16-bit activations times int4 / int8 weights.

    The weight-only GEMM of GPTQ / AWQ checkpoints as servers run it (Marlin: vLLM's
    ``gptq_marlin_gemm``, ``awq_marlin``, ``marlin_gemm``): the packed weights stream from
    DRAM at 4 or 8 bits with one 16-bit scale per group of ``group_size`` input features
    (plus a packed zero point per group for AWQ), are dequantized in registers and
    multiplied on the 16-bit tensor cores.

    Parameters
    ----------
    m, k, n : int or array_like of int
        Tokens (rows of A), input features and output features (W is k x n, torchao's
        order). Arrays broadcast.
    weight_dtype : {"int4", "int8", "uint4", "uint8"}
        Stored weight format (the unsigned spellings are the same bits; zero points are
        ``zero_points=``).
    dtype : {"bf16", "fp16"}
        Activation format (the tensor-core math and the scales).
    hardware : Hardware or str, optional
        Accelerator (see :func:`roofline.gemm`).
    group_size : int
        Input features sharing one scale (GPTQ / AWQ: 128, the default); 0 or -1: one scale
        per output column (per-channel). Must divide ``k``.
    zero_points : bool
        One packed zero point per group and column (AWQ's asymmetric format).
    out_dtype : str, optional
        Output format (default: ``dtype``).
    efficiency : {"default", "peak", "torchao", ...} or Efficiency
        Efficiency model.
    kernel : {"auto", "marlin", "machete"}
        The kernel, as vLLM picks it (``"auto"``): Machete on Hopper (sm90) when the group
        size is 64, 128 or per-channel and ``k % 64 == 0``, ``n % 128 == 0`` (GPTQ /
        compressed-tensors checkpoints); Marlin otherwise (and for AWQ checkpoints, whose
        ``awq_marlin`` path always runs Marlin: pass ``kernel="marlin"``).

    Returns
    -------
    Estimate
        Floats for scalar inputs, arrays of the broadcast shape otherwise.

    Notes
    -----
    FLOPs = 2·m·k·n at the 16-bit tensor peak. Bytes = ``m·k·2`` (A) + ``L·k·n·(b/8 + s)``
    (the weight, ``b`` bits, and ``s`` bytes of scales and zero points per element; see
    :func:`weight_only_weight_bytes`) + ``m·n·2`` (C), where ``L`` is the number of launches
    of Marlin's host loop: up to 16 passes of 64 rows share one launch (their stripes meet
    the same weight tiles in L2), and rows beyond a multiple of 64 take a launch of their
    own, so ``L = ceil(floor(m/64)/16) + (m mod 64 > 0)`` and the weight is read once for
    ``m <= 64`` or any multiple of 64 up to 1024. (The time is therefore *not* monotone in
    ``m`` between multiples of 64: 127 rows read the weight twice, 128 rows once, as the
    kernel does.) Under the plain presets the time is ``max(compute, memory, floor)`` of
    these FLOPs and bytes: about 3.9x under a 16-bit GEMM while memory-bound.

    Marlin under the default model runs its own tiling: m padded to 16-row MMA blocks, k-tiles of
    128 x 128 (m <= 16) or 64 x 256 weight tiles striped evenly over all SMs (no wave
    quantization), the dequantization (``weight_only_dequant_ops`` in the core: ~1.6 lane
    instructions per weight element and 64-row pass for int4 at group 128) at the non-tensor
    FP32 lane rate, added to the tensor time (both compete for issue slots), the weight
    traffic at the GEMM operand bandwidth, the two combined as for cuBLAS GEMMs plus the
    library's fixed time per launch. Hence near 3.9x over bf16 while memory-bound (m up to
    ~32 on A10, ~16 on A100/H100) and slightly below the bf16 GEMM when compute-bound; on
    Hopper, where the tensor rate is 15x the FP32 lane rate, the dequantization costs ~30 %
    at large m (Marlin uses mma.sync, not wgmma). Machete (CUTLASS 3, sm90 only) is priced as
    the library GEMM search of :func:`roofline.gemm` on these bytes (one launch; the weight
    once), with its dequantization (per 128-row tile) overlapping the asynchronous wgmma
    MMAs: the compute term is the larger of the two, so it runs at about the bf16 GEMM's rate
    when compute-bound. Marlin is checked against its published figures in
    ``data/measurements/marlin_readme.csv``; Machete has no published figure with exact
    shapes in the repository yet.
    """
    fn = "weight_only_gemm"
    bits = one_of(fn, "weight_dtype", weight_dtype, WEIGHT_DTYPES)
    act = parse_dtype(fn, dtype)
    if label(act) not in _ACT_DTYPES:
        raise ArgumentValueError(fn, "dtype", f"must be bf16 or fp16 (the activations of a "
                                 f"weight-only GEMM), got {dtype!r}")
    out = act if out_dtype is None else parse_dtype(fn, out_dtype, "out_dtype")
    group = check_group_size(fn, group_size)
    zp = flag(fn, "zero_points", zero_points)
    arrays, shape = broadcast(
        fn,
        m=positive_int_array(fn, "m", m),
        k=positive_int_array(fn, "k", k),
        n=positive_int_array(fn, "n", n),
    )
    m_a, k_a, n_a = arrays
    if group:
        bad = np.flatnonzero(np.mod(k_a, group) != 0)
        if bad.size:
            raise ArgumentValueError(fn, "group_size", f"must divide k, got group_size={group} "
                                     f"and k={int(k_a[bad[0]])}")
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, act)
    kern = _kernel(fn, kernel, hw, group, k_a, n_a)
    cols = _core.weight_only_gemm_sweep(m_a, k_a, n_a, act, out, float(bits), float(group), zp,
                                        getattr(_core.WeightOnlyKernel, kern), chw, ceff)
    wname = weight_dtype.strip().lower()
    g = f"g{group}" if group else "channel"
    lab = f"weight_only_gemm {wname} {g} {label(act)} ({kern})"
    if all(np.ndim(v) == 0 for v in (m, k, n)):
        lab = f"weight_only_gemm {int(m)}x{int(k)}x{int(n)} {wname} {g} {label(act)} ({kern})"
    meta = inputs_meta(shape, dict(zip(("m", "k", "n"), arrays, strict=True)),
                       dtype=label(act), weight_dtype=wname, group_size=group,
                       zero_points=zp, kernel=kern)
    return from_columns(cols, shape, label=lab, hardware=hw.name,
                        meta={**peak_meta(hw, act), **meta})


_KERNELS = {"auto": "auto", "marlin": "marlin", "machete": "machete"}


def _machete_fits(group: int, k: np.ndarray, n: np.ndarray) -> bool:
    """Whether Machete takes these shapes (vLLM's machete_utils: group -1, 64 or 128,
    k % 64 == 0, n % 128 == 0)."""
    return group in (0, 64, 128) and bool(np.all(k % 64 == 0)) and bool(np.all(n % 128 == 0))


def _kernel(fn: str, kernel: Any, hw: Any, group: int, k: np.ndarray, n: np.ndarray) -> str:
    """The kernel name for ``kernel=`` on ``hw`` (``"auto"``: vLLM's choice)."""
    name = one_of(fn, "kernel", kernel, _KERNELS)
    hopper = architecture(hw) == "hopper"
    if name == "auto":
        return "machete" if hopper and _machete_fits(group, k, n) else "marlin"
    if name == "machete":
        if not hopper:
            raise ArgumentValueError(fn, "kernel", f"'machete' runs on Hopper (sm90) only, got "
                                     f"hardware {hw.name!r}")
        if not _machete_fits(group, k, n):
            raise ArgumentValueError(fn, "kernel", "'machete' needs group_size 64, 128 or 0 "
                                     "(per channel), k % 64 == 0 and n % 128 == 0, got "
                                     f"group_size={group}")
    return str(name)


def weight_only_grouped_gemm(counts: ArrayLike, k: int, n: int, weight_dtype: str = "int4",
                             dtype: Any = "bf16", hardware: HardwareLike = None, *,
                             group_size: int = 128, zero_points: bool = False,
                             efficiency: EfficiencyLike = "default") -> Estimate[Any]:
    """Estimate one grouped (MoE) weight-only GEMM: expert ``g`` multiplies its
    ``counts[g]`` tokens by its own int4 / int8 ``k x n`` weight, all in one launch (vLLM's
    fused Marlin MoE kernel, ``fused_marlin_moe``).

    Parameters
    ----------
    counts : array_like of int
        Tokens routed to each expert, along the last axis (leading axes: scenarios). Zero is
        allowed (the expert reads nothing); at least one must be positive.
    k, n, weight_dtype, dtype, hardware, group_size, zero_points, efficiency
        As for :func:`weight_only_gemm` (``k``, ``n``: ints).

    Returns
    -------
    Estimate
        A float estimate for 1-D counts, arrays over the leading axes otherwise.

    Notes
    -----
    FLOPs = 2·Σ c_g·k·n; bytes = Σ over experts with tokens of ``c_g·k·2 + weight + c_g·n·2``
    (each such expert's packed weight and scales once). Default model: Marlin's tiling per
    expert (rows padded to 16-row blocks; 64-row passes of 128 x 128 weight tiles striped over
    all SMs), dequantization once per expert and 64-row pass in the MMAs' issue slots, one
    launch (its fixed time once).
    """
    fn = "weight_only_grouped_gemm"
    bits = one_of(fn, "weight_dtype", weight_dtype, WEIGHT_DTYPES)
    act = parse_dtype(fn, dtype)
    if label(act) not in _ACT_DTYPES:
        raise ArgumentValueError(fn, "dtype", f"must be bf16 or fp16 (the activations of a "
                                 f"weight-only GEMM), got {dtype!r}")
    group = check_group_size(fn, group_size)
    zp = flag(fn, "zero_points", zero_points)
    kk = int(positive_int_array(fn, "k", k))
    nn = int(positive_int_array(fn, "n", n))
    if group and kk % group:
        raise ArgumentValueError(fn, "group_size", f"must divide k, got group_size={group} "
                                 f"and k={kk}")
    cnt = nonnegative_int_array(fn, "counts", counts)
    if cnt.ndim == 0 or not np.all(cnt.sum(axis=-1) > 0):
        raise ArgumentValueError(fn, "counts", "must be an array with one entry per expert and "
                                 f"at least one positive, got {counts!r}")
    shape = cnt.shape[:-1]
    flat = np.ascontiguousarray(cnt.reshape(-1, cnt.shape[-1]), dtype=np.float64)
    points = flat.shape[0]
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, act)
    cols = _core.weight_only_grouped_sweep(flat, np.full(points, float(kk)),
                                           np.full(points, float(nn)), act, act, float(bits),
                                           float(group), zp, chw, ceff)
    wname = weight_dtype.strip().lower()
    lab = f"weight_only_grouped_gemm {cnt.shape[-1]} experts {kk}x{nn} {wname} {label(act)}"
    return from_columns(cols, shape, label=lab, hardware=hw.name, meta=peak_meta(hw, act))
