"""``_core.containment_tree`` (the trace linker's containment forest, in C++) against the
rules written out in Python: the parent of each event (one pass with a stack of open events),
the op its kernels take (the innermost cpu_op with shaped inputs on the chain, else the
innermost cpu_op), the chain's root, and the event whose context the chain has; on random
threads with ties, zero durations and nested regions; bad indices raise."""

from __future__ import annotations

import random
from array import array

import numpy as np
import pytest

from roofline import _core

OP, REGION, LAUNCH = 0, 2, 3  # cpu_op; user_annotation, python_function; cuda_runtime


def _reference(ts: list[float], end: list[float], cat: list[int], shape: list[int],
               name: list[int], args: list[int], shaped: list[int], module: list[int],
               coll: list[int]) -> tuple[list[int], ...]:
    n = len(ts)
    parent = [0] * n
    stack: list[int] = []
    ends: list[float] = []
    top = -1
    for i in range(n):
        if ends and ends[-1] <= ts[i]:
            while ends and ends[-1] <= ts[i]:
                ends.pop()
                stack.pop()
            top = stack[-1] if stack else -1
        parent[i] = top
        stack.append(i)
        ends.append(end[i])
        top = i

    def chain(i: int) -> list[int]:
        out = []
        while i >= 0:
            out.append(i)
            i = parent[i]
        return out  # innermost first

    chosen, root, ctx = [], [], []
    for i in range(n):
        c = chain(i)
        ops = [j for j in c if cat[j] == OP]
        good = [j for j in ops if shaped[shape[j]]]
        chosen.append(good[0] if good else ops[0] if ops else -1)
        root.append(c[-1])
        regions = [j for j in c if cat[j] <= REGION]
        outer = regions[-1] if regions else -1
        adds = [j for j in c if module[name[j]] or coll[args[j]] or j == outer]
        ctx.append(adds[0] if adds else -1)
    return parent, chosen, root, ctx


@pytest.mark.parametrize("seed", range(6))
def test_tree_matches_the_rules(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 300)
    ts = sorted(float(rng.randint(0, 60)) for _ in range(n))
    dur = [float(rng.choice([0, 0, 1, 2, 5, 20, 40])) for _ in range(n)]
    order = sorted(range(n), key=lambda i: (ts[i], -dur[i]))
    ts = [ts[i] for i in order]
    dur = [dur[i] for i in order]
    end = [t + d for t, d in zip(ts, dur, strict=True)]
    cat = [rng.choice([OP, OP, 1, REGION, LAUNCH, 4]) for _ in range(n)]
    shaped, module, coll = [0, 1, 0, 1], [0, 0, 1], [0, 1]
    shape = [rng.randrange(len(shaped)) for _ in range(n)]
    name = [rng.randrange(len(module)) for _ in range(n)]
    args = [rng.choice([0, 0, 0, 1]) for _ in range(n)]
    out = [array("q", [0]) * n for _ in range(4)]
    _core.containment_tree(
        np.array(ts), np.array(end), np.array(cat, dtype=np.uint8), np.array(shape),
        np.array(name), np.array(args), np.array(shaped, dtype=np.uint8),
        np.array(module, dtype=np.uint8), np.array(coll, dtype=np.uint8), OP, REGION, *out)
    want = _reference(ts, end, cat, shape, name, args, shaped, module, coll)
    assert [list(o) for o in out] == [list(w) for w in want]


def test_bad_inputs_raise() -> None:
    one = np.zeros(1)
    u8, i64 = np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    outs = [array("q", [0]) for _ in range(4)]
    with pytest.raises(ValueError, match="outside shaped"):
        _core.containment_tree(one, one, u8, np.array([5]), i64, i64, u8, u8, u8, 0, 2, *outs)
    with pytest.raises(ValueError, match="end has 2 entries"):
        _core.containment_tree(one, np.zeros(2), u8, i64, i64, i64, u8, u8, u8, 0, 2, *outs)
    with pytest.raises(ValueError, match="parent must be a writable buffer of 1 int64"):
        _core.containment_tree(one, one, u8, i64, i64, i64, u8, u8, u8, 0, 2,
                               array("d", [0.0]), *outs[1:])
