"""Training memory / step model, routing, planner, serving and cost: hand-derived checks."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.transformer.routing import expert_counts, rank_counts

T = rl.transformer
P8B = 8_030_261_248  # Llama-3-8B parameters (tests/test_transformer.py derives it)


def test_llama_3_8b_zero3_on_8_gpus_by_hand() -> None:
    r = T.estimate("Llama-3-8B", "train", batch=1, seq_len=4096, hardware="H100 SXM",
                   dp=8, zero=3)
    m = r.memory
    # ZeRO-3: bf16 weights 2P/8 plus two gathered layers 2·(2P/32); bf16 grads 2P/8;
    # Adam (fp32 master + 2 moments) 12P/8
    assert m["weights_bytes"] == pytest.approx(2 * P8B / 8 + 2 * 2 * P8B / 32)
    assert m["gradients_bytes"] == pytest.approx(2 * P8B / 8)
    assert m["optimizer_bytes"] == pytest.approx(12 * P8B / 8)
    # the model states: 16P/8 + P/8 = 17·8.03e9/8 = 17.06 GB
    assert m["weights_bytes"] + m["gradients_bytes"] + m["optimizer_bytes"] == pytest.approx(
        17 * P8B / 8)
    one = T.estimate("Llama-3-8B", "train", batch=1, seq_len=4096, hardware="H100 SXM")
    assert m["activations_bytes"] == pytest.approx(one.memory["activations_bytes"])
    z1 = T.estimate("Llama-3-8B", "train", batch=1, seq_len=4096, hardware="H100 SXM",
                    dp=8, zero=1, optimizer="adam_8bit")
    assert z1.memory["optimizer_bytes"] == pytest.approx(6 * P8B / 8)  # 4 + 1 + 1 bytes
    assert z1.memory["gradients_bytes"] == pytest.approx(2 * P8B)


def test_defaults_keep_the_single_gpu_step() -> None:
    r = T.estimate("Llama-3-8B", "train", batch=1, seq_len=2048, hardware="H100 SXM",
                   optimizer_update=False)
    assert r.time_s == pytest.approx(r.to_pandas()["time_s"].sum())
    assert r.step.bubble_fraction == 0 and r.step.exposed_comm_s == 0
    assert r.tokens_per_s == pytest.approx(2048 / r.time_s)
    # the default adds the Adam update: a streaming pass reading and writing 16 fp32 bytes
    # per parameter (master weight, two moments, gradient read; weight written back)
    d = T.estimate("Llama-3-8B", "train", batch=1, seq_len=2048, hardware="H100 SXM")
    assert d.step.optimizer_s > 0
    assert d.time_s == pytest.approx(r.time_s + d.step.optimizer_s)
    assert d.step.optimizer_s == pytest.approx(
        rl.elementwise(int(d.memory["params_per_gpu"]), 4, 4, 0.0, "fp32", "H100 SXM").time_s,
        rel=1e-6)


@pytest.mark.parametrize(("p", "m", "v", "bubble"), [
    (4, 8, 1, 3 / 11),    # (p-1)/(m+p-1)
    (4, 8, 2, 3 / 19),    # (p-1)/(v·m+p-1)
    (8, 32, 1, 7 / 39),
    (1, 8, 1, 0.0),
])
def test_bubble_fraction(p: int, m: int, v: int, bubble: float) -> None:
    assert float(_core.pipeline_bubble_fraction(p, m, v)) == pytest.approx(bubble)
    r = T.estimate("Llama-3-8B", "train", batch=1, seq_len=2048, hardware="H100 SXM",
                   pp=p, grad_accum=m, virtual_stages=v)
    s = r.step
    assert s.bubble_fraction == pytest.approx(bubble)
    # bubble time = (p-1)/v micro-batches of one stage: bubble/(compute+bubble) = fraction
    assert s.bubble_s / (s.compute_s + s.bubble_s) == pytest.approx(bubble)


def test_full_recompute_adds_one_forward_of_flops() -> None:
    kw = {"batch": 1, "seq_len": 2048, "hardware": "H100 SXM"}
    r = T.estimate("Llama-3-8B", "train", recompute="full", **kw)
    ops = r.ops()
    layers = ops[(ops["block"] != "head") & ~ops["op"].str.endswith("bwd")]
    fwd = (layers["flops"] * layers["layers"]).sum()
    # hardware FLOPs = model FLOPs + one forward of every layer
    assert r.step.hfu / r.step.mfu == pytest.approx((r.flops + fwd) / r.flops)
    none = T.estimate("Llama-3-8B", "train", **kw)
    assert r.step.recompute_s == pytest.approx(
        (layers["time_s"] * layers["layers"]).sum())
    assert r.memory["activations_bytes"] < 0.2 * none.memory["activations_bytes"]
    sel = T.estimate("Llama-3-8B", "train", recompute="selective", **kw)
    assert none.memory["activations_bytes"] > sel.memory["activations_bytes"]
    assert none.time_s < sel.time_s < r.time_s


def test_routing_counts() -> None:
    c = expert_counts(1024, 8, 2)
    assert c.tolist() == [256] * 8  # 1024·2/8
    z = expert_counts(1024, 8, 2, skew=1.0)
    assert z.sum() == 2048 and z[0] == max(z) and z[0] <= 1024
    # share of the hottest: 1/H_8 = 1/2.7179 -> 2048/2.7179 = 753.5 assignments, rounded
    assert z[0] in (753, 754)
    assert expert_counts(3, 256, 8).sum() == 24  # small decode batch: 24 experts hit
    assert rank_counts(z, 4).tolist() == [z[0], z[4]]  # rank 0 holds experts 0 and 4
    # with expert parallelism the rank holding the hottest experts sets the step
    kw = {"batch": 256, "kv_len": 1024, "hardware": "H100 SXM", "ep": 4}
    flat = T.estimate("Mixtral-8x7B", "decode", **kw).ops().set_index("op")
    skew = T.estimate("Mixtral-8x7B", "decode", routing_skew=1.5, **kw).ops().set_index("op")
    assert skew.loc["experts gate_up", "flops"] > 1.5 * flat.loc["experts gate_up", "flops"]
    assert skew.loc["dispatch all_to_all", "bytes"] > flat.loc["dispatch all_to_all", "bytes"]


def test_plan_llama_70b_on_64_h100() -> None:
    df = T.plan("Llama-3-70B", gpus=64, hardware="H100 SXM", seq_len=8192,
                global_batch_tokens=2**21)
    assert len(df) > 10 and df["pareto"].any()
    # what fits: 0.9 of the 81090 MiB CUDA reports on an H100 SXM (85.03e9 B)
    assert (df["memory_gb"] <= 81090 * 2**20 * 0.9 / 1e9).all()
    assert (df["tp"] * df["pp"] * df["dp"] * df["cp"] == 64).all()
    assert df["tokens_per_s"].is_monotonic_decreasing
    assert 8 <= df.attrs["min_gpus"] <= 64
    assert 0.2 < df["mfu"].iloc[0] < 0.8


def test_plan_serving_and_bad_input() -> None:
    df = T.plan("Llama-3-8B", gpus=8, hardware="H100 SXM", phase="decode", seq_len=1024,
                output_len=256, batches=(1, 8, 64))
    assert df["pareto"].any() and df.attrs["min_gpus"] == 1
    with pytest.raises(ValueError, match="objective must be one of"):
        T.plan("Llama-3-8B", gpus=8, hardware="H100 SXM", objective="speed")
    with pytest.raises(ValueError, match="gpus must be a positive integer, got 0"):
        T.plan("Llama-3-8B", gpus=0, hardware="H100 SXM")
    with pytest.raises(ValueError, match="zero must be 0, 1, 2, 3 or 'fsdp', got 4"):
        T.estimate("Llama-3-8B", "train", seq_len=128, hardware="H100 SXM", zero=4)
    with pytest.raises(ValueError, match="dp applies to phase='train' only"):
        T.estimate("Llama-3-8B", "decode", kv_len=8, hardware="H100 SXM", dp=2)


def test_serve_kv_capacity_and_speculative_by_hand() -> None:
    cfg = T.config("Llama-3-8B")
    df = T.serve(cfg, "H100 SXM", prompt_len=1000, output_len=24, batches=(1, 4))
    # KV per sequence: 32 layers · 1024 tokens · 2·8·128 · 2 bytes = 128 MiB
    kv = 32 * 1024 * 2 * 8 * 128 * 2
    free = 81090 * 2**20 * 0.9 - 2 * P8B  # 0.9 of CUDA's 81090 MiB, less the bf16 weights
    assert df.attrs["max_batch"] == int(free // kv)
    assert df["kv_cache_gb"].iloc[1] == pytest.approx(4 * kv / 1e9)
    # (1 - 0.8^5)/(1 - 0.8) = 3.3616 tokens per step with k = 4
    assert float(_core.speculative_tokens_per_step(4, 0.8)) == pytest.approx(3.3616)
    spec = T.serve(cfg, "H100 SXM", prompt_len=1000, output_len=24, batches=(4,), spec_k=4,
                   spec_alpha=0.8)
    assert spec["tpot_s"].iloc[0] < df["tpot_s"].iloc[1]
    chunked = T.serve(cfg, "H100 SXM", prompt_len=1000, output_len=24, batches=(4,),
                      chunk_tokens=256)
    assert chunked["ttft_s"].iloc[0] > df["ttft_s"].iloc[1]  # 4 mixed steps vs one prefill


def test_cost_by_hand() -> None:
    # $2/GPU-h, 8 GPUs, 10,000 tok/s: 16/3600/1e4·1e6 = $0.444 per 1M tokens
    assert T.dollars_per_million_tokens(2.0, 8, 10_000) == pytest.approx(16 / 36)
    # 14.8e12 tokens at 4e6 tok/s on 2048 GPUs: 3.7e6 s · 2048 / 3600 = 2,104,889 GPU-hours
    assert T.gpu_hours(14.8e12, 4e6, 2048) == pytest.approx(14.8e12 / 4e6 * 2048 / 3600)
    with pytest.raises(ValueError, match="tokens_per_s must be positive"):
        T.gpu_hours(1e9, 0, 8)


@pytest.mark.parametrize(("model", "gpus", "seq", "gbt"), [
    ("Llama-3-8B", 16, 4096, 2**20),
    ("Qwen3-30B-A3B", 16, 2048, 2**19),
])
def test_every_plan_row_reproduces_through_estimate(model, gpus, seq, gbt) -> None:
    """Issue #25: a plan row carries every setting it used, and estimate(**settings) gives
    the row's time and memory (before: 251 of 720 rows differed in memory)."""
    from roofline.transformer.planner import row_settings

    df = T.plan(model, gpus, "H100 SXM", seq_len=seq, global_batch_tokens=gbt)
    assert len(df) > 20
    rows = range(len(df)) if len(df) <= 60 else np.linspace(0, len(df) - 1, 60).astype(int)
    for i in rows:
        kw = row_settings(df, int(i))
        batch = kw.pop("micro_batch")
        e = T.estimate(model, "train", batch, **kw)
        assert e.time_s == pytest.approx(df["time_s"].iloc[i], rel=1e-9), kw
        assert e.memory["total_bytes"] == pytest.approx(df["total_bytes"].iloc[i],
                                                        rel=1e-9), kw
        assert e.wall_s >= e.time_s


def test_readme_llama70b_row_reproduces() -> None:
    """The README's first Llama-3-70B row: 70.8 GB in the plan, 82.4 GB from estimate with
    its defaults before (sequence parallelism was off there)."""
    from roofline.transformer.planner import row_settings

    df = T.plan("Llama-3-70B", 64, "H100 SXM", seq_len=8192, global_batch_tokens=2097152)
    kw = row_settings(df, 0)
    e = T.estimate("Llama-3-70B", "train", kw.pop("micro_batch"), **kw)
    assert e.memory["total_bytes"] == pytest.approx(df["total_bytes"].iloc[0], rel=1e-9)
    assert e.memory["total_bytes"] <= 80e9 * 0.9
    # the estimate defaults are the plan's: the same without passing the two settings
    d = T.estimate("Llama-3-70B", "train", e.batch,
                   **{k: v for k, v in kw.items()
                      if k not in ("sequence_parallel", "optimizer_update")})
    assert d.time_s == pytest.approx(e.time_s) and d.memory == e.memory
