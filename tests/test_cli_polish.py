"""CLI polish: --format on every command, JSON metadata, rich tables, broken pipes, messages
in CLI terms, mode aliases, the GEMM footnote, and no pandas / torch on the CLI's path."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import roofline
import roofline as rl
from roofline.cli import main
from roofline.cli.model import _per_layer

#: Where the imported package lives (the checkout's python/ or site-packages), for
#: subprocesses that must import the same roofline.
SRC = str(Path(roofline.__file__).resolve().parents[1])

ROOT = Path(__file__).resolve().parents[1]
H100 = "H100 SXM"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
    return subprocess.run([sys.executable, "-m", "roofline", *argv], capture_output=True,
                          text=True, env=full)


COMMANDS = [
    ["float8", "--hardware", H100, "--shapes", "llama"],
    ["gemm", "4096", "4096", "4096", "--hardware", H100],
    ["hardware", "list"],
    ["hardware", "show", H100],
    ["model", "Llama-3-8B", "--kv-len", "2048", "--hardware", H100],
    ["explain", "gemm", "4096", "4096", "4096", "--measured-us", "200", "--hardware", H100],
    ["explain", "attention", "8", "32", "1", "4096", "128", "--kv-heads", "8",
     "--measured-us", "50", "--hardware", H100],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_every_command_has_every_format(capsys: pytest.CaptureFixture[str], argv: list[str],
                                        fmt: str) -> None:
    code, out, err = run(capsys, *argv, "--format", fmt)
    assert code == 0, err
    if fmt == "json":
        json.loads(out)
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows)
    else:
        assert "┏" in out  # a rich table


@pytest.mark.parametrize("argv", [c for c in COMMANDS if c[0] != "hardware"],
                         ids=lambda a: " ".join(a[:2]))
def test_json_records_version_hardware_efficiency(capsys: pytest.CaptureFixture[str],
                                                  argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["roofline_version"] == rl.__version__
    assert doc["hardware"] == H100 and doc["efficiency"] == "default"
    assert doc["command"] == argv[0]


def test_float8_json_records_the_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "float8", "--hardware", H100, "--recipe", "rowwise",
                       "--format", "json")
    assert code == 0 and json.loads(out)["recipe"] == "rowwise"


def test_model_json_and_csv_match_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["model", "Mixtral-8x7B", "--phase", "train", "--seq-len", "4096", "--hardware", H100]
    r = rl.transformer.estimate(rl.transformer.config("Mixtral-8x7B"), "train", 1,
                                seq_len=4096, hardware=H100)
    code, out, _ = run(capsys, *argv, "--format", "json")
    doc = json.loads(out)
    assert doc["model"] == "Mixtral-8x7B" and doc["phase"] == "train"
    want = r.summary()
    got = {(o["op"], o["kind"]): o for o in doc["ops"]}
    assert len(got) == len(want)
    for row in want.itertuples(index=False):
        assert got[(row.op, row.kind)]["time_s"] == pytest.approx(row.time_s, rel=1e-12)
        assert got[(row.op, row.kind)]["share"] == pytest.approx(row.share, rel=1e-12)
    per_layer = _per_layer(r)
    table = r.to_pandas()
    assert [(x["layer"], x["op"]) for x in per_layer] == list(zip(table.layer, table.op,
                                                                    strict=True))
    np.testing.assert_allclose([x["time_s"] for x in per_layer], table.time_s, rtol=1e-12)


def test_model_prints_a_rich_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "model", "Llama-3-8B", "--kv-len", "2048", "--hardware", H100,
                       "--per-layer")
    assert code == 0 and "┏" in out and "tokens/s" in out and "bound" in out


@pytest.mark.parametrize("spelling", ["train", "training", "TRAINING"])
def test_float8_mode_accepts_train_and_training(capsys: pytest.CaptureFixture[str],
                                               spelling: str) -> None:
    code, out, _ = run(capsys, "float8", "--hardware", H100, "--mode", spelling,
                       "--format", "json")
    assert code == 0 and json.loads(out)["mode"] == "training"


@pytest.mark.parametrize("spelling, phase", [("training", "train"), ("train", "train"),
                                             ("inference", "decode")])
def test_model_phase_aliases(capsys: pytest.CaptureFixture[str], spelling: str,
                             phase: str) -> None:
    code, out, err = run(capsys, "model", "Llama-3-8B", "--phase", spelling, "--seq-len", "512",
                         "--kv-len", "512", "--hardware", H100, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["phase"] == phase


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["model", "Llama-3-8B", "--phase", "prefill", "--seq-len", "10" * 10], "--seq-len"),
        (["model", "Llama-3-8B", "--phase", "prefill", "--seq-len", "10" * 12], "--seq-len"),
        (["model", "Llama-3-8B", "--phase", "train", "--seq-len", "2000000000", "--batch",
          "2", "--hardware", H100], "--seq-len"),
        (["model", "Llama-3-8B", "--phase", "train", "--seq-len", "2000000000", "--batch",
          "2000000000", "--hardware", H100], "--batch"),
        (["model", "Llama-3-8B", "--phase", "prefill", "--hardware", H100], "--seq-len"),
        (["model", "Llama-3-8B", "--kv-len", "0"], "--kv-len"),
        (["gemm", "1", "1", "1", "--dtype", "fp8", "--hardware", "V100"], "--dtype"),
        (["gemm", "1", "1", "1", "--hardware", "H999"], "--hardware"),
        (["gemm", "1", "1", "1", "--hardware", "H100"], "--table torchao"),
        (["gemm", "0", "1", "1"], "M"),
        (["float8", "--recipe", "rowwse", "--hardware", H100], "--recipe"),
    ],
)
def test_errors_speak_cli(capsys: pytest.CaptureFixture[str], argv: list[str],
                          needle: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert needle in err
    # no Python calls or argument names: hardware('x'), list_hardware(), seq_len, hw.replace
    assert not re.search(r"\w\(|\bseq_len\b|\bkv_len\b|\btransformer\.estimate\b", err), err


def test_gemm_footnote_states_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gemm", "4096", "4096", "4096", "--hardware", H100)
    assert code == 0
    text = " ".join(out.split())
    assert "^(1/4)" in text and "tiles" in text and "max(" not in text.split("┘")[-1]
    code, out, _ = run(capsys, "gemm", "4096", "4096", "4096", "--hardware", H100,
                       "--efficiency", "peak")
    assert "time = max(compute, memory, launch floor)" in " ".join(out.split())


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_broken_pipe_exits_cleanly(fmt: str) -> None:
    full = {**os.environ, "PYTHONPATH": SRC, "ROOFLINE_HARDWARE": H100}
    proc = subprocess.run(
        f"{sys.executable} -m roofline float8 --shapes sweep --format {fmt} | head -2",
        shell=True, capture_output=True, text=True, env=full)
    assert proc.returncode == 0
    assert len(proc.stdout.splitlines()) == 2
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr


def test_cli_imports_neither_pandas_nor_torch() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from roofline.cli import main\n"
        "for argv in (['float8'], ['float8', '--format', 'csv'], ['gemm', '8', '8', '8'],\n"
        "             ['model', 'Llama-3-8B', '--kv-len', '64'], ['hardware', 'list']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(argv) == 0, argv\n"
        "print(sorted(m for m in ('pandas', 'torch') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "ROOFLINE_HARDWARE": H100}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "[]"
