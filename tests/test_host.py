"""Host (launch) overhead: rl.wall_time, rl.launch_overhead and the wall_s of whole steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.ops.host import MAX_KERNELS, host_terms

HW = "H100 SXM"


def _terms(**kw: float) -> object:
    t = _core.HostTerms()
    for k, v in kw.items():
        setattr(t, k, v)
    return t


US = 1e-6
# eager 10 µs per op, compiled 2 µs per kernel + 100 µs per region, graph floor 5 µs,
# kernel gap 1 µs, kernel latency 4 µs
T = dict(eager_launch_s=10 * US, compiled_launch_s=2 * US, compiled_call_s=100 * US,
         graph_launch_s=5 * US, kernel_gap_s=1 * US, kernel_latency_s=4 * US)


def wall(times: list[float], mode: str, regions: int = 1) -> tuple[float, float, float, bool]:
    out: tuple[float, float, float, bool] = _core.wall_time(
        np.array(times, dtype=float), getattr(_core.LaunchMode, mode), regions, _terms(**T))
    return out


def _simulate(times: list[float], gaps: list[float], gap_s: float, floor_s: float) -> float:
    """Event simulation of one FIFO stream (independent of the prefix-max formula): the host
    launches kernel i at the sum of the first i gaps; the GPU starts it when it is launched
    and the previous kernel is done, and runs it max(t, gap_s)."""
    launched, end = 0.0, 0.0
    for i, t in enumerate(times):
        if i:
            launched += gaps[i - 1]
        end = max(launched, end) + max(t, gap_s)
    return max(end, floor_s)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("mode", ["eager", "compiled", "graph"])
def test_formula_matches_an_event_simulation(mode: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    times = list(rng.choice([0.0, 1e-6, 5e-6, 30e-6, 200e-6], n))
    regions = int(rng.integers(1, n + 1)) if mode == "compiled" else 1
    per = {"eager": T["eager_launch_s"], "compiled": T["compiled_launch_s"], "graph": 0.0}[mode]
    counts = [sum(1 for r in range(1, regions) if (r * n) // regions == i) for i in range(n)]
    gaps = [per + (counts[i] * T["compiled_call_s"] if mode == "compiled" else 0.0)
            for i in range(1, n)]
    floor = T["graph_launch_s"] if mode == "graph" else T["kernel_latency_s"]
    expected = _simulate(times, gaps, T["kernel_gap_s"], floor)
    assert wall(times, mode, regions)[0] == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- hand-derived values


def test_eager_chain_of_tiny_kernels_is_host_issue_time() -> None:
    # 5 empty kernels: launches at 0, 10, 20, 30, 40 µs; the last runs 1 µs (the gap floor)
    w, gpu, host, bound = wall([0.0] * 5, "eager")
    assert w == pytest.approx(41 * US)  # 4*10 + 1
    assert gpu == pytest.approx(5 * US)  # 5 * max(0, 1 µs)
    assert host == pytest.approx(40 * US)
    assert bound


def test_eager_long_kernels_hide_the_host() -> None:
    # 3 kernels of 1 ms: the host issues all three within 20 µs; the GPU sets the wall
    w, gpu, _, bound = wall([1e-3] * 3, "eager")
    assert w == pytest.approx(3e-3)
    assert gpu == pytest.approx(3e-3)
    assert not bound


def test_prefix_max_picks_the_launch_after_which_the_gpu_never_idles() -> None:
    # kernels 50 µs, 0, 0, 0: prefixes A_i + rest = 0+53, 10+3, 20+2, 30+1 -> 53 µs;
    # reversed (0, 0, 0, 50 µs): 0+53, 10+52, 20+51, 30+50 -> 80 µs
    assert wall([50 * US, 0, 0, 0], "eager")[0] == pytest.approx(53 * US)
    assert wall([0, 0, 0, 50 * US], "eager")[0] == pytest.approx(80 * US)


def test_one_tiny_kernel_takes_its_latency() -> None:
    assert wall([0.0], "eager")[0] == pytest.approx(4 * US)  # kernel_latency_s
    assert wall([0.0], "graph")[0] == pytest.approx(5 * US)  # graph_launch_s


def test_graph_issues_everything_at_once() -> None:
    # 10 empty kernels back to back: 10 * 1 µs; 3 of them: the 5 µs replay floor
    assert wall([0.0] * 10, "graph")[0] == pytest.approx(10 * US)
    assert wall([0.0] * 3, "graph")[0] == pytest.approx(5 * US)


def test_compiled_region_boundaries_add_the_call_cost() -> None:
    # 4 empty kernels, 2 regions (boundary before kernel 2): gaps 2, 2+100, 2 -> 106 + 1
    assert wall([0.0] * 4, "compiled", regions=2)[0] == pytest.approx(107 * US)
    # one region: 3 * 2 + 1 = 7 µs, above the 4 µs latency floor
    assert wall([0.0] * 4, "compiled", regions=1)[0] == pytest.approx(7 * US)
    # 4 regions of one kernel: 3 * (2 + 100) + 1
    assert wall([0.0] * 4, "compiled", regions=4)[0] == pytest.approx(307 * US)


def test_zero_terms_mean_no_overhead() -> None:
    t = _core.HostTerms()
    times = np.array([1e-6, 2e-6, 3e-6])
    for mode in ("eager", "compiled", "graph"):
        w, gpu, host, bound = _core.wall_time(times, getattr(_core.LaunchMode, mode), 1, t)
        assert w == pytest.approx(6e-6) and gpu == pytest.approx(6e-6)
        assert host == 0.0 and not bound


def test_public_launch_overhead_matches_the_formula() -> None:
    t = host_terms(HW)
    # eager: max(latency, (N-1) * per-op + gap); graph: max(replay floor, N * gap)
    for n in (1, 2, 10, 100):
        eager = max(t["kernel_latency_s"], (n - 1) * t["eager_launch_s"] + t["kernel_gap_s"])
        graph = max(t["graph_launch_s"], n * t["kernel_gap_s"])
        assert rl.launch_overhead(n, "eager", HW) == pytest.approx(eager)
        assert rl.launch_overhead(n, mode="graph", hardware=HW) == pytest.approx(graph)
    # compiled, 10 kernels in 2 regions (boundary before kernel 5, 0-based)
    gaps = [t["compiled_launch_s"] + (t["compiled_call_s"] if i == 5 else 0.0)
            for i in range(1, 10)]
    comp = _simulate([0.0] * 10, gaps, t["kernel_gap_s"], t["kernel_latency_s"])
    assert rl.launch_overhead(10, "compiled", HW, regions=2) == pytest.approx(comp)


def test_launch_overhead_orders_of_magnitude() -> None:
    # ~10 µs of host per eager op, ~1.4 µs per graph kernel (the issue's measured values)
    per_eager = rl.launch_overhead(1000, "eager", HW) / 1000
    per_graph = rl.launch_overhead(1000, "graph", HW) / 1000
    assert 8e-6 < per_eager < 15e-6
    assert 1e-6 < per_graph < 2e-6


def test_launch_overhead_arrays() -> None:
    out = rl.launch_overhead(np.array([1, 10, 100]), "eager", HW)
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    assert out[1] == pytest.approx(rl.launch_overhead(10, "eager", HW))


def test_wall_time_result() -> None:
    w = rl.wall_time([1e-3, 2e-3], "eager", HW)
    assert isinstance(w, rl.WallTime)
    assert float(w) == w.wall_s == pytest.approx(3e-3)
    assert w.kernels == 2 and w.mode == "eager" and w.hardware == HW
    assert w.bound == "gpu"
    assert "gpu-bound" in repr(w)


def test_presets_without_host_terms() -> None:
    for eff in ("peak", "constant", "torchao"):
        assert rl.launch_overhead(10, "eager", HW, efficiency=eff) == 0.0
        assert rl.wall_time([1e-6] * 4, "eager", HW, efficiency=eff).wall_s == pytest.approx(4e-6)


# ---------------------------------------------------------------- properties


@pytest.mark.parametrize("mode", ["eager", "compiled", "graph"])
def test_monotone_in_kernels(mode: str) -> None:
    prev = 0.0
    for n in (1, 2, 3, 5, 10, 50, 200):
        cur = rl.launch_overhead(n, mode, HW)
        assert cur >= prev
        prev = cur


@pytest.mark.parametrize("mode", ["eager", "compiled", "graph"])
def test_monotone_in_gpu_time(mode: str) -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 20e-6, 30)
    regions = 2 if mode == "compiled" else 1
    w0 = rl.wall_time(base, mode, HW, regions=regions)
    for i in (0, 7, 29):
        longer = base.copy()
        longer[i] += 5e-6
        w1 = rl.wall_time(longer, mode, HW, regions=regions)
        assert w1.wall_s >= w0.wall_s
        assert w1.gpu_s >= w0.gpu_s


def test_wall_between_gpu_time_and_gpu_plus_host() -> None:
    rng = np.random.default_rng(1)
    times = rng.uniform(0, 50e-6, 100)
    w = rl.wall_time(times, "eager", HW)
    assert w.gpu_s <= w.wall_s <= w.gpu_s + w.host_s + 1e-15


def test_launch_bound_flips_when_kernels_get_tiny() -> None:
    big = rl.wall_time([1e-3] * 20, "eager", HW)
    tiny = rl.wall_time([1e-6] * 20, "eager", HW)
    assert not big.launch_bound and big.wall_s == pytest.approx(big.gpu_s)
    assert tiny.launch_bound and tiny.wall_s > 5 * tiny.gpu_s
    # a CUDA graph removes the host issue time: the same tiny kernels are no longer host-bound
    assert rl.wall_time([1e-6] * 20, "graph", HW).wall_s < tiny.wall_s / 5


# ---------------------------------------------------------------- whole steps


def test_transformer_reports_wall_beside_gpu_time() -> None:
    kw = dict(kv_len=128, hardware=HW)
    e = rl.transformer.estimate("llama-3-8b", "decode", 1, **kw)
    assert e.launch == "eager"
    assert e.wall_s >= e.time_s
    g = rl.transformer.estimate("llama-3-8b", "decode", 1, launch="graph", **kw)
    assert g.time_s == pytest.approx(e.time_s)  # GPU time does not depend on launch
    assert g.wall_s <= e.wall_s
    assert "wall" in repr(e)


def test_transformer_tiny_model_is_launch_bound_in_eager() -> None:
    cfg = rl.transformer.TransformerConfig(
        name="tiny", hidden_size=64, head_dim=32, num_layers=4, num_heads=2, num_kv_heads=2,
        intermediate_size=128, vocab_size=256)
    e = rl.transformer.estimate(cfg, "decode", 1, kv_len=8, hardware=HW)
    assert e.launch_bound and e.wall_s > 2 * e.time_s
    g = rl.transformer.estimate(cfg, "decode", 1, kv_len=8, hardware=HW, launch="graph")
    assert g.wall_s < e.wall_s


def test_torch_estimate_wall() -> None:
    torch = pytest.importorskip("torch")
    import roofline.torch as rt

    m = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(8)])
    x = torch.randn(4, 16)
    e = rt.estimate(m, x, HW, mode="inference")
    assert e.launch == "eager" and e.launch_bound
    # eager host issue: 8 linears, ~1 kernel each, 7 gaps of eager_launch_s at least
    assert e.wall_s >= 7 * host_terms(HW)["eager_launch_s"]
    g = rt.estimate(m, x, HW, mode="inference", launch="graph")
    assert g.time_s == pytest.approx(e.time_s) and g.wall_s < e.wall_s
    assert "wall" in repr(e)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [0, -1, 2.5, math.nan, math.inf, MAX_KERNELS + 1, 2**70])
def test_launch_overhead_bad_kernel_counts(bad: object) -> None:
    with pytest.raises(ValueError, match="kernels"):
        rl.launch_overhead(bad, "eager", HW)


@pytest.mark.parametrize("bad", [True, "10", None, [True, 2]])
def test_launch_overhead_bad_kernel_types(bad: object) -> None:
    with pytest.raises(TypeError, match="kernels"):
        rl.launch_overhead(bad, "eager", HW)


def test_unknown_mode_lists_close_matches() -> None:
    with pytest.raises(KeyError, match="did you mean 'eager'"):
        rl.launch_overhead(3, "eagre", HW)
    with pytest.raises(KeyError, match="graph"):
        rl.wall_time([1e-6], "grpah", HW)
    with pytest.raises(TypeError, match="mode"):
        rl.wall_time([1e-6], 3, HW)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [[], [-1e-6], [math.nan], [math.inf], [1e-6, -0.5]])
def test_wall_time_bad_times(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="kernel_times_s"):
        rl.wall_time(bad, "eager", HW)


@pytest.mark.parametrize("bad", [1e-6, "1e-6", True, [True, 1e-6], [["a"]], [[1e-6, 2e-6]]])
def test_wall_time_bad_types(bad: object) -> None:
    with pytest.raises(TypeError, match="kernel_times_s"):
        rl.wall_time(bad, "eager", HW)


def test_regions_checks() -> None:
    with pytest.raises(ValueError, match="regions"):
        rl.wall_time([1e-6] * 3, "eager", HW, regions=2)
    with pytest.raises(ValueError, match="regions"):
        rl.wall_time([1e-6] * 3, "compiled", HW, regions=4)
    with pytest.raises(ValueError, match="regions"):
        rl.wall_time([1e-6] * 3, "compiled", HW, regions=0)
    with pytest.raises(TypeError, match="regions"):
        rl.wall_time([1e-6] * 3, "compiled", HW, regions=True)


def test_step_launch_argument_checked() -> None:
    with pytest.raises(KeyError, match="launch"):
        rl.transformer.estimate("llama-3-8b", "decode", 1, kv_len=8, hardware=HW,
                                launch="graphs")


def test_calls_wall_by_class_by_hand() -> None:
    """``calls_wall``: wall_time's prefix maximum with a host gap per launch from the calls
    before it, by class (the first launch is the reference and uncharged)."""
    from roofline._params.resolve import resolve
    from roofline.ops.host import HOST_CLASSES, calls_wall

    t = resolve("H100 SXM", "default")[2].host
    e = t.eager_launch_s
    gemm, kern = t.op_gemm_launches * e, t.op_kernel_launches * e
    counts = np.zeros((3, len(HOST_CLASSES)))
    counts[:, HOST_CLASSES.index("gemm")] = 1.0  # three GEMM calls
    counts[2, HOST_CLASSES.index("kernel")] = 1.0  # and one more call before the last
    # zero-time kernels: the host issue of launches 1 and 2 plus the last kernel's gap floor
    w = calls_wall(np.zeros(3), counts, "H100 SXM")
    assert w.wall_s == pytest.approx(2 * gemm + kern + t.kernel_gap_s, rel=1e-12)
    assert w.host_s == pytest.approx(2 * gemm + kern, rel=1e-12)
    # long kernels hide the host: the wall is their sum
    w = calls_wall(np.full(3, 1e-3), counts, "H100 SXM")
    assert w.wall_s == pytest.approx(3e-3, rel=1e-12) and not w.launch_bound
    # the first kernel long, then a host-bound tail: max(A_i + rest) at i = 2
    w = calls_wall(np.array([1e-6, 0.0, 0.0]), counts, "H100 SXM")
    assert w.wall_s == pytest.approx(2 * gemm + kern + t.kernel_gap_s, rel=1e-12)
    # the "peak" preset has no host terms: wall = GPU time
    assert calls_wall(np.full(3, 1e-6), counts, "H100 SXM", efficiency="peak").wall_s == (
        pytest.approx(3e-6))
