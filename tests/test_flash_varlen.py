"""llm-foundry's flash_attn_fn: flash-attn 2's unpad_input / pad_input around the varlen
kernel in every layer (attention_backend="flash_varlen", framework_ops.flash_unpad_pad)."""
import pytest

import roofline as rl
from roofline._errors import ArgumentValueError
from roofline.transformer import framework_ops
from roofline.transformer.program import Program

MPT_1B = rl.transformer.TransformerConfig(
    name="MPT-1B", hidden_size=2048, num_layers=24, num_heads=16, num_kv_heads=16,
    head_dim=128, intermediate_size=8192, vocab_size=50368, mlp_gated=False,
    norm="layernorm", rope=False, attention_bias=True, mlp_bias=True)
ROW = "flash-attn unpad / pad (bert_padding)"


def _est(backend, model=MPT_1B, **kw):
    kw = dict(dict(hardware="H100 SXM", seq_len=2048, micro_batch=12, modules="torch"), **kw)
    return rl.transformer.estimate(model, "train", attention_backend=backend, **kw)


def _layer0(est):
    df = est.to_pandas()
    return df[df["layer"] == 0].set_index("op")


def test_mha_bytes_by_hand():
    """MPT-1B, micro-batch 12 x 2048 (t = 24576), 16 x 128 heads (q = k = t·2048 elements).
    Forward: ones_like mask (t/2 bool written); per unpad of q, k, v: sum (t/2 read),
    nonzero (cub's count: t/2 read, then a single-tile kernel; select: init, then t/2 read
    and t int64 = 4t elements written), max / cumsum / fill / copy over 12 int32 (with the
    count's second kernel and select's init: 8 x 24 elements moved), the gather (read +
    write t·2048); pad_input's zeros (write q) and index_put (read + write q):
    17t + 48·12 + 9q elements. Backward: the output gradient's gather (2q), three zeros +
    scatter_ (3q each): 11q. Bytes are 2 x elements."""
    t, b = 12 * 2048, 12
    q = t * 2048
    rows = _layer0(_est("flash_varlen"))
    assert rows.loc[ROW, "bytes"] == pytest.approx(2 * (17 * t + 48 * b + 9 * q))
    assert rows.loc[ROW + " bwd", "bytes"] == pytest.approx(2 * 11 * q)


def test_gqa_widths_and_kernel_count():
    """32 query, 8 KV heads of 128: forward 5q + 4k (+ the mask and lengths), backward
    5q + 6k; 33 kernels forward (1 + 3 x 10 + 2: nonzero is 4 kernels above 4096 items,
    3 at or below), 7 backward; six segments after the syncs; the indices saved."""
    d = 128
    for t, b, nonzero in ((4096 * 2, 2, 4), (4096, 1, 3)):
        ops = Program(train=True, recipe=None)
        framework_ops.flash_unpad_pad(ops, 0, t, b, 32, 8, d)
        q, k = t * 32 * d, t * 8 * d
        assert [name for _, name, _, _ in ops.rows] == [ROW, ROW + " bwd"]
        fwd, bwd = (parts for _, _, _, parts in ops.rows)
        assert (len(fwd), len(bwd)) == (1 + 3 * (6 + nonzero) + 2, 7)
        moved = [sum(e * (r + w) for e, r, w in (ops.elts[i] for _, i in parts))
                 for parts in (fwd, bwd)]
        assert moved[0] == pytest.approx(0.5 * t * 34 + 2 * b * (8 if nonzero == 4 else 7) * 3
                                         + 5 * q + 4 * k)
        assert moved[1] == pytest.approx(5 * q + 6 * k)
        assert ops.saved[0] == pytest.approx(12.0 * t)
        assert ops.unpad == (t, b, 32, 8, d)
        segs = framework_ops.unpad_forward(t, b, 32, 8, d)
        assert len(segs) == framework_ops.UNPAD_FWD_SYNCS + 1
        # select + max | cumsum, fill, copy, gather and the next unpad's sum + count | ... |
        # the last cumsum, fill, copy, gather and pad_input's two kernels
        assert [len(s) for s in segs[1:]] == [3, nonzero + 3, 3, nonzero + 3, 3, 6]


def test_same_attention_kernel_as_flash_and_only_the_passes_and_syncs_added():
    """The varlen kernel is priced as FlashAttention-2's (every sequence full); the step grows
    by the unpad / pad rows and the syncs' exposed host time, in every layer."""
    flash, varlen = _est("flash"), _est("flash_varlen")
    a, b = _layer0(flash), _layer0(varlen)
    for op in ("attention", "attention bwd"):
        assert b.loc[op, "time_s"] == pytest.approx(a.loc[op, "time_s"])
    assert ROW not in a.index
    df = varlen.to_pandas()
    assert (df["op"] == ROW).sum() == MPT_1B.num_layers
    assert flash.step.host_s == 0.0
    rows = df[df["op"].str.startswith(ROW)]["time_s"].sum()
    assert varlen.step.time_s - flash.step.time_s == pytest.approx(
        rows + varlen.step.host_s, rel=0.02)


def test_sync_segments_by_hand():
    """Each segment after a sync starts from an idle stream: one host ``kernel`` call
    (9.45 µs on the H100 terms) before each kernel of ~1.4 µs. After nonzero's sync: select's
    two kernels and max() (3 launches, the GPU idle but ~1.4 µs of each); after .item():
    cumsum, fill, copy, then the gather, whose ~70 µs hide the next launches. Per layer
    3 x (3 calls) + 3 x (4 calls) of host time less the small kernels' GPU time, ~177 µs;
    full recomputation runs the forward (and its syncs) twice, every 2nd layer 1.5 x."""
    host = {rc: _est("flash_varlen", recompute=rc).step.host_s
            for rc in ("none", "full", "layer:2")}
    per_layer = host["none"] / MPT_1B.num_layers
    assert 150e-6 < per_layer < 200e-6
    assert host["full"] == pytest.approx(2 * host["none"])
    assert host["layer:2"] == pytest.approx(1.5 * host["none"])


def test_triton_and_flash_paths_have_no_unpad():
    for backend in ("flash", "flash_triton"):
        assert not _est(backend).to_pandas()["op"].str.startswith("flash-attn unpad").any()


def test_other_runtimes_refused():
    with pytest.raises(ArgumentValueError, match="attention_backend"):
        _est("flash_varlen", modules="te", runtime="hf")
