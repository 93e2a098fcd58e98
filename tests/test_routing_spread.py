"""Token counts under force-balanced (random-logit) routing: binomial per expert, hypergeometric
per token and EP rank, and the busiest rank's expected excess (hardware-notes section 44)."""

from __future__ import annotations

import math

import pytest

from roofline.transformer.routing import expected_max_normal, random_routing_spread
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


def test_benchmark_rows_and_gptoss_bound() -> None:
    mod = load_benchmark("routing_spread")
    rows = mod.spread_rows()
    assert len(rows) == 37  # every Megatron-Bridge train_moe row routes with random logits
    assert all(0.002 < r["spread"].busiest_excess < 0.014 for r in rows)
    g = mod.gptoss_bound()
    # 118 ms of expert GEMMs a GB200 micro-batch, +1.5 ms: 0.4 % of the priced 377.6 ms, ~1 %
    # of the 138 ms the measurement leaves unexplained
    assert g["expert_gemm_ms"] == pytest.approx(118.3, abs=0.5)
    assert g["excess_ms"] == pytest.approx(1.51, abs=0.05)
    assert g["excess_ms"] < 0.01 * (g["implied_ms"] - g["total_ms"]) * 1.2
