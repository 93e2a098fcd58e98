"""Grouped (MoE expert) GEMMs: ``rl.grouped_gemm``."""

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
from .._dtypes import default_out, label
from .._dtypes import dtype as parse_dtype
from .._params.resolve import require_peak, resolve
from ..efficiency import EfficiencyLike
from ..estimate import Array, Estimate, from_columns, inputs_meta
from ..explain import peak_meta
from ..hardware import HardwareLike
from .gemm import scaling_of

_LAYOUTS = {"contiguous": "contiguous", "masked": "masked", "looped": "looped",
            "looped_wgrad": "looped_wgrad", "fused_moe": "fused_moe"}


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
    accumulate: bool = False,
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
    accumulate: bool = False,
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
    accumulate: bool = False,
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
    layout : {"contiguous", "masked", "looped", "looped_wgrad", "fused_moe"}
        ``"contiguous"``: the groups' rows back to back (DeepGEMM's contiguous layout,
        ``torch._grouped_mm`` with offsets); ``"masked"``: one buffer of the maximum rows per
        group, computed in full. Identical for uniform groups. ``"looped"`` (with
        ``counts=``): no grouped kernel but one GEMM per non-empty group launched in turn, as
        Transformer Engine's ``GroupedLinear`` runs Megatron-Core's experts
        (``general_grouped_gemm``: one cuBLAS GEMM per expert); ``"looped_wgrad"``: the weight
        gradients of those GEMMs, ``dB_g = A_g^T @ dC_g`` (``k x m_g`` by ``m_g x n``: the
        group's rows are the reduction). ``"fused_moe"`` (with ``counts=``): vLLM's and
        SGLang's Triton ``fused_moe`` kernel, the groups' rows back to back as in
        ``"contiguous"`` but each non-empty group padded to whole 16-row blocks
        (``moe_align_block_size`` at the tuned configs' decode ``BLOCK_SIZE_M``), no
        setup kernel and no CUTLASS tiles: priced as a tuned GEMM of the padded rows (the
        library GEMM's latency and memory rate) at 0.65 of its compute rate (the core's
        ``kFusedMoeComputeFraction``, from vLLM PR #24700's H100 kernel times).
    out_dtype : str, optional
        Output format (default as in :func:`gemm`: bf16 for 8/4-bit inputs); ``"fp32"`` for
        DeepSeek-V3's up+gate projection.
    efficiency : {"default", "constant", "peak", "torchao"} or Efficiency
        Efficiency model.
    scaling : {None, "tensorwise", "rowwise"}
        Scaling of fp8 inputs as for :func:`gemm` (``torch._scaled_grouped_mm`` is
        rowwise: ``4·(m_g + n)`` scale bytes per group).
    accumulate : bool
        Each ``C_g`` is read and added to (``beta = 1``): its ``m_g·n`` output elements are
        read as well as written, as a weight gradient accumulated into an fp32 ``main_grad``
        (Megatron-Core's ``gradient_accumulation_fusion``; TE's ``GroupedLinear`` wgrad with
        ``fuse_wgrad_accumulation``: ``out_dtype="fp32", accumulate=True``).

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

    Looped layouts: ``time = sum_g time(gemm(m_g, k, n))`` (``looped_wgrad``:
    ``gemm(k, m_g, n)``, A transposed), each GEMM with its own tiles, waves and latency floor:
    many small experts cost a whole (under-filled) kernel each, which one grouped kernel
    avoids.
    """
    fn = "grouped_gemm"
    dt = parse_dtype(fn, dtype)
    out = default_out(dt) if out_dtype is None else parse_dtype(fn, out_dtype, "out_dtype")
    lay = one_of(fn, "layout", layout, _LAYOUTS)
    sc = scaling_of(fn, scaling, dt)
    acc = flag(fn, "accumulate", accumulate)
    kk = positive_int_array(fn, "k", k)
    nn = positive_int_array(fn, "n", n)
    if counts is None:
        if lay in ("looped", "looped_wgrad", "fused_moe"):
            raise ValueError(f"{fn}: layout={layout!r} needs counts= (the rows of each group's "
                             "own GEMM), got counts=None")
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
        m_a, k_a, n_a, g_a = arrays
        cols = _core.grouped_gemm_sweep(m_a, k_a, n_a, g_a, dt, dt, out, chw, ceff, sc, acc)
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
    if lay in ("contiguous", "looped", "looped_wgrad", "fused_moe"):
        if m_per_group is not None:
            raise ValueError(
                f"{fn}: m_per_group must be None with counts= in the {lay} layout "
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
                                           chw, ceff, sc, acc)
    lab = f"grouped_gemm {lay} {n_groups} groups {label(dt)}"
    return from_columns(cols, shape, label=lab, hardware=hw.name, meta=peak_meta(hw, dt))
