"""Rewrite the README's command-line output blocks with what the code prints now.

Each fenced block whose first line is ``$ roofline ...`` is rerun (COLUMNS=240, from the
repository root, as tests/test_readme_cli.py runs it); a block showing a figure the command
no longer prints is replaced by the new output (blocks still right, abbreviated ones
included, are kept as written). ``bench`` and ``calibrate`` blocks (they measure this
machine) are never run. Usage, after a change that
moves a figure: ``PYTHONPATH=python python scripts/update_readme_cli.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from collections import Counter
from pathlib import Path

from roofline.cli import main

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"```\n(\$ roofline [^\n]*)\n(.*?)```", re.S)
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
_CLOCK = re.compile(r"searched in [\d.]+ s")


def _numbers(text: str) -> Counter[str]:
    return Counter(_NUMBER.findall(_CLOCK.sub("", text)))


def _run(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(shlex.split(command)[1:])
    if rc != 0:
        raise SystemExit(f"`{command}` exited {rc}")
    return out.getvalue().rstrip("\n") + "\n"


def main_() -> None:
    os.environ["COLUMNS"] = "240"
    os.chdir(ROOT)
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")

    def fresh(m: re.Match[str]) -> str:
        command, shown = m.group(1), m.group(2)
        if command.split()[2] in ("bench", "calibrate"):
            return m.group(0)
        printed = _run(command[2:])
        if not _numbers(shown) - _numbers(printed):
            return m.group(0)
        return f"```\n{command}\n{printed}```"

    readme.write_text(_BLOCK.sub(fresh, text), encoding="utf-8")


if __name__ == "__main__":
    main_()
