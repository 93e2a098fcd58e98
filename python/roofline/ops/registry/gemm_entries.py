"""Entries of matrix products and convolutions: :func:`roofline.gemm` from the operand shapes."""

from __future__ import annotations

import math
from typing import Any

from ..grouped_gemm import grouped_gemm
from .call import Call, TensorArg
from .memory_entries import stream
from .pricer import Pricer
from .table import Priced, register

#: ScalarType codes (as a trace records a dtype argument) -> roofline dtype.
SCALAR_TYPE = {5: "fp16", 6: "fp32", 15: "bf16", 23: "fp8", 24: "e5m2"}


def _shape(t: TensorArg | None) -> list[int]:
    return list(t.shape) if t is not None else []


def _transposed(t: TensorArg | None) -> bool:
    """Whether a matrix operand is a transposed view (column-major: its last two strides are
    (1, rows)), as ``grad_output.t()`` in a weight gradient: its rows, not K, set its stride."""
    if t is None or t.stride is None or len(t.shape) < 2 or len(t.stride) != len(t.shape):
        return False
    return t.stride[-2] == 1 and t.stride[-1] != 1 and t.shape[-2] > 1


def _how(m: int, k: int, n: int, dt: str, batch: int, kw: dict[str, Any]) -> str:
    return f"rl.gemm({m}, {k}, {n}, dtype={dt!r}" + (f", batch={batch}" if batch > 1 else "") \
        + "".join(f", {key}={v!r}" for key, v in kw.items()) + ")"


@register("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
          "aten::linear", "aten::_scaled_mm", kind="gemm", op="gemm")
def matmul(call: Call, p: Pricer) -> Priced:
    """(M, K, N, batch) from the two operands (``addmm`` / ``baddbmm``: after the bias);
    ``_scaled_mm``: fp8 with tensorwise / rowwise scaling from ``scale_a``'s shape."""
    op = call.name
    a_i = 1 if call.base in ("addmm", "baddbmm") else 0
    ta, tb = call.tensor(a_i), call.tensor(a_i + 1)
    a, b = _shape(ta), _shape(tb)
    dt = ta.dtype_name if ta is not None else None
    if dt is None:
        return None, f"{op}: input type not priced"
    kw: dict[str, Any] = {}
    if call.base == "linear":
        if len(a) < 1 or len(b) != 2:
            return None, f"{op}: unexpected shapes {a}, {b}"
        m, k, n, batch = math.prod(a[:-1]), a[-1], b[0], 1
    elif call.base == "matmul" and len(a) >= 2 and len(b) == 2:
        m, k, n, batch = math.prod(a[:-1]), a[-1], b[1], 1
    elif len(a) == 2 and len(b) == 2:
        m, k, n, batch = a[0], a[1], b[1], 1
    elif len(a) >= 3 and len(b) >= 3 and a[:-2] == b[:-2]:
        m, k, n, batch = a[-2], a[-1], b[-1], math.prod(a[:-2])
    else:
        return None, f"{op}: unexpected shapes {a}, {b}"
    if min(m, k, n, batch) == 0:
        return [], f"{op}: empty product"
    if call.base == "_scaled_mm":
        if dt not in ("fp8", "e5m2"):
            return None, f"{op}: input type {dt} not priced"
        sa = _shape(call.tensor(2))
        if math.prod(sa) <= 1:
            kw["scaling"] = "tensorwise"
        elif sa and sa[0] == m and math.prod(sa) == m:
            kw["scaling"] = "rowwise"
        else:
            return None, f"{op}: block-scaled inputs (scale_a {sa}) not mapped"
        dt = "fp8"  # e4m3 and e5m2 run at the same fp8 rate
        if call.outputs:
            kw["out_dtype"] = call.outputs[0].dtype_name
        else:
            code = call.arg("out_dtype", 6, "")
            if str(code).isdigit() and int(code) in SCALAR_TYPE:
                kw["out_dtype"] = SCALAR_TYPE[int(code)]
    if call.base in ("mm", "addmm", "bmm", "baddbmm") and _transposed(ta):
        kw["a_transposed"] = True
    e = p.gemm(int(m), int(k), int(n), dt, batch=int(batch), out=kw.get("out_dtype"),
               scaling=kw.get("scaling"), a_transposed=kw.get("a_transposed", False))
    return [("gemm", e)], _how(m, k, n, dt, batch, kw)


def _conv_dims(call: Call, out_spatial: int) -> tuple[int, int, int, int]:
    """Implicit-GEMM (M, K, N, groups) of a forward convolution."""
    x, w = call.arg("input"), call.arg("weight")
    groups = int(call.arg("groups", default=1))
    batch = int(x.shape[0])
    kernel = math.prod(int(s) for s in w.shape[2:])
    if bool(call.arg("transposed", default=False)):
        # weight: (C_in, C_out/groups, *k); each input pixel scatters into C_out·k outputs
        m = batch * math.prod(int(s) for s in x.shape[2:])
        return m, int(w.shape[0]) // groups, int(w.shape[1]) * kernel, groups
    c_out, c_in_g = int(w.shape[0]), int(w.shape[1])
    return batch * out_spatial, c_in_g * kernel, c_out // groups, groups


@register("aten::convolution", "aten::_convolution", "aten::cudnn_convolution", kind="conv",
          op="gemm")
def convolution(call: Call, p: Pricer) -> Priced:
    """Forward convolution as one implicit GEMM (needs the output shape: the live path)."""
    if call.outputs is None:  # a trace: no output shape, one pass over the recorded inputs
        return stream(call, p, "pointwise", "memory")
    x = call.arg("input")
    if not isinstance(x, TensorArg) or x.dtype_name is None or not call.outputs:
        return None, f"{call.name}: no output shape to price"
    m, k, n, g = _conv_dims(call, math.prod(call.outputs[0].shape[2:]))
    if min(m, k, n) == 0:
        return [], f"{call.name}: empty"
    return [("conv", p.gemm(m, k, n, x.dtype_name, batch=g))], f"rl.gemm({m}, {k}, {n})"


@register("aten::convolution_backward", kind="conv", op="gemm")
def convolution_backward(call: Call, p: Pricer) -> Priced:
    """grad_input = dY · W^T, grad_weight = X^T · dY (as ``output_mask`` asks), bias grad."""
    x, gy = call.arg("input"), call.arg("grad_output")
    if not isinstance(x, TensorArg) or x.dtype_name is None or not isinstance(gy, TensorArg):
        return None, f"{call.name}: input type not priced"
    dt = x.dtype_name
    m, k, n, g = _conv_dims(call, math.prod(gy.shape[2:]))
    mask = list(call.arg("output_mask", default=[True, True, True]))
    costs: list[tuple[str, Any]] = []
    if mask[0]:
        costs.append(("conv", p.gemm(m, n, k, dt, batch=g)))
    if mask[1]:
        costs.append(("conv", p.gemm(k, m, n, dt, batch=g)))
    if len(mask) > 2 and mask[2]:
        costs.append(("reduction", p.traffic(gy.nbytes, 0, gy.numel, "bias grad")))
    return costs, "convolution backward as implicit GEMMs"


def even_counts(rows: int, groups: int) -> tuple[int, ...]:
    """``rows`` split over ``groups`` as evenly as integers allow (the first ``rows % groups``
    groups get one more): the token counts of uniform routing."""
    base, extra = divmod(int(rows), int(groups))
    return tuple(base + (1 if i < extra else 0) for i in range(int(groups)))


@register("aten::_grouped_mm", kind="gemm", op="grouped_gemm")
def grouped_mm(call: Call, p: Pricer) -> Priced:
    """``_grouped_mm(mat_a, mat_b, offs)``: (M, K) rows grouped by ``offs`` times G (K, N)
    weights, as :func:`roofline.grouped_gemm`. The group offsets are data (unknown on meta
    tensors and in a trace): the M rows are split evenly over the G groups (uniform routing).
    A 3-d ``mat_a`` (G, M, K) is G equal groups; a 2-d ``mat_b`` (the weight gradient, K x N
    per group from (K, M) x (M, N)) is priced with the rows as the reduction, split evenly
    over the groups, through the same grouped kernel (torch runs its CUTLASS grouped GEMM and
    setup kernel for 2D x 2D too, with the tile chosen from M and N: GroupMM.cu)."""
    ta, tb = call.tensor(0), call.tensor(1)
    if ta is None or tb is None or ta.dtype_name is None:
        return None, f"{call.name}: input types not priced"
    a, b = list(ta.shape), list(tb.shape)
    dt: str = ta.dtype_name
    if len(a) == 2 and len(b) == 3:  # forward / dgrad: rows grouped
        g, k, n = b
        counts = even_counts(a[0], g)
    elif len(a) == 3 and len(b) == 3:
        g, m, k = a
        n = b[2]
        counts = (m,) * g
    elif len(a) == 2 and len(b) == 2:  # wgrad: (K, M) x (M, N), M grouped
        offs = call.tensor(2)
        g = offs.shape[0] if offs is not None and offs.shape else 1
        k_total = a[1]
        if min(a[0], k_total, b[1], g) == 0:
            return [], f"{call.name}: empty"
        k_per = max(k_total // g, 1)
        e = p.cached(("grouped_wgrad", a[0], k_per, b[1], g, dt), lambda: grouped_gemm(
            a[0], k_per, b[1], g, dtype=dt, hardware=p.hardware, efficiency=p.efficiency))
        return [("gemm", e)], \
            f"rl.grouped_gemm({a[0]}, {k_per}, {b[1]}, {g}, dtype={dt!r}) (weight gradient)"
    else:
        return None, f"{call.name}: unexpected shapes {a}, {b}"
    if min(g, k, n) == 0 or sum(counts) == 0:
        return [], f"{call.name}: empty"
    e = p.cached(("grouped", counts, k, n, dt), lambda: grouped_gemm(
        None, k, n, dtype=dt, hardware=p.hardware, counts=counts, efficiency=p.efficiency))
    return [("gemm", e)], f"rl.grouped_gemm(counts={counts[:4]}..., k={k}, n={n}, dtype={dt!r})"
