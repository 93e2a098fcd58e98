"""The programs FlashAttention-2's benchmark timed, as modules ``roofline.torch`` can price.

``benchmarks/benchmark_flash_attention.py`` of Dao-AILab/flash-attention times its "Pytorch"
rows with ``attention_pytorch``: the materialized attention of eager PyTorch, op for op
(written here in our own words from that function): q and k made contiguous per head
(``rearrange(q, 'b t h d -> (b h) t d')``, ``rearrange(k, 'b s h d -> (b h) d s')``: copies of
the strided views of the packed qkv), the scaled scores by ``baddbmm`` (beta 0 into an empty
tensor), when causal an fp32 ``triu`` mask cast to the input dtype and added, ``softmax``,
``dropout(p=0.0)`` (a no-op), ``einsum('bhts,bshd->bthd')`` (v copied per head, one ``bmm``)
and ``.to(dtype)`` (a no-op). Its backward is what autograd runs for those ops. fp16, as the
benchmark's ``dtype``.
"""

from __future__ import annotations

import math
from typing import Any


def standard_attention_module(causal: bool) -> Any:
    """FA2's benchmarked ``attention_pytorch(qkv, dropout_p=0.0, causal)`` as an nn.Module
    taking the packed ``qkv`` of shape ``(batch, seqlen, 3, heads, head_dim)``."""
    import torch

    class StandardAttention(torch.nn.Module):
        def forward(self, qkv: torch.Tensor) -> torch.Tensor:
            b, s, _, h, d = qkv.shape
            q, k, v = qkv.unbind(dim=2)
            q = q.permute(0, 2, 1, 3).reshape(b * h, s, d)
            k = k.permute(0, 2, 3, 1).reshape(b * h, d, s)
            scores = torch.empty(b * h, s, s, dtype=qkv.dtype, device=qkv.device)
            scores = torch.baddbmm(scores, q, k, beta=0, alpha=1.0 / math.sqrt(d))
            scores = scores.reshape(b, h, s, s)
            if causal:
                mask = torch.triu(torch.full((s, s), -10000.0, device=qkv.device), 1)
                scores = scores + mask.to(dtype=scores.dtype)
            attention = torch.nn.functional.dropout(torch.softmax(scores, dim=-1), 0.0)
            return torch.einsum("bhts,bshd->bthd", attention, v).to(dtype=qkv.dtype)

    return StandardAttention()


def standard_attention_time(hw_name: str, preset: str, b: int, h: int, s: int, d: int,
                            causal: bool) -> float:
    """GPU time of FA2's benchmarked eager attention, forward plus backward
    (``roofline.torch.estimate(..., mode="train")`` of :func:`standard_attention_module`)."""
    import torch

    import roofline.torch as rt

    qkv = torch.empty(b, s, 3, h, d, dtype=torch.float16, device="meta", requires_grad=True)
    est = rt.estimate(standard_attention_module(causal), (qkv,), hardware=hw_name,
                      mode="train", efficiency=preset)
    return float(est.time_s)
