"""What a new user trips on at the command line: no traceback, one clear line, a non-zero exit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from roofline.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tests" / "data" / "traces" / "encoder_layer_train.json.gz"


def _cpu_rows(path: Path, n: int = 15) -> Path:
    rows = [{"id": f"c-{i}", "family": "cpu_gemm_fp32", "hardware": "AMD EPYC", "op": "gemm",
             "args": {"m": 256 * (i + 1), "k": 256, "n": 256, "dtype": "fp32"},
             "measured": 1e-3} for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def test_validate_with_nothing_predictable_says_what_to_pass(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _cpu_rows(tmp_path / "m.jsonl")
    for fmt in ("table", "csv", "json"):
        assert main(["validate", str(path), "--format", fmt]) == 2
        out = capsys.readouterr()
        assert out.out == ""
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: validate: none of the 15 rows")
        assert "--hardware NAME" in lines[0] and "--profile FILE.json" in lines[0]
        assert "'AMD EPYC'" in lines[0] and "list_hardware()" not in lines[0]
    assert main(["validate", str(path), "--hardware", "H100 SXM", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["table"][0]["rows"] == 15


def test_calibrate_without_a_gpu_says_so(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["calibrate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: calibrate: torch sees no GPU") and "--device cpu" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_calibrate_missing_input_names_the_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "-i", "no/such/rows.jsonl"]) == 2
    assert "no/such/rows.jsonl: no such file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["explain-trace", str(TRACE), "--plot", "out.png"],
    ["validate", "rows.jsonl", "--plot", "out.png"],
])
def test_plot_without_matplotlib_names_the_install(
        argv: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: --plot needs matplotlib: pip install roofline[plot]"


def test_library_plot_without_matplotlib_names_the_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline._mpl import new_figure

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install roofline\[plot\]"):
        new_figure((4, 3))
