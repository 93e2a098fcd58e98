"""One rule for a missing file: FileNotFoundError naming the path, from every entry point."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import roofline as rl
from roofline.cli import main
from roofline.hardware.profile import load_profile

CASES: dict[str, Callable[[Path], Any]] = {
    "trace.explain": lambda p: rl.trace.explain(p, hardware="H100 SXM"),
    "Hardware.from_file": rl.Hardware.from_file,
    "validate": rl.validate,
    "from_hf": rl.transformer.from_hf,
    "load_profile": load_profile,
    "hardware(profile=)": lambda p: rl.hardware("H100 SXM", profile=p),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_missing_file_is_file_not_found_naming_the_path(name: str, tmp_path: Path) -> None:
    path = tmp_path / "missing_thing.json"
    with pytest.raises(FileNotFoundError, match="missing_thing.json"):
        CASES[name](path)
    with pytest.raises(FileNotFoundError, match="missing_thing.json"):
        CASES[name](str(path))


@pytest.mark.parametrize("argv", [
    ["explain-trace", "missing_thing.json"],
    ["validate", "missing_thing.jsonl"],
    ["gemm", "64", "64", "64", "--hardware", "missing_thing.json"],
    ["validate", "x.jsonl", "--profile", "missing_thing.json"],
    ["model", "missing_thing/config.json"],
])
def test_cli_missing_file_is_one_error_line(argv: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "missing_thing" in err and "\n" not in err
