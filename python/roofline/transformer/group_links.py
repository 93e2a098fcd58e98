"""A data-parallel or world collective of a training step over its group's links.

:func:`group_collective_s` prices each row's collective on the scale-up link where the group
fits in one node; where it spans nodes, with NCCL's own tuning model (``algorithm="nccl"`` of
:mod:`roofline.ops.collectives`: the ring's bus at ``min(NVLink, g x NIC)``, protocol, the
inter-node steps' latencies, the tree for an all-reduce, LL128's per-channel cap on the GPU's
architecture); a point-to-point send goes through the GPU's own NIC.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["group_collective_s"]


def group_collective_s(intra: np.ndarray, fn: Any, nbytes: np.ndarray,
                       ranks: np.ndarray | None, link_bw: float, net_bw: float,
                       latency_s: float, local: Any = 1, hardware: Any = None) -> np.ndarray:
    """Seconds of ``fn`` (``roofline.all_gather`` / ``reduce_scatter`` / ``all_reduce`` /
    ``send_recv``) of ``nbytes`` over each row's group of ``ranks``: where ``intra`` (the
    group fits in a node) ``fn`` over the scale-up link ``link_bw`` at ``latency_s`` per step;
    else NCCL's tuning model (``algorithm="nccl"``) over the NICs (``net_bw`` each) of its
    ``local`` ranks per node (``ranks_per_node``), or, for a point-to-point send
    (``ranks=None``), the GPU's own NIC at ``latency_s`` per step. ``hardware``: the GPU,
    whose architecture sets NCCL's LL128 per-channel cap across nodes
    (:func:`roofline.ops.collectives.nccl_ll128_channel_bytes_per_s`; None: no cap)."""
    b = np.maximum(np.ceil(nbytes), 1).astype(np.int64)
    args = (b,) if ranks is None else (b, np.asarray(ranks, dtype=np.int64))

    def run(bw: float, **span: Any) -> np.ndarray:
        return np.asarray(fn(*args, link_bytes_per_s=bw, latency_s=latency_s, **span).time_s)

    fast = run(link_bw)
    if np.all(intra):
        return fast
    if ranks is None:
        return np.where(intra, fast, run(net_bw))
    node = np.maximum(np.asarray(local, dtype=np.int64), 1)
    return np.where(intra, fast, run(link_bw, ranks_per_node=node, network_bytes_per_s=net_bw,
                                     algorithm="nccl", hardware=hardware))
