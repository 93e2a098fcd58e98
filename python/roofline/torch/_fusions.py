"""The fused kernels ``roofline.torch.estimate`` records in place of their decompositions:
``F.scaled_dot_product_attention`` (one fused attention kernel forward and backward, with its
causal flag, mask and dropout) and ``rms_norm`` (one kernel each way)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from . import _ops

__all__ = ["Fusions", "patched_sdpa"]

_shapes = _ops.shapes


class _FusedAttention(torch.autograd.Function):
    """Stands for one fused (flash / memory-efficient) attention kernel, forward and backward.

    Records the kernel's estimate and returns an empty (meta) output, so the materialized
    math path that meta tensors would otherwise take is never traced.
    """

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                rec: Any, causal: bool, masked: bool = False,
                dropout_p: float = 0.0) -> torch.Tensor:
        ctx.rec = rec
        ctx.causal = causal
        ctx.dropout_p = dropout_p
        ctx.masked = masked
        ctx.save_for_backward(q, k, v)
        _record_attention(rec, q, k, v, causal, False, masked, dropout_p)
        return q.new_empty((*q.shape[:-1], v.shape[-1]))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        q, k, v = ctx.saved_tensors
        _record_attention(ctx.rec, q, k, v, ctx.causal, True, ctx.masked, ctx.dropout_p)
        return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), None, None, None,
                None)


def _record_attention(rec: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      causal: bool, backward: bool, masked: bool = False,
                      dropout_p: float = 0.0) -> None:
    name = "scaled_dot_product_attention" + ("_backward" if backward else "")
    q4, k4, v4 = (t if t.dim() == 4 else t.reshape(-1, *t.shape[-3:]) for t in (q, k, v))
    costs = _ops.attention_cost(rec.ctx, q4, k4, v4, causal, backward, masked, dropout_p)
    dt = str(q.dtype).removeprefix("torch.")
    if costs is None:
        e = rec.ctx.traffic(sum(map(_ops.nbytes, (q, k, v))), _ops.nbytes(q), 0.0, name)
        rec.record(name, "unmodeled", e, False, _shapes((q, k, v)), dt)
        return
    for kind, e in costs:
        rec.record(name, kind, e, True, _shapes((q, k, v)), dt)


class _FusedNorm(torch.autograd.Function):
    """One fused RMSNorm kernel forward and one backward (instead of its decomposition)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: Any, rec: Any, cols: int) -> torch.Tensor:
        ctx.rec = rec
        ctx.cols = cols
        ctx.save_for_backward(x, weight if isinstance(weight, torch.Tensor) else None)
        for kind, e in _ops.rms_norm_cost(rec.ctx, x, cols, False):
            rec.record("rms_norm", kind, e, True, _shapes((x,)), str(x.dtype)[6:])
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        x, weight = ctx.saved_tensors
        rec = ctx.rec
        for kind, e in _ops.rms_norm_cost(rec.ctx, x, ctx.cols, True):
            rec.record("rms_norm_backward", kind, e, True, _shapes((x,)), str(x.dtype)[6:])
        dw = None if weight is None else torch.empty_like(weight)
        return torch.empty_like(x), dw, None, None


def _fused_sdpa(rec: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
                *args: Any, **kwargs: Any) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` as one fused kernel (same signature)."""
    try:
        drop = float(dropout_p)
    except (TypeError, ValueError):
        drop = 0.0
    out: torch.Tensor = _FusedAttention.apply(query, key, value, rec, bool(is_causal),  # type: ignore[no-untyped-call]
                                              attn_mask is not None, drop)
    return out


@contextmanager
def patched_sdpa(rec: Any, enabled: bool) -> Iterator[None]:
    """Route calls to ``F.scaled_dot_product_attention`` made inside torch's own Python
    functions (``F.multi_head_attention_forward``), which a TorchFunctionMode cannot see,
    to the fused kernel too. Restored on exit."""
    import torch.nn.functional as F

    if not enabled:
        yield
        return
    original = F.scaled_dot_product_attention

    def patched(*args: Any, **kwargs: Any) -> torch.Tensor:
        start, dispatched = len(rec.records), rec.dispatched
        try:
            return _fused_sdpa(rec, *args, **kwargs)
        finally:  # a Python function now: the function mode does not see the call
            rec.charge(start, dispatched)

    F.scaled_dot_product_attention = patched
    try:
        yield
    finally:
        F.scaled_dot_product_attention = original


class Fusions(TorchFunctionMode):
    """Replaces scaled_dot_product_attention and rms_norm by one fused kernel each."""

    def __init__(self, rec: Any, fused_attention: bool) -> None:
        super().__init__()
        self.rec = rec
        self.fused_attention = fused_attention

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        start, dispatched = len(self.rec.records), self.rec.dispatched
        try:
            return self._call(func, args, kwargs)
        finally:
            self.rec.charge(start, dispatched)

    def _call(self, func: Any, args: Any, kwargs: Any) -> Any:
        name = getattr(func, "__name__", "")
        if self.fused_attention and name == "scaled_dot_product_attention":
            return _fused_sdpa(self.rec, *args, **kwargs)
        if name == "rms_norm":
            x = args[0]
            shape = kwargs.get("normalized_shape", args[1] if len(args) > 1 else None)
            weight = kwargs.get("weight", args[2] if len(args) > 2 else None)
            if isinstance(x, torch.Tensor) and shape is not None:
                cols = 1
                for s in shape:
                    cols *= int(s)
                return _FusedNorm.apply(x, weight, self.rec, cols)  # type: ignore[no-untyped-call]
        return func(*args, **kwargs)
