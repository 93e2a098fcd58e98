"""Op-level estimates: GEMMs, grouped (MoE) GEMMs, norms, softmax, cross entropy, elementwise."""

from __future__ import annotations

import numbers
from typing import Any, overload

import numpy as np

from . import _core
from ._checks import (
    MAX_DIM,
    ArrayLike,
    Scalar,
    broadcast,
    flag,
    is_int,
    nonnegative_int_array,
    one_of,
    positive_int_array,
)
from ._dtypes import DTYPES, default_out, label
from ._dtypes import dtype as parse_dtype
from ._params.resolve import require_peak, resolve, resolve_cached
from ._params.threads import get_num_threads
from .efficiency import EfficiencyLike
from .estimate import Array, Estimate, from_columns, from_scalars, inputs_meta
from .explain import peak_meta
from .hardware import HardwareLike


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
            and out_dtype is None and type(dtype) is str and dtype in DTYPES):
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
    sc = _scaling(fn, scaling, dt)
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    cols = _core.gemm_sweep(*arrays, dt, dt, out, False, chw, ceff, get_num_threads(), sc)
    return from_columns(cols, shape, label=_gemm_label(m, k, n, batch, dt), hardware=hw.name,
                        meta={**peak_meta(hw, dt), **inputs_meta(
                            shape, dict(zip(("m", "k", "n", "batch"), arrays, strict=True)),
                            dtype=label(dt))})


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
    (the core's ``elementwise_cost``). A streaming kernel's time in the default model is its
    latency (launch, pipeline fill and drain; less for kernels too small to fill the pipeline)
    plus its bytes at the achievable bandwidth; each kernel after the first of a chain hides
    part of its latency behind its predecessor's drain, so a chain costs less than the sum of
    its kernels estimated alone.
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


_SCALINGS = {"none": "none", "tensorwise": "tensorwise", "rowwise": "rowwise"}

#: Input formats torch._scaled_mm scales per tensor or per row (8-bit, no block scales).
_SCALED_DTYPES = ("fp8_e4m3", "fp8_e5m2", "int8")


def _scaling(fn: str, scaling: str | None, dt: Any) -> Any:
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


def _gemm_label(m: Any, k: Any, n: Any, batch: Any, dt: Any) -> str:
    if all(np.ndim(v) == 0 for v in (m, k, n, batch)):
        b = f"{int(batch)}x" if int(batch) != 1 else ""
        return f"gemm {b}{int(m)}x{int(k)}x{int(n)} {label(dt)}"
    return f"gemm {label(dt)}"


_LAYOUTS = {"contiguous": "contiguous", "masked": "masked"}


@overload
def grouped_gemm(
    m_per_group: Scalar | None,
    k: Scalar,
    n: Scalar,
    groups: Scalar | None = None,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    counts: ArrayLike | None = None,
    layout: str = "contiguous",
    out_dtype: Any = None,
    efficiency: EfficiencyLike = "default",
    scaling: str | None = None,
) -> Estimate[float]: ...
@overload
def grouped_gemm(
    m_per_group: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    groups: ArrayLike | None = None,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    counts: ArrayLike | None = None,
    layout: str = "contiguous",
    out_dtype: Any = None,
    efficiency: EfficiencyLike = "default",
    scaling: str | None = None,
) -> Estimate[Array]: ...


def grouped_gemm(
    m_per_group: ArrayLike,
    k: ArrayLike,
    n: ArrayLike,
    groups: ArrayLike | None = None,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    counts: ArrayLike | None = None,
    layout: str = "contiguous",
    out_dtype: Any = None,
    efficiency: EfficiencyLike = "default",
    scaling: str | None = None,
) -> Estimate[Any]:
    """Estimate one grouped GEMM kernel: ``C_g = A_g @ B_g`` for every group (MoE experts).

    Group ``g`` multiplies its ``m_g`` rows (tokens routed to expert ``g``) of shape
    ``m_g x k`` by its own weight ``B_g`` of shape ``k x n``, all in one kernel launch.

    Parameters
    ----------
    m_per_group : int or array_like of int, or None
        Rows of every group (uniform routing). With ``counts=``: ``None`` in the contiguous
        layout; in the masked layout the buffer's rows per group (``None``: the largest
        count).
    k, n : int or array_like of int
        Reduction dimension and columns of every ``B_g`` (torchao's order). Arrays broadcast.
    groups : int or array_like of int, optional
        Groups (experts) in the kernel; required unless ``counts`` is given (then it must
        equal ``counts``' last axis, or be omitted).
    dtype : str
        Format of A and B, as for :func:`gemm` (``"fp8"``, ``"bf16"``, ``"mxfp8"``, ...).
    hardware : Hardware or str, optional
        Accelerator (see :func:`gemm`).
    counts : array_like of int, optional
        Rows (tokens) of each group along the last axis, for load imbalance; leading axes
        broadcast with ``k``, ``n`` (and ``m_per_group`` in the masked layout), so a 2-D
        array sweeps routing scenarios. Zero is allowed (an expert no token chose).
    layout : {"contiguous", "masked"}
        ``"contiguous"``: the groups' rows back to back (DeepGEMM's contiguous layout,
        ``torch._grouped_mm`` with offsets); ``"masked"``: one buffer of the maximum rows per
        group, computed in full. Identical for uniform groups.
    out_dtype : str, optional
        Output format (default as in :func:`gemm`: bf16 for 8/4-bit inputs); ``"fp32"`` for
        DeepSeek-V3's up+gate projection.
    efficiency : {"default", "constant", "peak", "torchao"} or Efficiency
        Efficiency model.
    scaling : {None, "tensorwise", "rowwise"}
        Scaling of fp8 inputs as for :func:`gemm` (``torch._scaled_grouped_mm`` is
        rowwise: ``4·(m_g + n)`` scale bytes per group).

    Returns
    -------
    Estimate
        Floats for scalar inputs, arrays of the broadcast shape otherwise.

    Notes
    -----
    Uniform groups are exactly a batched GEMM (``batch = groups``, ``m = m_per_group``, one
    weight per group): FLOPs = 2·G·m·k·n, bytes = G·(m·k·b_A + k·n·b_B + m·n·b_C) plus block
    scales, and the shape-aware model pads each group to whole tiles and quantizes the union
    of all groups' tiles into waves over the SMs (one kernel, one latency).

    With ``counts`` (contiguous): FLOPs = 2·Σ m_g·k·n, bytes = Σ over non-empty groups of
    ``m_g·k·b_A + k·n·b_B + m_g·n·b_C``: an expert with no tokens reads no weight, as
    DeepGEMM and CUTLASS grouped kernels skip it. The tile model sees one GEMM of
    ``Σ ceil(m_g / 64)·64`` rows (every group padded to whole 64-row tiles). This is exact
    for 64-row tiles and optimistic by less than one tile per group for 128/256-row tiles,
    whose per-group padding the core's single (batch, m) tile model cannot express; it is
    monotone in every count, and equal counts that are multiples of 256 give exactly the
    uniform call. Masked layout: every group
    computes, reads and writes ``max(m_per_group, max_g m_g)`` rows — a padded capacity
    buffer (bmm over a dispatch tensor); DeepGEMM's masked kernels skip the blocks past each
    group's count and behave like the contiguous layout with the same counts.

    Load imbalance costs through the padding of each group to whole tiles (contiguous) or
    through the maximum (masked); a persistent grouped kernel spreads a hot expert's tiles
    over every SM, so one GPU's grouped GEMM is not slowed by the hot expert beyond that.
    Cross-GPU imbalance (expert parallelism) is a property of the busiest GPU: estimate that
    GPU's counts.
    """
    fn = "grouped_gemm"
    dt = parse_dtype(fn, dtype)
    out = default_out(dt) if out_dtype is None else parse_dtype(fn, out_dtype, "out_dtype")
    lay = one_of(fn, "layout", layout, _LAYOUTS)
    sc = _scaling(fn, scaling, dt)
    kk = positive_int_array(fn, "k", k)
    nn = positive_int_array(fn, "n", n)
    if counts is None:
        if groups is None:
            raise ValueError(
                f"{fn}: groups is required (or counts= with the rows of each group), got None"
            )
        if m_per_group is None:
            raise ValueError(f"{fn}: m_per_group is required without counts=, got None")
        arrays, shape = broadcast(
            fn,
            m_per_group=positive_int_array(fn, "m_per_group", m_per_group),
            k=kk,
            n=nn,
            groups=positive_int_array(fn, "groups", groups),
        )
        hw, chw, ceff = resolve(hardware, efficiency)
        require_peak(fn, hw, dt)
        cols = _core.grouped_gemm_sweep(*arrays, dt, dt, out, chw, ceff, sc)
        lab = f"grouped_gemm {label(dt)}"
        if all(np.ndim(v) == 0 for v in (m_per_group, k, n, groups)):
            g, m = int(groups), int(m_per_group)
            lab = f"grouped_gemm {g}x{m}x{int(k)}x{int(n)} {label(dt)}"
        meta = inputs_meta(shape, dict(zip(("m_per_group", "k", "n", "groups"), arrays,
                                           strict=True)), dtype=label(dt))
        return from_columns(cols, shape, label=lab, hardware=hw.name,
                            meta={**peak_meta(hw, dt), **meta})

    cnt = nonnegative_int_array(fn, "counts", counts)
    if cnt.ndim == 0:
        raise ValueError(
            f"{fn}: counts must be an array with one entry per group (last axis), "
            f"got the scalar {int(cnt)}"
        )
    n_groups = cnt.shape[-1]
    if groups is not None:
        g_arr = positive_int_array(fn, "groups", groups)
        if g_arr.ndim != 0 or int(g_arr) != n_groups:
            raise ValueError(
                f"{fn}: groups must equal the length of counts' last axis ({n_groups}), "
                f"got {groups!r}"
            )
    empty = cnt.sum(axis=-1) == 0
    if empty.any():
        where = np.argwhere(np.atleast_1d(empty))[0]
        raise ValueError(
            f"{fn}: counts must have at least one non-zero group, got all zeros"
            + (f" at counts[{', '.join(str(int(i)) for i in where)}, :]" if cnt.ndim > 1 else "")
        )
    if lay == "contiguous":
        if m_per_group is not None:
            raise ValueError(
                f"{fn}: m_per_group must be None with counts= in the contiguous layout "
                f"(the rows come from counts), got {m_per_group!r}"
            )
        cap = np.zeros(())
    else:
        cap = (np.zeros(()) if m_per_group is None
               else positive_int_array(fn, "m_per_group", m_per_group))
    lead = np.zeros(cnt.shape[:-1])
    (_, cap_b, k_b, n_b), shape = broadcast(fn, counts=lead, m_per_group=cap, k=kk, n=nn)
    cnt2 = np.ascontiguousarray(
        np.broadcast_to(cnt, shape + (n_groups,)), dtype=np.float64
    ).reshape(-1, n_groups)
    if lay == "masked" and m_per_group is not None:
        short = (cap_b > 0) & (cap_b < cnt2.max(axis=1))
        if short.any():
            i = int(np.flatnonzero(short)[0])
            raise ValueError(
                f"{fn}: m_per_group (the masked buffer's rows) must be at least the largest "
                f"count, got m_per_group={int(cap_b[i])}, max(counts)={int(cnt2[i].max())}"
            )
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    core_layout = getattr(_core.GroupedLayout, lay)
    cols = _core.grouped_gemm_counts_sweep(cnt2, cap_b, k_b, n_b, dt, dt, out, core_layout,
                                           chw, ceff, sc)
    lab = f"grouped_gemm {lay} {n_groups} groups {label(dt)}"
    return from_columns(cols, shape, label=lab, hardware=hw.name, meta=peak_meta(hw, dt))


#: Implementations of the row-wise ops (``backend=``).
ROW_BACKENDS = {
    "fused": _core.RowBackend.fused,
    "eager": _core.RowBackend.eager,
    "compiled": _core.RowBackend.compiled,
}


def _row_op(
    fn: str,
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any,
    hardware: HardwareLike,
    backward: Any,
    save_stats: Any,
    efficiency: EfficiencyLike,
    backend: str,
    cols_name: str = "cols",
) -> Estimate:
    be = one_of(fn, "backend", backend, ROW_BACKENDS)
    dt = parse_dtype(fn, dtype)
    bwd = flag(fn, "backward", backward)
    stats = flag(fn, "save_stats", save_stats)
    arrays, shape = broadcast(
        fn,
        rows=positive_int_array(fn, "rows", rows),
        **{cols_name: positive_int_array(fn, cols_name, cols)},
    )
    hw, chw, ceff = resolve(hardware, efficiency)
    cols_out = _core.row_op_sweep(getattr(_core.RowOp, fn), *arrays, dt, bwd, stats, chw, ceff,
                                  be)
    what = f"{fn}{' backward' if bwd else ''}{'' if be.name == 'fused' else ' ' + be.name}"
    lab = f"{what} {label(dt)}"
    if np.ndim(rows) == 0 and np.ndim(cols) == 0:
        lab = f"{what} {int(rows)}x{int(cols)} {label(dt)}"
    return from_columns(cols_out, shape, label=lab, hardware=hw.name,
                        meta={**peak_meta(hw, _core.DType.fp32), **inputs_meta(
                            shape, dict(zip(("rows", cols_name), arrays, strict=True)),
                            dtype=label(dt))})


@overload
def rmsnorm(
    rows: Scalar,
    cols: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def rmsnorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def rmsnorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate one RMSNorm kernel, ``y = x / sqrt(mean(x²) + eps) * w``, over rows of ``cols``.

    Parameters
    ----------
    rows, cols : int or array_like of int
        Rows (tokens) and the normalized width (hidden size). Arrays broadcast.
    dtype : str
        Format of x, y, the weight and the gradients (``"bf16"``, ``"fp32"``, ...).
    hardware : Hardware or str, optional
        Accelerator (see :func:`gemm`).
    backward : bool
        The backward pass alone (dx and dw) instead of the forward.
    save_stats : bool
        Forward only: also write the fp32 ``rstd`` per row for a backward pass (training).
    backend : {"fused", "eager", "compiled"}
        Implementation. ``"fused"`` (default; what ``rl.transformer`` assumes): one good kernel
        whose tensors cross DRAM once. ``"eager"``: PyTorch's aten CUDA kernels (one vectorized
        kernel per norm that re-reads rows above 1024 columns; softmax: a warp-per-row kernel
        up to 1024 columns, else one 1024-thread CTA per row, re-reading rows too long for shared
        memory; cross entropy: log_softmax, which writes the full log-probabilities, plus
        nll_loss). ``"compiled"``: torch.compile's Inductor reduction (persistent up to 1024
        columns, looped above, re-reading the row). See Notes and docs/model.md.
    efficiency : {"default", "constant", "peak", "torchao"} or Efficiency
        Efficiency model.

    Notes
    -----
    With ``b`` bytes per element, R rows and C columns, one streaming kernel
    (``KernelKind::memory``: latency plus achievable bandwidth in the default model):

    - forward: reads ``R·C·b`` (x) + ``C·b`` (w); writes ``R·C·b`` (y) + ``4·R`` with
      ``save_stats``; FLOPs ``4·R·C`` (square, accumulate, two multiplies).
    - backward: reads ``2·R·C·b`` (dy, x) + ``C·b`` (w) + ``4·R`` (saved rstd); writes
      ``R·C·b`` (dx) + ``4·C`` (dw accumulated in fp32; per-CTA partial rows and their final
      reduction are not counted); FLOPs ``9·R·C``.

    FLOPs run at the fp32 vector peak; per-row work (rsqrt) is not counted. With the
    ``"fused"`` backend each tensor crosses DRAM once (rows fit on chip). ``"eager"`` and
    ``"compiled"`` keep these compulsory bytes (eager always writes the statistics) and add, in
    the default model only: re-reads of rows after their reduction (a fitted fraction of a DRAM
    pass while the rows in flight fit in half the L2, a full pass beyond), waves of rows over the
    SMs, transcendentals (exp, division) that follow a row's loads, and extra kernels (compiled
    backward: a second kernel for dw that reads dy and x again). The ``"peak"``, ``"constant"``
    and ``"torchao"`` presets see only the compulsory bytes, FLOPs and kernel count.
    """
    return _row_op("rmsnorm", rows, cols, dtype, hardware, backward, save_stats, efficiency,
                   backend)


@overload
def layernorm(
    rows: Scalar,
    cols: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def layernorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def layernorm(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate one LayerNorm kernel, ``y = (x - mean) / sqrt(var + eps) * w + b``.

    Parameters are those of :func:`rmsnorm` (``backend`` too); ``save_stats`` writes the fp32
    mean and rstd.

    Notes
    -----
    With ``b`` bytes per element, R rows and C columns, one streaming kernel:

    - forward: reads ``R·C·b`` (x) + ``2·C·b`` (weight, bias); writes ``R·C·b`` (y) +
      ``8·R`` (mean, rstd) with ``save_stats``; FLOPs ``7·R·C`` (sum; center, square,
      accumulate; scale, weight, bias).
    - backward: reads ``2·R·C·b`` (dy, x) + ``C·b`` (weight) + ``8·R`` (mean, rstd);
      writes ``R·C·b`` (dx) + ``8·C`` (dw and db accumulated in fp32); FLOPs ``13·R·C``.

    FLOPs run at the fp32 vector peak; per-row work is not counted.
    """
    return _row_op("layernorm", rows, cols, dtype, hardware, backward, save_stats, efficiency,
                   backend)


@overload
def softmax(
    rows: Scalar,
    cols: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def softmax(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def softmax(
    rows: ArrayLike,
    cols: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate one row-wise softmax kernel over ``rows`` rows of ``cols`` elements.

    Parameters are those of :func:`rmsnorm` (no statistics: the backward needs only y), with
    ``backend`` as there.

    Notes
    -----
    Forward: reads ``R·C·b`` (x), writes ``R·C·b`` (y), FLOPs ``5·R·C`` (max, subtract, exp,
    sum, scale; exp counted as one FLOP). Backward, ``dx = y·(dy - Σ dy·y)``: reads
    ``2·R·C·b`` (y, dy), writes ``R·C·b`` (dx), FLOPs ``4·R·C``. ``"fused"``: one streaming
    kernel; a row crosses DRAM once (online softmax keeps very long rows to one pass as well).
    ``"eager"`` (aten): rows of at most 1024 elements and 4096 bytes run a warp-per-row kernel;
    longer rows one 1024-thread CTA per row and SM, from shared memory up to ~48 KiB rows, else
    reading the row three times (max, sum of exp, output); three transcendentals per element
    (two exps and a division); the backward first multiplies dy·y in a separate kernel.
    ``"compiled"``: one Inductor reduction; above 1024 columns a looped one that reads the row
    again for the output; three transcendentals per element (online max/sum, then the output).
    """
    return _row_op("softmax", rows, cols, dtype, hardware, backward, False, efficiency, backend)


@overload
def cross_entropy(
    rows: Scalar,
    vocab: Scalar,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[float]: ...
@overload
def cross_entropy(
    rows: ArrayLike,
    vocab: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Array]: ...


def cross_entropy(
    rows: ArrayLike,
    vocab: ArrayLike,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
    *,
    backward: bool = False,
    save_stats: bool = False,
    backend: str = "fused",
    efficiency: EfficiencyLike = "default",
) -> Estimate[Any]:
    """Estimate a fused cross-entropy kernel over logits of shape ``rows x vocab``.

    Parameters
    ----------
    rows, vocab : int or array_like of int
        Tokens and vocabulary size. Arrays broadcast.
    dtype : str
        Format of the logits and of their gradient.
    backward : bool
        The backward pass alone: the gradient of the logits.
    save_stats : bool
        Forward only: also write the fp32 log-sum-exp per row for the backward.
    backend : {"fused", "eager", "compiled"}
        ``"fused"`` (default): the kernel below. ``"eager"``: ``F.cross_entropy`` as aten runs
        it, log_softmax (writes the R·V log-probabilities; rows above ~24 K bf16 logits are read
        three times) plus nll_loss; the backward fills a zero gradient, scatters the labels and
        runs log_softmax's backward (3 kernels). ``"compiled"``: Inductor's fused reduction
        (online log-sum-exp in fp32: two exps per logit) plus the mean over rows (2 kernels).

    Notes
    -----
    With ``b`` bytes per logit and R rows of V logits, labels int64, loss fp32, one
    streaming kernel:

    - forward: reads ``R·V·b`` (logits) + ``8·R`` (labels); writes ``4·R`` (loss) + ``4·R``
      (log-sum-exp) with ``save_stats``; FLOPs ``4·R·V`` (max, subtract, exp, sum).
    - backward: reads ``R·V·b`` (logits) + ``8·R`` (labels) + ``4·R`` (log-sum-exp) +
      ``4·R`` (per-row loss gradient; a mean reduction reads one scalar instead); writes
      ``R·V·b`` (the logits' gradient); FLOPs ``4·R·V`` (subtract lse, exp, subtract the
      one-hot label, scale).

    FLOPs run at the fp32 vector peak. Chunked / fused-linear cross entropy (Liger), which
    never materializes the logits, is a GEMM plus this kernel's per-chunk traffic.
    """
    return _row_op(
        "cross_entropy", rows, vocab, dtype, hardware, backward, save_stats, efficiency,
        backend, cols_name="vocab",
    )
