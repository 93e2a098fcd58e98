"""Load a script of ``benchmarks/`` as a module, for the tests that check what it prints."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str, keep_path: bool = False) -> ModuleType:
    """``benchmarks/<name>.py`` executed as module ``name``, with ``benchmarks/`` on
    ``sys.path`` while it runs (its imports of sibling helpers); ``keep_path`` leaves it there
    for functions that import lazily."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        if not keep_path:
            sys.path.remove(str(BENCHMARKS))
