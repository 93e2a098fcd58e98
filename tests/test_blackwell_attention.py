"""Published Blackwell attention kernel figures (data/published/blackwell_attention.jsonl,
issue #24 session 13) against the model's prices. Nothing is fitted: the pins record how far
the model is from each source, forward and backward apart (benchmarks/blackwell_attention.py
prints the same figures), so a change that moves them says so."""

from __future__ import annotations

import math
import statistics
from types import ModuleType

import pytest
from _benchmarks import load_benchmark


def _bench() -> ModuleType:
    return load_benchmark("blackwell_attention")


def test_rows_cite_their_source() -> None:
    rows = _bench().load()
    assert len(rows) == 170
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["hardware"] in ("B200", "GB200", "GB300", "H200"), r["id"]
        assert r["source"].startswith("https://github.com/"), r["id"]
        assert r["date"] and r["software"], r["id"]
        assert r["measured_s"] > 0, r["id"]
        c = r["config"]
        assert c["backend"] in ("cudnn", "fa4") and c["dtype"] == "bf16", r["id"]
    # rows whose board the text read does not name carry an attribution note
    assert sum(1 for r in rows if r.get("attribution")) == 100


def test_published_flops_match_the_shapes() -> None:
    # The cudnn-frontend rows' own TFLOPS (notes) agree with their shape and time: 4 b h s^2 d
    # for an unmasked forward (x 2.5 backward); with a w-token window the pairs are
    # w(w+1)/2 + (s - w) w (benchmark_single_sdpa.py's flops()), e.g. wan22 GB200 7800:
    # 4*40*7800^2*128 / 0.803 ms = 1552 TFLOPS.
    for r in _bench().load():
        if not r["id"].startswith("cudnnfe922"):
            continue
        c = r["config"]
        published = float(r["notes"].split("published TFLOPS ")[1].split(" ")[0])
        w, s = c.get("window"), c["q_len"]
        pairs = w * (w + 1) // 2 + (s - w) * w if w else s * c["kv_len"]
        flops = 4 * c["batch"] * c["heads"] * pairs * c["head_dim"]
        flops *= 2.5 if c["backward"] else 1.0
        # published TFLOPS are rounded to whole numbers and times to 1 us
        assert flops / r["measured_s"] / 1e12 == pytest.approx(published, rel=0.01), r["id"]


def test_model_against_published_medians() -> None:
    errs = _bench().errors(_bench().load())
    assert all(math.isfinite(x) for v in errs.values() for xs in v.values() for x in xs)
    med = {(g, d): statistics.median(xs) for g, v in errs.items() for d, xs in v.items()}
    expected = {
        # cuDNN 9.22 at head dim 128, unmasked: both directions slower than published (the
        # library's sm100 kernels hide the softmax the model charges), the forward more.
        # (GB200 +36.7 / +26.6 % and window -36.3 / +26.9 % before its GEMM ceilings were
        # refitted to 152 SMs, hardware-notes §42.)
        ("cudnn 9.22 GB200 d128 no mask", "fwd"): 0.323,
        ("cudnn 9.22 GB200 d128 no mask", "bwd"): 0.223,
        ("cudnn 9.22 GB300 d128 no mask", "fwd"): 0.381,
        ("cudnn 9.22 GB300 d128 no mask", "bwd"): 0.226,
        # Head dim 64, 128-token window: the forward priced too fast, the backward too slow;
        # their sum within a few % (the training layer's pricing, local_attention).
        ("cudnn 9.22 GB200 d64 sliding window 128", "fwd"): -0.367,
        ("cudnn 9.22 GB200 d64 sliding window 128", "bwd"): 0.244,
        ("cudnn 9.22 GB300 d64 sliding window 128", "fwd"): -0.395,
        ("cudnn 9.22 GB300 d64 sliding window 128", "bwd"): 0.137,
        # Hopper control (cuDNN 9.19, window 1024): the same signs, much smaller.
        ("control: cudnn 9.19 H200 d64 GQA sliding window 1024", "fwd"): -0.114,
        ("control: cudnn 9.19 H200 d64 GQA sliding window 1024", "bwd"): 0.016,
        # FA4 at head dim 128 (priced with the cuDNN terms): the model ~25 % slow.
        ("FA4 (CuTe DSL) sm100 d128, PR #2280", "fwd"): 0.276,
        ("FA4 (CuTe DSL) sm100 d128, PR #2280", "bwd"): 0.255,
        # PR #2605's head-dim-64 forwards (priced on B200), two runs: table A (MFU basis 2500)
        # 20-25 % faster than priced, table B (basis 2250, likely the author's B200 locked at
        # 1755 MHz) within 1 % for cuDNN; its FA4 (before the PR's cutlass-dsl bump) slower.
        ("PR #2605 table A cudnn fwd (MFU basis 2500, board inferred)", "fwd"): 0.249,
        ("PR #2605 table A fa4 fwd (MFU basis 2500, board inferred)", "fwd"): 0.197,
        ("PR #2605 table B cudnn fwd (MFU basis 2250, board inferred)", "fwd"): 0.012,
        ("PR #2605 table B fa4 fwd (MFU basis 2250, board inferred)", "fwd"): -0.144,
        # The PR's three FA4-only forward tables, head dims 64 and 128 in each run.
        ("PR #2605 FA4 run X fwd d64+d128 (MFU basis 2250, board inferred)", "fwd"): -0.056,
        ("PR #2605 FA4 run Y fwd d64+d128 (MFU basis 2500, board inferred)", "fwd"): 0.231,
        ("PR #2605 FA4 run Z fwd d64+d128 (MFU basis 2250, board inferred)", "fwd"): -0.104,
    }
    assert set(med) == set(expected)
    for key, value in expected.items():
        assert med[key] == pytest.approx(value, abs=0.005), key


def test_backward_over_forward_at_head_dim_128() -> None:
    # The published backward / forward time at head dim 128 (cuDNN 9.22 2.74-3.43, FA4 2.82 /
    # 2.93) is at or above the priced one (2.75-2.90): the model's backward is not priced
    # slower than its forward relative to the kernels; at long sequences up to ~15 % faster.
    for group, label, published, priced in _bench().bwd_fwd_ratios(_bench().load()):
        if "d128" not in label:
            continue
        assert 2.7 <= priced <= 2.95, (group, label)
        assert published >= priced * 0.97, (group, label)
        assert published <= priced * 1.25, (group, label)


def test_head_dim_64_against_128_in_one_run() -> None:
    # The same run's cuDNN forward, batch 32 x 1024 tokens, unmasked, hidden 2048 (32 heads of
    # 64 or 16 of 128: the same FLOPs): published time ratio d64 / d128 0.28 / 0.19 = 1.47
    # (table A) and 0.32 / 0.24 = 1.33 (table B); priced 1.31 on B200. The model's head-dim
    # dependence of the sm100 forward is within 1-11 % of the kernels'.
    rows = {r["id"]: r for r in _bench().load()}
    for tab, published in (("a", 0.28 / 0.19), ("b", 0.32 / 0.24)):
        d64 = rows[f"pr2605{tab}_cudnn_full_fwd_d64_b32_s1024"]
        d128 = rows[f"pr2605{tab}_cudnn_full_fwd_d128_b32_s1024"]
        assert d64["measured_s"] / d128["measured_s"] == pytest.approx(published)
        priced = _bench().price(d64) / _bench().price(d128)
        assert priced == pytest.approx(1.31, abs=0.01)
        assert 0.88 <= priced / published <= 1.0


def test_head_dim_ratio_in_every_run() -> None:
    # 26 same-run pairs (2 cuDNN, 24 FA4): published d64 / d128 forward time 1.33-1.79 (median
    # 1.53) at equal FLOPs, priced 1.30-1.31 on B200: in every run head dim 64 is relatively
    # slower than the model has it. The sm100 MUFU bound (16 exponentials per SM and clock,
    # 1124-1191 TFLOP/s at d64 on B200) lies above the model's d64 price (872-890): not
    # binding; the gap is the runs' d128 level (hardware-notes §25).
    pairs = _bench().head_dim_ratios(_bench().load())
    assert len(pairs) == 26
    assert all(1.29 <= priced <= 1.32 for _, _, _, priced in pairs)
    published = sorted(p for _, _, p, _ in pairs)
    assert published[0] == pytest.approx(1.33, abs=0.01)
    assert published[-1] == pytest.approx(1.79, abs=0.01)
    assert statistics.median(published) == pytest.approx(1.53, abs=0.01)
