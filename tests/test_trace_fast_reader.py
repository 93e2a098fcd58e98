"""The fast trace reader (trace/_events.py, msgspec structs in chunks) against the standard
library: the collected events equal those collected from ``json.loads``' dicts for any chunk
size and any text inside names (cuts inside strings or nested objects are retried), and every
file it cannot read falls back to the standard-library reader, which accepts or rejects it as
before."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest

import roofline as rl
from roofline.trace import _collect, _events, _load

HW = "H100 SXM"
NAMES = ["aten::mm", 'x"}, {"ph": "X", "ts": 1}', "}]", "b\u00e9\u4e2d", "ProfilerStep#3",
         "nn.Module: layer.0", "cudaLaunchKernel", "}, {", ""]
CATS = ["cpu_op", "kernel", "cuda_runtime", "user_annotation", "python_function",
        "gpu_memcpy", "ac2g", "Trace", None]


def _event(rng: random.Random, i: int) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": rng.choice(["X", "X", "X", "s", "f", "i"]),
                         "name": rng.choice(NAMES), "pid": rng.choice([0, 1, "p"]),
                         "tid": rng.choice([1, 7, "t"])}
    cat = rng.choice(CATS)
    if cat is not None:
        e["cat"] = cat
    if rng.random() < 0.95:
        e["ts"] = rng.choice([float(i), i, i + 0.125, 1e15 + 0.5])
    if rng.random() < 0.9:
        e["dur"] = rng.choice([0.0, 1.5, 3, 1e6])
    if rng.random() < 0.3:
        e["id"] = rng.randint(0, 5)
    args: dict[str, Any] = {"correlation": rng.randint(0, 5), "External id": i,
                            "stream": 7, "nested": {"a": {"b": [1, {"c": "}, {"}]}},
                            "Input Dims": rng.choice([[[4, 4], [4, 4]], [[]], []]),
                            "Input type": ["c10::BFloat16", "c10::BFloat16"]}
    if rng.random() < 0.5:
        args["Concrete Inputs"] = ["", "1"]
    if rng.random() < 0.3:
        args["Sequence number"] = rng.randint(0, 3)
    if rng.random() < 0.1:
        args.update({"Collective name": "allreduce", "Group size": 8, "dtype": "BFloat16",
                     "In msg nelems": 1024, "Out msg nelems": 1024})
    if rng.random() < 0.8:
        e["args"] = rng.choice([args, {}, None]) if rng.random() < 0.2 else args
    return e


def _collected(c: _collect.Collector) -> tuple[Any, ...]:
    """What a collector kept, event by event (its columns read back as tuples)."""
    threads = {key: [(t.ts[i], t.dur[i], _collect.CPU_CATS[t.cat[i]], c.names[t.name[i]],
                      c.arglist[t.args[i]], t.uid[i], t.corr.get(i, "-"),
                      c.shape_list[t.shape[i]], t.ext[i], t.seq[i]) for i in range(len(t))]
               for key, t in c.threads.items()}
    g = c.gpu
    gpu = [(g.ts[j], g.dur[j], c.names[g.name[j]], _collect.GPU_CATS[g.cat[j]],
            c.arglist[g.args[j]], g.stream[j], g.corr[j], g.ext[j]) for j in range(len(g))]
    return threads, gpu, c.flows, c.steps


def _write(path: Path, doc: Any, indent: int | None, gz: bool) -> None:
    text = json.dumps(doc, indent=indent, ensure_ascii=indent == 2).encode()
    path.write_bytes(gzip.compress(text) if gz else text)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 1 << 20])
def test_structs_collect_what_dicts_collect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            chunk: int) -> None:
    """Any chunk size, whitespace, gzip, key order, names holding ``}, {`` and ``]``, nested
    args: the fast reader's collected events equal those of the dicts from json.loads, and
    the top-level values equal json.loads' too."""
    monkeypatch.setattr(_events, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for trial in range(8):
        events = [_event(rng, i) for i in range(rng.randint(0, 60))]
        doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [{"name": "H100"}]}
        doc["traceEvents"] = events
        if trial % 2:
            doc["traceName"] = "x}, {]"
            doc["deviceProperties"] = doc.pop("deviceProperties")  # after traceEvents
        path = tmp_path / f"t{trial}.json"
        _write(path, doc, [None, 0, 2][trial % 3], trial % 4 == 3)
        want = _collect.Collector("w")
        want.add_all(events)
        meta: dict[str, Any] = {}
        got = _collect.Collector("w")
        got.add_structs(_events.batches(path, meta))
        assert _collected(got) == _collected(want)
        assert meta == {k: v for k, v in doc.items() if k != "traceEvents"}


@pytest.mark.parametrize("text", [
    '[{"ph": "X"}]',  # the bare array form
    '{"traceEvents": [{"ph": "X"}, 7, null]}',  # events that are not objects
    '{"traceEvents": [{"ph": "X", "args": [1]}]}',  # args that is not an object
    '{"traceEvents": [{"ph": "X", "dur": NaN}]}',  # NaN literal (json.dumps writes it)
    '{"traceEvents": [{"ph": "X"}], "traceEvents": [{"ph": "s"}]}',  # the key twice
    '{"x": {"traceEvents": [{"ph": "X"}]}, "traceEvents": []}',  # a nested key first
    '{"traceEvents": [{"ph": "X"}, {"ph": ',  # truncated
    '{"traceEvents": [{"ph": "X"}]} {}',  # extra data
])
def test_unusual_files_fall_back(tmp_path: Path, text: str) -> None:
    """What the fast reader cannot read raises Fallback (never a wrong result), and
    ``trace.explain`` then gives the standard-library reader's answer: the same as from
    the dict, or the same error."""
    path = tmp_path / "odd.json"
    path.write_text(text)
    with pytest.raises(_events.Fallback):
        for _ in _events.batches(path, {}):
            pass
    try:
        data, _ = _load.load(path)
    except ValueError as exc:
        with pytest.raises(ValueError, match="not JSON|not a Kineto trace") as got:
            rl.trace.explain(path, hardware=HW)
        assert str(got.value) == str(exc)
        return
    with pytest.raises(ValueError, match="no GPU events"):
        rl.trace.explain(path, hardware=HW)
    assert isinstance(data["traceEvents"], list)


def test_key_text_inside_values(tmp_path: Path) -> None:
    """``traceEvents`` spelled inside a string or as a value before the real key: the fast
    reader finds the top-level key and reads what json.loads reads."""
    doc = {"a": '"traceEvents": [', "b": "traceEvents", "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": '"traceEvents": [{', "ts": 1.0, "dur": 2.0}]}
    path = tmp_path / "k.json"
    path.write_text(json.dumps(doc))
    meta: dict[str, Any] = {}
    got = _collect.Collector("w")
    got.add_structs(_events.batches(path, meta))
    want = _collect.Collector("w")
    want.add_all(doc["traceEvents"])
    assert _collected(got) == _collected(want)
    assert meta == {"a": doc["a"], "b": "traceEvents"}


def test_fallback_gives_the_dict_result(tmp_path: Path) -> None:
    """A real trace with one non-object event appended: the fast reader falls back, and the
    result is that of the parsed dict."""
    src = Path(__file__).parent / "data" / "traces" / "encoder_layer_train.json.gz"
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["traceEvents"].append(5)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    a = rl.trace.explain(path, hardware=HW)
    b = rl.trace.explain(doc, hardware=HW)
    assert (a.measured_s, a.predicted_s) == (b.measured_s, b.predicted_s)
    assert a.kernels().equals(b.kernels())


def test_profiler_export_is_removed(tmp_path: Path) -> None:
    """A live profiler's exported file is deleted once read (by the fast reader too)."""
    src = Path(__file__).parent / "data" / "traces" / "encoder_layer_train.json.gz"
    raw = gzip.decompress(src.read_bytes())
    written: list[str] = []

    class Prof:
        def export_chrome_trace(self, name: str) -> None:
            Path(name).write_bytes(raw)
            written.append(name)

    rep = rl.trace.explain(Prof(), hardware=HW)
    assert rep.measured_s > 0
    assert written and not Path(written[0]).exists()
