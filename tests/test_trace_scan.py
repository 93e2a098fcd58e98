"""The C++ trace scanner (trace/_scan.py, ``_core.TraceScanner``) keeps exactly what the
``msgspec`` reader's collector keeps (columns, names, arguments, recorded inputs, flows,
steps, top-level values) on every repository trace and on random events cut at any chunk
size; anything it cannot reproduce exactly (hostile or unusual bytes) raises ``Fallback``,
and ``trace.explain`` then gives the old readers' answer: the same kernels, or the same
error."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest

from roofline import _core
from roofline.trace import _collect, _events, _load, _scan
from roofline.trace._parse import parse

ROOT = Path(__file__).parent.parent
TRACES = sorted([*(ROOT / "tests" / "data" / "traces").glob("*.json.gz"),
                 *(ROOT / "data" / "programs" / "h200" / "traces").glob("*.json.gz")])


def _state(c: _collect.Collector) -> tuple[Any, ...]:
    """Everything a collector kept, its columns read back event by event."""
    threads = {key: [(t.ts[i], t.dur[i], t.cat[i], c.names[t.name[i]], c.arglist[t.args[i]],
                      t.uid[i], t.corr.get(i, "-"), c.shape_list[t.shape[i]], t.ext[i],
                      t.seq[i]) for i in range(len(t))]
               for key, t in c.threads.items()}
    g = c.gpu
    gpu = [(g.ts[j], g.dur[j], c.names[g.name[j]], g.cat[j], c.arglist[g.args[j]],
            g.stream[j], g.corr[j], g.ext[j]) for j in range(len(g))]
    return (list(threads.items()), gpu, list(c.flows.items()), c.steps, c.names,
            c.arglist, c.shape_list, c.uid, [repr(k) for k in c.threads])


def _old(path: Path) -> tuple[_collect.Collector, dict[str, Any]]:
    meta: dict[str, Any] = {}
    col = _collect.Collector("w")
    col.add_structs(_events.batches(path, meta))
    return col, meta


def _new(path: Path) -> tuple[_collect.Collector, dict[str, Any]]:
    meta: dict[str, Any] = {}
    return _scan.scan(path, meta, "w"), meta


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_repository_traces_scan_as_the_msgspec_reader(path: Path) -> None:
    new, new_meta = _new(path)  # (no Fallback: every repository trace is read in C++)
    old, old_meta = _old(path)
    assert _state(new) == _state(old)
    assert new_meta == old_meta


NAMES = ["aten::mm", 'x"}, {"ph": "X", "ts": 1}', "}]", "b\u00e9\u4e2d\U0001f600",
         "ProfilerStep#3", "nn.Module: layer.0", "cudaLaunchKernel", "tab\there\n", "", "\\"]
CATS = ["cpu_op", "kernel", "cuda_runtime", "cuda_driver", "user_annotation",
        "python_function", "gpu_memcpy", "gpu_memset", "ac2g", "Trace", None]
COLL = {"Collective name": "allreduce", "Group size": 8, "dtype": "BFloat16",
        "In msg nelems": 1024, "Out msg nelems": [1, 2.5]}


def _event(rng: random.Random, i: int) -> dict[str, Any]:
    """A random event of the kinds and value types the scanner reads itself."""
    cat = rng.choice(CATS)
    e: dict[str, Any] = {"ph": rng.choice(["X", "X", "X", "s", "f", "i", 5]),
                         "name": rng.choice(NAMES), "pid": rng.choice([0, 1, "p", None]),
                         "tid": rng.choice([1, 7, "t"]) if cat in _collect.CPU else 7}
    if cat is not None:
        e["cat"] = cat
    if rng.random() < 0.95:
        e["ts"] = rng.choice([float(i), i, i + 0.125, 1e15 + 0.5, -3, 2.5e-7, 0.1 + 0.2])
    if rng.random() < 0.9:
        e["dur"] = rng.choice([0.0, 1.5, 3, 1e6, 0])
    if rng.random() < 0.3:
        e["id"] = rng.choice([0, 1, 2, 3, "x", None])
    args: dict[str, Any] = {"correlation": rng.randint(0, 5), "External id": i,
                            "stream": rng.choice([7, None]), "nested": {"a": [1, {"c": "}"}]},
                            "Input Dims": rng.choice([[[4, 4], [4, 4]], [[]], [], None]),
                            "Input type": ["c10::BFloat16", "c10::BFloat16"]}
    if rng.random() < 0.5:
        args["Concrete Inputs"] = ["", "1"]
    if rng.random() < 0.3:
        args["Input Strides"] = [[4, 1], [1, 4]]
    if rng.random() < 0.3:
        args["Sequence number"] = rng.choice([0, 3, None])
    if rng.random() < 0.1:
        args.update(COLL)
    if rng.random() < 0.2:
        args["device"] = rng.choice([0, 1, "cuda:0", True])
    if rng.random() < 0.2:
        args["bytes"] = rng.choice([4096, 1.5])
    if rng.random() < 0.4:  # a kernel's launch configuration, well formed or not
        dims = [[1, 2, 3], [128, 1, 1], [0, 0, 0], [1, 2], [1, 2, 3, 4], [-1, 1, 1],
                [1.0, 2, 3], [True, 1, 1], "x", [[1], 2, 3], None, [1, 2, 2**62]]
        args["grid"] = rng.choice(dims)
        if rng.random() < 0.9:
            args["block"] = rng.choice(dims)
    if rng.random() < 0.1:
        del args["correlation"]
    if rng.random() < 0.8:
        e["args"] = rng.choice([args, {}, None]) if rng.random() < 0.2 else args
    return e


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 1 << 20])
def test_random_events_any_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 chunk: int) -> None:
    """Any chunk size (events resumed from their first byte), indentation, gzip, ``\\u``
    escapes, names holding ``}, {``, ints and floats mixed: the scanner keeps what the
    msgspec reader keeps, and reads the top-level values around the events alike."""
    monkeypatch.setattr(_events, "_CHUNK", chunk)
    monkeypatch.setattr(_scan, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for trial in range(8):
        events = [_event(rng, i) for i in range(rng.randint(0, 80))]
        doc: dict[str, Any] = {"schemaVersion": 1, "traceEvents": events}
        if trial % 2:
            doc["deviceProperties"] = [{"name": "H100"}]
        path = tmp_path / f"t{trial}.json"
        text = json.dumps(doc, indent=[None, 0, 2][trial % 3], ensure_ascii=trial % 3 == 2)
        path.write_bytes(gzip.compress(text.encode()) if trial % 4 == 3 else text.encode())
        new, new_meta = _new(path)
        old, old_meta = _old(path)
        assert _state(new) == _state(old)
        assert new_meta == old_meta == {k: v for k, v in doc.items() if k != "traceEvents"}


def _outcome(path: Path, scan: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What parsing the file gives: its kernels' fields, or the error's type and text."""
    with monkeypatch.context() as m:
        if not scan:
            m.setattr(_load, "_scan_file", lambda *a: None)
        try:
            p = parse(_load.stream(path), "f")
        except Exception as exc:  # noqa: BLE001 (the error itself is the outcome)
            return type(exc).__name__, str(exc)
    return [repr(k) for k in p.kernels], p.iterations, p.iteration_rule, p.linked


_OK = ('{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5.0, '
       '"dur": 1.0, "args": {"correlation": 1, "device": 0}}')
_LAUNCH = ('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, '
           '"tid": 1, "ts": 1.0, "dur": 1.0, "args": {"correlation": 1}}')


def _doc(*events: str) -> bytes:
    """A document of a launch, ``events`` and a kernel (bytes: each character one byte, so
    ``"\xff"`` is the byte 0xff, not UTF-8)."""
    return ('{"traceEvents": [' + ", ".join([_LAUNCH, *events, _OK]) + "]}").encode("latin-1")


HOSTILE = {
    "truncated in an event": _doc()[:-30],
    "truncated in a string": _doc('{"ph": "X", "name": "abc'),
    "NaN": _doc('{"ph": "X", "cat": "kernel", "ts": 1, "dur": NaN}'),
    "Infinity": _doc('{"ph": "X", "cat": "kernel", "ts": Infinity, "dur": 1}'),
    "huge int": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1' + "0" * 400 + ', "dur": 1}'),
    "huge float": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1e400, "dur": 1}'),
    "tiny float": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1e-400, "dur": 1}'),
    "int past int64 id": _doc('{"ph": "X", "cat": "kernel", "ts": 1, "args": '
                              '{"External id": 9223372036854775808}}'),
    "deep nesting": _doc('{"ph": "X", "args": {"x": ' + "[" * 200 + "]" * 200 + "}}"),
    "invalid UTF-8": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "name": "a\xff"}'),
    "overlong UTF-8": _doc('{"ph": "X", "name": "\xc0\xaf"}'),
    "lone surrogate": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "name": "a\\ud800"}'),
    "NUL escape": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "name": "a\\u0000"}'),
    "control byte": _doc('{"ph": "X", "name": "a\x01"}'),
    "duplicate key": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "ts": 2}'),
    "escaped key": _doc('{"ph": "X", "cat": "cpu_op", "t\\u0073": 1}'),
    "bool start": _doc('{"ph": "X", "cat": "cpu_op", "ts": true}'),
    "string start": _doc('{"ph": "X", "cat": "cpu_op", "ts": "12"}'),
    "negative duration": _doc('{"ph": "X", "cat": "kernel", "ts": 1, "dur": -1}'),
    "null duration": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": null}'),
    "list pid": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "pid": [1]}'),
    "float tid": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "tid": 1.5}'),
    "number category": _doc('{"ph": "X", "cat": 5, "ts": 1}'),
    "odd External id": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, '
                            '"args": {"External id": 1.5}}'),
    "string correlation": _doc('{"ph": "X", "cat": "cuda_runtime", "ts": 1, '
                               '"args": {"correlation": "1"}}'),
    "int name": _doc('{"ph": "X", "cat": "cpu_op", "ts": 1, "name": 5}'),
    "args a list": _doc('{"ph": "X", "args": [1]}'),
    "event a number": _doc("5"),
    "trailing comma": b'{"traceEvents": [' + _OK.encode() + b",]}",
    "extra brace": _doc('{"ph": "X"}}'),
    "bad literal": _doc('{"ph": "X", "x": nul}'),
    "bad number": _doc('{"ph": "X", "x": 01}'),
    "bad escape": _doc('{"ph": "X", "x": "\\q"}'),
    "form feed between events": b'{"traceEvents": [' + _OK.encode() + b"\f]}",
    "launch grid past int64": _doc('{"ph": "X", "cat": "kernel", "ts": 1, "args": '
                                   '{"device": 0, "grid": [9223372036854775808, 1, 1], '
                                   '"block": [128, 1, 1]}}'),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_bytes_fall_back_to_the_old_answer(tmp_path: Path, name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile or unusual bytes: the scanner gives up (never a different answer, never a
    crash), and parsing gives what the old readers give, kernels or error."""
    path = tmp_path / "h.json"
    path.write_bytes(HOSTILE[name])
    with pytest.raises(_events.Fallback):
        _scan.scan(path, {}, "h")
    assert _outcome(path, True, monkeypatch) == _outcome(path, False, monkeypatch)


def test_every_cut_of_an_event_asks_for_more() -> None:
    """An event cut at any byte: the scanner asks for more from the event's first byte
    (status 0; after the whole event, from its end), never reads past the buffer; fed
    whole, it ends (1)."""
    text = ('{"ph": "X", "cat": "cpu_op", "name": "a\\u00e9\\ud83d\\ude00\u00e9", "pid": 1, '
            '"tid": "t", "ts": -1.5e3, "dur": 2, "args": {"Input Dims": [[1, 2]], '
            '"Input type": ["float"], "Concrete Inputs": [""], "x": {"y": [true, false, '
            'null]}}}]').encode()
    for n in range(len(text)):
        sc = _core.TraceScanner()
        status, pos = sc.feed(text[:n], 0)
        assert (status, pos) == (0, 0 if n < len(text) - 1 else n), n
    status, pos = _core.TraceScanner().feed(text, 0)
    assert (status, pos) == (1, len(text))


def test_fallback_reads_the_file_the_old_way(tmp_path: Path) -> None:
    """A trace the scanner gives up on (an External id of an unusual type, which the
    collector keeps as an odd value) parses to what the msgspec reader gives."""
    src = ROOT / "tests" / "data" / "traces" / "encoder_layer_train.json.gz"
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "odd", "ts": 1.0,
                               "dur": 1.0, "pid": 1, "tid": 1, "args": {"External id": "e"}})
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(_events.Fallback):
        _scan.scan(path, {}, "t")
    a = parse(_load.stream(path))
    b = parse(doc)
    assert [repr(k) for k in a.kernels] == [repr(k) for k in b.kernels]
