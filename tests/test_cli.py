"""Tests for the ``roofline`` command line (roofline.cli.main, python -m roofline).

Every test runs with no GPU visible (torch blocked in ``sys.modules``), no
ROOFLINE_HARDWARE and a 200-column console, unless it sets those up itself.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import roofline as rl
from roofline._format import si
from roofline.cli import main

rh = importlib.import_module("roofline.hardware")  # the module, not the function

ROOT = Path(__file__).resolve().parents[1]
H100 = "H100 SXM"
NOTE = "note: no GPU detected and no default set; using H100 SXM"


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("ROOFLINE_HARDWARE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setitem(sys.modules, "torch", None)  # hardware() sees no torch, so no GPU
    rh.set_default_hardware(None)
    yield
    rh.set_default_hardware(None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def table_rows(out: str) -> list[list[str]]:
    """Body rows of a rich table as lists of stripped cell texts."""
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in out.splitlines()
        if line.startswith("│")
    ]


def fake_torch(name: str) -> types.ModuleType:
    """A torch stand-in whose CUDA device 0 is ``name``."""
    module = types.ModuleType("torch")
    props = types.SimpleNamespace(gcnArchName="", name=name)
    module.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: True,
        get_device_name=lambda index=0: name,
        get_device_properties=lambda index=0: props,
    )
    return module


# --------------------------------------------------------------------------- float8 table


def test_float8_table_matches_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "float8", "--hardware", H100)
    assert code == 0, err
    assert err == ""
    df = rl.float8.sweep("pow2", recipe="tensorwise", hardware=H100, columns="torchao")
    rows = table_rows(out)
    assert len(rows) == len(df) == 5  # pow2: M = K = N = 1024 .. 16384
    for cells, r in zip(rows, df.itertuples(index=False), strict=True):
        assert cells[:3] == [str(r.fwd_M), str(r.fwd_K), str(r.fwd_N)]
        assert cells[3:7] == [
            si(r.r_bf16_gemm_s, "s"),
            si(r.r_fp8_gemm_s, "s"),
            si(r.r_fp8_ovhd_s, "s"),
            si(r.r_fp8_gemm_and_ovhd_s, "s"),
        ]
        assert cells[7] == f"{r.r_fp8_gemm_and_ovhd_spdp:.2f}x"
    # the 4096 cube: speedup shown to 2 decimals equals the API's
    assert float(rows[2][7].rstrip("x")) == pytest.approx(
        float(df.r_fp8_gemm_and_ovhd_spdp[2]), abs=0.005
    )


def test_float8_table_title_and_headers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "float8", "--hardware", H100)
    assert code == 0
    title = out.splitlines()[0]
    hw = rl.hardware(H100)
    assert "tensorwise" in title and "training" in title and H100 in title
    assert si(hw.bf16_flops_per_s, "FLOP/s") in title  # 989.5 TFLOP/s
    assert si(hw.fp8_flops_per_s, "FLOP/s") in title  # 1.979 PFLOP/s
    assert si(hw.mem_bytes_per_s, "B/s") in title  # 3.35 TB/s
    for header in ("M", "K", "N", "bf16 GEMMs", "fp8 GEMMs", "fp8 overhead", "fp8 total",
                   "speedup"):
        assert header in out
    assert "µs" in out and "ms" in out


def test_float8_explicit_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "float8", "--hardware", H100, "--shapes", "4096,4096,4096;8192,8192,8192",
        "1024,2048,512",
    )
    assert code == 0, err
    rows = table_rows(out)
    assert [r[:3] for r in rows] == [
        ["4096", "4096", "4096"], ["8192", "8192", "8192"], ["1024", "2048", "512"]
    ]
    df = rl.float8.sweep([(4096, 4096, 4096), (8192, 8192, 8192), (1024, 2048, 512)],
                         hardware=H100, columns="torchao")
    assert [r[-1] for r in rows] == [f"{s:.2f}x" for s in df.r_fp8_gemm_and_ovhd_spdp]


def test_float8_named_shape_set_shows_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "float8", "--hardware", "B200", "--shapes", "llama",
                       "--recipe", "nvfp4")
    assert code == 0
    rows = table_rows(out)
    assert [r[0] for r in rows] == ["attn.wqkv", "attn.w0", "ffn.w13", "ffn.w2"]
    assert rows[0][1:4] == ["16384", "8192", "1280"]  # M = 4 * 4096
    assert "fp4 GEMMs" in out and "nvfp4" in out.splitlines()[0]
    df = rl.float8.sweep("llama", recipe="nvfp4", hardware="B200", columns="torchao")
    assert [r[-1] for r in rows] == [f"{s:.2f}x" for s in df.r_fp8_gemm_and_ovhd_spdp]


@pytest.mark.parametrize("shapes", ["pow2_extended", "square", "sweep"])
def test_float8_shape_sets_row_count(capsys: pytest.CaptureFixture[str], shapes: str) -> None:
    code, out, _ = run(capsys, "float8", "--hardware", H100, "--shapes", shapes)
    assert code == 0
    assert len(table_rows(out)) == len(rl.float8.shapes(shapes))  # 10, 8, 8**3 = 512


# --------------------------------------------------------------------------- float8 csv / json


def test_float8_csv_equals_api(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "float8", "--hardware", H100, "--format", "csv")
    assert code == 0 and err == ""
    got = pd.read_csv(io.StringIO(out), dtype={"name": str})
    want = rl.float8.sweep("pow2", hardware=H100, columns="torchao")
    assert list(got.columns) == list(want.columns)
    assert list(got.name) == list(want.name)
    for col in want.columns[1:]:
        np.testing.assert_allclose(got[col].to_numpy(), want[col].to_numpy(), rtol=1e-12)
    assert got.r_fp8_gemm_s[0] < 1e-3  # seconds, not µs


def test_float8_options_reach_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "float8", "--hardware", "H200", "--recipe", "rowwise", "--mode", "inference",
        "--fuse-with-prev", "--efficiency", "peak", "--shapes", "square", "--format", "csv",
    )
    assert code == 0
    got = pd.read_csv(io.StringIO(out), dtype={"name": str})
    want = rl.float8.sweep("square", recipe="rowwise", hardware="H200", mode="inference",
                           fuse_with_prev=True, efficiency="peak", columns="torchao")
    np.testing.assert_allclose(got.r_fp8_gemm_and_ovhd_spdp, want.r_fp8_gemm_and_ovhd_spdp,
                               rtol=1e-12)
    default = rl.float8.sweep("square", hardware="H200", columns="torchao")
    assert not np.allclose(want.r_fp8_gemm_and_ovhd_s, default.r_fp8_gemm_and_ovhd_s)


def test_float8_json_equals_api(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "float8", "--hardware", H100, "--format", "json",
                         "--shapes", "llama")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["roofline_version"] == rl.__version__ and doc["hardware"] == H100
    assert doc["recipe"] == "tensorwise" and doc["efficiency"] == "default"
    assert doc["mode"] == "training" and doc["fuse_with_prev"] is False
    records = doc["rows"]
    want = rl.float8.sweep("llama", hardware=H100, columns="torchao")
    assert [r["name"] for r in records] == list(want.name)
    assert set(records[0]) == set(want.columns)
    for rec, (_, row) in zip(records, want.iterrows(), strict=True):
        assert rec["fwd_M"] == row.fwd_M
        assert rec["r_fp8_gemm_and_ovhd_spdp"] == pytest.approx(row.r_fp8_gemm_and_ovhd_spdp,
                                                                rel=1e-12)


# --------------------------------------------------------------------------- default hardware


def test_default_hardware_note_when_no_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "float8")
    assert code == 0
    assert NOTE in err
    assert "--hardware" in err and "ROOFLINE_HARDWARE" in err
    assert "H100 SXM" in out.splitlines()[0]
    # csv: the note goes to stderr only, stdout stays machine-readable
    code, out, err = run(capsys, "float8", "--format", "csv")
    assert code == 0 and NOTE in err
    assert out.splitlines()[0].startswith("name,fwd_M,")
    want = rl.float8.sweep("pow2", hardware=H100, columns="torchao")
    got = pd.read_csv(io.StringIO(out), dtype={"name": str})
    np.testing.assert_allclose(got.r_fp8_gemm_and_ovhd_spdp, want.r_fp8_gemm_and_ovhd_spdp)


def test_detected_gpu_is_used(capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch("NVIDIA H200"))
    code, out, err = run(capsys, "float8")
    assert code == 0 and err == ""
    assert "on H200" in out.splitlines()[0]


def test_env_default_is_used(capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOFLINE_HARDWARE", "B200")
    code, out, err = run(capsys, "float8")
    assert code == 0 and err == ""
    assert "on B200" in out.splitlines()[0]


def test_unknown_detected_gpu_is_an_error(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch("NVIDIA Quantum X9000"))
    code, out, err = run(capsys, "float8")
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "Quantum X9000" in err


def test_hardware_from_json_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    hw = rl.hardware(H100).replace(name="mine", mem_bytes_per_s=2.4e12)
    path.write_text(json.dumps(hw.to_dict()))
    code, out, _ = run(capsys, "float8", "--hardware", str(path), "--format", "csv")
    assert code == 0
    got = pd.read_csv(io.StringIO(out))
    want = rl.float8.sweep("pow2", hardware=hw, columns="torchao")
    np.testing.assert_allclose(got.r_fp8_gemm_and_ovhd_s, want.r_fp8_gemm_and_ovhd_s)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["float8", "--hardware", "H100 SMX"], "close matches: H100 SXM"),
        (["float8", "--hardware", "H100"], "ambiguous"),
        (["float8", "--recipe", "rowwse", "--hardware", H100], "did you mean 'rowwise'"),
        (["float8", "--shapes", "4096,4096", "--hardware", H100], "M,K,N"),
        (["float8", "--shapes", "pow3", "--hardware", H100], "did you mean 'pow2'"),
        (["float8", "--shapes", "0,4096,4096", "--hardware", H100], "positive integer"),
        (["float8", "--hardware", "A100 SXM 80GB"], "no fp8 peak"),
        (["float8", "--mode", "serving"], "invalid choice"),
        (["float8", "--hardware", H100, "--mode", "inference", "--fuse-with-prev",
          "--efficiency", "torchao"], "no model for fused inference casts"),
        (["float8", "--hardware", "missing.json"], "cannot read missing.json"),
        (["gemm", "0", "4096", "4096", "--hardware", H100], "M: must be a positive integer"),
        (["gemm", "x", "4096", "4096"], "M: expected an integer, got 'x'"),
        (["gemm", "1", "1", "1", "--dtype", "fp7", "--hardware", H100],
         "--dtype: unknown dtype 'fp7'"),
        (["hardware", "show", "nope"], "unknown hardware 'nope'"),
        (["hardware", "list", "--table", "mine"], "invalid choice"),
        (["bogus"], "invalid choice"),
        ([], "required"),
        (["hardware"], "required"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("error: ")
    assert err.count("\n") == 1  # one line
    assert "Traceback" not in err
    assert expected in err


# --------------------------------------------------------------------------- gemm


def test_gemm_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "gemm", "4096", "4096", "4096", "--dtype", "fp8",
                         "--hardware", H100)
    assert code == 0, err
    e = rl.gemm(4096, 4096, 4096, dtype="fp8", hardware=H100)
    cells = {r[0]: r[1] for r in table_rows(out)}
    assert cells["FLOPs"] == si(2 * 4096**3, "FLOP")  # 2*4096^3 = 137.4 GFLOP
    assert cells["bytes"] == si(e.bytes, "B")
    assert cells["intensity"] == f"{e.intensity:.4g} FLOP/B"
    assert cells["predicted time"] == si(e.time_s, "s")
    assert cells["compute"] == si(e.compute_s, "s")
    assert cells["memory"] == si(e.memory_s, "s")
    assert cells["overhead"] == si(e.overhead_s, "s")
    assert cells["bound"] == e.bound == "compute"
    assert cells["achieved"] == si(e.flops / e.time_s, "FLOP/s")


def test_gemm_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gemm", "1", "4096", "4096", "--batch", "8", "--hardware", "B200",
                       "--efficiency", "peak", "--format", "json")
    assert code == 0
    data = json.loads(out)
    e = rl.gemm(1, 4096, 4096, batch=8, hardware="B200", efficiency="peak")
    for key in ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes"):
        assert data[key] == pytest.approx(getattr(e, key), rel=1e-12)
    assert data["flops"] == 2 * 8 * 1 * 4096 * 4096  # 268435456
    assert data["bound"] == "memory"
    assert data["hardware"] == "B200"
    assert data["achieved_flops_per_s"] == pytest.approx(e.flops / e.time_s)
    assert data["peak_flops_per_s"] == rl.hardware("B200").bf16_flops_per_s


# --------------------------------------------------------------------------- hardware


def test_hardware_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "hardware", "list")
    assert code == 0
    rows = {r[0]: r for r in table_rows(out)}
    assert set(rows) == set(rl.list_hardware())
    # memory = CUDA's total, 81090 MiB x 2**20 = 85.029e9 B (the "80GB" label is 80e9)
    assert rows[H100][1:] == ["NVIDIA", "989.5", "1979", "3.35", "85.029", "132"]
    # H100 NVL "94GB": CUDA's 95320 MiB x 2**20 = 99.950e9 B (hardware-notes section 43)
    assert rows["H100 NVL"][5] == "99.9503"
    assert rows["H200 NVL"][5] == "141"  # no device total found: the decimal label
    assert rows["A100 SXM 80GB"][3] == "—"  # no fp8


def test_hardware_list_torchao_and_machine_formats(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "hardware", "list", "--table", "torchao")
    assert code == 0
    assert [r[0] for r in table_rows(out)] == rl.list_hardware("torchao")
    code, out, _ = run(capsys, "hardware", "list", "--format", "json")
    assert [d["name"] for d in json.loads(out)] == rl.list_hardware()
    code, out, _ = run(capsys, "hardware", "list", "--format", "csv")
    df = pd.read_csv(io.StringIO(out))
    assert list(df.name) == rl.list_hardware()
    assert df.set_index("name").loc[H100, "mem_bytes_per_s"] == 3.35e12


def test_hardware_show(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "hardware", "show", "h100-sxm5")  # an alias
    assert code == 0
    hw = rl.hardware(H100)
    cells = {r[0]: r[1] for r in table_rows(out) if r[0]}
    assert cells["name"] == H100
    assert cells["bf16_flops_per_s"] == "989.5 TFLOP/s"
    assert cells["mem_bytes_per_s"] == "3.35 TB/s"
    assert cells["mem_capacity_bytes"] == "85.03 GB"  # 81090 MiB, as CUDA reports it
    assert cells["sms"] == "132"
    assert cells["fp4_flops_per_s"] == "—"
    assert {"sources", "notes", "device_names", "aliases"} <= set(cells)
    assert hw.sources.split(";")[0] in out


def test_hardware_show_unquoted_name_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "hardware", "show", "H100", "SXM", "--format", "json")
    assert code == 0
    assert json.loads(out) == rl.hardware(H100).to_dict()
    code, out, _ = run(capsys, "hardware", "show", "NVIDIA H100", "--table", "torchao",
                       "--format", "json")
    assert code == 0
    assert json.loads(out)["mem_bytes_per_s"] == 2.4e12  # torchao's (Meta variant) number


def test_hardware_show_defaults_to_detected(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "hardware", "show", "--format", "json")
    assert code == 0 and NOTE in err
    assert json.loads(out)["name"] == H100


# --------------------------------------------------------------------------- misc


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"roofline {rl.__version__}"
    code, out, _ = run(capsys, "float8", "--help")
    assert code == 0 and "--recipe" in out and "tensorwise" in out


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    # the roofline this test run imports (the installed package in CI, python/ in development)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(rl.__path__[0]))
    env.pop("ROOFLINE_HARDWARE", None)
    return subprocess.run([sys.executable, *args, "-c", code] if code else [sys.executable, *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False)


def test_import_roofline_stays_light() -> None:
    probe = "print([m for m in ('rich', 'pandas', 'torch') if m in sys.modules])"
    result = _python(f"import roofline, sys; {probe}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    # the CLI module too imports rich and pandas only when a command needs them
    result = _python(f"import roofline.cli, sys; {probe}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_python_dash_m_roofline() -> None:
    result = _python("", "-m", "roofline", "float8", "--hardware", H100, "--shapes",
                     "4096,4096,4096", "--format", "csv")
    assert result.returncode == 0, result.stderr
    df = pd.read_csv(io.StringIO(result.stdout))
    want = rl.float8.sweep([(4096, 4096, 4096)], hardware=H100, columns="torchao")
    assert df.r_fp8_gemm_and_ovhd_spdp[0] == pytest.approx(want.r_fp8_gemm_and_ovhd_spdp[0])
    result = _python("", "-m", "roofline", "gemm", "1", "2", "3", "--hardware", "nope")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


def test_lazy_subcommand_placeholders_match_their_parsers() -> None:
    # build_parser(command) loads only the module of the command that runs; the placeholders
    # of the others carry the same --help line as their full parsers.
    from roofline.cli.main import _LAZY_COMMANDS, build_parser

    full = build_parser()
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name, _module, summary in _LAZY_COMMANDS:
        assert helps[name] == summary, name
    lean = build_parser("float8")
    sub = next(a for a in lean._actions if isinstance(a, argparse._SubParsersAction))
    assert [c.dest for c in sub._choices_actions] == list(helps)
