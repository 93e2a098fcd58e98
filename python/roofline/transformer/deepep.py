"""DeepEP's normal-mode (training) dispatcher as Megatron-Core's flex dispatcher runs it:
``moe_dispatcher="deepep"`` (``moe_token_dispatcher_type="flex"`` with
``moe_flex_dispatcher_backend="deepep"``; older releases ``moe_enable_deepep=True``), the
dispatcher of Megatron-Bridge's Hopper MoE presets (issue #24).

Read at DeepEP v1.2.1 (9af0e0d, the tag Megatron-LM core_v0.15.0's
``docker/Dockerfile.ci.dev`` checks out) and Megatron-LM 92c8482 (Megatron-Bridge 25.11) /
core_v0.15.0 (``megatron/core/transformer/moe/token_dispatcher.py`` ``_DeepepManager``,
``fused_a2a.py``; the DeepEP parts are the same in both). Per MoE layer, forward:

- ``dispatch_preprocess`` (``@jit_fuser``, one compiled call): the routing map and probabilities
  expanded over the TPxEP group and ``setup_metadata``'s ``torch.topk`` of the probabilities to
  top-k indices (one kernel): the ``deepep preprocess`` launches of
  :func:`.moe_host.moe_extra_launches`;
- ``FusedDispatch``: ``Buffer.get_dispatch_layout`` (``layout.cu``: one kernel reads the int64
  top-k indices, writes the per-rank and per-expert counts and the ``tokens x ranks``
  ``is_token_in_rank`` map: our ``deepep layout`` row), then ``Buffer.dispatch``
  (``csrc/deep_ep.cpp`` ``intranode_dispatch`` / ``internode_dispatch``): the
  ``notify_dispatch`` kernel exchanges the counts with every peer (3 barrier rounds; our
  ``deepep notify``), and the CPU busy-waits on the mapped host counter ``moe_recv_counter``
  (and the per-expert counters) until the kernel has written the received-token counts
  (``num_worst_tokens`` is 0: Megatron passes none), allocates the receive buffers, and launches
  the ``dispatch`` kernel (our ``dispatch all_to_all``): one host wait before it
  (:data:`.moe_sync.SYNC_POINTS`). The kernel sends each token once to every rank holding one
  of its experts (not once per expert) with its int64 top-k indices, fp32 weights and int32
  source index; across nodes (more than 8 ranks, ``NUM_MAX_NVL_PEERS``) it sends a token once
  per destination node over RDMA, to the GPU of the same index, which forwards it over NVLink
  to the node's ranks that hold its experts;
- ``dispatch_postprocess``: with ``enable_megatron_core_experimental`` (the DeepSeek-V3 perf
  config, ``deepseek_llm_pretrain.py`` @5776a6d) ``fused_indices_to_multihot`` (one Triton
  kernel, ``fused_indices_converter.py``; our ``deepep multihot``) and TE's fused permute with
  probabilities (``sort chunks by expert``); its output size comes from the host's counts (a
  CPU tensor): no wait;
- ``combine_preprocess``: TE's fused unpermute, summing a token's local expert rows
  (``unsort chunks``); ``FusedCombine``: ``cached_notify_combine`` (2 barrier rounds) and the
  ``combine`` kernel, which sends one row per token and rank back and sums them (no weighted
  sum after; a shared expert's output is added).

Backward: ``FusedDispatch.backward`` is ``Buffer.combine`` with the handle (barrier and combine
kernels, the fp32 top-k weights' gradients too) and ``FusedCombine.backward`` a cached
``Buffer.dispatch`` (``cached_notify_dispatch``, 2 rounds, and the dispatch kernel): the counts
are in the handle, no host wait. ``fused_indices_to_multihot``'s backward is one kernel.

Pricing (:func:`deepep_columns`, ``_core.deepep_exchange_sweep``): the bytes at the step's
NVLink rate (NCCL's share of the line rate, as the model's other NVLink transfers: DeepEP's
README @9af0e0d measures 153 / 158 GB/s dispatch / combine on H800, whose ~160 GB/s "maximum"
is 200 GB/s x 370/450 = 164 GB/s: the check in ``tests/test_deepep.py``) and, across nodes,
the NIC rate; one signal hop (``latency_s``) per synchronisation round. The SMs DeepEP holds
(``moe_deepep_num_sms``, 20 by default: 10 channels of a sender and a receiver SM) matter only
where its kernels run beside compute (:data:`.moe_overlap.DEEPEP_COMM_SMS`); in the plain
schedule they run alone. Not priced: DeepEP's Python-side calls (the ``autograd.Function``
calls and CUDA events around each exchange), and without ``enable_megatron_core_experimental``
``_indices_to_multihot``'s boolean indexing and ``repeat_interleave``, which wait on the host
three more times per layer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _core
from ..estimate import from_columns
from .program import Program
from .routing import token_ranks

__all__ = ["DEEPEP_ROUNDS", "deepep_columns", "deepep_combine", "deepep_dispatch",
           "hybridep_columns", "hybridep_dedup", "node_share"]

#: Synchronisation rounds (barriers across the peers) of each DeepEP kernel, by program op:
#: ``notify_dispatch`` 3 (``intranode.cu`` / ``internode.cu`` @9af0e0d: a barrier before
#: writing the counts, one after, one after cleaning the buffers), ``cached_notify_dispatch``
#: / ``cached_notify_combine`` / ``cached_notify`` 2, the dispatch and combine kernels 1 (their
#: chunked queues signal each chunk's tail; the last one is the round left exposed).
DEEPEP_ROUNDS = {"deepep_notify": 3.0, "deepep_barrier": 2.0, "deepep_dispatch": 1.0,
                 "deepep_combine": 1.0}

#: Per-row metadata bytes of a forward dispatch (int64 top-k index and fp32 weight per chosen
#: expert, int32 source index) and of the backward combine (the weights' fp32 gradients).
_INDEX_BYTES, _WEIGHT_BYTES, _SRC_BYTES = 8.0, 4.0, 4.0


def node_share(experts: int, k: int, ep: int, local: int, router: str = "topk") -> float:
    """Rows a GPU sends over RDMA per destination node over rows per destination rank: with
    ``N = ep / local`` nodes of ``experts / N`` experts each, ``N·P(node hit) / (ep·P(rank
    hit))`` (:func:`.routing.ranks_hit`; uniform ``k``-subsets, force-balanced routing), the
    nodes over the ranks a token reaches (:func:`.routing.token_ranks`) under ``router``; 1
    when the group fits one node."""
    if local >= ep:
        return 1.0
    return token_ranks(experts, k, ep // local, router) / token_ranks(experts, k, ep, router)


def _record_node_share(ops: Program, e: int, k: int, ep: int, needs: str) -> None:
    """Set ``ops.deepep_node_share`` (:func:`node_share`; 1 inside one node) for a dispatcher
    whose path across nodes ``needs`` ``ep`` a multiple of the GPUs per node (a ValueError
    naming ``moe_dispatcher`` otherwise)."""
    local = ops.ep_span[0] if ops.ep_span is not None else ep
    if ep > local and ep % local:
        raise ValueError(f"moe_dispatcher={ops.dispatcher!r}: {needs} ep a multiple of the "
                         f"GPUs per node, got ep={ep}, gpus_per_node={local}")
    ops.deepep_node_share = node_share(e, k, ep, local, ops.router)


def deepep_dispatch(ops: Program, g: int, t: int, e: int, k: int, ep: int, hid: int,
                    act_bytes: float, rows: float) -> float:
    """Record DeepEP's forward dispatch of one MoE layer (module docstring): the layout
    kernel, the notify kernel (the host waits after it) and the dispatch kernel, whose
    backward is the barrier and combine kernels. ``rows``: the busiest rank's rows sent or
    received, one per token and chosen expert; DeepEP sends ``rows·ep·P(rank hit)/k`` (one per
    token and rank). Returns those rows."""
    _record_node_share(ops, e, k, ep, "DeepEP's internode kernels need")
    sent = rows * token_ranks(e, k, ep, ops.router) / k  # AutoModel's gate: its windows
    # reads t·k int64 indices (4 elements each), writes t·ep bools (the passes' reads and
    # writes are whole tensors: a kernel's bytes are priced as one stream of elements)
    ops.passes(g, "deepep layout", [(math.ceil(t * (k * 4.0 + ep / 2.0)), 1.0, 0.0)], [])
    counts = 4.0 * ep * (ep + e // ep)  # rank prefix matrix and per-expert counts (int32)
    ops.exchange(g, "deepep notify", [("deepep_notify", counts, ep)], [])
    meta = k * (_INDEX_BYTES + _WEIGHT_BYTES) + _SRC_BYTES
    ops.exchange(g, "dispatch all_to_all",
                 [("deepep_dispatch", sent * (hid * act_bytes + meta), ep)],
                 [("deepep_barrier", 0.0, ep),
                  ("deepep_combine", sent * (hid * act_bytes + k * _WEIGHT_BYTES), ep)])
    # fused_indices_to_multihot: reads k indices and weights (12 B), writes the local experts'
    # bool map, fp32 probabilities and int32 positions (9 B) per row; its backward reads the
    # probabilities' gradient and positions (8 B), writes k fp32 gradients
    local_e = e / ep
    ops.passes(g, "deepep multihot", [(math.ceil(sent * (k * 6.0 + local_e * 4.5)), 1.0, 0.0)],
               [(math.ceil(sent * (local_e * 4.0 + k * 2.0)), 1.0, 0.0)])
    return sent


def deepep_combine(ops: Program, g: int, ep: int, hid: int, act_bytes: float,
                   sent: float) -> None:
    """Record DeepEP's combine: the barrier and combine kernels; its backward the cached
    dispatch (barrier and dispatch kernels: the hidden rows and source indices)."""
    ops.exchange(g, "combine all_to_all",
                 [("deepep_barrier", 0.0, ep), ("deepep_combine", sent * hid * act_bytes, ep)],
                 [("deepep_barrier", 0.0, ep),
                  ("deepep_dispatch", sent * (hid * act_bytes + _SRC_BYTES), ep)])


def deepep_columns(comms: list[tuple[str, float, float]], span: tuple[int, float] | None,
                   share: float, link_bytes_per_s: float, latency_s: float,
                   hardware: Any) -> Any:
    """The :data:`DEEPEP_ROUNDS` kernels ``comms`` (``(op, bytes, ranks)``) as one Estimate
    over them: ``_core.deepep_exchange_sweep`` at ``link_bytes_per_s`` (NVLink) and, spanning
    nodes (``span``: GPUs per node, NIC bytes/s), the NIC rate, ``share``
    :func:`node_share`."""
    sizes = np.array([float(math.ceil(nb)) for _, nb, _ in comms])
    ranks = np.array([float(r) for _, _, r in comms])
    rounds = np.array([DEEPEP_ROUNDS[op] for op, _, _ in comms])
    local, net = (float(span[0]), float(span[1])) if span is not None else (
        float(ranks.max()), 0.0)
    cols = _core.deepep_exchange_sweep(sizes, ranks, rounds, local, share, link_bytes_per_s,
                                       net, latency_s)
    return from_columns(cols, sizes.shape, label="deepep exchange", hardware=hardware)


def hybridep_dedup(ops: Program, e: int, k: int, ep: int) -> float:
    """HybridEP's rows per token and destination rank over rows per token: the ranks a token
    reaches over ``k`` (:func:`.routing.token_ranks` under ``ops.router``). An EP group wider
    than a node (``ops.ep_span``; H100 presets: DeepSeek-V3's EP64, Qwen3-30B-A3B's EP16)
    runs HybridEP's RDMA path (DeepEP hybrid-ep
    1dddd19, "Add RDMA support for hybrid-EP", the commit Megatron-Bridge 26.02 runs:
    ``hybrid_ep_backend.cuh``'s ``attn_to_rdma_map`` holds one entry per token and remote node):
    a token crosses the NIC once per destination node and is forwarded over NVLink there, as
    DeepEP's internode kernels; the per-node share of the rows (:func:`node_share`) is recorded
    for :func:`hybridep_columns`."""
    _record_node_share(ops, e, k, ep, "HybridEP's RDMA path needs")
    return token_ranks(e, k, ep, ops.router) / k


def hybridep_columns(nbytes: float, ranks: int, span: tuple[int, float], share: float,
                     link_bytes_per_s: float, peer_latency_s: float, hardware: Any) -> Any:
    """HybridEP's dispatch or combine across nodes (:func:`hybridep_dedup`), one Estimate:
    ``_core.deepep_exchange_sweep``'s hierarchical exchange (the node's share at
    ``link_bytes_per_s``, the RDMA rows once per destination node at the NIC rate of ``span``,
    both at once) with one handshake per peer HybridEP signals, the node's other GPUs and the
    other nodes: ``(local - 1) + (nodes - 1)`` rounds at its per-peer cost ``peer_latency_s``
    (:data:`.pricing.HYBRIDEP_PEER_S`, fitted on NVLink; not checked across nodes)."""
    local, net = float(span[0]), float(span[1])
    rounds = (local - 1.0) + (ranks / local - 1.0)
    cols = _core.deepep_exchange_sweep(
        np.array([float(math.ceil(nbytes))]), np.array([float(ranks)]), np.array([rounds]),
        local, share, link_bytes_per_s, net, peer_latency_s)
    return from_columns(cols, (), label="hybridep exchange", hardware=hardware)
