"""The compiled core's type stub (python/roofline/_core.pyi) names every binding, and nothing
else, so mypy checks the Python side of every call into C++ (regenerate with
scripts/gen_stubs.sh)."""

from __future__ import annotations

import ast
from pathlib import Path

from roofline import _core

STUB = Path(__file__).resolve().parents[1] / "python" / "roofline" / "_core.pyi"


def stub_names() -> set[str]:
    tree = ast.parse(STUB.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def test_stub_is_not_a_catch_all() -> None:
    # a bare ``def __getattr__(name) -> Any`` would type nothing at the boundary
    assert "__getattr__" not in stub_names()


def test_stub_names_every_binding() -> None:
    bound = {n for n in dir(_core) if not n.startswith("_")}
    missing = bound - stub_names()
    extra = stub_names() - bound
    assert not missing, f"bindings missing from _core.pyi (run scripts/gen_stubs.sh): {missing}"
    assert not extra, f"_core.pyi names what the core no longer binds: {extra}"
