"""The README's CPU loop through the CLI: bench, then calibrate, then validate.

The fit uses one file and validation reads another measured in the same run, so validation
sees rows the fit did not use. CPU numbers are not what the model describes (its terms are
GPU physics); this checks the path and the files, not accuracy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.cli import main

pytest.importorskip("torch")

FAMILIES = ["--families", "gemm_fp32", "elementwise"]


@pytest.mark.slow
def test_bench_then_calibrate_then_validate(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fit, held_out, prof = tmp_path / "fit.jsonl", tmp_path / "held.jsonl", tmp_path / "p.json"
    for out in (fit, held_out):
        assert main(["bench", "--device", "cpu", "--quick", *FAMILIES, "--quiet",
                     "-o", str(out)]) == 0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert rows and all(r["family"].startswith("cpu_") and r["measured"] > 0 for r in rows)
    assert main(["calibrate", "-i", str(fit), "-o", str(prof)]) == 0
    assert json.loads(prof.read_text())["name"]
    capsys.readouterr()
    assert main(["validate", str(held_out), "--profile", str(prof), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    text = json.dumps(doc)
    assert "cpu_gemm_fp32" in text and "cpu_elementwise" in text
