"""Collectives that overlap compute hold SMs: NCCL runs one CTA per channel for the whole
collective, so the compute it overlaps runs on the other SMs (``comm_sm_fraction``)."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.ops.collectives import (
    DEFAULT_LATENCY_S,
    NCCL_NIC_FRACTION,
    link_bytes_per_s,
    nccl_nvlink_fraction,
)
from roofline.transformer.layout_step import train_step
from roofline.transformer.training import NCCL_COMM_CTAS

T = rl.transformer


def _pass(gather: list[float], compute: list[float], reduce: list[float], f: float) -> float:
    return float(_core.overlapped_pass_s(np.array(gather, float), np.array(compute, float),
                                         np.array(reduce, float), comm_sm_fraction=f))


def test_contention_by_hand() -> None:
    # AG0 0..1; unit 0 starts at 1 while AG1 runs 1..2: for that 1 s it computes at half rate
    # (0.5 s of work), the remaining 1.5 s at full rate: 1 + 1 + 1.5 = 3.5; unit 1 3.5..5.5
    assert _pass([1, 1], [2, 2], [0, 0], 0.5) == pytest.approx(5.5)
    assert _pass([1, 1], [2, 2], [0, 0], 0.0) == pytest.approx(5.0)
    # a short compute inside a long gather: 2 s of work at half rate = 4 s, still inside the
    # 4 s AG1 (1..5): the pass stays link-bound at 6 s either way
    assert _pass([1, 4], [2, 1], [0, 0], 0.5) == pytest.approx(6.0)
    assert _pass([1, 4], [2, 1], [0, 0], 0.0) == pytest.approx(6.0)
    # a reduction slows the next unit's compute: unit 0 0..2, its reduction 2..3 under
    # unit 1 (half rate for 1 s = 0.5 s of work, then 1.5 s): 2 + 1 + 1.5 = 4.5
    assert _pass([0, 0], [2, 2], [1, 0], 0.5) == pytest.approx(4.5)


def test_contention_properties() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        g, c, r = (rng.uniform(0, 2, n) for _ in range(3))
        base = float(_core.overlapped_pass_s(g, c, r))
        prev = base
        for f in (0.05, 0.1, 0.2, 0.4):
            w = float(_core.overlapped_pass_s(g, c, r, comm_sm_fraction=f))
            # never faster, monotone in f, and at most every compute slowed throughout
            assert prev - 1e-12 <= w <= base + float(np.sum(c)) * f / (1 - f) + 1e-9
            prev = w


def test_fsdp_step_pays_for_the_sms_its_collectives_hold() -> None:
    kw = dict(seq_len=4096, micro_batch=2, hardware="A100 SXM 80GB", dp=64, zero=3,
              gpus_per_node=8)
    est = T.estimate("Llama-3-8B", "train", **kw)
    hw = rl.hardware("A100 SXM 80GB")
    assert NCCL_COMM_CTAS / hw.sms == pytest.approx(16 / 108)
    base = est._cache["train_base"]
    par = {"dp": 64, "pp": 1, "cp": 1, "zero": 3, "recompute": 0, "recompute_every": 1,
           "micro_batch": 2, "grad_accum": 1, "virtual_stages": 1, "optimizer": "adam",
           "overlap": True, "sequence_parallel": False, "optimizer_update": True,
           "gpus_per_node": 8, "reduce_bytes": None, "reshard_after_forward": None}
    link = link_bytes_per_s(hw, nccl_nvlink_fraction(hw))  # the NVLink hops of the rings
    args = dict(tp=1, ep=1, seq_len=4096, link_bytes_per_s=link,
                network_bytes_per_s=50e9 * NCCL_NIC_FRACTION,
                latency_s=DEFAULT_LATENCY_S, peak_flops_per_s=hw.bf16_flops_per_s)
    with_sms = train_step(base, hw, par, **args)
    no_sms = train_step(base, hw.replace(sms=None), par, **args)
    assert with_sms.time_s == pytest.approx(est.time_s)
    extra = with_sms.exposed_comm_s - no_sms.exposed_comm_s
    # the hidden communication (most of comm_s here) costs up to f of its length in compute
    f = 16 / 108
    hidden = no_sms.comm_s - no_sms.exposed_comm_s
    assert 0 < extra <= f * no_sms.comm_s
    assert extra > 0.5 * f * hidden
    # without data parallelism nothing overlaps: no contention
    one = T.estimate("Llama-3-8B", "train", seq_len=4096, micro_batch=2, hardware=hw)
    assert one.step.exposed_comm_s == 0.0
