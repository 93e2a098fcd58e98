"""The streaming trace reader (trace/_load.py) and the parser's checks and linear-time steps:
events read in chunks equal json.loads' events, bad files and bad durations are clear
errors naming the event, and step detection matches a brute-force reference."""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

import roofline as rl
from roofline.trace import _load, _parse

pytest.importorskip("pandas")

HW = "H100 SXM"
TRACES = Path(__file__).parent / "data" / "traces"


def _doc(rng: random.Random, n: int) -> dict[str, Any]:
    events: list[Any] = []
    for i in range(n):
        events.append({"ph": rng.choice(["X", "s", "f", "i"]), "cat": "kernel",
                       "name": rng.choice(["a", "b\u00e9\u4e2d", "x{y}, [z]", 'q"\\']),
                       "ts": rng.choice([i, i + 0.125, 1e300, -3.5e-7]),
                       "args": {"n": [[rng.randint(0, 10**12)] * rng.randint(0, 3)],
                                "f": None, "t": True}})
        if rng.random() < 0.1:
            events.append(rng.choice([1, "s", [], {}, None, 2.5]))
    doc: dict[str, Any] = {"schemaVersion": 1234567}
    if rng.random() < 0.5:
        doc["traceEvents"] = events
        doc["deviceProperties"] = [{"name": "NVIDIA H100 80GB HBM3"}]
    else:
        doc["deviceProperties"] = [{"name": "NVIDIA H100 80GB HBM3"}]
        doc["traceEvents"] = events
    doc["tail"] = 10**30
    return doc


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_stream_equals_json_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  chunk: int) -> None:
    """Any chunking (values and numbers split anywhere, multi-byte characters cut in two),
    any whitespace, gzip or not: the same events and top-level values as json.loads."""
    monkeypatch.setattr(_load, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for trial in range(6):
        doc = _doc(rng, rng.randint(0, 40))
        indent = [None, 0, 2][trial % 3]
        text = json.dumps(doc, indent=indent, ensure_ascii=trial % 2 == 0)
        path = tmp_path / f"t{trial}.json"
        if trial % 4 == 3:
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text, encoding="utf-8")
        data, _ = _load.load(path)
        assert data["traceEvents"] == doc["traceEvents"]
        assert {k: v for k, v in data.items() if k != "traceEvents"} == \
            {k: v for k, v in doc.items() if k != "traceEvents"}
    bare = tmp_path / "bare.json"
    bare.write_text(" [ {\"ph\": \"X\"} , 7 ]\n")
    assert _load.load(bare)[0]["traceEvents"] == [{"ph": "X"}, 7]


@pytest.mark.parametrize("text, match", [
    ('{"traceEvents": [{"ph": "X"}, {"ph": ', "is not JSON"),
    ('{"traceEvents": [{"ph": "X"}]', "is not JSON"),
    ('{"traceEvents": [{"ph": "X"}]} {}', "is not JSON"),
    ('{"traceEvents": [1 2]}', "is not JSON"),
    ('{"traceEvents": {"a": 1}}', "not a Kineto trace"),
    ('{"hello": 1}', "not a Kineto trace"),
    ("{}", "not a Kineto trace"),
    ("42", "is not JSON"),
    ("", "is not JSON"),
])
def test_bad_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                   match: str) -> None:
    monkeypatch.setattr(_load, "_CHUNK", 5)
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        _load.load(path)
    with pytest.raises(ValueError, match=match):
        rl.trace.explain(path, hardware=HW)


def test_bad_utf8_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "bin.json"
    path.write_bytes(b'{"traceEvents": ["\xff\xfe"]}')
    with pytest.raises(ValueError, match="is not JSON"):
        rl.trace.explain(path, hardware=HW)


def _one_kernel(dur: Any, ts: Any = 10.0, cat: str = "kernel") -> dict[str, Any]:
    return {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0.0,
         "dur": 9.0, "args": {"Input Dims": [[64, 64], [64, 64]],
                              "Input type": ["c10::BFloat16"] * 2}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 1.0, "dur": 2.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": cat, "name": "nvjet_bad", "pid": 0, "tid": 7, "ts": ts,
         "dur": dur, "args": {"correlation": 1, "device": 0, "stream": 7}}]}


@pytest.mark.parametrize("dur, ts", [(-200.0, 10.0), (math.nan, 10.0), (math.inf, 10.0),
                                     ("abc", 10.0), (True, 10.0), (5.0, math.nan),
                                     (5.0, -math.inf), (5.0, None)])
def test_bad_durations_name_the_event(tmp_path: Path, dur: Any, ts: Any) -> None:
    """A negative, NaN or infinite duration (or start) is an error naming the event, from a
    dict and from a file (json writes NaN / Infinity literals) alike."""
    trace = _one_kernel(dur, ts)
    with pytest.raises(ValueError, match=r"'nvjet_bad'.*finite"):
        rl.trace.explain(trace, hardware=HW)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(ValueError, match=r"'nvjet_bad'.*finite"):
        rl.trace.explain(path, hardware=HW)
    cpu = _one_kernel(5.0)
    cpu["traceEvents"][0]["dur"] = dur if ts == 10.0 else 5.0
    cpu["traceEvents"][0]["ts"] = ts if ts != 10.0 else 0.0
    with pytest.raises(ValueError, match=r"'aten::mm'.*finite"):
        rl.trace.explain(cpu, hardware=HW)
    assert rl.trace.explain(_one_kernel(0.0), hardware=HW).measured_s == 0.0
    assert rl.trace.explain(_one_kernel(5), hardware=HW).measured_s == pytest.approx(5e-6)


def test_cli_exits_nonzero_on_nan_duration(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli.main import main

    path = tmp_path / "nan.json"
    path.write_text(json.dumps(_one_kernel(math.nan)))
    assert main(["explain-trace", str(path), "--hardware", HW]) != 0
    out = capsys.readouterr()
    assert "nvjet_bad" in out.err + out.out


def _periodic_reference(seq: list[str]) -> int:
    n = len(seq)
    for p in range(1, n // 2 + 1):
        if n % p == 0 and seq == seq[:p] * (n // p):
            return n // p
    return 1


def test_periodic_matches_brute_force() -> None:
    rng = random.Random(0)
    for _ in range(3000):
        block = [rng.choice("abc") for _ in range(rng.randint(1, 5))]
        seq = block * rng.randint(1, 7)
        if rng.random() < 0.3 and seq:
            seq[rng.randrange(len(seq))] = rng.choice("abcd")
        if rng.random() < 0.2:
            seq = seq[: rng.randint(0, len(seq))]
        assert _parse._periodic(seq) == _periodic_reference(seq), seq


def test_many_repeats_are_steps() -> None:
    """3,000 identical top-level ops (9,000 events): 3,000 steps, found in linear time (the
    old per-step Counter made this quadratic)."""
    recs = [{"op": "aten::mm", "shapes": [[64, 64], [64, 64]], "types": ["bf16", "bf16"],
             "measured_s": 2e-6}] * 3000
    rep = rl.trace.explain(rl.trace.synthetic_trace(recs), hardware=HW)
    assert rep.iterations == 3000
    assert rep.measured_s == pytest.approx(2e-6)
    one = rl.trace.explain(rl.trace.synthetic_trace(recs), hardware=HW, iterations=1)
    assert one.iterations == 1 and one.measured_s == pytest.approx(6e-3)


@pytest.mark.parametrize("name", sorted(p.name for p in TRACES.glob("*.json.gz")))
def test_file_dict_and_gzip_agree(tmp_path: Path, name: str) -> None:
    """The same trace streamed from .json.gz, from plain .json, and given as a dict."""
    raw = gzip.decompress((TRACES / name).read_bytes())
    plain = tmp_path / "t.json"
    plain.write_bytes(raw)
    reps = [rl.trace.explain(src, hardware=HW) for src in
            (TRACES / name, plain, json.loads(raw))]
    frames = [r.kernels() for r in reps]
    for f in frames[1:]:
        assert f.equals(frames[0])
    assert len({(r.measured_s, r.predicted_s, r.iterations) for r in reps}) == 1
