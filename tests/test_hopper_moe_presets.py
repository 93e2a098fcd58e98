"""Megatron-Bridge's H100 MoE pretraining presets, built with ``rl.transformer.estimate``.

Configs only (no measured figure is read or asserted): each preset as the perf scripts resolve
it at the 25.11 (5776a6d), 26.02 (c0b9a00) and 26.04 (74695a0) commits of
NVIDIA-NeMo/Megatron-Bridge (``scripts/performance/configs/{deepseek,qwen,gpt_oss}/
*_workload_base_configs.py``, ``*_llm_pretrain.py``, ``utils/overrides.py``,
``src/megatron/bridge/training/flex_dispatcher_backend.py``; data/hardware-notes.md §49 lists
what each sets and what the model does with it). Every preset is either priced (and then
checked for physical properties) or refused with an error naming the option the model lacks.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import roofline as rl
from roofline.ops.collectives import nccl_nic_bytes_per_s
from roofline.transformer.deepep import hybridep_columns, node_share
from roofline.transformer.pricing import HYBRIDEP_PEER_S
from roofline.transformer.routing import ranks_hit
from roofline.transformer.training import DEFAULT_NETWORK_BYTES_PER_S

T = rl.transformer

#: Common to every H100 preset: DGX H100 (8 GPUs a node), the distributed optimizer
#: (use_distributed_optimizer=True, FSDP off: zero=1), seq 4096 (the DeepSeek / Qwen3 common
#: configs and the GPT-OSS recipe), MBS 1 (WorkloadBaseConfig's default; no H100 preset sets
#: it), force-balanced dropless routing (moe_router_force_load_balancing: routing_skew=0).
H100 = {"hardware": "H100 SXM", "gpus_per_node": 8, "zero": 1, "seq_len": 4096,
        "micro_batch": 1}
#: Megatron-Bridge's precision names -> linear_recipe (get_precision_config): FP8-CS is TE's
#: Float8CurrentScaling (fp8 params), FP8-SC its Float8BlockScaling ("subchannel": 1x128
#: activations, 128x128 weights, fp8_param_gather=False), FP8-MX its MXFP8BlockScaling.
PRECISION: dict[str, dict[str, Any]] = {
    "bf16": {"linear_recipe": None},
    "fp8_cs": {"linear_recipe": "tensorwise_te"},
    "fp8_sc": {"linear_recipe": "blockwise_te", "fp8_param_gather": False},
    "fp8_mx": {"linear_recipe": "mxfp8_te"},
}
#: DeepSeek-V3: TP2 PP8 VP4 EP64 ETP1 on 1024 GPUs (DP 64), recompute_modules [mla_up_proj,
#: mlp] (selective granularity from set_deepseek_v3_common_configs), MTP 1 (the layouts end
#: in "mL"), seq_aux_loss with the expert bias (DeepSeekV3 provider / bridge).
DSV3 = {"model": "DeepSeek-V3", "tp": 2, "pp": 8, "virtual_stages": 4, "ep": 64, "dp": 64,
        "recompute": "modules:mla_up_proj,mlp", "moe_load_balancing": "seq_aux_loss",
        "moe_expert_bias": True}
#: Qwen3-235B-A22B: TP2 PP8 VP4 EP32 ETP1 on 256 GPUs (DP 16), aux_loss, no recompute
#: (set_qwen3_common_configs), tp_comm_overlap=False, all-to-all dispatcher (the H100 perf
#: function sets moe_token_dispatcher_type="alltoall" after the recipe), moe_a2a_overlap.
Q235 = {"model": "Qwen3-235B-A22B", "tp": 2, "pp": 8, "virtual_stages": 4, "ep": 32, "dp": 16,
        "moe_load_balancing": "aux_loss", "moe_a2a_overlap": True}
#: Qwen3-30B-A3B on 16 GPUs, aux_loss, no recompute.
Q30 = {"model": "Qwen3-30B-A3B", "moe_load_balancing": "aux_loss"}
#: GPT-OSS-120B: PP4 EP8 on 64 GPUs (DP 16), no load-balancing loss (GPTOSS provider).
GPTOSS = {"model": "GPT-OSS-120B", "pp": 4, "ep": 8, "dp": 16}
GRAPHS = {"cuda_graph_scope": ["moe_router", "moe_preprocess"]}  # transformer_engine impl

#: id -> (settings, precision). GA = GBS / (MBS x DP).
PRESETS: dict[str, tuple[dict[str, Any], str]] = {
    # 25.11 (5776a6d). DeepSeek-V3 runs DeepEP (moe_flex_dispatcher_backend="deepep", which
    # apply_flex_dispatcher_backend applies on compute capability 8 / 9) with moe_a2a_overlap
    # (the combined 1F1B; delay_wgrad_compute), pp layout "Et|(tt|)*30mL", GBS 8192.
    "2511_deepseek_v3_bf16": (dict(DSV3, grad_accum=128, moe_dispatcher="deepep",
                                   moe_a2a_overlap=True), "bf16"),
    "2511_deepseek_v3_fp8_cs": (dict(DSV3, grad_accum=128, moe_dispatcher="deepep",
                                     moe_a2a_overlap=True), "fp8_cs"),
    "2511_deepseek_v3_fp8_sc": (dict(DSV3, grad_accum=128, moe_dispatcher="deepep",
                                     moe_a2a_overlap=True), "fp8_sc"),
    # Qwen3 and GPT-OSS keep the all-to-all dispatcher (no flex backend set); GPT-OSS's
    # recompute_modules are inert (the recipe leaves recompute_granularity None).
    "2511_qwen3_235b_bf16": (dict(Q235, grad_accum=128), "bf16"),
    "2511_qwen3_235b_fp8_cs": (dict(Q235, grad_accum=128), "fp8_cs"),
    "2511_qwen3_30b_bf16": (dict(Q30, pp=2, virtual_stages=12, ep=8, dp=8, grad_accum=64,
                                 moe_a2a_overlap=True, **GRAPHS), "bf16"),
    "2511_qwen3_30b_fp8_cs": (dict(Q30, pp=2, virtual_stages=12, ep=8, dp=8, grad_accum=64,
                                   moe_a2a_overlap=True), "fp8_cs"),
    "2511_gptoss_120b_bf16": (dict(GPTOSS, grad_accum=32), "bf16"),
    # 26.02 (c0b9a00) and 26.04 (74695a0), V1 and V2 (the variants differ in GBS only; the
    # two commits' H100 MoE presets are the same but for 26.04's GPT-OSS FP8-MX, below).
    # DeepSeek-V3: HybridEP (the recipe's default backend, which apply_flex_dispatcher_backend
    # turns on for compute capability 8-10 since c0b9a00), no a2a overlap, pp_layout
    # "Et|(tt|)*30mL"; FP8-SC V2 runs VP2 with the recipe's (8, 2) layout.
    "2602_deepseek_v3_bf16_v1": (dict(DSV3, grad_accum=128, moe_dispatcher="hybridep"),
                                 "bf16"),
    "2602_deepseek_v3_bf16_v2": (dict(DSV3, grad_accum=256, moe_dispatcher="hybridep"),
                                 "bf16"),
    "2602_deepseek_v3_fp8_cs_v2": (dict(DSV3, grad_accum=256, moe_dispatcher="hybridep"),
                                   "fp8_cs"),
    "2602_deepseek_v3_fp8_sc_v1": (dict(DSV3, grad_accum=128, moe_dispatcher="hybridep"),
                                   "fp8_sc"),
    "2602_deepseek_v3_fp8_sc_v2": (dict(DSV3, virtual_stages=2, grad_accum=256,
                                        moe_dispatcher="hybridep"), "fp8_sc"),
    "2602_qwen3_235b_bf16_v2": (dict(Q235, grad_accum=512), "bf16"),
    "2602_qwen3_235b_fp8_cs_v2": (dict(Q235, grad_accum=512), "fp8_cs"),
    # Qwen3-30B-A3B: EP16 (two nodes), DP16, GBS 1024; the perf function sets the flex
    # dispatcher with HybridEP (32 SMs, _set_common_perf_overrides)
    "2602_qwen3_30b_bf16": (dict(Q30, ep=16, dp=16, grad_accum=64, moe_dispatcher="hybridep",
                                 **GRAPHS), "bf16"),
    "2602_qwen3_30b_fp8_cs": (dict(Q30, ep=16, dp=16, grad_accum=64,
                                   moe_dispatcher="hybridep"), "fp8_cs"),
    # GPT-OSS-120B: recompute_modules [layernorm, moe_act] now selective (c9dd058)
    "2602_gptoss_120b_bf16_v1": (dict(GPTOSS, grad_accum=32,
                                      recompute="modules:layernorm,moe_act"), "bf16"),
    "2602_gptoss_120b_bf16_v2": (dict(GPTOSS, grad_accum=80,
                                      recompute="modules:layernorm,moe_act"), "bf16"),
}

#: Presets the model refuses, with the option (matched in the error) it lacks.
REFUSED: dict[str, tuple[dict[str, Any], str, str]] = {
    # 26.04 lists GPT_OSS_120B_PRETRAIN_CONFIG_H100_FP8_MX_{V1,V2}: TE refuses MXFP8 below
    # compute capability 10.0 (check_mxfp8_support), so the run cannot start on an H100
    "2604_gptoss_120b_fp8_mx_v2": (dict(GPTOSS, grad_accum=80,
                                        recompute="modules:layernorm,moe_act"), "fp8_mx",
                                   "linear_recipe"),
}


def _build(settings: dict[str, Any], precision: str) -> Any:
    kw = {**H100, **settings, **PRECISION[precision]}
    return T.estimate(kw.pop("model"), "train", **kw)


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    return {pid: _build(*PRESETS[pid]) for pid in PRESETS}


@pytest.mark.parametrize("pid", list(PRESETS))
def test_preset_is_priced_within_physics(pid: str, built: dict[str, Any]) -> None:
    settings, precision = PRESETS[pid]
    est = built[pid]
    s = est.step
    gpus = settings.get("dp", 1) * settings.get("tp", 1) * settings.get("pp", 1)
    assert s.gpus == gpus
    # tokens of one step: GBS x seq = GA x MBS x DP x seq
    assert s.tokens == settings["grad_accum"] * settings["dp"] * 4096
    # the parts sum to the whole: compute (with host time and recompute, less the combined
    # 1F1B's hidden all-to-all) + bubble + p2p + exposed DP communication + optimizer step
    assert s.time_s == pytest.approx(s.compute_s + s.bubble_s + s.p2p_s + s.exposed_comm_s
                                     + s.optimizer_s, rel=1e-9)
    assert min(s.compute_s, s.bubble_s, s.p2p_s, s.exposed_comm_s, s.optimizer_s) >= 0.0
    # slower than the datasheet roofline of its GEMM FLOPs: 6 x (active non-embedding params)
    # x tokens per GPU at the dense peak of the recipe's GEMMs (fp8 for FP8-CS / FP8-SC)
    cfg = T.config(settings["model"])
    counts = cfg.param_counts()
    n_active = counts["active"] - counts["embedding"]
    peak = rl.hardware("H100 SXM").peak_flops_per_s("bf16" if precision == "bf16" else "fp8")
    assert s.time_s > 6.0 * n_active * (s.tokens / s.gpus) / peak
    # MFU (of the model FLOPs, against the recipe's dense peak) in a physical range
    assert 0.03 < s.mfu < 0.7
    assert s.hfu >= s.mfu
    mem = s.memory  # per GPU: its parts sum to the total
    assert mem["total_bytes"] == pytest.approx(
        sum(v for k, v in mem.items() if k != "total_bytes"), rel=1e-12)
    # the preset ran on H100s: what the frameworks keep fits the 80 GB (tests/
    # test_saved_activations.py derives a layer's saved bytes)
    assert est.memory["total_bytes"] <= est.memory["capacity_bytes"]


@pytest.mark.parametrize("pid", list(REFUSED))
def test_preset_outside_the_model_names_the_option(pid: str) -> None:
    settings, precision, option = REFUSED[pid]
    with pytest.raises(ValueError, match=option):
        _build(settings, precision)


def test_qwen3_next_is_not_a_built_in_model() -> None:
    # QWEN3_NEXT_80B_A3B_PRETRAIN_CONFIG_H100_*: gated DeltaNet + attention hybrid, not built in
    with pytest.raises(KeyError, match="Qwen3-Next-80B-A3B"):
        T.config("Qwen3-Next-80B-A3B")


def test_the_presets_differ_as_their_settings_say(built: dict[str, Any]) -> None:
    # V2 doubles DeepSeek-V3's GA: the same micro-batch, a smaller bubble share
    v1, v2 = built["2602_deepseek_v3_bf16_v1"].step, built["2602_deepseek_v3_bf16_v2"].step
    assert v2.tokens == 2 * v1.tokens
    assert v2.bubble_s == pytest.approx(v1.bubble_s, rel=1e-9)
    assert v2.tokens / v2.time_s > v1.tokens / v1.time_s
    # the recomputed modules cost forward time: DeepSeek-V3's MLA up-projections and dense MLPs
    assert v1.recompute_s > 0.0
    assert built["2511_gptoss_120b_bf16"].step.recompute_s == 0.0  # inert in 25.11
    assert built["2602_gptoss_120b_bf16_v1"].step.recompute_s > 0.0


#: HybridEP's published H100 table (deepseek-ai/DeepEP hybrid-ep ``docs/README_Hybrid-EP.md``:
#: 4096 tokens of 7168, top-8, 8 local experts per rank, random uniform routing, BF16
#: dispatch, kernel time only): RDMA algorithm bandwidth (``tests/test_hybrid_ep.py``: tokens
#: x remote nodes hit x hidden x 2 bytes / time), GB/s, the best of 4 / 8 / 16 SMs, by ranks.
HYBRIDEP_H100_RDMA_GB_S = {16: 76.80, 32: 57.69, 64: 50.55}


@pytest.mark.parametrize("ranks", sorted(HYBRIDEP_H100_RDMA_GB_S))
def test_hybridep_across_nodes_against_its_h100_table(ranks: int) -> None:
    # the dispatch of one MoE layer as the model prices it for that configuration: one row
    # per token and destination node over RDMA (hybrid-ep 1dddd19), NVLink inside the node
    t, h, k, local = 4096, 7168, 8, 8
    e = 8 * ranks
    rows = t * k * ranks_hit(e, k, ranks) * ranks / k  # one per token and destination rank
    nic = nccl_nic_bytes_per_s(DEFAULT_NETWORK_BYTES_PER_S, True)
    est = hybridep_columns(rows * (h * 2 + e / ranks * 4), ranks, (local, nic),
                           node_share(e, k, ranks, local), 370e9,
                           HYBRIDEP_PEER_S["hybridep_dispatch"], "H100 SXM")
    nodes = ranks // local
    hit = 1 - math.comb(e - e // nodes, k) / math.comb(e, k)  # a remote node holds an expert
    rdma_gb_s = t * (nodes - 1) * hit * h * 2 / est.time_s / 1e9
    published = HYBRIDEP_H100_RDMA_GB_S[ranks]
    # never faster than the kernel measured; at 64 ranks (DeepSeek-V3's EP64) within 10 %
    # (the 16- and 32-rank figures exceed a 400 Gb/s NIC: their cluster's rails are not stated)
    assert rdma_gb_s <= published
    if ranks == 64:
        assert rdma_gb_s == pytest.approx(published, rel=0.10)


def test_flex_dispatchers_cross_the_nic_once_per_node(built: dict[str, Any]) -> None:
    # DeepSeek-V3 at EP64 over 8 nodes: DeepEP (25.11) and HybridEP (26.02) both send a token
    # once per destination node; NCCL's all-to-all sends it once per expert
    kw = dict(DSV3, grad_accum=128)
    a2a = _build(dict(kw, moe_dispatcher="alltoall"), "bf16")
    hyb = built["2602_deepseek_v3_bf16_v1"]

    def exchange_s(est: Any) -> float:
        return sum(float(t) * len(est.groups[g][1]) for (g, n, _), t in
                   zip(est.rows, est.columns["time_s"], strict=True)
                   if n.startswith(("dispatch all_to_all", "combine all_to_all")))

    assert exchange_s(hyb) < 0.8 * exchange_s(a2a)
    assert hyb.step.tokens_per_s > a2a.step.tokens_per_s


def test_tensor_parallel_ranks_route_their_sequence_share() -> None:
    # Megatron-Core with TP > 1 (sequence parallel) and EP > 1, ETP 1 (DeepSeek-V3's and
    # Qwen3-235B's H100 presets): the MoE layer's input is split over the TP ranks and the
    # all-to-all dispatcher gathers nothing before the experts (token_dispatcher.py: the
    # gather runs over the expert-TP group, size 1), so each GPU's experts see t/tp tokens
    kw = dict(hardware="H100 SXM", seq_len=4096, micro_batch=1, ep=8, dp=8, gpus_per_node=8)
    one = T.estimate("Qwen3-30B-A3B", "train", tp=1, **kw)
    two = T.estimate("Qwen3-30B-A3B", "train", tp=2, **kw)

    def flops(est: Any, name: str) -> float:
        return sum(float(f) for (_, n, _), f in zip(est.rows, est.columns["flops"], strict=True)
                   if n == name)

    # 4096 x 8 rows over 8 ranks: 4096 rows a rank, 2048 with tp = 2 (experts unsplit)
    assert flops(one, "experts gate_up") == pytest.approx(2 * flops(two, "experts gate_up"))
    assert flops(one, "experts down") == pytest.approx(2 * flops(two, "experts down"))
    assert flops(one, "router") == flops(two, "router")  # priced on the whole sequence


def test_moe_permutes_keep_only_their_index_maps() -> None:
    # TE's fused moe_permute / moe_sort_chunks_by_index save their row_id_map for the
    # backward (a scatter of the gradients), not the rows: an elementwise row may say so
    from roofline.transformer.program import Program

    ops = Program(train=True, recipe=None)
    ops.elementwise(0, "act", 100, reads=2)
    ops.elementwise(0, "sort chunks by expert", 100, saved=0.0)
    assert ops.saved_by[0, "other"] == 200.0  # the activation's two inputs only
    # Qwen3-30B-A3B, 8 ranks, seq 4096, one micro-batch held: a layer keeps 3.7x the bytes of
    # its 4096 x 8 dispatched rows (experts' inputs, fc1 output, attention, the row_id_map;
    # the unpermute keeps only the map: Megatron-Core applies the probs in the experts);
    # with the permute and both chunk sorts saving their rows it was 8.7x. The exact
    # per-layer sum: tests/test_saved_activations.py
    est = T.estimate("Qwen3-30B-A3B", "train", hardware="H100 SXM", seq_len=4096,
                     micro_batch=1, ep=8, dp=8)
    rows_bytes = 4096 * 8 * 2048 * 2  # dispatched rows x hidden x bf16
    per_layer = est.step.memory["activations_bytes"] / 48
    assert 3 * rows_bytes < per_layer < 4 * rows_bytes
