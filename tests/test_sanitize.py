"""Runs scripts/sanitize.sh (ASan + UBSan build of the core, C++-facing tests under it) when
ROOFLINE_SANITIZE=1; skipped otherwise (it rebuilds the core: minutes)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(os.environ.get("ROOFLINE_SANITIZE") != "1",
                    reason="set ROOFLINE_SANITIZE=1 to build and run under ASan/UBSan")
def test_core_is_clean_under_sanitizers() -> None:
    run = subprocess.run([str(ROOT / "scripts" / "sanitize.sh")], cwd=ROOT,
                         capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
