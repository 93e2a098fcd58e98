"""Execute every notebook in notebooks/ (committed without outputs) so none can rot."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Seconds one notebook may take (kernel start included).
BUDGET_S = 60


def test_there_are_notebooks() -> None:
    names = {p.name for p in NOTEBOOKS}
    assert {"quickstart.ipynb", "seed_002_float8_roofline.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(path, as_version=4)
    package_parent = str(Path(rl.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [package_parent, *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(nb, timeout=BUDGET_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    assert elapsed < BUDGET_S, f"{path.name} took {elapsed:.1f} s"


def test_trace_notebook_runs_from_any_directory(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace notebook finds its data from the package's clone, not the working directory."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    path = next(p for p in NOTEBOOKS if p.stem == "trace_encoder_layer")
    nb = nbformat.read(path, as_version=4)
    nb.cells = nb.cells[:2]  # the cell that finds and reads the trace
    package_parent = str(Path(rl.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", package_parent)
    client = nbclient.NotebookClient(nb, timeout=BUDGET_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    assert "encoder_layer_train" in str(nb.cells[1].outputs)
