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


def test_measurement_faster_than_the_roofline_is_flagged(
        capsys: pytest.CaptureFixture[str]) -> None:
    import roofline as rl
    from roofline.explain import ImpossibleMeasurementWarning

    e = rl.gemm(8192, 8192, 8192, hardware="H100 SXM")
    roof = 2 * 8192**3 / rl.hardware("H100 SXM").bf16_flops_per_s  # 1.111 ms at the peak
    with pytest.warns(ImpossibleMeasurementWarning, match="faster than the datasheet"):
        x = rl.explain(e, 0.0016e-6)
    assert x.beats_roofline is True and "IMPOSSIBLE" in x.reading and "IMPOSSIBLE" in repr(x)
    assert x.roofline_s == pytest.approx(roof, rel=1e-9)
    assert rl.explain(e, roof * 1.05).beats_roofline is False  # within 10 % of it: plausible
    argv = ["explain", "gemm", "8192", "8192", "8192", "--hardware", "H100 SXM"]
    assert main([*argv, "--measured-us", "0.0016"]) == 1
    out = capsys.readouterr()
    assert "IMPOSSIBLE" in out.out and "%" not in out.out.split("IMPOSSIBLE")[0][-20:]
    assert out.err.startswith("warning: --measured-us 0.0016 is faster than the datasheet")
    assert main([*argv, "--measured-us", "0.0016", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["beats_roofline"] is True
    assert main([*argv, "--measured-us", "1500"]) == 0
    assert capsys.readouterr().err == ""


def test_a_measurement_far_slower_than_the_model_reads_sensibly() -> None:
    import roofline as rl
    from roofline.explain import pct_text

    e = rl.gemm(64, 64, 64, hardware="H100 SXM")
    x = rl.explain(e, 78)  # seconds, where microseconds were meant
    ratio = 78 / e.time_s
    text = repr(x)
    assert "0.0 %" not in text and f"{ratio:,.0f}x the model's prediction" in text
    assert "check its units" in x.reading
    assert pct_text(5.3317e-6) == "0.0000053 %"
    assert pct_text(28.24) == "28.2 %" and pct_text(69448688.0) == "694,487x"


def test_plan_with_no_fitting_layout_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "Llama-3-70B", "--gpus", "8", "--seq-len", "8192",
                 "--hardware", "H100 SXM"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "None" not in out.err
    assert out.err.startswith("no layout of Llama-3-70B train on 8 x H100 SXM fits: the "
                              "leanest (tp 8")
    # 0.9 of the 81090 MiB CUDA reports (85.03e9 B) = 76.53 GB
    assert "GB per GPU, over the 76.53 GB usable" in out.err


def test_cli_names_flags_from_what_the_exception_carries(
        capsys: pytest.CaptureFixture[str]) -> None:
    """No message parsing: the flag comes from ``exc.argument``; other text is untouched."""
    from roofline._errors import ArgumentValueError
    from roofline.cli._common import cli_message

    flags = {"hardware": "--hardware", "seq_len": "--seq-len", "m": "M"}
    text = "see 'roofline hardware show NAME --format json' for the hardware and seq_len"
    assert cli_message(ValueError(text), flags) == text  # "roofline --hardware show" before
    exc = ArgumentValueError("transformer.estimate", "seq_len", "must be positive, got 0",
                             "pass seq_len=...")
    assert str(exc) == "transformer.estimate: seq_len must be positive, got 0; pass seq_len=..."
    assert cli_message(exc, flags) == "--seq-len must be positive, got 0"
    assert main(["gemm", "1", "1", "1", "--dtype", "fp8", "--hardware", "V100"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --dtype fp8_e4m3: V100") and "hw.replace" not in err
    assert main(["model", "Llama-3-8B", "--phase", "prefill", "--hardware", "H100 SXM"]) == 2
    assert capsys.readouterr().err == "error: --seq-len is needed for phase 'prefill'\n"
    assert main(["gemm", "1", "1", "1", "--hardware", "H100"]) == 2
    err = capsys.readouterr().err
    assert "'H100 SXM' or 'H100 PCIe' or 'H100 NVL'" in err and "--table torchao" in err
    assert "hardware(" not in err


def test_cli_has_no_message_rewriting() -> None:
    source = (ROOT / "python" / "roofline" / "cli" / "_common.py").read_text()
    assert "import re" not in source and "re.sub" not in source
