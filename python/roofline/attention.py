"""Attention of every variant: MHA / GQA / MQA / MLA, causal, decode, flash or materialized."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._bridge import require_peak, resolve
from ._dtypes import dtype as parse_dtype
from ._dtypes import label
from ._validate import ArrayLike, broadcast, positive_int_array
from .efficiency import EfficiencyLike
from .estimate import Estimate, from_columns
from .explain import peak_meta

__all__ = ["attention", "attention_kernels", "attention_pairs"]


def _flag(fn: str, name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: {name} must be a bool, got {value!r}")
    return bool(value)


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _prepare(
    fn: str,
    batch: ArrayLike,
    heads: ArrayLike,
    q_len: ArrayLike,
    kv_len: ArrayLike,
    head_dim: ArrayLike,
    kv_heads: ArrayLike | None,
    v_head_dim: ArrayLike | None,
    shared_kv: Any,
) -> tuple[list[np.ndarray], tuple[int, ...]]:
    h = positive_int_array(fn, "heads", heads)
    d = positive_int_array(fn, "head_dim", head_dim)
    arrays, shape = broadcast(
        fn,
        batch=positive_int_array(fn, "batch", batch),
        heads=h,
        kv_heads=h if kv_heads is None else positive_int_array(fn, "kv_heads", kv_heads),
        q_len=positive_int_array(fn, "q_len", q_len),
        kv_len=positive_int_array(fn, "kv_len", kv_len),
        head_dim=d,
        v_head_dim=d if v_head_dim is None else positive_int_array(fn, "v_head_dim", v_head_dim),
    )
    _, hh, kvh, _, _, dd, dv = arrays
    bad = np.mod(hh, kvh) != 0
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(
            f"{fn}: kv_heads must divide heads, got kv_heads={int(kvh[i])}, heads={int(hh[i])}"
        )
    if _flag(fn, "shared_kv", shared_kv):
        bad = dv > dd
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(
                f"{fn}: shared_kv=True needs v_head_dim <= head_dim (V is a slice of K), got "
                f"v_head_dim={int(dv[i])}, head_dim={int(dd[i])}"
            )
    return arrays, shape


def attention(
    batch: ArrayLike,
    heads: ArrayLike,
    q_len: ArrayLike,
    kv_len: ArrayLike,
    head_dim: ArrayLike,
    kv_heads: ArrayLike | None = None,
    v_head_dim: ArrayLike | None = None,
    shared_kv: bool = False,
    causal: bool = False,
    flash: bool = True,
    backward: bool = False,
    dtype: Any = "bf16",
    hardware: Any = None,
    *,
    efficiency: EfficiencyLike = "default",
) -> Estimate:
    """Estimate one attention call ``softmax(Q K^T / sqrt(d)) V`` (forward, or its backward).

    Parameters
    ----------
    batch : int or array_like of int
        Sequences.
    heads : int or array_like of int
        Query heads.
    q_len : int or array_like of int
        Queries per sequence: the prompt for prefill / training, 1 for decode (a few for
        speculative decoding or chunked prefill).
    kv_len : int or array_like of int
        Keys per sequence: cached tokens plus the new ones (``kv_len >= q_len`` in decode).
    head_dim : int or array_like of int
        Query/key head dimension (576 for MLA in FlashMLA's absorbed form).
    kv_heads : int or array_like of int, optional
        Key/value heads; must divide ``heads``. Default ``heads`` (MHA); fewer is GQA, 1 is
        MQA (and absorbed MLA).
    v_head_dim : int or array_like of int, optional
        Value/output head dimension; default ``head_dim`` (512 for absorbed MLA).
    shared_kv : bool
        V is the first ``v_head_dim`` columns of K (absorbed MLA: one latent cache), so the
        flash kernel reads the cache once for both.
    causal : bool
        Causal mask, bottom-right aligned: query ``i`` of ``q_len`` sees keys
        ``0 .. kv_len - q_len + i``. With ``q_len == kv_len`` this is the usual lower triangle.
    flash : bool
        One fused kernel (scores never reach DRAM) or materialized scores (QK^T GEMM, softmax,
        PV GEMM, the score and probability matrices through DRAM).
    backward : bool
        Estimate the backward pass only (dQ, dK, dV); add the forward for a training step.
    dtype : str
        Format of Q, K, V (``"bf16"``, ``"fp16"``, ``"fp8"``, ...). Outputs, scores and
        gradients are 16-bit when the inputs are narrower.
    hardware : Hardware or str, optional
        Accelerator (default: detected / ``rl.set_default_hardware``).
    efficiency : {"default", "peak", "torchao"} or Efficiency
        Efficiency model; each kernel gets its own launch floor.

    Returns
    -------
    Estimate
        Floats for scalar inputs, arrays of the broadcast shape otherwise.

    Raises
    ------
    ValueError
        A non-positive or non-integral size, ``kv_heads`` not dividing ``heads``, or
        ``shared_kv`` with ``v_head_dim > head_dim``.
    TypeError
        A flag that is not a bool, a size that is not a number.

    Notes
    -----
    With ``B`` = batch, ``H`` = heads, ``G`` = kv_heads, ``d`` / ``dv`` the head dims and
    ``P`` the query-key pairs per (sequence, head) — ``q·kv``, or with the causal mask
    ``q·kv - q(q-1)/2`` when ``q <= kv`` (``q(q+1)/2`` when ``q == kv``, i.e. about half) and
    ``kv(kv+1)/2`` when ``q > kv`` — the FLOP convention counts matrix multiplies only, two
    FLOPs per multiply-add, as FlashAttention's benchmarks do:

    - flash forward: ``2·B·H·P·(d + dv)`` (``4·B·H·s²·d`` for ``q = kv = s``, ``d = dv``);
    - flash backward: ``2·B·H·P·(3d + 2dv)`` = 2.5x the forward for ``d = dv`` (it recomputes
      ``QK^T`` and runs four more GEMMs);
    - materialized: every score is computed (the mask is applied after the GEMM), forward
      ``2·B·H·q·kv·(d + dv)``, backward twice that (no recomputation).

    Softmax arithmetic (exp, max, sum) is not counted. Bytes assume every operand crosses
    DRAM exactly once per kernel: Q and O ``B·H·q·d`` elements, K and V ``B·G·kv·d`` — the KV
    cache is read once per kv head, not per query head, and with ``shared_kv`` once for K and
    V together — plus an fp32 log-sum-exp per query row (flash). Materialized attention also
    writes and reads the ``B·H·q·kv`` score and probability matrices; its GEMMs group the
    ``H/G`` query heads of one kv head so K and V are still read once. The backward pass
    writes dK / dV once per kv head (one latent gradient with ``shared_kv``) and, for flash,
    accumulates dQ in fp32 (FlashAttention-2's preprocess, main and dQ-conversion kernels).
    The default model ignores tile quantization of short sequences and exp throughput.
    """
    fn = "attention"
    arrays, shape = _prepare(
        fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv
    )
    dt = parse_dtype(fn, dtype)
    flags = [_flag(fn, n, v) for n, v in
             (("shared_kv", shared_kv), ("causal", causal), ("flash", flash),
              ("backward", backward))]
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    cols = _core.attention_sweep(*arrays, *flags, dt, chw, ceff)
    kind = ("flash" if flags[2] else "materialized") + (" bwd" if flags[3] else "")
    return from_columns(cols, shape, label=f"attention {kind} {label(dt)}", hardware=hw.name,
                        meta=peak_meta(hw, dt))


def attention_kernels(
    batch: int,
    heads: int,
    q_len: int,
    kv_len: int,
    head_dim: int,
    kv_heads: int | None = None,
    v_head_dim: int | None = None,
    shared_kv: bool = False,
    causal: bool = False,
    flash: bool = True,
    backward: bool = False,
    dtype: Any = "bf16",
    hardware: Any = None,
    *,
    efficiency: EfficiencyLike = "default",
) -> list[dict[str, Any]]:
    """Every kernel of one (scalar) attention call: name, FLOPs, bytes read/written, times.

    Same arguments and formulas as :func:`attention`; returns a list of dicts (one per kernel)
    that ``pandas.DataFrame`` accepts.
    """
    fn = "attention_kernels"
    arrays, shape = _prepare(
        fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv
    )
    if shape != ():
        raise ValueError(f"{fn}: sizes must be scalars, got arrays of shape {shape}")
    dt = parse_dtype(fn, dtype)
    flags = [_flag(fn, n, v) for n, v in
             (("shared_kv", shared_kv), ("causal", causal), ("flash", flash),
              ("backward", backward))]
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    rows: list[dict[str, Any]] = _core.attention_kernels(
        *(float(a[0]) for a in arrays), *flags, dt, chw, ceff
    )
    return rows


def attention_pairs(q_len: ArrayLike, kv_len: ArrayLike, causal: bool = False) -> Any:
    """Query-key pairs scored per (sequence, head).

    Notes
    -----
    ``q·kv`` without a mask. Causal (bottom-right aligned, query ``i`` sees
    ``kv - q + i + 1`` keys, clipped to ``[0, kv]``): ``q·kv - q(q-1)/2`` for ``q <= kv``,
    ``kv(kv+1)/2`` for ``q > kv``.
    """
    fn = "attention_pairs"
    (q, kv), shape = broadcast(
        fn, q_len=positive_int_array(fn, "q_len", q_len),
        kv_len=positive_int_array(fn, "kv_len", kv_len),
    )
    c = _flag(fn, "causal", causal)
    out = np.array([_core.attention_pairs(a, b, c) for a, b in zip(q, kv, strict=True)])
    out = out.reshape(shape)
    return float(out) if out.ndim == 0 else out
