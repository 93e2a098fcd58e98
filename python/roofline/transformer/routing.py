"""Tokens per expert under a routing distribution: uniform, or Zipf-skewed top-k.

>>> from roofline.transformer.routing import expert_counts
>>> expert_counts(tokens=1024, experts=8, top_k=2).tolist()
[256, 256, 256, 256, 256, 256, 256, 256]
"""

from __future__ import annotations

import functools
import math
import numbers
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from .._errors import ArgumentValueError
from .program import Program

__all__ = ["MOE_ROUTERS", "RoutingSpread", "capacity_counts", "expected_max_normal",
           "expert_capacity", "expert_counts", "expert_probabilities",
           "moe_router_option", "random_routing_spread", "rank_counts", "ranks_hit",
           "record_router", "sampled_counts", "token_ranks", "touched_counts",
           "touched_experts"]

#: The routers ``transformer.estimate(moe_router=...)`` names. ``"topk"``: a learned gate
#: (gating GEMM, score function, top-k; Megatron-Core's ``TopKRouter``), balanced as
#: ``routing_skew`` says. ``"force_balanced"``: the same kernels with
#: ``moe_router_force_load_balancing`` (random logits: a token's experts are a uniform
#: ``k``-subset, the counts binomial, :func:`random_routing_spread`), as Megatron-Bridge's
#: benchmark rows run. ``"fake_balanced"``: NeMo AutoModel's ``FakeBalancedGate``
#: (``nemo_automodel/components/moe/layers.py`` @ 89e3a9fdd, its benchmark configs'
#: ``fake_balanced_gate: true``): no gating GEMM and no top-k; token ``i`` of a rank's ``t``
#: goes to experts ``(i·k + j) mod E``, ``j < k``, weights ``1/k``.
MOE_ROUTERS = ("topk", "force_balanced", "fake_balanced")


def moe_router_option(fn: str, router: object, phase: str, is_moe: bool, skew: object = 0.0,
                      capacity: tuple[float, bool] | None = None) -> str:
    """``router`` if it names one of :data:`MOE_ROUTERS` (a ValueError naming ``moe_router``
    otherwise). ``"force_balanced"`` and ``"fake_balanced"`` apply to the training of an MoE
    model; ``"force_balanced"`` replaces the learned router's logits by random ones, so
    ``routing_skew`` must be 0, and prices the dropless layer (a capacity fixes the counts)."""
    if not isinstance(router, str) or router not in MOE_ROUTERS:
        raise ValueError(f"{fn}: moe_router must be one of {MOE_ROUTERS}, got {router!r}")
    if router != "topk" and (phase != "train" or not is_moe):
        raise ValueError(f"{fn}: moe_router={router!r} applies to phase='train' of an MoE "
                         f"model, got phase={phase!r}")
    if router == "force_balanced" and skew != 0:
        raise ArgumentValueError(fn, "moe_router", "'force_balanced' replaces the router's "
                                 f"logits by random ones: routing_skew must be 0, got {skew!r}")
    if router == "force_balanced" and capacity is not None:
        raise ArgumentValueError(fn, "moe_router", "'force_balanced' prices dropless routing: "
                                 f"moe_capacity_factor must be None, got {capacity[0]!r}")
    return router


def record_router(ops: Program, g: int, t: int, hid: int, experts: int, k: int) -> None:
    """Record the router of one MoE layer over ``t`` tokens (``ops.router``). ``"topk"``:
    Megatron-Core's ``TopKRouter``, its gating GEMM (``router_gating_linear``, TE's
    general_gemm in the router dtype, outside fp8_autocast's modules: never quantized) and one
    top-k kernel. ``"fake_balanced"``: ``FakeBalancedGate``'s six ``t·k`` kernels,
    ``ones`` (fp32), ``/ k``, ``arange`` (int64), ``% E``, ``+ skip_first_n_experts`` and
    ``type_as(x)``, with no backward (the gate does not read ``x``: nothing to save)."""
    if ops.router == "fake_balanced":
        n = float(t * k)
        ops.passes(g, "fake gate", [(n, 0, 2), (n, 2, 2), (n, 0, 4), (n, 4, 4), (n, 4, 4),
                                    (n, 2, 1)], [])
        return
    ops.linear(g, "router", t, hid, experts, cat="rep", lowp=not ops.train)
    ops.elementwise(g, "topk", t * experts, reads=1, writes=1)


def ranks_hit(experts: int, k: int, ep: int) -> float:
    """Probability that one rank of ``ep`` (``experts / ep`` experts each) holds at least one
    of a token's ``k`` experts when they are a uniform ``k``-subset of ``experts``:
    ``1 - C(experts - experts/ep, k) / C(experts, k)`` (1 when ``k`` exceeds the others)."""
    others = experts - experts // ep
    return 1.0 - (math.comb(others, k) / math.comb(experts, k) if k <= others else 0.0)


def token_ranks(experts: int, k: int, ep: int, router: str = "topk") -> float:
    """Mean number of the ``ep`` expert-parallel ranks (``experts / ep`` experts each) that
    hold at least one of a token's ``k`` experts: the copies of a token a deduplicating
    dispatcher (HybridEP, DeepEP) sends, one per rank it reaches.

    ``router="topk"``: a uniform ``k``-subset, ``ep·ranks_hit(experts, k, ep)``.
    ``"fake_balanced"`` (AutoModel's gate): token ``i``'s experts are the ``k`` consecutive
    ``(i·k + j) mod E``; the experts are placed in contiguous blocks (rank ``r`` holds
    ``[r·E/ep, (r+1)·E/ep)``: ``Shard(0)`` of the expert dimension, AutoModel's
    ``ExpertParallel``), so a token reaches the blocks its window touches, averaged over the
    ``E / gcd(E, k)`` window starts ``(i·k) mod E`` a rank's tokens cycle through (a rank
    routes thousands of tokens, so every start occurs equally often).

    ``ep`` may be any split of the ranks into equal groups of consecutive ranks: with the
    nodes (``ep // ranks_per_node`` groups), the nodes a token reaches, DeepEP's internode
    (RDMA) copies of it.

    >>> token_ranks(128, 8, 8, "fake_balanced")  # Qwen3-30B-A3B, EP 8: one rank per token
    1.0
    >>> token_ranks(256, 8, 64, "fake_balanced")  # DeepSeek-V3, EP 64: two ranks
    2.0
    """
    if router != "fake_balanced":
        return ep * ranks_hit(experts, k, ep)
    block = experts // ep
    starts = experts // math.gcd(experts, k)
    touched = sum(len({((s * k + j) % experts) // block for j in range(k)})
                  for s in range(starts))
    return touched / starts


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
                    capacity: tuple[float, bool] | None, skew: float = 0.0,
                    sampled: bool = False) -> tuple[np.ndarray, float]:
    """Rows per local expert of the busiest expert-parallel rank and the rows one rank sends
    (its permute's output, the dispatch all-to-all's send buffer), with or without a capacity.

    ``capacity=None`` (dropless): the ``tokens·ep·top_k`` assignments of the EP group split as
    :func:`expert_counts` says, the busiest rank's experts (:func:`rank_counts`), or with
    ``sampled`` (random router logits, ``skew`` 0) as :func:`sampled_counts` says; a rank sends
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
        local = (sampled_counts(tokens, experts, top_k, ep) if sampled else
                 rank_counts(expert_counts(tokens * ep, experts, top_k, skew), ep))
        return local, float(tokens * top_k)
    c = expert_capacity(tokens, experts, top_k, capacity[0])
    if capacity[1]:
        return np.full(experts // ep, ep * c, dtype=np.int64), float(experts * c)
    kept = np.minimum(expert_counts(tokens * ep, experts, top_k, skew), ep * c)
    return rank_counts(kept, ep), float(kept.sum()) / ep


@functools.cache
def expected_max_normal(n: int) -> float:
    """Expected largest of ``n`` independent standard normal draws,
    ``c_n = int x · n·phi(x)·Phi(x)^(n-1) dx`` (trapezoid rule on [-10, 10], 20,001 points;
    cached by ``n``).

    >>> round(expected_max_normal(2), 4)  # 1 / sqrt(pi)
    0.5642
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"expected_max_normal: n must be a positive integer, got {n!r}")
    x = np.linspace(-10.0, 10.0, 20001)
    phi = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    y = x * int(n) * phi * cdf ** (int(n) - 1)
    return float(np.sum((y[1:] + y[:-1]) * 0.5 * np.diff(x)))


class RoutingSpread(NamedTuple):
    """Per-expert and per-rank rows of one MoE layer under random (force-balanced) routing."""

    expert_mean: float  #: rows per expert, ``N·k/E``
    expert_sd: float  #: their standard deviation
    rank_mean: float  #: rows per expert-parallel rank, ``N·k/ep``
    rank_sd: float  #: their standard deviation
    busiest_excess: float  #: expected rows of the busiest rank over ``rank_mean``, a fraction


def random_routing_spread(tokens: int, experts: int, top_k: int, ep: int) -> RoutingSpread:
    """Spread of the token counts when every token's ``k`` experts are a uniform ``k``-subset.

    Megatron-Core's ``moe_router_force_load_balancing`` (``RandomSTE``, ``moe_utils.py``
    92c8482) replaces the router logits with iid normal draws (seed 42 + global rank) before the
    top-k: each token then picks a uniform ``k``-subset of the ``E`` experts, independently of
    every other token. With ``N = tokens·ep`` tokens in the expert-parallel group:

    * expert ``i``'s rows are Binomial(``N``, ``p = k/E``): mean ``N·p``, variance
      ``N·p·(1 - p)``;
    * rank ``r`` (``L = E/ep`` experts) counts, per token, how many of its experts the token
      chose, hypergeometric: variance ``k·(L/E)·(1 - L/E)·(E - k)/(E - 1)`` per token, ``N``
      times that per rank; mean ``N·k/ep``;
    * the ranks' loads sum to ``N·k`` exactly, so (normal, exchangeable) they are ``Z_r - Z̄``
      of iid normals of variance ``s²·ep/(ep - 1)`` and the busiest rank's expected excess is
      ``s·c_ep·sqrt(ep/(ep - 1))`` (``c_ep``: :func:`expected_max_normal`), ``s`` the rank sd.

    Every MoE layer draws anew and its combine all-to-all waits for the busiest rank, so that
    rank's expected rows, not the mean, set the layer's expert time: priced with
    ``estimate(moe_router="force_balanced")`` (:func:`sampled_counts`; hardware-notes section 46).

    Parameters
    ----------
    tokens : int
        Tokens one EP rank routes (the layer's ``t``).
    experts, top_k, ep : int
        Routed experts ``E``, experts per token ``k`` (``k <= E``), EP ranks (dividing ``E``).
    """
    fn = "random_routing_spread"
    for name, v in (("tokens", tokens), ("experts", experts), ("top_k", top_k), ("ep", ep)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{fn}: {name} must be a positive integer, got {v!r}")
    e, k = int(experts), int(top_k)
    if k > e:
        raise ValueError(f"{fn}: top_k must be at most experts ({e}), got {k}")
    if e % int(ep):
        raise ValueError(f"{fn}: ep must divide experts ({e}), got {ep!r}")
    n = float(tokens) * int(ep)
    p, share = k / e, 1.0 / int(ep)
    rank_var = n * k * share * (1.0 - share) * ((e - k) / (e - 1) if e > 1 else 0.0)
    rank_mean = n * k * share
    excess = 0.0
    if int(ep) > 1:
        excess = math.sqrt(rank_var) * expected_max_normal(int(ep)) \
            * math.sqrt(int(ep) / (int(ep) - 1.0)) / rank_mean
    return RoutingSpread(n * p, math.sqrt(n * p * (1.0 - p)), rank_mean, math.sqrt(rank_var),
                         excess)


def sampled_counts(tokens: int, experts: int, top_k: int, ep: int) -> np.ndarray:
    """Rows of each local expert on the busiest EP rank under random (force-balanced) routing.

    The rank carries its expected maximum, ``N k/ep (1 + busiest_excess)`` rows
    (:func:`random_routing_spread`); its ``L = E/ep`` experts spread around their share as
    binomial counts do, expert ``j`` at the normal score ``z_j = Phi^-1((j + 1/2)/L)``:
    ``share + expert_sd·z_j``, rounded, the rounding put on the largest. Each expert's GEMM
    then has the tile remainder real counts have (they are almost never whole tiles).
    """
    s = random_routing_spread(tokens, experts, top_k, ep)
    n_local = int(experts) // int(ep)
    target = int(round(s.rank_mean * (1.0 + s.busiest_excess)))
    z = np.array([NormalDist().inv_cdf((j + 0.5) / n_local) for j in range(n_local)])
    counts = np.maximum(np.rint(target / n_local + s.expert_sd * z), 0).astype(np.int64)
    counts[-1] += target - int(counts.sum())
    return np.asarray(np.minimum(counts, int(tokens) * int(ep)))
