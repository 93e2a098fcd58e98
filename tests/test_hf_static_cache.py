"""transformer.estimate(runtime="hf", cache="static"): Hugging Face's StaticCache program
(issue #23): the new K / V written in place by ``index_copy_``, no ``torch.cat`` of the cache."""

from __future__ import annotations

import pytest

import roofline as rl

LLAMA = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256, "max_position_embeddings": 8192, "rope_theta": 500000.0}
HW = "H200"


@pytest.fixture(scope="module")
def cfg():
    return rl.transformer.from_hf(LLAMA)


def _decode(cfg, cache: str, batch: int = 256):
    return rl.transformer.estimate(cfg, "decode", batch, kv_len=4097, hardware=HW,
                                   runtime="hf", cache=cache)


def test_static_launches_index_copy_and_no_cat(cfg):
    ops = _decode(cfg, "static").ops()
    assert "kv cache index_copy_" in set(ops["op"])
    assert "kv cache cat" not in set(ops["op"])
    dyn = _decode(cfg, "dynamic").ops()
    assert "kv cache cat" in set(dyn["op"]) and "kv cache index_copy_" not in set(dyn["op"])


def test_static_saves_the_cache_cats(cfg):
    """Dynamic - static = the 4 cats (2 layers x K, V) of a 256 x 8 x 4097 x 128 bf16 cache:
    each reads and writes its output (2 x 2.15 GB) in one streaming pass (a generation loop's
    contiguous past: aten's vectorized cat), less what the static step's attention costs more
    (the packed query under a mask runs cuDNN's sm90 kernel at 0.39 x HBM: 2 layers x 4.3 GB
    of K/V); the index_copy_ and the mask add microseconds."""
    from roofline.ops.registry import Pricer

    out = 256 * 8 * 4097 * 128 * 2
    cats = 4 * float(Pricer(rl.hardware(HW), "default").traffic(2 * out, 0, 0.0, "cat").time_s)
    dyn, sta = _decode(cfg, "dynamic"), _decode(cfg, "static")

    def attn(e):
        ops = e.ops()
        return float(ops.loc[ops["op"] == "attention", "time_s"].sum()) * 2  # two layers

    masked = 2 * 2 * out / (0.39 * rl.hardware(HW).mem_bytes_per_s)
    assert attn(sta) == pytest.approx(masked, rel=0.02)
    assert float(dyn.time_s) - float(sta.time_s) == pytest.approx(
        cats - (attn(sta) - attn(dyn)), rel=0.02)
    # the update moves one token's K and V: 2 layers x 2 x (read + write) x 256 x 8 x 128 x 2 B
    ops = sta.ops()
    put = ops.loc[ops["op"] == "kv cache index_copy_"]
    assert float(put["bytes"].sum()) * 2 == pytest.approx(2 * 2 * 2 * 256 * 8 * 128 * 2, rel=1e-3)


def test_static_prefill_writes_the_prompt_in_place(cfg):
    dyn = rl.transformer.estimate(cfg, "prefill", 1, seq_len=4096, hardware=HW, runtime="hf")
    sta = rl.transformer.estimate(cfg, "prefill", 1, seq_len=4096, hardware=HW, runtime="hf",
                                  cache="static")
    assert "kv cache index_copy_" in set(sta.ops()["op"])
    # same attention (keys sliced to the prompt); the cat of an empty past vs index_copy_
    assert float(sta.time_s) == pytest.approx(float(dyn.time_s), rel=0.02)


@pytest.mark.parametrize("kw, exc, words", [
    ({"cache": "paged"}, ValueError, ("cache", "'paged'")),
    ({"cache": 3}, TypeError, ("cache", "3")),
    ({"cache": "static", "runtime": "megatron"}, ValueError, ("cache", "megatron")),
])
def test_bad_cache(cfg, kw, exc, words):
    kw = {"runtime": "hf", **kw}
    with pytest.raises(exc) as info:
        rl.transformer.estimate(cfg, "decode", 4, kv_len=4097, hardware=HW, **kw)
    for w in words:
        assert w in str(info.value)


def test_static_cache_is_not_for_training(cfg):
    with pytest.raises(ValueError, match="cache.*train"):
        rl.transformer.estimate(cfg, "train", 1, seq_len=1024, hardware=HW, runtime="hf",
                                cache="static")


def test_masked_chain_formula() -> None:
    """ceil(tiles / SMs) waves x (blocks x trips per block + trips per tile) x step."""
    from roofline import _core

    assert _core.masked_attention_chain_s(8, 132, 33, 3, 2, 0.8e-6) == pytest.approx(80.8e-6)
    assert _core.masked_attention_chain_s(512, 132, 33, 3, 2, 0.8e-6) == pytest.approx(
        4 * 80.8e-6)
    assert _core.masked_attention_chain_s(0, 132, 33, 3, 2, 0.8e-6) == 0.0


def _attention_op(cfg, batch: int) -> tuple[float, float]:
    ops = _decode(cfg, "static", batch).ops()
    row = ops.loc[ops["op"] == "attention"]
    return float(row["time_s"].iloc[0]), float(row["overhead_s"].iloc[0])


def test_masked_decode_batch1_is_a_latency_chain(cfg):
    """Batch 1: the packed query (1, 8, 4, 128) under the mask runs 8 CTAs on 132 SMs, each
    looping over ceil(4097 / 128) = 33 KV blocks with 3 dependent DRAM round trips per block
    (K, mask, V) of 0.8 us, plus Q's load and O's store: 101 x 0.8 = 80.8 us, plus the call's
    fixed GPU time, where its bytes at 0.39 x HBM would take 9 us. The H200 traces
    (llama_decode_static_{eager,graph}_b1*) record 88.3-88.8 us (before: 17 us)."""
    t, overhead = _attention_op(cfg, 1)
    assert t == pytest.approx(80.8e-6 + overhead, rel=1e-9)
    assert 0.0 < overhead < 10e-6
    assert t == pytest.approx(88.6e-6, rel=0.1)


def test_masked_decode_many_ctas_stays_bandwidth_bound(cfg):
    """Batch 16 (128 CTAs, one wave: chain 80.8 us) and 64 (4 waves: 323 us): the K/V bytes at
    0.39 x HBM (143 and 574 us; traced 148 and 576 us) stay the floor."""
    out = 8 * 4097 * 128 * 2
    for batch in (16, 64):
        t, _ = _attention_op(cfg, batch)
        q = batch * 8 * 4 * 128 * 2
        assert t == pytest.approx((q + 2 * batch * out) / (0.39 * rl.hardware(HW).mem_bytes_per_s),
                                  rel=1e-9)
