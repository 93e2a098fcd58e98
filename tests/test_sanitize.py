"""Runs scripts/sanitize.sh (ASan + UBSan build of the core, the C++-facing tests under it).

It runs in CI (``CI=true``, as ``.ci/run`` is invoked there) and wherever ``ROOFLINE_SANITIZE=1``;
``ROOFLINE_SANITIZE=0`` turns it off. It rebuilds the core with the sanitizers (minutes on two
cores), so a plain local ``pytest`` skips it. The build needs cmake, ninja, pybind11 and
cmeel-eigen in the environment (the ``test`` extra installs them) and the compiler's libasan.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _wanted() -> bool:
    flag = os.environ.get("ROOFLINE_SANITIZE", "").strip()
    if flag:
        return flag == "1"
    return os.environ.get("CI", "").strip().lower() == "true"


@pytest.mark.slow
@pytest.mark.skipif(not _wanted(), reason="runs in CI or with ROOFLINE_SANITIZE=1 (it rebuilds "
                    "the core under ASan/UBSan: minutes)")
def test_core_is_clean_under_sanitizers() -> None:
    missing = [tool for tool in ("cmake", "ninja", "g++") if shutil.which(tool) is None]
    assert not missing, f"the sanitizer build needs {missing} on PATH"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([str(ROOT / "scripts" / "sanitize.sh")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert " passed" in run.stdout, run.stdout[-4000:]
