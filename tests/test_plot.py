"""roofline.plot renders with the Agg backend; PNGs go to tmp_path."""

from __future__ import annotations

import subprocess
import sys

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: E402  (roofline itself never imports pyplot)

import roofline as rl  # noqa: E402
from roofline import plot  # noqa: E402

HW = "H100 SXM"


def _png(fig, path) -> None:  # type: ignore[no-untyped-def]
    fig.savefig(path, dpi=80)
    assert path.stat().st_size > 5_000
    matplotlib.pyplot.close(fig)


def test_roofline_chart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ops = {
        "gemm 8192^3 bf16": rl.gemm(8192, 8192, 8192, "bf16", HW),
        "gemm 16x4096x4096": rl.gemm(16, 4096, 4096, "bf16", HW),
        "gemm 8192^3 fp8": rl.gemm(8192, 8192, 8192, "fp8", HW),
        "add 64M": rl.elementwise(2**26, reads=2, flops_per_element=1, hardware=HW),
    }
    measured = {"gemm 8192^3 bf16": 1.6e-3, "gemm 16x4096x4096": 40e-6}
    fig = plot.roofline_chart(HW, ops, measured=measured)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.texts]
    assert "gemm 8192^3 fp8" in labels and any("ridge" in t for t in labels)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("bf16") for t in legend) and "measured" in legend
    _png(fig, tmp_path / "roofline.png")
    # list form, measured aligned by position
    fig = plot.roofline_chart(HW, list(ops.values())[:2], measured=[1.6e-3, 40e-6],
                              dtypes=("fp32", "bf16", "fp8", "fp4"))
    _png(fig, tmp_path / "roofline2.png")


def test_roofline_chart_labels_sweeps_units_and_hardware(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    ops = {
        "gemm 8192^3 bf16": rl.gemm(8192, 8192, 8192, "bf16", HW),
        "gemm 8192^3 fp8": rl.gemm(8192, 8192, 8192, "fp8", HW),
        "gemm 4096^3 bf16": rl.gemm(4096, 4096, 4096, "bf16", HW),
        "gemm 16x4096x4096": rl.gemm(16, 4096, 4096, "bf16", HW),
        "gemm 32x4096x4096": rl.gemm(32, 4096, 4096, "bf16", HW),
        "M sweep fp8": rl.gemm(np.array([16, 256, 4096, 16384]), 8192, 8192, "fp8", HW),
    }
    fig = plot.roofline_chart(HW, ops, measured={"gemm 8192^3 bf16": 1.6e-3})
    ax = fig.axes[0]
    assert ax.get_ylabel() == "TFLOP/s"
    renderer = fig.canvas.get_renderer()
    boxes = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
    names = [n for n in ops if n != "M sweep fp8"]
    assert set(names) <= set(boxes)  # every scalar op labelled once
    texts = list(boxes.values())
    overlaps = [(a, b) for i, a in enumerate(boxes) for b in list(boxes)[i + 1:]
                if boxes[a].overlaps(boxes[b])]
    assert not overlaps, overlaps
    assert len(texts) == len(ax.texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "M sweep fp8" in legend  # a sweep is a line, named in the legend
    sweep = [ln for ln in ax.lines if ln.get_label() == "M sweep fp8"][0]
    assert len(sweep.get_xdata()) == 4
    y = ops["gemm 8192^3 bf16"]
    joins = [ln for ln in ax.lines if ln.get_linestyle() == ":"]
    assert len(joins) == 1  # the measured point joined to its model point
    assert joins[0].get_ydata()[1] == pytest.approx(y.flops / y.time_s / 1e12)
    path = tmp_path / "chart.png"
    fig.savefig(path, dpi=100)
    from PIL import Image

    assert Image.open(path).size == (750, 500)
    matplotlib.pyplot.close(fig)
    with pytest.warns(rl.HardwareMismatchWarning, match="estimated on B200"):
        fig = plot.roofline_chart(HW, {"b": rl.gemm(4096, 4096, 4096, hardware="B200")})
    matplotlib.pyplot.close(fig)


def test_float8_heatmap(tmp_path) -> None:  # type: ignore[no-untyped-def]
    fig = plot.float8_heatmap("tensorwise", HW)
    ax = fig.axes[0]
    img = ax.images[0].get_array()
    assert img.shape == (5, 5)
    want = rl.float8.linear(1024, 16384, 16384, hardware=HW).speedup
    assert img[0, 4] == pytest.approx(want)  # row M=1024, column K=N=16384
    assert len(ax.texts) == 25
    _png(fig, tmp_path / "float8_heatmap.png")
    fig = plot.float8_heatmap("mxfp8_cublas", "B200", m=[256, 4096], kn=[2048, 8192],
                              annotate=False)
    _png(fig, tmp_path / "float8_heatmap_b200.png")


def test_breakdown_chart_from_transformer_and_torch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = rl.transformer.config("Llama-3-8B")
    rep = rl.transformer.estimate(cfg, phase="prefill", batch=1, seq_len=2048, hardware=HW)
    fig = plot.breakdown_chart(rep, by="op", top=6)
    ax = fig.axes[0]
    assert len(ax.patches) == 7  # 6 bars + "other"
    widths = sum(p.get_width() for p in ax.patches)
    assert widths == pytest.approx(rep.time_s * 1e6, rel=1e-9)
    _png(fig, tmp_path / "breakdown_llama.png")

    torch = pytest.importorskip("torch")
    import roofline.torch as rlt

    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    trep = rlt.estimate(layer, torch.randn(4, 128, 256), hardware=HW, dtype="bf16")
    fig = plot.breakdown_chart(trep, by="module")
    _png(fig, tmp_path / "breakdown_torch.png")


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="dtypes must be among .* got 'fp12'"):
        plot.roofline_chart(HW, dtypes=("fp12",))
    with pytest.raises(TypeError, match="ops must hold Estimates, got float"):
        plot.roofline_chart(HW, {"x": 1.0})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="measured has 2 times for 1 ops"):
        plot.roofline_chart(HW, [rl.gemm(64, 64, 64, hardware=HW)], measured=[1.0, 2.0])
    with pytest.raises(ValueError, match="measured times must be positive"):
        plot.roofline_chart(HW, [rl.gemm(64, 64, 64, hardware=HW)], measured=[0.0])
    with pytest.raises(ValueError, match="ops must be scalar estimates or 1-D sweeps"):
        plot.roofline_chart(HW, [rl.gemm([[64], [128]], 64, 64, hardware=HW)])
    with pytest.raises(ValueError, match="measured times are for scalar ops"):
        plot.roofline_chart(HW, {"s": rl.gemm([64, 128], 64, 64, hardware=HW)},
                            measured={"s": 1e-3})
    with pytest.raises(ValueError, match="by must be a column .* got 'layerz'"):
        plot.breakdown_chart(rl.transformer.estimate(rl.transformer.config("Llama-3-8B"),
                             phase="decode", batch=1, kv_len=128, hardware=HW), by="layerz")
    with pytest.raises(TypeError, match="report must be"):
        plot.breakdown_chart(42)
    with pytest.raises(ValueError, match="top must be a positive integer, got 0"):
        plot.breakdown_chart(42, top=0)
    with pytest.raises(KeyError, match="unknown recipe 'fp7'"):
        plot.float8_heatmap("fp7", HW)


def test_import_roofline_plot_is_lazy_for_matplotlib_in_roofline() -> None:
    code = "import sys, roofline; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
