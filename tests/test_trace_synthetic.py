"""rl.trace.explain on small traces built here: edge cases, steps, NCCL, bad input."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.sustained import settled_clock

pytest.importorskip("pandas")

HW = "H100 SXM"
BF16 = "c10::BFloat16"


def _at_load(e: Any, load: float) -> float:
    """``e`` (a GEMM run alone) at the clock ``1 - (1 - f) load`` of the power limiter."""
    f, tau, p = settled_clock(rl.hardware(HW), "default") or (1.0, 0.0, 1.0)
    return float(_core.limited_gemm_time_s(e.time_s, e.compute_s, e.memory_s, f, tau, p, load))


class Trace:
    """A tiny Kineto trace: cpu ops on thread 1 launching kernels on stream 7."""

    def __init__(self, device: str | None = "NVIDIA H100 80GB HBM3") -> None:
        self.events: list[dict[str, Any]] = []
        self.cpu = 0.0
        self.gpu = 1000.0
        self.corr = 0
        self.device = device

    def step(self, n: int, dur: float) -> None:
        self.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}",
                            "pid": 1, "tid": 1, "ts": self.cpu, "dur": dur, "args": {}})
        self.cpu += 0.5

    def op(self, name: str, dims: Any, types: Any, kernels: list[tuple[str, float]],
           args: dict[str, Any] | None = None, cat: str = "kernel", launch: bool = True,
           extra: dict[str, Any] | None = None) -> None:
        start = self.cpu
        oargs: dict[str, Any] = {"External id": self.corr + 1000}
        if dims is not None:
            oargs.update({"Input Dims": dims, "Input type": types,
                          "Concrete Inputs": [""] * len(dims)})
        oargs.update(args or {})
        self.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
                            "ts": start, "dur": 5.0 * len(kernels) + 2, "args": oargs})
        for i, (kname, dur) in enumerate(kernels):
            self.corr += 1
            if launch:
                self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                    "pid": 1, "tid": 1, "ts": start + 1 + 5 * i, "dur": 3.0,
                                    "args": {"correlation": self.corr}})
            kargs = {"correlation": self.corr, "device": 0, "stream": 7}
            kargs.update(extra or {})
            self.events.append({"ph": "X", "cat": cat, "name": kname, "pid": 0, "tid": 7,
                                "ts": self.gpu, "dur": dur, "args": kargs})
            self.gpu += dur + 1.0
        self.cpu = start + 5.0 * len(kernels) + 3

    def dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"traceEvents": list(self.events)}
        if self.device:
            d["deviceProperties"] = [{"id": 0, "name": self.device}]
        return d


def test_missing_shapes_unpriced() -> None:
    t = Trace()
    t.op("aten::mm", [[1024, 1024], [1024, 1024]], [BF16, BF16], [("nvjet_sm90_x", 10.0)])
    t.op("aten::mm", None, None, [("nvjet_sm90_y", 20.0)])
    rep = rl.trace.explain(t.dict())
    k = rep.kernels()
    assert k.priced.tolist() == [True, False]
    assert math.isnan(k.predicted_s[1]) and "no shapes recorded" in k.how[1]
    # at the clock of the limiter's load at its midpoint: 5 us busy of the last 100 ms (the GPU
    # idle before the trace)
    assert k.predicted_s[0] == pytest.approx(
        _at_load(rl.gemm(1024, 1024, 1024, dtype="bf16", hardware=HW), 5e-6 / 0.1), rel=1e-12)
    assert k.clock[0] > 0.99999 and math.isnan(k.clock[1])
    assert rep.measured_s == pytest.approx(30e-6)
    assert rep.priced_fraction == pytest.approx(1 / 3)
    assert rep.unpriced_s == pytest.approx(20e-6)
    assert rep.predicted_s == k.predicted_s[0]


def test_unknown_and_unlinked_kernels() -> None:
    t = Trace()
    # a custom op: priced as one memory-bound pass (2 x 1 MiB read + 1 MiB written)
    t.op("myext::op", [[1024, 512], [1024, 512]], [BF16, BF16], [("my_kernel", 40.0)])
    t.op("aten::relu", [[4]], [BF16], [("mystery", 5.0)], launch=False)  # no launch record
    rep = rl.trace.explain(t.dict())
    k = rep.kernels()
    assert k.kind.tolist() == ["unknown", "unknown"]
    e = rl.elementwise(3 * 1024 * 512 * 2, reads=1, writes=0, dtype="int8", hardware=HW)
    assert k.predicted_s[0] == e.time_s
    assert not k.priced[1] and "not linked" in k.how[1]
    assert any("no launch record" in n for n in rep.notes)


def test_split_by_measured_time() -> None:
    t = Trace()
    # one op, two kernels of 30 and 10 us: the op's estimate is split 3:1
    t.op("aten::_softmax", [[4096, 8192], [], []], [BF16, "Scalar", "Scalar"],
         [("softmax_warp_forward", 30.0), ("cunn_SoftMaxForward", 10.0)])
    rep = rl.trace.explain(t.dict())
    e = rl.softmax(4096, 8192, dtype="bf16", hardware=HW, backend="eager")
    k = rep.kernels()
    assert k.predicted_s.tolist() == pytest.approx([0.75 * e.time_s, 0.25 * e.time_s])
    assert rep.by_op().predicted_s[0] == pytest.approx(e.time_s)
    assert k.kind.tolist() == ["norm", "norm"]


def test_profiler_steps() -> None:
    t = Trace()
    for n in range(3):
        t.step(n + 10, 30.0)
        t.op("aten::add", [[1 << 20], [1 << 20]], [BF16, BF16],
             [("vectorized_elementwise_kernel", 10.0 + n)])
        t.cpu += 30
    rep = rl.trace.explain(t.dict())
    assert rep.iterations == 3 and "ProfilerStep" in rep.iteration_rule
    assert rep.measured_s == pytest.approx((10 + 11 + 12) * 1e-6 / 3)
    assert rep.kernels().iteration.tolist() == [0, 1, 2]
    assert rep.launches == 1
    # 3 x 2 MiB read + 2 MiB written
    e = rl.elementwise(3 * (1 << 20) * 2, reads=1, writes=0, dtype="int8", hardware=HW)
    assert rep.predicted_s == pytest.approx(e.time_s)


def test_repeated_blocks_without_steps() -> None:
    t = Trace()
    for _ in range(2):
        t.op("aten::mm", [[64, 64], [64, 64]], [BF16, BF16], [("nvjet_a", 5.0)])
        t.op("aten::add", [[64], [64]], [BF16, BF16], [("elementwise_kernel", 2.0)])
    rep = rl.trace.explain(t.dict())
    assert rep.iterations == 2 and rep.measured_s == pytest.approx(7e-6)
    assert rl.trace.explain(t.dict(), iterations=1).measured_s == pytest.approx(14e-6)
    with pytest.raises(ValueError, match="iterations must be a positive integer"):
        rl.trace.explain(t.dict(), iterations=0)


def test_nccl_kernel_priced_by_its_record() -> None:
    t = Trace()
    nbytes = 2 * (1 << 24)
    t.op("record_param_comms", [[1 << 24]], [BF16], [("ncclDevKernel_AllReduce_Sum_bf16", 400.0)],
         args={"Collective name": "allreduce", "In msg nelems": 1 << 24,
               "Out msg nelems": 1 << 24, "Group size": 8, "dtype": "BFloat16"})
    t.op("record_param_comms", [[1 << 20]], [BF16], [("ncclKernel_AllGather_RING", 50.0)])
    rep = rl.trace.explain(t.dict())
    k = rep.kernels()
    assert k.kind.tolist() == ["collective", "collective"]
    assert k.predicted_s[0] == rl.all_reduce(nbytes, 8, hardware=HW).time_s
    assert not k.priced[1] and "no collective record" in k.how[1]


def test_memset_and_memcpy() -> None:
    t = Trace()
    t.op("aten::zero_", [[256]], ["float"], [("Memset (Device)", 1.0)], cat="gpu_memset",
         extra={"bytes": 1024})
    t.op("aten::copy_", [[256], [256]], ["float", "float"],
         [("Memcpy DtoD (Device -> Device)", 2.0)], cat="gpu_memcpy", extra={"bytes": 1024})
    t.op("aten::copy_", [[256], [256]], ["float", "float"],
         [("Memcpy HtoD (Pageable -> Device)", 3.0)], cat="gpu_memcpy", extra={"bytes": 1024})
    rep = rl.trace.explain(t.dict())
    k = rep.kernels()
    assert k.kind.tolist() == ["memset", "memcpy", "memcpy"]
    assert k.predicted_s[0] == rl.elementwise(1024, reads=0, writes=1, dtype="int8",
                                              hardware=HW).time_s
    assert k.predicted_s[1] == rl.elementwise(1024, reads=1, writes=1, dtype="int8",
                                              hardware=HW).time_s
    assert "host transfers" in k.how[2]
    assert rep.measured_s == pytest.approx(6e-6)


def test_module_annotations() -> None:
    t = Trace()
    t.events.append({"ph": "X", "cat": "python_function", "name": "nn.Module: Block_0",
                     "pid": 1, "tid": 1, "ts": -1.0, "dur": 100.0, "args": {}})
    t.events.append({"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_1",
                     "pid": 1, "tid": 1, "ts": -0.5, "dur": 50.0, "args": {}})
    t.op("aten::mm", [[64, 64], [64, 64]], [BF16, BF16], [("nvjet_a", 5.0)])
    rep = rl.trace.explain(t.dict())
    assert rep.kernels().module.tolist() == ["Block_0/Linear_1"]
    assert rep.by_module().name.tolist() == ["Block_0/Linear_1"]


def test_records_api() -> None:
    rep = rl.trace.from_records(
        [{"op": "aten::mm", "shapes": [[4096, 4096], [4096, 4096]], "types": ["bf16", "bf16"],
          "measured_s": 200e-6, "module": "mlp"}], hardware=HW)
    assert rep.predicted_s == pytest.approx(
        _at_load(rl.gemm(4096, 4096, 4096, dtype="bf16", hardware=HW), 100e-6 / 0.1), rel=1e-12)
    assert rep.measured_s == pytest.approx(200e-6)
    assert rep.kernels().module.tolist() == ["mlp"]
    with pytest.raises(ValueError, match="measured_s must be a positive"):
        rl.trace.from_records([{"op": "aten::mm", "shapes": [], "measured_s": 0}], hardware=HW)
    with pytest.raises(ValueError, match="non-empty list"):
        rl.trace.from_records([], hardware=HW)


# ----------------------------------------------------------------------- bad input


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.json' does not exist"):
        rl.trace.explain(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        rl.trace.explain(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a Kineto trace"):
        rl.trace.explain(other)
    with pytest.raises(TypeError, match="source must be a path"):
        rl.trace.explain(42)


def test_truncated_gzip(tmp_path: Path) -> None:
    t = Trace()
    t.op("aten::mm", [[64, 64], [64, 64]], [BF16, BF16], [("nvjet_a", 5.0)])
    raw = gzip.compress(json.dumps(t.dict()).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="cannot read"):
        rl.trace.explain(path)
    path.write_bytes(raw)
    assert rl.trace.explain(path).measured_s == pytest.approx(5e-6)


def test_no_gpu_events_and_unknown_device() -> None:
    t = Trace()
    t.events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                     "ts": 0.0, "dur": 1.0, "args": {}})
    with pytest.raises(ValueError, match="no GPU events"):
        rl.trace.explain(t.dict(), hardware=HW)
    t = Trace(device="Mystery Accelerator 9000")
    t.op("aten::mm", [[64, 64], [64, 64]], [BF16, BF16], [("nvjet_a", 5.0)])
    with pytest.raises(ValueError, match="pass hardware="):
        rl.trace.explain(t.dict())
    assert rl.trace.explain(t.dict(), hardware="H100 SXM").hardware == "H100 SXM"
    t = Trace(device=None)
    t.op("aten::mm", [[64, 64], [64, 64]], [BF16, BF16], [("nvjet_a", 5.0)])
    with pytest.raises(ValueError, match="names no device"):
        rl.trace.explain(t.dict())


def test_cpu_only_torch_profile(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(64, 64)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            (x @ x).relu()
    path = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(path))
    # a CPU-only trace has no GPU kernels to explain: a clear error, from the file and from
    # the live profiler object alike
    with pytest.raises(ValueError, match="no GPU events"):
        rl.trace.explain(path, hardware=HW)
    with pytest.raises(ValueError, match="exports its trace once"):
        rl.trace.explain(prof, hardware=HW)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as live:
        x @ x
    with pytest.raises(ValueError, match="no GPU events"):
        rl.trace.explain(live, hardware=HW)
