"""The trace reader keeps its results: every trace in the repository parses (op, module,
region, step, launch time of each kernel) to what the tuple-per-event reader it replaced gave
(pinned as digests in ``tests/data/trace_parse_digests.json``, written by that reader: the
columns reader must link every kernel the same way), by both readers (the fast file reader and
the standard library's dicts); and ids of unusual types link with Python's equality, as a
dict lookup would.

To re-pin after a deliberate change of the linking rules: ``PYTHONPATH=python python
tests/test_trace_parity.py`` rewrites the digests (say why in the commit)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import roofline as rl
from roofline.trace import _collect
from roofline.trace._load import stream
from roofline.trace._parse import Parsed, parse

ROOT = Path(__file__).parent.parent
DIGESTS = Path(__file__).parent / "data" / "trace_parse_digests.json"
TRACES = sorted([*(ROOT / "tests" / "data" / "traces").glob("*.json.gz"),
                 *(ROOT / "data" / "programs" / "h200" / "traces").glob("*.json.gz")])
HW = "H100 SXM"


def _pinned_args(args: dict[str, Any]) -> dict[str, Any]:
    """A kernel's kept arguments as the pinned reader kept them: without the launch
    configuration (``grid``, ``block``) the reader keeps since (copied from the event)."""
    return {k: v for k, v in args.items() if k not in ("grid", "block")}


def _digest(p: Parsed) -> str:
    """sha256 of everything the parser decides per kernel (its classification aside)."""
    rows = [(k.name, k.category, k.ts_us, k.dur_us, repr(k.stream), repr(_pinned_args(k.args)),
             k.op,
             k.op_uid, repr(k.dims), repr(k.types), repr(k.concrete), repr(k.chain_args),
             k.module, k.region, repr(k.launch_ts_us), k.iteration, k.graph)
            for k in p.kernels]
    text = repr((rows, p.device_name, p.iterations, p.iteration_rule, p.linked))
    return hashlib.sha256(text.encode()).hexdigest()


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_every_repository_trace_is_pinned() -> None:
    assert TRACES and sorted(json.loads(DIGESTS.read_text())) == [_rel(t) for t in TRACES]


@pytest.mark.parametrize("path", TRACES, ids=_rel)
def test_parse_keeps_its_results(path: Path) -> None:
    want = json.loads(DIGESTS.read_text())[_rel(path)]
    assert _digest(parse(stream(path), _rel(path))) == want  # the fast reader
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert _digest(parse(doc, _rel(path))) == want  # the dict path


def _trace(launch_ids: list[Any], kernel_ids: list[Any]) -> dict[str, Any]:
    """Op ``aten::opN`` (with its launch call, correlation ``launch_ids[N]``) per launch id,
    then one kernel per kernel id."""
    ev: list[dict[str, Any]] = []
    for n, c in enumerate(launch_ids):
        t = 100.0 * n
        ev.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{n}", "pid": 1, "tid": 1,
                   "ts": t, "dur": 50.0, "args": {"External id": 1000 + n}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": t + 10, "dur": 5.0, "args": {"correlation": c}})
    for j, c in enumerate(kernel_ids):
        ev.append({"ph": "X", "cat": "kernel", "name": f"k{j}", "pid": 0, "tid": 7,
                   "ts": 10_000.0 + 10 * j, "dur": 5.0, "args": {"correlation": c}})
    return {"traceEvents": ev}


@pytest.mark.parametrize(("launch_ids", "kernel_ids", "ops"), [
    ([1, 2], [2, 1, 3], ["aten::op1", "aten::op0", ""]),  # plain ints: matched in bulk
    ([1, 2, 1], [1], ["aten::op2"]),  # one id launched twice: the later call
    ([5, 7], [5.0, True], ["aten::op0", ""]),  # 5.0 == 5; True == 1 matches no launch
    (["a", 7], ["a", 7, None], ["aten::op0", "aten::op1", ""]),  # a string id
    ([1 << 64, 2], [1 << 64, 2], ["aten::op0", "aten::op1"]),  # beyond 64 bits
    ([None], [None, 3], ["aten::op0", ""]),  # a null id matches a null one
])
def test_ids_link_with_python_equality(launch_ids: list[Any], kernel_ids: list[Any],
                                       ops: list[str]) -> None:
    """Correlation ids of any JSON type link a kernel to its launch as ``==`` / ``hash``
    do (what the dict of the tuple reader did), whether matched in bulk or one by one."""
    got = parse(_trace(launch_ids, kernel_ids))
    assert [k.op for k in got.kernels] == ops


def test_values_keep_any_value() -> None:
    """The int column with a side dict gives back what it was given, type included."""
    vals: list[Any] = [0, -1, 1 << 62, (1 << 63) - 1, -(1 << 63), 1 << 63, None,
                       _collect.UNSET, True, 2.0, "7", [1], {"a": 1}]
    col = _collect.Values()
    for v in vals:
        col.append(v)
    back = [col[i] for i in range(len(vals))]
    assert back == vals and [type(v) for v in back] == [type(v) for v in vals]


@pytest.mark.parametrize("dur", [float("nan"), -1.0, float("inf"), "x", True])
def test_bad_durations_are_rejected_by_both_readers(tmp_path: Path, dur: Any) -> None:
    doc = _trace([1], [1])
    doc["traceEvents"][-1]["dur"] = dur
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    for src in (doc, path):
        with pytest.raises(ValueError, match="has dur"):
            rl.trace.explain(src, hardware=HW)


if __name__ == "__main__":
    DIGESTS.write_text(json.dumps({_rel(t): _digest(parse(stream(t), _rel(t)))
                                   for t in TRACES}, indent=1, sort_keys=True) + "\n")
