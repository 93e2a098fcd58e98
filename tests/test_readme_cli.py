"""The README's command-line output blocks show what the code prints: each block that starts
with ``$ roofline ...`` (or follows a one-line ```bash block running ``roofline ...``) is run,
and every number it shows must appear in the real output (an abbreviated block may leave rows
out, never change a figure)."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from pathlib import Path

import pytest

from roofline.cli import main

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
#: Figures measured while the command runs (the plan's search time).
_CLOCK = re.compile(r"searched in [\d.]+ s")


def _blocks() -> list[tuple[str, str]]:
    """(command, shown output) pairs of the README."""
    fences = _FENCE.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    out = []
    for i, (lang, body) in enumerate(fences):
        lines = body.strip("\n").splitlines()
        if lang == "" and lines and lines[0].startswith("$ roofline "):
            out.append((lines[0][2:], "\n".join(lines[1:])))
        elif (lang == "bash" and len(lines) == 1 and lines[0].startswith("roofline ")
              and i + 1 < len(fences) and fences[i + 1][0] == ""):
            out.append((lines[0], fences[i + 1][1]))
    # bench measures this machine and calibrate fits what it measured: not reproducible
    return [(c, s) for c, s in out if c.split()[1] not in ("bench", "calibrate")]


BLOCKS = _blocks()


def _numbers(text: str) -> Counter[str]:
    return Counter(_NUMBER.findall(_CLOCK.sub("", text)))


def test_the_readme_has_cli_blocks() -> None:
    assert {c.split()[1] for c, _ in BLOCKS} >= {"plan", "explain-trace"}


@pytest.mark.parametrize("command, shown", BLOCKS, ids=[c[:60] for c, _ in BLOCKS])
def test_readme_cli_figures_are_what_the_code_prints(
        command: str, shown: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    monkeypatch.chdir(ROOT)
    assert main(shlex.split(command)[1:]) == 0
    printed = capsys.readouterr().out
    stale = _numbers(shown) - _numbers(printed)
    assert not stale, f"README figures not printed by `{command}`: {sorted(stale)}"
