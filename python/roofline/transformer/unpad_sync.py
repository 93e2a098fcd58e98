"""Host time the syncs of llm-foundry's FlashAttention-2 path expose (``attention_backend=
"flash_varlen"``, :func:`.framework_ops.flash_unpad_pad`).

Each ``unpad_input`` waits twice on the GPU (``torch.nonzero``'s count, ``max().item()``):
the stream is empty when the host returns, so the kernels it launches next run from an idle
stream until it gets ahead again. Priced as the MoE syncs are
(:func:`.moe_sync.sync_exposed_s`): each segment after a sync is a kernel sequence launched
from idle (:func:`.composer.idle_calls_s`), its ``wall - GPU`` exposed."""

from __future__ import annotations

import numpy as np

from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from ..ops.elementwise import elementwise
from .composer import idle_calls_s
from .framework_ops import UNPAD_ROW, unpad_forward
from .program import Program
from .training import recomputed_share

__all__ = ["unpad_sync_s"]


def unpad_sync_s(ops: Program, row_time_s: np.ndarray, groups: list[tuple[str, list[int]]],
                 hw: Hardware, efficiency: EfficiencyLike, recompute: int, every: int) -> float:
    """Exposed host seconds per micro-batch of the unpad syncs, forward and recomputation.

    ``ops.unpad`` = ``(t, batch, heads, kv_heads, head_dim)`` of one layer on this GPU. The
    segments after the six syncs of a layer's forward (:func:`.framework_ops.unpad_forward`;
    the last one holds the layer's attention kernel, before pad_input's zeros and index_put:
    the host is ahead from there) are
    launched from idle, one host ``kernel`` call (a torch op or cub's launch) before each
    kernel; each exposes ``wall - GPU``. Summed over the layers with the unpad row, times
    ``1 + r``, ``r`` the share of layers whose forward is recomputed
    (:func:`.training.recomputed_share` of ``recompute``, the training code). Zero without
    the row."""
    rows = [i for i, r in enumerate(ops.rows) if r[1] == UNPAD_ROW]
    if not rows or ops.unpad is None:
        return 0.0
    segs = unpad_forward(*ops.unpad)[1:]
    nums = np.array([p[0] for seg in segs for p in seg])
    reads = np.array([p[1] for seg in segs for p in seg])
    writes = np.array([p[2] for seg in segs for p in seg])
    times = np.atleast_1d(np.asarray(elementwise(nums, reads, writes, 0.0, "bf16", hw,
                                                 efficiency=efficiency).time_s, dtype=float))
    layers = 0
    attn_s = 0.0
    for i in rows:
        g = ops.rows[i][0]
        layers += len(groups[g][1])
        attn = [j for j, r in enumerate(ops.rows) if r[0] == g and r[1] == "attention"]
        attn_s = float(row_time_s[attn[0]]) if attn else 0.0
    exposed, at = 0.0, 0
    for n, seg in enumerate(segs):
        seq = list(times[at:at + len(seg)])
        at += len(seg)
        if n == len(segs) - 1:  # the varlen kernel runs before pad_input's two kernels
            seq.insert(len(seq) - 2, attn_s)
        wall = idle_calls_s([0.0, *seq], hw, efficiency)
        exposed += max(wall - float(np.sum(seq)), 0.0)
    redo = float(recomputed_share(recompute, layers if layers else 1, every))
    return exposed * layers * (1.0 + redo)
