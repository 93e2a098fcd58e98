"""In-flight batching (transformer.serve): steady state by hand, step prices, bounds, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.transformer.serving import StepPricer, split_time

T = rl.transformer
H100 = "H100 SXM"


def test_inflight_state_by_hand() -> None:
    # N = 10 requests of I = 100 in, O = 11 out (10 decode steps), budget 1000: a prompt fits
    # in one step, so N = d + r = d·(1 + 1/10): d = 100/11, r = 10/11 per step.
    s = _core.inflight_state(10, 100, 10, 1000, 1, math.inf)
    assert s["decode_seqs"] == pytest.approx(100 / 11)
    assert s["completions_per_step"] == pytest.approx(10 / 11)
    assert s["prefill_tokens_per_step"] == pytest.approx(1000 / 11)
    assert s["prefill_steps"] == 1
    # one prompt of 100 tokens every 1.1 steps: φ = r, 100 tokens per mixed step
    assert s["mixed_fraction"] == pytest.approx(10 / 11)
    assert s["prefill_tokens_per_mixed_step"] == pytest.approx(100)
    assert not s["budget_bound"]
    # chunks of 256 of a 1000-token prompt with 23 decode steps: N = d + (d/23)·(1000/256)
    s = _core.inflight_state(4, 1000, 23, 8192, 1, 256)
    d = 4 / (1 + 1000 / 256 / 23)
    assert s["decode_seqs"] == pytest.approx(d, rel=1e-6)
    assert s["prefill_steps"] == 4
    assert s["mixed_fraction"] == pytest.approx(4 * d / 23, rel=1e-6)
    # budget-bound: 1000 requests cannot all run; prefill r·I fills B - d:
    # d·100/10 = 1000 - d -> d = 1000/11
    s = _core.inflight_state(1000, 100, 10, 1000, 1, math.inf)
    assert s["budget_bound"]
    assert s["decode_seqs"] == pytest.approx(1000 / 11)
    assert s["decode_seqs"] + s["prefill_tokens_per_step"] == pytest.approx(1000)
    # prefill only (O = 1): every step prefills min(B, N·I) tokens
    s = _core.inflight_state(3, 100, 0, 1000, 1, math.inf)
    assert s["decode_seqs"] == 0 and s["completions_per_step"] == pytest.approx(3)
    # tokens/s: r·O over the mean step (1-φ)·t_d + φ·t_m = 0.5·0.01 + 0.5·0.03 = 0.02 s
    assert float(_core.inflight_tokens_per_s(2.0, 11, 0.01, 0.03, 0.5)) == pytest.approx(
        2 * 11 / 0.02)


def test_mixed_step_prices_by_hand() -> None:
    kw = dict(hardware=rl.hardware(H100), tp=1, ep=1, linear_recipe=None, kv_dtype=None,
              efficiency="default")
    p = StepPricer(T.config("Llama-3-8B"), 1000, 200, 1, kw)
    assert p.kv_len == 1100
    dec = T.estimate("Llama-3-8B", "decode", 32, kv_len=1100, hardware=H100, launch="graph")
    assert p.decode_step_s(32) == pytest.approx(dec.wall_s)
    # mixed: decode step + (ops over 32 + 500 tokens - ops over 32) + the prompt tokens'
    # attention in one kernel (the attention and head stay the decode step's): half a prompt
    # is one prompt's attention A(1) less half the step to two prompts, A(1) - 0.5 (A(2) -
    # A(1)) (the kernel's floor once, half a prompt's work)
    big = T.estimate("Llama-3-8B", "decode", 532, kv_len=1, hardware=H100, launch="graph")
    a1 = split_time(T.estimate("Llama-3-8B", "prefill", 1, seq_len=1000, hardware=H100))[0]
    a2 = split_time(T.estimate("Llama-3-8B", "prefill", 2, seq_len=1000, hardware=H100))[0]
    want = (dec.wall.gpu_s + split_time(big)[2] - split_time(dec)[2]
            + a1 - 0.5 * (a2 - a1))
    assert p.mixed_step_s(32, 500) == pytest.approx(want)
    attn, head, rest = split_time(dec)
    assert attn + head + rest == pytest.approx(dec.time_s)
    # batching the prompt with the decode tokens is cheaper than running them apart, dearer
    # than the decode step alone
    alone = T.estimate("Llama-3-8B", "prefill", 1, seq_len=500, hardware=H100).time_s
    assert p.decode_step_s(32) < p.mixed_step_s(32, 500) < p.decode_step_s(32) + alone


def test_serve_columns_compose() -> None:
    df = T.serve("Llama-3-8B", H100, prompt_len=512, output_len=129, batches=(8, 64))
    for _, row in df.iterrows():
        r = row["decode_seqs"] / 128  # completions per step
        assert row["tokens_per_s"] == pytest.approx(r * 129 / row["step_s"], rel=1e-9)
        phi = row["mixed_fraction"]
        assert row["step_s"] == pytest.approx(
            (1 - phi) * row["decode_step_s"] + phi * row["mixed_step_s"])
        assert row["tpot_s"] == row["step_s"]
        assert row["decode_step_s"] <= row["mixed_step_s"] <= row["ttft_s"] + 1e-12


def test_decode_step_reads_weights_and_kv() -> None:
    # Bandwidth bound of a decode step: the weights and every decoding request's KV cache
    # (fp8: 32 layers · 2·8·128 bytes per token) are read once per step.
    df = T.serve("Llama-3-8B", H100, prompt_len=128, output_len=2048, kv_dtype="fp8",
                 linear_recipe="tensorwise", batches=(256,))
    hw = rl.hardware(H100)
    kv_token = 32 * 2 * 8 * 128
    d = int(round(df["decode_seqs"].iloc[0]))
    floor = (df["weights_gb"].iloc[0] * 1e9 + d * df["kv_len"].iloc[0] * kv_token) / (
        hw.mem_bytes_per_s)
    assert floor < df["decode_step_s"].iloc[0] < 2 * floor


def test_monotone_in_concurrency_and_lengths() -> None:
    df = T.serve("Llama-3-8B", H100, prompt_len=1024, output_len=256,
                 batches=(1, 4, 16, 64, 128))
    assert np.all(np.diff(df["tokens_per_s"]) > 0)
    assert np.all(np.diff(df["tpot_s"]) > 0)
    assert np.all(np.diff(df["decode_seqs"]) > 0)
    longer = [T.serve("Llama-3-8B", H100, prompt_len=i, output_len=256, batches=(32,))
              for i in (256, 1024, 4096)]
    assert longer[0]["tokens_per_s"].iloc[0] > longer[1]["tokens_per_s"].iloc[0] > (
        longer[2]["tokens_per_s"].iloc[0])
    assert longer[0]["ttft_s"].iloc[0] < longer[1]["ttft_s"].iloc[0] < (
        longer[2]["ttft_s"].iloc[0])
    assert longer[0].attrs["max_batch"] > longer[2].attrs["max_batch"]


def test_kv_admission_pages_and_budget() -> None:
    kw = dict(prompt_len=1000, output_len=1000, batches=(1,))
    reserve = T.serve("Llama-3-8B", H100, **kw)
    grow = T.serve("Llama-3-8B", H100, kv_admission="grow", **kw)
    # 2000 tokens reserved (63 pages of 32 = 2016) vs the mean context 1500 (1504 in pages)
    per_token = 32 * 2 * 8 * 128 * 2
    assert reserve.attrs["kv_bytes_per_request"] == pytest.approx(2016 * per_token)
    assert grow.attrs["kv_bytes_per_request"] == pytest.approx(1504 * per_token)
    assert grow.attrs["max_batch"] > reserve.attrs["max_batch"]
    # a small budget chunks a long prompt: more steps to the first token
    small = T.serve("Llama-3-8B", H100, token_budget=256, **kw)
    assert small["ttft_s"].iloc[0] > reserve["ttft_s"].iloc[0]


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(batches=[1.5]), TypeError, r"batches\[0\] must be an integer"),
    (dict(batches=[0]), ValueError, r"batches\[0\] must be an integer >= 1"),
    (dict(batches=[True]), TypeError, "batches"),
    (dict(token_budget=0), ValueError, "token_budget must be an integer"),
    (dict(token_budget=3, spec_k=4), ValueError, "token_budget must exceed"),
    (dict(kv_admission="lazy"), ValueError, "unknown kv_admission 'lazy'"),
    (dict(cuda_graphs="yes"), TypeError, "cuda_graphs must be a bool"),
    (dict(page_tokens=0), ValueError, "page_tokens must be an integer"),
    (dict(spec_alpha=float("nan")), ValueError, "spec_alpha must be a number"),
    (dict(chunk_tokens=0), ValueError, "chunk_tokens must be an integer"),
])
def test_serve_bad_input(kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        T.serve("Llama-3-8B", H100, prompt_len=64, output_len=8, **kwargs)


def test_request_rate_by_littles_law() -> None:
    rows = [T.serve("Llama-3-8B", H100, prompt_len=1000, output_len=200, request_rate=rate)
            for rate in (2.0, 10.0)]
    for rate, df in zip((2.0, 10.0), rows, strict=True):
        r = df.iloc[0]
        assert r["batch"] == pytest.approx(rate * r["e2e_s"], rel=2e-3)  # N = λ·E2E
        assert r["tokens_per_s"] == pytest.approx(rate * 200, rel=0.02)  # λ·O out
        assert r["e2e_s"] == pytest.approx(r["ttft_s"] + 199 * r["step_s"])
    assert rows[1].iloc[0]["batch"] > rows[0].iloc[0]["batch"]
    assert rows[1].iloc[0]["tpot_s"] > rows[0].iloc[0]["tpot_s"]
    with pytest.raises(ValueError, match="exceeds what the engine sustains"):
        T.serve("Llama-3-8B", H100, prompt_len=1000, output_len=200, request_rate=1e5)
    with pytest.raises(ValueError, match="request_rate must be a positive number"):
        T.serve("Llama-3-8B", H100, prompt_len=1000, output_len=200, request_rate=0)
    with pytest.raises(ValueError, match="request_rate must be a number"):
        T.serve("Llama-3-8B", H100, prompt_len=1000, output_len=200,
                request_rate=float("inf"))


@pytest.mark.parametrize("rate", [1e-6, 1e-4, 1e-2])
def test_slow_request_rates_keep_littles_law(rate: float) -> None:
    """The bisection for N stopped at an absolute 1e-3: every rate below ~1e-5 /s came back
    at N = 6e-4 (0.099 tokens/s at 1e-9 requests/s, 1e-300 alike)."""
    r = T.serve("Llama-3-8B", H100, prompt_len=1000, output_len=200,
                request_rate=rate).iloc[0]
    assert r["batch"] == pytest.approx(rate * r["e2e_s"], rel=2e-3)
    assert r["tokens_per_s"] == pytest.approx(rate * 200, rel=0.02)
    with pytest.raises(ValueError, match="request_rate must be a positive number of at least "
                       "1e-06 requests/s, got 1e-07"):
        T.serve("Llama-3-8B", H100, request_rate=1e-7)


def test_serve_decode_kv_reads_per_query_head() -> None:
    """serve passes decode_kv_reads to every step: the decode step of a GQA model (Llama-3-8B:
    32 query heads, 8 KV heads) reads 4x the KV bytes in its attention, nothing else changes
    (KV cache held, weights, admitted concurrency)."""
    kw = dict(prompt_len=1024, output_len=256, batches=(32,))
    base = rl.transformer.serve("Llama-3-8B", "H100 SXM", **kw)
    per_q = rl.transformer.serve("Llama-3-8B", "H100 SXM", decode_kv_reads="per_query_head",
                                 **kw)
    assert per_q.attrs["max_batch"] == base.attrs["max_batch"]
    assert per_q["kv_cache_gb"].iloc[0] == pytest.approx(base["kv_cache_gb"].iloc[0])
    step = StepPricer(rl.transformer.config("Llama-3-8B"), 1024, 256, 1,
                      dict(hardware=rl.hardware("H100 SXM")))
    step_q = StepPricer(rl.transformer.config("Llama-3-8B"), 1024, 256, 1,
                        dict(hardware=rl.hardware("H100 SXM"), decode_kv_reads="per_query_head"))
    a0, h0, r0 = split_time(step.decode_estimate(32))
    a1, h1, r1 = split_time(step_q.decode_estimate(32))
    assert (h1, r1) == pytest.approx((h0, r0))
    assert a1 > 2 * a0  # 4x the KV bytes of a memory-bound decode attention
    d = per_q["decode_step_s"].iloc[0] - base["decode_step_s"].iloc[0]
    assert d == pytest.approx(a1 - a0, rel=1e-6)
