"""Causal attention is never slower than the same full attention, and one more query or key
never makes a causal call faster (issue #25, round 2).

The model's causal mask is bottom-right aligned. A fused kernel skips the key tiles the mask
hides entirely and does no more work than the unmasked one; before this test, ``"auto"`` on
MI300X followed SDPA's ``is_causal`` dispatch (top-left: flash refuses q_len != kv_len) and
priced a bottom-right causal call with AOTriton efficient or math, up to 10x the full flash
call (``rl.attention(64, 80, 2, 3, 255, kv_heads=16, causal=True, hardware="MI300X")``). A
bottom-right mask runs through ``causal_lower_right``, whose dispatch tries flash first.

Allowed: the math path (materialized scores) builds the causal mask and adds it to the scores,
kernels the unmasked call does not launch (aten's ``_scaled_dot_product_attention_math``), and
skips nothing; so where math runs both calls (``backend="math"``, or "auto" when math is the
cheapest candidate, e.g. head dims past the fused kernels' limits) causal costs a little more.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import roofline as rl

GPUS = ("H100 SXM", "A100 SXM 80GB", "B200", "MI300X", "L4")
BACKENDS = ("auto", "flash", "cudnn", "efficient")
Q = [1, 2, 3, 15, 16, 17, 64, 127, 128, 129, 1000]
KV = [1, 2, 3, 16, 17, 63, 64, 65, 128, 129, 1000, 8745]
D = [64, 96, 100, 128, 192, 255, 256, 264, 512]


def _grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, kv, d = np.array(list(itertools.product(Q, KV, D))).T
    return q, kv, d


def _exists(hw: str, backend: str) -> bool:
    from roofline.ops.attention import impossible_backends

    return backend not in impossible_backends(rl.hardware(hw))


def _t(hw: str, backend: str, q: np.ndarray, kv: np.ndarray, d: np.ndarray, causal: bool,
       backward: bool) -> np.ndarray:
    return np.asarray(rl.attention(3, 16, q, kv, d, kv_heads=4, causal=causal,
                                   backward=backward, hardware=hw, backend=backend).time_s)


def _math_runs(hw: str, backend: str, q: np.ndarray, kv: np.ndarray, d: np.ndarray,
               backward: bool) -> np.ndarray:
    """Where "auto" prices the math path for the causal and the full call alike."""
    if backend != "auto":
        return np.zeros(q.shape, dtype=bool)

    def label(qq: int, kk: int, dd: int, causal: bool) -> str:
        e = rl.attention(3, 16, qq, kk, dd, kv_heads=4, causal=causal, backward=backward,
                         hardware=hw, backend="auto")
        return str(e.label).split()[1]

    return np.array([label(a, b, c, False) == label(a, b, c, True) == "math"
                     for a, b, c in np.stack([q, kv, d], axis=1).tolist()], dtype=bool)


@pytest.mark.parametrize("hw", GPUS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("backward", [False, True])
def test_causal_never_slower_than_full(hw: str, backend: str, backward: bool) -> None:
    if not _exists(hw, backend):
        pytest.skip(f"{backend} does not run on {hw}")
    q, kv, d = _grid()
    full = _t(hw, backend, q, kv, d, False, backward)
    causal = _t(hw, backend, q, kv, d, True, backward)
    bad = causal > full * (1 + 1e-9)
    if bad.any():
        bad &= ~_math_runs(hw, backend, q, kv, d, backward)
    i = np.flatnonzero(bad)
    assert i.size == 0, [(int(q[j]), int(kv[j]), int(d[j]), causal[j] / full[j]) for j in i[:5]]


@pytest.mark.parametrize("hw", GPUS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("backward", [False, True])
def test_causal_one_more_query_or_key_is_not_faster(hw: str, backend: str,
                                                     backward: bool) -> None:
    if not _exists(hw, backend):
        pytest.skip(f"{backend} does not run on {hw}")
    q, kv, d = _grid()
    t0 = _t(hw, backend, q, kv, d, True, backward)
    for name, (q1, kv1) in {"q_len": (q + 1, kv), "kv_len": (q, kv + 1)}.items():
        t1 = _t(hw, backend, q1, kv1, d, True, backward)
        step = q1 if name == "q_len" else kv1
        bad = (t1 < t0 * (1 - 1e-9)) & (np.mod(step, 8) != 0)
        i = np.flatnonzero(bad)
        assert i.size == 0, (name, [(int(q[j]), int(kv[j]), int(d[j]), t1[j] / t0[j])
                                    for j in i[:5]])
