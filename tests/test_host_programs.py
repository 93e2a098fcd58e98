"""Host time of eager programs: per op class and per module call (roofline.torch._host)."""

from __future__ import annotations

import os
import statistics
import warnings

import pytest

torch = pytest.importorskip("torch")

import roofline as rl  # noqa: E402
import roofline.torch  # noqa: E402,F401
from roofline._params import packaged  # noqa: E402
from roofline._params.host import values  # noqa: E402
from roofline.ops.host import host_terms  # noqa: E402

HW = "H200"


def _terms() -> dict[str, float]:
    return values(rl.hardware(HW), packaged.terms("host"))


def test_small_module_host_time_by_hand() -> None:
    # Sequential(Linear, GELU, LayerNorm), inference, eager: module calls 4 (Sequential + 3),
    # top-level calls F.linear (gemm), F.gelu (kernel), F.layer_norm (kernel). All host-bound.
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.LayerNorm(64))
    e = rl.torch.estimate(m, torch.empty(4, 64), HW, mode="inference")
    t = _terms()
    host = 4 * t["module_call_launches"] + t["op_gemm_launches"] + 2 * t["op_kernel_launches"]
    assert [r.host for r in e.records] == [
        (0, 0, 1, 0, 2, 0), (0, 1, 0, 0, 1, 0), (0, 1, 0, 0, 1, 0)]
    assert e.wall is not None
    assert e.wall.host_s == pytest.approx(host, rel=1e-9)
    assert e.wall_s == pytest.approx(max(host, e.time_s), rel=1e-9)


def test_wall_at_least_gpu_and_graph_below_eager() -> None:
    m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)])
    for rows in (1, 64, 65536):
        x = torch.empty(rows, 1024, device="meta")
        eager = rl.torch.estimate(m, x, HW, mode="inference")
        graph = rl.torch.estimate(m, x, HW, mode="inference", launch="graph")
        assert eager.wall_s >= eager.time_s
        assert graph.wall_s >= graph.time_s
        assert graph.wall_s <= eager.wall_s
    # graph replay carries no per-op host cost: unchanged by the op terms
    assert graph.wall is not None and graph.wall.mode == "graph"


def test_host_terms_unchanged_for_wall_time() -> None:
    # rl.wall_time (a bare kernel list) keeps the per-launch model
    t = host_terms(HW)
    w = rl.wall_time([0.0, 0.0, 0.0], "eager", HW)
    assert w.wall_s == pytest.approx(max(t["kernel_latency_s"],
                                         2 * t["eager_launch_s"] + t["kernel_gap_s"]))


def test_eager_decode_rows_median_error() -> None:
    transformers = pytest.importorskip("transformers")  # noqa: F841
    import sys

    here = os.path.join(os.path.dirname(__file__), "..", "benchmarks")
    sys.path.insert(0, here)
    try:
        import gpu_programs as gp
    finally:
        sys.path.remove(here)
    warnings.filterwarnings("ignore")
    errs = []
    for r in gp.rows():
        cfg = r["config"]
        if (cfg.get("model") == "LlamaForCausalLM" and cfg["runtime"] == "eager"
                and cfg["phase"] == "decode" and cfg["batch"] <= 16
                and not r["name"].endswith("_L4")):
            errs.append(abs(gp.torch_estimate(cfg, HW).wall_s / r["wall_s"] - 1))
    assert len(errs) == 4
    # fitted on these 2-layer traces (benchmarks/fit_host_programs.py): 4.6 %; was 67 %
    assert statistics.median(errs) < 0.10
