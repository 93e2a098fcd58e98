"""PyTorch FlexAttention (``attention_backend="flex"``): the BlockMask's visited blocks,
the kernel's rate against FlashAttention-2's, and the eager ops NeMo AutoModel's GPT-OSS
runs around it (hardware-notes §51)."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline._errors import ArgumentValueError
from roofline.transformer import estimate
from roofline.transformer.flex import flex_block_fraction, flex_visited_blocks
from roofline.transformer.program import Program

H100 = "H100 SXM"


@pytest.mark.parametrize(("q", "kv", "window", "blocks"), [
    (4096, 4096, 0, 528),   # causal, n = 32 blocks of 128: n(n+1)/2 = 32*33/2
    (4096, 4096, 128, 63),  # window 128: block i visits blocks i-1 and i; block 0 only 0: 2n-1
    (1024, 1024, 256, 21),  # window 256, n = 8: 1 + 2 + 3*6 (blocks i-2 .. i from i = 2)
    (200, 200, 0, 3),       # a partial last block: block 0 sees 1, block 1 (rows 128-199) 2
    (1, 4096, 0, 32),       # decode, causal: the one query sees all 32 key blocks
    (1, 4096, 128, 1),      # decode, window 128 at position 4095: keys 3968-4095, block 31
    (128, 4096, 0, 32),     # 128 queries at the end (bottom-right): one row of 32 blocks
])
def test_visited_blocks_hand_derived(q: int, kv: int, window: int, blocks: int) -> None:
    assert flex_visited_blocks(q, kv, window) == blocks


def test_block_fraction() -> None:
    # causal 4096: 528 of 32*32 = 1024 blocks; window 128: 63 of 1024
    assert flex_block_fraction(4096, 4096) == pytest.approx(528 / 1024)
    assert flex_block_fraction(4096, 4096, 128) == pytest.approx(63 / 1024)


def test_visited_blocks_monotone() -> None:
    prev = 0
    for window in (1, 64, 128, 129, 256, 1000, 4096, 10**6):
        b = flex_visited_blocks(4096, 4096, window)
        assert b >= prev, window
        prev = b
    assert prev == flex_visited_blocks(4096, 4096, 0)  # a window past the sequence: causal
    prev = 0
    for s in (1, 127, 128, 129, 1000, 4096, 8192):
        b = flex_visited_blocks(s, s, 128)
        assert b >= prev, s
        prev = b


@pytest.mark.parametrize(("args", "name"), [
    ((0, 128, 0), "q_len"), ((128, -1, 0), "kv_len"), ((128, 128, -1), "window"),
    ((128.0, 128, 0), "q_len"), ((128, 128, 1.5), "window"),
])
def test_visited_blocks_bad_input(args: tuple[object, ...], name: str) -> None:
    with pytest.raises(ArgumentValueError, match=name):
        flex_visited_blocks(*args)  # type: ignore[arg-type]


def test_kernel_is_fa2_work_at_published_shares() -> None:
    """backend="flex": FA2's work units at universal.flex.fwd_ratio (tritonbench's H100
    forward sweep, median FA2 / flex time 1.0921) and bwd_ratio (0.8674, PyTorch's
    score_mod.py backward pair); the shares are recomputed from the CSV."""
    from _benchmarks import load_benchmark

    from roofline._params.packaged import terms

    fit = load_benchmark("fit_attention")
    fx = terms("attention")["universal"]["flex"]
    assert (fx["fwd_ratio"], fx["bwd_ratio"]) == pytest.approx(fit.flex_ratios(), abs=5e-5)
    for bwd, rho in ((False, fx["fwd_ratio"]), (True, fx["bwd_ratio"])):
        kw = dict(causal=True, backward=bwd, hardware=H100)
        fa2 = rl.attention(4, 16, 8192, 8192, 128, backend="flash", **kw)
        flex = rl.attention(4, 16, 8192, 8192, 128, backend="flex", **kw)
        assert float(flex.flops) == float(fa2.flops)
        assert float(flex.time_s) / float(fa2.time_s) == pytest.approx(1 / rho, rel=0.05)
    with pytest.raises(ValueError, match="flex.*V100"):
        rl.attention(1, 8, 128, 128, 64, backend="flex", hardware="V100")


def _rows(model: str, **kw: object) -> dict[str, float]:
    e = estimate(model, "train", seq_len=4096, micro_batch=1, hardware=H100, **kw)
    df = e.to_pandas()
    return {str(k): float(v) for k, v in df.groupby("op")["time_s"].sum().items()}


def test_estimate_gpt_oss_rows() -> None:
    """GPT-OSS-20B: causal layers and 128-token sliding layers through the BlockMask, the
    head-major copies and (attention sinks) the eager rescale; the sliding layers cost
    about 63 / 528 of the causal ones (same calls, fewer visited blocks)."""
    rows = _rows("GPT-OSS-20B", attention_backend="flex")
    for op in ("attention (flex causal)", "attention (flex sliding 128)",
               "flex q/k/v/o transpose", "flex sinks rescale", "flex sinks rescale bwd"):
        assert rows.get(op, 0.0) > 0.0, op
    ratio = rows["attention (flex sliding 128)"] / rows["attention (flex causal)"]
    assert 63 / 528 * 0.8 < ratio < 63 / 528 * 1.5
    # a model without sinks records no rescale
    assert "flex sinks rescale" not in _rows("Llama-3-8B", attention_backend="flex")


def test_flex_saves_whole_activations() -> None:
    """The BlockMask scales the kernel's work, not the Q, K, V, O it saves for backward."""
    from roofline.transformer.config import config
    from roofline.transformer.flex import flex_attention

    cfg = config("Llama-3-8B")  # no sinks: the attention call's saves alone
    for attn in ("full", "sliding"):
        ops = Program(train=True, recipe=None)
        flex_attention(ops, 0, attn, 128, 2, 32, 8, 4096, 4096, 128, {}, cfg)
        # Q 2*32*4096*128, K and V 2*8*4096*(128+128); O 2*32*4096*128 and the LSE (2 units
        # per fp32 row) 2*2*32*4096, whatever share of the blocks is visited
        assert ops.saved[0] == (2 * 32 * 4096 * 128 + 2 * 8 * 4096 * 256
                                + 2 * 32 * 4096 * 128 + 2 * 2 * 32 * 4096)


def test_estimate_flex_monotone_in_sequence() -> None:
    prev = 0.0
    for s in (1024, 2048, 4096, 8192):
        t = estimate("GPT-OSS-20B", "train", seq_len=s, micro_batch=1, hardware=H100,
                     attention_backend="flex").time_s
        assert t > prev, s
        prev = t


def test_flex_bad_input() -> None:
    with pytest.raises(ArgumentValueError, match="attention_backend"):
        estimate("GPT-OSS-20B", "train", seq_len=4096, micro_batch=1, hardware=H100,
                 runtime="hf", attention_backend="flex")
    ops = Program(train=True, recipe=None)
    from roofline.transformer.config import config
    from roofline.transformer.flex import flex_attention

    cfg = config("GPT-OSS-20B")
    with pytest.raises(ArgumentValueError, match="chunked"):
        flex_attention(ops, 0, "chunked", 8192, 1, 64, 8, 4096, 4096, 64, {}, cfg)
