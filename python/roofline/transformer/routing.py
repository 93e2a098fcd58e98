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
           "rank_counts", "ranks_hit", "touched_counts", "touched_experts"]


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
    return np.asarray(per_rank[_busiest(counts, ep)])


def _busiest(counts: np.ndarray, ep: int) -> int:
    """The rank :func:`rank_counts` models: the most tokens, the lowest rank on a tie."""
    return int(np.argmax(counts.reshape(-1, ep).T.sum(axis=1)))


def touched_experts(tokens: int, experts: int, top_k: int, skew: float = 0.0,
                    ep: int = 1) -> float:
    """Expected experts of the busiest expert-parallel rank that at least one token chooses.

    Each of the ``tokens·ep`` tokens of the group picks its ``top_k`` experts independently of
    the others; expert ``i`` is among a token's picks with probability ``pi_i = min(1,
    top_k·p_i)`` (``p_i`` of :func:`expert_probabilities`: ``top_k/experts`` when uniform), so
    it is touched with probability ``1 - (1 - pi_i)^(tokens·ep)``, and the rank's expected
    count is the sum over its experts (``i mod ep``; the rank :func:`rank_counts` picks),
    at least ``top_k`` with one rank. Exact for uniform routing; under skew the marginals
    ``min(1, k·p_i)`` are the share model's, not a top-k sampler's.

    Uniform routing, one rank: ``E·(1 - (1 - k/E)^b)``; Mixtral (E = 8, k = 2) at b = 1, 8,
    64 tokens: 2, 7.199, 8.000 (7.99999992).

    >>> round(touched_experts(8, 8, 2), 4)
    7.1991
    """
    n = int(tokens) * int(ep)
    p = np.minimum(top_k * expert_probabilities(experts, skew), 1.0)
    hit = np.ones_like(p)  # an expert every token picks (k·p_i >= 1) is always touched
    some = p < 1.0
    hit[some] = -np.expm1(n * np.log1p(-p[some]))  # 1 - (1 - p)^n
    rank = _busiest(expert_counts(n, experts, top_k, skew), ep)
    touched = float(hit.reshape(-1, ep).T[rank].sum())
    # a token's k picks are distinct: one rank holding every expert sees at least k (the cap
    # of k·p_i at 1 under a steep skew would count fewer)
    return max(touched, float(min(top_k, experts))) if ep == 1 else touched


def _spread(rows: int, shares: np.ndarray) -> tuple[int, ...]:
    """``rows`` over ``len(shares)`` experts, one each and the rest by share (largest
    remainder, ties to the hotter expert)."""
    x = len(shares)
    share = shares / shares.sum() * (rows - x)
    counts = np.floor(share).astype(np.int64)
    left = rows - x - int(counts.sum())
    if left:
        counts[np.argsort(-(share - counts), kind="stable")[:left]] += 1
    return tuple(int(c) + 1 for c in counts)


def touched_counts(local: np.ndarray, touched: float, skew: float = 0.0, ep: int = 1
                   ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], float] | None]:
    """The busiest rank's expert rows with the expected number of experts touched: ``(counts,
    alternative)``, the step priced as ``(1 - w)·price(counts) + w·price(alt)`` where
    ``alternative = (alt, w)``, or ``price(counts)`` when it is None.

    ``local`` are the rank's rows per expert as :func:`capacity_counts` spreads them (the
    largest-remainder split touches ``min(E_local, rows)`` experts: every expert at
    ``tokens·k >= E``); ``touched`` the expected experts with a token
    (:func:`touched_experts`), ``D <= `` that. With ``D`` not below the experts ``local``
    uses (to 1e-9), ``local`` is returned unchanged (prefill, large batches). Otherwise
    the same rows go to ``ceil(D)`` experts (``counts``) and to ``floor(D)`` (``alt``, weight
    ``ceil(D) - D``), the hottest of the rank's experts in ``local``'s order, one row each and
    the rest by the rank's routing shares (``i^-skew`` of global expert ``i``; even when
    uniform); ``ceil(D)`` equal to the experts ``local`` uses keeps ``local``. What a
    grouped kernel reads per expert with tokens (its weights) is then linear in ``D``: the
    expectation of a step whose weight bytes follow the experts touched.
    """
    rows = int(local.sum())
    used = int(np.count_nonzero(local))
    if touched >= used - 1e-9 or rows <= 0:
        return tuple(int(c) for c in local if c > 0), None
    lo = max(int(np.floor(touched + 1e-9)), 1)
    frac = touched - lo
    ranks = np.arange(local.size) * ep + 1.0  # global experts r, r + ep, ... (1-based)
    shares = ranks ** -float(skew)

    def over(x: int) -> tuple[int, ...]:
        if x >= used:
            return tuple(int(c) for c in local if c > 0)
        return _spread(rows, shares[:x])
    if frac < 1e-9:
        return over(lo), None
    return over(lo + 1), (over(lo), 1.0 - frac)


def ranks_hit(experts: int, k: int, ep: int) -> float:
    """Probability that one rank of ``ep`` (``experts / ep`` experts each) holds at least one
    of a token's ``k`` experts when they are a uniform ``k``-subset of ``experts``:
    ``1 - C(experts - experts/ep, k) / C(experts, k)`` (1 when ``k`` exceeds the others)."""
    others = experts - experts // ep
    return 1.0 - (math.comb(others, k) / math.comb(experts, k) if k <= others else 0.0)


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
