"""float8.linear(launch=...): per-call wall times with host time, and the verdict they give."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.ops.host import host_terms

US = 1e-6


def _terms(**kw: float) -> Any:
    t = _core.HostTerms()
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def _wall(times: list[float], mode: Any, training: bool, torchao: bool, head_s: float,
          t: Any) -> float:
    return float(_core.linear_call_wall_time(np.array(times), mode, training, torchao, head_s,
                                             t)[0])


def test_hand_derived_host_bound_calls() -> None:
    t = _terms(eager_launch_s=12 * US, compiled_launch_s=10 * US, compiled_call_s=200 * US,
               compiled_forward_s=100 * US, torchao_call_s=50 * US, graph_launch_s=5 * US)
    compiled = _core.LaunchMode.compiled
    # inference, torchao: entry 100 + 50, two launches of 10 -> host 170 µs per call; the
    # kernels (3 µs) hide nothing
    assert _wall([1 * US, 2 * US], compiled, False, True, 0.0, t) == pytest.approx(170 * US)
    # the bf16 call: one launch and the plain entry
    assert _wall([2 * US], compiled, False, False, 0.0, t) == pytest.approx(110 * US)
    # training, torchao: forward and backward entries of 250 each, four launches of 10 -> 540;
    # with a 90 µs head kernel (do_bench's flush) launched eagerly before each call: one call
    # from the flush's launch ends at A_3 + 1 µs = 541, the period is 540 + 12; minus the flush
    assert _wall([1 * US] * 4, compiled, True, True, 0.0, t) == pytest.approx(540 * US)
    assert _wall([1 * US] * 4, compiled, True, True, 90 * US, t) == pytest.approx(451 * US)
    # eager: 12 µs per kernel plus the torchao dispatch per region; graph: one replay
    assert _wall([1 * US] * 2, _core.LaunchMode.eager, False, True, 0.0, t) == pytest.approx(
        74 * US)
    assert _wall([1 * US] * 2, _core.LaunchMode.graph, False, True, 0.0, t) == pytest.approx(
        5 * US)
    # GPU-bound: the kernels set the time in every mode
    for mode in (compiled, _core.LaunchMode.eager, _core.LaunchMode.graph):
        assert _wall([1e-3, 2e-3], mode, True, True, 0.0, t) == pytest.approx(3e-3)


def test_public_wall_times_at_a_host_bound_shape() -> None:
    h = host_terms("H100 SXM")
    r = rl.float8.linear(16, 4096, 4096, "rowwise", "H100 SXM", "inference")
    assert r.launch == "compiled"
    # host-bound: the float8 call = 2 launches (activation cast, scaled GEMM) + the module's
    # forward entry + torchao's; bf16 = 1 launch + the entry
    assert r.wall_s == pytest.approx(2 * h["compiled_launch_s"] + h["compiled_forward_s"]
                                     + h["torchao_call_s"])
    assert r.bf16_wall_s == pytest.approx(h["compiled_launch_s"] + h["compiled_forward_s"])
    assert r.speedup == pytest.approx(r.bf16_wall_s / r.wall_s)
    assert r.gpu_speedup == pytest.approx(r.bf16_s / r.fp8_s)


def test_worth_converting_flips_with_m_on_h100() -> None:
    small = rl.float8.linear(16, 4096, 4096, "rowwise", "H100 SXM", "inference",
                             launch="compiled")
    assert not small.worth_converting and small.speedup < 1
    big = rl.float8.linear(16384, 8192, 8192, "rowwise", "H100 SXM", "inference",
                           launch="compiled")
    assert big.worth_converting and big.speedup > 1.3
    # a CUDA graph removes the host costs: the GPU verdict
    g = rl.float8.linear(16, 4096, 4096, "rowwise", "H100 SXM", "inference", launch="graph")
    assert g.speedup == pytest.approx(g.gpu_speedup, rel=0.05)
    t = rl.float8.linear(16384, 8192, 8192, "tensorwise", "H100 SXM", launch="compiled")
    assert t.worth_converting
    assert not rl.float8.linear(1024, 1024, 1024, "tensorwise", "H100 SXM").worth_converting


@pytest.mark.parametrize("mode", ["inference", "training"])
# Not under "graph": without host time the verdict is the GPU's, which is not monotone in m (a
# float8 GEMM at m = 16 is weight-bandwidth bound and reads half the bf16 bytes: ~1.5x, then
# dips to ~1.3x where it turns compute-bound, then rises).
@pytest.mark.parametrize("launch", ["compiled", "eager"])
@pytest.mark.parametrize("kn", [(4096, 4096), (8192, 8192), (4096, 14336)])
def test_speedup_monotone_in_m(mode: str, launch: str, kn: tuple[int, int]) -> None:
    m = 2 ** np.arange(4, 16)
    s = np.asarray(rl.float8.linear(m, *kn, "rowwise" if mode == "inference" else "tensorwise",
                                    "H100 SXM", mode, launch=launch).speedup)
    if launch == "compiled":  # the launch torchao users run: never down as m grows
        assert np.all(np.diff(s) >= -1e-9), s
    else:  # GPU-bound sooner: the GEMM model's tile / wave steps may dip it by a few %
        assert np.all(s[1:] >= 0.97 * np.maximum.accumulate(s)[:-1]), s


def test_launch_orders_the_host_cost() -> None:
    walls = {lc: rl.float8.linear(16, 4096, 4096, "rowwise", "H100 SXM", "inference",
                                  launch=lc).wall_s for lc in ("eager", "compiled", "graph")}
    assert walls["graph"] < walls["eager"] < walls["compiled"]


def test_array_and_scalar_agree() -> None:
    arr = rl.float8.linear([16, 16384], 4096, 4096, "rowwise", "H100 SXM", "inference",
                           launch="eager")
    for i, m in enumerate((16, 16384)):
        one = rl.float8.linear(m, 4096, 4096, "rowwise", "H100 SXM", "inference",
                               launch="eager")
        assert arr.speedup[i] == pytest.approx(one.speedup)
        assert arr.wall_s[i] == pytest.approx(one.wall_s)


def test_presets_have_no_host_time() -> None:
    r = rl.float8.linear(16, 4096, 4096, "rowwise", "H100 SXM", "inference",
                         efficiency="torchao")
    assert r.speedup == pytest.approx(r.gpu_speedup)


@pytest.mark.parametrize("bad", ["jit", "", "compiled "])
def test_bad_launch_names_the_argument(bad: str) -> None:
    if bad == "compiled ":  # spelled loosely: accepted like other names
        assert rl.float8.linear(16, 64, 64, launch=bad, hardware="H100 SXM").launch == "compiled"
        return
    with pytest.raises(ValueError, match="launch"):
        rl.float8.linear(16, 64, 64, launch=bad, hardware="H100 SXM")


@pytest.mark.parametrize("bad", [None, 1, True])
def test_launch_must_be_a_string(bad: Any) -> None:
    with pytest.raises(TypeError, match="launch"):
        rl.float8.linear(16, 64, 64, launch=bad, hardware="H100 SXM")


def _cast_kernels(m: int, k: int, n: int, hardware: str) -> list[str]:
    r = rl.float8.linear(m, k, n, recipe="rowwise", hardware=hardware, mode="inference")
    return [str(k["kernel"]) for k in r.kernels().to_dict("records") if k["role"] == "cast"]


def test_rowwise_activation_cast_follows_inductors_split_rule() -> None:
    """Inductor splits a row reduction of fewer than 2 x SMs rows longer than 8192 elements
    (Reduction.num_splits): the activation's row amax + cast then runs as three launches
    (partial amax, its final reduction with the scale, the row-scaled cast), the same bytes."""
    sms = rl.hardware("H100 SXM").sms  # 132: rows < 264 split
    assert len(_cast_kernels(16, 14336, 4096, "H100 SXM")) == 3
    assert len(_cast_kernels(2 * sms - 1, 8193, 4096, "H100 SXM")) == 3
    assert len(_cast_kernels(2 * sms, 8193, 4096, "H100 SXM")) == 1   # enough rows
    assert len(_cast_kernels(16, 8192, 4096, "H100 SXM")) == 1        # short rows
    assert len(_cast_kernels(1, 4096, 14336, "H100 SXM")) == 1
    # a sweep across both sides of the rule gives each shape's own times, bit for bit
    m = np.array([1, 16, 263, 264, 1024, 16])
    k = np.array([14336, 14336, 9000, 9000, 14336, 8192])
    sweep = rl.float8.linear(m, k, 4096, recipe="rowwise", hardware="H100 SXM",
                             mode="inference")
    for i in range(len(m)):
        one = rl.float8.linear(int(m[i]), int(k[i]), 4096, recipe="rowwise",
                               hardware="H100 SXM", mode="inference")
        assert one.fp8_s == sweep.fp8_s[i]
        assert one.wall_s == sweep.wall_s[i]
    # host-bound: the two extra launches add two compiled launches to the call
    t = host_terms("H100 SXM")
    split = rl.float8.linear(16, 14336, 4096, recipe="rowwise", hardware="H100 SXM",
                             mode="inference")
    whole = rl.float8.linear(300, 14336, 4096, recipe="rowwise", hardware="H100 SXM",
                             mode="inference")
    assert float(split.wall_s - whole.wall_s) == pytest.approx(
        2 * t["compiled_launch_s"], rel=0.05)


@pytest.mark.parametrize("m,k,n", [(1, 4096, 14336), (16, 14336, 4096), (1024, 4096, 14336)])
def test_inference_launches_match_the_h200_traces(m: int, k: int, n: int) -> None:
    """The compiled float8 inference call's kernels per call in the H200 profiler traces
    (data/programs/h200/traces/fp8_infer_compiled_*) = the model's casts + one GEMM."""
    import gzip
    import json
    from pathlib import Path

    path = (Path(__file__).resolve().parents[1] / "data" / "programs" / "h200" / "traces"
            / f"fp8_infer_compiled_m{m}_k{k}_n{n}.json.gz")
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    calls = sum(1 for e in events if e.get("cat") == "user_annotation"
                and e.get("name", "").startswith("## Call CompiledFxGraph"))
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    assert kernels % calls == 0
    assert kernels // calls == len(_cast_kernels(m, k, n, "H200")) + 1


@pytest.mark.parametrize("recipe,casts", [("tensorwise", 10), ("rowwise", 13)])
def test_training_step_launches_match_the_compiled_step(recipe: str, casts: int) -> None:
    """Launches per compiled training step at 1024^3 in the H200 session-6 profiles
    (data/programs/h200/session6.jsonl on main: bf16 5 = 3 GEMMs + 2 gradient adds,
    tensorwise 15, rowwise 18, the rowwise backward with a one-element new_ones kernel):
    the model's cast kernels are those launches less the 3 GEMMs and the 2 adds."""
    r = rl.float8.linear(1024, 1024, 1024, recipe=recipe, hardware="H200")
    rows = r.kernels().to_dict("records")
    assert sum(1 for k in rows if k["role"] == "cast") == casts
    assert sum(1 for k in rows if k["role"] == "lowp_gemm") == 3
