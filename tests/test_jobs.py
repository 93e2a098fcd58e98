"""Whole-job validation: rl.validate / roofline validate on the published jobs file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import roofline as rl
from roofline.ops.host import launch_overhead
from roofline.transformer import TransformerConfig
from roofline.validation.jobs import (
    JOBS_FILE,
    job_estimate,
    price_job,
    read_jobs,
    validate_jobs,
)

#: Reserved for out-of-sample checks (issue #24): no row may come from these.
RESERVED = ("torchtitan/benchmarks", "allenai/OLMo-core", "pytorch/ao", "torchao",
            "docs.nvidia.com/nim", "vllm", "NVIDIA/Megatron-LM")


@pytest.fixture(scope="module")
def result():
    return rl.validate(JOBS_FILE)


def test_repo_copy_rows_and_sources():
    rows = read_jobs(JOBS_FILE)
    assert len(rows) == 292 and len({r["id"] for r in rows}) == 292
    for r in rows:
        assert not any(s.lower() in r["source"].lower() for s in RESERVED), r["id"]
        # Megatron-Bridge's performance summary (and its archive): its H100 rows are reserved
        if "Megatron-Bridge docs/performance-summary" in r["source"]:
            assert "H100" not in r["hardware"], r["id"]


def test_llmfoundry_rows_are_whole_tables_at_one_commit():
    """llm-foundry's MPT benchmark README: every row of its three H100 tables and of its
    A100 80GB table at one commit, each mapped from its own columns (FSDP1 through Composer:
    FULL_SHARD / SHARD_GRAD_OP, mixed precision DEFAULT = fp32 gradient reduction, PURE =
    bf16; activation checkpointing = every block recomputed)."""
    rows = [r for r in read_jobs(JOBS_FILE) if r["id"].startswith("llmfoundry_")]
    tables: dict[str, int] = {}
    for r in rows:
        assert "@ 5e85bd62d4ec9e13353ca95877477602ab538e5b (" in r["source"], r["id"]
        tables[r["source"].split(" (", 1)[1]] = tables.get(r["source"].split(" (", 1)[1], 0) + 1
        c = r["config"]
        assert c["dp"] == r["gpus"] and c["tp"] == c["pp"] == c["cp"] == 1, r["id"]
        assert c["zero"] == 3 and c["gpus_per_node"] == 8, r["id"]
        # attn_impl triton: llm-foundry's Triton FlashAttention; flash: flash-attn 2's varlen
        # kernel behind unpad_input / pad_input (flash_attn_fn, every layer)
        assert c["attention_backend"] == {"triton": "flash_triton", "flash": "flash_varlen"}[
            c["attn_impl"]], r["id"]
        assert c["reshard_after_forward"] is False if c["sharding_strategy"] == "SHARD_GRAD_OP" \
            else "reshard_after_forward" not in c, r["id"]
        assert c["reduce_dtype"] == {"DEFAULT": "fp32", "PURE": "bf16"}[
            c["fsdp_mixed_precision"]], r["id"]
        assert c["recompute"] == ("full" if c["activation_checkpointing"] else "none"), r["id"]
        # Composer 0.17's step: FSDP1, DecoupledAdamW, LanguageCrossEntropy + Perplexity
        assert (c["fsdp"], c["optimizer"], c["train_metrics"], c["modules"],
                c["clip_grad_norm"]) == ("fsdp1", "decoupled_adamw", 2, "torch", True), r["id"]
        # amp_fp8 with fc_type te: TE v0.10's DelayedScaling, te.Linear called without
        # is_first_microbatch (the weight cast in every call)
        assert (c["linear_recipe"] == "delayed_te_uncached") == (c["precision"] == "amp_fp8"), \
            r["id"]
        assert r["family"] == ("train_dense_lowp" if c["linear_recipe"] else
                               "train_dense_bf16"), r["id"]
        m = c["model"]  # MPT: GELU MLP x4, LayerNorm, biases, tied head, no RoPE, MHA
        assert (m["intermediate_size"] == 4 * m["hidden_size"] and not m["mlp_gated"]
                and m["norm"] == "layernorm" and m["tie_embeddings"] and not m["rope"]
                and m["attention_bias"] and m["mlp_bias"]
                and m["num_kv_heads"] == m["num_heads"] and m["vocab_size"] == 50368), r["id"]
    assert tables == {"H100 80GB BF16 (Large Scale, >= 128 GPUs))": 18,
                      "H100 80GB BF16)": 52, "H100 80GB FP8)": 7,
                      "A100 80GB with 1600 Gbps node-node interconnect (RoCE))": 61}


def test_megatron_bridge_405b_rows_overlap_tp_communication():
    """Megatron-Bridge's llama31_405b_pretrain_config turns TP communication overlap on and its
    performance scripts keep it (they only swap the userbuffers config)."""
    rows = [r for r in read_jobs(JOBS_FILE) if r["id"].startswith("mbridge")
            and "405b" in r["id"]]
    assert len(rows) == 6
    assert all(r["config"]["tp_comm_overlap"] is True for r in rows)



NEMO_H100_TWINS = {  # new row -> the NeMo 24.07 row of the same model and layout
    "nemolauncher2405_h100_gpt3_5b_fp8": "nemo2407_h100_gpt3_5b_fp8",
    "nemolauncher2405_h100_gpt3_20b_fp8": "nemo2407_h100_gpt3_20b_fp8",
    "nemolauncher2405_h100_gpt3_175b_128gpu_fp8": "nemo2407_h100_gpt3_175b_128gpu_fp8",
    "nemolauncher2405_h100_llama2_7b_fp8": "nemo2407_h100_llama2_7b_fp8",
    "nemolauncher2405_h100_llama2_13b_fp8": "nemo2407_h100_llama2_13b_fp8",
    "nemolauncher2405_h100_llama2_70b_fp8": "nemo2407_h100_llama2_70b_fp8",
    "nemolauncher2405_h100_llama3_8b_fp8": "nemo2407_h100_llama3_8b_fp8",
    "nemolauncher2405_h100_llama3_70b_fp8": "nemo2407_h100_llama3_70b_fp8",
    "nemo2502_h100_gpt3_175b_512gpu_fp8": "nemo2407_h100_gpt3_175b_512gpu_fp8",
    "nemolauncher2405_h100_nemotron_8b_fp8": "nemo2407_h100_nemotron_8b_fp8",
    "nemolauncher2405_h100_nemotron_22b_fp8": "nemo2407_h100_nemotron_22b_fp8",
}


def test_nemo_h100_container_twins_parse_price_and_keep_the_layout():
    """The NeMo H100 FP8 rows of other containers (launcher 24.05, NeMo 2.0 25.02) parse, price,
    and differ from their 24.07 twin only where their source says so (VP from the 24.05
    launcher confs: GPT3-175B 12, Llama-3-70B 10; the 25.02 recipe's TP overlap; cuDNN
    attention for the 24.07 175B script only); same recipe (DelayedScaling), same mapping."""
    rows = {r["id"]: r for r in read_jobs(JOBS_FILE)}
    layout = ("model", "seq_len", "micro_batch", "grad_accum", "dp", "tp", "pp", "cp", "ep",
              "zero", "recompute", "sequence_parallel", "linear_recipe", "precision",
              "tp_comm_overlap", "pipeline_head")
    vp = {"nemolauncher2405_h100_gpt3_175b_128gpu_fp8": 12,
          "nemolauncher2405_h100_llama3_70b_fp8": 10}
    # what the sources set differently: NeMo 2.0's gpt3_175b recipe overlaps TP communication
    # (gpt3/175b.yaml of 2024 did not) and fuses the loss; the 24.07 175B script alone ran
    # cuDNN attention; the llama3 / nemotron configs fuse the loss from July 2024
    differs = {"nemo2502_h100_gpt3_175b_512gpu_fp8": {"tp_comm_overlap", "attention_backend",
                                                       "cross_entropy"},
               "nemolauncher2405_h100_gpt3_175b_128gpu_fp8": {"attention_backend"},
               **{f"nemolauncher2405_h100_{m}_fp8": {"cross_entropy"}
                  for m in ("llama3_8b", "llama3_70b", "nemotron_8b", "nemotron_22b")}}
    for rid, twin in NEMO_H100_TWINS.items():
        r, t = rows[rid], rows[twin]
        assert (r["family"], r["hardware"], r["gpus"]) == (t["family"], t["hardware"], t["gpus"])
        same = (*layout, "attention_backend", "cross_entropy")
        assert all(r["config"].get(k) == t["config"].get(k) for k in same
                   if k not in differs.get(rid, ())), rid
        assert r["config"]["linear_recipe"] == "delayed_te", rid
        # Megatron-Core before uneven pipeline splits: the head and loss on the last stage
        assert (r["config"].get("pipeline_head") == "last") == (r["config"]["pp"] > 1), rid
        assert r["config"]["virtual_stages"] == vp.get(rid, t["config"]["virtual_stages"]), rid
        assert r["measured"] != t["measured"] and r["source"] != t["source"], rid
        c = r["config"]
        assert c["dp"] * c["tp"] * c["pp"] * c["cp"] == r["gpus"], rid
        # same layout, same recipe: the same step time up to VP's pipeline bubble
        assert price_job(r) > 0
        if rid not in vp and rid not in differs:
            assert price_job(r) == pytest.approx(price_job(t)), rid


def test_nemo2504_gb200_rows_parse_price_and_follow_the_published_layout():
    """NeMo 2.0 25.04 DGX-GB200 rows: FP8 current scaling as TE runs it on sm100
    (tensorwise_te), one NVL72 domain, GA = GBS / (MBS * DP) as published, FSDP -> ZeRO-3."""
    rows = [r for r in read_jobs(JOBS_FILE) if r["id"].startswith("nemo2504_gb200_")
            and r["family"] == "train_dense_lowp"]
    published_ga = {"gpt3_175b": 16, "llama3_8b": 8, "llama3_70b": 2, "llama31_405b": 32,
                    "nemotron4_15b": 2, "nemotron4_340b": 8}
    assert {r["id"][len("nemo2504_gb200_"):-len("_fp8-cs")] for r in rows} == set(published_ga)
    for r in rows:
        c = r["config"]
        assert r["hardware"] == "GB200" and c["gpus_per_node"] == 72, r["id"]
        assert c["linear_recipe"] == "tensorwise_te" and r["family"] == "train_dense_lowp"
        assert c["dp"] * c["tp"] * c["pp"] * c["cp"] == r["gpus"], r["id"]
        assert c["grad_accum"] == published_ga[r["id"][len("nemo2504_gb200_"):-len("_fp8-cs")]]
        assert (c["zero"], c.get("fsdp")) == ((3, "megatron") if "70b" in r["id"] else (1, None))
        assert c["sequence_parallel"] == (c["tp"] > 1) == bool(c.get("tp_comm_overlap"))
        # only the llama31_405b recipe sets account_for_embedding/loss_in_pipeline_split
        assert (c.get("pipeline_head") == "last") == (c["pp"] > 1 and "405b" not in r["id"])
        # NeMo 2.3.0's squared_relu is eager torch.pow(F.relu(x), 2) (not scripted)
        assert (c.get("mlp_activation") == "relu_pow") == ("nemotron" in r["id"])
        # the recipes' DDP keeps its per-bucket NaN / Inf checks; Megatron-FSDP runs none
        assert bool(c.get("check_for_nan_in_grad")) == (c["zero"] < 3)
        # NeMo 2.3.0's perf scripts turn fp8_param_gather off under Megatron-FSDP and reduce
        # gradients in bf16
        assert c.get("fp8_param_gather", True) == (c["zero"] < 3)
        assert c.get("reduce_dtype") == ("bf16" if c["zero"] == 3 else None)
        assert price_job(r) > 0


def test_nemo_h100_rows_overlap_tp_communication_as_their_launcher_configs():
    """NeMo-Framework-Launcher's H100 configs of the 24.07 window set ub_tp_comm_overlap for
    GPT-3 20B, Llama-2 70B and Llama-3 70B (TP > 1 with sequence parallelism)."""
    rows = {r["id"]: r for r in read_jobs(JOBS_FILE)}
    for rid in ("nemo2407_h100_gpt3_20b_fp8", "nemo2407_h100_llama2_70b_fp8",
                "nemo2407_h100_llama3_70b_fp8"):
        c = rows[rid]["config"]
        assert c["tp_comm_overlap"] is True and c["tp"] > 1 and c["sequence_parallel"], rid


_H, _A = "hybridep", "alltoall"
_ALL4 = ("gb300", "gb200", "b300", "b200")
MOE_ADDED = {  # row id -> (published GBS, dispatcher) (issue #24, session 13: hardware-notes §24)
    **{f"mbridge2602_{s}_gptoss120b_bf16": (1280, _A) for s in _ALL4},
    **{f"mbridge2602_{s}_qwen3_30b_a3b_fp8-mx": (512, _A if s == "b200" else _H) for s in _ALL4},
    **{f"mbridge2602_{s}_deepseekv3_fp8-mx": (4096, _H) for s in _ALL4},
    **{f"mbridge2602_{s}_qwen3_235b_a22b_fp8-mx": (8192, _A if s == "b200" else _H)
       for s in ("gb300", "gb200", "b200")},
    **{f"mbridge2604_{s}_gptoss120b_bf16": (1280, _H) for s in ("b300", "b200")},
    "mbridge2604_b200_qwen3_30b_a3b_fp8-mx": (512, _H),
    **{f"mbridge2604_{s}_qwen3_235b_a22b_fp8-mx": (8192, _A if s == "b300" else _H)
       for s in ("gb300", "gb200", "b300")},
    "nemo2504_gb200_mixtral_8x7b_fp8-cs": (256, _A), "nemo2502_b200_mixtral_8x7b_fp8": (256, _A),
}


def test_added_moe_rows_follow_the_published_layout_and_presets():
    """The session-13 MoE rows: GA = GBS / (MBS * DP) of the published GBS, every GPU in the
    layout, NVL72 racks as one NVLink domain, HybridEP exactly where the scripts set the flex
    dispatcher (every 26.02 DeepSeek-V3 row; Qwen3 per system; GPT-OSS from 26.04 on B200 /
    B300; never NeMo's Mixtral), MXFP8 as TE runs it, Mixtral's drop-and-pad as it ran
    (capacity factor 1.0, padded: MegatronTokenDropCallback)."""
    rows = {r["id"]: r for r in read_jobs(JOBS_FILE)}
    for rid, (gbs, dispatcher) in MOE_ADDED.items():
        r, c = rows[rid], rows[rid]["config"]
        assert r["family"] == "train_moe" and r["unit"] == "tokens/s/GPU", rid
        assert c["dp"] * c["tp"] * c["pp"] * c["cp"] == r["gpus"], rid
        assert c["grad_accum"] * c["micro_batch"] * c["dp"] == gbs, rid
        assert c["gpus_per_node"] == (72 if r["hardware"].startswith("GB") else 8), rid
        assert c.get("moe_dispatcher", "alltoall") == dispatcher, rid
        assert c.get("routing_skew", 0.0) == 0.0, rid
        if "fp8-mx" in rid:
            assert c["linear_recipe"] == "mxfp8_te" and "overlap_param_gather" not in c, rid
        if "deepseekv3" in rid:  # 26.02 keeps MTP; the layouts put it on the last stage
            assert c["mtp_layers"] == 1 and c["recompute"] == "modules:mla_up_proj", rid
    # since c9dd05869 the presets' recompute_modules are selective: GPT-OSS without graphs
    # recomputes its norms and expert activation
    for rid in ("mbridge2602_gb200_gptoss120b_bf16", "mbridge2604_b200_gptoss120b_bf16"):
        assert rows[rid]["config"]["recompute"] == "modules:layernorm,moe_act", rid
    assert rows["mbridge2602_gb300_gptoss120b_bf16"]["config"]["recompute"] == "none"
    assert rows["nemo2504_gb200_mixtral_8x7b_fp8-cs"]["config"]["linear_recipe"] == "tensorwise_te"
    assert rows["nemo2502_b200_mixtral_8x7b_fp8"]["config"]["linear_recipe"] == "delayed_te"
    for rid in ("nemo2504_gb200_mixtral_8x7b_fp8-cs", "nemo2502_b200_mixtral_8x7b_fp8"):
        c = rows[rid]["config"]
        assert (c["moe_capacity_factor"], c["moe_pad_to_capacity"]) == (1.0, True), rid
    # every added row is priced (none is marked not expressible)
    assert all(price_job(rows[rid]) > 0 for rid in MOE_ADDED)


def test_nemo_2024_h100_rows_run_what_the_launcher_configs_set():
    """The 2024 NeMo H100 rows (launcher 24.05 table, NeMo 24.07 docs) ran NeMo-Framework-
    Launcher's configs: config.yaml's NVTE_FUSED_ATTN: 0 leaves Transformer Engine on
    FlashAttention-2 (only the 24.07 175B script sets NVTE_FUSED_ATTN=1), and gpt3/175b.yaml
    says ub_tp_comm_overlap: False; NeMo 2.0's 25.02 recipe overlaps and keeps cuDNN."""
    rows = {r["id"]: r for r in read_jobs(JOBS_FILE)}
    old = [rid for rid in rows if rid.startswith(("nemolauncher2405_h100", "nemo2407_h100"))]
    assert len(old) == 21
    for rid in old:
        c = rows[rid]["config"]
        cudnn = rid.startswith("nemo2407") and "175b" in rid
        assert c.get("attention_backend", "auto") == ("auto" if cudnn else "flash"), rid
        assert ("NVTE_FUSED_ATTN" in rows[rid]["notes"]), rid
        if "175b" in rid:
            assert c["tp_comm_overlap"] is False, rid
        # the loss: Megatron-Core's compiled fusion only where the launcher config sets
        # cross_entropy_loss_fusion (the 24.07 window's llama3 / nemotron configs), else its
        # default, unfused
        fused = rid.startswith("nemo2407") and ("llama3" in rid or "nemotron" in rid)
        assert c["cross_entropy"] == ("native" if fused else "unfused"), rid
    new = rows["nemo2502_h100_gpt3_175b_512gpu_fp8"]["config"]
    assert new["tp_comm_overlap"] is True and "attention_backend" not in new
    assert new["cross_entropy"] == "native"  # NeMo 2.0's GPTConfig fuses (Megatron's impl)
    # cuDNN's fused attention is faster than FA2 on Hopper: the same row priced both ways
    row = json.loads(json.dumps(rows["nemo2407_h100_llama3_8b_fp8"]))
    flash = price_job(row)
    row["config"]["attention_backend"] = "auto"
    assert price_job(row) > flash

def test_family_medians_pinned(result):
    """The error per family today (regressions fail; improvements update the pins)."""
    t = result.table.set_index(["by", "family"])
    # train_dense_lowp 0.109 -> 0.139 and train_moe 0.341 -> 0.343 when the Megatron-Bridge
    # Blackwell rows moved to what Transformer Engine runs (tensorwise_te / mxfp8_te: no
    # transposed fp8 copies on sm100, one MXFP8 quantize for both layouts, fp8 weights) and
    # block-scaled GEMMs got the library's clock and rate terms: the torchao cast model had
    # hidden a level error elsewhere (every Blackwell fp8 row is now 4-25 % too fast).
    # train_moe 0.343 -> 0.310 when the launches a dropless MoE step exposes were priced by
    # host call class (a GEMM call, an expert weight's autograd node and DDP hook).
    # -> 0.295 with Megatron-Core dispatching bf16 hidden states under fp8 recipes; -> 0.283
    # with training's NCCL transfers at 370/450 of the NVLink line rate; -> 0.271 with cuDNN's
    # softmax on Blackwell at the SFUs' rate (tensor cores doubled, SFUs not).
    # train_dense_lowp 0.139 -> 0.100 (p90 0.235 -> 0.168, bias -12 % -> 0 %) (issue #24): a
    # training step's GEMMs and attention run at the power limiter's settled clock (megatron
    # runtime), the 405B rows overlap TP communication as their recipe does, and the GB300
    # takes the B300's measured GEMM rate.
    # Kernels at GPU time (the streaming latency net of do_bench's per-call launch gap) with
    # both of the above: serve 0.083 -> 0.065, dense bf16 0.062 -> 0.066, lowp 0.096, moe 0.240.
    # Issue #24 (out of sample, nothing tuned to them): TensorRT-LLM's v0.5/v0.6.1 performance
    # page (static batches: serve_static_batch; batch-1 TTFT) and DataCrunch's SGLang runs on
    # 4x H200 (offline throughput; ITL and TTFT at 1-4 requests/s). serve_throughput
    # 0.065 (20 rows) -> 0.072 (25) with the SGLang rows, 35-49 % too fast.
    # train_dense_bf16 0.066 -> 0.060 with aten's non-vectorized loops (runtime "hf").
    # The SGLang offline rows priced as finite runs (serve(num_requests=...): ramp, full-cache
    # admission, drain): 34-49 % -> 23-40 % too fast; serve_throughput median stays 0.072
    # (p90 0.379 -> 0.277).
    # serve_static_batch 0.085 -> 0.064 (p90 0.497 -> 0.137): TensorRT-LLM v0.6.1's masked
    # multi-head attention reads a GQA model's KV once per query head (decode_kv_reads
    # "per_query_head"): the Llama-2-70B rows 20-55 % too fast -> 1-35 % too slow.
    # train_moe 0.240 -> 0.216 (p90 0.467 -> 0.469, bias -24 % -> -22 %) with the expert
    # GEMMs (TE GroupedLinear's per-expert cuBLAS GEMMs) at the settled clock like the dense
    # ones; host-bound B200 rows unchanged (GPU time replaces exposed launch time).
    # -> 0.219 (p90 0.469 -> 0.448) with pipeline stages of whole layers (the busiest holds
    # ceil(L/pp)): 5 of the 6 pipelined MoE rows 1-4 points closer, GB300 Qwen3-235B
    # +13.8 -> +16.0 % (crossing the median); dense lowp median unchanged.
    # serve_latency 0.098 -> 0.115 when SDPA's attention calls took their GPU part of the call
    # constants at GPU time (then universal.gpu_call_s 1.35 us, measured on the H200 traces, for
    # FA2's per-call 20 us, host included): the A100 TensorRT-LLM TTFT rows, priced with FA2 as
    # the stand-in for TRT-LLM's context FMHA, lose ~19 us per layer and go 1-5 % further
    # under (the host time had been hiding part of their gap).
    # Interleaved pipelines overlap their sends (Megatron-Core's overlap_p2p_comm, set by
    # NeMo / Megatron-Bridge whenever vp > 1): train_dense_lowp 0.096 -> 0.092 (the H100
    # NeMo PP rows, which send across nodes); train_moe 0.240 -> 0.261 (its interleaved rows,
    # already too fast, get faster). -> 0.083 (p90 0.158 -> 0.138) with TP communication
    # overlap on the NeMo H100 rows whose launcher configs set it (20B, Llama-2/3 70B).
    # train_dense_bf16 0.060 -> 0.041 (p90 0.064 -> 0.047, bias -6 -> -4 %): a training
    # step's GEMMs and attention run at the settled clock in every runtime ("hf" /
    # "compiled" and roofline.torch.estimate too, one rule: roofline.ops.sustained).
    # All four merged (session 5): train_dense_lowp 0.084, train_moe 0.222 (p90 0.460).
    # train_moe 0.222 -> 0.178 (p90 0.460 -> 0.447): the B200 GPT-OSS row at the recipe's EP64
    # (the table's EP8 puts 252 GB on a 180 GB GPU): -55 % -> -19 %.
    # -> 0.208 (p90 0.447) when an expert group wider than a node sends only the off-node
    # 56/64 of each all-to-all through the NICs (7/64 cross NVLink at once) instead of 63/64
    # at the NIC rate: that B200 row -19 % -> -25 % (it crosses the median).
    # -> 0.195 (p90 0.447 -> 0.387, bias -21 -> -19.5 %) with TE GroupedLinear's per-expert
    # Python bookkeeping (9 / 6 / 5 calls without a kernel per expert GEMM, TE 2.9): the B200
    # rows, host-bound, -47/-45/-32 % -> -40/-39/-23 %; GB200 Qwen3-30B -28 -> -27 %.
    # Median unchanged (p90 0.386 -> 0.372) with the MTP block and the loss on the last pipeline
    # stage (the B200 DeepSeek-V3 row, w/ MTP, pp=16: [decoder, mtp, loss] outweighs 4
    # decoder layers): -39 % -> -33 %.
    # SGLang's scheduler in the finite runs (prefill batches pause decoding, the overlap
    # scheduler admits an arrival a step late) and the online rows as finite runs at their
    # rate (median TTFT / ITL): serve_latency median stays 0.115 (p90 0.539 -> 0.414; TTFT
    # rows 54-62 % -> 33-43 % too fast), serve_throughput 0.072 (p90 0.277 -> 0.265; the
    # SGLang offline rows 23-40 % -> 14-38 % too fast).
    # serve_throughput 0.072 -> 0.081 (p90 0.265 -> 0.199, bias -2 % -> +4 %): a maximum-
    # throughput run keeps the engine full for minutes, so its GEMMs and attention run at
    # the power limiter's settled clock as a training step's do (B200 FP4 rows 26-27 % ->
    # 17-21 % too fast, SGLang offline 8-34 % too fast; TensorRT-LLM H100 rows 4-14 % slow).
    # serve_latency median stays 0.115 (p90 0.414 -> 0.299) with SGLang's eager extend
    # batches priced as an eager PyTorch program's host calls (SGLang TTFT 33-43 % -> 17-31 %
    # too fast). -> p90 0.287 with the online runs' Poisson arrivals (rate-4 TTFT -31 -> -29 %).
    # TensorRT-LLM's FP8 rows with its static (calibrated) activation scales, linear_recipe
    # tensorwise_static (one quantize kernel, no amax pass): serve_static_batch 0.064 -> 0.043,
    # serve_throughput 0.081 -> 0.067; serve_latency 0.115 -> 0.145 (the v0.5 H100 TTFT rows
    # lose the amax kernels' GPU time: 128 tokens -28 / -42 % -> -33 / -46 %).
    # Median unchanged (0.195 -> 0.198) when a float8 linear's launches no longer count the
    # bf16 GEMM float8.linear reports as its baseline (tensorwise inference: 4 launches, not 5).
    # serve_latency median unchanged (0.145; p90 0.317 -> 0.284) when TensorRT-LLM v0.5's
    # TTFT rows launch the context step kernel by kernel (cuda_graphs false): the H100 FP8
    # 128-token rows, host-bound, -33 / -46 % -> -18 / -38 %; the others GPU-bound.
    # serve_latency 0.145 -> 0.109 (p90 0.284 unchanged, bias -14 % -> -11 %): TensorRT-LLM
    # v0.5's GatedMLP runs fc and gate as two linears (gated_mlp "separate"): one more GEMM
    # launch per layer (and one more FP8 input quantization): the host-bound H100 FP8
    # 128-token rows -18 / -38 % -> -8 / -31 %, the others within 2 points.
    # serve_throughput 0.067 -> 0.064 (p90 0.199 unchanged); serve_latency median 0.109
    # (p90 0.284 -> 0.272) when an eager engine step copies each all-reduce's input into the
    # custom all-reduce's registered buffer (SGLang's extend batches at TP 4: 160 copies,
    # +1.5 ms of host time on a 509-token prefill): SGLang TTFT -16/-16/-29 % ->
    # -15/-15/-27 %, SGLang offline rows 1-2 points closer.
    # serve_latency 0.109 -> 0.102 (p90 0.272 unchanged, bias -11 % -> -10 %): TensorRT-LLM
    # v0.5's TP all-reduces go through its NCCL plugin (allreduce "nccl": 370/450 of the
    # NVLink line rate, as training's): the GPU-bound 70B TP 4 rows -11.1 / -10.8 / -9.9 % ->
    # -7.5 / -10.0 / -8.4 % (H100 2048, A100 128 and 2048); H100 128 host-bound, unchanged.
    # serve_latency 0.102 -> 0.089 (p90 0.272 unchanged, bias -10 % -> -9 %): allreduce
    # "nccl" prices each protocol as NCCL 2.18's tuning model does (LL / LL128 / Simple ring
    # latencies 10.2 / 25.4 / 28.8 us at TP 4 over NVLink, not 6 us) and takes the fastest:
    # 70B TP 4 rows H100 2048 -7.5 -> -4.2 %, A100 128 -10.0 -> -3.0 %, A100 2048 -8.4 ->
    # -7.4 %, H100 128 (host-bound) -30.7 -> -29.2 %.
    # serve_throughput 0.064 -> 0.061 (p90 0.199 unchanged): SGLang's all-reduces of 8 MiB
    # or more (vLLM's custom all-reduce max_size) run NCCL: offline rows 1024/1024 -7.2 ->
    # -3.4 %, 1024/512 -10.0 -> -6.1 %, 4096/2048 -32.3 -> -30.9 %, 4096/1024 -25.0 ->
    # -23.0 %, 256/512 -6.0 -> -2.5 %; SGLang TTFT rate 1/2/4 -15.5/-14.7/-27.2 % ->
    # -14.4/-14.5/-27.5 % (serve_latency median 0.089 unchanged, p90 0.272 -> 0.273).
    # serve_latency 0.089 -> 0.088 (p90 0.273 -> 0.270): the v0.5 rows run the GPT attention
    # plugin (attention_plugin): one more kernel per layer (invokeBuildDecoderInfo) and the
    # RoPE kernel writing the KV cache: H100 7B 128 -7.5 -> -2.1 %, 70B 128 -29.2 -> -27.0 %,
    # 7B 2048 -15.6 -> -14.4 %; the others under 0.8 points.
    # serve_latency 0.088 unchanged (p90 0.270 -> 0.267), serve_throughput 0.061 unchanged
    # (p90 0.199 unchanged) with the SGLang rows' lengths spread as bench_serving draws them
    # (lengths "uniform" on [1, 2·mean - 1]): rate 4 ITL -27.0 -> -25.8 %, TTFT rates 2 / 4
    # -16.1 / -29.2 -> -15.6 / -29.0 %; offline 1024/1024 -3.4 -> -1.2 %, 1024/512 -6.1 ->
    # -4.5 %, 4096/2048 -30.9 -> -28.6 %, 4096/1024 -23.0 -> -21.3 %, 256/512 -2.5 -> +6.1 %.
    # train_moe 0.198 -> 0.190 (p90 0.372 unchanged) with the DeepSeek-V3 rows' recipe
    # recompute_modules priced (recompute="modules:mla_up_proj" on GB200 / B200,
    # "modules:moe_act" on GB300): GB200 BF16 -13.2 -> -11.5 %, B200 -33.3 -> -32.3 %.
    # 0.190 -> 0.189 with each expert's wgrad accumulated into its fp32 main_grad (TE's
    # fuse_wgrad_accumulation: k·n·8 bytes per expert); the host-bound B200 rows barely move.
    # 0.189 -> 0.188 (p90 0.372 -> 0.333) with GPT-OSS's expert fc2 bias added as Megatron's
    # TEGroupedMLP adds it (t + b*p in fp32, cat, cast): GPT-OSS -34.5 / -38.3 / -25.3 % ->
    # -29.1 / -33.6 / -22.9 % (GB300 / GB200 / B200); -> -29.0 / -33.5 / -22.9 % with the
    # attention's unfused bias-dropout-add (Megatron refuses the fused one with expert biases).
    # train_moe 0.187 unchanged (p90 0.332 -> 0.330) with Megatron-Core's router / all-to-all
    # preprocess launches counted (moe_host) and the rows' cuda_graph_scope: B200 rows move
    # by 0.1-0.4 points (DeepSeek-V3 -32.5 -> -32.4 %, Q235B -40.2 -> -40.0 %).
    # 0.187 unchanged when the training router's gating GEMM stays bf16 under a recipe
    # (Megatron's router_gating_linear, outside fp8_autocast): B200 Q30B -22.9 -> -24.6 %.
    # 0.187 -> 0.178 (p90 0.330 -> 0.329) with Megatron-Core's module calls per MoE layer
    # (TE layer spec: 13 forward modules + 8 TE Function backwards for Qwen3, 18 + 12 for
    # DeepSeek-V3) at the measured module-call cost, and cuda_graph_scope "attn": B200 Q30B
    # -24.6 -> -21.1 %, Q235B -40.1 -> -38.0 %, GB300 Q30B -13.9 -> -13.1 %.
    # 0.178 -> 0.176 (p90 0.329 -> 0.323) with the all-to-all dispatcher's second
    # all_to_all (the routing probabilities, forward and backward).
    # 0.176 -> 0.173 (p90 0.323 -> 0.321) with the forward's sync after the permute
    # (before_ep_alltoall) and the calls before the first post-sync launch charged: GB300 /
    # GB200 Q30B -13.0 / -26.1 -> -11.7 / -25.0 %.
    # 0.173 -> 0.172 with the router's fused aux-loss kernels (Qwen3 aux_loss, DeepSeek-V3
    # seq_aux_loss + expert bias; the rows' moe_load_balancing / moe_expert_bias): B200
    # Q235B -37.2 -> -36.5 %.
    # 0.172 unchanged (p90 0.321 -> 0.316) with sliding-window layers scoring window + the
    # kernel's 128-row query tile keys per query (cuDNN skips only fully masked tiles):
    # GPT-OSS GB300 / GB200 / B200 -28.3 / -32.4 / -22.6 -> -27.7 / -31.6 / -22.2 %.
    # 0.172 -> 0.165 (p90 0.316 -> 0.296) with what Megatron-Core runs unfused for GPT-OSS:
    # the clamped quick-GEGLU's eager clamps + cat (and their autograd), YaRN's RoPE (mscale
    # != 1 refuses TE's fused RoPE) and the activation offset's blocking host-to-device copy:
    # GPT-OSS -27.7 / -31.6 / -22.2 -> -20.3 / -25.0 / -18.9 % (GB300 / GB200 / B200).
    # serve_latency 0.088 -> 0.079 (p90 0.267 -> 0.262), serve_throughput 0.061 -> 0.060
    # (p90 0.199 unchanged) with SGLang's own copies (the query's contiguous copy before the
    # attention kernel, K and V written by two index copies, the logits' all-gather over TP,
    # its reorder copy and the fp32 cast of the whole vocabulary): SGLang ITL rate 1/2/4
    # -4.9/-10.2/-25.8 -> -3.0/-8.5/-24.3 %, TTFT -14.9/-15.6/-29.0 -> -12.7/-13.4/-27.1 %
    # (the eager prefill: 162 more host calls, 53.5 -> 55.0 ms for 513 tokens); offline
    # 1024/1024 -2.4 -> -1.5 %, 1024/512 -6.0 -> -5.4 %, 4096/2048 -28.7 -> -28.0 %,
    # 4096/1024 -21.4 -> -20.9 %, 256/512 +1.4 -> +2.3 %. Then the engines' vocabulary-
    # parallel embedding at TP > 1 (shard mask, masked_fill, all-reduce): 0.079 (p90 0.262)
    # and 0.060 unchanged; SGLang rows by 0.1 points.
    # train_moe 0.165 -> 0.162 (p90 0.296 -> 0.294), train_dense_lowp 0.083 unchanged (p90
    # 0.138 -> 0.129) with MXFP8 quantize kernels at 0.77 of the streaming rate on Blackwell
    # (cast.json's mxfp8_quantize_fraction, from nine published B200 kernel times: TE's
    # quantize_mxfp8 and torchao's MX casts; hardware-notes.md §11): the 11 FP8-MX rows move
    # 0.0-1.4 points slower (B200 / GB200 / GB300 Llama-3-8B -13.0 / -14.0 / -1.8 ->
    # -11.9 / -12.9 / -0.4 %).
    # train_moe 0.162 -> 0.140 (p90 0.294 -> 0.281) with the MoE host calls counted from TE
    # 2.9 / Megatron-Core 92c8482 (moe_host / moe_sync): module calls reaching the
    # low-precision '(fwd+bwd)' linears, TE's FusedAttention module, the compiled activation's
    # entry, Fp8Padding / Unpadding, each grouped GEMM call's stream / event calls and MXFP8
    # scale swizzles: B200 Qwen3-30B -20.3 -> -14.6 %, Qwen3-235B -36.5 -> -32.7, DeepSeek-V3
    # -31.3 -> -29.5, GB300 / GB200 Qwen3-30B -11.5 / -24.7 -> -9.6 / -23.1; other families
    # unchanged. Then TE's per-expert weight update_usage (forward and dgrad, quantized) and
    # clear_tensor_data after each wgrad: 0.140 -> 0.126 (p90 0.281 -> 0.269); B200 Qwen3-30B
    # -14.6 -> -11.8 %, Qwen3-235B -32.7 -> -30.8, DeepSeek-V3 -29.5 -> -27.8. Then Megatron's
    # forward pre-hook per expert weight (overlap_param_gather, ZeRO 1/2): 0.126 -> 0.123 (p90
    # 0.269 -> 0.265); B200 Qwen3-30B -11.1 %, DeepSeek-V3 -27.3 %. Then the two q / k norm
    # and RoPE launches, the RMSNorm backward's finalize kernel and TE's per-call fusible-op
    # fuser of each TENorm: 0.123 -> 0.120 (p90 0.265 -> 0.263); B200 Qwen3-30B -8.3 %,
    # Qwen3-235B -29.6 %, DeepSeek-V3 -27.0 %.
    # serve_latency (14, 0.079) -> (18, 0.102), p90 0.262 -> 0.251: DataCrunch's Llama 3.1
    # 405B TP 8 online runs at 1 and 2 requests/s added out of sample (ITL -7.6 / -12.1 %,
    # TTFT -17.1 / -15.2 %; the 4 and 8 requests/s runs are saturated and left out).
    # train_dense_bf16 (8, 0.041) -> (139, 0.296) and train_dense_lowp (23, 0.084) ->
    # (30, 0.100) with llm-foundry's MPT benchmark tables (131 bf16 rows, 7 amp_fp8 rows on
    # H100; Composer + PyTorch FSDP1), priced out of sample: 30.8 % median, 30 % too fast,
    # the error growing with the sequence (attention) and shrinking with the model width.
    # Then 0.296 -> 0.258 and 0.100 -> 0.091 with MPT's attention priced as the kernel it
    # calls (attention_backend="flash": FlashAttention-2, not cuDNN's): H100 rows 35.6 /
    # 40.1 / 15.7 % -> 28.3 / 27.7 / 13.0 % (bf16 / fp8 / large-scale), A100 unchanged.
    # Then 0.258 -> 0.078 (p90 0.431 -> 0.247) and 0.091 -> 0.056 with the attention
    # kernel those runs call (attn_impl triton: Tri Dao's Triton FlashAttention,
    # attention_backend="flash_triton", FA2's rate times 0.4813 from FA2's README charts):
    # llm-foundry 26.4 -> 7.8 % (A100 29.6 -> 8.6 %, H100 bf16 28.3 -> 9.1 %, FP8 27.7 ->
    # 2.3 %, large scale 13.0 -> 8.2 %); the error no longer grows with the sequence.
    # Then 0.078 -> 0.060 (p90 0.247 -> 0.167, bias -7 -> -5 %) and 0.056 -> 0.060 (the FP8
    # rows go from +0..+5 % to +3..+12 % too slow) with Composer's step as it runs
    # (fsdp="fsdp1": FSDP1's gradient path per unit and micro-batch; DecoupledAdamW's
    # per-tensor loop; the two cross-entropy train metrics on the logits): llm-foundry 7.8 ->
    # 6.1 % (p90 24.7 -> 16.8 %); rows without activation checkpointing -11.1 -> -7.5 %
    # median, checkpointed -2.6 -> +1.0 %; 125M on A100 -27..-15 % -> -12..-5 %.
    # Then 0.060 -> 0.051 (p90 0.167 -> 0.141) and 0.060 -> 0.067 with MPT's eager modules
    # (modules="torch": bias gradients as reductions, LayerNorm's gamma/beta kernel, the qkv
    # chunk's cat): llm-foundry 6.1 -> 5.4 % (p90 16.8 -> 14.2 %), rows without
    # checkpointing -7.5 -> -5.4 % median, checkpointed +1.0 -> +1.4 %; the FP8 rows (TE
    # linears: no bias reductions) go further too slow (+4..+13 %). Then 0.051 -> 0.050
    # (p90 0.141 -> 0.136) and 0.067 -> 0.068 with the yamls' gradient clipping by norm
    # (clip_grad_norm=True: FSDP1's per-tensor norm and mul_): llm-foundry 5.4 -> 5.3 %.
    # train_moe 0.120 -> 0.116 (p90 0.263 unchanged, bias -12 -> -10 %) with HybridEP's host
    # waits on the GB200 / GB300 rows whose presets set moe_flex_dispatcher_backend=
    # "hybridep" (moe_sync.SYNC_POINTS: 3 forward and 2 backward waits per MoE layer, from
    # DeepEP hybrid-ep's .item() / blocking pinned copies with Megatron-Core's dropless
    # num_dispatched_tokens=None): GB200 Qwen3-30B -22.2 -> -2.2 %, GB300 Qwen3-30B -8.5 ->
    # +16.1 %, GB200 / GB300 DeepSeek-V3 and Qwen3-235B within 1 point of before. Then
    # 0.116 -> 0.128 (p90 0.263 unchanged, bias -10 -> -13 %) with HybridEP's rows as it runs
    # them (one row per token and rank hit, no permute before the dispatch, no weighted sum
    # after the combine, the routing map's all-gather and metadata kernel; the exchanges
    # still at the all-to-all's rate): GB300 Qwen3-30B +16.1 -> +5.7 %, Qwen3-235B +6.7 ->
    # -1.0, DeepSeek-V3 +3.8 / -8.6 -> +0.2 / -12.8; GB200 Qwen3-30B -2.2 -> -10.7,
    # Qwen3-235B -5.8 -> -10.5, DeepSeek-V3 -10.5 / -12.6 -> -12.8 / -16.7 %. Then 0.128 ->
    # 0.117 (p90 0.263 -> 0.261) with the busiest pipeline stage holding DeepSeek-V3's MoE
    # layers, not 4/61 of all 61 (3 dense): DeepSeek-V3 GB300 +0.2 / -12.8 -> +1.1 / -11.6,
    # GB200 -12.8 / -16.7 -> -11.9 / -15.6, B200 -27.0 -> -26.7 %.
    # train_dense_bf16 0.050 -> 0.049 with FSDP2's copies around its collectives
    # (fsdp_passes: foreach_all_gather_copy_out, chunk_cat into the reduce_dtype buffer; the
    # Megatron-FSDP rows fsdp="megatron", unchanged): torchtitan 4.3 -> 2.0 % (p90 4.8 -> 2.7).
    # serve_latency 0.102 -> 0.100 (p90 0.251 -> 0.248; serve_throughput 0.060 and p90
    # 0.199 unchanged): SGLang's decode steps add the gap its FlashInfer plan leaves between
    # two graph replays (engines.engine_step_gap_s: 12 ops queued behind the step, two
    # blocking indptr copies, two host calls, the replay; 49 us, 52 us padded, at every
    # batch): ITL 70B -2.9 / -8.4 / -24.2 % -> -2.5 / -8.0 / -23.9 %, 405B -7.6 / -12.1 % ->
    # -7.5 / -11.9 %. The scheduler's per-request Python overlaps the GPU step (not priced);
    # the rows' growth with the running batch stays unexplained.
    # train_moe 0.117 -> 0.113 (p90 0.261 -> 0.258), train_dense_lowp 0.068 unchanged (p90
    # 0.130 -> 0.129) with MXFP8's weights per optimizer step as Megatron-Core runs them
    # (reuse_grad_buf_for_mxfp8_param_ag: the distributed optimizer gathers bf16, then every
    # rank quantizes its gathered weights and zeroes the borrowed buffer; param_refresh):
    # DeepSeek-V3 GB300 -11.6 -> -9.5 % (its gather is in the step), B200 405B FP8-MX -16.4 ->
    # -13.3 % (cross-node gather), the other FP8-MX rows 0.0-0.5 points slower. Then
    # 0.113 -> 0.112 (p90 0.258 -> 0.259) with TEGroupedMLP's Fp8Padding / Fp8Unpadding
    # copies under a recipe (the perf scripts' random-logit routing leaves expert counts
    # unaligned): DeepSeek-V3 GB300 / GB200 -9.5 / -15.5 -> -6.4 / -12.5 %, B200 -26.2 ->
    # -26.4 (host-bound: more GPU time hides more launch time), Qwen3-30B B200 / GB200 /
    # GB300 -8.3 / -10.7 / +5.8 -> -7.7 / -8.3 / +8.6, Qwen3-235B B200 -29.6 -> -28.6 %.
    # Then 0.112 -> 0.110 (p90 0.259 -> 0.264) with TE's split_quantize as it runs: one
    # MXFP8 quantize per local expert at the quantize rate (the output gradients' widths in
    # the backward): DeepSeek-V3 GB300 / GB200 -6.4 / -12.5 -> -5.4 / -11.6 %, B200 -26.4 ->
    # -27.1 (host-bound), Qwen3-30B GB200 / GB300 -8.3 / +8.6 -> -7.5 / +9.7 %.
    # train_dense_lowp 0.068 -> 0.095 (p90 0.130 -> 0.177, bias 0 -> -10 %) with the 16
    # H100 rows that ran Transformer Engine's DelayedScaling priced as TE runs it on sm90
    # (delayed_te / delayed_te_uncached: one cast-transpose per activation and grad_output,
    # amax in that kernel, no amax pass; Megatron-Core's weights cast once per step): the
    # llm-foundry FP8 rows +3.1..+14.2 % -> -7.0..+0.9 % (median |e| 6.7 -> 1.6 %); the NeMo 24.07
    # rows, which torchao's per-call weight casts had hidden, go too fast: +18.5 / +12.8 /
    # +6.1 / -9.1 % (GPT-3 20B / 175B x128 / x512 / Llama-3-8B) -> +3.6 / -17.0 / -13.5 /
    # -24.6 %, source median 6.1 -> 17.2 % (bias +3 -> -17 %). Regression of the pin, kept:
    # the casts are what ran; what the NeMo rows still lack is open (docs/model.md).
    # train_dense_lowp (30, 0.095) -> (39, 0.107) (p90 0.177 -> 0.225, bias -10 -> -11 %) with
    # nine more NeMo H100 FP8 rows (issue #24): NeMo-Framework-Launcher's 24.05 table (8 rows,
    # the 24.07 rows' models and layouts, -0.7 .. -25.6 %, source median 20.8 %) and NeMo 2.0's
    # 25.02 GPT3-175B x512 (-4.3 %). No new pricing: the rows add evidence of the open gap.
    # Then (39, 0.107) -> (43, 0.107) (p90 0.225 -> 0.223) with NeMo 2.0's 25.04 DGX-GB200
    # FP8-CS rows (GPT3-175B -8.8, Llama-3 8B -3.7, 70B -13.0, 405B -20.0 %), then (45, 0.117)
    # (p90 0.221, bias -12 %) with its Nemotron-4 15B / 340B rows (-17.4 / -14.4 %). Then
    # (49, 0.127) (p90 0.233, bias -13 %) with the Nemotron(-3) 8B / 22B H100 rows of the NeMo
    # 24.07 docs and the launcher's 24.05 table (8B -15.1 / -21.4 %, 22B -37.6 / -39.7 %: the
    # 22B's PP4 last stage holds a 256k-vocab head that the model spreads over the stages).
    # Then 0.127 -> 0.117 (p90 0.233 -> 0.214) with pipeline_head="last" on the 14 NeMo rows
    # whose Megatron-Core split the layers evenly and kept the head and loss on the last stage
    # (NeMo <= 24.07; NeMo 2.0 recipes without account_for_*_in_pipeline_split): Nemotron-22B
    # -37.6 / -39.7 -> -19.6 / -22.3 %, Llama-2-13B -22.9 / -25.6 -> -19.0 / -21.9 %,
    # Llama-3-70B -17.3 / -22.4 -> -13.0 / -18.5 %, GPT3-175B rows +1.5..3.5 points.
    # serve_latency 0.100 -> 0.077 (p90 0.248 -> 0.189, bias -10 -> -8 %), serve_throughput
    # 0.060 unchanged (p90 0.199 -> 0.188), serve_static_batch unchanged: the engines'
    # all-reduces under 8 MiB priced as vLLM's custom kernels (allreduce "custom": one-stage
    # 6.57 us + (p-1) copies at 0.887 of NVLink, two-stage from 512 KiB at TP 4 / 256 KiB at
    # TP 8, 12.56 us + 2(p-1)/p at 0.468; from vLLM's published H100 timings, not from these
    # rows), not the alpha-beta ring at 1 us a step: SGLang ITL 70B rate 1/2/4 -2.5 / -8.0 /
    # -23.9 -> -1.2 / -6.1 / -15.2 %, 405B rate 1/2 -7.5 / -12.0 -> -6.1 / -8.0 %; TTFT
    # rate 4 -27.0 -> -24.8 %; offline 4096/2048 -27.9 -> -25.4 %, 4096/1024 -20.8 -> -18.8 %.
    # train_moe 0.110 -> 0.108 (p90 0.264 -> 0.255) with each pipeline stage's own MoE host
    # time (training.stage_host_s: the busiest stage's layers and one backward pass from an
    # idle stream per virtual stage, not the whole model's pass / pp), which also chooses the
    # pacing stage: B200 Qwen3-235B -28.5 -> -26.1 %, DeepSeek-V3 -27.1 -> -25.8 %, GB200 /
    # GB300 pp > 1 rows 0.0-0.5 points; the dense families unchanged.
    # Then 0.117 -> 0.083 (p90 0.214 -> 0.144, bias -12 -> -8 %) with the 2024 NeMo H100 rows
    # as their launcher configs ran them (hardware-notes §18): FlashAttention-2 through TE
    # (config.yaml's NVTE_FUSED_ATTN: 0; only the 24.07 175B script re-enables cuDNN) on 19
    # rows and no TP overlap on the three 2024 GPT3-175B rows (gpt3/175b.yaml:
    # ub_tp_comm_overlap False): launcher 24.05 source median 20.1 -> 11.8 %, NeMo 24.07 docs
    # 15.1 -> 7.4 %; Llama-3-8B -25.6 / -24.6 -> -12.9 / -11.8 %, GPT3-175B x128 -18.3 /
    # -14.1 -> -6.4 / -4.3 %. Then median unchanged (p90 0.144 -> 0.131) with Megatron-Core's
    # unfused fp32 loss on the 17 of those rows whose configs leave cross_entropy_loss_fusion
    # off: launcher 24.05 source 11.8 -> 10.1 %, Nemotron-22B x24.05 -17.5 -> -11.4 %. Then
    # Megatron-Core's compiled ("native") loss on the 24.07 Llama-3 / Nemotron rows and the
    # 25.02 GPT3-175B row (their configs fuse it with Megatron's own kernels, not TE's):
    # median unchanged, p90 0.131 -> 0.128; Nemotron-8B / 22B x24.07 -7.4 / -14.7 -> -5.0 /
    # -11.4 %, Llama-3-8B / 70B -11.8 / -4.7 -> -10.6 / -4.1 %, 25.02 175B -0.8 -> -0.6 %.
    # Then 0.083 -> 0.081 (p90 0.128 -> 0.121) with Transformer Engine's flash-attn layout
    # copies on those 19 FA2 rows (te_flash_layout: MHA's fa_prepare_fwd / _bwd, GQA's K / V
    # .contiguous(), the output's transpose at micro-batch > 1): launcher 24.05 source 10.1 ->
    # 9.3 %; GPT3-5B x24.07 -13.8 -> -11.3 %, GPT3-20B +7.5 / +3.1 -> +8.9 / +4.4 %.
    # Session 12 (s12gb), measured before main's 2024-NeMo changes: 0.117 unchanged (p90
    # 0.214) with the NeMo 2.3.0 Nemotron-4 GB200 rows' squared ReLU
    # as it ran (mlp_activation="relu_pow": eager relu and pow, four backward kernels):
    # 15B / 340B -17.4 / -9.8 -> -13.7 / -8.3 %. Still 0.117 with their DDP's per-bucket
    # gradient checks (check_for_nan_in_grad, NeMo 2.3.0 recipes): 15B -13.7 -> -12.7 %,
    # 340B -8.3 -> -8.0, 8B -3.7 -> -3.5, 175B -7.3 -> -7.1, 405B -20.0 -> -19.9 %. Still
    # 0.117 with TE Float8CurrentScaling's amax all-reduces over the TP group under sequence
    # parallelism (QKV / fc1 inputs, output / fc2 gradients): NeMo 340B -8.0 -> -7.2, 175B
    # -7.1 -> -6.7, 405B -19.9 -> -19.7; Megatron-Bridge 405B B200 -11.9 -> -11.7, GB200
    # -5.3 -> -5.2, GB300 +5.0 -> +5.1 %. Merged with main's 2024 NeMo rows (whose errors
    # now sit in the family's middle), these three take train_dense_lowp 0.081 -> 0.075 (p90
    # 0.121 -> 0.119); the nine rows' figures are the same on both bases. Then median
    # unchanged (p90 0.119 -> 0.118) with the NeMo 70B row's bf16 parameters and gradients
    # (fp8_param_gather=False: TE's once-per-step weight cast, ~50 ms; reduce_dtype bf16):
    # -13.0 -> -12.0 %.
    # train_dense_bf16 0.049 -> 0.048 (p90 0.136 -> 0.133), train_dense_lowp and train_moe
    # medians unchanged (p90 0.121 -> 0.119, 0.255 -> 0.254) with NCCL carrying 48 of a
    # 400 Gb/s NIC's 50 GB/s (ops.collectives.NCCL_NIC_FRACTION, the NCCL maintainers'
    # figure, nccl-tests issues #267 / #290): B200 GPT-OSS-120B -18.9 -> -16.8 % (its EP64
    # all-to-alls cross 8 nodes), llm-foundry large-scale MPT-7B -6.1 / -3.4 / -1.0 -> -3.4 /
    # -0.5 / +1.9 %, NeMo GPT3-20B +8.9 / +4.4 -> +10.7 / +6.1 %, B200 405B FP8 0.4-0.5
    # points slower.
    # Megatron-Core's GQA Q / K / V split (framework_ops.mcore_qkv_split: the query reshape
    # copy forward, the gradients' cat backward, ~0.5 % of a GQA layer): train_moe 0.1075 ->
    # 0.1077 (GB200 Qwen3-235B -10.4 -> -9.9 %, GB300 Qwen3-30B +9.7 -> +10.4 %),
    # train_dense_lowp 0.0752 unchanged (p90 0.117 -> 0.113; Llama-3 8B rows +0.6 points).
    # train_moe 0.108 -> 0.104 (p90 0.254 -> 0.253), the other medians unchanged, with NCCL's
    # share of NVLink 5 at its sm100 link figure, 40.1 of 50 GB/s (training.nccl_nvlink_fraction,
    # NCCL src/graph/topo.h SM100_NVLINK_BW) instead of H100's 370 / 450: GB200 DeepSeek-V3
    # -11.8 / -11.1 -> -11.5 / -10.7 %, Qwen3-235B -10.4 -> -10.0 %, GB300 twins +0.3-0.5 points,
    # Blackwell dense rows 0.0-0.1 points.
    # train_moe 0.104 -> 0.085 (p90 0.253 unchanged, bias -10 -> -8 %) with HybridEP's
    # exchange kernels at their own per-peer cost (pricing.HYBRIDEP_PEER_S: 2.9 / 4.3 us per
    # peer for dispatch / combine, from DeepEP's published GB200 kernel table, not from these
    # rows): GB200 DeepSeek-V3 bf16 / fp8-mx -11.5 / -10.7 -> -8.3 / -8.7 %, Qwen3-235B -10.0
    # -> -6.3 %, Qwen3-30B -7.3 -> -6.8 %; GB300 DeepSeek-V3 +1.8 / -4.5 -> +3.7 / -2.4 %,
    # Qwen3-235B -0.5 -> +0.6 %, Qwen3-30B +9.9 -> +10.4 %.
    # train_moe (14, 0.085) -> (37, 0.087), p90 0.252 -> 0.257, bias -8 % (no physics changed)
    # with 23 more published MoE runs (data/hardware-notes.md §24): Megatron-Bridge 26.02's
    # DeepSeek-V3 / Qwen3-235B / Qwen3-30B MXFP8 and GPT-OSS-120B BF16 rows on B200 / B300 /
    # GB200 / GB300 (-29.2 .. +6.4 %), six 26.04 rows at layouts no other row has (-34.6 ..
    # +6.7 %) and NeMo 25.02 / 25.04's Mixtral-8x7B FP8 rows on B200 / GB200 (-25.7 / -14.6 %);
    # all jobs 0.060 -> 0.061 (p90 0.165 -> 0.181).
    # train_dense_bf16 0.048 -> 0.067 (p90 0.133 -> 0.161, bias -6 %), train_dense_lowp
    # 0.075 -> 0.081 (p90 0.113 -> 0.125), train_moe 0.085 unchanged (p90 0.252 -> 0.253)
    # with NCCL's multi-rail rings across nodes (rl.all_reduce's ranks_per_node: each channel
    # leaves a node through a NIC of the group's ranks there, min(NVLink, g x NIC) per rank,
    # NVIDIA/nccl src/graph/search.cc v2.18.3-1) instead of one NIC per rank: llm-foundry H100
    # MPT-13B at 16 / 32 / 64 GPUs +138 / +147 / +151 -> -13 / -14 / -14 %, MPT-70B 32 GPUs
    # +126 -> -12 %, A100 MPT-70B +44 -> -12 %, NeMo GPT3-20B +10.7 / +6.1 -> -11.6 / -15.2 %.
    # Regression kept (the rows that were right only while the rings were over-priced): the
    # llm-foundry large-scale rows (128-512 GPUs) -0.1..-22 -> -5..-27 %, torchtitan's A100
    # rows -0.2..+1.5 -> -7..-16 %; the latency of the network steps is still 1 us (open).
    # Merged after the 23 MoE rows: train_moe (37) 0.087 unchanged, p90 0.257 -> 0.269.
    # serve_latency 0.077 -> 0.070 (p90 0.189 -> 0.147, bias -8 -> -7 %): SGLang's overlap
    # loop hands a step's tokens out only once the next step is launched
    # (resolve_batch_result waits for launch_done, SGLang v0.4.0 tp_worker_overlap_thread.py),
    # which after a graph decode is at once but after an eager prefill batch its host launch
    # time, so a first token followed by another prompt's prefill waits for that launch; the
    # batch after next is formed at that instant. TTFT 70B rate 1/2/4 -12.2 / -12.6 / -24.8
    # -> -12.1 / -12.6 / -14.3 %, 405B rate 1/2 -16.5 / -14.3 -> -12.4 / -4.9 %; ITL 70B rate
    # 2 -6.1 -> -5.4 %, the others and every throughput row unchanged.
    # train_moe 0.087 unchanged (p90 0.257 -> 0.263) with token dropping priced as Megatron-Core
    # runs it (moe_capacity_factor / moe_pad_to_capacity; data/hardware-notes.md §28): NeMo's
    # Mixtral-8x7B drop-and-pad rows lose the dispatcher's device-to-host wait, TE's
    # Fp8Padding copies (aligned capacity rows) and the sort_chunks copies (one local
    # expert): B200 -25.7 -> -27.0 %, GB200 -14.6 -> -17.7 % (what ran is faster; the rows'
    # gap lies elsewhere). On main after net13's rings: train_moe p90 0.269 -> 0.274.
    # train_moe (37, 0.087) -> (39, 0.112), p90 0.257 -> 0.281 (no earlier row moved) with the
    # two published runs that set Megatron-Bridge's moe_a2a_overlap, priced with
    # estimate(moe_a2a_overlap=True) (transformer.moe_overlap, hardware-notes: the combined
    # 1F1B): 26.02 B300 Qwen3-235B PP8 VP4 EP8 -46.1 % (-38.8 % were the all-to-alls not
    # hidden) and 26.04 GB200 GPT-OSS-120B EP64 HybridEP -34.4 % (-27.0 %); both sit above the
    # old median, which then falls in the family's 8.7 -> 11.2 % gap. All jobs 0.061 (p90
    # 0.181 -> 0.188).
    # train_moe 0.087 / p90 0.274 unchanged with Megatron-Core 0.11 / 0.12's MoE layer as
    # NeMo's Mixtral recipes ran it (megatron_core, moe_permute_fusion=False; hardware-notes
    # §30): no probabilities all-to-all, the eager permute / unpermute: B200 -30.5 -> -29.4 %,
    # GB200 -17.7 -> -16.3 % (the eager passes add ~1.6 %; the gap lies elsewhere).
    # train_dense_bf16 0.067 -> 0.065 (p90 0.161 -> 0.158), lowp 0.081 unchanged (p90 0.125
    # -> 0.124): multi-node collectives priced by NCCL 2.18's tuning model (protocol, inter-node
    # step latencies, the tree for all-reduce) and Composer's per-batch training-metric syncs
    # (torchmetrics' barrier + world zeros_like + all_gather + world copies, host bound:
    # data/hardware-notes.md §31): llm-foundry large-scale MPT-1B 512 GPUs -27.1 -> -19.9 %.
    # serve_throughput 0.060 -> 0.067 (p90 0.188 -> 0.206, bias -1 -> -4 %): the DataCrunch
    # SGLang rows admit as SGLang did for ignore_eos requests without a radix cache
    # (kv_admission="ignore_eos": PrefillAdder.add_one_req_ignore_eos, budget_state,
    # batch_is_full, Dec 2024; data/hardware-notes.md §32) instead of growing pages and
    # preempting as vLLM does: no recompute is left, and the offline rows 2.5 / -1.2 / -5.2 /
    # -18.8 / -25.4 % (256/512, 1024/1024, 1024/512, 4096/1024, 4096/2048) -> -20.6 / -19.8 /
    # -19.7 / -26.0 / -34.2 %. Regression kept: the recompute the model charged is what SGLang
    # did not do; the common -20 % is open (notes §32: the 1024-token runs' median ITL and
    # TTFT now match the measured ones, their makespans do not).
    # serve_throughput 0.067 unchanged (p90 0.206 -> 0.208): the SGLang rows' one-token KV
    # pages as run (page_tokens=1; notes §33): offline rows -0.0 to -0.4 points; no
    # page-size-1 attention penalty priced (nothing published supports one for decode).
    # train_dense_bf16 0.065 unchanged (p90 0.158 -> 0.138): llm-foundry's attn_impl: flash
    # rows run flash-attn 2.4.2's unpad_input on q, k, v and pad_input on the output in every
    # layer, with six host syncs per layer's forward (attention_backend="flash_varlen",
    # framework_ops.flash_unpad_pad, unpad_sync.unpad_sync_s; hardware-notes §34):
    # large-scale MPT-1B / 3B / 7B / 70B 1.5-4.0 points slower (MPT-1B 512 GPUs -19.9 ->
    # -16.3 %).
    # train_moe 0.112 / p90 0.294 unchanged with the combined 1F1B's host side (a pair lasts
    # max(g - a, h), one thread issuing both micro-batches; HybridEP's 32 SMs; hardware-notes
    # §37): 26.02 B300 Qwen3-235B -46.2 -> -38.3 %, 26.04 GB200 GPT-OSS -34.4 -> -33.8 %.
    # train_dense_bf16 0.065 unchanged (p90 0.138 -> 0.136): NCCL 2.18's LL128 per-channel
    # cap (8 x 36.7 GB/s on DGX H100) on the rings spanning nodes (hardware-notes §38): 49
    # multi-node rows <= 0.4 points slower (llm-foundry MPT-7B 512 GPUs -18.7 -> -18.4 %).
    # train_moe 0.112 -> 0.148 (p90 0.294 -> 0.295, bias -11 -> -15 %): HybridEP's host waits
    # as each release runs them (moe_sync.SYNC_POINTS; hardware-notes §40): Megatron-Bridge
    # 26.02 / 26.04 (Megatron-Core from d2b500f, DeepEP hybrid-ep eb9cee7 / 34152ae) wait once
    # per MoE layer, before the dispatch kernel, and never in the backward; the 25.11 rows
    # keep the three forward and two backward waits of Megatron-LM 92c8482 with hybrid-ep
    # 1dddd19 (moe_dispatcher="hybridep_2511"). Qwen3-30B 26.02 GB200 MBS 4 +2.9 -> -18.0 %,
    # GB300 MBS 8 -13.9 -> -16.3 %, B300 MBS 8 -15.7 -> -17.8 %, 26.04 B200 MBS 4 +6.7 ->
    # -14.8 %, DeepSeek-V3 26.02 B200 -2.6 -> -14.7 %, B300 +6.0 -> -6.4 %. Regression kept:
    # the host time the model exposed there is what these releases do not wait for; with it
    # gone the Qwen3-30B rows sit at -15..-18 % whatever the micro-batch: the gap is GPU-side.
    # Then 0.148 -> 0.149 (p90 0.295 unchanged) with the flex dispatcher's preprocess as it
    # runs (one compiled call; no all-to-all split sizes or side-stream copies): every
    # HybridEP row 0.0-0.2 points faster.
    # train_dense_lowp 0.081 -> 0.079 (p90 0.124 unchanged), train_moe (then) 0.112 -> 0.110 (p90
    # 0.294 -> 0.291), serve_throughput 0.067 unchanged (p90 0.209 -> 0.207): Blackwell HBM
    # peaks as CUDA reports the bus and memory clock (B200 / B300 7680-bit, GB200 7936-bit, x
    # 3996 MHz x 2: 7.67232 / 7.67232 / 7.928064 TB/s instead of the vendor's 8.0; GB300
    # kept, no bus published) and Blackwell's mxfp8_quantize_fraction re-derived over the new
    # B200 rate (0.77 -> 0.806, benchmarks/fit_mxfp8_quantize.py; hardware-notes §41): 54
    # Blackwell rows move, 42 toward the measurement (TRT-LLM B200 Llama-3.3-70B FP4 -20.7 ->
    # -19.0 %); the 7 GB300 MXFP8 rows 0.2-0.3 points faster. Merged with the HybridEP waits
    # by release above: train_moe 0.149 -> 0.146 (p90 0.292).
    # train_dense_lowp 0.079 -> 0.095 (p90 0.124 -> 0.153), train_moe 0.146 unchanged (p90
    # 0.292 -> 0.301): GB200's GEMM ceilings refitted by their procedures (calibrate.py's
    # achievable fraction 0.7288 / 0.7231 -> 0.7637 / 0.7605, fit_gemm.py's compute scale
    # 1.0 / 1.0001 -> 1.0088 / 1.0078; the old values were fitted while GB200 had no SM count
    # and never rerun after 9a1b40e gave it 152; hardware-notes §42). The model now meets
    # GB200's published MAMF ceiling (it was 5.7 % slow there); the 23 GB200 rows move 1.0-4.3
    # points faster, all away from the measurement (Llama-3.1-405B FP8-CS -4.8 -> -9.1 %;
    # GB300 rows < 0.01 points, the NVIDIA fp8 fallback scale): held-out evidence that GB200
    # jobs run under the ceiling, not a reason to keep a stale constant.
    # serve_throughput 0.067 -> 0.069 (p90 0.203 -> 0.217): capacities as CUDA reports them
    # (H100 SXM 81090 MiB = 85.03e9 B for the 80e9 label, H200 143156 MiB = 150.11e9, B200
    # 182642 MiB = 191.51e9; hardware-notes "GPU memory capacities as the devices report
    # them"). Only serve_throughput rows size a KV pool from it: all 25 move, 20 of them
    # toward "too fast" (12 closer to the measurement, 13 further): TensorRT-LLM H100
    # Llama-3.1-405B TP8 128/2048 -6.0 -> -16.3 %, Llama-3.3-70B TP2 1000/1000 -6.1 ->
    # -10.4 %, SGLang H200 70B 4096/1024 -25.6 -> -26.7 %.
    # The larger pool is what the engines allocate; the earlier errors leaned on a 6 % short
    # capacity.
    # train_moe 0.146 unchanged (0.1461 -> 0.1458; p90 0.301 -> 0.295, bias -15 %): the 37
    # Megatron-Bridge rows' force-balanced routing priced (moe_router="force_balanced": RandomSTE's
    # random logits make the counts binomial; the busiest EP rank carries its expected
    # maximum, 0.3-1.3 % over the mean; hardware-notes §46): each row 0.0-1.1 points slower,
    # 33 toward the measurement, the four already too slow (GB300 Qwen3 rows) 0.1-0.8 further.
    # train_moe (39, 0.146) -> (43, 0.169), p90 0.301 -> 0.330, bias -15 -> -17 % (no earlier
    # row moved): NeMo AutoModel's DGX-H100 table (the family's first Hopper rows; hardware-
    # notes §47), priced as they ran (FSDP2, full recompute, DeepEP normal kernels
    # moe_dispatcher="deepep", its benchmark gate moe_router="fake_balanced", the shared
    # experts on a side stream moe_shared_overlap=True): Qwen3-30B-A3B 8 GPUs -17.4 %,
    # DeepSeek-V3 256 GPUs -27.3 %, 1024 GPUs -33.5 %, Kimi-K2 256 GPUs -33.9 %. All four too
    # fast, as the Blackwell Megatron rows: the gap is not Blackwell's.
    # train_moe 0.169 -> 0.165 (p90 0.330 -> 0.310, bias -17 % unchanged; no other row moved):
    # the four AutoModel rows as AutoModel's modules run (modules="automodel": separate q/k/v,
    # q_a/kv_a and gate/up GEMMs, eager RoPE and SiLU-mul, MLA's q/k cats, the block's module
    # calls; hardware-notes §50): Qwen3 -17.4 -> -13.4 %, DeepSeek-V3 256 -27.3 -> -24.5 %,
    # 1024 -33.5 -> -31.1 %, Kimi-K2 -33.9 -> -32.1 %.
    # train_moe (43, 0.169) -> (45, 0.168) (p90 0.330 -> 0.324, bias -17 %; no earlier
    # row moved): AutoModel's two GPT-OSS rows through PyTorch FlexAttention
    # (attention_backend="flex": the BlockMask's visited 128 x 128 blocks at FlexAttention's
    # published share of FA2's rate, the eager head-major copies and sink rescale;
    # hardware-notes §51): GPT-OSS-20B 8 GPUs +4.6 %, GPT-OSS-120B 64 GPUs -22.4 %.
    # train_dense_bf16 (139, 0.065) -> (140, 0.065) (p90 0.136 unchanged): AutoModel's Llama3
    # 70B row (64 GPUs, CP 2), now expressible: runtime="compiled" takes PyTorch's context
    # parallelism (the ring SDPA between the compiled regions), rows set cp_comm, and
    # attention_backend="flash" picks the ring's SDPA kernel (torch 2.9 tries FA2 first on
    # Hopper): +3.2 % (with torch >= 2.10's cuDNN it would be -3.2 %).
    # Both merged: train_moe (45, 0.165), p90 0.309, bias -17 %.
    # train_moe unchanged (median 0.1653, p90 0.309; no other row moved): the two GPT-OSS
    # rows with modules="automodel" (GptOssAttention's separate biased q/k/v and its own
    # eager RoPE for Megatron-Core's unfused YaRN RoPE, no unfused o_proj bias add, the
    # experts' gate_up bias per expert, the compiled quick-GEGLU without eager clamps;
    # hardware-notes §53): GPT-OSS-20B +4.6 -> +0.8 %, GPT-OSS-120B -22.4 -> -25.2 %.
    pins = {"serve_throughput": (25, 0.069), "serve_static_batch": (15, 0.043),
            "serve_latency": (18, 0.070), "train_dense_bf16": (140, 0.065),
            "train_dense_lowp": (49, 0.095), "train_moe": (45, 0.165)}
    for fam, (rows, median) in pins.items():
        rec = t.loc[("family", fam)]
        assert rec["rows"] == rows
        assert rec["default_median"] == pytest.approx(median, abs=0.005), fam
    assert t.loc[("all", "all jobs")]["rows"] == 292
    # torchtitan's selective layer AC is recompute="layer:2": every row is expressible
    assert result.unmapped.empty
    assert result.errors.empty
    assert result.held_out is None  # nothing fitted: no held-out split to report


def test_mxfp8_priced_as_fp8_current_scaling_on_the_same_system(result):
    """Megatron-Bridge's MXFP8 runs are 3-6 % slower than its FP8-CS runs on the same system
    (measured); the model had priced MXFP8 11-12 % faster (torchao's casts for FP8-CS, no
    clock drop for block-scaled GEMMs). With what TE runs, the two stay within 2 %."""
    jobs = result.to_pandas().set_index("id")
    for system in ("b200", "gb200", "gb300"):
        cs = jobs.loc[f"mbridge2511_{system}_llama3_8b_fp8-cs"]
        mx = jobs.loc[f"mbridge2511_{system}_llama3_8b_fp8-mx"]
        assert 0.93 < mx["measured"] / cs["measured"] < 0.98
        assert mx["predicted"] / cs["predicted"] == pytest.approx(1.0, abs=0.02)


def test_per_source_and_per_row(result):
    t = result.table
    sources = set(t[t["by"] == "source"]["family"])
    assert "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md" in sources
    assert "pytorch/torchtitan docs/performance.md" in sources
    assert "mosaicml/llm-foundry scripts/train/benchmarking/README.md" in sources
    assert "NVIDIA/TensorRT-LLM docs/source/performance.md" in sources
    assert ("datacrunch-research/h200-benchmarks sglang/outputs/llama_3_3_70b_offline_output.jsonl"
            in sources)
    jobs = result.to_pandas()
    assert len(jobs) == 292
    # error = predicted time / measured time - 1, time = 1 / throughput
    row = jobs.set_index("id").loc["nemo2407_h100_llama3_70b_fp8"]
    assert row["error"] == pytest.approx(row["measured"] / row["predicted"] - 1)
    assert json.loads(result.to_json())["table"]


def test_train_row_matches_estimate():
    row = next(r for r in read_jobs(JOBS_FILE) if r["id"] == "nemo2407_h100_llama3_8b_fp8")
    c = row["config"]
    est = rl.transformer.estimate(
        c["model"], "train", hardware=row["hardware"], linear_recipe=c["linear_recipe"],
        seq_len=c["seq_len"], micro_batch=c["micro_batch"], grad_accum=c["grad_accum"],
        dp=c["dp"], tp=c["tp"], pp=c["pp"], cp=c["cp"], ep=c["ep"],
        virtual_stages=c["virtual_stages"], zero=c["zero"], recompute=c["recompute"],
        sequence_parallel=c["sequence_parallel"], gpus_per_node=c["gpus_per_node"],
        attention_backend=c.get("attention_backend", "auto"),
        cross_entropy=c.get("cross_entropy", "fused"))
    assert price_job(row) == pytest.approx(est.step.tokens_per_s / row["gpus"])


def test_static_batch_row_matches_estimate():
    """batch_throughput: one prefill of the whole batch, then output_len - 1 decode steps."""
    row = next(r for r in read_jobs(JOBS_FILE)
               if r["id"] == "trtllm061_h100_llama2_7b_fp8_b768_128_128")
    c = row["config"]
    kw = dict(hardware=row["hardware"], tp=c["tp"], linear_recipe=c["linear_recipe"],
              kv_dtype=c["kv_dtype"])
    model = rl.transformer.TransformerConfig(**c["model"])
    pre = rl.transformer.estimate(model, "prefill", 768, seq_len=128, **kw).wall_s
    dec = rl.transformer.estimate(model, "decode", 768, kv_len=128 + 64, launch="graph",
                                  **kw).wall_s
    assert price_job(row) == pytest.approx(768 * 128 / (pre + 127 * dec))


def test_static_batch_gqa_rows_read_kv_per_query_head():
    """v0.6.1 rows pass decode_kv_reads to the decode step: a GQA row's decode attention reads
    heads / kv_heads = 8 times the KV bytes; the MHA 7B rows are unchanged by it."""
    def priced(rid, reads):
        row = next(r for r in read_jobs(JOBS_FILE) if r["id"] == rid)
        row = json.loads(json.dumps(row))
        assert row["config"]["decode_kv_reads"] == "per_query_head"
        row["config"]["decode_kv_reads"] = reads
        return price_job(row)

    gqa = "trtllm061_h100_llama2_70b_fp8_b480_128_2048"
    assert priced(gqa, "per_query_head") < 0.6 * priced(gqa, None)  # tokens/s: slower
    mha = "trtllm061_h100_llama2_7b_fp8_b112_128_2048"
    assert priced(mha, "per_query_head") == pytest.approx(priced(mha, None))


def test_static_batch_rows_pass_program_choices_to_both_steps():
    """batch_throughput hands gated_mlp / allreduce to the prefill and the decode estimates
    (no v0.6.1 row sets them: the table's figures are unchanged): a 70B TP 2 row through
    NCCL is slower (tokens/s lower), at TP 1 nothing changes."""
    def priced(rid, **extra):
        row = json.loads(json.dumps(next(r for r in read_jobs(JOBS_FILE) if r["id"] == rid)))
        assert "gated_mlp" not in row["config"] and "allreduce" not in row["config"]
        row["config"].update(extra)
        return price_job(row)

    tp2 = "trtllm061_h100_llama2_70b_fp8_b96_2048_128"
    assert priced(tp2, allreduce="nccl") < priced(tp2)
    assert priced(tp2, gated_mlp="separate") != priced(tp2)
    tp1 = "trtllm061_h100_llama2_7b_fp8_b80_2048_128"
    assert priced(tp1, allreduce="nccl") == pytest.approx(priced(tp1))


def test_serving_row_runtime_and_request_rate():
    """Serving rows pass runtime / kv_admission / token_budget / page_tokens to serve (SGLang's
    one-token pages); a latency row with request_rate is priced at the concurrency that rate
    sustains, or, with num_requests, as the median of that finite run (SGLang's scheduler for
    runtime "sglang")."""
    row = next(r for r in read_jobs(JOBS_FILE)
               if r["id"] == "sglang_dc_h200x4_llama33_70b_rate1_itl")
    c = row["config"]
    kw = dict(prompt_len=c["prompt_len"], output_len=c["output_len"], tp=4, runtime="sglang",
              memory_fraction=0.85, kv_admission="ignore_eos", token_budget=8192, request_rate=1.0,
              page_tokens=1)
    assert c["page_tokens"] == 1
    df = rl.transformer.serve(c["model"], row["hardware"], num_requests=300,
                              arrivals="poisson", lengths="uniform", **kw)
    assert df.attrs["runtime"] == "sglang" and c["num_requests"] == 300
    assert c["arrivals"] == "poisson" and c["lengths"] == "uniform"
    assert price_job(row) == pytest.approx(float(df["itl_median_s"].iloc[0]) * 1e3)
    steady = json.loads(json.dumps(row))
    del steady["config"]["num_requests"], steady["config"]["arrivals"]
    del steady["config"]["lengths"]
    df = rl.transformer.serve(c["model"], row["hardware"], **kw)
    assert price_job(steady) == pytest.approx(float(df["tpot_s"].iloc[0]) * 1e3)
    other = json.loads(json.dumps(steady))
    other["config"]["runtime"] = None  # the default (trtllm-like) program
    assert price_job(other) != pytest.approx(price_job(steady))


@pytest.mark.parametrize(("changes", "match"), [
    ({"arrivals": "bogus"}, "unknown arrivals 'bogus'"),
    ({"num_requests": 0}, r"num_requests must be an integer \[1, 100000\], got 0"),
    ({"num_requests": -1}, r"num_requests must be an integer \[1, 100000\], got -1"),
    ({"num_requests": 10**12}, "num_requests must be an integer"),
    ({"num_requests": True}, "num_requests must be an integer"),
    ({"request_rate": 1e-300}, "request_rate must be a positive number of at least 1e-06"),
    ({"request_rate": 1e-5}, "request_rate must keep a finite run.s arrivals within"),
    # a Poisson run needs its rate; the steady state has no arrivals to space
    ({"num_requests": None}, "arrivals 'poisson' needs a finite run at a rate"),
    ({"lengths": "zipf"}, "unknown lengths 'zipf'"),
    ({"num_requests": None, "arrivals": None}, "lengths 'uniform' needs a finite run"),
    # num_requests on a row kind that has no finite run: refused, not silently ignored
    ({"api": "batch_throughput", "batch": 8, "arrivals": None},
     "num_requests=300 sets a finite run"),
])
def test_hostile_serving_rows_name_the_key(changes, match):
    row = next(r for r in read_jobs(JOBS_FILE)
               if r["id"] == "sglang_dc_h200x4_llama33_70b_rate1_ttft")
    row = json.loads(json.dumps(row))
    row["config"].update(changes)
    with pytest.raises(ValueError, match=match):
        price_job(row)


def _row(**changes):
    row = next(r for r in read_jobs(JOBS_FILE) if r["id"] == "nemo2407_h100_llama3_8b_fp8")
    row = json.loads(json.dumps(row))
    for k, v in changes.items():
        if k.startswith("config."):
            row["config"][k[7:]] = v
        else:
            row[k] = v
    return row


@pytest.mark.parametrize(("changes", "match"), [
    ({"measured": -3}, "measured must be a positive finite number"),
    ({"measured": float("nan")}, "measured must be a positive finite number"),
    ({"unit": "tokens/s"}, "unit for api 'train'"),
    ({"config.api": "pretrain"}, "config.api must be one of"),
    ({"gpus": 0}, "gpus must be a positive integer"),
    ({"config": "dp=8"}, "config must be an object"),
])
def test_bad_rows_raise_clear_errors(changes, match):
    with pytest.raises(ValueError, match=match):
        validate_jobs([_row(**changes)])


def test_bad_rows_missing_fields_and_layout():
    row = _row()
    del row["unit"]
    with pytest.raises(ValueError, match="row 0: missing unit"):
        read_jobs([row])
    with pytest.raises(ValueError, match="gpus=16"):
        price_job(_row(gpus=16))
    with pytest.raises(KeyError, match="model"):
        price_job(_row(**{"config.model": "Llama-9-1T"}))
    with pytest.raises(ValueError, match="not expressible: why"):
        price_job(_row(**{"config.not_expressible": "why"}))
    # a row whose pricing raises is reported, not dropped
    r = validate_jobs([_row(), _row(id="bad", **{"config.tp": 3})])
    assert list(r.errors["id"]) == ["bad"] and len(r.jobs) == 1


def test_bad_file(tmp_path):
    p = tmp_path / "jobs.jsonl"
    p.write_text(json.dumps(_row()) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"jobs.jsonl:2: not JSON"):
        rl.validate(p)
    with pytest.raises(ValueError, match="hardware= must be None"):
        rl.validate(JOBS_FILE, hardware="H100 SXM")


def test_cli_jobs_table(capsys):
    from roofline.cli.main import main

    assert main(["validate", str(JOBS_FILE), "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[0] == "by,family,rows,default_median,default_p90,default_bias"
    assert "family,train_moe,45," in out.out and "family,train_dense_bf16,140," in out.out
    assert "not expressible" not in out.err


def test_cli_jobs_rows(capsys, tmp_path):
    """--rows: every priced job, worst first per family, the same numbers as validate_jobs;
    refused for measurement files."""
    import csv
    import io

    from roofline.cli.main import main

    rows = [r for r in read_jobs(JOBS_FILE) if r["family"] == "serve_latency"]
    p = tmp_path / "latency.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["validate", str(p), "--rows", "--format", "csv"]) == 0
    got = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(got) == len(rows)
    errs = [abs(float(r["error"])) for r in got]
    assert errs == sorted(errs, reverse=True)
    jobs = rl.validate(p).jobs.set_index("id")
    for r in got:
        assert float(r["predicted"]) == pytest.approx(jobs.loc[r["id"], "predicted"])
    assert main(["validate", str(p), "--rows"]) == 0
    out = capsys.readouterr().out
    assert "every priced job" in out and "sglang_dc_h200x4_llama33_70b_rate4_itl" in out
    kernels = Path(__file__).resolve().parents[1] / "data/measurements/gpu_h200_bench.jsonl"
    assert main(["validate", str(kernels), "--rows"]) == 2
    assert "--rows applies to whole-job files" in capsys.readouterr().err


def test_trtllm05_ttft_context_step_launches_kernel_by_kernel():
    """TensorRT-LLM v0.5's GptSession runs the context step with executeContext (TensorRT's
    enqueue, no CUDA graph), so a batch-1 TTFT row sets cuda_graphs false and its step is at
    least the host's issue time of its kernels. Llama 2 7B, TP 1, static-scale FP8, v0.5's
    GatedMLP (fc and gate as two FP8 linears, gated_mlp "separate"), the GPT attention
    plugin's context call (attention_plugin: decoder info, RoPE + KV-cache write, FMHA):
    32 layers x (13 kernels + 5 quantizes before the fp8 GEMMs) + 4 in the head (embedding,
    final norm, the LM head's quantize and GEMM) = 580 launches: the host issues them in
    (580 - 1) x eager_launch_s, between the zero-work cost of 579 and of 580 launches."""
    row = next(r for r in read_jobs(JOBS_FILE)
               if r["id"] == "trtllm05_h100_llama2_7b_fp8_ttft_128")
    c = row["config"]
    assert c["cuda_graphs"] is False and c["linear_recipe"] == "tensorwise_static"
    assert c["gated_mlp"] == "separate" and c["attention_plugin"] is True
    n = 32 * 18 + 4
    eager = price_job(row)  # host-bound: the issue time of the n launches (ms)
    lo, hi = (launch_overhead(k, "eager", hardware=row["hardware"]) * 1e3 for k in (n - 1, n))
    assert lo < eager <= hi
    graphed = json.loads(json.dumps(row))
    graphed["config"]["cuda_graphs"] = True  # a replayed graph hides the launches
    assert price_job(graphed) < 0.9 * eager
    df = rl.transformer.serve(TransformerConfig(**c["model"]), row["hardware"], batches=(1,),
                              prompt_len=128, output_len=1,
                              linear_recipe="tensorwise_static", kv_dtype="fp8",
                              cuda_graphs=False, gated_mlp="separate",
                              attention_plugin=True)
    assert eager == pytest.approx(float(df["ttft_s"].iloc[0]) * 1e3)
    bare = json.loads(json.dumps(row))
    bare["config"]["attention_plugin"] = False  # no decoder-info kernel: 32 launches fewer
    lo, hi = (launch_overhead(k, "eager", hardware=row["hardware"]) * 1e3 for k in (n - 33, n - 32))
    assert lo < price_job(bare) <= hi
    fused = json.loads(json.dumps(row))
    fused["config"]["gated_mlp"] = "fused"  # 2 x 32 launches fewer: 516, still host-bound
    lo, hi = (launch_overhead(k, "eager", hardware=row["hardware"]) * 1e3 for k in (n - 65, n - 64))
    assert lo < price_job(fused) <= hi


def test_trtllm05_rows_run_gated_mlp_unfused():
    """Every v0.5 TTFT row of a gated (SwiGLU) Llama runs TensorRT-LLM's GatedMLP (fc and gate
    linears, gated_mlp "separate"): the same FLOPs and weights as one fused GEMM. The
    host-bound row (H100 FP8 7B, 128 tokens) pays its launches: 2 more per layer (a GEMM and
    its input's quantize; the 70B TP 4 one, whose NCCL all-reduces bring the GPU time near
    the host's, at most that); the GPU-bound ones by the two GEMMs' tiling and the second
    quantize's pass over the input (< 4 %)."""
    rows = [r for r in read_jobs(JOBS_FILE) if r["id"].startswith("trtllm05_")]
    assert len(rows) == 8
    for row in rows:
        assert row["config"]["gated_mlp"] == "separate"
        assert row["config"]["allreduce"] == "nccl"  # v0.5's NCCL all-reduce plugin
        fused = json.loads(json.dumps(row))
        fused["config"]["gated_mlp"] = "fused"
        split, one = price_job(row), price_job(fused)
        custom = json.loads(json.dumps(row))
        custom["config"]["allreduce"] = "custom"
        if row["config"]["tp"] == 1:  # nothing to reduce
            assert price_job(custom) == pytest.approx(split)
        else:  # NCCL's share of the line rate: never faster
            assert price_job(custom) <= split
        if row["id"].startswith("trtllm05_h100") and row["id"].endswith("_128"):
            layers = row["config"]["model"]["num_layers"]
            extra = (launch_overhead(2 * layers + 1, "eager", hardware=row["hardware"])
                     - launch_overhead(1, "eager", hardware=row["hardware"])) * 1e3
            if row["config"]["tp"] == 1:  # host-bound: the launches are the difference
                assert split - one == pytest.approx(extra, rel=0.01)
            else:  # 70B TP 4: NCCL's all-reduce latencies bring the GPU near the host
                assert 0 < split - one <= extra * 1.01
        else:
            assert split == pytest.approx(one, rel=0.04)


def test_a_finite_runs_ttft_and_itl_rows_simulate_it_once(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The SGLang online rows report TTFT and ITL of one benchmark run: validation simulates
    each run once and reads both medians from it (the same figures as two runs)."""
    from roofline.validation import jobs as J

    rows = [r for r in read_jobs(JOBS_FILE)
            if r["id"].startswith("sglang_dc_h200x4_llama33_70b_rate1")]
    assert {r["config"]["api"] for r in rows} == {"serve_ttft", "serve_itl"}
    J._FINITE_RUNS.clear()
    fresh = []
    for r in rows:
        J._FINITE_RUNS.clear()
        fresh.append(J.price_job(r))
    calls = []
    real = J.serve
    monkeypatch.setattr(J, "serve", lambda *a, **k: calls.append(k) or real(*a, **k))
    J._FINITE_RUNS.clear()
    assert [J.price_job(r) for r in rows] == fresh
    assert len(calls) == 1
    J._FINITE_RUNS.clear()
    assert J.price_job(rows[0], efficiency="constant") != fresh[0]  # the preset is in the key


def test_job_estimate_is_the_estimate_price_job_prices():
    """job_estimate: the op-by-op step behind a train row's figure (the benchmarks' breakdowns
    read it); a serving row is refused, naming the row."""
    rows = {r["id"]: r for r in read_jobs(JOBS_FILE)}
    row = rows["nemo2407_h100_llama3_8b_fp8"]
    est = job_estimate(row)
    assert est.step.tokens_per_s / est.step.gpus == pytest.approx(price_job(row), rel=1e-12)
    serving = next(r for r in rows.values() if r["config"]["api"] != "train")
    with pytest.raises(ValueError, match=f"price_job: {serving['id']}: job_estimate takes a "
                                         "train row"):
        job_estimate(serving)
