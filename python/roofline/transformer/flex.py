"""PyTorch FlexAttention as NeMo AutoModel's GPT-OSS runs it (``attention_backend="flex"``):
the compiled Triton template over a BlockMask of 128 x 128 blocks, and the eager ops around it
(the head-major copies of Q, K, V and the output, the attention sinks' rescale)."""

from __future__ import annotations

import math
from typing import Any

from .. import _core
from .._errors import ArgumentValueError
from .config import TransformerConfig
from .program import Program

__all__ = ["FLEX_BLOCK", "flex_attention", "flex_block_fraction", "flex_visited_blocks"]

#: BlockMask block side (``create_block_mask``'s default ``BLOCK_SIZE``, torch 2.8).
FLEX_BLOCK = 128  # the core's kFlexBlock


def flex_visited_blocks(q_len: int, kv_len: int, window: int = 0) -> int:
    """BlockMask blocks FlexAttention computes per (sequence, head).

    Parameters
    ----------
    q_len, kv_len : int
        Query and key lengths (decode: ``q_len < kv_len``, the queries the last ones).
    window : int
        0: causal (``kv_idx <= q_idx``); else the causal sliding window of AutoModel's
        ``_get_sliding_window_mask_mod`` (``kv_idx <= q_idx`` and ``q_idx - kv_idx < window``).

    Returns
    -------
    int
        Blocks holding at least one kept pair (each computed whole; fully masked ones skipped).

    Notes
    -----
    :func:`roofline._core.flex_visited_blocks`: query block ``i`` visits key blocks
    ``floor((i·b - window + 1) / b) .. i`` (causal: ``0 .. i``). ``q = kv = n·b``: causal
    ``n(n+1)/2``, window ``w <= b``: ``2n - 1``.
    """
    for name, v in (("q_len", q_len), ("kv_len", kv_len)):
        if type(v) is not int or v <= 0:
            raise ArgumentValueError("flex_visited_blocks", name,
                                     f"must be a positive integer, got {v!r}")
    if type(window) is not int or window < 0:
        raise ArgumentValueError("flex_visited_blocks", "window",
                                 f"must be a non-negative integer (0: causal), got {window!r}")
    return int(_core.flex_visited_blocks(q_len, kv_len, window))


def flex_block_fraction(q_len: int, kv_len: int, window: int = 0) -> float:
    """Share of the ``ceil(q/b)·ceil(kv/b)`` blocks of the dense ``q x kv`` attention that
    FlexAttention computes (:func:`flex_visited_blocks` over all blocks)."""
    blocks = math.ceil(q_len / FLEX_BLOCK) * math.ceil(kv_len / FLEX_BLOCK)
    return flex_visited_blocks(q_len, kv_len, window) / blocks


def flex_attention(ops: Program, g: int, attn: str, window: int, batch: int, heads: int,
                   kv_heads: int, q: int, kv: int, d: int, attn_kw: dict[str, Any],
                   cfg: TransformerConfig) -> None:
    """One layer's FlexAttention as AutoModel's ``FlexAttention.forward`` (89e3a9fdd) runs it.

    Rows recorded:

    - ``flex q/k/v transpose``: ``q.transpose(1, 2).contiguous()`` for Q, K and V and the
      output's transpose back (one copy kernel each; autograd copies the gradients back);
    - ``attention (flex ...)``: the template kernel, priced as the dense (non-causal)
      ``q x kv`` attention at FlexAttention's rates (``ops.attention(backend="flex")``)
      scaled by :func:`flex_block_fraction` (its FLOPs and K/V loads are those of the visited
      blocks); the activations it saves are not scaled;
    - ``flex sinks rescale`` (``cfg.attention_sinks``): ``out * sigmoid(lse - w)`` in eager PyTorch:
      ``lse - w`` and ``sigmoid`` over ``B·H·S`` fp32 rows, the multiply promoting the bf16
      output to fp32 (bf16 x fp32), ``.to(bf16)``; backward: the cast's, the multiply's two
      gradients (``grad·scale`` cast to bf16, ``(grad·out).sum(-1)``) and the rows' chain
      back to the LSE, which the template's backward takes (its delta pre-pass).

    ``attn`` is ``"full"`` (causal) or ``"sliding"`` (``window`` keys); chunked attention is
    refused; the broadcast ``[B, H, S, 1]`` scale (``1/d`` of the elements) and the
    reduction's row output are not counted in the ``B·H·S·d`` kernels' bytes. Context
    parallelism is not modeled with FlexAttention (no K/V exchange is recorded). Elements
    in 2-byte units (an fp32 tensor counts 2)."""
    if attn not in ("full", "sliding"):
        raise ArgumentValueError("estimate", "attention_backend",
                                 f"'flex' prices causal and sliding-window layers, got a "
                                 f"{attn!r} layer")
    w = window if attn == "sliding" else 0
    t = batch * q
    ops.passes(g, "flex q/k/v/o transpose", [(t * heads * d, 1.0, 1.0),
                                             (t * kv_heads * d, 1.0, 1.0),
                                             (t * kv_heads * d, 1.0, 1.0),
                                             (t * heads * d, 1.0, 1.0)],
               [(t * heads * d, 1.0, 1.0), (t * kv_heads * d, 1.0, 1.0),
                (t * kv_heads * d, 1.0, 1.0), (t * heads * d, 1.0, 1.0)])
    frac = flex_block_fraction(q, kv, w)
    kw = dict(attn_kw, causal=False, backend="flex",
              scale=attn_kw.get("scale", 1.0) * frac)
    name = "attention (flex causal)" if w == 0 else f"attention (flex sliding {w})"
    ops.attention(g, name, batch=batch, heads=heads, kv_heads=kv_heads, q_len=q, kv_len=kv,
                  head_dim=d, save_scale=attn_kw.get("scale", 1.0), **kw)
    if cfg.attention_sinks:
        rows, n = t * heads, t * heads * d
        ops.passes(g, "flex sinks rescale",
                   [(rows, 2, 2), (rows, 2, 2),  # lse - w, sigmoid (fp32)
                    (n, 1, 2),                   # out (bf16) * scale -> fp32
                    (n, 2, 1)],                  # .to(bf16)
                   [(n, 1, 2),                   # the cast's backward (to fp32)
                    (n, 2, 1),                   # grad * scale -> bf16
                    (n, 3, 0),                   # (grad * out).sum(-1): fp32 grad, bf16 out
                    (rows, 4, 2), (rows, 2, 2)],  # sigmoid', sub' (the LSE's gradient)
                   saved=rows * 2.0)
