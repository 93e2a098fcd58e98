"""Entries of weight-only quantized GEMMs (vLLM's Marlin and Machete ops):
:func:`roofline.weight_only_gemm` from the activation, the packed weight, the scales (and
Marlin's ``size_m, size_n, size_k`` arguments)."""

from __future__ import annotations

import math
from typing import Any

from ..weight_only_gemm import weight_only_gemm
from .call import Call, TensorArg
from .pricer import Pricer
from .table import Priced, register


def _int(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and x.strip().lstrip("-").isdigit():
        return int(x)
    return None


def _sizes(call: Call, m: int, k: int) -> int | None:
    """``size_n``: by name (live path), else the integer between ``size_m`` and ``size_k``
    among the positional scalars (both Marlin schemas pass ``size_m, size_n, size_k`` in a
    row)."""
    named = _int(call.args.get("size_n"))
    if named is not None:
        return named
    vals = [_int(call.inputs[i]) if i < len(call.inputs) else None for i in
            range(max(len(call.inputs), len(call.concrete)))]
    for i, c in enumerate(call.concrete):
        if vals[i] is None:
            vals[i] = _int(c)
    for i in range(len(vals) - 2):
        n = vals[i + 1]
        if vals[i] == m and vals[i + 2] == k and n is not None and n > 0:
            return n
    return None


@register("_C::gptq_marlin_gemm", "_C::marlin_gemm", kind="gemm", op="weight_only_gemm")
def marlin_gemm(call: Call, p: Pricer) -> Priced:
    """Marlin (``gptq_marlin_gemm``, ``marlin_gemm``): A is the first input (m x k, 16-bit),
    the packed weight the largest 4-byte tensor (``k·n·bits/32`` int32 words), the scales
    the 16-bit (groups, n) tensor; zero points are not detected (priced without)."""
    ts = call.tensors()
    a = call.tensor(0)
    if a is None or a.dtype_name not in ("bf16", "fp16") or len(a.shape) < 1:
        return None, f"{call.name}: activation type not priced"
    m, k = math.prod(a.shape[:-1]), a.shape[-1]
    n = _sizes(call, m, k)
    packed = [t for t in ts if t is not a and t.itemsize == 4]
    if n is None or not packed or min(m, k, n) <= 0:
        return None, f"{call.name}: size_n or the packed weight not recorded"
    weight = max(packed, key=lambda t: t.numel)
    bits = round(32 * weight.numel / (k * n))
    if bits not in (4, 8):
        return None, f"{call.name}: {bits}-bit weights not priced"
    scales: TensorArg | None = None
    for t in ts:
        if (t is not a and t.itemsize == 2 and len(t.shape) == 2 and t.shape[1] == n
                and t.shape[0] > 0 and k % t.shape[0] == 0 and t.shape[0] != m):
            scales = t
            break
    groups = scales.shape[0] if scales is not None else 1
    group = k // groups if groups > 1 else 0
    wdt = "int4" if bits == 4 else "int8"
    e = p.cached(("weight_only_gemm", m, k, n, wdt, group, a.dtype_name, "marlin"),
                 lambda: weight_only_gemm(m, k, n, wdt, a.dtype_name, p.hardware,
                                          group_size=group, efficiency=p.efficiency,
                                          kernel="marlin"))
    return [("gemm", e)], (f"rl.weight_only_gemm({m}, {k}, {n}, {wdt!r}, {a.dtype_name!r}, "
                           f"group_size={group}, kernel='marlin')")


@register("_C::machete_mm", kind="gemm", op="weight_only_gemm")
def machete_mm(call: Call, p: Pricer) -> Priced:
    """Machete (``machete_mm(A, B, b_type, out_type, group_scales, group_zeros, group_size,
    channel_scales, ...)``): A (m x k, 16-bit), the prepacked weight (``k·n·bits/32`` int32
    words), group scales (k/group x n) or per-channel scales (n), group zero points."""
    a, b = call.tensor(0), call.tensor(1)
    if a is None or a.dtype_name not in ("bf16", "fp16") or len(a.shape) < 1 or b is None:
        return None, f"{call.name}: activation or weight not recorded"
    m, k = math.prod(a.shape[:-1]), a.shape[-1]
    scales, channel = call.tensor(4), call.tensor(7)
    if scales is not None and len(scales.shape) == 2 and scales.shape[0] > 0:
        n, groups = scales.shape[1], scales.shape[0]
    elif channel is not None and channel.numel > 0:
        n, groups = channel.numel, 1
    else:
        return None, f"{call.name}: no scales recorded to read n from"
    if min(m, k, n) <= 0 or k % groups:
        return None, f"{call.name}: empty or unexpected shapes"
    bits = round(8 * b.nbytes / (k * n))
    if bits not in (4, 8):
        return None, f"{call.name}: {bits}-bit weights not priced"
    group = k // groups if groups > 1 else 0
    zp = call.tensor(5) is not None
    wdt = "int4" if bits == 4 else "int8"
    e = p.cached(("weight_only_gemm", m, k, n, wdt, group, zp, a.dtype_name, "machete"),
                 lambda: weight_only_gemm(m, k, n, wdt, a.dtype_name, p.hardware,
                                          group_size=group, zero_points=zp,
                                          efficiency=p.efficiency, kernel="machete"))
    return [("gemm", e)], (f"rl.weight_only_gemm({m}, {k}, {n}, {wdt!r}, {a.dtype_name!r}, "
                           f"group_size={group}, zero_points={zp}, kernel='machete')")
