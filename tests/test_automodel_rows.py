"""NeMo AutoModel's DGX-H100 pre-training rows (hardware-notes §47): each row's layout is the
table's cells, its program what the publishing commit's configs run."""

from __future__ import annotations

import json

import pytest

from roofline.validation.jobs import JOBS_FILE, price_job, read_jobs

# id: (GBS, LBS, GA, seq, GPUs, step time s) as the table gives them
TABLE = {
    "automodel_h100_qwen3_30b_a3b": (512, 4, 16, 4096, 8, 21.773),
    "automodel_h100_dsv3_256gpu": (512, 8, 1, 4096, 256, 8.18),
    "automodel_h100_dsv3_1024gpu": (8192, 8, 4, 4096, 1024, 37.87),
    "automodel_h100_kimi_k2_256gpu": (512, 8, 2, 4096, 256, 8.86),
    "automodel_h100_gptoss_20b": (256, 2, 16, 4096, 8, 10.04),
    "automodel_h100_gptoss_120b": (512, 2, 4, 4096, 64, 4.30),
    "automodel_h100_llama3_70b_cp2": (128, 1, 4, 8192, 64, 18.90),
}


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    return {r["id"]: r for r in read_jobs(JOBS_FILE) if r["id"].startswith("automodel_")}


def test_rows_are_the_table(rows) -> None:
    assert set(rows) == set(TABLE)
    for rid, (gbs, lbs, ga, seq, gpus, step_s) in TABLE.items():
        r, c = rows[rid], rows[rid]["config"]
        dense = rid == "automodel_h100_llama3_70b_cp2"
        assert r["family"] == ("train_dense_bf16" if dense else "train_moe"), rid
        assert r["hardware"] == "H100 SXM", rid
        assert r["gpus"] == gpus == c["dp"] * c["pp"] * c["tp"] * c["cp"], rid
        assert c["seq_len"] == seq, rid
        # GBS = DP x LBS x GA; one pipeline schedule runs LBS sequences per data-parallel rank
        # (micro-batches of pp_microbatch_size 1 under PP; one local batch of LBS without)
        assert c["dp"] * lbs * ga == gbs, rid
        assert c["micro_batch"] * c["grad_accum"] == (lbs * ga if c["pp"] == 1 else lbs), rid
        # the scored tokens/s/GPU is the table's, GBS x seq / step / GPUs (its cells rounded)
        assert r["measured"] == pytest.approx(gbs * seq / step_s / gpus, rel=1e-3), rid


def test_llama3_70b_row_runs_what_automodel_ran(rows) -> None:
    """Llama3 70B (2013a4dd6): per-layer torch.compile of the HF-layout model under PyTorch's
    context_parallel (allgather rotater), FlashAttention-2 as torch 2.9's SDPA picks it."""
    r = rows["automodel_h100_llama3_70b_cp2"]
    c = r["config"]
    assert (c["runtime"], c["cp"], c["cp_comm"], c["attention_backend"]) == (
        "compiled", 2, "all_gather", "flash")
    assert (c["zero"], c["fsdp"], c["recompute"], c["dp"]) == (3, "fsdp2", "full", 32)
    assert 0 < price_job(r)
    # SDPA's "auto" (cuDNN first: torch >= 2.10) runs faster than the FA2 torch 2.9 ran
    row = json.loads(json.dumps(r))
    row["config"]["attention_backend"] = "auto"
    assert price_job(row) > price_job(r)


def test_rows_run_what_automodel_ran(rows) -> None:
    rows = {k: v for k, v in rows.items() if v["family"] == "train_moe"}
    for rid, r in rows.items():
        c = r["config"]
        assert c["moe_dispatcher"] == "deepep" and c["moe_router"] == "fake_balanced", rid
        # GPT-OSS 120B's YAML sets activation_checkpointing: false
        ac = "none" if rid == "automodel_h100_gptoss_120b" else "full"
        assert (c["zero"], c["fsdp"], c["recompute"]) == (3, "fsdp2", ac), rid
        # GPT-OSS runs backend attn: flex (FlexAttention), the others TE's attention
        flex = rid.startswith("automodel_h100_gptoss")
        assert (c.get("attention_backend") == "flex") is flex, rid
        assert c["optimizer"] == "adamw_foreach" and c["linear_recipe"] is None, rid
        # AutoModel's own layer modules (GPT-OSS's too: hardware-notes section 53)
        assert c["modules"] == "automodel", rid
        assert c["gpus_per_node"] == 8 and c["tp"] == 1, rid
        assert "github.com/NVIDIA-NeMo/Automodel docs/performance-summary.md @ " in r["source"]
    # AutoModel's DeepSeek-V3 has no MTP block; the pipeline keeps the weights between passes
    for rid in ("automodel_h100_dsv3_256gpu", "automodel_h100_dsv3_1024gpu"):
        c = rows[rid]["config"]
        assert c["mtp_layers"] == 0 and (c["pp"], c["virtual_stages"]) == (4, 8), rid
    assert rows["automodel_h100_qwen3_30b_a3b"]["config"]["reshard_after_forward"] is False
    # MoE.forward's side stream for the shared experts, where the model has them
    for rid, r in rows.items():
        shared = not rid.startswith(("automodel_h100_qwen3", "automodel_h100_gptoss"))
        assert r["config"].get("moe_shared_overlap", False) is shared, rid
    kimi = rows["automodel_h100_kimi_k2_256gpu"]["config"]["model"]
    assert (kimi["num_experts"], kimi["num_heads"], kimi["dense_layers"]) == (384, 64, [0])


def test_rows_priced_and_the_gate_matters(rows) -> None:
    # every row is priced; under a learned top-k router the DeepEP exchanges would carry a
    # token to 5.3 ranks (Qwen3-30B-A3B at EP 8) instead of the fake gate's one: slower
    for rid, r in rows.items():
        if r["family"] != "train_moe":
            continue
        fake = price_job(r)
        row = json.loads(json.dumps(r))
        row["config"]["moe_router"] = "topk"
        assert 0 < price_job(row) < fake, rid
