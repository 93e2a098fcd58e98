"""The op registry (roofline.ops.registry): one entry per op name, and every path prices the
same op alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roofline.ops import registry
from roofline.ops.registry import Call, Pricer, TensorArg, lookup, price, register
from roofline.trace import _price
from roofline.trace._load import load

TRACES = Path(__file__).parent / "data" / "traces"
HW = "H100 SXM"


def test_registering_a_name_twice_raises() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register("aten::mm", kind="gemm", op="gemm")(lambda call, p: ([], ""))
    with pytest.raises(ValueError, match="registered twice"):
        register("aten::cat.default", kind="memory")(lambda call, p: ([], ""))  # overload


def test_overloads_map_to_their_base_op() -> None:
    assert lookup("aten::add.Tensor") is lookup("aten::add") is not None
    assert lookup("aten::no_such_op") is None


def test_every_public_op_of_the_measurement_rows_has_an_entry() -> None:
    for op in ("gemm", "grouped_gemm", "elementwise", "rmsnorm", "layernorm", "softmax",
               "cross_entropy", "attention", "cast", "linear_train_kernels", "launch"):
        e = registry.row_entry(op)
        assert e is not None and e.predictor is not None and e.group is not None, op
    assert not registry.row_entry("launch").vector  # type: ignore[union-attr]
    assert registry.row_entry("aten::mm") is None


def _trace_ops() -> set[str]:
    names = set()
    for path in sorted(TRACES.glob("*.json.gz")):
        data, _ = load(str(path))
        names |= {e["name"] for e in data["traceEvents"]
                  if e.get("cat") == "cpu_op" and str(e.get("name", "")).startswith("aten::")}
    return names


def test_every_aten_op_of_the_traces_has_one_entry() -> None:
    names = _trace_ops()
    assert len(names) > 40
    missing = sorted(n for n in names if lookup(n) is None)
    assert missing == []


torch = pytest.importorskip("torch")


def _llama_ops(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    from test_torch_estimate import LlamaBlock  # tests/ is on sys.path under pytest

    import roofline.torch as rlt
    from roofline.torch import _ops

    nn, F = torch.nn, torch.nn.functional

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(1000, 256)
            self.block = LlamaBlock()
            self.head = nn.Linear(256, 1000, bias=False)

        def forward(self, ids: Any) -> Any:
            logits = self.head(self.block(self.emb(ids)))
            return F.cross_entropy(logits.flatten(0, 1).float(), ids.flatten())

    seen: set[str] = set()
    real = _ops.call_of

    def spy(*a: Any) -> Call:
        c = real(*a)
        seen.add(c.name)
        return c

    monkeypatch.setattr(_ops, "call_of", spy)
    with torch.device("meta"):
        model = Model().to(torch.bfloat16)
    ids = torch.zeros(2, 64, dtype=torch.long, device="meta")
    rep = rlt.estimate(model, ids, hardware=HW, mode="train")
    assert rep.unmodeled == []
    return seen


def test_every_aten_op_of_a_llama_train_step_has_one_entry(
        monkeypatch: pytest.MonkeyPatch) -> None:
    names = {n for n in _llama_ops(monkeypatch) if n.startswith("aten::")}
    assert {"aten::embedding", "aten::mm", "aten::_log_softmax"} <= names
    missing = sorted(n for n in names if lookup(n) is None)
    assert missing == []


def _live(func: Any, *args: Any, **kwargs: Any) -> list[tuple[str, Any]]:
    from roofline.hardware import hardware
    from roofline.torch import _ops

    out = func(*args, **kwargs)
    costs = _ops.costs(_ops.Context(hardware(HW), "default"), func, args, kwargs, out)
    assert costs
    return costs


def _traced(op: str, dims: Any, types: Any, concrete: Any = None) -> Any:
    from roofline.hardware import hardware

    e, how = _price.price_op(op, dims, types, concrete or [], hardware(HW), "default")
    assert e is not None, how
    return e


def _meta(*shape: int, dtype: Any = None) -> Any:
    return torch.empty(*shape, dtype=dtype or torch.bfloat16, device="meta")


def test_trace_and_torch_price_mm_alike() -> None:
    live = _live(torch.ops.aten.mm.default, _meta(512, 1024), _meta(1024, 2048))
    traced = _traced("aten::mm", [[512, 1024], [1024, 2048]], ["c10::BFloat16"] * 2)
    assert live[0][1].time_s == traced.time_s and live[0][1].flops == traced.flops


def test_trace_and_torch_price_cat_alike() -> None:
    """The same cat, contiguous (the vectorized kernel) and with a sliced past (the generic
    strided one), priced alike from a live dispatch and from a trace's recorded strides."""
    a, b = _meta(16, 8, 4096, 128), _meta(16, 8, 1, 128)
    dims = [[[16, 8, 4096, 128], [16, 8, 1, 128]], []]
    types = ["GenericList[c10::BFloat16]", "Scalar"]
    live = _live(torch.ops.aten.cat.default, [a, b], 2)
    traced = _traced_strided("aten::cat", dims, types, ["", "2"],
                             [[list(a.stride()), list(b.stride())], []])
    assert live[0][1].bytes == traced.bytes == 2 * (a.numel() + b.numel()) * 2
    assert live[0][1].time_s == traced.time_s
    view = _meta(16, 8, 4097, 128)[:, :, :4096]
    live_v = _live(torch.ops.aten.cat.default, [view, b], 2)
    traced_v = _traced_strided("aten::cat", dims, types, ["", "2"],
                               [[list(view.stride()), list(b.stride())], []])
    assert live_v[0][1].time_s == traced_v.time_s > 3 * traced.time_s
    # strides not recorded (older traces): the generic kernel, a lower bound on the rate
    assert _traced("aten::cat", dims, types, ["", "2"]).time_s == traced_v.time_s


def _traced_strided(op: str, dims: Any, types: Any, concrete: Any, strides: Any) -> Any:
    from roofline.hardware import hardware

    e, how = _price.price_op(op, dims, types, concrete, hardware(HW), "default",
                             strides=strides)
    assert e is not None, how
    return e


def test_index_select_reads_the_rows_it_touches() -> None:
    # a 16-row lookup in a 128256 x 4096 bf16 table: 16 rows read, 16 rows written, and the
    # 16 int64 indices read, not the 1 GB table
    table, idx = _meta(128256, 4096), torch.zeros(16, dtype=torch.long, device="meta")
    want = 16 * 4096 * 2 * 2 + 16 * 8
    live = _live(torch.ops.aten.index_select.default, table, 0, idx)
    traced = _traced("aten::index_select", [[128256, 4096], [], [16]],
                     ["c10::BFloat16", "Scalar", "long int"], ["", "0", ""])
    assert live[0][1].bytes == traced.bytes == want
    assert live[0][1].time_s == traced.time_s
    emb = _live(torch.ops.aten.embedding.default, table, idx)
    assert emb[0][1].bytes == want


def test_registry_call_prices_without_torch() -> None:
    from roofline.hardware import hardware

    x = TensorArg((4096, 4096), "bf16", 2)
    costs, how = price(Call("aten::mm", (x, x)), Pricer(hardware(HW), "default"))
    assert costs is not None and costs[0][0] == "gemm" and "rl.gemm(4096, 4096, 4096" in how
    costs, _ = price(Call("aten::view", (x,)), Pricer(hardware(HW), "default"))
    assert costs == []
