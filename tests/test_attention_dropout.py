"""Dropout inside attention: fused kernels draw random bits per score on the integer pipe; the
math path runs a separate dropout pass. Hand-derived costs, the trace and torch paths, bad
input."""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline as rl
from roofline.ops.attention import attention_kernels

HW = "H100 SXM"
#: FlashAttention-2's Philox scheme: 60 instructions per 16 scores, then 3 per score.
OPS_PER_SCORE = 60 / 16 + 3
TRACES = Path(__file__).resolve().parent / "data" / "traces"


def _int_ops_per_s(hw: rl.Hardware) -> float:
    assert hw.sms and hw.clock_hz
    return hw.sms * hw.clock_hz * 64  # 64 INT32 lanes per SM per clock


@pytest.mark.parametrize("backend", ["cudnn", "flash", "efficient", "standard"])
@pytest.mark.parametrize("backward", [False, True])
def test_fused_dropout_adds_the_random_bits_by_hand(backend: str, backward: bool) -> None:
    # 33 x 4 heads x 4096 / 128-row tiles = 4224 = 32 waves of 132 SMs: no wave padding, so
    # the extra time is the scores' Philox instructions at the integer rate, plus what the
    # per-tile overhead keys and the 64-row tiles of the memory-efficient kernel add (< 10 %)
    hw = rl.hardware(HW)
    kw = dict(backend=backend, backward=backward, hardware=hw)
    plain = rl.attention(33, 4, 4096, 4096, 128, **kw)
    drop = rl.attention(33, 4, 4096, 4096, 128, dropout_p=0.1, **kw)
    hand = 33 * 4 * 4096 * 4096 * OPS_PER_SCORE / _int_ops_per_s(hw)
    assert hand <= drop.time_s - plain.time_s <= 1.10 * hand
    assert drop.flops == plain.flops and drop.bytes == plain.bytes  # no DRAM traffic added


def test_dropout_probability_does_not_change_the_time() -> None:
    t = [rl.attention(8, 32, 2048, 2048, 128, hardware=HW, dropout_p=p).time_s
         for p in (0.01, 0.1, 0.5, 1.0)]
    assert t == [t[0]] * 4
    assert rl.attention(8, 32, 2048, 2048, 128, hardware=HW, dropout_p=0).time_s < t[0]


def test_dropout_never_faster_and_monotone() -> None:
    for causal in (False, True):
        prev = 0.0
        for s in (256, 512, 1024, 2048, 4096):
            kw = dict(causal=causal, hardware=HW)
            plain = rl.attention(4, 16, s, s, 64, **kw).time_s
            drop = rl.attention(4, 16, s, s, 64, dropout_p=0.1, **kw).time_s
            assert drop >= plain
            assert drop >= prev
            prev = drop


def test_math_path_runs_a_dropout_pass() -> None:
    # aten's native_dropout on the fp32 probabilities: reads them, writes them and a bool mask
    b, h, s = 2, 8, 512
    rows = attention_kernels(b, h, s, s, 64, backend="math", hardware=HW, dropout_p=0.1)
    names = [r["kernel"] for r in rows]
    assert names.index("where") < names.index("dropout") < names.index("PV")
    d = rows[names.index("dropout")]
    scores = b * h * s * s
    assert d["bytes_read"] == pytest.approx(4 * scores)
    assert d["bytes_written"] == pytest.approx(4 * scores + scores)
    bwd = attention_kernels(b, h, s, s, 64, backend="math", backward=True, hardware=HW,
                            dropout_p=0.1)
    assert "dropout bwd" in [r["kernel"] for r in bwd]
    assert "dropout" not in [r["kernel"] for r in attention_kernels(
        b, h, s, s, 64, backend="math", hardware=HW)]


def test_trace_prices_cudnn_attention_with_its_dropout() -> None:
    # the encoder layer trains with dropout_p=0.1: cuDNN forward 1.86 ms / backward 3.58 ms
    # measured; dropout-free prices 0.94 / 2.94 ms, with the Philox bits 1.46 / 3.47 ms
    r = rl.trace.explain(str(TRACES / "encoder_layer_train.json.gz"), hardware=HW)
    d = r.by_op()
    att = d[d.op.str.contains("cudnn_attention")]
    assert len(att) == 2 and att.how.str.contains("dropout_p=0.1").all()
    assert not att.how.str.contains("not in the model").any()
    for _, row in att.iterrows():
        assert row.predicted_s <= row.measured_s * 1.05
        assert row.predicted_s >= row.measured_s * 0.75


def test_torch_estimate_passes_sdpa_dropout() -> None:
    torch = pytest.importorskip("torch")
    import roofline.torch  # noqa: F401

    x = torch.empty(2, 512, 1024, dtype=torch.bfloat16, device="meta")
    with torch.device("meta"):
        layers = [torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True,
                                                   dropout=p).to(torch.bfloat16)
                  for p in (0.0, 0.1)]
    plain, drop = (rl.torch.estimate(m, x, HW, mode="train") for m in layers)
    extra = (rl.attention(2, 16, 512, 512, 64, hardware=HW, dropout_p=0.1).time_s
             - rl.attention(2, 16, 512, 512, 64, hardware=HW).time_s)
    assert extra > 0
    # the attention kernels' extra (forward and backward) plus the other dropout layers' passes
    assert drop.time_s - plain.time_s > 2 * extra


@pytest.mark.parametrize("bad, err", [(-0.1, ValueError), (1.5, ValueError),
                                      (float("nan"), ValueError), ("0.1", TypeError),
                                      (True, TypeError), ([0.1], TypeError)])
def test_bad_dropout_names_the_argument(bad: object, err: type) -> None:
    with pytest.raises(err, match="dropout_p"):
        rl.attention(1, 8, 256, 256, 64, hardware=HW, dropout_p=bad)  # type: ignore[arg-type]
    with pytest.raises(err, match="dropout_p"):
        attention_kernels(1, 8, 256, 256, 64, hardware=HW, dropout_p=bad)  # type: ignore[arg-type]
