"""The attention wrapper as it was before the C++ fast paths (commit 791b2bd), kept verbatim as
the reference that tests/test_attention_fast.py compares the new paths with, bit for bit:
"auto" as a Python minimum over per-backend core sweeps, dispatch rules in numpy."""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline import _core
from roofline._checks import ArrayLike, broadcast, flag, one_of, positive_int_array
from roofline._dtypes import dtype as parse_dtype
from roofline._dtypes import label
from roofline._params.resolve import require_peak, resolve, resolve_hardware
from roofline.efficiency import EfficiencyLike
from roofline.estimate import Estimate, from_columns
from roofline.explain import peak_meta
from roofline.hardware import HardwareLike

__all__ = ["BACKENDS", "attention", "attention_backend", "attention_kernels", "attention_pairs"]

#: Backend names ``backend=`` accepts: ``"auto"`` (what ``F.scaled_dot_product_attention``
#: dispatches to), PyTorch's four SDPA backends, and ``"standard"`` (the idealized fused kernel
#: of the standard model: FlashAttention-2 at its README's speed, FlashMLA for MLA).
BACKENDS: tuple[str, ...] = ("auto", "flash", "cudnn", "efficient", "math", "standard")

_CORE_BACKEND = {
    "standard": _core.AttentionBackend.standard,
    "flash": _core.AttentionBackend.flash,
    "cudnn": _core.AttentionBackend.cudnn,
    "efficient": _core.AttentionBackend.efficient,
    "math": _core.AttentionBackend.math,
}
#: Resolution order of the codes below (index = code).
_ORDER = ("standard", "flash", "cudnn", "efficient", "math")


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
    if flag(fn, "shared_kv", shared_kv):
        bad = dv > dd
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(
                f"{fn}: shared_kv=True needs v_head_dim <= head_dim (V is a slice of K), got "
                f"v_head_dim={int(dv[i])}, head_dim={int(dd[i])}"
            )
    return arrays, shape


def _float_format(fn: str, dt: Any, dtype: Any) -> None:
    """Attention takes floating formats only (Q, K, V and softmax): no integer dtype."""
    if label(dt).lower().startswith(("int", "uint")):
        raise ValueError(f"{fn}: dtype must be a floating format (bf16, fp16, fp32, fp8, ...), "
                         f"got {dtype!r}")


def _sdpa_codes(hw: Any, dt: Any, arrays: list[np.ndarray], shared_kv: bool, causal: bool,
                backward: bool) -> np.ndarray:
    """Per element, the index in ``_ORDER`` of the backend SDPA dispatches to (see
    :func:`attention_backend`)."""
    from roofline._params.architecture import CUDNN_FIRST, architecture

    _, _, _, q, kv, d, dv = arrays
    n = len(q)
    arch = architecture(hw)
    name = label(dt).lower()
    half = name in ("bf16", "fp16")
    if shared_kv or arch == "other" or not (half or name == "fp32"):
        return np.zeros(n, dtype=np.int64)  # standard: FlashMLA / non-CUDA / fp8 kernels
    # A causal mask over a single query is no mask (bottom-right aligned): decode code passes
    # is_causal=False, which the flash kernel accepts.
    causal_arr = np.full(n, causal) & (q > 1)
    if arch == "volta":
        half = name == "fp16"  # sm70 has no bf16 tensor cores; efficient runs fp16 and fp32
    code = np.full(n, _ORDER.index("math"), dtype=np.int64)
    align = 8 if half else 4
    eff_ok = (np.mod(d, align) == 0) & (np.mod(dv, align) == 0) & (half | (name == "fp32"))
    if arch == "rocm":  # AOTriton: flash and efficient share kernels, equal head dims <= 512
        eff_ok &= (d == dv) & (d <= 512)
    code[eff_ok] = _ORDER.index("efficient")
    if arch != "volta":
        # a bottom-right causal mask on q != kv runs causal_lower_right's dispatch: flash
        # first (no non-square check), never cuDNN
        flash_ok = half & (d == dv) & (d <= (512 if arch == "rocm" else 256))
        if backward and arch in ("ada", "blackwell_consumer"):
            flash_ok &= ~((d > 192) & (d <= 224))  # sm89/120: no FA2 backward there
        code[flash_ok] = _ORDER.index("flash")
    if arch in CUDNN_FIRST and half:
        limit = (d <= 128) & (dv <= 128) | (d == 192) & (dv == 128)
        cudnn_ok = (limit & (np.mod(d, 8) == 0) & (np.mod(dv, 8) == 0) & (kv != 1)
                    & ~(causal_arr & (q != kv)))
        code[cudnn_ok] = _ORDER.index("cudnn")
    return code


def _auto_candidates(hw: Any, dt: Any, arrays: list[np.ndarray], shared_kv: bool,
                     causal: bool, backward: bool) -> list[tuple[int, np.ndarray]]:
    """(The pre-fast-path implementation, verbatim.)"""
    from roofline._params.architecture import CUDNN_FIRST, architecture

    codes = _sdpa_codes(hw, dt, arrays, shared_kv, causal, backward)
    if not codes.any():  # standard everywhere (MLA, fp8, non-CUDA): one kernel, no dispatch
        return [(0, np.ones(len(codes), dtype=bool))]
    _, _, _, _, _, d, dv = arrays
    arch = architecture(hw)
    if arch == "rocm":  # (since #25) ROCm: SDPA's dispatch itself, one backend per call
        return [(int(c), codes == c) for c in np.unique(codes)]
    name = label(dt).lower()
    half = name in ("bf16", "fp16") if arch != "volta" else name == "fp16"
    align = 8 if half else 4
    d8, dv8 = np.ceil(d / align) * align, np.ceil(dv / align) * align
    top = np.maximum(d, dv)
    out: list[tuple[int, np.ndarray]] = []
    if arch in CUDNN_FIRST and half:
        out.append((_ORDER.index("cudnn"), (d <= 192) & (dv <= 128)))
    if arch != "volta" and half:
        out.append((_ORDER.index("flash"), top <= (512 if arch == "rocm" else 256)))
    if half or name == "fp32":
        ok = np.ones(len(d), dtype=bool)
        if arch == "rocm":
            ok = (d8 <= 512) & (dv8 <= 512)
        out.append((_ORDER.index("efficient"), ok))
    out.append((_ORDER.index("math"), np.ones(len(d), dtype=bool)))
    return out


def _resolve_backend(fn: str, backend: Any, flash: bool) -> str:
    """The requested backend name, with ``flash=False`` meaning ``"math"``."""
    name = one_of(fn, "backend", backend, {b: b for b in BACKENDS})
    if not flash:
        if name == "standard":
            return "standard"  # the standard model's materialized formulas
        if name not in ("auto", "math"):
            raise ValueError(
                f"{fn}: flash=False means backend='math' (materialized scores), got "
                f"backend={backend!r}; drop flash=False or pass backend='math'"
            )
        return "math"
    return str(name)


def attention_backend(
    batch: ArrayLike,
    heads: ArrayLike,
    q_len: ArrayLike,
    kv_len: ArrayLike,
    head_dim: ArrayLike,
    kv_heads: ArrayLike | None = None,
    v_head_dim: ArrayLike | None = None,
    shared_kv: bool = False,
    causal: bool = False,
    backward: bool = False,
    dtype: Any = "bf16",
    hardware: HardwareLike = None,
) -> Any:
    """(The pre-fast-path implementation, verbatim.)"""
    fn = "attention_backend"
    arrays, shape = _prepare(
        fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv
    )
    dt = parse_dtype(fn, dtype)
    _float_format(fn, dt, dtype)
    flags = [flag(fn, n, v) for n, v in
             (("shared_kv", shared_kv), ("causal", causal), ("backward", backward))]
    hw = resolve_hardware(hardware)
    codes = _sdpa_codes(hw, dt, arrays, *flags)
    names = np.array(_ORDER, dtype=object)[codes].reshape(shape)
    return str(names) if names.ndim == 0 else names


def _backend_codes(fn: str, backend: Any, flash: bool, hw: Any, dt: Any,
                   arrays: list[np.ndarray], shared_kv: bool, causal: bool,
                   backward: bool, ceff: Any) -> np.ndarray:
    name = _resolve_backend(fn, backend, flash)
    if name == "auto" or (name == "math" and backend == "auto"):
        if not ceff.shape_aware:
            # "peak", "constant", "torchao" and plain Efficiency objects keep the standard
            # formulas (fused kernel, or materialized scores for flash=False) exactly.
            return np.zeros(len(arrays[0]), dtype=np.int64)
        if name == "math":
            return np.full(len(arrays[0]), _ORDER.index("math"), dtype=np.int64)
        return _sdpa_codes(hw, dt, arrays, shared_kv, causal, backward)
    return np.full(len(arrays[0]), _ORDER.index(name), dtype=np.int64)


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
    hardware: HardwareLike = None,
    *,
    efficiency: EfficiencyLike = "default",
    backend: str = "auto",
) -> Estimate:
    """(The pre-fast-path implementation, verbatim.)"""
    fn = "attention"
    arrays, shape = _prepare(
        fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv
    )
    dt = parse_dtype(fn, dtype)
    _float_format(fn, dt, dtype)
    flags = [flag(fn, n, v) for n, v in
             (("shared_kv", shared_kv), ("causal", causal), ("flash", flash),
              ("backward", backward))]
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    cands = _auto(fn, backend, flags, hw, dt, arrays, ceff)
    if cands is not None:
        cols, names = _least(arrays, flags, dt, chw, ceff, cands)
        kind = "/".join(names) + (" bwd" if flags[3] else "")
        return from_columns(cols, shape, label=f"attention {kind} {label(dt)}",
                            hardware=hw.name, meta=peak_meta(hw, dt))
    codes = _backend_codes(fn, backend, flags[2], hw, dt, arrays, flags[0], flags[1], flags[3],
                           ceff)
    used = np.unique(codes)
    if len(used) == 1:
        cols = _sweep(arrays, flags, dt, chw, ceff, int(used[0]))
    else:  # several backends over an array: run each on its elements and scatter back
        parts = {int(c): _sweep([a[codes == c] for a in arrays], flags, dt, chw, ceff, int(c))
                 for c in used}
        cols = tuple(np.empty(len(codes)) for _ in parts[int(used[0])])
        for c, part in parts.items():
            for out, col in zip(cols, part, strict=True):
                out[codes == c] = col
    names = sorted({_ORDER[int(c)] for c in used}) if len(codes) else ["standard"]
    kind = "/".join(names) + (" bwd" if flags[3] else "")
    return from_columns(cols, shape, label=f"attention {kind} {label(dt)}", hardware=hw.name,
                        meta=peak_meta(hw, dt))


def _auto(fn: str, backend: Any, flags: list[bool], hw: Any, dt: Any, arrays: list[np.ndarray],
          ceff: Any) -> list[tuple[int, np.ndarray]] | None:
    """The candidates of ``"auto"`` under the shape-aware model, else None (fixed backends)."""
    if _resolve_backend(fn, backend, flags[2]) != "auto" or not ceff.shape_aware:
        return None
    return _auto_candidates(hw, dt, arrays, flags[0], flags[1], flags[3])


def _least(arrays: list[np.ndarray], flags: list[bool], dt: Any, chw: Any, ceff: Any,
           cands: list[tuple[int, np.ndarray]]) -> tuple[tuple[np.ndarray, ...], list[str]]:
    """Per element, the columns of the fastest candidate backend allowed there."""
    n = len(arrays[0])
    cols = tuple(np.full(n, np.inf) for _ in range(6))
    which = np.full(n, -1, dtype=np.int64)
    for code, mask in cands:
        if not mask.any():
            continue
        part = _sweep([a[mask] for a in arrays], flags, dt, chw, ceff, code)
        idx = np.flatnonzero(mask)
        better = part[0] < cols[0][idx]
        take = idx[better]
        for out, col in zip(cols, part, strict=True):
            out[take] = np.asarray(col)[better]
        which[take] = code
    return cols, sorted({_ORDER[int(c)] for c in np.unique(which)})


def _sweep(arrays: list[np.ndarray], flags: list[bool], dt: Any, chw: Any, ceff: Any,
           code: int) -> Any:
    """One core sweep with every element on backend ``_ORDER[code]``."""
    name = _ORDER[code]
    # The standard model keeps its flash flag; every SDPA backend but math is a fused kernel.
    flash = flags[2] if name == "standard" else name != "math"
    return _core.attention_sweep(*arrays, flags[0], flags[1], flash, flags[3], dt, chw, ceff,
                                 _CORE_BACKEND[name])


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
    hardware: HardwareLike = None,
    *,
    efficiency: EfficiencyLike = "default",
    backend: str = "auto",
) -> list[dict[str, Any]]:
    """(The pre-fast-path implementation, verbatim.)"""
    fn = "attention_kernels"
    arrays, shape = _prepare(
        fn, batch, heads, q_len, kv_len, head_dim, kv_heads, v_head_dim, shared_kv
    )
    if shape != ():
        raise ValueError(f"{fn}: sizes must be scalars, got arrays of shape {shape}")
    dt = parse_dtype(fn, dtype)
    _float_format(fn, dt, dtype)
    flags = [flag(fn, n, v) for n, v in
             (("shared_kv", shared_kv), ("causal", causal), ("flash", flash),
              ("backward", backward))]
    hw, chw, ceff = resolve(hardware, efficiency)
    require_peak(fn, hw, dt)
    cands = _auto(fn, backend, flags, hw, dt, arrays, ceff)
    if cands is not None:
        times = {c: float(_sweep(arrays, flags, dt, chw, ceff, c)[0][0])
                 for c, mask in cands if mask[0]}
        code = min(times, key=lambda c: times[c])
    else:
        code = int(_backend_codes(fn, backend, flags[2], hw, dt, arrays, flags[0], flags[1],
                                  flags[3], ceff)[0])
    name = _ORDER[code]
    flash_flag = flags[2] if name == "standard" else name != "math"
    rows: list[dict[str, Any]] = _core.attention_kernels(
        *(float(a[0]) for a in arrays), flags[0], flags[1], flash_flag, flags[3], dt, chw, ceff,
        _CORE_BACKEND[name]
    )
    for row in rows:
        row["backend"] = name
    return rows


def attention_pairs(q_len: ArrayLike, kv_len: ArrayLike, causal: bool = False) -> Any:
    """(The pre-fast-path implementation, verbatim.)"""
    fn = "attention_pairs"
    (q, kv), shape = broadcast(
        fn, q_len=positive_int_array(fn, "q_len", q_len),
        kv_len=positive_int_array(fn, "kv_len", kv_len),
    )
    c = flag(fn, "causal", causal)
    out = np.array([_core.attention_pairs(a, b, c) for a, b in zip(q, kv, strict=True)])
    out = out.reshape(shape)
    return float(out) if out.ndim == 0 else out
