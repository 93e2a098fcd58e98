"""Which kernels each block of a transformer launches per phase: the attention block (MHA /
GQA / MLA, absorbed MLA in decode), the dense and MoE MLPs and the embedding / head, with the
tensor-, expert- and context-parallel collectives between them."""

from __future__ import annotations

import functools
import math
from typing import Any

from .. import _core
from . import framework_ops, routing
from .config import TransformerConfig
from .deepep import deepep_combine, deepep_dispatch, hybridep_dedup
from .flex import flex_attention
from .framework_ops import amax_reductions, mcore_qkv_split, squared_relu_eager, te_flash_layout
from .moe_host import HYBRIDEP_DISPATCHERS
from .program import Pass, Program
from .routing import capacity_counts, ranks_hit, record_router
from .torch_cp import ROTATIONS, torch_cp_attention

__all__ = ["GLU_CLAMP_ROW", "attention_block", "dense_mlp", "head", "moe_mlp", "ranks_hit",
           "record_step", "torch_module_grads"]


def local_attention(kind: str, size: int, q: int, kv: int
                    ) -> tuple[int, int, int, bool, float]:
    """``(blocks, q_len, kv_len, causal, scale)`` of the attention call a layer of attention
    ``kind`` (``"full"``, ``"sliding"`` window or ``"chunked"``, of ``size`` tokens) runs:
    ``blocks`` multiplies the batch, ``scale`` the call's cost.

    Decode (``q < kv``): a sliding query sees ``min(kv, size + q - 1)`` keys, a chunked one
    the ``(kv - q) mod size + q`` keys of its chunk. Prefill / training (``q = kv > size``):
    ``n = q // size`` blocks of ``size`` queries in one call, scaled by ``q / (n·size)`` for
    the remainder; chunked blocks are causal ``size x size`` attentions. A sliding block's
    queries score ``min(kv, size + T)`` keys each (non-causal), ``T`` the fused kernel's query
    tile (:func:`roofline._core.sliding_window_visited_keys`): a tile of ``T`` queries visits
    every KV block its band ``[first - size, last]`` touches and skips only the fully masked
    ones, so it scores ``size + T`` keys per query, the diagonal block masked but computed
    whole (``q·(size + T)`` pairs, over by ``(size + T)²/2`` at the start). A window or chunk
    smaller than ``T`` runs blocks of ``T`` queries (a tile is the least a kernel computes).
    Held-out check: cudnn-frontend's published GPT-OSS SDPA benchmark (cuDNN 9.22, GB200 /
    GB300, 2 x 128 heads of 64, window 128, 4k-16k tokens): its forward + backward time is
    within 0-8 % of this pricing, 34-38 % above the ``q·size`` pricing.
    (FlexAttention's BlockMask: :mod:`.flex`.)"""
    if kind == "full" or kv <= size:
        return 1, q, kv, True, 1.0
    if q < kv:
        keys = min(kv, size + q - 1) if kind == "sliding" else min(kv, (kv - q) % size + q)
        return 1, q, keys, True, 1.0
    visited = int(_core.sliding_window_visited_keys(size))
    # a window or chunk below the kernel's query tile T (= visited - size) still runs tiles
    # of T queries, each computing its diagonal block whole: blocks of max(size, T) queries
    block = max(size, visited - size)
    if q <= block:  # one tile: the causal q x kv attention
        return 1, q, kv, True, 1.0
    n = q // block
    if kind == "sliding":
        return n, block, min(kv, visited), False, q / (n * block)
    return n, block, block, True, q / (n * block)


def attention_block(ops: Program, g: int, cfg: TransformerConfig, batch: int, q: int, kv: int,
                     tp: int, phase: str, attn_kw: dict[str, Any], act_bytes: float,
                     cp: int = 1, attn: str = "full", cp_comm: str = "ring",
                     kv_per_query_head: bool = False,
                     plugin_kv_bytes: float | None = None, mcore: bool = False) -> None:
    """Norm, QKV (or MLA) projections, attention, output projection, TP all-reduce and
    residual add of one layer; ``attn``: the layer's attention kind (sliding / chunked
    layers: :func:`local_attention`). ``kv_per_query_head``: the decode attention kernel
    reads each KV head once per query head of its group (one thread block per sequence and
    query head, no reuse across them), priced as attention over ``heads`` KV heads: the
    same math, ``heads / kv_heads`` times the KV bytes. Context parallelism (``cp > 1``)
    exchanges K and V: ``"ring"`` passes this rank's K/V chunk ``cp - 1`` times around the
    ring behind the attention blocks (:meth:`.Program.ring_exchange`); ``cp_comm=
    "all_gather"`` / ``"all_to_all"`` run PyTorch's ring SDPA instead of the one attention
    call (:mod:`.torch_cp`: ``cp`` SDPA calls, their fp32 merge, the K/V rotation).
    ``plugin_kv_bytes`` (non-MLA models): TensorRT-LLM's
    GPT attention plugin, whose context call first builds the decoder info (one small kernel)
    and whose RoPE kernel also writes K and V into a cache of ``plugin_kv_bytes`` per
    element (both rows of kind ``"attention"``: the plugin's own kernels); in decode its
    masked MHA kernel applies RoPE and writes the cache itself (no RoPE row). ``mcore``:
    Megatron-Core's attention module with Transformer Engine in training: its Q / K / V split
    (:func:`.framework_ops.mcore_qkv_split`) and, with ``attn_kw["backend"] == "flash"``,
    TE's flash-attn path (:func:`.framework_ops.te_flash_layout`) around the attention."""
    t = batch * q // cp
    kv_bytes = 0.0
    torch_cp = cp > 1 and cp_comm in ROTATIONS  # PyTorch's ring SDPA (torch_cp.py)
    if cp > 1 and not torch_cp:
        kv_width = (cfg.num_heads // tp * (cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
                                           + cfg.v_head_dim) if cfg.is_mla
                    else 2 * max(cfg.num_kv_heads // tp, 1) * cfg.head_dim)
        kv_bytes = batch * q * kv_width * act_bytes  # the whole sequence's K and V

    def exchange() -> None:  # ring: after the attention call whose blocks hide the sends
        if cp > 1 and cp_comm == "ring":
            ops.ring_exchange(g, "cp ring kv", kv_bytes / cp, cp)

    def attend(name: str, **kw: Any) -> None:
        """The layer's attention call, or PyTorch's ring SDPA over the context ranks."""
        if torch_cp:
            torch_cp_attention(ops, g, name, batch=kw["batch"], heads=kw["heads"], seq=q,
                               head_dim=kw["head_dim"],
                               v_head_dim=kw.get("v_head_dim", kw["head_dim"]), ranks=cp,
                               method=cp_comm, act_bytes=act_bytes, attn_kw=attn_kw)
            return
        ops.attention(g, name, **kw, **attn_kw)
        exchange()

    hid = cfg.hidden_size
    heads = cfg.num_heads // tp
    ops.elementwise(g, "attn_norm", t * hid, cat="rep")
    if cfg.is_mla:
        nope, rope, lat = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.kv_lora_rank
        qk, vd = nope + rope, cfg.v_head_dim
        if cfg.q_lora_rank:
            ops.linear(g, "q_a+kv_a_proj", t, hid, cfg.q_lora_rank + lat + rope)
            ops.elementwise(g, "q_a_norm", t * cfg.q_lora_rank)
            ops.elementwise(g, "kv_a_norm", t * lat)
            ops.linear(g, "q_b_proj", t, cfg.q_lora_rank, heads * qk)
        else:
            ops.linear(g, "q_proj+kv_a_proj", t, hid, heads * qk + lat + rope)
            ops.elementwise(g, "kv_a_norm", t * lat)
        if phase == "decode":  # absorbed (FlashMLA): attention over the latent cache
            ops.linear(g, "q_absorb (W_UK)", t, nope, lat, batch=heads)
            ops.elementwise(g, "rope", t * (heads + 1) * rope)
            ops.attention(g, "attention (MLA absorbed)", batch=batch, heads=heads, kv_heads=1,
                          q_len=q, kv_len=kv, head_dim=lat + rope, v_head_dim=lat,
                          shared_kv=True, **attn_kw)
            ops.linear(g, "v_up (W_UV)", t, lat, vd, batch=heads)
        else:
            ops.linear(g, "kv_b_proj", t, lat, heads * (nope + vd))
            ops.elementwise(g, "rope", t * (heads + 1) * rope, saved=0.0)
            attend("attention (MLA)", batch=batch, heads=heads, kv_heads=heads, q_len=q,
                   kv_len=kv, head_dim=qk, v_head_dim=vd)
        ops.linear(g, "o_proj", t, heads * vd, hid)
    else:
        d = cfg.head_dim
        kvh = cfg.num_kv_heads // tp if cfg.num_kv_heads >= tp else 1  # replicated below tp
        ops.linear(g, "qkv_proj", t, hid, (heads + 2 * kvh) * d, cat="col")
        amax_reductions(ops, g, "attn")
        if mcore and not torch_cp:  # (PyTorch's ring SDPA is not Megatron's module)
            mcore_qkv_split(ops, g, t, heads, kvh, d)
        if cfg.qk_norm:
            ops.elementwise(g, "qk_norm", t * (heads + kvh) * d)
        if plugin_kv_bytes is not None and phase == "prefill":
            # TensorRT-LLM's GPT attention plugin (enqueueContext): invokeBuildDecoderInfo
            # (int32 padding offsets and cu_seqlens from the lengths: 4 (t + 2 b + 1) bytes),
            # then invokeApplyBiasRopeUpdateKVCache: reads Q, K, V, writes the rotated Q and K
            # in place and K, V into the cache; elements of 2 bytes, read once, written once
            ops.elementwise(g, "build decoder info", t + 2 * batch + 1, kind="attention")
            ops.elementwise(g, "rope + kv cache write",
                            t * d * (2 * heads + 3 * kvh + kvh * plugin_kv_bytes) / 2,
                            kind="attention")
        elif cfg.rope and ops.train and cfg.rope_mscale != 1.0:
            yarn_rope_unfused(ops, g, (t * heads * d, t * kvh * d), q * d)
        elif cfg.rope and (plugin_kv_bytes is None or phase != "decode"):
            # (the plugin's decode: its masked MHA kernel rotates and caches K itself)
            ops.elementwise(g, "rope", t * (heads + kvh) * d, saved=0.0)
        size = cfg.sliding_window if attn == "sliding" else cfg.attention_chunk
        blocks, aq, akv, causal, rest = local_attention(attn, size, q, kv)
        kw = dict(attn_kw, causal=causal, scale=attn_kw.get("scale", 1.0) * rest)
        read_heads = heads if kv_per_query_head and phase == "decode" else kvh
        if mcore and not torch_cp and attn_kw.get("backend") == "flash":
            te_flash_layout(ops, g, t, batch, heads, kvh, d)
        if torch_cp:  # full causal layers only (estimate refuses local attention with it)
            attend("attention", batch=batch, heads=heads, head_dim=d)
        elif attn_kw.get("backend") == "flex":  # BlockMask sparsity, eager copies, sinks
            flex_attention(ops, g, attn, size, batch, heads, kvh, q, kv, d, attn_kw, cfg)
        else:
            ops.attention(g, "attention" if attn == "full" else f"attention ({attn} {size})",
                          batch=batch * blocks, heads=heads, kv_heads=read_heads, q_len=aq,
                          kv_len=akv, head_dim=d, **kw)
            exchange()
        ops.linear(g, "o_proj", t, heads * d, hid)
    ops.collective(g, "attn all_reduce", "all_reduce", t * hid * act_bytes, tp)
    if ops.train and cfg.is_moe and cfg.mlp_bias and cfg.attention_bias:
        # Megatron-Core's TEGroupedMLP refuses bias_dropout_fusion with expert biases, so the
        # output projection's bias (skip_bias_add) is added in its own kernel before the
        # residual add (bias_dropout_add_unfused; dropout 0 launches nothing); its gradient
        # is a reduction of the output gradient over the tokens.
        ops.passes(g, "attn_proj bias (unfused bda)", [(t * hid, 1.0, 1.0)],
                   [(t * hid, 1.0, 0.0)])
    ops.elementwise(g, "attn_residual", t * hid, reads=2, saved=0.0)


def dense_mlp(ops: Program, g: int, cfg: TransformerConfig, t: int, tp: int,
               act_bytes: float, separate_gate: bool = False,
               activation: str = "fused") -> None:
    """Norm, (gated) MLP, TP all-reduce and residual add of one dense layer
    (``separate_gate``: a gated MLP's gate and up projections as two GEMMs, not one;
    ``activation``: a non-gated MLP's activation, ``"relu_pow"`` as
    :func:`squared_relu_eager`, else one fused kernel)."""
    hid = cfg.hidden_size
    inter = math.ceil(cfg.intermediate_size / tp)
    ops.elementwise(g, "mlp_norm", t * hid, cat="rep")
    if cfg.mlp_gated and separate_gate:
        ops.linear(g, "up_proj", t, hid, inter)  # TensorRT-LLM: fc
        ops.linear(g, "gate_proj", t, hid, inter)
        ops.elementwise(g, "act (silu*up)", t * inter, reads=2)
    elif cfg.mlp_gated:
        ops.linear(g, "gate_up_proj", t, hid, 2 * inter, cat="col")
        amax_reductions(ops, g, "mlp")
        ops.elementwise(g, "act (silu*up)", t * inter, reads=2)
    else:
        ops.linear(g, "up_proj", t, hid, inter, cat="col")
        amax_reductions(ops, g, "mlp")
        if activation == "relu_pow":
            squared_relu_eager(ops, g, t * inter)
        else:
            ops.elementwise(g, "act", t * inter)
    ops.linear(g, "down_proj", t, inter, hid)
    ops.collective(g, "mlp all_reduce", "all_reduce", t * hid * act_bytes, tp)
    ops.elementwise(g, "mlp_residual", t * hid, reads=2, saved=0.0)


def moe_mlp(ops: Program, g: int, cfg: TransformerConfig, t: int, tp: int, ep: int,
             act_bytes: float, lowp: bool, skew: float = 0.0) -> None:
    """Norm, router, top-k, permute, dispatch / combine all-to-alls around the grouped expert
    GEMMs, shared experts, weighted sum (unpermute) and residual add of one MoE layer (the
    busiest EP rank).

    What Megatron-Core's MoE layer runs in training (decode and prefill keep the serving
    engines' fused MoE program): the fused permute copies each token's row once per chosen
    expert (``t·k·hidden`` elements written); with expert parallelism the received rows,
    grouped by source rank, are regrouped by local expert before the grouped GEMMs and back
    after them (``sort_chunks_by_idxs``); a low-precision recipe quantizes the inputs of both
    grouped linears (``rows·(hidden + width)`` elements) and copies the rows into and out of
    their per-expert padding (TE's ``Fp8Padding`` / ``Fp8Unpadding``); the unpermute is the
    weighted sum: memory-bound passes. ``ops.moe_core``: core_v0.11 / 0.12 send no
    probabilities all-to-all, and without ``moe_permute_fusion`` permute and unpermute
    eagerly (:func:`.framework_ops.mcore_unfused_permute`; a shared expert's add then not
    priced). With ``launch="eager"`` the device-to-host sync of the token counts exposes
    the host launch time from each MoE layer's permute to the next router, and the backward
    exposes its launch time where the host issues its per-expert kernels slower than the GPU
    runs them (``step.host_s``, see :func:`.moe_sync.sync_exposed_s`).
    MoE experts run as ``rl.grouped_gemm`` over per-expert token counts: the ``T·ep·k``
    assignments of an EP group (``T`` tokens per GPU, ``/tp`` training with tp, ep > 1; top-k)
    split over the ``E`` experts by a Zipf share ``i^-s / sum j^-s`` (``s = routing_skew``),
    rounded; expert ``i`` sits on rank ``i mod ep``, the most loaded rank is modeled. The
    all-to-alls carry that rank's ``max(received, sent)`` rows (``sent = T·k``; token dropping:
    :func:`.routing.capacity_counts`). Serving runs one grouped kernel over the experts a batch
    touches in expectation, ``E·(1 - (1 - k/E)^(T·ep))`` (:func:`.routing.touched_counts`);
    training as TE's ``GroupedLinear`` does under Megatron-Core: one GEMM per local expert for
    the forward, the input and the weight gradient (``rl.grouped_gemm(layout="looped" /
    "looped_wgrad")``), each with its own tiles, waves and latency floor.

    With HybridEP (:data:`.moe_host.HYBRIDEP_DISPATCHERS`, Megatron-Core's flex dispatcher; DeepEP
    hybrid-ep 1dddd19-34152ae, ``deep_ep/hybrid_ep_buffer.py``, ``csrc/hybrid_ep/executor``)
    the routing map is all-gathered over the EP group (bool, ``t·E`` bytes per rank) and a
    metadata kernel reads the gathered map; the dispatch kernel reads each token once and
    writes it once to every rank holding at least one of its experts (no permute before it;
    the fp32 probabilities of that rank's experts travel with it), the receiver's permute
    kernel expands the rows per local expert (our ``sort chunks by expert``); the combine's
    unpermute sums each token's local expert rows (``unsort chunks``) and the combine kernel
    sends one row per token and rank and sums them at the token's rank, so there is no
    separate weighted sum (a shared expert's output is added after). Rows per token and
    rank: under the benchmark's force-balanced routing a token's ``k`` experts are a uniform
    ``k``-subset of ``E``, so rank ``r`` (``E/ep`` experts) is hit with probability
    ``1 - C(E - E/ep, k) / C(E, k)`` (:func:`ranks_hit`); both exchanges carry the
    all-to-all's bytes times ``ep·p/k``, at HybridEP's per-peer cost (``HYBRIDEP_PEER_S``);
    DeepEP's normal kernels (``"deepep"``, :mod:`.deepep`) alike after its notify kernel.
    ``ops.router``: :func:`.routing.record_router`, :func:`.routing.token_ranks`."""
    hid, e, k = cfg.hidden_size, cfg.num_experts, cfg.experts_per_token
    mats = 2 if cfg.mlp_gated else 1
    width = cfg.moe_intermediate_size if ep > 1 else math.ceil(cfg.moe_intermediate_size / tp)
    ops.elementwise(g, "mlp_norm", t * hid, cat="rep")
    record_router(ops, g, t, hid, e, k)  # the gating GEMM and top-k, or AutoModel's gate
    # Megatron-Core under sequence parallelism (tp > 1, ep > 1, ETP 1): a TP rank routes t/tp
    tf, t = t, (math.ceil(t / tp) if ops.train and ep > 1 and tp > 1 else t)
    balanced = ops.router == "force_balanced"  # random logits: binomial counts
    local, sent = capacity_counts(t, e, k, ep, ops.moe_capacity, skew, balanced)  # busiest rank
    received = int(local.sum())
    mcore = ops.train  # Megatron-Core's training dispatcher (serving engines fuse these)
    # Megatron-Core's dispatchers (all-to-all, flex / DeepEP / HybridEP) send the hidden
    # states in the activation dtype (fused_a2a sizes its buffers at >= 2 bytes per element);
    # TE's GroupedLinear quantizes after the dispatch. Serving engines dispatch fp8.
    dispatch_bytes = 1.0 if lowp and not mcore else act_bytes
    exchanged = max(received, sent) * hid  # the busiest rank's send or receive buffer
    hybrid = mcore and ops.dispatcher in HYBRIDEP_DISPATCHERS and ep > 1
    deep = mcore and ops.dispatcher == "deepep" and ep > 1
    if deep:
        deep_rows = deepep_dispatch(ops, g, t, e, k, ep, hid, act_bytes, max(received, sent))
    elif hybrid:  # the routing map's all-gather, HybridEP's metadata kernel: forward only
        ops.collective(g, "routing map all_gather", "all_gather", t * e * ep, ep, backward=False)
        ops.passes(g, "hybridep metadata", [(t * e * ep / 2, 1.0, 0.0)], [])
        dedup = hybridep_dedup(ops, e, k, ep)  # rows per token and rank / rows per token
        ops.collective(g, "dispatch all_to_all", "hybridep_dispatch", dedup * (
            exchanged * dispatch_bytes + max(received, sent) * e / ep * 4.0), ep)
    elif mcore:  # Megatron's fused permute: each token's row copied once per chosen expert,
        # grouped by destination rank and expert, then the tokens' and (fp32) probabilities'
        # all_to_alls (token_dispatch; core_v0.11 / 0.12 keep them for the unpermute)
        if ops.moe_core[1]:
            ops.elementwise(g, "permute", sent * hid, saved=t * (2 * e + 1) * 2.0)  # row_id_map
        else:
            framework_ops.mcore_unfused_permute(ops, g, "permute", t, e, sent, hid)
        ops.collective(g, "dispatch all_to_all", "all_to_all", exchanged * dispatch_bytes, ep)
        if ops.moe_core[0] == "0.15":
            ops.collective(g, "dispatch probs all_to_all", "all_to_all",
                           max(received, sent) * 4.0, ep)
    else:
        ops.collective(g, "dispatch all_to_all", "all_to_all", exchanged * dispatch_bytes, ep)
    used = tuple(int(c) for c in local if c > 0) or (1,)
    alt = None  # serving: the experts a small batch touches, in expectation
    if not mcore and ops.moe_capacity is None:
        hit = routing.touched_experts(t, e, k, skew, ep)
        used, alt = routing.touched_counts(local, hit, skew, ep)
    # rows arrive grouped by source rank: regroup them by local expert (Megatron-Core's
    # all-to-all dispatcher only with more than one local expert, ``num_local_experts > 1``;
    # drop-and-pad as a ``transpose().contiguous()`` of the same rows; HybridEP's permute)
    regroup = mcore and ep > 1 and (hybrid or deep or e // ep > 1)
    if regroup:
        ops.elementwise(g, "sort chunks by expert", sum(used) * hid, saved=0.0)  # index map
    rows = sum(used)
    # TE's Fp8Padding returns early when every local expert's rows are aligned (16; MXFP8 32),
    # which drop-and-pad's fixed ep·C rows decide
    aligned = ops.moe_capacity is not None and ops.moe_capacity[1] and all(
        c % (32 if ops.recipe == "mxfp8_te" else 16) == 0 for c in used)
    if mcore and lowp and not aligned:
        # TEGroupedMLP pads each expert's rows to the recipe's alignment (TE 2.9 Fp8Padding:
        # 32 under MXFP8, 16 else) with one fused_multi_row_padding copy of the hidden
        # states and one of the fp32 probabilities (2 elements per row); the backward
        # unpads both gradients. It returns early only when every local expert's count is
        # already aligned, which the perf scripts' random-logit routing
        # (moe_router_force_load_balancing) leaves to chance (1/32 per expert): priced as
        # running. The few padding rows themselves are not counted.
        pad = [(rows * hid, 1.0, 1.0), (2.0 * rows, 1.0, 1.0)]
        ops.passes(g, "experts fp8 padding", pad, pad)
    if mcore and lowp:
        # the grouped linears quantize their inputs (forward) and output gradients (backward)
        # one expert at a time (TE's split_quantize)
        ops.grouped_quantize(g, "experts quantize", used, (hid, width), (hid, mats * width))
    ops.grouped_linear(g, "experts gate_up", used, hid, mats * width, alt)
    if mcore and cfg.mlp_gated and cfg.glu_limit > 0:
        glu_clamp_unfused(ops, g, sum(used) * width)
    ops.elementwise(g, "experts act", sum(used) * width, reads=mats)
    ops.grouped_linear(g, "experts down", used, width, hid, alt)
    if mcore and lowp and not aligned:  # Fp8Unpadding of the output (its backward pads)
        ops.passes(g, "experts fp8 unpadding", [(rows * hid, 1.0, 1.0)],
                   [(rows * hid, 1.0, 1.0)])
    if mcore and cfg.mlp_bias:
        expert_fc2_bias(ops, g, used, hid)
    if regroup:
        ops.elementwise(g, "unsort chunks", sum(used) * hid, saved=0.0)
    if deep:
        deepep_combine(ops, g, ep, hid, act_bytes, deep_rows)
    else:  # NCCL's all-to-all or HybridEP's combine
        ops.collective(g, "combine all_to_all", "hybridep_combine" if hybrid else "all_to_all",
                       exchanged * act_bytes * (dedup if hybrid else 1.0), ep)
    hybrid = hybrid or deep  # the flex dispatcher's unpermute sums the rows: no weighted sum
    if cfg.num_shared_experts:
        sw = math.ceil(cfg.num_shared_experts * cfg.moe_intermediate_size / tp)
        ops.linear(g, "shared gate_up", tf, hid, mats * sw, cat="col")
        ops.elementwise(g, "shared act", tf * sw, reads=mats)
        ops.linear(g, "shared down", tf, sw, hid)
    if not hybrid and not ops.moe_core[1]:  # core_v0.11 / 0.12, no shared experts
        framework_ops.mcore_unfused_permute(ops, g, "unpermute", t, e, sent, hid)
    elif not hybrid:
        ops.elementwise(g, "moe weighted sum", t * hid,  # the unpermute reads every sent row
                        reads=sent / t + (1 if cfg.num_shared_experts else 0), saved=0.0)
    elif cfg.num_shared_experts:  # MoELayer adds the shared experts' output
        ops.elementwise(g, "moe shared add", t * hid, reads=2, saved=0.0)
    if ep == 1:
        ops.collective(g, "mlp all_reduce", "all_reduce", t * hid * act_bytes, tp)
    ops.elementwise(g, "mlp_residual", tf * hid, reads=2, saved=0.0)


def expert_fc2_bias(ops: Program, g: int, used: tuple[int, ...], hid: int) -> None:
    """The routed experts' output bias as Megatron-Core adds it (models with ``mlp_bias``).

    ``TEGroupedMLP`` runs fc2 with ``skip_bias_add=True`` and adds the bias in Python
    (``_apply_bias``, ``megatron/core/transformer/moe/experts.py``, Megatron-Core 0.15): per
    local expert ``t + b * p`` with the router's fp32 probabilities ``p``, so both results
    are fp32, then ``torch.cat`` of the experts' rows and ``.to(bf16)``. Per element of the
    ``rows x hidden`` output, in bytes: ``b * p`` writes 4; ``t + b*p`` reads 2 + 4, writes
    4; the cat reads and writes 4; the cast reads 4, writes 2 (2 kernels per expert + 2).
    Autograd: the cast's backward (reads 2, writes 4), the sum's gradient to ``t`` cast to
    bf16 (reads 4, writes 2), ``b``'s gradient (a reduction of ``grad * p`` over each
    expert's rows: reads 4) and ``p``'s (of ``grad * b`` over hidden: reads 4); the cat's
    backward is views. Counts below are in 2-byte elements.
    """
    fwd: list[Pass] = []
    for rows in used:
        e = float(rows) * hid
        fwd += [(e, 0.0, 2.0), (e, 3.0, 2.0)]
    n = float(sum(used)) * hid
    fwd += [(n, 2.0, 2.0), (n, 2.0, 1.0)]
    bwd = [(n, 1.0, 2.0), (n, 2.0, 1.0)]
    bwd += [(float(rows) * hid, 2.0, 0.0) for rows in used for _ in range(2)]
    ops.passes(g, "experts fc2 bias (unfused)", fwd, bwd)


#: The row of :func:`glu_clamp_unfused`; the host synchronises right after it (the fused
#: activation's ``torch.tensor(linear_offset, device=...)``: a blocking host-to-device copy).
GLU_CLAMP_ROW = "experts act clamp (unfused)"


def glu_clamp_unfused(ops: Program, g: int, elements: float) -> None:
    """The clamps of a clamped gated activation (GPT-OSS's ``swiglu_limit``) as
    Megatron-Core runs them for the routed experts, ``elements = rows x width`` per half.

    ``TEGroupedMLP`` (``bias_activation_fusion``, quick-GEGLU) calls
    ``weighted_bias_quick_geglu_impl`` (Megatron-Core 92c8482, the Megatron-Bridge 5776a6d
    submodule, ``megatron/core/fusions/fused_bias_geglu.py``), whose clamp runs eagerly
    before the fused (``torch.compile``) activation: ``chunk`` into two views, the gate's
    ``clamp(max=limit)`` and the linear half's ``clamp(-limit, limit)`` (each reads a half,
    writes a half), ``torch.cat`` of both (reads and writes ``2·elements``). Autograd
    (PyTorch ``clamp_backward``): the cat's gradients are views; the linear half runs
    ``self >= min``, ``self <= max`` (bool outputs), ``logical_and_`` and ``where(mask,
    grad, zero)``, the gate ``self <= max`` and ``where``, each with a one-element zero
    (``scalar_tensor``: a fill kernel); the ``chunk``'s backward concatenates the two
    gradients (reads and writes ``2·elements``). Counts in 2-byte elements (a bool is half
    of one: the kernels touching bools count half the elements, twice the passes). The
    clamp's input (the fc1 output, ``2·elements``) stays saved for its backward.
    """
    e = float(elements)
    h = e / 2  # kernels touching bools, in units of half the elements (reads, writes integral)
    compare, where = (h, 2.0, 1.0), (h, 3.0, 2.0)  # bf16 -> bool; bool + bf16 -> bf16
    fwd = [(e, 1.0, 1.0), (e, 1.0, 1.0), (2 * e, 1.0, 1.0)]
    bwd = [(1.0, 0.0, 1.0), compare, compare, (h, 2.0, 1.0), where,  # linear half
           (1.0, 0.0, 1.0), compare, where,  # the gate
           (2 * e, 1.0, 1.0)]  # the chunk's cat
    ops.passes(g, GLU_CLAMP_ROW, fwd, bwd, saved=2 * e)


def yarn_rope_unfused(ops: Program, g: int, elements: tuple[float, ...], table: float) -> None:
    """RoPE with YaRN's attention factor as Megatron-Core runs it in training: unfused.

    ``apply_rotary_pos_emb`` (Megatron-Core 92c8482, ``models/common/embeddings/
    rope_utils.py``) falls back from TE's fused RoPE when ``mscale != 1`` (YaRN's
    concentration factor, which ``attention.py`` passes for q and k separately): per tensor of
    ``elements`` (q, then k), ``_apply_rotary_pos_emb_bshd`` computes ``cos(freqs)·mscale``
    and ``sin(freqs)·mscale`` cast to bf16 (three kernels each over the fp32 ``table =
    seq x head_dim``), ``t·cos``, ``_rotate_half`` (a negation of one half and a ``cat``),
    ``·sin``, the sum, and ``cat((t, t_pass))`` with an empty ``t_pass`` (a copy).
    Autograd: ``grad·sin``, the negation, the ``chunk``'s ``cat``, ``grad·cos`` and their
    sum; the empty ``t[..., rot_dim:]`` slice's backward allocates a zero gradient of the
    whole tensor (``slice_backward``: a fill), which is added to the other. Counts in
    2-byte elements (fp32 is two).
    """
    fwd: list[Pass] = []
    bwd: list[Pass] = []
    f = float(table)
    for e in (float(x) for x in elements):
        fwd += [(f, 2.0, 2.0), (f, 2.0, 2.0), (f, 2.0, 1.0)] * 2
        fwd += [(e, 1.0, 1.0), (e / 2, 1.0, 1.0), (e, 1.0, 1.0), (e, 1.0, 1.0), (e, 2.0, 1.0),
                (e, 1.0, 1.0)]
        bwd += [(e, 1.0, 1.0), (e / 2, 1.0, 1.0), (e, 1.0, 1.0), (e, 1.0, 1.0), (e, 2.0, 1.0),
                (e, 0.0, 1.0), (e, 2.0, 1.0)]
    ops.passes(g, "rope (yarn, unfused)", fwd, bwd)


def torch_module_grads(ops: Program, g: int, cfg: TransformerConfig, t: int, tp: int) -> None:
    """What PyTorch's eager modules add to one dense layer's backward where Transformer
    Engine's fuse it (``modules="torch"``: a model built from ``nn.Linear`` / ``nn.LayerNorm``
    with a fused QKV projection split by ``chunk``, as llm-foundry's MPT; torch 2.1).

    - A biased ``nn.Linear`` on a contiguous 3-d input runs ``addmm`` (the bias in cuBLASLt's
      epilogue, no forward kernel), and autograd reduces the output gradient over the tokens
      for the bias (``sum_to``: reads ``t x n``); TE computes it in the GEMM's epilogue. One
      reduction per biased projection: QKV, output, up (gate-up), down. Under a float8
      ``linear_recipe`` the linears are TE's (llm-foundry's ``fc_type: te`` for ``amp_fp8``),
      whose backward fuses the bias gradient into its cast: none then.
    - ``nn.LayerNorm``'s backward (``layer_norm_backward_cuda``) runs the input gradient's
      kernel and then ``GammaBetaBackward``, which reads ``x`` and ``dy`` again (two reads of
      ``t x hidden`` per norm, two norms); the program's norm rows hold the first.
    - ``qkv.chunk(3)``'s backward concatenates the three gradients the attention kernel
      returns as separate tensors (reads and writes ``t x qkv width``); Megatron-Core's
      split avoids the copy.

    Counts in 2-byte elements; backward only (nothing of it is recomputed)."""
    hid, d = cfg.hidden_size, cfg.head_dim
    heads, kvh = cfg.num_heads // tp, max(cfg.num_kv_heads // tp, 1)
    qkv = (heads + 2 * kvh) * d
    up = (2 if cfg.mlp_gated else 1) * math.ceil(cfg.intermediate_size / tp)
    bwd: list[Pass] = []
    if cfg.attention_bias and ops.recipe is None:
        bwd += [(float(t) * qkv, 1.0, 0.0), (float(t) * hid, 1.0, 0.0)]
    if cfg.mlp_bias and ops.recipe is None:
        bwd += [(float(t) * up, 1.0, 0.0), (float(t) * hid, 1.0, 0.0)]
    if cfg.norm == "layernorm":
        bwd += [(float(t) * hid, 2.0, 0.0)] * 2
    bwd.append((float(t) * qkv, 1.0, 1.0))
    ops.passes(g, "torch modules (bias grads, norm grads, qkv cat)", [], bwd)


#: Megatron-Core's cross-entropy kernels other than one fused pass, ``(forward, backward)``
#: passes ``(reads, writes)`` per logit in bf16 elements (fp32 = 2); the target gathers and
#: index updates touch one element per row (not priced); both save the fp32 softmax.
#: ``"unfused"`` (``cross_entropy_loss_fusion`` off: Megatron-Core 0.7's
#: ``vocab_parallel_cross_entropy(logits.float())``, 0.8's cast in ``calculate_logits_max``):
#: the cast, max, subtract, exp, sum, divide; backward ``mul_`` and the cast back to bf16.
#: ``"native"`` (``cross_entropy_loss_fusion`` with ``cross_entropy_fusion_impl="native"``,
#: Megatron-Core >= 0.8: ``fusions/fused_cross_entropy.py``, three ``torch.compile`` regions,
#: ``jit_fuser``): cast + max (the fp32 logits returned), subtract + exp + sum in place, divide
#: in place; backward the in-place update and ``mul_`` written back into the saved softmax
#: (a mutated input) and the bf16 gradient.
LOSS_PASSES = {
    "unfused": (((1, 2), (2, 0), (2, 2), (2, 2), (2, 0), (2, 2)), ((2, 2), (2, 1))),
    "native": (((1, 2), (2, 2), (2, 2)), ((2, 3),)),
}
#: Cross-entropy implementations (``estimate(cross_entropy=...)``): one fused pass
#: (Transformer Engine's ``parallel_cross_entropy``, ``cross_entropy_fusion_impl="te"``) and
#: :data:`LOSS_PASSES`.
CROSS_ENTROPY = ("fused", *LOSS_PASSES)


def loss(ops: Program, g: int, logits: float, impl: str = "fused") -> None:
    """Training's cross-entropy over ``logits`` elements (rows x vocabulary shard): one fused
    pass (read the logits, write the gradient), or Megatron-Core's ``"native"`` /
    ``"unfused"`` fp32 passes (:data:`LOSS_PASSES`, the fp32 softmax saved)."""
    if impl == "fused":
        ops.elementwise(g, "cross_entropy", logits, reads=1, writes=1)
        return
    fwd, bwd = LOSS_PASSES[impl]
    ops.passes(g, f"cross_entropy ({impl}, fp32)", [(logits, r, w) for r, w in fwd],
               [(logits, r, w) for r, w in bwd], saved=2.0 * logits)


def head(ops: Program, g: int, cfg: TransformerConfig, batch: int, q: int, t: int, tp: int,
          phase: str, embed: bool = True, loss_impl: str = "fused") -> None:
    """Embedding (unless ``embed=False``), final norm, LM head (prefill: last token only)
    and training's loss (:func:`loss`, ``loss_impl``)."""
    hid = cfg.hidden_size
    if cfg.vocab_size and embed:
        ops.elementwise(g, "embedding", t * hid, reads=1, writes=1)
    ops.elementwise(g, "final_norm", t * hid)
    if cfg.vocab_size:
        rows = batch if phase == "prefill" else t  # prefill: logits of the last token
        vocab = math.ceil(cfg.vocab_size / tp)
        # Training recipes leave the output layer in bf16: Megatron's output_layer is a
        # ColumnParallelLinear (not a Transformer Engine module, so outside fp8_autocast) and
        # torchtitan's float8 / MX converters skip "output" (filter_fqns).
        ops.linear(g, "lm_head", rows, hid, vocab, lowp=phase != "train")
        if phase == "train":
            loss(ops, g, float(rows * vocab), loss_impl)



@functools.lru_cache(maxsize=64)
def _layer_groups(cfg: TransformerConfig) -> tuple[tuple[str, tuple[int, ...],
                                                        tuple[str, str]], ...]:
    """The model's layer groups in recording order: (kind, layer indices, (mlp, attention))
    for each (mlp, attention) pair with layers; kind ``"dense"`` / ``"moe"``, or e.g.
    ``"moe/sliding"`` for local attention."""
    kinds = list(zip(cfg.layer_kinds(), cfg.layer_attention(), strict=True))
    out = []
    for mlp in ("dense", "moe"):
        for attn in ("full", "sliding", "chunked"):
            layers = tuple(i for i, k in enumerate(kinds) if k == (mlp, attn))
            if layers:
                out.append((mlp if attn == "full" else f"{mlp}/{attn}", layers, (mlp, attn)))
    return tuple(out)


def record_step(ops: Program, cfg: TransformerConfig, *, batch: int, q: int, kv: int,
                tokens: int, tp: int, ep: int, cp: int, phase: str, attn_kw: dict[str, Any],
                act_bytes: float, lowp: bool, skew: float, cp_comm: str = "ring",
                kv_per_query_head: bool = False, separate_gate: bool = False,
                plugin_kv_bytes: float | None = None, torch_modules: bool = False,
                loss_impl: str = "fused",
                activation: str = "fused") -> list[tuple[str, list[int]]]:
    """Record one layer of each kind (dense, then MoE) and the head into ``ops``
    (``kv_per_query_head``, ``plugin_kv_bytes``: :func:`attention_block`'s;
    ``separate_gate``, ``activation``: :func:`dense_mlp`'s; ``torch_modules``: training adds
    :func:`torch_module_grads` to every dense layer; ``loss_impl``: :func:`loss`'s).

    Returns the groups ``(kind, layer indices)``, the head last with no index: row group
    ``g`` of ``ops`` is ``groups[g]``. ``tokens`` are this GPU's (after context parallelism).
    """
    groups = [(name, list(layers)) for name, layers, _ in _layer_groups(cfg)]
    blocks = [block for _, _, block in _layer_groups(cfg)]
    mcore = phase == "train" and not torch_modules  # Megatron-Core's TE modules
    attn_kw, unpad = framework_ops.flash_varlen(attn_kw)  # llm-foundry's flash_attn_fn
    if phase == "train" and cfg.mtp_layers:  # multi-token prediction: one more block + head
        n = cfg.num_layers
        groups.append(("mtp", list(range(n, n + cfg.mtp_layers))))
        blocks.append((cfg.layer_kinds()[-1], "full"))
    for gi, (mlp, attn) in enumerate(blocks):
        if groups[gi][0] == "mtp":
            hid = cfg.hidden_size
            ops.elementwise(gi, "mtp enorm+hnorm", 2 * tokens * hid, cat="rep")
            ops.linear(gi, "mtp eh_proj", tokens, 2 * hid, hid)
        attention_block(ops, gi, cfg, batch, q, kv, tp, phase, attn_kw, act_bytes, cp, attn,
                        cp_comm, kv_per_query_head, plugin_kv_bytes, mcore)
        if unpad:
            framework_ops.flash_unpad_pad(ops, gi, tokens, batch, cfg.num_heads // tp,
                                          max(cfg.num_kv_heads // tp, 1), cfg.head_dim)
        if mlp == "dense":
            dense_mlp(ops, gi, cfg, tokens, tp, act_bytes, separate_gate, activation)
            if torch_modules and ops.train:
                torch_module_grads(ops, gi, cfg, tokens, tp)
        else:
            moe_mlp(ops, gi, cfg, tokens, tp, ep, act_bytes, lowp, skew)
        if groups[gi][0] == "mtp":  # the shared head and its loss, per module
            head(ops, gi, cfg, batch, q, tokens, tp, phase,
                 embed=False, loss_impl=loss_impl)
    groups.append(("head", []))
    head(ops, len(groups) - 1, cfg, batch, q, tokens, tp, phase, loss_impl=loss_impl)
    return groups
