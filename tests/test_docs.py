"""The documentation site: docs/index.md is the README, and ``mkdocs build --strict`` passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADER = ("<!-- Generated from README.md by tests/test_docs.py::test_index_is_the_readme; "
          "edit README.md. -->\n\n")


def index_text() -> str:
    """docs/index.md as it must be: the README, links rewritten for docs/."""
    text = (ROOT / "README.md").read_text()
    text = text.replace("](docs/", "](")
    return HEADER + text


def test_index_is_the_readme() -> None:
    """Fails when README.md changed without docs/index.md (regenerate: ROOFLINE_WRITE_DOCS=1)."""
    path = ROOT / "docs" / "index.md"
    if os.environ.get("ROOFLINE_WRITE_DOCS"):
        path.write_text(index_text())
    assert path.read_text() == index_text(), "docs/index.md is stale: rerun with " \
        "ROOFLINE_WRITE_DOCS=1 python -m pytest tests/test_docs.py"


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("mkdocs_jupyter")
    import roofline

    package_parent = str(Path(roofline.__file__).resolve().parents[1])
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg",  # kernels import it
           "PYTHONPATH": os.pathsep.join([package_parent,
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
         str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # mkdocs' own warnings (what --strict turns into errors, and what --quiet used to hide);
    # the executing kernels' "[IPKernelApp] WARNING" lines are not the site's
    warned = [line for line in (proc.stdout + proc.stderr).splitlines()
              if line.startswith("WARNING")]
    assert not warned, "\n".join(warned)
    trace = (tmp_path / "site" / "notebooks" / "trace_encoder_layer" / "index.html").read_text()
    assert "lost" in trace and "per step" in trace  # the executed notebook's output
    for page in ("trace", "torch", "validate", "bench", "calibrate", "plan"):
        assert (tmp_path / "site" / "api" / page / "index.html").exists()
    assert (tmp_path / "site" / "plan" / "index.html").exists()
    ops = (tmp_path / "site" / "api" / "ops" / "index.html").read_text()
    assert "grouped_gemm" in ops and "Estimate" in ops  # rendered from the docstrings
    assert (tmp_path / "site" / "notebooks" / "quickstart" / "index.html").exists()
