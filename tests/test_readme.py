"""Every ```python block of README.md runs, and its ``# -> output`` comments are the code's.

A line ``expr  # -> text`` (or an expression followed by a comment line ``# -> text``) states
what ``repr(expr)`` prints; ``...`` in the text matches anything. Blocks run in order in one
namespace (later blocks use earlier imports). The pytest example is called with a timing that
is twice the model's, and its failure message is checked against its ``# ->`` comment.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
ARROW = "# -> "


def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(p) for p in text.strip().split("...")) + r"\Z",
                      flags=re.DOTALL)


def _expected(lines: list[str], node: ast.stmt) -> str | None:
    """The ``# ->`` text on the statement's last line or on the comment line after it."""
    last = lines[node.end_lineno - 1]  # type: ignore[operator]
    if ARROW in last:
        return last.split(ARROW, 1)[1]
    after = lines[node.end_lineno].strip() if node.end_lineno < len(lines) else ""  # type: ignore[operator]
    return after.split(ARROW, 1)[1] if after.startswith(ARROW) else None


def _run(code: str, ns: dict[str, Any]) -> list[tuple[str, str]]:
    """Execute ``code`` statement by statement; (expected, got) for every arrow comment."""
    lines = code.splitlines()
    checks = []
    for node in ast.parse(code).body:
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), "README.md", "eval"), ns)
            want = _expected(lines, node)
            if want is not None:
                checks.append((want, repr(value)))
        else:
            exec(compile(ast.Module([node], type_ignores=[]), "README.md", "exec"), ns)
    return checks


@pytest.fixture(scope="module")
def namespace(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # The blocks run in a scratch directory holding the m.jsonl the calibration example reads:
    # bf16 GEMM rows in the shared schema, 15 % slower than the packaged model.
    work = tmp_path_factory.mktemp("readme")
    with open(work / "m.jsonl", "w") as f:
        for i, (m, k, n) in enumerate([(1024, 4096, 4096), (2048, 4096, 4096),
                                       (4096, 4096, 4096), (8192, 8192, 8192),
                                       (4096, 8192, 14336), (16384, 4096, 4096)]):
            t = rl.gemm(m, k, n, hardware="H100 SXM").time_s * 1.15
            f.write(json.dumps({"id": f"g{i}", "family": "gpu_gemm_bf16", "hardware": "H100 SXM",
                                "op": "gemm", "args": {"m": m, "k": k, "n": n, "dtype": "bf16"},
                                "measured": t, "unit": "s", "method": "synthetic",
                                "source": "tests/test_readme.py"}) + "\n")
    old = Path.cwd()
    os.chdir(work)
    ns: dict[str, Any] = {"__name__": "readme"}
    yield ns
    os.chdir(old)
    rl.set_default_hardware(None)


def test_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 5
    assert sum(b.count(ARROW) for b in BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block(index: int, namespace: dict[str, Any],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    code = BLOCKS[index]
    if "import torch" in code:
        pytest.importorskip("torch")
    if "plot" in code:
        pytest.importorskip("matplotlib").use("Agg")
    for want, got in _run(code, namespace):
        assert _pattern(want).match(got), f"README says {want!r}, the code prints {got!r}"
    tests = {k: v for k, v in namespace.items() if k.startswith("test_") and callable(v)}
    for name, fn in tests.items():
        namespace.pop(name)
        hw = rl.hardware("H100 SXM")
        predicted = rl.gemm(8192, 8192, 8192, dtype="bf16", hardware=hw).time_s
        namespace["time_my_gemm"] = lambda *shape, t=predicted: 2 * t
        arrows = [line.split(ARROW, 1)[1] for line in code.splitlines() if ARROW in line]
        with pytest.raises(AssertionError) as info:
            fn(hw)
        assert arrows, f"{name}: the README shows no failure message"
        assert _pattern(arrows[-1]).match(str(info.value)), (
            f"README says {arrows[-1]!r}, the assertion says {str(info.value)!r}")


def test_pattern() -> None:
    assert _pattern("a (...)").match("a (b, c)")
    assert not _pattern("1.425 ms").match("1.402 ms")
