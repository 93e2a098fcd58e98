"""Row ops per backend (fused / eager / compiled): hand-derived costs, properties, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core

H100 = "H100 SXM"
OPS = {
    "rmsnorm": rl.rmsnorm,
    "layernorm": rl.layernorm,
    "softmax": rl.softmax,
    "cross_entropy": rl.cross_entropy,
}
B = _core.RowBackend
BF16 = _core.DType.bf16


def cost(op: str, rows: int, cols: int, backend: object, backward: bool = False) -> dict:
    return _core.row_op_cost(getattr(_core.RowOp, op), rows, cols, BF16, backward, False,
                             backend)


def test_fused_is_the_default_and_unchanged() -> None:
    for name, fn in OPS.items():
        a = fn(4096, 4096, hardware=H100)
        b = fn(4096, 4096, hardware=H100, backend="fused")
        assert a.time_s == b.time_s, name
    c = _core.row_op_cost(_core.RowOp.softmax, 4, 8, BF16, False, False)
    assert c["kernels"] == 1 and c["reread_bytes"] == 0 and c["transcendentals"] == 0


def test_eager_rmsnorm_cost_by_hand() -> None:
    # 8 x 2048 bf16: reads x (8*2048*2 = 32768) + w (4096); writes y (32768) + rstd (4*8 = 32);
    # 2048 columns > 256 threads x 4-element vectors: x is read again (32768).
    c = cost("rmsnorm", 8, 2048, B.eager)
    assert c["bytes_read"] == 32768 + 4096
    assert c["bytes_written"] == 32768 + 32
    assert c["reread_bytes"] == 32768
    assert c["kernels"] == 1
    # 1024 columns: one vector load per thread, nothing re-read.
    assert cost("rmsnorm", 8, 1024, B.eager)["reread_bytes"] == 0


def test_eager_softmax_paths_by_hand() -> None:
    # <= 1024 columns: warp per row, exp + division per element (2 * 16 * 1024 = 32768).
    assert cost("softmax", 16, 1024, B.eager)["transcendentals"] == 2 * 16 * 1024
    # 8192 columns (16 KiB rows) fit the 48 KiB of shared memory: no re-read.
    assert cost("softmax", 16, 8192, B.eager)["reread_bytes"] == 0
    # 32000 columns (64 KB rows) do not: max and sum passes read the row again (2 * 16*32000*2).
    assert cost("softmax", 16, 32000, B.eager)["reread_bytes"] == 2 * 16 * 32000 * 2


def test_eager_cross_entropy_writes_log_probabilities() -> None:
    # log_softmax writes R*V*b (4*1000*2 = 8000) besides nll_loss's 4-byte mean; 2 kernels.
    fused = cost("cross_entropy", 4, 1000, B.fused)
    eager = cost("cross_entropy", 4, 1000, B.eager)
    assert eager["kernels"] == 2
    assert eager["bytes_written"] == fused["bytes_written"] + 8000
    assert cost("cross_entropy", 4, 1000, B.eager, backward=True)["kernels"] == 3


def test_compiled_costs_by_hand() -> None:
    # Looped Inductor reduction above 1024 columns re-reads x once; persistent at 1024.
    assert cost("layernorm", 8, 4096, B.compiled)["reread_bytes"] == 8 * 4096 * 2
    assert cost("layernorm", 8, 1024, B.compiled)["reread_bytes"] == 0
    # Cross-entropy: online log-sum-exp (2 exps per logit) + the mean: 2 kernels.
    ce = cost("cross_entropy", 4, 128256, B.compiled)
    assert ce["kernels"] == 2 and ce["transcendentals"] == 2 * 4 * 128256


def test_compiled_norm_issue_by_hand() -> None:
    # Looped Inductor norms count the lane instructions their SMs issue per row: per element
    # (LayerNorm 19, RMSNorm 9), (accumulators per thread - 1) combines in each of the row's
    # threads, and 5 shuffle steps per warp + log2(warps) steps over the warps' partials
    # (Welford: 15 + 3 shuffles per step; sum: 1 + 1).
    # 4096 columns: R0_BLOCK 2048, 16 warps (512 threads), one row per CTA.
    ln = 4096 * 19 + 512 * (2048 // 512 - 1) * 15 + (16 * 5 + 4) * 32 * 18
    assert ln == 149248
    assert cost("layernorm", 8, 4096, B.compiled)["issue_lane_ops"] == 8 * ln
    rms = 4096 * 9 + 512 * 3 * 1 + (16 * 5 + 4) * 32 * 2
    assert cost("rmsnorm", 8, 4096, B.compiled)["issue_lane_ops"] == 8 * rms
    # 2048 columns: two rows per CTA, each reduced by 256 threads (8 warps).
    ln2 = 2048 * 19 + 256 * (2048 // 256 - 1) * 15 + (8 * 5 + 3) * 32 * 18
    assert cost("layernorm", 8, 2048, B.compiled)["issue_lane_ops"] == 8 * ln2
    # Persistent reductions (<= 1024 columns), the backward and the other backends: not counted.
    assert cost("layernorm", 8, 1024, B.compiled)["issue_lane_ops"] == 0
    assert cost("layernorm", 8, 4096, B.compiled, backward=True)["issue_lane_ops"] == 0
    assert cost("layernorm", 8, 4096, B.eager)["issue_lane_ops"] == 0
    assert cost("softmax", 8, 4096, B.compiled)["issue_lane_ops"] == 0


def test_compiled_layernorm_issue_bound_on_h200_hidden_on_h100() -> None:
    # H200 (132 SMs at 1.83 GHz, 128 lanes issued per SM per clock): 65536 x 4096 LayerNorm
    # issues 65536 x 149248 lane instructions, 316.6 us, more than its DRAM time: the kernel
    # runs at the issue floor (issue #23: 388 us measured, RMSNorm 292 us on the same bytes).
    floor = 65536 * 149248 / (132 * 1.83e9 * 128)
    ln = rl.layernorm(65536, 4096, hardware="H200", backend="compiled")
    rms = rl.rmsnorm(65536, 4096, hardware="H200", backend="compiled")
    assert ln.compute_s == pytest.approx(floor, rel=1e-9)
    assert ln.time_s > 1.2 * rms.time_s
    # H100: the slower HBM streams the row longer than the SMs issue it: LayerNorm prices
    # like RMSNorm (709 vs 709 us measured at 65536 x 8192), the issue hidden.
    ln1 = rl.layernorm(65536, 8192, hardware=H100, backend="compiled")
    rms1 = rl.rmsnorm(65536, 8192, hardware=H100, backend="compiled")
    assert ln1.compute_s < ln1.memory_s
    assert ln1.time_s == pytest.approx(rms1.time_s, rel=1e-3)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("backward", [False, True])
def test_eager_and_compiled_never_faster_than_fused(name: str, backward: bool) -> None:
    rows = np.array([128, 1024, 4096, 16384, 65536])[:, None]
    cols = np.array([256, 1024, 2048, 4096, 8192, 32000, 151936])[None, :]
    fn = OPS[name]
    fused = fn(rows, cols, hardware=H100, backward=backward).time_s
    for backend in ("eager", "compiled"):
        t = fn(rows, cols, hardware=H100, backward=backward, backend=backend).time_s
        assert np.all(t >= fused * (1 - 1e-12)), backend


#: Column ranges within which aten's softmax runs one kernel. At 9216 bf16 columns the forward
#: leaves the register-resident kernel (one 1024-thread CTA per SM, measured slow on H100) for
#: the shared-memory one (the looped kernel's code without its re-reads), and across ~24 K
#: columns for the looped one: eager softmax time may drop at those dispatch edges. aten also
#: takes the looped kernel for rows that are not a multiple of 8 bf16 (16-byte vectors), which
#: tests/test_monotone_u4.py checks never makes a row faster.
COL_RANGES = [np.arange(64, 9217, 496), np.arange(9224, 24000, 496),
              np.arange(24576, 300000, 4096)]


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("backend", ["fused", "eager", "compiled"])
@pytest.mark.parametrize("hw", [H100, "A100 SXM 80GB", "H200", "B200", "MI300X"])
def test_monotone_in_rows_and_cols(name: str, backend: str, hw: str) -> None:
    fn = OPS[name]
    rows = np.unique(np.concatenate([2 ** np.arange(0, 19), np.arange(1000, 40000, 997)]))
    for fixed in (1024, 4096, 32000):
        by_rows = fn(rows, fixed, hardware=hw, backend=backend).time_s
        assert np.all(np.diff(by_rows) >= -1e-15), (fixed, "rows")
        assert np.all(np.isfinite(by_rows)) and np.all(by_rows > 0)
        for cols in COL_RANGES:
            by_cols = fn(fixed, cols, hardware=hw, backend=backend).time_s
            assert np.all(np.diff(by_cols) >= -1e-15), (fixed, "cols")


def test_eager_softmax_long_rows_run_below_bandwidth() -> None:
    # The issue: aten's bf16 softmax at cols >= 4096 runs far below bandwidth (one 1024-thread
    # CTA per row and SM); the fused model streams at the achievable bandwidth.
    fused = rl.softmax(4096, 8192, hardware=H100).time_s
    eager = rl.softmax(4096, 8192, hardware=H100, backend="eager").time_s
    assert eager > 2.0 * fused


def test_backends_on_other_peak_presets_count_only_compulsory_traffic() -> None:
    # "peak": bytes / bandwidth, max with FLOPs; eager cross-entropy also writes R*V*b.
    e = rl.cross_entropy(1024, 32000, hardware=H100, backend="eager", efficiency="peak")
    rd = 1024 * 32000 * 2 + 1024 * 8 + 1024 * 2
    wr = 1024 * 32000 * 2 + 1024 * 4
    assert e.time_s == pytest.approx((rd + wr) / 3.35e12)


def test_elementwise_in_core_matches_formula() -> None:
    # 2**20 elements, 2 reads + 1 write of bf16 = 6 MiB at the datasheet bandwidth.
    e = rl.elementwise(2**20, 2, 1, hardware=H100, efficiency="peak")
    assert e.bytes == 6 * 2**20
    assert e.time_s == pytest.approx(6 * 2**20 / 3.35e12)
    arr = rl.elementwise(np.array([2**10, 2**20]), np.array([1, 2]), hardware=H100)
    assert arr.time_s.shape == (2,) and arr.time_s[1] > arr.time_s[0]


@pytest.mark.parametrize("name", list(OPS))
def test_bad_backend(name: str) -> None:
    with pytest.raises(KeyError, match="backend.*eager"):
        OPS[name](8, 8, hardware=H100, backend="eagre")
    with pytest.raises(TypeError, match="backend"):
        OPS[name](8, 8, hardware=H100, backend=1)


def test_backend_is_case_insensitive_and_labelled() -> None:
    e = rl.rmsnorm(8, 4096, hardware=H100, backend="Eager")
    assert "eager" in e.label


def test_eager_softmax_one_cta_per_sm_time_by_hand() -> None:
    # 264 rows of 8192 bf16 on H100 (132 SMs): aten's shared-memory kernel, one 1024-thread CTA
    # per row and SM -> 2 waves. Per row 2*8192*2 = 32768 bytes at the per-SM rate
    # (fraction * 3.35e12 / 132), then 3 transcendentals per element at the fp32 rate of one SM.
    from roofline._params.achievable import compute_fractions
    from roofline._params.packaged import calibration as data
    from roofline._params.packaged import terms

    p = data()["params"]
    u = terms("row_ops")["universal"]
    tf = terms("row_ops")["transcendental_flops"]["NVIDIA"]
    fp32 = 67e12 * compute_fractions(rl.hardware(H100))["fp32"]
    rate = u["cta_sm_fraction"] * 3.35e12 / 132
    memory = max(264 * 32768 / (3.35e12 * p["memory_fraction"]), 2 * 32768 / rate)
    serial = 2 * 3 * 8192 * tf / fp32 * 132
    roof = max(memory, 264 * 8192 * 5 / fp32) + serial
    e = rl.softmax(264, 8192, hardware=H100, backend="eager")
    # GPU time: the streaming latency min(fitted per-call latency, kernel_gap_s + ramp)
    gap = terms("host")["terms"]["kernel_gap_s"]
    latency = min(p["memory_latency_s"], gap + u["small_kernel_ramp_s"])
    assert e.time_s == pytest.approx(latency + roof)


def test_eager_softmax_forward_warp_kernel_up_to_2048_columns() -> None:
    """torch >= 2.10's host_softmax runs the forward's warp-per-row kernel for rows up to 2048
    elements and 8 KiB, the backward's up to 1024 and 4 KiB (SoftMax.cu): a bf16 forward at
    2048 columns streams at the 1024-column rate, one past the vector width (2056) drops to the
    1024-thread CTA kernel; the backward already uses the CTA kernel at 2048."""
    def rate(cols: int, backward: bool) -> float:
        e = rl.softmax(65536, cols, dtype="bf16", backend="eager", backward=backward,
                       hardware="H100 SXM")
        return float(e.bytes / e.time_s)

    assert rate(2048, False) == pytest.approx(rate(1024, False), rel=0.05)
    assert rate(2056, False) < 0.6 * rate(2048, False)
    assert rate(2048, True) < 0.95 * rate(1024, True)
    # fp32 rows of 2048 (8 KiB) are still warp rows; fp32 rows of 4096 are not
    f32 = [rl.softmax(65536, c, dtype="fp32", backend="eager", hardware="H100 SXM")
           for c in (1024, 2048, 4096)]
    per_byte = [float(e.time_s / e.bytes) for e in f32]
    assert per_byte[1] == pytest.approx(per_byte[0], rel=0.05)
    assert per_byte[2] > 1.5 * per_byte[1]
