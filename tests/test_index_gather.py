"""``aten::index`` (``x[idx]``) of a trace, whose tensor list of indices Kineto does not record,
priced from its kernel's launch configuration (``grid``, ``block``, which the trace reader now
keeps): ``vectorized_gather_kernel`` gathers ``grid.x`` rows; ``index_elementwise_kernel``'s
threads walk up to 4 outputs each, an index then the element it addresses (dependent loads).
Hand-derived values, the fallbacks, the reader, and the H200 MoE traces' gathers."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

import roofline as rl
from roofline import _core
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.ops.registry.call import Impl
from roofline.trace._parse import parse

HW = "H200 SXM"
SMS = 132.0
TRIP = 0.36e-6  # kBlockRoundTripS (select.hpp)
GATHER = "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int)"
INDEX = ("void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<"
         "at::native::index_kernel_impl<at::native::OpaqueType<4> > > >(long, Lambda)")
TRACES = Path(__file__).resolve().parents[1] / "data" / "programs" / "h200" / "traces"


def _price(call: Call):  # type: ignore[no-untyped-def]
    costs, how = price(call, Pricer(rl.hardware(HW), "default"))
    assert costs
    return costs[0][1], how


def _index(x: TensorArg, kernel: str, grid: tuple[int, int, int],
           block: tuple[int, int, int]) -> Call:
    return Call("aten::index", (x, ()), None, impl=Impl("eager", None, kernel, grid, block))


def test_chain_by_hand() -> None:
    # 8 blocks of 128 threads: one wave, 4 items per thread, index + element per item
    assert _core.index_gather_chain_s(8, 128, 4096, 1, SMS) == pytest.approx(4 * 2 * TRIP)
    # two index tensors: 3 dependent loads per item
    assert _core.index_gather_chain_s(8, 128, 4096, 2, SMS) == pytest.approx(4 * 3 * TRIP)
    # one block of 264 outputs: ceil(264 / 128) = 3 items per thread
    assert _core.index_gather_chain_s(1, 128, 264, 1, SMS) == pytest.approx(3 * 2 * TRIP)
    # 16 blocks of 128 threads per SM are resident: 2 x 132 x 16 blocks run in 2 waves
    assert _core.index_gather_chain_s(2 * SMS * 16, 128, 1e9, 1, SMS) == pytest.approx(
        2 * 4 * 2 * TRIP)
    assert _core.index_gather_outputs(8, 128) == 4096
    for bad in (0.0, -1.0, math.nan):
        assert _core.index_gather_chain_s(bad, 128, 4096, 1, SMS) == 0.0
        assert _core.index_gather_chain_s(8, 128, bad, 1, SMS) == 0.0
        assert _core.index_gather_outputs(bad, 128) == 0.0


def test_row_gather_moves_the_gathered_rows() -> None:
    """HF Mixtral's hidden_states[token_idx] over 16384 tokens: 4254 rows of 8 KB."""
    x = TensorArg((16384, 4096), "bf16", 2)
    e, how = _price(_index(x, GATHER, (4254, 2, 1), (256, 1, 1)))
    assert "4254 rows of 8192 B" in how
    assert float(e.bytes) == 2 * 4254 * 8192 + 8 * 4254
    whole, _ = _price(Call("aten::index", (x, ()), None))  # no launch: a pass over x
    assert float(e.time_s) < float(whole.time_s) / 3


def test_elementwise_index_is_a_chain_of_loads() -> None:
    x = TensorArg((16384, 2, 1), "fp32", 4)
    e, how = _price(_index(x, INDEX, (8, 1, 1), (128, 1, 1)))
    assert "8 blocks of 128 threads" in how
    assert float(e.memory_s) == pytest.approx(4 * 2 * TRIP)
    assert float(e.time_s) > 4 * 2 * TRIP
    plain, _ = _price(Call("aten::index", (x, ()), None))
    assert float(plain.time_s) < float(e.time_s)
    # more blocks: more outputs, never faster
    e2, _ = _price(_index(x, INDEX, (64, 1, 1), (128, 1, 1)))
    assert float(e2.time_s) >= float(e.time_s)


def test_other_kernels_and_live_calls_stay_a_pass() -> None:
    x = TensorArg((512, 4096), "bf16", 2)
    plain, how = _price(Call("aten::index", (x, ()), None))
    assert "one memory-bound pass" in how
    other, how2 = _price(_index(x, "some_other_kernel", (4, 1, 1), (128, 1, 1)))
    assert how2 == how and float(other.time_s) == float(plain.time_s)


def _synthetic(grid: list[int] | None) -> dict[str, object]:
    args: dict[str, object] = {"correlation": 7, "device": 0}
    if grid is not None:
        args.update(grid=grid, block=[256, 1, 1])
    return {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::index", "pid": 1, "tid": 1, "ts": 0.0,
         "dur": 50.0, "args": {"External id": 1, "Input Dims": [[16384, 4096], []],
                               "Input type": ["c10::BFloat16", ""],
                               "Concrete Inputs": ["", ""],
                               "Input Strides": [[4096, 1], []]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10.0, "dur": 5.0, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": GATHER, "pid": 0, "tid": 7, "ts": 100.0,
         "dur": 18.0, "args": args}]}


def test_reader_keeps_the_launch_configuration(tmp_path: Path) -> None:
    doc = _synthetic([4254, 2, 1])
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    for parsed in (parse(doc, "dict"), parse(rl.trace._load.stream(path), "file")):
        (k,) = parsed.kernels
        assert k.args == {"device": 0, "grid": (4254, 2, 1), "block": (256, 1, 1)}
    r = rl.trace.explain(doc, hardware=HW)
    assert "4254 rows" in str(r.by_op()["how"].iloc[0])
    bare = rl.trace.explain(_synthetic(None), hardware=HW)  # no launch recorded: a pass
    assert "one memory-bound pass" in str(bare.by_op()["how"].iloc[0])
    # malformed launch records are dropped
    bad = _synthetic([4254, 2])
    (k,) = parse(bad, "dict").kernels
    assert k.args == {"device": 0}


def test_h200_moe_gathers() -> None:
    """HF Mixtral, 16384 tokens: 8 row gathers (~4100 rows each) took 150 us in all, priced
    530 us as passes over every row; HF Qwen3-MoE, 4096 tokens: 8 routing-weight gathers took
    59 us, 11.6 us as passes."""
    df = rl.trace.explain(TRACES / "moe_mixtral_hf_t16384.json.gz", hardware=HW).by_op()
    row = df[df.name == "aten::index 16384x4096"].iloc[0]
    assert 0.8 < row.predicted_s / row.measured_s < 1.25
    df = rl.trace.explain(TRACES / "moe_qwen3moe_hf_t4096.json.gz", hardware=HW).by_op()
    row = df[df.name == "aten::index 4096x8x1"].iloc[0]
    assert 0.5 < row.predicted_s / row.measured_s < 1.0  # one index tensor assumed, 2 ran


def test_scatter_chain_by_hand() -> None:
    # 32768 index elements: 32 blocks of 128 threads x 8 items, one wave
    assert _core.scatter_chain_s(32768, SMS) == pytest.approx(8 * TRIP)
    # 100 elements: one block, 1 item per thread
    assert _core.scatter_chain_s(100, SMS) == pytest.approx(TRIP)
    # 2 waves of 132 x 16 blocks
    assert _core.scatter_chain_s(2 * SMS * 16 * 1024, SMS) == pytest.approx(2 * 8 * TRIP)
    for bad in (0.0, -1.0, math.nan):
        assert _core.scatter_chain_s(bad, SMS) == 0.0


def test_scatter_writes_the_index_elements_not_self() -> None:
    """HF's one_hot: scatter_(-1, idx [4096, 8, 1], 1) into zeros [4096, 8, 129] int64 took
    5.9 us on the H200 (a pass over the whole tensor priced 18.7 us)."""
    big = TensorArg((4096, 8, 129), "i64", 8)
    idx = TensorArg((4096, 8, 1), "i64", 8)
    e, how = _price(Call("aten::scatter_", (big, None, idx, None), concrete=("", "-1", "", "1")))
    assert "32768 index elements" in how
    assert float(e.bytes) == 32768 * 8 * 2
    assert float(e.memory_s) == pytest.approx(8 * TRIP)
    assert 3e-6 < float(e.time_s) < 7e-6
    # a src tensor's elements are read too; a larger index is never faster
    src = TensorArg((4096, 8, 1), "i64", 8)
    e2, _ = _price(Call("aten::scatter_", (big, None, idx, src)))
    assert float(e2.bytes) == float(e.bytes) + 32768 * 8
    e3, _ = _price(Call("aten::scatter_", (big, None, TensorArg((4096, 8, 64), "i64", 8), None)))
    assert float(e3.time_s) >= float(e.time_s)
