"""Tokens per expert under a routing distribution: uniform, or Zipf-skewed top-k.

>>> from roofline.transformer.routing import expert_counts
>>> expert_counts(tokens=1024, experts=8, top_k=2).tolist()
[256, 256, 256, 256, 256, 256, 256, 256]
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["capacity_counts", "expert_capacity", "expert_counts", "expert_probabilities",
           "rank_counts", "ranks_hit"]


def expert_probabilities(experts: int, skew: float = 0.0) -> np.ndarray:
    """Share of routed assignments each expert receives, hottest first.

    Parameters
    ----------
    experts : int
        Routed experts ``E``.
    skew : float
        Zipf exponent ``s >= 0``: expert ``i`` (1-based) gets a share proportional to
        ``i**-s``. ``0`` is uniform routing (the load-balanced ideal).

    Notes
    -----
    ``p_i = i^-s / sum_j j^-s``. Real routers sit between: DeepSeek-V3's auxiliary-loss-free
    balancing keeps the hottest expert within a small factor of the mean (``s`` of a few
    tenths), an unbalanced router can reach ``s ~ 1``.
    """
    if not isinstance(skew, numbers.Real) or isinstance(skew, bool) or not 0 <= skew <= 10:
        raise ValueError(f"routing: routing_skew must be a number in [0, 10], got {skew!r}")
    w = np.arange(1, experts + 1, dtype=np.float64) ** -float(skew)
    return w / w.sum()


def expert_counts(tokens: int, experts: int, top_k: int, skew: float = 0.0) -> np.ndarray:
    """Integer tokens routed to each expert: ``tokens·top_k`` assignments split by share.

    Largest-remainder rounding keeps the total exact; with fewer assignments than experts
    (small decode batches) some experts receive none, as in a real step.
    """
    n = int(tokens) * int(top_k)
    share = expert_probabilities(experts, skew) * n
    counts = np.floor(share).astype(np.int64)
    left = n - int(counts.sum())
    if left:
        order = np.argsort(-(share - counts), kind="stable")
        counts[order[:left]] += 1
    # top-k picks distinct experts: no expert can see more than every token once
    return np.asarray(np.minimum(counts, int(tokens)))


def rank_counts(counts: np.ndarray, ep: int) -> np.ndarray:
    """Per-expert counts of the most loaded expert-parallel rank (round-robin placement).

    Expert ``i`` lives on rank ``i mod ep``, so the hottest experts spread over ranks; the
    rank with the most tokens sets the step time (every rank waits for it).
    """
    per_rank = counts.reshape(-1, ep).T  # rank r holds experts r, r+ep, ...
    return np.asarray(per_rank[int(np.argmax(per_rank.sum(axis=1)))])


def expert_capacity(tokens: int, experts: int, top_k: int, factor: float) -> int:
    """Rows one rank may send each expert under token dropping, Megatron-Core's
    ``get_capacity(num_tokens=tokens·top_k, num_experts, capacity_factor)``
    (``megatron/core/transformer/moe/moe_utils.py``, core_v0.11-0.15):
    ``C = ceil((tokens·top_k / experts) · factor)``, evaluated in that order.

    >>> expert_capacity(tokens=8192, experts=8, top_k=2, factor=1.0)
    2048
    >>> expert_capacity(tokens=1000, experts=64, top_k=6, factor=1.25)
    118
    """
    return math.ceil((int(tokens) * int(top_k) / int(experts)) * float(factor))


def capacity_counts(tokens: int, experts: int, top_k: int, ep: int,
                    capacity: tuple[float, bool] | None, skew: float = 0.0
                    ) -> tuple[np.ndarray, float]:
    """Rows per local expert of the busiest expert-parallel rank and the rows one rank sends
    (its permute's output, the dispatch all-to-all's send buffer), with or without a capacity.

    ``capacity=None`` (dropless): the ``tokens·ep·top_k`` assignments of the EP group split as
    :func:`expert_counts` says, the busiest rank's experts (:func:`rank_counts`); a rank sends
    ``tokens·top_k`` rows. ``(factor, False)`` (token dropping, Megatron-Core's
    ``topk_softmax_with_capacity`` without padding): each source rank keeps at most ``C``
    (:func:`expert_capacity` of its ``tokens``) of an expert's rows, so the group's count of
    expert ``i`` becomes ``min(n_i, ep·C)`` (every rank routes alike: ``n_i / ep`` each); a rank
    sends ``sum_i min(n_i, ep·C) / ep``. ``(factor, True)`` (``pad_to_capacity``: the capacity
    mask is the routing map): every expert gets exactly ``ep·C`` rows, padding included, and
    every rank sends ``experts·C``, whatever the routing skew. ``tokens``: those one EP
    rank routes (the layer's ``t``); with tensor parallelism Megatron-Core's TP ranks each
    take the capacity of ``t/tp`` tokens and all-gather, ``tp·ceil(t/tp·k/E·F)`` rows, here
    ``ceil(t·k/E·F)`` (the rounding of each TP rank not followed).
    """
    if capacity is None:
        return rank_counts(expert_counts(tokens * ep, experts, top_k, skew), ep), \
            float(tokens * top_k)
    c = expert_capacity(tokens, experts, top_k, capacity[0])
    if capacity[1]:
        return np.full(experts // ep, ep * c, dtype=np.int64), float(experts * c)
    kept = np.minimum(expert_counts(tokens * ep, experts, top_k, skew), ep * c)
    return rank_counts(kept, ep), float(kept.sum()) / ep


def ranks_hit(experts: int, k: int, ep: int) -> float:
    """Probability that one rank of ``ep`` (``experts / ep`` experts each) holds at least one
    of a token's ``k`` experts when they are a uniform ``k``-subset of ``experts``:
    ``1 - C(experts - experts/ep, k) / C(experts, k)`` (1 when ``k`` exceeds the others)."""
    others = experts - experts // ep
    return 1.0 - (math.comb(others, k) / math.comb(experts, k) if k <= others else 0.0)
