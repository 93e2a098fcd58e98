"""Tokens per expert under a routing distribution: uniform, or Zipf-skewed top-k.

>>> from roofline.transformer.routing import expert_counts
>>> expert_counts(tokens=1024, experts=8, top_k=2).tolist()
[256, 256, 256, 256, 256, 256, 256, 256]
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["expert_counts", "expert_probabilities", "rank_counts"]


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
