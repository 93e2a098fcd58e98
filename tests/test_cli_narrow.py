"""Every table-printing command keeps its numbers whole in narrow terminals: no cell is cut to
``…`` at COLUMNS=60/80/100, and every number the wide (240-column) table shows appears whole
in the narrow one, except those of the columns the narrow table says it left out (``left out
at this width: ...``); a table that still does not fit is printed at the narrowest width that
keeps its cells whole, and never cropped (its right border is on every row)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from roofline.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRACE = str(ROOT / "tests" / "data" / "traces" / "encoder_layer_train.json.gz")
HW = ["--hardware", "H100 SXM"]

COMMANDS = {
    "plan": ["plan", "Llama-3-70B", "--gpus", "64", *HW, "--seq-len", "8192",
             "--global-batch-tokens", "2097152", "--top", "5"],
    "explain-trace": ["explain-trace", TRACE, *HW, "--top", "8"],
    "gemm": ["gemm", "8192", "8192", "8192", *HW],
    "explain": ["explain", "gemm", "8192", "8192", "8192", "--measured-us", "1500", *HW],
    "hardware list": ["hardware", "list"],
    "hardware show": ["hardware", "show", "H100 SXM"],
    "model": ["model", "Llama-3-8B", "--phase", "prefill", "--seq-len", "4096", *HW],
    "float8": ["float8", *HW],
    "fusion": ["fusion", "batch", "4096", "4096", "4096", "--count", "3", *HW],
    "validate": ["validate", "ROWS", *HW],
}

#: Numbers, with thousands separators and decimals; a time measured while the command runs
#: (the plan's "searched in 0.84 s") is left out.
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
_CLOCK = re.compile(r"searched in [\d.]+ s")


def _numbers(text: str) -> Counter[str]:
    return Counter(_NUMBER.findall(_CLOCK.sub("", text)))


_LEFT_OUT = re.compile(r"left out at this width: (.*?)\s+\(a\s+wider", re.S)


def _without_columns(text: str, headers: list[str]) -> str:
    """``text`` (a wide, one-line-header rich table) with the cells of ``headers`` blanked."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines)
              if line.startswith("┃") and any(f" {h} " in line for h in headers))
    names = [c.strip() for c in lines[at].split("┃")]
    drop = {names.index(h) for h in headers if h in names}
    out = lines[:at]
    for line in lines[at:]:
        if line.startswith("└"):  # the end of that table: later tables keep their cells
            drop = set()
        if line.startswith("│"):
            cells = line.split("│")
            line = "│".join("" if i in drop else c for i, c in enumerate(cells))
        out.append(line)
    return "\n".join(out)


def _run(argv: list[str], columns: int, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    status = main(argv)
    out = capsys.readouterr().out
    assert status == 0, (argv, out)
    return out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_numbers_stay_whole_in_narrow_terminals(name: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    argv = list(COMMANDS[name])
    if "ROWS" in argv:
        rows = tmp_path / "rows.jsonl"
        rows.write_text("\n".join(json.dumps({
            "id": f"r{i}", "family": "gpu_gemm_bf16_with_a_long_family_name", "op": "gemm",
            "hardware": "H100 SXM", "args": {"m": 1024 * (i + 1), "k": 4096, "n": 4096,
                                             "dtype": "bf16"}, "measured": 1e-4 * (i + 1)})
            for i in range(4)))
        argv[argv.index("ROWS")] = str(rows)
    wide_text = _run(argv, 240, monkeypatch, capsys)
    assert "left out at this width" not in wide_text
    assert sum(_numbers(wide_text).values()) > 3
    for columns in (60, 80, 100):
        out = _run(argv, columns, monkeypatch, capsys)
        assert "…" not in out, f"{name} at COLUMNS={columns}:\n{out}"
        rows = [line for line in out.splitlines() if line.startswith(("│", "┃"))]
        assert all(line.endswith(("│", "┃")) for line in rows), f"cropped:\n{out}"
        left_out = _LEFT_OUT.search(out)
        headers = (" ".join(left_out.group(1).split()).split(", ") if left_out else [])
        wide = _numbers(_without_columns(wide_text, headers) if headers else wide_text)
        missing = wide - _numbers(out)
        assert not missing, f"{name} at COLUMNS={columns} lost {dict(missing)}:\n{out}"
