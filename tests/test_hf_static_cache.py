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
    each reads and writes its output (2 x 2.15 GB) at aten's batched-copy rate, 1024 threads
    x 132 SMs x 2 B read and written per 0.8 us step (0.68 TB/s), less what the static step's
    attention costs more (the packed query under a mask runs cuDNN's sm90 kernel at 0.39 x
    HBM: 2 layers x 4.3 GB of K/V); the index_copy_ and the mask add microseconds."""
    out = 256 * 8 * 4097 * 128 * 2
    cats = 4 * 2 * out / (1024 * 132 * 2 * 2 / 0.8e-6)
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
