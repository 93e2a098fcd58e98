"""A user's ``mypy --strict`` script with the README's examples type-checks against roofline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_readme_user_script_passes_mypy_strict() -> None:
    pytest.importorskip("mypy")
    # follow-imports=silent: roofline's own modules are checked by the project's mypy run;
    # here they act as an installed, typed (py.typed) package does for its users.
    env = {**os.environ, "MYPYPATH": str(ROOT / "python")}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--no-incremental", "--cache-dir", os.devnull,
         "--config-file", str(ROOT / "tests" / "typing" / "mypy.ini"),
         str(ROOT / "tests" / "typing" / "readme_user.py")],
        capture_output=True, text=True, env=env, cwd=ROOT / "tests" / "typing",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
