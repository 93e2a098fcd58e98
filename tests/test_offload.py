"""Activation offloading to host memory (estimate(offload_layers=), transformer.offload)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.transformer.offload import DEFAULT_HOST_LINK, host_link_bytes_per_s

LLAMA_70B = rl.transformer.config("Llama-3-70B")
KW = dict(seq_len=8192, micro_batch=2, grad_accum=2, dp=64, zero=3, fsdp="megatron",
          linear_recipe="tensorwise_te", gpus_per_node=72, hardware="GB200")


def _step(**kw):
    return rl.transformer.estimate(LLAMA_70B, "train", **{**KW, **kw}).step


def test_schedule_by_hand():
    # 2 layers, 1 offloaded (forward 1 s, backward 2 s, copy 3 s each way): layer 2's forward
    # waits for layer 1's copy-out (t = 3), its backward ends at 6; layer 1's copy-in starts
    # after it (6) and ends at 9; layer 1's backward ends at 11, 6 s of work: 5 s waited
    assert _core.offload_exposed_s(2, 1, 1.0, 2.0, 3.0, 1.0) == pytest.approx(5.0)
    # 4 layers, 2 offloaded (window 2), 1 s each way, copies of 1.5 s: copy-outs end at 1.5 and
    # 3 (the stream is serial), layer 4 starts at 3; backward: layers 4, 3 end at 5, 6; layer
    # 2's copy-in waits for layer 4's end (5): 6.5, its backward ends 7.5; layer 1's copy-in
    # follows (8.0), its backward ends at 9: 1 s waited
    assert _core.offload_exposed_s(4, 2, 1.0, 1.0, 1.5, 1.0) == pytest.approx(1.0)
    # nothing offloaded, or a copy shorter than the work it hides behind: no wait
    assert _core.offload_exposed_s(10, 0, 1.0, 2.0, 1e9, 1.0) == 0.0
    assert _core.offload_exposed_s(80, 40, 0.014, 0.028, 1e9, 256e9) == 0.0
    # a link that is not positive and finite prices nothing (the Python layer refuses it)
    for bad in (0.0, -1.0, math.inf, math.nan):
        assert _core.offload_exposed_s(4, 2, 1.0, 1.0, 1.5, bad) == 0.0


def test_schedule_properties():
    bytes_ = np.geomspace(1e6, 1e12, 25)
    waits = _core.offload_exposed_s(32, 16, 0.01, 0.02, bytes_, 50e9)
    assert np.all(np.diff(waits) >= 0) and np.all(waits >= 0)  # more bytes, never less wait
    links = np.geomspace(1e9, 1e13, 25)
    waits = _core.offload_exposed_s(32, 16, 0.01, 0.02, 1e9, links)
    assert np.all(np.diff(waits) <= 0)  # a faster link, never more wait
    ks = np.arange(0, 32)
    waits = _core.offload_exposed_s(32, ks, 0.01, 0.02, 2e9, 50e9)
    assert np.all(np.diff(waits) >= 0)  # more layers offloaded, never less wait
    # the wait never exceeds the copies themselves (each way, one stream)
    assert np.all(waits <= 2 * ks * 2e9 / 50e9 + 1e-12)


def test_host_links():
    assert host_link_bytes_per_s(rl.hardware("GB200")) == pytest.approx(256e9)
    assert host_link_bytes_per_s(rl.hardware("H100 SXM")) == pytest.approx(49.6e9)
    assert host_link_bytes_per_s(rl.hardware("A100 SXM 80GB")) == pytest.approx(24.8e9)
    assert host_link_bytes_per_s(rl.hardware("GH200 144GB")) == pytest.approx(348.75e9)
    assert DEFAULT_HOST_LINK == pytest.approx(49.6e9)


def test_step_memory_and_time():
    base, none = _step(), _step(offload_layers=0)
    assert none.time_s == base.time_s
    act = {k: _step(offload_layers=k).memory["activations_bytes"] for k in (0, 20, 40)}
    # the GPU keeps (L - K) / L of the layers' activations: equal steps of 20 / 80
    assert act[0] - act[20] == pytest.approx(act[20] - act[40], rel=1e-9)
    assert act[40] < act[20] < act[0]
    times = [_step(offload_layers=k).time_s for k in (0, 20, 40, 60, 79)]
    assert all(b >= a for a, b in zip(times, times[1:], strict=False))
    assert times[2] == pytest.approx(times[0])  # 40 of 80 on NVLink-C2C: hidden
    assert times[-1] > times[0]  # one layer left on the GPU: every copy waited on
    # the wait is the schedule's, per micro-batch, added to the step
    hidden = _step(offload_layers=79, host_bytes_per_s=1e18)
    assert hidden.time_s == pytest.approx(times[0], rel=1e-6)  # window 1: copies serial
    # PCIe 5.0 cannot hide 40 layers' copies (20 it hides since a layer's saved bytes are
    # TE's: fp8 linear inputs, nothing for the residual adds; tests/test_saved_activations.py)
    slow = _step(offload_layers=40, hardware="H100 SXM")
    fast = _step(offload_layers=40, hardware="H100 SXM", host_bytes_per_s=1e18)
    assert slow.time_s > fast.time_s


@pytest.mark.parametrize(("kw", "match"), [
    (dict(offload_layers=-1), "offload_layers"),
    (dict(offload_layers=80), "offload_layers"),
    (dict(offload_layers=1.5), "offload_layers"),
    (dict(offload_layers=True), "offload_layers"),
    (dict(offload_layers="4"), "offload_layers"),
    (dict(offload_layers=4, pp=2, dp=32), "pp=2"),
    (dict(offload_layers=4, recompute="full"), "recompute='full'"),
    (dict(offload_layers=4, host_bytes_per_s=0), "host_bytes_per_s"),
    (dict(offload_layers=4, host_bytes_per_s=math.nan), "host_bytes_per_s"),
    (dict(offload_layers=4, host_bytes_per_s=-5e9), "host_bytes_per_s"),
    (dict(offload_layers=4, host_bytes_per_s="fast"), "host_bytes_per_s"),
])
def test_bad_offload_arguments(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _step(**kw)


def test_offload_is_training_only():
    with pytest.raises(ValueError, match="offload_layers"):
        rl.transformer.estimate(LLAMA_70B, "prefill", seq_len=1024, hardware="GB200",
                                offload_layers=4)


def test_planner_searches_offloading():
    """The training planner tries K = L/2 and L-2 offloaded layers where Megatron-Core allows
    them (pp=1, no recomputation); each such row holds less than its K=0 twin and is
    reproduced by estimate(**row_settings)."""
    from roofline.transformer.planner import row_settings

    df = rl.transformer.plan("Llama-3-8B", gpus=8, hardware="H100 SXM", seq_len=8192,
                             global_batch_tokens=64 * 8192)
    off = df[df["offload_layers"] > 0]
    assert len(off) and set(off["offload_layers"]) <= {16, 30}
    assert (off["pp"] == 1).all() and (off["recompute"] == "none").all()
    keys = ["tp", "pp", "dp", "cp", "zero", "micro_batch", "recompute"]
    plain = df[df["offload_layers"] == 0].set_index(keys)
    compared = fits_only_offloaded = 0
    for _, row in off.iterrows():
        key = tuple(row[k] for k in keys)
        if key not in plain.index:  # the layout fits the GPU only with offloading
            fits_only_offloaded += 1
            continue
        twin = plain.loc[[key]]
        assert row["total_bytes"] < float(np.min(twin["total_bytes"]))
        assert row["time_s"] >= float(np.min(twin["time_s"])) - 1e-12
        compared += 1
    assert compared and fits_only_offloaded
    i = int(off.index[0])
    est = rl.transformer.estimate("Llama-3-8B", "train", **row_settings(df, i))
    assert est.step.time_s == pytest.approx(df["time_s"][i], rel=1e-12)
    assert est.step.memory["total_bytes"] == pytest.approx(df["total_bytes"][i], rel=1e-12)
