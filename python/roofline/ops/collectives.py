"""Collectives for tensor / expert / data parallelism: alpha-beta estimates over the scale-up link.

>>> import roofline as rl
>>> e = rl.all_reduce(64 * 2**20, ranks=8, hardware="H100 SXM")   # 64 MiB over NVLink
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .._checks import (
    ArrayLike,
    broadcast,
    checked_int_arrays,
    one_of,
    positive_float,
    positive_int_array,
)
from .._params.architecture import architecture
from .._params.resolve import resolve_hardware
from ..estimate import Estimate, from_columns
from ..hardware import Hardware, HardwareLike

__all__ = [
    "ALGORITHMS",
    "DEFAULT_LATENCY_S",
    "NCCL_LL128_CHANNEL_BYTES_PER_S",
    "NCCL_NIC_FRACTION",
    "NCCL_NVLINK5_FRACTION",
    "NCCL_NVLINK_FRACTION",
    "NVLINK5_BYTES_PER_S",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "collective_columns",
    "link_bytes_per_s",
    "nccl_ll128_channel_bytes_per_s",
    "nccl_nic_bytes_per_s",
    "nccl_nvlink_fraction",
    "reduce_scatter",
    "send_recv",
]

#: Latency paid once per communication step (seconds): the order of an NVLink hop plus the
#: synchronisation of one NCCL step. A documented constant; every function takes ``latency_s``.
DEFAULT_LATENCY_S = 1e-6
#: Share of a NIC's line rate NCCL's transfers carry over InfiniBand / RoCE (all-to-all, ring
#: collectives and pipeline sends that leave the scale-up domain): a ConnectX-7 at NDR
#: (400 Gb/s = 50 GB/s) "should achieve up to 48-49GB/s per NIC" in an all-to-all
#: (NVIDIA/nccl-tests issue #267, NCCL maintainer, 2025-01-23) and "46-48GB/s per NIC" in a
#: two-node ring (issue #290, 2025-03-03): 48 of 50 GB/s, the figure both statements
#: include (packet headers and protocol overhead). Training
#: (``transformer.estimate``, the planner) scales ``network_bytes_per_s``, the line rate, by it.
NCCL_NIC_FRACTION = 48.0 / 50.0


def nccl_nic_bytes_per_s(line_rate: float, nccl: bool = True) -> float:
    """The bytes per second a NIC of ``line_rate`` carries: NCCL's share
    (:data:`NCCL_NIC_FRACTION`) when ``nccl``, else the line rate (the alpha-beta model's)."""
    return line_rate * (NCCL_NIC_FRACTION if nccl else 1.0)
#: Share of the NVLink line rate NCCL's transfers carry (its all-to-all, ring all-gather /
#: reduce-scatter / all-reduce and pipeline sends: everything but NVLink SHARP): the NVLink
#: packet and protocol overhead is ~20 %, so H100's 450 GB/s per direction gives ~370 GB/s of
#: bus bandwidth (NCCL's maintainer, NVIDIA/nccl-tests issue #212). Training frameworks
#: (Megatron-Core, torchtitan) communicate through NCCL; serving engines' own all-reduce
#: kernels (TensorRT-LLM's custom all-reduce, vLLM's / SGLang's) are not NCCL and keep the
#: line rate, unless an inference step says ``allreduce="nccl"`` (TensorRT-LLM of 2023).
NCCL_NVLINK_FRACTION = 370.0 / 450.0
#: NCCL's share on NVLink 5 (Blackwell: 18 links of 50 GB/s per direction, 1.8 TB/s
#: bidirectional per GPU): NCCL's topology figure per sm100 link, ``SM100_NVLINK_BW`` = 40.1 GB/s
#: (``src/graph/topo.h`` from NCCL 2.25.1 on), i.e. 721.8 of 900 GB/s per direction. The same
#: file's sm90 figure (20.6 GB/s x 18 = 370.8) is the 370 GB/s above, so both shares are NCCL's
#: own per-link figure over the link's line rate. On GB200 NVL72 nvbandwidth's copy-engine peer
#: write reaches ~770 GB/s (Azure/AI-benchmarking-guide issue #7, 2025-04-16), above NCCL's
#: kernels, as on H100.
NCCL_NVLINK5_FRACTION = 40.1 / 50.0
#: Bidirectional NVLink rate per GPU from which a link is NVLink 5 (B200, GB200, B300, GB300:
#: 18 links x 2 x 50 GB/s).
NVLINK5_BYTES_PER_S = 1.8e12

_C = _core.Collective
#: Algorithm names -> core algorithm ("custom": all-reduce only).
ALGORITHMS: dict[str, Any] = {"ring": _core.CollectiveAlgo.ring,
                              "tree": _core.CollectiveAlgo.tree,
                              "nccl": _core.CollectiveAlgo.nccl,
                              "custom": _core.CollectiveAlgo.custom}
#: The algorithms of every collective but the all-reduce (vLLM's custom kernel only reduces).
_NOT_REDUCE = {k: v for k, v in ALGORITHMS.items() if k != "custom"}


def link_bytes_per_s(hardware: HardwareLike = None, bandwidth_fraction: float = 1.0) -> float:
    """Per-direction link bandwidth of one GPU: half the database's bidirectional aggregate.

    Parameters
    ----------
    hardware : Hardware or str, optional
        Accelerator whose ``interconnect_bytes_per_s`` (bidirectional aggregate per GPU, e.g.
        900 GB/s for H100 SXM NVLink 4) is used.
    bandwidth_fraction : float
        Achievable fraction of that bandwidth, in (0, 1].
    """
    fn = "link_bytes_per_s"
    frac = positive_float(fn, "bandwidth_fraction", bandwidth_fraction)
    if frac > 1:
        raise ValueError(f"{fn}: bandwidth_fraction must be in (0, 1], got {bandwidth_fraction!r}")
    hw = resolve_hardware(hardware)
    if not hw.interconnect_bytes_per_s:
        raise ValueError(
            f"{fn}: {hw.name} has no interconnect_bytes_per_s in the database; pass "
            f"link_bytes_per_s=... or hardware=hw.replace(interconnect_bytes_per_s=...)"
        )
    return hw.interconnect_bytes_per_s / 2.0 * frac


def nccl_nvlink_fraction(hardware: Hardware) -> float:
    """Share of the NVLink line rate NCCL's transfers carry on ``hardware``.

    Returns :data:`NCCL_NVLINK5_FRACTION` (40.1 / 50, NCCL's sm100 link figure) for an NVIDIA
    GPU whose ``interconnect_bytes_per_s`` is NVLink 5's 1.8 TB/s or more, else
    :data:`NCCL_NVLINK_FRACTION` (370 / 450, measured on H100's NVLink 4; also used for the
    other links, whose share is not measured here).

    Parameters
    ----------
    hardware : Hardware
        The accelerator (its ``vendor`` and ``interconnect_bytes_per_s`` are read).
    """
    if not isinstance(hardware, Hardware):
        raise TypeError(f"nccl_nvlink_fraction: hardware must be a Hardware, got {hardware!r}")
    link = hardware.interconnect_bytes_per_s or 0.0
    if hardware.vendor == "NVIDIA" and link >= NVLINK5_BYTES_PER_S:
        return NCCL_NVLINK5_FRACTION
    return NCCL_NVLINK_FRACTION


#: NCCL 2.18's LL128 ring bandwidth cap per channel (``perChMaxRingLL128Bws`` of
#: ``src/graph/tuning.cc``, NVIDIA/nccl v2.18.1-1 / v2.18.3-1, the same at 1, 2 and more
#: nodes): Volta and Ampere 20 GB/s, Hopper 36.7 GB/s; 2.18 indexes every ``sm >= 90`` part as
#: Hopper (later releases give Blackwell its own row: 2 x 36.7 in 2.25 - 2.28.3, 34.5 - 40 in
#: 2.29), sm86 / sm89 as Ampere.
NCCL_LL128_CHANNEL_BYTES_PER_S = {"volta": 20e9, "ampere": 20e9, "ada": 20e9,
                                  "hopper": 36.7e9, "blackwell": 36.7e9,
                                  "blackwell_consumer": 36.7e9}


def nccl_ll128_channel_bytes_per_s(hardware: Hardware) -> float:
    """NCCL 2.18's LL128 per-channel ring cap on ``hardware``'s architecture
    (:data:`NCCL_LL128_CHANNEL_BYTES_PER_S`); 0 (no cap) for non-NVIDIA parts."""
    return NCCL_LL128_CHANNEL_BYTES_PER_S.get(architecture(hardware), 0.0)


def _link(fn: str, hardware: HardwareLike, link: float | None, latency_s: float,
          bandwidth_fraction: float) -> tuple[float, float, str]:
    """The checked link of a collective: (bytes/s per direction, latency per step, the
    hardware's name, "" for an explicit rate without hardware)."""
    lat = positive_float(fn, "latency_s", latency_s, allow_zero=True, high=1e6)
    frac = positive_float(fn, "bandwidth_fraction", bandwidth_fraction)
    if frac > 1:
        raise ValueError(f"{fn}: bandwidth_fraction must be in (0, 1], got {bandwidth_fraction!r}")
    if link is None:
        return link_bytes_per_s(hardware, bandwidth_fraction), lat, resolve_hardware(hardware).name
    if frac != 1.0:
        raise ValueError(
            f"{fn}: bandwidth_fraction={bandwidth_fraction!r} scales the database's link rate; "
            f"with link_bytes_per_s={link!r} pass the rate already scaled"
        )
    bw = positive_float(fn, "link_bytes_per_s", link, low=1.0)
    return bw, lat, "" if hardware is None else resolve_hardware(hardware).name


def _node_args(fn: str, ranks_per_node: ArrayLike | None,
               network_bytes_per_s: float | None) -> tuple[np.ndarray, float] | None:
    """The checked ``(ranks_per_node, network_bytes_per_s)`` of a group spanning scale-up
    domains, None for one domain; each needs the other."""
    if ranks_per_node is None:
        if network_bytes_per_s is not None:
            raise ValueError(f"{fn}: network_bytes_per_s={network_bytes_per_s!r} needs "
                             "ranks_per_node (the ranks of one scale-up domain)")
        return None
    node = positive_int_array(fn, "ranks_per_node", ranks_per_node)
    if network_bytes_per_s is None:
        raise ValueError(f"{fn}: ranks_per_node={ranks_per_node!r} needs network_bytes_per_s "
                         "(the scale-out rate per GPU)")
    return node, positive_float(fn, "network_bytes_per_s", network_bytes_per_s, low=1.0)


def _run(
    fn: str,
    op: Any,
    nbytes: ArrayLike,
    ranks: ArrayLike,
    algorithm: str,
    hardware: HardwareLike,
    link: float | None,
    latency_s: float,
    bandwidth_fraction: float,
    ranks_per_node: ArrayLike | None = None,
    network_bytes_per_s: float | None = None,
) -> Estimate[Any]:
    algo = one_of(fn, "algorithm", algorithm, ALGORITHMS if fn == "all_reduce" else _NOT_REDUCE)
    spans = _node_args(fn, ranks_per_node, network_bytes_per_s)
    if spans is not None and algorithm not in ("ring", "tree", "nccl"):
        raise ValueError(f"{fn}: algorithm={algorithm!r} prices one NVLink domain; with "
                         f"ranks_per_node={ranks_per_node!r} pass algorithm='ring', 'tree' "
                         "or 'nccl'")
    sizes = {"nbytes": positive_int_array(fn, "nbytes", nbytes),
             "ranks": positive_int_array(fn, "ranks", ranks)}
    (b, r), shape = broadcast(fn, **sizes)
    bw, lat, name = _link(fn, hardware, link, latency_s, bandwidth_fraction)
    if spans is None:
        cols = _core.collective_sweep(op, algo, b, r, bw, lat)
        return from_columns(cols, shape, label=f"{fn} {algorithm}", hardware=name)
    (b, r, n), shape = broadcast(fn, **sizes, ranks_per_node=spans[0])
    cap = nccl_ll128_channel_bytes_per_s(resolve_hardware(hardware)) if (
        algorithm == "nccl" and hardware is not None) else 0.0
    cols = _core.spanning_collective_sweep(op, algo, b, r, n, bw, spans[1], lat, cap)
    return from_columns(cols, shape, label=f"{fn} {algorithm} spanning", hardware=name)


#: The collectives :func:`collective_columns` prices, by name.
_SWEPT = {"all_reduce": _C.all_reduce, "all_gather": _C.all_gather,
          "reduce_scatter": _C.reduce_scatter}


def collective_columns(name: str, nbytes: np.ndarray, ranks: np.ndarray, algorithm: str,
                       hardware: HardwareLike, link_bytes_per_s: float | None,
                       latency_s: float) -> np.ndarray | None:
    """The columns (``len(nbytes)`` x 6: time, compute, memory, overhead, FLOPs, bytes) of
    ``all_reduce`` / ``all_gather`` / ``reduce_scatter`` (``name``) over equal-length 1-d
    integer arrays: one core sweep, no Estimate. None where the function must run instead
    (an argument it rejects, with its message; a time it refuses)."""
    arrays = checked_int_arrays(1, nbytes, ranks)
    if arrays is None or name not in _SWEPT or len(nbytes) != len(ranks):
        return None
    try:
        algo = one_of(name, "algorithm", algorithm,
                      ALGORITHMS if name == "all_reduce" else _NOT_REDUCE)
        bw, lat, _ = _link(name, hardware, link_bytes_per_s, latency_s, 1.0)
    except (ValueError, TypeError):
        return None
    cols = np.stack(_core.collective_sweep(_SWEPT[name], algo, arrays[0], arrays[1], bw, lat),
                    axis=1)
    t = cols[:, 0]
    return cols if bool(np.all(np.isfinite(t) & (t >= 0))) else None


_CUSTOM_DOC = """
        ``"custom"``: vLLM's custom all-reduce (``csrc/custom_all_reduce.cuh`` after vLLM
        PR #8558, v0.6.2 - v0.6.4, which SGLang v0.4 called; one kernel of 36 blocks in a
        CUDA graph on registered buffers, a fully NVLinked group). Below 512 KiB at <= 4
        ranks, below 256 KiB at <= 8 ranks, or at 2 ranks, its one-stage kernel (start
        barrier, every rank loads the whole buffer from its ``p-1`` peers, end barrier):
        ``6.57 us + (p-1)·nbytes / (0.887·link)``; above, its two-stage kernel
        (reduce-scatter into IPC buffers, a release/acquire barrier, all-gather):
        ``12.56 us + 2(p-1)/p·nbytes / (0.468·link)``. Fixed times and link shares from
        vLLM's published 4 x H100 timings (``benchmark_device_communicators.py``, PRs
        #24111 / #24532); ``latency_s`` is not used."""

_DOC_PARAMS = """
    Parameters
    ----------
    nbytes : int or array_like of int
        {what}
    ranks : int or array_like of int
        GPUs in the group (1: no communication, zero time).
    algorithm : {{{algos}}}
        Ring (bandwidth-optimal, ``p-1`` steps per phase) or tree (recursive halving /
        doubling, ``ceil(log2 p)`` steps per phase, same bytes), each paying ``latency_s``
        per step. ``"nccl"``: NCCL's ring within one NVLink domain, priced as NCCL 2.18's
        tuning model does (``src/graph/tuning.cc`` of NVIDIA/nccl at v2.18.3-1, commit
        ea38312): each protocol costs its base latency plus a latency per ring step (LL
        6.6 + 0.6 µs, LL128 14.0 + 1.9 µs, Simple 8.4 + 3.4 µs) plus the bytes sent over
        its bus bandwidth (Simple: the link rate; LL128: 0.92 of it; LL: 1/4 of it for an
        all-reduce, 1/3 otherwise, at most 87.7 GB/s), and NCCL runs the fastest protocol;
        ``latency_s`` is not used. Not modelled: NCCL's tree and NVLS algorithms, its
        per-channel bandwidth caps; across nodes see ``ranks_per_node``.{custom}
    hardware : Hardware or str, optional
        Accelerator whose interconnect is used (default: detected / default hardware).
    link_bytes_per_s : float, optional
        Per-direction bandwidth per GPU; default half of ``hardware.interconnect_bytes_per_s``
        (the database stores the bidirectional aggregate) times ``bandwidth_fraction``.
    latency_s : float
        Latency per step, default :data:`DEFAULT_LATENCY_S` (1 µs).
    bandwidth_fraction : float
        Achievable fraction of the link bandwidth, in (0, 1] (default 1: the link's peak).
    ranks_per_node : int or array_like of int, optional
        Ranks of the group in one scale-up domain (a node: an HGX board's 8 GPUs; a DP group
        of TP 2 ranks has 4 there), a positive integer, each rank with its own NIC (a
        rail-optimised node: DGX A100 / H100 / B200, one ConnectX per GPU). With ``ranks >
        ranks_per_node`` the group spans domains (``algorithm`` ``"ring"``, ``"tree"`` or
        ``"nccl"``; needs ``network_bytes_per_s``). Default ``None``: one domain. ``"nccl"``
        across ``n = ceil(ranks / ranks_per_node)`` nodes, ``ppn = ranks / n``: NCCL 2.18's
        tuning model for a multi-node communicator (x86 Intel host), the fastest protocol of
        its ring, ``baseLat + (steps - inter)·max(NVLink hop, net overhead 1 µs, Simple 3 µs)
        + inter·hwLat[NET]`` (LL 2.7, LL128 4.0, Simple 14 µs; ``inter = n-1``, all-reduce
        ``2n``) plus the bytes over its bus (the spanning ring rate; LL a quarter, at most
        39 GB/s on 2 nodes, 20.4 beyond; LL128 0.92), and for an all-reduce of its tree
        (``2((ppn-1)·hop + floor(log2 n)·hwLat[NET])``, LL 5.0, LL128 8.5, Simple 14 µs);
        ``latency_s`` is not used. With ``hardware`` given, LL128's ring bus is also capped at
        NCCL's per-channel rate (:data:`NCCL_LL128_CHANNEL_BYTES_PER_S`: 36.7 GB/s on Hopper
        and later, 20 on Ampere) times the ring's channels, one per NIC of the node with the
        fewest ranks (``g``).
    network_bytes_per_s : float, optional
        Scale-out bandwidth of one NIC per direction, in [1, 1e30] B/s; required with
        ``ranks_per_node`` and only with it. Default ``None``.

    Returns
    -------
    Estimate
        ``time_s = steps·latency_s + bytes_sent / link_bytes_per_s``; ``memory_s`` holds the
        transfer term, ``overhead_s`` the latency term, ``bytes`` the bytes each GPU sends over
        its link (not DRAM traffic) and ``flops`` 0 (reduction arithmetic is not counted).
"""


def all_reduce(
    nbytes: ArrayLike,
    ranks: ArrayLike,
    algorithm: str = "ring",
    hardware: HardwareLike = None,
    *,
    link_bytes_per_s: float | None = None,
    latency_s: float = DEFAULT_LATENCY_S,
    bandwidth_fraction: float = 1.0,
    ranks_per_node: ArrayLike | None = None,
    network_bytes_per_s: float | None = None,
) -> Estimate[Any]:
    return _run("all_reduce", _C.all_reduce, nbytes, ranks, algorithm, hardware,
                link_bytes_per_s, latency_s, bandwidth_fraction, ranks_per_node,
                network_bytes_per_s)


all_reduce.__doc__ = (
    "Sum a buffer across ``ranks`` GPUs, every GPU ending with the result.\n"
    + _DOC_PARAMS.format(what="Bytes of the buffer on each GPU.",
                         algos='"ring", "tree", "nccl", "custom"', custom=_CUSTOM_DOC)
    + """
    Notes
    -----
    Alpha-beta model. Ring: reduce-scatter then all-gather, each GPU sends
    ``2(p-1)/p·nbytes`` in ``2(p-1)`` steps. Tree: the same bytes (pipelined double binary
    tree / Rabenseifner, NCCL's bus-bandwidth convention) in ``2·ceil(log2 p)`` steps.
    All GPUs send concurrently over their own links; no contention or topology beyond that.

    A group spanning scale-up domains (``ranks_per_node < ranks``) runs NCCL's rings as
    channels that enter a domain through one NIC, pass its ``g`` ranks over the scale-up link
    and leave through a NIC, each channel through a different NIC of the group's ranks there
    (``src/graph/search.cc`` of NVIDIA/nccl v2.18.3-1, commit ea38312: ``ncclTopoSearchRecNet``
    subtracts each channel's rate from its NIC; the search stops when the channels carry the
    GPU's NVLink total). The bus bandwidth per rank is then ``min(link_bytes_per_s, g ·
    network_bytes_per_s)``, ``g = ranks_per_node`` (``g = ranks mod ranks_per_node`` when the
    last domain holds fewer: NCCL keeps the fewest channels of any node), at the same bytes
    and steps: ``g = 1`` is a ring through one NIC per rank; a full DGX H100 (8 x 48 GB/s)
    is NVLink-bound, a DGX A100 (8 x 24 GB/s = 192 GB/s, the bus bandwidth NCCL's maintainers
    quote for it, NVIDIA/nccl issue #812) network-bound. NCCL's topology holds only the
    communicator's GPUs and all the node's NICs, and a PXN relay only runs through those GPUs,
    so the other GPUs' NICs are not used. Not modelled: NCCL's tree / NVLS / CollNet for
    multi-node all-reduces (priced as rings), and the higher latency of the network steps
    (every step pays ``latency_s``).
"""
)


def all_gather(
    nbytes: ArrayLike,
    ranks: ArrayLike,
    algorithm: str = "ring",
    hardware: HardwareLike = None,
    *,
    link_bytes_per_s: float | None = None,
    latency_s: float = DEFAULT_LATENCY_S,
    bandwidth_fraction: float = 1.0,
    ranks_per_node: ArrayLike | None = None,
    network_bytes_per_s: float | None = None,
) -> Estimate[Any]:
    return _run("all_gather", _C.all_gather, nbytes, ranks, algorithm, hardware,
                link_bytes_per_s, latency_s, bandwidth_fraction, ranks_per_node,
                network_bytes_per_s)


all_gather.__doc__ = (
    "Concatenate one shard per GPU on every GPU.\n"
    + _DOC_PARAMS.format(what="Bytes of the gathered (output) buffer on each GPU.",
                         algos='"ring", "tree", "nccl"', custom="")
    + """
    Notes
    -----
    Each GPU sends ``(p-1)/p·nbytes`` in ``p-1`` ring steps (``ceil(log2 p)`` for tree).
    Spanning domains (``ranks_per_node``): at ``min(link_bytes_per_s, g ·
    network_bytes_per_s)``, as :func:`all_reduce` explains.
"""
)


def reduce_scatter(
    nbytes: ArrayLike,
    ranks: ArrayLike,
    algorithm: str = "ring",
    hardware: HardwareLike = None,
    *,
    link_bytes_per_s: float | None = None,
    latency_s: float = DEFAULT_LATENCY_S,
    bandwidth_fraction: float = 1.0,
    ranks_per_node: ArrayLike | None = None,
    network_bytes_per_s: float | None = None,
) -> Estimate[Any]:
    return _run("reduce_scatter", _C.reduce_scatter, nbytes, ranks, algorithm, hardware,
                link_bytes_per_s, latency_s, bandwidth_fraction, ranks_per_node,
                network_bytes_per_s)


reduce_scatter.__doc__ = (
    "Sum a buffer across GPUs, each GPU keeping one shard of the result.\n"
    + _DOC_PARAMS.format(what="Bytes of the (unreduced) input buffer on each GPU.",
                         algos='"ring", "tree", "nccl"', custom="")
    + """
    Notes
    -----
    Each GPU sends ``(p-1)/p·nbytes`` in ``p-1`` ring steps (``ceil(log2 p)`` for tree).
    Spanning domains (``ranks_per_node``): at ``min(link_bytes_per_s, g ·
    network_bytes_per_s)``, as :func:`all_reduce` explains.
"""
)


def all_to_all(
    nbytes: ArrayLike,
    ranks: ArrayLike,
    hardware: HardwareLike = None,
    *,
    link_bytes_per_s: float | None = None,
    latency_s: float = DEFAULT_LATENCY_S,
    bandwidth_fraction: float = 1.0,
    ranks_per_node: int | None = None,
    network_bytes_per_s: float | None = None,
) -> Estimate[Any]:
    """Each GPU sends a distinct slice of its buffer to every GPU (MoE dispatch / combine).

    Parameters
    ----------
    nbytes : int or array_like of int
        Bytes each GPU holds to distribute (e.g. tokens·top_k·hidden·bytes for a dispatch).
    ranks : int or array_like of int
        GPUs in the group.
    hardware, link_bytes_per_s, latency_s, bandwidth_fraction
        As for :func:`all_reduce` (``link_bytes_per_s``: the scale-up link).
    ranks_per_node : int or array_like of int, optional
        Ranks of the group that share one scale-up domain (an HGX node's 8 GPUs), a positive
        integer, the group laid out in domains of consecutive ranks as Megatron-Core's expert
        groups are. With ``ranks > ranks_per_node`` the exchange spans domains (needs
        ``network_bytes_per_s``); ``ranks_per_node >= ranks``: one domain, the plain
        all-to-all. Default ``None``: one domain.
    network_bytes_per_s : float, optional
        Scale-out bandwidth per GPU and direction (its NIC), for a group spanning domains, in
        [1, 1e30] B/s; required with ``ranks_per_node`` and only with it. Default ``None``.

    Notes
    -----
    Pairwise exchange: the ``1/p`` slice for itself stays local, so each GPU sends
    ``(p-1)/p·nbytes`` in ``p-1`` steps. Uniform destinations (balanced routing) assumed.
    Spanning ``p/r`` domains of ``r = ranks_per_node``: ``(r-1)/p·nbytes`` go to the
    domain's other GPUs over the scale-up link while ``(p-r)/p·nbytes`` leave through the
    GPU's own NIC, at once: time ``max((r-1)/p·nbytes/link, (p-r)/p·nbytes/network) +
    (p-1)·latency_s`` (``_core.spanning_all_to_all_sweep``). When ``p`` is not a multiple of
    ``r`` the last domain holds ``s = p mod r`` ranks, which send ``(p-s)/p·nbytes`` through
    their NICs: the network term takes ``s`` in place of ``r`` (the slowest rank sets the
    time).
    """
    fn = "all_to_all"
    spans = _node_args(fn, ranks_per_node, network_bytes_per_s)
    if spans is None:
        return _run(fn, _C.all_to_all, nbytes, ranks, "ring", hardware,
                    link_bytes_per_s, latency_s, bandwidth_fraction)
    node, net = spans
    sizes = {"nbytes": positive_int_array(fn, "nbytes", nbytes),
             "ranks": positive_int_array(fn, "ranks", ranks)}
    broadcast(fn, **sizes)  # their own error first, as the one-domain path gives it
    bw, lat, name = _link(fn, hardware, link_bytes_per_s, latency_s, bandwidth_fraction)
    (b, r, n), shape = broadcast(fn, **sizes, ranks_per_node=node)
    cols = _core.spanning_all_to_all_sweep(b, r, n, bw, net, lat)
    return from_columns(cols, shape, label=f"{fn} spanning", hardware=name)


def send_recv(
    nbytes: ArrayLike,
    hardware: HardwareLike = None,
    *,
    link_bytes_per_s: float | None = None,
    latency_s: float = DEFAULT_LATENCY_S,
    bandwidth_fraction: float = 1.0,
) -> Estimate[Any]:
    """Point-to-point transfer of ``nbytes`` (pipeline-parallel activations).

    Notes
    -----
    One step: ``latency_s + nbytes / link_bytes_per_s``.
    """
    return _run("send_recv", _C.send_recv, nbytes, 2, "ring", hardware,
                link_bytes_per_s, latency_s, bandwidth_fraction)
