"""rl.trace.explain on the two real H100 Kineto traces (tests/data/traces).

traces_meta.json gives each trace's kernel time per step (kernel + memcpy + memset durations /
iters, iters = 2). Neither trace has ProfilerStep annotations: each holds two identical steps
whose top-level op sequence on the main thread repeats exactly twice.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.sustained import settled_clock

pytest.importorskip("pandas")

DATA = Path(__file__).resolve().parent / "data" / "traces"
ENCODER = DATA / "encoder_layer_train.json.gz"
FLOAT8 = DATA / "float8_tensorwise_linear_16384x4096x14336.json.gz"
META = json.loads((DATA / "traces_meta.json").read_text())
HW = "H100 SXM"


@pytest.fixture(scope="module")
def encoder() -> rl.trace.TraceReport:
    return rl.trace.explain(ENCODER, hardware=HW)


@pytest.fixture(scope="module")
def float8() -> rl.trace.TraceReport:
    return rl.trace.explain(FLOAT8)  # device from the trace: NVIDIA H100 80GB HBM3


def test_kernel_total_matches_meta(encoder: rl.trace.TraceReport,
                                   float8: rl.trace.TraceReport) -> None:
    for rep, key in ((encoder, "encoder_layer_train"),
                     (float8, "float8_tensorwise_linear_16384x4096x14336")):
        assert rep.iterations == META[key]["iters"] == 2
        assert rep.measured_s == pytest.approx(META[key]["gpu_kernel_s_per_iter"], rel=1e-9)
        assert "repeats 2 times" in rep.iteration_rule


def test_device_from_trace(float8: rl.trace.TraceReport) -> None:
    assert float8.hardware == "H100 SXM"  # "NVIDIA H100 80GB HBM3" -> H100 SXM


def test_encoder_gemm_kernels(encoder: rl.trace.TraceReport) -> None:
    k = encoder.kernels()
    gemm = k[k.kind == "gemm"]
    # per step: 4 forward linears (qkv mm + 3 addmm) + 2 backward mm each = 12; two steps
    assert len(gemm) == 24
    nvjet = k[k.name.str.startswith("nvjet")]
    assert len(nvjet) == 24
    assert set(nvjet.op) <= {"aten::mm", "aten::addmm", "aten::linear", "aten::matmul"}
    assert (nvjet.shapes != "").all() and nvjet.priced.all()


def _gemm_kernels(rep: rl.trace.TraceReport, shapes: str) -> list[float]:
    k = rep.kernels()
    return list(k[(k.kind == "gemm") & (k.shapes == shapes)].predicted_s)


def _load_by_hand(k: Any, i: int) -> float:
    """The power limiter's load at kernel ``i``'s midpoint, the GPU idle before the trace
    (explain's default): the union of the kernels' busy intervals up to that midpoint over
    the 100 ms window (every trace here is shorter than the window)."""
    mid = k.start_s[i] + 0.5 * k.measured_s[i]
    spans = sorted((a, min(a + d, mid)) for a, d in zip(k.start_s, k.measured_s, strict=True)
                   if a < mid)
    busy, reach = 0.0, -math.inf
    for a, b in spans:
        if b > reach:
            busy += b - max(a, reach)
            reach = b
    assert k.start_s.max() + k.measured_s.max() < 0.1
    return busy / 0.1


def _at_load(e: Any, load: float) -> float:
    """``e`` (a GEMM or attention estimate run alone) at the clock ``1 - (1 - f) load``."""
    f, tau, p = settled_clock(rl.hardware(HW), "default") or (1.0, 0.0, 1.0)
    return float(_core.limited_gemm_time_s(e.time_s, e.compute_s, e.memory_s, f, tau, p, load))


def _priced_at_their_load(rep: rl.trace.TraceReport, shapes: str, e: Any) -> None:
    k = rep.kernels()
    idx = list(k.index[(k.kind == "gemm") & (k.shapes == shapes)])
    assert len(idx) == 2
    f = settled_clock(rl.hardware(HW), "default")[0]  # type: ignore[index]
    for i in idx:
        load = _load_by_hand(k, i)
        assert 0.0 < load < 1.0
        assert k.clock[i] == pytest.approx(1 - (1 - f) * load, rel=1e-9)
        assert k.predicted_s[i] == pytest.approx(_at_load(e, load), rel=1e-12)
        # between the boost clock and the settled clock of a training step
        assert _at_load(e, 0.0) < k.predicted_s[i] < _at_load(e, 1.0)


def test_encoder_gemm_priced_exactly(encoder: rl.trace.TraceReport) -> None:
    # the qkv projection: x (16384 x 4096) @ W^T (4096 x 12288), bf16, once per step; the op's
    # cuBLAS memset is priced on its own, so the GEMM kernel carries the whole rl.gemm, at the
    # clock the power limiter's load (busy fraction of the 100 ms before it) sets
    _priced_at_their_load(encoder, "16384x4096, 4096x12288",
                          rl.gemm(16384, 4096, 12288, dtype="bf16", hardware=HW))
    # addmm(bias, x, W^T): the FFN up projection 16384 x 4096 x 14336
    _priced_at_their_load(encoder, "14336, 16384x4096, 4096x14336",
                          rl.gemm(16384, 4096, 14336, dtype="bf16", hardware=HW))
    row = encoder.by_op().set_index("name").loc["aten::mm 16384x4096, 4096x12288"]
    assert row.calls == 1 and row.kernels == 2  # the GEMM and its memset


def test_encoder_cudnn_attention(encoder: rl.trace.TraceReport) -> None:
    k = encoder.kernels()
    cudnn = k[k.name.str.contains("cudnn") & (k.kind == "attention")]
    assert len(cudnn) == 10  # per step: fprop, philox unpack, bprop, dot_do_o, convert_dq
    assert cudnn.how.str.contains("backend='cudnn'").all()
    fwd = k[(k.op == "aten::_cudnn_attention_forward") & (k.kind == "attention")]
    e = rl.attention(8, 32, 2048, 2048, 128, kv_heads=32, v_head_dim=128, dtype="bf16",
                     hardware=HW, backend="cudnn", dropout_p=0.1)
    # one op, two kernels (fprop + philox unpack) per step share one rl.attention call, each
    # its part (in proportion to its measured time) at its own limiter load
    want = 0.0
    for _, step in fwd.groupby("iteration"):
        share = step.measured_s / step.measured_s.sum()
        want += sum(s * _at_load(e, _load_by_hand(k, i)) for i, s in share.items())
    assert fwd.predicted_s.sum() == pytest.approx(want, rel=1e-12)
    assert fwd.how.str.contains("dropout_p=0.1").all()  # the layer trains with dropout


def test_encoder_attributed(encoder: rl.trace.TraceReport) -> None:
    assert encoder.priced_fraction >= 0.95
    k = encoder.kernels()
    assert k.measured_s.sum() / 2 == pytest.approx(encoder.measured_s, rel=1e-12)
    assert k.predicted_s[k.priced].sum() / 2 == pytest.approx(encoder.predicted_s, rel=1e-12)


def test_levels_add_up(encoder: rl.trace.TraceReport) -> None:
    for df in (encoder.by_op(), encoder.by_module(), encoder.by_class()):
        assert df.measured_s.sum() == pytest.approx(encoder.measured_s, rel=1e-9)
    mods = set(encoder.by_module().name)
    assert {"aten::linear", "aten::linear (backward)",
            "aten::scaled_dot_product_attention (backward)"} <= mods


def test_losses_ranked(encoder: rl.trace.TraceReport) -> None:
    losses = encoder.losses()
    lost = [v for v in losses.lost_s if not math.isnan(v)]
    assert lost == sorted(lost, reverse=True)
    # cuDNN attention with dropout loses most (0.52 ms, 1.55 ms before its random bits were
    # priced); the layout copies lost 0.64 ms before aten's non-vectorized loop was priced
    # (now -0.22 ms), the layer-norm backward 0.21 ms before its second (gamma / beta)
    # kernel was (now -0.04 ms); the GEMMs beat the model
    assert list(losses.name.iloc[:2]) == ["attention", "reduction"]
    assert abs(losses.set_index("name").lost_s["norm"]) < 0.1e-3
    assert losses.set_index("name").lost_s["gemm"] < 0
    assert any(o.startswith("attention") and "dropout" in o for o in encoder.opportunities())
    for by in ("op", "module"):
        assert len(encoder.losses(by)) > 0
    with pytest.raises(ValueError, match="by must be one of"):
        encoder.losses("nope")


def test_to_dict_is_json(encoder: rl.trace.TraceReport) -> None:
    doc = encoder.to_dict()
    text = json.dumps(doc, allow_nan=False)
    assert json.loads(text)["measured_s"] == pytest.approx(encoder.measured_s)
    assert len(doc["kernels"]) == 174
    assert "TraceReport(encoder_layer_train.json.gz on H100 SXM" in repr(encoder)


def test_float8_trace(float8: rl.trace.TraceReport) -> None:
    k = float8.kernels()
    assert (k.kind == "gemm").sum() == 6  # 3 _scaled_mm per step (fwd, grad_input, grad_weight)
    assert set(k[k.kind == "gemm"].op) == {"aten::_scaled_mm"}
    assert k[k.kind == "gemm"].how.str.contains("scaling='tensorwise'").all()
    assert (k.kind == "triton").sum() == 20
    assert float8.priced_fraction == 1.0
    e = rl.gemm(16384, 4096, 14336, dtype="fp8", scaling="tensorwise", out_dtype="bf16",
                hardware=HW)
    _priced_at_their_load(float8, "16384x4096, 4096x14336, 16384x14336", e)


def test_gaps(encoder: rl.trace.TraceReport) -> None:
    g = encoder.gaps(min_s=0.0)
    assert (g.gap_s >= 0).all()
    assert encoder.idle_s == pytest.approx(g.gap_s.sum() / 2, rel=1e-9)
    assert encoder.span_s >= encoder.measured_s


def test_plot(encoder: rl.trace.TraceReport, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "losses.png"
    fig = encoder.plot(out)
    assert out.stat().st_size > 0 and fig is not None


def test_cli_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    assert main(["explain-trace", str(ENCODER), "--hardware", HW, "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "per op" in out and "lost time" in out and "aten::_cudnn_attention_backward" in out
    assert main(["explain-trace", str(FLOAT8), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["measured_s"] == pytest.approx(0.0050307165, rel=1e-9)
    assert main(["explain-trace", str(FLOAT8), "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("name,")


def test_cli_bad_path(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    assert main(["explain-trace", "/nonexistent/trace.json"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_per_op_error_on_the_shared_traces() -> None:
    # Time-weighted per-op error (sum |predicted - measured| / sum measured over the (op,
    # shapes) rows of by_op()): 8.8 % on the encoder layer (9.3 % before the trace pricer
    # took the power limiter's clock from the trace's load history; 15.6 % before dropout's
    # random bits were priced, 12.6 % before aten's non-vectorized loop (transposing copies,
    # broadcast bias adds: Input Strides) and the LayerNorm backward's gamma/beta kernel
    # were: cuDNN attention forward with dropout_p=0.1 is still 22 % slower than its price),
    # 6.7 % on the float8 linear (10.4 % before; the Triton cast writing a row- and a
    # column-major fp8 copy is 25 % slower than one streaming pass). Issue #23's target, 10 %
    # on both, is met. The clock: measured on an H200 (data/programs/h200/clock/), the same
    # fp8 GEMM runs 1273 us for the first ~20 ms after an idle GPU (boost clock) and 1530 us
    # once the limiter settles (20-500 ms); these 10 ms / 70 ms traces sit inside the
    # limiter's 100 ms window, so their GEMMs and attention run near the boost clock with
    # rl.trace.explain's default prior_load=0 (the GPU idle before the trace), where each was
    # priced before at the clock of its own length run alone (do_bench). Printed by:
    # PYTHONPATH=python python benchmarks/trace_operror.py
    pins = {"encoder_layer_train.json.gz": 0.09,
            "float8_tensorwise_linear_16384x4096x14336.json.gz": 0.07}
    for name, pin in pins.items():
        r = rl.trace.explain(str(DATA / name), hardware="H100 SXM")
        d = r.by_op()
        d = d[d.predicted_s.notna() & (d.priced_measured_s > 0)]
        by_hand = float((d.predicted_s - d.priced_measured_s).abs().sum()
                        / d.priced_measured_s.sum())
        assert r.op_error == pytest.approx(by_hand, rel=1e-12)
        assert abs(r.lost_s) / r.priced_measured_s <= r.op_error  # totals cancel, ops do not
        assert 0.0 < r.op_error <= pin


def test_rows_stay_compact(encoder: rl.trace.TraceReport) -> None:
    # A report holds one dict per GPU event (45,360 for a 60-step Llama trace): CPython gives
    # a dict of up to 21 keys a 32-slot table and doubles it at the 22nd, so one more key per
    # row took the 67 MB trace from 1.44x to 1.83x the file in peak memory (issue #25's
    # bound is 1.5x). Per-kernel extras (the limiter clock) live beside the rows.
    import sys

    assert max(len(r) for r in encoder.rows) <= 21
    assert sys.getsizeof(encoder.rows[0]) <= sys.getsizeof(dict.fromkeys(range(21)))
    assert encoder.clocks and all(0.0 < c <= 1.0 for c in encoder.clocks.values())
