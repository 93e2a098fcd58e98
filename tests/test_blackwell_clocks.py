"""Public measurements of the settled clock under sustained tensor load
(data/published/blackwell_clocks.jsonl, issue #24, hardware-notes section 44) against the
training-step clock rule ``gemm_throttle_fraction`` (hardware-notes section 8).

Nothing here is fitted: the rule stays 1 - 0.13 x (dense bf16 FLOP/s per W) / (H100's), and
these tests record where the few direct measurements sit around it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import roofline as rl
from roofline.ops.sustained import settled_clock

ROWS = Path(__file__).resolve().parents[1] / "data" / "published" / "blackwell_clocks.jsonl"
KINDS = {"direct", "against_model", "power_sweep", "qualitative"}


def _rows() -> list[dict]:
    return [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]


def _rule(name: str) -> float:
    clock = settled_clock(rl.hardware(name), "default")
    assert clock is not None
    return clock[0]


def test_rows_cite_their_source() -> None:
    rows = _rows()
    assert len({r["id"] for r in rows}) == len(rows) == 6
    for r in rows:
        assert r["kind"] in KINDS, r["id"]
        assert r["source"].startswith(("https://github.com/", "data/programs/")), r["id"]
        assert r["date"] and r["workload"] and r["duration"] and r["notes"], r["id"]
        for key in ("clock_fraction", "throughput_fraction"):
            assert r[key] is None or 0.5 < r[key] < 1.0, (r["id"], key)
        if r["kind"] == "direct":  # same run, cold and settled: both fractions measured
            assert r["clock_fraction"] and r["throughput_fraction"], r["id"]


def test_fractions_follow_from_the_published_figures() -> None:
    rows = {r["id"]: r for r in _rows()}
    fa4 = rows["flashinfer_pr2899_b200_fa4_bf16"]
    assert fa4["clock_fraction"] == pytest.approx(1580 / 1965, abs=5e-4)
    assert fa4["throughput_fraction"] == pytest.approx(1237 / 1450, abs=5e-4)
    h200 = rows["roofline_h200_clock_droop"]
    assert h200["clock_fraction"] == pytest.approx(1440 / 1980, abs=5e-4)
    assert h200["throughput_fraction"] == pytest.approx(2413 / 2905, abs=5e-4)
    # the model's full-clock price of cuBLAS bf16 8192^3 on a B200 (rl.gemm per call with the
    # lone-kernel drop removed) over torchao's looped 774 us
    ao = rows["ao_pr2427_b200_cublas_bf16_8192cube"]
    assert ao["throughput_fraction"] == pytest.approx(601.1 / 774, abs=5e-4)


def test_rule_by_hand_per_chip() -> None:
    # 1 - 0.13 x (bf16 FLOP/s / board W) / (989.5e12 / 700)
    ref = 989.5e12 / 700
    for name, flops, watts in (("B200", 2250e12, 1000), ("GB200", 2500e12, 1200),
                               ("B300", 2250e12, 1100), ("GB300", 2500e12, 1400)):
        assert _rule(name) == pytest.approx(1 - 0.13 * flops / watts / ref), name
    assert [round(_rule(n), 3) for n in ("B200", "GB200", "B300", "GB300", "H200")] == [
        0.793, 0.808, 0.812, 0.836, 0.87]


def test_b200_rule_inside_the_measured_bracket() -> None:
    # The B200 is the one Blackwell chip with a public settled-clock measurement: SM clock
    # 0.804 and FA4 throughput 0.853 of their cold values (flashinfer PR #2899), cuBLAS bf16
    # 0.777 of the model's full-clock price (torchao PR #2427). The rule's 0.793 sits inside:
    # the evidence does not ask for a deeper B200 clock (the rows' -13 / -18 % bias is
    # not this clock's).
    b200 = [x for r in _rows() if r["hardware"] == "B200"
            for x in (r["clock_fraction"], r["throughput_fraction"]) if x is not None]
    assert min(b200) < _rule("B200") < max(b200)
    assert (min(b200), max(b200)) == pytest.approx((0.777, 0.853))


def test_h200_settles_below_the_hopper_anchor() -> None:
    # The H200 (same die and 700 W as the H100 SXM the rule was fitted on) settles at 0.831 of
    # its cold GEMM rate in this repository's droop log, 0.039 under the rule's 0.87.
    h200 = next(r for r in _rows() if r["id"] == "roofline_h200_clock_droop")
    assert _rule("H200") - h200["throughput_fraction"] == pytest.approx(0.039, abs=1e-3)


def test_no_direct_measurement_for_gb200_b300_gb300() -> None:
    direct = {r["hardware"] for r in _rows() if r["kind"] == "direct"}
    assert direct == {"B200", "H200"}
