"""Map one aten op (its function, arguments and output) to roofline estimates.

Every handler returns a list of ``(kind, Estimate)`` pairs (one per kernel it stands for), an
empty list for ops that launch no kernel (views, ``empty``, ``detach``), or ``None`` when the
op is not modeled (the caller then estimates it from the bytes of its tensors and lists it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import torch

import roofline as rl
from roofline.estimate import Estimate

Costs = list[tuple[str, Estimate]]

#: torch dtypes our op functions know, by their roofline name.
_DTYPES: dict[torch.dtype, str] = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.bfloat16: "bf16",
    torch.float16: "fp16",
    torch.float8_e4m3fn: "fp8",
    torch.float8_e5m2: "e5m2",
    torch.int8: "int8",
}
for _name in ("float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = "fp8" if "e4m3" in _name else "e5m2"

#: Ops that launch no kernel (metadata, allocation, autograd bookkeeping).
FREE_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "_unsafe_view",
    "detach", "lift_fresh", "alias", "_reshape_alias", "sym_size", "sym_stride", "sym_numel",
    "sym_storage_offset", "_local_scalar_dense", "scalar_tensor", "wait_tensor", "set_",
    "resize_", "_to_copy_meta",
})

#: Ops that stream their tensors once through DRAM (copies, fills, gathers, casts).
MEMORY_OPS = frozenset({
    "_to_copy", "copy_", "clone", "contiguous", "cat", "stack", "index_select", "gather",
    "scatter", "scatter_add", "index", "index_put", "index_put_", "index_add", "masked_fill",
    "masked_fill_", "tril", "triu", "fill_", "zero_", "zeros", "ones", "full", "zeros_like",
    "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "select_backward",
    "slice_backward", "split_with_sizes_copy", "constant_pad_nd", "repeat", "roll", "flip",
    "where", "bernoulli_", "native_dropout", "native_dropout_backward", "arange", "rand",
    "randn", "rand_like", "randn_like", "uniform_", "normal_",
})


def dtype_name(dt: torch.dtype) -> str | None:
    """The roofline name of a torch dtype, or None when our models have no peak for it."""
    return _DTYPES.get(dt)


def nbytes(t: Any) -> int:
    """Bytes of a tensor (0 for anything else)."""
    if isinstance(t, torch.Tensor):
        return int(t.numel()) * int(t.element_size())
    return 0


def tensors(obj: Any) -> list[torch.Tensor]:
    """Every tensor in nested lists / tuples / dicts."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in tensors(o)]
    return []


@dataclasses.dataclass
class Context:
    """Hardware and efficiency every estimate of one run uses, with a cache per call."""

    hardware: Any
    efficiency: Any
    ranks: int | None = None
    cache: dict[Any, Any] = dataclasses.field(default_factory=dict)

    def cached(self, key: Any, make: Callable[[], Estimate]) -> Estimate:
        if key not in self.cache:
            self.cache[key] = make()
        out: Estimate = self.cache[key]
        return out

    def gemm(self, m: int, k: int, n: int, dt: str, batch: int = 1, out: str | None = None
             ) -> Estimate:
        key = ("gemm", m, k, n, dt, batch, out)
        return self.cached(key, lambda: rl.gemm(
            m, k, n, dtype=dt, hardware=self.hardware, batch=batch, out_dtype=out,
            efficiency=self.efficiency))

    def traffic(self, read_bytes: int, write_bytes: int, flops: float = 0.0,
                label: str = "") -> Estimate:
        """One streaming kernel that reads and writes these bytes (and does ``flops``)."""
        total = int(read_bytes) + int(write_bytes)
        key = ("traffic", total, float(flops), label)

        def make() -> Estimate:
            e = rl.elementwise(max(total, 1), reads=1, writes=0,
                               flops_per_element=float(flops) / max(total, 1), dtype="int8",
                               hardware=self.hardware, efficiency=self.efficiency)
            return dataclasses.replace(e, label=label)

        return self.cached(key, make)


def _bind(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Arguments by their schema names."""
    names = [a.name for a in func._schema.arguments]
    out = dict(zip(names, args, strict=False))
    out.update(kwargs)
    return out


def _gemm_dtype(t: torch.Tensor) -> str | None:
    return dtype_name(t.dtype)


def _mm(ctx: Context, a: torch.Tensor, b: torch.Tensor, out: Any) -> Costs | None:
    dt = _gemm_dtype(a)
    if dt is None or a.dim() != 2 or b.dim() != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    if min(m, k, n) == 0:
        return []
    return [("gemm", ctx.gemm(int(m), int(k), int(n), dt))]


def _bmm(ctx: Context, a: torch.Tensor, b: torch.Tensor) -> Costs | None:
    dt = _gemm_dtype(a)
    if dt is None or a.dim() != 3 or b.dim() != 3:
        return None
    bt, m, k = a.shape
    n = b.shape[2]
    if min(bt, m, k, n) == 0:
        return []
    return [("gemm", ctx.gemm(int(m), int(k), int(n), dt, batch=int(bt)))]


def _scaled_mm(ctx: Context, p: dict[str, Any], out: Any) -> Costs | None:
    a, b = p["self"], p["mat2"]
    dt = _gemm_dtype(a)
    if dt is None or dt not in ("fp8", "e5m2"):
        return None
    od = dtype_name(out.dtype) if isinstance(out, torch.Tensor) else None
    m, k = a.shape
    n = b.shape[1]
    return [("gemm", ctx.gemm(int(m), int(k), int(n), dt, out=od))]


def _conv_dims(p: dict[str, Any]) -> tuple[int, int, int, int]:
    """Implicit-GEMM (M, K, N, groups) of a forward convolution."""
    x, w = p["input"], p["weight"]
    groups = int(p.get("groups", 1))
    transposed = bool(p.get("transposed", False))
    batch = int(x.shape[0])
    kernel = math.prod(int(s) for s in w.shape[2:])
    if transposed:
        # weight: (C_in, C_out/groups, *k); each input pixel scatters into C_out·k outputs
        c_in = int(w.shape[0])
        c_out_g = int(w.shape[1])
        m = batch * math.prod(int(s) for s in x.shape[2:])
        return m, c_in // groups, c_out_g * kernel, groups
    c_out, c_in_g = int(w.shape[0]), int(w.shape[1])
    out_spatial = p["_out_spatial"]
    return batch * out_spatial, c_in_g * kernel, c_out // groups, groups


def _conv(ctx: Context, p: dict[str, Any], out: Any) -> Costs | None:
    dt = _gemm_dtype(p["input"])
    if dt is None or not isinstance(out, torch.Tensor):
        return None
    p["_out_spatial"] = math.prod(int(s) for s in out.shape[2:])
    m, k, n, g = _conv_dims(p)
    if min(m, k, n) == 0:
        return []
    return [("conv", ctx.gemm(m, k, n, dt, batch=g))]


def _conv_backward(ctx: Context, p: dict[str, Any]) -> Costs | None:
    dt = _gemm_dtype(p["input"])
    if dt is None:
        return None
    p["_out_spatial"] = math.prod(int(s) for s in p["grad_output"].shape[2:])
    m, k, n, g = _conv_dims(p)
    mask = list(p.get("output_mask", [True, True, True]))
    costs: Costs = []
    if mask[0]:
        costs.append(("conv", ctx.gemm(m, n, k, dt, batch=g)))   # grad_input = dY · W^T
    if mask[1]:
        costs.append(("conv", ctx.gemm(k, m, n, dt, batch=g)))   # grad_weight = X^T · dY
    if len(mask) > 2 and mask[2]:
        gy = p["grad_output"]
        costs.append(("reduction", ctx.traffic(nbytes(gy), 0, gy.numel(), "bias grad")))
    return costs


def attention_cost(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   causal: bool, backward: bool, layout: str = "bhsd") -> Costs | None:
    """A fused attention kernel (forward or backward) from Q, K, V of either layout."""
    dt = dtype_name(q.dtype)
    if dt is None or q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return None
    if layout == "bhsd":
        b, h, sq, d = (int(s) for s in q.shape)
        hk, skv = int(k.shape[1]), int(k.shape[2])
    else:  # (batch, seq, heads, dim): the _flash_attention_* / _efficient_attention_* ops
        b, sq, h, d = (int(s) for s in q.shape)
        skv, hk = int(k.shape[1]), int(k.shape[2])
    dv = int(v.shape[-1])
    if min(b, h, sq, skv, d, dv) == 0:
        return []
    if hk == 0 or h % hk:
        return None
    key = ("attn", b, h, hk, sq, skv, d, dv, causal, backward, dt)
    e = ctx.cached(key, lambda: rl.attention(
        b, h, sq, skv, d, kv_heads=hk, v_head_dim=dv, causal=bool(causal), flash=True,
        backward=backward, dtype=dt, hardware=ctx.hardware, efficiency=ctx.efficiency))
    return [("attention", e)]


def _norm(ctx: Context, kind: str, x: torch.Tensor, cols: int, backward: bool) -> Costs:
    """Layer / RMS norm or softmax over the last ``cols`` elements of each row."""
    dt = dtype_name(x.dtype)
    numel = int(x.numel())
    if numel == 0:
        return []
    rows = max(numel // max(cols, 1), 1)
    fn = getattr(rl, kind, None)
    if fn is not None and dt is not None:
        key = (kind, rows, cols, dt, backward)
        try:
            # An eager module runs aten's kernels (re-reads, one CTA per row for long softmax
            # rows, log_softmax + nll_loss): the row ops' "eager" backend.
            kw: dict[str, Any] = {"dtype": dt, "hardware": ctx.hardware,
                                  "efficiency": ctx.efficiency, "backend": "eager"}
            if backward:
                kw["backward"] = True
            e = ctx.cached(key, lambda: fn(rows, cols, **kw))
            return [("softmax" if kind == "softmax" else "norm", e)]
        except TypeError:
            pass  # an op function without backward=: fall through to the traffic model
    b = nbytes(x)
    # forward: read x, write y; backward: read x (or y) and dy, write dx
    reads, writes = (2 * b, b) if backward else (b, b)
    label = f"{kind}{' bwd' if backward else ''}"
    return [("softmax" if kind == "softmax" else "norm",
             ctx.traffic(reads, writes, 5.0 * numel, label))]


def _collective(ctx: Context, name: str, p: dict[str, Any], out: Any) -> Costs | None:
    x = p.get("input")
    if not isinstance(x, torch.Tensor):
        return None
    ranks = p.get("group_size") or ctx.ranks
    if ranks is None:
        try:
            from torch.distributed.distributed_c10d import _resolve_process_group

            ranks = _resolve_process_group(p["group_name"]).size()
        except Exception:
            return None
    fns: dict[str, Callable[..., Estimate]] = {
        "all_reduce": rl.all_reduce, "all_gather_into_tensor": rl.all_gather,
        "reduce_scatter_tensor": rl.reduce_scatter, "all_to_all_single": rl.all_to_all,
    }
    fn = fns.get(name.rstrip("_"))
    if fn is None:
        return None
    size = nbytes(out) if name.startswith("all_gather") else nbytes(x)
    if size == 0:
        return []
    return [("collective", fn(size, int(ranks), hardware=ctx.hardware))]


def costs(ctx: Context, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
          ) -> Costs | None:
    """Estimates of the kernels one aten op launches (see the module docstring)."""
    name = func.__name__.split(".")[0]
    namespace = getattr(func, "namespace", "aten")
    if name in FREE_OPS:
        return []
    returns = func._schema.returns
    if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        return []  # a view
    p = _bind(func, args, kwargs)
    if namespace in ("_c10d_functional", "c10d_functional", "c10d"):
        return _collective(ctx, name, p, out)
    if name in ("mm", "matmul"):
        return _mm(ctx, p["self"], p["mat2"], out)
    if name == "addmm":
        return _mm(ctx, p["mat1"], p["mat2"], out)
    if name == "bmm":
        return _bmm(ctx, p["self"], p["mat2"])
    if name == "baddbmm":
        return _bmm(ctx, p["batch1"], p["batch2"])
    if name == "_scaled_mm":
        return _scaled_mm(ctx, p, out)
    if name in ("convolution", "_convolution", "cudnn_convolution"):
        return _conv(ctx, p, out)
    if name == "convolution_backward":
        return _conv_backward(ctx, p)
    if "attention" in name and "query" in p:
        backward = name.endswith("_backward")
        layout = "bhsd" if name.startswith("_scaled_dot_product") else "bshd"
        return attention_cost(ctx, p["query"], p["key"], p["value"],
                              bool(p.get("is_causal", False)), backward, layout)
    if name in ("native_layer_norm", "native_layer_norm_backward"):
        x = p["input"]
        cols = math.prod(int(s) for s in p["normalized_shape"])
        return _norm(ctx, "layernorm", x, cols, name.endswith("backward"))
    if name in ("_fused_rms_norm", "_fused_rms_norm_backward", "rms_norm"):
        x = p.get("input", p.get("grad_out"))
        if not isinstance(x, torch.Tensor):
            return None
        cols = math.prod(int(s) for s in p.get("normalized_shape", [x.shape[-1]]))
        return _norm(ctx, "rmsnorm", x, cols, name.endswith("backward"))
    if name in ("_softmax", "_safe_softmax", "_log_softmax", "_softmax_backward_data",
                "_log_softmax_backward_data"):
        x = p.get("self", p.get("grad_output"))
        if not isinstance(x, torch.Tensor):
            return None
        dim = int(p.get("dim", -1))
        return _norm(ctx, "softmax", x, int(x.shape[dim]) if x.dim() else 1,
                     name.endswith("_data"))
    if name in ("embedding", "embedding_dense_backward"):
        ins = [t for t in tensors(args) if t is not p.get("weight")]
        return [("embedding", ctx.traffic(sum(nbytes(t) for t in ins),
                                          sum(nbytes(t) for t in tensors(out)), 0.0, name))]
    tags = getattr(func, "tags", ())
    read = sum(nbytes(t) for t in tensors(args) + tensors(kwargs))
    written = sum(nbytes(t) for t in tensors(out))
    if torch.Tag.pointwise in tags:
        numel = max((int(t.numel()) for t in tensors(out)), default=0)
        return [("elementwise", ctx.traffic(read, written, float(numel), name))]
    if torch.Tag.reduction in tags or name in ("sum", "mean", "amax", "amin", "var_mean",
                                               "nll_loss_forward", "nll_loss_backward"):
        flops = sum(int(t.numel()) for t in tensors(args))
        return [("reduction", ctx.traffic(read, written, float(flops), name))]
    if name in MEMORY_OPS:
        return [("memory", ctx.traffic(read, written, 0.0, name))]
    return None
