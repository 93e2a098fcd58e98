"""``rl.transformer.estimate(runtime="vllm" / "sglang")`` and ``serve(runtime=...)``: the
serving engines' program (fused add + RMSNorm, KV-cache write, FA3 / FlashMLA on a paged
cache, sampler cast, decode CUDA graphs at the engine's capture sizes), by hand and by
property."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline.transformer.engines import capture_sizes, engine_step_gap_s

HW = "H100 SXM"
LLAMA = "Llama-3-8B"  # hidden 4096, 32 q heads, 8 kv heads, head dim 128, vocab 128256


def _rows(est: rl.transformer.ModelEstimate, layer: int = 0) -> dict[str, dict[str, float]]:
    df = est.to_pandas()
    return {r.op: {"flops": r.flops, "bytes": r.bytes, "time_s": r.time_s}
            for r in df[df.layer == layer].itertuples()}


def test_capture_sizes_pad_the_decode_batch() -> None:
    # batch 10: vLLM runs its 16 graph, SGLang v0.4 too ([1, 2, 4] + 8..160 by 8); qkv_proj
    # is 2*m*4096*6144 FLOPs.
    assert capture_sizes("vllm")[:5] == (1, 2, 4, 8, 16)
    assert capture_sizes("sglang") == (1, 2, 4, *range(8, 161, 8))
    for runtime, m in (("vllm", 16), ("sglang", 16)):
        r = rl.transformer.estimate(LLAMA, "decode", 10, kv_len=4096, hardware=HW,
                                    runtime=runtime)
        assert _rows(r)["qkv_proj"]["flops"] == 2 * m * 4096 * 6144
        # attention runs the 10 real sequences: 4*b*h*kv*d = 4*10*32*4096*128
        assert _rows(r)["attention"]["flops"] == 4 * 10 * 32 * 4096 * 128
        assert r.wall.mode == "graph"



def test_sglang_v04_decodes_eagerly_above_160() -> None:
    """SGLang v0.4 (Dec 2024) captures decode graphs up to cuda_graph_max_bs = 160 on GPUs of
    25 GB or more (server_args.py; cuda_graph_runner.can_run: batch <= max_bs): a 70B TP 4
    decode of 160 requests replays a graph, one of 161 runs its nn.Module forward eagerly
    (host time > 0, no replay gap)."""
    kw = dict(kv_len=3000, hardware="H200", tp=4, runtime="sglang")
    at = rl.transformer.estimate("Llama-3-70B", "decode", 160, **kw)
    above = rl.transformer.estimate("Llama-3-70B", "decode", 161, **kw)
    assert at.wall is not None and at.wall.mode == "graph"
    assert above.wall is not None and above.wall.mode == "eager"
    assert float(above.wall.host_s) > 0.0
    assert engine_step_gap_s("sglang", 161, "H200") == 0.0
    assert engine_step_gap_s("sglang", 160, "H200") > 0.0

def test_fused_kernels_by_hand() -> None:
    r = rl.transformer.estimate(LLAMA, "decode", 8, kv_len=4096, hardware=HW, runtime="vllm")
    rows = _rows(r)
    # fused add + RMSNorm: reads x and residual, writes both: 8*4096*4*2 bytes
    assert rows["attn_norm (fused add+rmsnorm)"]["bytes"] == 8 * 4096 * 4 * 2
    assert rows["mlp_norm (fused add+rmsnorm)"]["bytes"] == 8 * 4096 * 4 * 2
    assert "attn_residual" not in rows and "mlp_residual" not in rows
    # KV-cache write: K and V of 8 tokens, 8 kv heads x 128, bf16, read + write
    assert rows["kv cache write"]["bytes"] == 8 * 2 * 8 * 128 * 2 * 2
    # fused SiLU-and-mul: reads 2 x 14336, writes 14336 per token
    assert rows["act (silu*up)"]["bytes"] == 8 * 14336 * 3 * 2
    head = _rows(r, layer=32)
    # sampler: bf16 logits read, fp32 written: 8 * 128256 * (2 + 4)
    assert head["logits to fp32 (sampler)"]["bytes"] == 8 * 128256 * 6


def test_attention_is_the_engine_kernel() -> None:
    r = rl.transformer.estimate(LLAMA, "decode", 8, kv_len=4096, hardware=HW, runtime="vllm")
    fa3 = rl.attention(8, 32, 1, 4096, 128, kv_heads=8, causal=True, hardware=HW,
                       backend="fa3", page_tokens=16)
    assert _rows(r)["attention"]["time_s"] == pytest.approx(float(fa3.time_s))
    ds = rl.transformer.estimate("DeepSeek-V3", "decode", 8, kv_len=4096, hardware=HW,
                                 runtime="vllm", tp=8)
    mla = rl.attention(8, 16, 1, 4096, 576, kv_heads=1, v_head_dim=512, shared_kv=True,
                       causal=True, hardware=HW, backend="flashmla", page_tokens=64)
    assert _rows(ds)["attention (MLA absorbed)"]["time_s"] == pytest.approx(float(mla.time_s))
    a100 = rl.transformer.estimate(LLAMA, "decode", 8, kv_len=4096, hardware="A100 SXM 80GB",
                                   runtime="sglang")
    fi = rl.attention(8, 32, 1, 4096, 128, kv_heads=8, causal=True, hardware="A100 SXM 80GB",
                      backend="flashinfer", page_tokens=1)
    assert _rows(a100)["attention"]["time_s"] == pytest.approx(float(fi.time_s))


def test_engine_decode_is_monotone_and_graph_launched() -> None:
    kvs = (512, 2048, 8192, 32768)
    for runtime in ("vllm", "sglang"):
        t = [rl.transformer.estimate(LLAMA, "decode", 16, kv_len=kv, hardware=HW,
                                     runtime=runtime).time_s for kv in kvs]
        assert np.all(np.diff(t) > 0)
        t = [rl.transformer.estimate(LLAMA, "decode", b, kv_len=4096, hardware=HW,
                                     runtime=runtime).time_s for b in (1, 3, 8, 9, 64, 600)]
        assert np.all(np.diff(t) >= 0)
        big = rl.transformer.estimate(LLAMA, "decode", 600, kv_len=1024, hardware=HW,
                                      runtime=runtime)
        assert big.wall.mode == "eager"  # beyond the largest captured graph
        r = rl.transformer.estimate(LLAMA, "decode", 1, kv_len=4096, hardware=HW,
                                    runtime=runtime)
        assert r.wall_s >= r.time_s


def test_prefill_keeps_the_last_tokens_logits() -> None:
    r = rl.transformer.estimate(LLAMA, "prefill", 2, seq_len=1024, hardware=HW,
                                runtime="sglang")
    head = _rows(r, layer=32)
    assert head["lm_head"]["flops"] == 2 * 2 * 4096 * 128256
    assert head["logits to fp32 (sampler)"]["bytes"] == 2 * 128256 * 6
    # the prompt's attention runs FA3 (causal, contiguous prompt K/V through the paged cache)
    fa3 = rl.attention(2, 32, 1024, 1024, 128, kv_heads=8, causal=True, hardware=HW,
                       backend="fa3", page_tokens=1)
    assert _rows(r)["attention"]["time_s"] == pytest.approx(float(fa3.time_s))


def test_engines_refuse_what_they_do_not_run() -> None:
    for runtime in ("vllm", "sglang"):
        with pytest.raises(ValueError, match="phase"):
            rl.transformer.estimate(LLAMA, "train", 1, seq_len=128, hardware=HW,
                                    runtime=runtime)
        with pytest.raises(ValueError, match="cp"):
            rl.transformer.estimate(LLAMA, "prefill", 1, seq_len=1024, hardware=HW,
                                    runtime=runtime, cp=2)
        with pytest.raises(ValueError, match="flash"):
            rl.transformer.estimate(LLAMA, "decode", 1, kv_len=128, hardware=HW,
                                    runtime=runtime, flash=False)


def test_serve_says_which_runtime_it_assumes() -> None:
    base = rl.transformer.serve(LLAMA, HW, batches=(8,))
    assert base.attrs["runtime"] == "megatron"
    df = rl.transformer.serve(LLAMA, HW, batches=(8,), runtime="vllm")
    assert df.attrs["runtime"] == "vllm"
    step = rl.transformer.estimate(LLAMA, "decode", max(round(df["decode_seqs"][0]), 1),
                                   kv_len=2048 + 256, hardware=HW, runtime="vllm")
    assert df["decode_step_s"][0] == pytest.approx(step.wall_s)
    with pytest.raises(rl.UnknownNameError, match="runtime"):
        rl.transformer.serve(LLAMA, HW, batches=(8,), runtime="trtllm")


def test_engine_host_calls_counts() -> None:
    from roofline.transformer.engines import engine_host_calls

    llama = rl.transformer.config("Llama-3-8B")
    groups = [("dense", list(range(32))), ("head", [])]
    assert engine_host_calls(llama, groups) == {0: (4.0, 12.0), 1: (2.0, 5.0)}
    moe = [("moe", [0]), ("head", [])]
    assert engine_host_calls(llama, moe)[0] == (4.0, 11.0)
    assert engine_host_calls(llama.replace(qk_norm=True), groups)[0] == (4.0, 14.0)


def test_sglang_eager_prefill_host_by_hand() -> None:
    """SGLang's prefill runs its nn.Module forward eagerly: host time = (per layer: 4 GEMM
    calls, 1 attention call, 7 other kernels (2 fused add+RMSNorm, RoPE, K and V index
    writes, the query's contiguous copy, SiLU-mul), 12 module calls, 4 views; head: LM head
    GEMM, 3 kernels, 5 module calls, 2 views; one step entry) in units of eager_launch_s,
    whatever the prompt length."""
    from roofline._params.resolve import resolve

    _, _, ceff = resolve(rl.hardware("H200"), "default")
    h = ceff.host
    layer = (4 * h.op_gemm_launches + h.op_attention_launches + 7 * h.op_kernel_launches
             + 12 * h.module_call_launches + 4 * h.op_view_launches)
    head = h.op_gemm_launches + 3 * h.op_kernel_launches + 5 * h.module_call_launches \
        + 2 * h.op_view_launches
    want = (32 * layer + head + h.step_call_launches) * h.eager_launch_s
    for seq in (64, 512):
        e = rl.transformer.estimate("Llama-3-8B", "prefill", 1, seq_len=seq, hardware="H200",
                                    runtime="sglang")
        assert e.wall.mode == "eager" and e.wall.host_s == pytest.approx(want)
        assert e.wall_s >= max(e.wall.gpu_s, want)
    # decode under a CUDA graph keeps one replay's host time
    d = rl.transformer.estimate("Llama-3-8B", "decode", 8, kv_len=512, hardware="H200",
                                runtime="sglang")
    assert d.wall.mode == "graph" and d.wall.host_s < 1e-4
    # every SGLang step with prompt tokens pays it (extend batches run eagerly); vLLM's
    # piecewise graphs do not
    from roofline.transformer.serving import StepPricer

    def pricer(runtime: str) -> StepPricer:
        return StepPricer(rl.transformer.config("Llama-3-8B"), 512, 64, 1,
                          dict(hardware=rl.hardware("H200"), runtime=runtime))
    assert pricer("sglang").mixed_step_s(0, 16) >= want
    assert pricer("sglang").mixed_step_s(4, 16) >= want
    assert pricer("vllm").mixed_step_s(0, 16) < want / 2


def test_eager_all_reduce_copies_its_input_into_the_registered_buffer() -> None:
    """Outside a CUDA graph the custom all-reduce copies its input into its registered buffer
    first (all_reduce_unreg): SGLang's eager prefill of 509 tokens of Llama-3-70B at TP 4
    adds, per all-reduce (2 per layer), one copy of 509 * 8192 * 2 = 8,339,456 B read and
    written, and one more host call of the kernel class per copy (80 layers: 160 calls)."""
    from roofline._params.resolve import resolve

    kw = dict(seq_len=509, hardware="H200", tp=4, runtime="sglang")
    e = rl.transformer.estimate("Llama-3-70B", "prefill", 1, **kw)
    rows = _rows(e)
    for name in ("attn all_reduce input copy", "mlp all_reduce input copy"):
        assert rows[name]["bytes"] == 2 * 509 * 8192 * 2
        assert rows[name]["flops"] == 0
    ops = list(e.to_pandas().query("layer == 0")["op"])
    assert ops.index("attn all_reduce input copy") + 1 == ops.index("attn all_reduce")
    one = rl.transformer.estimate("Llama-3-70B", "prefill", 1, seq_len=509, hardware="H200",
                                  runtime="sglang")
    assert "attn all_reduce input copy" not in _rows(one)  # tp 1: no all-reduce
    _, _, ceff = resolve(rl.hardware("H200"), "default")
    h = ceff.host
    # per layer: 4 GEMM calls, 1 attention, 7 other kernels, 2 all-reduces and their 2
    # copies; head: the LM head, the vocabulary-parallel embedding (shard mask, lookup,
    # masked_fill, its all-reduce and that all-reduce's input copy), final norm, the logits'
    # all-gather, its reorder copy and the fp32 cast
    layer = (4 * h.op_gemm_launches + h.op_attention_launches + 11 * h.op_kernel_launches
             + 12 * h.module_call_launches + 4 * h.op_view_launches)
    head = h.op_gemm_launches + 9 * h.op_kernel_launches + 5 * h.module_call_launches \
        + 2 * h.op_view_launches
    want = (80 * layer + head + h.step_call_launches) * h.eager_launch_s
    assert e.wall.host_s == pytest.approx(want)
    assert e.wall.kernels == 80 * 16 + 10
    # a decode step replays a graph whose buffers were registered at capture: no copy
    d = rl.transformer.estimate("Llama-3-70B", "decode", 8, kv_len=512, hardware="H200",
                                tp=4, runtime="sglang")
    assert d.wall.mode == "graph" and "attn all_reduce input copy" not in _rows(d)


def test_all_reduce_over_the_custom_max_size_runs_nccl() -> None:
    """vLLM's / SGLang's custom all-reduce takes inputs under max_size = 8192 * 1024 B; larger
    ones run NCCL. Llama-3-70B prefill at TP 4 on H100 SXM (450 GB/s per direction):
    511 tokens reduce 511 * 8192 * 2 = 8,372,224 B (< 8 MiB, >= 512 KiB: the two-stage
    kernel), each rank loading 2 * 3/4 of it, 12,558,336 B, from its peers at 0.468 of the
    line rate after the kernel's 12.56 us fixed time; 512 tokens reduce 8,388,608 B (= 8 MiB,
    not under it): NCCL's ring sends 12,582,912 B, LL128 (14 + 6 * 1.9 = 25.4 us at
    0.92 * 370 GB/s: 62.36 us) ahead of Simple (28.8 us at 370 GB/s: 62.81 us)."""
    kw = dict(hardware=HW, tp=4, runtime="sglang")
    small = _rows(rl.transformer.estimate("Llama-3-70B", "prefill", 1, seq_len=511, **kw))
    big = _rows(rl.transformer.estimate("Llama-3-70B", "prefill", 1, seq_len=512, **kw))
    for name in ("attn all_reduce", "mlp all_reduce"):
        assert small[name]["bytes"] == 12_558_336
        assert small[name]["time_s"] == pytest.approx(12_558_336 / (0.468 * 450e9) + 12.56e-6)
        assert big[name]["bytes"] == 12_582_912
        assert big[name]["time_s"] == pytest.approx(12_582_912 / (0.92 * 370e9) + 25.4e-6)
    # the idealized program (runtime "megatron") keeps the line rate at every size
    ideal = _rows(rl.transformer.estimate("Llama-3-70B", "prefill", 1, seq_len=512,
                                          hardware=HW, tp=4))
    assert ideal["attn all_reduce"]["time_s"] == pytest.approx(12_582_912 / 450e9 + 6e-6)


def test_sglang_copies_by_hand() -> None:
    """SGLang launches what the other engines fuse or skip: the attention backends take
    ``q.contiguous()`` (Q is a column slice of the fused QKV output: one copy of the
    step's query), ``set_kv_buffer`` writes K and V by two index copies (the same bytes as
    vLLM's one ``reshape_and_cache_flash``), and the logits processor all-gathers the
    vocabulary shards' logits over TP, reorders them ([tp, m, V/tp] -> [m, V]: one copy) and
    casts the whole vocabulary to fp32. Llama-3-70B decode, batch 8, TP 4 (16 query heads,
    2 KV heads per GPU, vocabulary 128256 = 4 x 32064)."""
    kw = dict(kv_len=512, hardware=HW, tp=4)
    sg = rl.transformer.estimate("Llama-3-70B", "decode", 8, runtime="sglang", **kw)
    vl = rl.transformer.estimate("Llama-3-70B", "decode", 8, runtime="vllm", **kw)
    rows, vrows = _rows(sg), _rows(vl)
    # the query: 8 tokens x 16 heads x 128, bf16, read and written
    assert rows["q contiguous copy"]["bytes"] == 8 * 16 * 128 * 2 * 2
    assert "q contiguous copy" not in vrows
    # K and V of 8 tokens x 2 KV heads x 128, bf16, read and written: same bytes, two kernels
    assert rows["kv cache write"]["bytes"] == vrows["kv cache write"]["bytes"] == \
        8 * 2 * 2 * 128 * 2 * 2
    assert rows["kv cache write"]["time_s"] > vrows["kv cache write"]["time_s"]
    head, vhead = _rows(sg, layer=80), _rows(vl, layer=80)
    gathered = 8 * 128256 * 2  # bf16 logits of the whole vocabulary on every rank
    # NCCL's ring all-gather: each GPU sends 3/4 of the gathered buffer
    assert head["logits all_gather"]["bytes"] == gathered * 3 / 4
    nccl = rl.all_gather(gathered, 4, "nccl", hardware=HW, link_bytes_per_s=370e9)
    assert head["logits all_gather"]["time_s"] == pytest.approx(float(nccl.time_s))
    assert head["logits gather reorder"]["bytes"] == 2 * gathered
    assert head["logits to fp32 (sampler)"]["bytes"] == 8 * 128256 * 6
    assert vhead["logits to fp32 (sampler)"]["bytes"] == 8 * 32064 * 6  # vLLM: its shard
    assert "logits all_gather" not in _rows(rl.transformer.estimate(
        "Llama-3-70B", "decode", 8, runtime="sglang", kv_len=512, hardware=HW), layer=80)
    assert sg.time_s > vl.time_s


def test_vocab_parallel_embedding_by_hand() -> None:
    """At TP > 1 both engines' VocabParallelEmbedding maps the ids into the rank's shard
    (one fused kernel over the int64 ids), looks them up, zeroes the other shards' rows and
    all-reduces tokens x hidden: Llama-3-70B decode of 8 requests at TP 4 reduces
    8 * 8192 * 2 = 131,072 B with the custom all-reduce, as the layers' all-reduces; at
    TP 1 none of it runs."""
    for runtime in ("vllm", "sglang"):
        e = rl.transformer.estimate("Llama-3-70B", "decode", 8, kv_len=512, hardware=HW,
                                    tp=4, runtime=runtime)
        head, layer = _rows(e, layer=80), _rows(e)
        assert head["embedding vocab mask"]["bytes"] == 8 * 8 * 2
        assert head["embedding masked_fill"]["bytes"] == 8 * 8192 * 2 * 2
        assert head["embedding all_reduce"]["bytes"] == layer["attn all_reduce"]["bytes"]
        assert head["embedding all_reduce"]["time_s"] == layer["attn all_reduce"]["time_s"]
        one = _rows(rl.transformer.estimate("Llama-3-70B", "decode", 8, kv_len=512,
                                            hardware=HW, runtime=runtime), layer=80)
        assert "embedding all_reduce" not in one and "embedding vocab mask" not in one


def test_sglang_step_gap_by_hand() -> None:
    """SGLang (Dec 2024, FlashInfer 0.1.6) replays decode step k+1 only after FlashInfer's
    plan has read the indptr back: 12 queued ops (+2 fills when padded) back to back, two
    blocking copies, two host calls and the replay, the same at every batch size."""
    from roofline import _core
    from roofline._params.resolve import resolve
    from roofline.transformer.engines import engine_step_gap_s

    t = resolve("H200", "default")[2].host
    call = t.op_kernel_launches * t.eager_launch_s
    base = 2 * t.kernel_latency_s + 2 * call + t.graph_launch_s
    want = 12 * t.kernel_gap_s + base
    assert engine_step_gap_s("sglang", 16, "H200") == pytest.approx(want, rel=1e-12)
    assert engine_step_gap_s("sglang", 9, "H200") == pytest.approx(want + 2 * t.kernel_gap_s)
    assert 30e-6 < want < 80e-6  # tens of microseconds on the fitted host terms
    assert _core.synced_replay_gap_s(12, 2, 2, t) == pytest.approx(want, rel=1e-12)
    # no gap for other runtimes, above the largest capture size (eager), or without host terms
    assert engine_step_gap_s("vllm", 16, "H200") == 0.0
    assert engine_step_gap_s("sglang", capture_sizes("sglang")[-1] + 1, "H200") == 0.0
    assert engine_step_gap_s("sglang", 16, "H200", "peak") == 0.0
    for bad in (dict(queued_ops=-1.0), dict(syncs=float("nan")), dict(calls=float("inf"))):
        args = dict(queued_ops=12.0, syncs=2.0, calls=2.0) | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            _core.synced_replay_gap_s(terms=t, **args)


def test_sglang_decode_step_adds_the_gap_at_every_batch() -> None:
    """A decode step of SGLang is its graph's wall plus the gap; vLLM's is the graph's wall.
    The gap does not grow with the batch: steps at 16 and 24 requests (both capture sizes)
    differ by their graphs' difference only."""
    from roofline.transformer.engines import engine_step_gap_s
    from roofline.transformer.serving import StepPricer

    cfg = rl.transformer.config("Llama-3-70B")

    def pricer(runtime: str) -> StepPricer:
        return StepPricer(cfg, 512, 512, 1, dict(hardware=rl.hardware("H200"), tp=4,
                                                 runtime=runtime))

    sg, vl = pricer("sglang"), pricer("vllm")
    for d in (8, 9, 16, 24):
        graph = sg.decode_estimate(d).wall_s
        assert sg.decode_step_s(d) == pytest.approx(graph + engine_step_gap_s("sglang", d,
                                                                              "H200"))
        assert vl.decode_step_s(d) == pytest.approx(vl.decode_estimate(d).wall_s)
    assert sg.decode_step_s(24) - sg.decode_step_s(16) == pytest.approx(
        sg.decode_estimate(24).wall_s - sg.decode_estimate(16).wall_s)
    # the mixed-step path of a decode-only step is the decode step (gap included)
    assert sg.mixed_step_s(16, 0) == sg.decode_step_s(16)


def test_decode_all_reduce_runs_the_custom_kernels() -> None:
    """A SGLang decode graph of Llama-3-70B at TP 4 reduces batch x 8192 bf16 per all-reduce
    through vLLM's custom kernels: 24 requests (384 KiB) the one-stage kernel, 40 (640 KiB)
    the two-stage one; the idealized program keeps the alpha-beta ring."""
    for batch, one_stage in ((24, True), (40, False)):
        nbytes = batch * 8192 * 2
        kw = dict(kv_len=512, hardware="H200", tp=4)
        rows = _rows(rl.transformer.estimate("Llama-3-70B", "decode", batch,
                                             runtime="sglang", **kw))
        kernel = rl.all_reduce(nbytes, 4, "custom", hardware="H200")
        fixed = 6.57e-6 if one_stage else 12.56e-6
        assert kernel.overhead_s == pytest.approx(fixed)
        for name in ("attn all_reduce", "mlp all_reduce"):
            assert rows[name]["time_s"] == pytest.approx(kernel.time_s)
        ideal = _rows(rl.transformer.estimate("Llama-3-70B", "decode", batch, **kw))
        assert ideal["attn all_reduce"]["time_s"] == pytest.approx(
            rl.all_reduce(nbytes, 4, hardware="H200").time_s)


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_engine_lm_head_under_a_linear_recipe(runtime: str) -> None:
    """Under ``linear_recipe`` the LM head is a float8 linear (its spec in ``ops.f8``, not
    ``ops.gemms``): the engines' sampler cast still reads its rows x vocabulary (was an
    IndexError for every model)."""
    est = rl.transformer.estimate("Llama-3-8B", "decode", 8, kv_len=512, hardware="H100 SXM",
                                  runtime=runtime, linear_recipe="tensorwise")
    names = [name for _, name, _ in est.rows]
    assert "lm_head" in names or "lm_head (fwd+bwd)" in names
    cast = float(est.columns["bytes"][names.index("logits to fp32 (sampler)")])
    assert cast == pytest.approx(8 * 128256 * 6)  # 8 rows of logits: bf16 in, fp32 out
