"""Monotonicity properties of issue #25 (the fuzzer's last two): an attention backward never
gets faster with more kv heads within GQA, and never costs less than its forward, on every GPU
of the hardware database."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline._params.timing import per_call_timing

#: every GPU with SDPA backends (TPUs and Gaudi run the standard kernel only)
GPUS = tuple(h for h in rl.list_hardware() if not h.startswith(("TPU", "Gaudi")))
ROCM = tuple(h for h in GPUS if h.startswith("MI"))
SIZES = dict(batch=st.integers(1, 8), q=st.integers(1, 4096), kv=st.integers(1, 20000),
             d=st.sampled_from([64, 80, 128, 192, 256]), causal=st.booleans())


def _time(hw: str, backend: str, b: int, h: int, q: int, kv: int, d: int, **kw: object) -> float:
    try:
        return float(rl.attention(b, h, q, kv, d, backend=backend, hardware=hw, **kw).time_s)
    except (ValueError, TypeError, LookupError):  # a backend the GPU does not have (cuDNN on AMD)
        assume(False)
        raise


@settings(max_examples=60, deadline=None)
@given(hw=st.sampled_from(GPUS),
       backend=st.sampled_from(["auto", "flash", "cudnn", "efficient", "math", "standard"]),
       kvh=st.sampled_from([1, 2, 4, 8]), step=st.sampled_from([2, 4]),
       group=st.sampled_from([2, 4, 32]), **SIZES)
@example(hw="MI300X", backend="math", kvh=1, step=2, group=32, batch=1, q=512, kv=512, d=64,
         causal=False)  # before: 2 kv heads 28 % faster than 1 (grouped GEMMs)
def test_gqa_backward_non_decreasing_in_kv_heads(hw: str, backend: str, kvh: int, step: int,
                                                 group: int, batch: int, q: int, kv: int,
                                                 d: int, causal: bool) -> None:
    """kv heads grow from kvh to kvh * step while still shared (fewer than the query heads):
    the same query work, more K, V to read and dK, dV to write (before: the math path's
    grouped GEMMs made 2 kv heads up to 28 % faster than 1)."""
    h = kvh * step * group  # kvh * step < h
    args = (hw, backend, batch, h, q, kv, d)
    t = [_time(*args, kv_heads=g, causal=causal, backward=True) for g in (kvh, kvh * step)]
    assert t[1] >= t[0] * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(hw=st.sampled_from(GPUS), backend=st.sampled_from(["flash", "efficient", "standard"]),
       kvh=st.sampled_from([1, 2, 4, 8, 16]), **SIZES)
def test_backward_non_decreasing_up_to_mha(hw: str, backend: str, kvh: int, batch: int, q: int,
                                           kv: int, d: int, causal: bool) -> None:
    """Kernels that reduce no head groups (FlashAttention-2 and the memory-efficient kernel as
    modelled, the standard kernel) stay monotone up to kv_heads == heads. cuDNN and the math
    path launch a group reduction only for GQA (fmha_reduce_head; repeat_interleave's sums),
    so their MHA backward is the one measured step down (docs/model.md)."""
    h = 2 * kvh
    args = (hw, backend, batch, h, q, kv, d)
    t = [_time(*args, kv_heads=g, causal=causal, backward=True) for g in (kvh, h)]
    assert t[1] >= t[0] * (1 - 1e-12)


def _backward_not_below_forward(hw: str, backend: str, batch: int, kvh: int, group: int, q: int,
                                kv: int, d: int, causal: bool) -> None:
    """Backward >= forward both per call (the timing the attention call constants were fitted
    in) and at GPU time (what each call launches, ``universal.gpu_launches``), at every shape."""
    args = (hw, backend, batch, kvh * group, q, kv, d)
    timings: list[contextlib.AbstractContextManager[None]] = [per_call_timing(),
                                                             contextlib.nullcontext()]
    for timing in timings:
        with timing:
            fwd = _time(*args, kv_heads=kvh, causal=causal)
            bwd = _time(*args, kv_heads=kvh, causal=causal, backward=True)
        assert bwd >= fwd


@settings(max_examples=60, deadline=None)
@given(hw=st.sampled_from(GPUS), backend=st.sampled_from(["flash", "cudnn", "standard"]),
       kvh=st.sampled_from([1, 2, 8]), group=st.sampled_from([1, 4]), **SIZES)
def test_fused_backward_not_below_forward(hw: str, backend: str, kvh: int, group: int,
                                          batch: int, q: int, kv: int, d: int,
                                          causal: bool) -> None:
    """A fused backward recomputes P and runs four more GEMMs (2.5x the forward's FLOPs at
    d = dv) over the same tiles: never cheaper than the forward.

    The attention call constants (``call_s``, ``bwd_call_s``) are fitted per call (do_bench,
    host included); at GPU time every fused call takes their GPU part (one value, forward and
    backward alike), so the backward's extra work and helper kernels (FA2's dQ accumulator and
    its conversion) keep it above the forward at every shape (before the split: up to ~4 µs
    under it below ~2**29 b·h·q·kv·d). Checked per call and at GPU time."""
    _backward_not_below_forward(hw, backend, batch, kvh, group, q, kv, d, causal)


@settings(max_examples=60, deadline=None)
@given(hw=st.sampled_from(ROCM), backend=st.sampled_from(["auto", "flash", "efficient"]),
       kvh=st.sampled_from([1, 2, 8]), group=st.sampled_from([1, 4]), **SIZES)
def test_rocm_backward_not_below_forward(hw: str, backend: str, kvh: int, group: int,
                                         batch: int, q: int, kv: int, d: int,
                                         causal: bool) -> None:
    """On AMD the efficient backend is AOTriton, whose backward computes dQ in its own kernel on
    the forward's query tiles (before: a 32-head decode backward 13 % under its forward).
    ``"auto"`` prices both with the one backend SDPA dispatches to (before: MI250X, q = 17,
    kv = 1, d = 256 priced an efficient forward and a math backward). Per call and at GPU
    time, at every shape (see :func:`test_fused_backward_not_below_forward`)."""
    _backward_not_below_forward(hw, backend, batch, kvh, group, q, kv, d, causal)


@pytest.mark.parametrize("hw", ROCM)
def test_rocm_efficient_decode_backward(hw: str) -> None:
    """The fuzzer's case: 32 heads, one query on 4096 keys, causal."""
    kw = dict(backend="efficient", hardware=hw, causal=True)
    fwd = rl.attention(1, 32, 1, 4096, 128, **kw).time_s
    assert rl.attention(1, 32, 1, 4096, 128, backward=True, **kw).time_s >= fwd


@settings(max_examples=60, deadline=None)
@given(hw=st.sampled_from(ROCM), kvh=st.sampled_from([1, 2, 8]), group=st.sampled_from([1, 4]),
       dtype=st.sampled_from(["bf16", "fp16", "fp32"]),
       d=st.sampled_from([64, 80, 96, 128, 192, 256, 320, 512, 520]),
       dv_same=st.booleans(), batch=st.integers(1, 8), q=st.integers(1, 4096),
       kv=st.integers(1, 20000), causal=st.booleans())
@example(hw="MI250X", kvh=1, group=1, dtype="bf16", d=256, dv_same=True, batch=1, q=17, kv=1,
         causal=False)
def test_rocm_auto_prices_one_backend_per_call(hw: str, kvh: int, group: int, dtype: str,
                                               d: int, dv_same: bool, batch: int, q: int,
                                               kv: int, causal: bool) -> None:
    """On ROCm ``"auto"`` is SDPA's dispatch (AOTriton flash while fp16 / bf16, equal head
    dims <= 512 and no causal mask on q_len != kv_len; else AOTriton efficient while head dims
    <= 512; else math): one backend per call, its forward and its backward, which
    ``attention_backend`` names (before, MI250X, q = 17, kv = 1, d = 256: efficient forward,
    math backward, "flash" named). On ROCm the efficient backend shares flash's head-dim
    check (torch's sdp_utils.cpp, ``check_head_dim_size_flash<true>``): equal head dims."""
    h = kvh * group
    dv = d if dv_same else 64
    kw = dict(kv_heads=kvh, v_head_dim=dv, causal=causal, hardware=hw, dtype=dtype)
    names = {rl.attention_backend(batch, h, q, kv, d, backward=bw, **kw) for bw in (False, True)}
    assert len(names) == 1
    name = names.pop()
    for bw in (False, True):
        auto = rl.attention(batch, h, q, kv, d, backward=bw, **kw)
        fixed = rl.attention(batch, h, q, kv, d, backward=bw, backend=name, **kw)
        assert float(auto.time_s) == float(fixed.time_s)
        assert auto.label.split()[1] == name
    half = dtype != "fp32"
    if half and d == dv and d <= 512 and not (causal and 1 < q != kv):
        assert name == "flash"
    elif d == dv and d <= 512:
        assert name == "efficient"
    else:
        assert name == "math"
