"""The `roofline model` subcommand: table, csv/json parity with rl.transformer, errors."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

import roofline as rl
from roofline.cli import main

ARGS = ["model", "Llama-3-8B", "--phase", "decode", "--batch", "8", "--kv-len", "2048",
        "--hardware", "H100 SXM"]


def test_model_table_mentions_totals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    assert "Llama-3-8B" in out and "tokens/s" in out


def test_model_json_matches_api(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--format", "json"]) == 0
    text = capsys.readouterr().out
    doc = json.loads(text)
    est = rl.transformer.estimate(rl.transformer.config("Llama-3-8B"), phase="decode", batch=8,
                                  kv_len=2048, hardware="H100 SXM")
    # the json carries the API's step time, in SI seconds
    t = est.totals["time_s"]
    assert any(abs(v - t) <= 1e-9 * t for v in _numbers(doc))


def test_model_csv_parses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(frame) > 5


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["model", "Llama-9-9B"], "Llama-9-9B"),
        (["model", "Llama-3-8B", "--batch", "0", "--hardware", "H100 SXM"], "batch"),
        (["model", "Llama-3-8B", "--hardware", "H999"], "H999"),
    ],
)
def test_model_errors_exit_2(argv: list[str], needle: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and needle in err


def _numbers(doc: object) -> list[float]:
    if isinstance(doc, dict):
        return [x for v in doc.values() for x in _numbers(v)]
    if isinstance(doc, list):
        return [x for v in doc for x in _numbers(v)]
    return [float(doc)] if isinstance(doc, (int, float)) and not isinstance(doc, bool) else []
