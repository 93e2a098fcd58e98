"""The C++ "auto" minimum, the scalar fast path and the C++ dispatch rules give exactly what the
previous implementation gave (tests/_attention_reference.py: a Python minimum over per-backend
core sweeps, dispatch rules in numpy), bit for bit, on random shapes of every kind."""

from __future__ import annotations

from typing import Any

import _attention_reference as ref
import numpy as np
import pytest

import roofline as rl
from roofline.ops.attention import attention_kernels

HARDWARE = ["H100 SXM", "B200", "A100 SXM 80GB", "L4", "RTX 4090", "MI300X", "V100 SXM2 32GB",
            "RTX 5090", "TPU v5e"]
BACKENDS = ["auto", "flash", "cudnn", "efficient", "math", "standard"]
FIELDS = ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes")
HEAD_DIMS = [32, 60, 64, 72, 80, 96, 100, 128, 160, 192, 200, 224, 256, 288, 512, 576]


def _hardware(name: str) -> Any:
    return rl.hardware(name)


def _cases(rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
    """Random calls: prefill / training, decode (q_len 1 or a few), GQA / MQA, MLA-like."""
    out = []
    for _ in range(n):
        heads = int(rng.choice([1, 2, 8, 16, 32, 64, 128]))
        kv_heads = int(rng.choice([h for h in (1, 2, 4, 8, heads) if heads % h == 0]))
        d = int(rng.choice(HEAD_DIMS))
        dv = d if rng.random() < 0.6 else int(rng.choice([x for x in HEAD_DIMS if x <= d] or [d]))
        kv = int(np.exp(rng.uniform(0, np.log(70000))))
        q = kv if rng.random() < 0.4 else (1 if rng.random() < 0.5 else
                                           int(rng.integers(1, max(2, 2 * kv))))
        out.append(dict(batch=int(rng.integers(1, 17)), heads=heads, q_len=q, kv_len=kv,
                        head_dim=d, kv_heads=kv_heads if rng.random() < 0.8 else None,
                        v_head_dim=dv if dv != d or rng.random() < 0.5 else None,
                        shared_kv=bool(rng.random() < 0.15), causal=bool(rng.random() < 0.5),
                        backward=bool(rng.random() < 0.5)))
    return out


def _same(new: Any, old: Any, where: object) -> None:
    assert new.label == old.label, where
    assert new.hardware == old.hardware and new.meta == old.meta, where
    for f in FIELDS:
        a, b = getattr(new, f), getattr(old, f)
        assert type(a) is type(b), (where, f)
        assert np.array_equal(a, b), (where, f, a, b)


def _both(fn: Any, reffn: Any, args: dict[str, Any]) -> tuple[Any, Any]:
    try:
        old = reffn(**args)
    except (ValueError, KeyError, TypeError) as exc:
        with pytest.raises(type(exc)) as info:
            fn(**args)
        assert str(info.value) == str(exc)
        return None, None
    return fn(**args), old


def _exists(backend: str, hw: Any) -> bool:
    from roofline.ops.attention import impossible_backends

    return backend not in impossible_backends(hw)


@pytest.mark.parametrize("name", HARDWARE)
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32", "fp8"])
def test_scalar_and_array_paths_equal_reference(name: str, dtype: str) -> None:
    hw = _hardware(name)
    rng = np.random.default_rng(abs(hash((name, dtype))) % 2**32)
    cases = _cases(rng, 40)
    for backend in BACKENDS:
        if not _exists(backend, hw):
            continue  # e.g. cuDNN on AMD: an error (tests/test_hostile_arguments.py)
        for flash in (True, False):
            for case in cases:
                case = {k: v for k, v in case.items() if not (k == "shared_kv" and v and
                                                               (case["v_head_dim"] or 0) >
                                                               case["head_dim"])}
                args = dict(case, flash=flash, dtype=dtype, hardware=hw, backend=backend)
                new, old = _both(rl.attention, ref.attention, args)
                if new is not None:
                    _same(new, old, (name, dtype, args))
            # The same cases as one array call (same flags): the C++ "auto" sweep.
            for causal in (False, True):
                sel = [c for c in cases if c["causal"] == causal and not c["shared_kv"]
                       and not c["backward"]]
                arrays = {k: np.array([c[k] if c[k] is not None else
                                       c["heads" if k == "kv_heads" else "head_dim"]
                                       for c in sel])
                          for k in ("batch", "heads", "q_len", "kv_len", "head_dim", "kv_heads",
                                    "v_head_dim")}
                args = dict(arrays, causal=causal, flash=flash, dtype=dtype, hardware=hw,
                            backend=backend)
                new, old = _both(rl.attention, ref.attention, args)
                if new is not None:
                    _same(new, old, (name, dtype, backend, flash, causal))


@pytest.mark.parametrize("efficiency", ["peak", "torchao", "constant",
                                        rl.Efficiency(0.7, 0.8, 1e-6)], ids=str)
def test_non_shape_aware_presets_equal_reference(efficiency: Any) -> None:
    rng = np.random.default_rng(3)
    for name in ("H100 SXM", "A100 SXM 80GB"):
        hw = rl.hardware(name)
        for case in _cases(rng, 30):
            case.pop("shared_kv")
            for backend in ("auto", "math", "standard", "flash"):
                for flash in (True, False):
                    args = dict(case, flash=flash, hardware=hw, backend=backend,
                                efficiency=efficiency)
                    new, old = _both(rl.attention, ref.attention, args)
                    if new is not None:
                        _same(new, old, args)


@pytest.mark.parametrize("name", HARDWARE)
def test_dispatch_and_kernels_equal_reference(name: str) -> None:
    hw = _hardware(name)
    rng = np.random.default_rng(5)
    for dtype in ("bf16", "fp16", "fp32", "fp8"):
        for case in _cases(rng, 40):
            case.pop("batch")
            sizes = {k: case.pop(k) for k in ("heads", "q_len", "kv_len", "head_dim",
                                              "kv_heads", "v_head_dim")}
            if case["shared_kv"] and (sizes["v_head_dim"] or 0) > sizes["head_dim"]:
                continue
            args = dict(sizes, **case, dtype=dtype, hardware=hw)
            assert rl.attention_backend(1, **args) == ref.attention_backend(1, **args), args
            kargs = dict(args, batch=2)
            new, old = _both(attention_kernels, ref.attention_kernels, kargs)
            assert new == old, kargs
    # Arrays of head dims and lengths at once.
    d = np.array(HEAD_DIMS * 3)
    q = np.resize([1, 7, 512, 4096], len(d))
    kv = np.resize([1, 4096, 512, 9000], len(d))
    for causal in (False, True):
        for backward in (False, True):
            args = dict(heads=8, q_len=q, kv_len=kv, head_dim=d, causal=causal,
                        backward=backward, hardware=hw)
            assert (rl.attention_backend(2, **args) == ref.attention_backend(2, **args)).all()


def test_scalar_fast_path_still_validates() -> None:
    hw = rl.hardware("H100 SXM")
    for bad, error, text in [
        (dict(batch=0), ValueError, "batch must be"),
        (dict(heads=-2), ValueError, "heads must be"),
        (dict(q_len=2**53 + 1), ValueError, "q_len must be"),
        (dict(kv_len=True), TypeError, "kv_len must be"),
        (dict(head_dim=1.5), ValueError, "head_dim must be"),
        (dict(kv_heads=5), ValueError, "kv_heads must divide heads"),
        (dict(shared_kv=True, v_head_dim=256), ValueError, "v_head_dim <= head_dim"),
        (dict(causal=1), TypeError, "causal must be a bool"),
        (dict(dtype="int8"), ValueError, "dtype must be a floating format"),
        (dict(dtype="bf17"), KeyError, "bf17"),
        (dict(backend="fast"), KeyError, "fast"),
        (dict(backend="flash", flash=False), ValueError, "flash=False means"),
    ]:
        args = dict(batch=2, heads=32, q_len=128, kv_len=128, head_dim=128, hardware=hw)
        args.update(bad)
        with pytest.raises(error, match=text):
            rl.attention(**args)


@pytest.mark.parametrize("threads", [1, 2])
def test_large_threaded_auto_sweep_equals_reference(threads: int) -> None:
    """Arrays long enough for the C++ sweep to split across threads."""
    hw = rl.hardware("H100 SXM")
    rng = np.random.default_rng(9)
    n = 12_000
    b, q = rng.integers(1, 17, n), rng.integers(1, 16384, n)
    kv = q + rng.integers(0, 16384, n)
    d = rng.choice([64, 72, 80, 96, 100, 128, 192, 200, 256, 320], n)
    rl.set_num_threads(threads)
    try:
        for causal in (False, True):
            for backward in (False, True):
                args = dict(batch=b, heads=32, q_len=q, kv_len=kv, head_dim=d, kv_heads=8,
                            causal=causal, backward=backward, hardware=hw)
                _same(rl.attention(**args), ref.attention(**args), (causal, backward))
    finally:
        rl.set_num_threads(0)
