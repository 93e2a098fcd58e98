"""Token counts under force-balanced (random-logit) routing: binomial per expert, hypergeometric
per token and EP rank, and the busiest rank's expected excess (hardware-notes section 46)."""

from __future__ import annotations

import math

import pytest

import roofline as rl
from roofline.transformer.routing import (
    capacity_counts,
    expected_max_normal,
    random_routing_spread,
    sampled_counts,
)
from tests._benchmarks import load_benchmark


def test_expected_max_of_normals_closed_forms() -> None:
    assert expected_max_normal(1) == pytest.approx(0.0, abs=1e-9)
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-6)
    assert expected_max_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi), rel=1e-6)
    vals = [expected_max_normal(n) for n in (2, 8, 32, 64, 128)]
    assert vals == sorted(vals)


def test_two_ranks_by_hand() -> None:
    # 1024 tokens per rank, 8 experts, top-2, EP2: N = 2048 tokens, p = 1/4
    s = random_routing_spread(1024, 8, 2, 2)
    assert s.expert_mean == pytest.approx(512.0)
    assert s.expert_sd == pytest.approx(math.sqrt(2048 * 0.25 * 0.75))  # 19.60
    # per token the rank's 4 experts hold a hypergeometric share: 2 * 1/2 * 1/2 * 6/7
    assert s.rank_mean == pytest.approx(2048.0)
    assert s.rank_sd == pytest.approx(math.sqrt(2048 * 2 * 0.25 * 6 / 7))  # 29.63
    # two loads X and 2m - X: E[max] - m = E|X - m| = sd * sqrt(2 / pi)
    assert s.busiest_excess == pytest.approx(s.rank_sd * math.sqrt(2 / math.pi) / 2048, rel=1e-5)


def test_gptoss_ep64_by_hand() -> None:
    # GB200 GPT-OSS-120B row: 8192 tokens per rank, 128 experts, top-4, EP64
    s = random_routing_spread(8192, 128, 4, 64)
    assert s.expert_mean == pytest.approx(16384.0)
    assert s.expert_sd == pytest.approx(math.sqrt(15872.0))  # 126.0
    assert s.rank_sd == pytest.approx(math.sqrt(32768 * 63 / 64 * 124 / 127))  # 177.5
    assert s.busiest_excess == pytest.approx(0.0128, abs=0.0002)


def test_properties() -> None:
    assert random_routing_spread(4096, 64, 6, 1).busiest_excess == 0.0
    # the excess falls as 1 / sqrt(tokens) and grows with the rank count
    a, b = random_routing_spread(4096, 128, 8, 8), random_routing_spread(16384, 128, 8, 8)
    assert b.busiest_excess == pytest.approx(a.busiest_excess / 2, rel=1e-9)
    assert random_routing_spread(4096, 128, 8, 32).busiest_excess > a.busiest_excess
    # every expert chosen by every token: no spread at all
    assert random_routing_spread(512, 8, 8, 4).expert_sd == 0.0


@pytest.mark.parametrize(("args", "match"), [
    ((0, 8, 2, 2), "tokens"), ((64, 8, 9, 2), "top_k"), ((64, 8, 2, 3), "ep"),
    ((64, 8, True, 2), "top_k"), ((64.5, 8, 2, 2), "tokens"),
])
def test_bad_input_names_the_argument(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        random_routing_spread(*args)
    with pytest.raises(ValueError, match="n must be"):
        expected_max_normal(0)


def test_sampled_counts_by_hand() -> None:
    # GB200 GPT-OSS: the busiest rank carries round(32768 * 1.012794) = 33187 rows; its two
    # experts sit at the normal scores -/+0.6745 x 126.0 around 16593.5: 16509 and 16678
    c = sampled_counts(8192, 128, 4, 64)
    s = random_routing_spread(8192, 128, 4, 64)
    assert int(c.sum()) == round(s.rank_mean * (1 + s.busiest_excess)) == 33187
    assert c.tolist() == [16509, 16678]
    # one rank: no excess, the experts spread around their mean, the total exact
    one = sampled_counts(1024, 8, 2, 1)
    assert int(one.sum()) == 2048 and len(set(one.tolist())) == 8 and one.min() > 200
    # the dropless capacity_counts takes them when sampled; a rank still sends t·k rows
    local, sent = capacity_counts(8192, 128, 4, 64, None, 0.0, True)
    assert local.tolist() == c.tolist() and sent == 8192 * 4


def _step(**kw: object) -> rl.transformer.ModelEstimate:
    return rl.transformer.estimate("Qwen3-30B-A3B", "train", seq_len=1024, hardware="B200",
                                   ep=8, dp=8, micro_batch=1, **kw)


def test_force_balanced_prices_the_busiest_rank() -> None:
    off, on = _step(), _step(moe_router="force_balanced")
    # a host-bound step (1024 tokens, 16 experts a rank) hides it under the host's launches
    # (the step equal to rounding); the expert GEMMs themselves grow
    assert on.step.time_s >= off.step.time_s * (1 - 1e-12)

    def row(e: rl.transformer.ModelEstimate, name: str, col: str) -> float:
        i = next(j for j, r in enumerate(e.rows) if r[1] == name)
        return float(e.columns[col][i])
    assert row(on, "experts gate_up", "time_s") > row(off, "experts gate_up", "time_s")
    # the dispatch all-to-all carries the busiest rank's received rows, 8192 even, more here
    s = random_routing_spread(1024, 128, 8, 8)
    target = round(s.rank_mean * (1 + s.busiest_excess))
    assert target > 8192
    assert row(on, "dispatch all_to_all", "bytes") / row(off, "dispatch all_to_all", "bytes") \
        == pytest.approx(target / 8192, rel=1e-9)


@pytest.mark.parametrize(("kw", "match"), [
    (dict(moe_router=1), "moe_router must be one of"),
    (dict(moe_router="force_balanced", routing_skew=0.5), "routing_skew must be 0"),
    (dict(moe_router="force_balanced", moe_capacity_factor=1.0), "moe_capacity_factor"),
])
def test_force_balanced_bad_input(kw: dict, match: str) -> None:
    with pytest.raises((TypeError, ValueError), match=match):
        _step(**kw)
    with pytest.raises(ValueError, match="phase='train'"):
        rl.transformer.estimate("Qwen3-30B-A3B", "prefill", hardware="B200", seq_len=128,
                                moe_router="force_balanced")


def test_benchmark_rows_and_the_priced_effect() -> None:
    mod = load_benchmark("routing_spread")
    rows = mod.spread_rows()
    assert len(rows) == 37  # every Megatron-Bridge train_moe row routes with random logits
    assert all(0.002 < r["spread"].busiest_excess < 0.014 for r in rows)
    jobs = {r["id"]: r for r in mod.read_jobs(mod.JOBS_FILE)}
    assert all(jobs[r["id"]]["config"].get("moe_router") == "force_balanced" for r in rows)
    e = mod.priced_effect(jobs["mbridge2511_gb200_gptoss120b_bf16"])
    # GB200 GPT-OSS: the step 0.63 % longer (the busiest rank's expert GEMMs, permutes and
    # exchanges +1.28 %), the error -26.1 -> -25.7 %: nowhere near the gap
    assert e["even"] / e["sampled"] - 1 == pytest.approx(0.0063, abs=0.0005)
    assert e["measured"] / e["sampled"] - 1 == pytest.approx(-0.2565, abs=0.001)
