"""The package's layers, as docs/architecture.md draws them: each folder (or top-level module)
imports only the units below it, nothing imports the package face, and no import cycles.

Imports are read from the source (``ast``), inside functions too; those under
``if TYPE_CHECKING:`` are left out (they never run). ``from .. import x`` of a submodule counts
as importing that submodule. Run ``python -m pytest tests/test_architecture.py`` after moving
code; to change a layer, change :data:`ALLOWED` and docs/architecture.md together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "python" / "roofline"

#: unit -> the units it may import (besides itself). A unit is a top-level module or folder
#: of python/roofline; ops/registry is its own unit (it sits above float8, whose rows it
#: prices), the rest of ops/ is one unit.
ALLOWED: dict[str, set[str]] = {
    "_errors": set(), "_format": set(), "_version": set(), "_core": set(),
    "_html": {"_format"}, "_mpl": set(),
    "_checks": {"_core", "_errors"},
    "hardware": {"_errors", "_html"},
    "_dtypes": {"_core", "_checks"},
    "efficiency": {"_core", "_checks", "_errors", "hardware"},
    "estimate": {"_checks", "_format", "_html"},
    "_params": {"_core", "_errors", "hardware", "efficiency"},
    "explain": {"_core", "_errors", "_html", "_dtypes", "_format", "estimate", "hardware"},
}
_BASE = {"_core", "_errors", "_format", "_html", "_mpl", "_checks", "_dtypes", "hardware",
         "efficiency", "estimate", "_params", "explain"}
ALLOWED.update({
    "ops": _BASE,
    "float8": _BASE,
    "compat": _BASE,
    "testing": _BASE,
    "ops.registry": _BASE | {"ops", "float8"},
    "fusion": _BASE | {"ops"},
    "plot": _BASE | {"float8"},
    "transformer": _BASE | {"ops", "ops.registry", "float8"},
    "torch": _BASE | {"ops", "ops.registry", "float8"},
    "trace": _BASE | {"ops", "ops.registry"},
    "validation": _BASE | {"ops", "ops.registry", "float8", "transformer"},
    "bench": _BASE | {"_version"},
    "calibration": _BASE | {"ops", "ops.registry", "validation", "float8"},
    "pytest_plugin": _BASE | {"testing"},
})
ALLOWED["cli"] = set(ALLOWED) - {"cli"} | {"_version"}
ALLOWED["__main__"] = {"cli"}


def unit(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"
    if parts[:2] == ["ops", "registry"]:
        return "ops.registry"
    return parts[0]


def modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    for so in list(PKG.glob("_core*")):
        out["roofline._core"] = so
    return out


def imported(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {n.lineno for s in node.body for n in ast.walk(s) if hasattr(n, "lineno")}
    base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "roofline"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")[: len(base.split(".")) - node.level + 1]
                target = ".".join(parts + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "roofline":
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & set(mods)
            found |= subs or {target}
    return found


def test_each_unit_imports_only_the_layers_below_it() -> None:
    mods = modules()
    bad = []
    for name, path in sorted(mods.items()):
        if path.suffix != ".py":
            continue
        src = unit(name)
        if src == "__init__":
            continue
        for target in imported(name, path, mods):
            dst = unit(target)
            if dst == src or (src == "ops" and dst == "ops.registry" and name == "roofline.ops"):
                continue
            if dst == "__init__":
                bad.append(f"{name} imports the package face ({target})")
            elif dst not in ALLOWED.get(src, set()):
                bad.append(f"{name} ({src}) imports {target} ({dst})")
    assert not bad, "\n".join(bad)


def test_every_unit_has_a_layer() -> None:
    units = {unit(n) for n in modules()} - {"__init__"}
    assert units <= set(ALLOWED), units - set(ALLOWED)


@pytest.mark.parametrize("limit", [600])
def test_no_module_over_the_line_limit(limit: int) -> None:
    long = {n: len(p.read_text().splitlines()) for n, p in modules().items()
            if p.suffix == ".py" and len(p.read_text().splitlines()) > limit}
    assert not long, long
