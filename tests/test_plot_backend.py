"""Plots never switch the user's matplotlib backend and never register pyplot figures; the trace
loss chart never draws a faster-than-model group as lost; the validation scatter gives every
family its own (colour, marker)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tests" / "data" / "traces" / "encoder_layer_train.json.gz"

_SCRIPT = r"""
import json, sys
import matplotlib
before = matplotlib.get_backend()
import roofline as rl
from roofline import plot
out = sys.argv[1]
rep = rl.trace.explain(sys.argv[2], hardware="H100 SXM")
rep.plot(out + "/trace.png")
rep.plot(out + "/trace_op.png", by="op")
rows = [{"id": f"r{i}", "family": "gpu_gemm_bf16", "hardware": "H100 SXM", "op": "gemm",
         "args": {"m": 1024 * (i + 1), "k": 4096, "n": 4096, "dtype": "bf16"},
         "measured": 1e-4 * (i + 1)} for i in range(3)]
path = out + "/m.jsonl"
open(path, "w").write("\n".join(json.dumps(r) for r in rows))
rl.validate(path).plot(out + "/val.png")
plot.roofline_chart("H100 SXM", [rl.gemm(4096, 4096, 4096, hardware="H100 SXM")]).savefig(
    out + "/roof.png")
plot.float8_heatmap("tensorwise", "H100 SXM", m=[1024, 4096], kn=[1024, 4096]).savefig(
    out + "/heat.png")
print(json.dumps({"before": before, "after": matplotlib.get_backend(),
                  "pyplot": "matplotlib.pyplot" in sys.modules}))
"""


def test_saving_plots_keeps_the_backend(tmp_path: Path) -> None:
    import roofline

    # the roofline this test imports (installed, or the source tree with its built core)
    src = str(Path(roofline.__file__).resolve().parents[1])
    env = {"MPLBACKEND": "svg", "PYTHONPATH": src, "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path), str(TRACE)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["before"].lower() == "svg" and doc["after"].lower() == "svg"
    assert doc["pyplot"] is False  # nothing imported pyplot, so no backend was resolved
    for name in ("trace", "trace_op", "val", "roof", "heat"):
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_faster_than_model_is_not_a_lost_bar() -> None:
    import roofline as rl

    rep = rl.trace.explain(TRACE, hardware="H100 SXM")
    df = rep.losses("class")
    df = df[df["lost_s"].notna()].head(10)
    faster = int((df["lost_s"] < 0).sum())
    assert faster >= 1 and "gemm" in set(df[df["lost_s"] < 0]["name"])  # GEMMs beat the model
    fig = rep.plot(by="class", top=10)
    ax = fig.axes[0]
    red = [p for p in ax.patches if p.get_facecolor()[:3] == pytest.approx((0.839, 0.153, 0.157),
                                                                            abs=1e-2)]
    assert len(red) == len(df) - faster and all(p.get_width() >= 0 for p in red)
    legend = ax.get_legend()
    fig.canvas.draw()
    box = legend.get_window_extent()
    for p in ax.patches:  # the legend (below the axes) covers no bar
        assert not box.overlaps(p.get_window_extent())


def test_validation_families_get_distinct_styles() -> None:
    from roofline.validation._plot import family_styles

    fams = [f"family_{i:02d}" for i in range(37)]
    styles = family_styles(fams)
    assert len({(tuple(c), m) for c, m in styles.values()}) == 37
