"""roofline.bench on the CPU: schema, family selection, output file safety, Ctrl-C, skips."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

pytest.importorskip("torch")

import roofline as rl  # noqa: E402
from roofline.bench import BenchInterrupted, _timing  # noqa: E402
from roofline.bench._run import _progress_enabled  # noqa: E402
from roofline.validation import compare  # noqa: E402

#: Small, fast CPU families covering every op the quick CPU suite writes.
FAMILIES = ["gemm_fp32", "grouped_gemm_bf16", "attention_flash", "attention_flash_bwd",
            "decode_flash", "rmsnorm", "rmsnorm_bwd", "layernorm", "softmax", "cross_entropy",
            "elementwise", "launch_overhead", "gemm_fp8_*"]
CPU = rl.Hardware(name="test CPU", fp32_flops_per_s=1e11, bf16_flops_per_s=1e10,
                  mem_bytes_per_s=2e10)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> rl.bench.BenchResult:
    out = tmp_path_factory.mktemp("bench") / "m.jsonl"
    r = rl.bench.run(device="cpu", suite="quick", families=FAMILIES, out=out, progress=False)
    r.path = out  # type: ignore[attr-defined]
    return r


def test_rows_have_the_shared_schema(result: rl.bench.BenchResult) -> None:
    assert len(result) > 20
    for row in result:
        for key, typ in (("id", str), ("family", str), ("hardware", str), ("device_name", str),
                         ("op", str), ("args", dict), ("measured", float), ("unit", str),
                         ("method", str), ("source", str), ("versions", dict)):
            assert isinstance(row[key], typ), (key, row)
        assert row["family"].startswith("cpu_")
        assert math.isfinite(row["measured"]) and row["measured"] > 0
        assert row["unit"] == "s"
        assert row["versions"]["torch"] and "cuda" in row["versions"]
        if row["op"] in ("rmsnorm", "layernorm", "softmax", "cross_entropy"):
            assert row["backend"] == "eager"
        if row["op"] == "attention":
            assert row["backend"] == "flash"
    assert len({r["id"] for r in result}) == len(result)
    ops = {r["op"] for r in result}
    assert ops == {"gemm", "grouped_gemm", "attention", "rmsnorm", "layernorm", "softmax",
                   "cross_entropy", "elementwise", "launch"}


def test_file_holds_the_returned_rows(result: rl.bench.BenchResult) -> None:
    lines = Path(result.path).read_text().splitlines()  # type: ignore[attr-defined]
    assert [json.loads(line) for line in lines] == list(result)


def test_fp8_on_cpu_is_skipped_with_a_reason(result: rl.bench.BenchResult) -> None:
    reasons = {s.family: s.reason for s in result.skipped}
    assert "fp8" in reasons["cpu_gemm_fp8_tensorwise"]
    assert "cpu_gemm_fp8_rowwise" in reasons
    # nothing else was skipped, but for timing noise on a loaded CPU (a backward measured as
    # (fwd+bwd) - fwd that came out <= 0 is skipped with that reason): every other family ran
    noise = {f for f, r in reasons.items() if "noise" in r}
    assert set(reasons) - noise == {"cpu_gemm_fp8_tensorwise", "cpu_gemm_fp8_rowwise"}
    assert all(f.endswith("_bwd") for f in noise), reasons


def test_compare_predicts_the_cpu_rows(result: rl.bench.BenchResult) -> None:
    errors: list[tuple[str, str]] = []
    comparisons = compare(list(result), hardware=CPU, errors=errors)
    assert errors == []
    assert {c.id for c in comparisons} == {r["id"] for r in result}
    assert all(c.predicted_s > 0 for c in comparisons)


def test_family_filter_and_unknown_family() -> None:
    names = rl.bench.family_names("cpu")
    assert "cpu_gemm_fp32" in names and "cpu_rmsnorm_compiled" in names
    r = rl.bench.run(device="cpu", families=["cpu_launch_overhead"], progress=False)
    assert {row["family"] for row in r} == {"cpu_launch_overhead"}
    with pytest.raises(ValueError, match="unknown family 'nope'.*cpu_gemm_fp32"):
        rl.bench.run(device="cpu", families=["nope"])


def test_bad_device_and_suite() -> None:
    with pytest.raises(ValueError, match="device must be one of"):
        rl.bench.run(device="tpu")
    with pytest.raises(ValueError, match="suite must be one of"):
        rl.bench.run(device="cpu", suite="medium")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no GPU"):
            rl.bench.run(device="cuda", families=["gemm_bf16"])


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    out.write_text('{"mine": 1}\n')
    with pytest.raises(FileExistsError, match="--append.*--force"):
        rl.bench.run(device="cpu", families=["launch_overhead"], out=out)
    assert out.read_text() == '{"mine": 1}\n'
    r = rl.bench.run(device="cpu", families=["launch_overhead"], out=out, append=True,
                     progress=False)
    lines = out.read_text().splitlines()
    assert lines[0] == '{"mine": 1}' and len(lines) == 1 + len(r)
    assert r[0]["id"].endswith("-1")  # ids continue after the existing line
    rl.bench.run(device="cpu", families=["launch_overhead"], out=out, force=True,
                 progress=False)
    assert len(out.read_text().splitlines()) == len(r)


def test_ctrl_c_keeps_measured_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _timing.cpu_time
    calls = {"n": 0}

    def interrupt_after_two(fn, budget):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return real(fn, budget)

    monkeypatch.setattr(_timing, "cpu_time", interrupt_after_two)
    out = tmp_path / "m.jsonl"
    with pytest.raises(KeyboardInterrupt) as info:
        rl.bench.run(device="cpu", families=["gemm_fp32"], out=out, progress=False)
    assert isinstance(info.value, BenchInterrupted)
    assert len(info.value.rows) == 2
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    assert all(json.loads(line)["measured"] > 0 for line in lines)


def test_cli_ctrl_c_exits_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    def interrupt(fn, budget):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(_timing, "cpu_time", interrupt)
    out = tmp_path / "m.jsonl"
    assert main(["bench", "--device", "cpu", "--families", "gemm_fp32", "-o", str(out)]) == 130
    assert "kept 0 rows" in capsys.readouterr().err


def test_progress_only_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert not _progress_enabled(None, io.StringIO())
    assert _progress_enabled(True, io.StringIO())
    assert not _progress_enabled(False, io.StringIO())
    rl.bench.run(device="cpu", families=["launch_overhead"])  # stderr is not a TTY here
    assert capsys.readouterr().err == ""


def test_cli_writes_jsonl_to_stdout_and_lists_skips(
        capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    assert main(["bench", "--device", "cpu", "--families", "launch_overhead", "gemm_tf32"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert rows and all(r["op"] == "launch" for r in rows)
    assert "skipped cpu_gemm_tf32" in captured.err
    assert main(["bench", "--device", "cpu", "--list"]) == 0
    assert "cpu_gemm_fp32" in capsys.readouterr().out
