"""transformer.estimate(runtime="compiled"): an HF model under torch.compile as Inductor runs
it, against hand-derived fused-kernel bytes, roofline.torch.estimate(launch="compiled") of
the real module on the meta device (within 5 %, issue #23), the H200 programs and bad input."""

from __future__ import annotations

import json
import os
import warnings

import pytest

import roofline as rl
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.transformer.compiled import fused

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from _hf_meta import meta_model, step_inputs  # noqa: E402

import roofline.torch  # noqa: E402,F401

HW = "H200"
CACHE = 4096
DATA = os.path.join(os.path.dirname(__file__), "..", "data", "programs", "h200")
LLAMA = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8,
         "vocab_size": 128256, "max_position_embeddings": 8192, "rope_theta": 500000.0}


def _cfg() -> rl.transformer.TransformerConfig:
    return rl.transformer.from_hf(LLAMA)


def _rows(e) -> dict[str, float]:
    ops = e.ops()
    return {r.op: float(r.bytes) for r in ops.itertuples()}


def test_fused_kernel_bytes_hand_derived():
    """Decode, batch 1 (one token): each fused kernel is one pass of its inputs and outputs."""
    e = rl.transformer.estimate(_cfg(), "decode", 1, kv_len=CACHE + 1, hardware=HW,
                                runtime="compiled", cache="static")
    b = _rows(e)
    # SiLU · up: reads gate and up (2 x 14336 bf16), writes the product: 3*14336*2 = 86016
    assert b["silu*up"] == 86016
    # residual add + RMSNorm: reads stream, block output, weight; writes sum and normed:
    # 5*4096*2 = 40960
    assert b["attn_norm (+residual)"] == 40960
    # repeat_kv of K and V: reads the cache (8 heads), writes 32 heads, 4097 slots x 128:
    # 2*(8+32)*4097*128*2 = 83906560
    assert b["repeat_kv"] == 2 * (8 + 32) * 4097 * 128 * 2
    # RoPE: q (32 x 128) and k (8 x 128) read and written, 8-byte positions read twice:
    # 2*(32+8)*128*2 + 2*8 = 20496
    assert b["rope"] == 2 * (32 + 8) * 128 * 2 + 2 * 8
    # the StaticCache write of V: the new token only (no clone of the cache): 2*8*128*2 + 8
    assert b["kv cache index_copy"] == 2 * 8 * 128 * 2 + 8


def test_triton_call_with_known_outputs_is_one_pass():
    """A Triton kernel whose inputs and outputs are known is priced on their bytes; from a
    trace (no outputs) a name saying rsqrt still prices as the compiled RMSNorm row op."""
    x = TensorArg((4096, 4096), "bf16", 2)
    w = TensorArg((4096,), "bf16", 2)
    p = Pricer(rl.hardware(HW), "default")
    known, _ = price(fused("red", "add_mean_mul_pow_rsqrt", [x, x, w], [x, x]), p)
    assert known is not None
    assert float(known[0][1].bytes) == 4 * 4096 * 4096 * 2 + 4096 * 2
    one = rl.elementwise(4 * 4096 * 4096 * 2 + 4096 * 2, reads=1, writes=0, dtype="int8",
                         hardware=HW)
    assert float(known[0][1].time_s) == pytest.approx(float(one.time_s), rel=1e-6)
    traced, _ = price(Call("triton_red_fused_add_mean_mul_pow_rsqrt_0", (x, w)), p)
    assert traced is not None and traced[0][0] != "memory"


def test_fused_rejects_a_bad_kind():
    with pytest.raises(ValueError, match="kind must be 'poi' or 'red', got 'pw'"):
        fused("pw", "mul", [], [])


def test_compiled_decode_repeats_kv_and_is_slower_than_eager_at_batch_64():
    """HF under Dynamo repeats K and V per query head instead of packing the query (eager):
    H200 StaticCache decode at batch 64 took 5.28 ms compiled (CUDA graph) and 1.98 ms eager
    (CUDA graph); the model's ratio is above 2 as well."""
    kw = {"kv_len": CACHE + 1, "hardware": HW, "cache": "static", "launch": "graph"}
    comp = rl.transformer.estimate(_cfg(), "decode", 64, runtime="compiled", **kw)
    eager = rl.transformer.estimate(_cfg(), "decode", 64, runtime="hf", **kw)
    assert comp.time_s > 2 * eager.time_s
    ops = comp.ops()
    rep = float(ops.loc[ops["op"] == "repeat_kv", "time_s"].sum())
    # 2 layers x 2 copies of 64*(8+32)*4097*128*2 B = 4.3 GB at most 4.8 TB/s: >= 1.8 ms
    assert 2 * rep >= 2 * 2 * 64 * 40 * 4097 * 128 * 2 / 4.8e12


def test_launch_defaults_to_compiled_and_graph_is_gpu_time():
    e = rl.transformer.estimate(_cfg(), "decode", 16, kv_len=CACHE + 1, hardware=HW,
                                runtime="compiled")
    assert e.launch == "compiled"
    assert e.wall_s >= e.time_s
    g = rl.transformer.estimate(_cfg(), "decode", 16, kv_len=CACHE + 1, hardware=HW,
                                runtime="compiled", launch="graph")
    assert g.time_s == e.time_s
    assert g.wall_s <= e.wall_s


@pytest.mark.parametrize("phase", ["train", "prefill", "decode"])
def test_monotone_in_batch_and_fewer_kernels_than_eager(phase):
    kw = {"kv_len": CACHE + 1} if phase == "decode" else {"seq_len": 1024}
    times = [rl.transformer.estimate(_cfg(), phase, b, hardware=HW, runtime="compiled",
                                     **kw).time_s for b in (1, 4, 16)]
    assert times == sorted(times)
    comp = rl.transformer.estimate(_cfg(), phase, 4, hardware=HW, runtime="compiled", **kw)
    eager = rl.transformer.estimate(_cfg(), phase, 4, hardware=HW, runtime="hf", **kw)
    assert comp.wall.kernels < eager.wall.kernels / 2


def test_bad_input_names_the_runtime():
    with pytest.raises(NotImplementedError, match="runtime='compiled' does not model"):
        rl.transformer.estimate("llama-3-8b", "decode", kv_len=10, hardware=HW,
                                runtime="compiled", tp=2)
    with pytest.raises(ValueError, match="cache.*'static' needs runtime='hf' or 'compiled'"):
        rl.transformer.estimate("llama-3-8b", "decode", kv_len=10, hardware=HW,
                                cache="static")
    with pytest.raises(ValueError, match="cache.*'static' needs runtime='hf' or 'compiled'"):
        rl.transformer.estimate("llama-3-8b", "decode", kv_len=10, hardware=HW,
                                runtime="vllm", cache="static")
    with pytest.raises(ValueError, match="runtime"):
        rl.transformer.estimate("llama-3-8b", "decode", kv_len=10, hardware=HW,
                                runtime="inductor")


# ---- parity with roofline.torch.estimate(launch="compiled") of the real module ----------


@pytest.fixture(scope="module")
def llama():
    return meta_model("llama")


@pytest.fixture(scope="module")
def mixtral():
    return meta_model("mixtral")


def _torch_step(hc, model, phase: str, batch: int, cache: str):
    ids, kw, mode = step_inputs(hc, phase, batch, CACHE, cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rl.torch.UnmodeledOpsWarning)
        return rl.torch.estimate(model, ids, HW, mode=mode, kwargs=kw, launch="compiled")


def _config_step(hc, phase: str, batch: int, cache: str):
    kw: dict[str, object] = ({"kv_len": CACHE + 1, "cache": cache} if phase == "decode"
                             else {"seq_len": CACHE})
    if phase == "train":
        kw["optimizer_update"] = False  # torch.estimate runs no optimizer
    return rl.transformer.estimate(rl.transformer.from_hf(hc.to_dict()), phase, batch,
                                   hardware=HW, runtime="compiled", **kw)


@pytest.mark.parametrize("phase,cache", [("train", "dynamic"), ("prefill", "dynamic"),
                                         ("decode", "static"), ("decode", "dynamic")])
@pytest.mark.parametrize("batch", [1, 16, 64])
def test_llama_compiled_agrees_with_torch_estimate(llama, phase, cache, batch):
    hc, model = llama
    ref = _torch_step(hc, model, phase, batch, cache)
    est = _config_step(hc, phase, batch, cache)
    assert est.time_s == pytest.approx(ref.time_s, rel=0.05)
    assert est.wall_s == pytest.approx(ref.wall_s, rel=0.05)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
@pytest.mark.parametrize("batch", [1, 64])
def test_mixtral_compiled_agrees_with_torch_estimate(mixtral, phase, batch):
    hc, model = mixtral
    ref = _torch_step(hc, model, phase, batch, "dynamic")
    assert _config_step(hc, phase, batch, "dynamic").time_s == pytest.approx(ref.time_s,
                                                                           rel=0.05)


def test_torch_compiled_fuses_a_pointwise_chain_into_one_pass():
    """mm, then (y * 2).relu() + 1 (three eager kernels), then mm: compiled, the chain is one
    kernel reading y and writing its result: 2 * 64*256*2 B = 65536 B."""

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(128, 256, bias=False)
            self.b = torch.nn.Linear(256, 128, bias=False)

        def forward(self, x):
            return self.b((self.a(x) * 2).relu() + 1)

    x = torch.empty(64, 128, dtype=torch.bfloat16, device="meta")
    m = M().to(torch.bfloat16)
    eager = rl.torch.estimate(m, x, HW, mode="inference")
    comp = rl.torch.estimate(m, x, HW, mode="inference", launch="compiled")
    assert [r.kind for r in eager.records].count("gemm") == 2
    assert len(eager.records) == 5
    assert [r.kind for r in comp.records] == ["gemm", "elementwise", "gemm"]
    assert float(comp.records[1].estimate.bytes) == 2 * 64 * 256 * 2


def test_torch_compiled_in_place_cache_write_moves_the_new_rows_only():
    """index_copy_ of 1 new row into a 4096-row buffer (a StaticCache update) writes that
    row, then a read of the whole buffer is another kernel (the mutation is stored first)."""

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("cache", torch.empty(4096, 512, dtype=torch.bfloat16))

        def forward(self, x, idx):
            self.cache.index_copy_(0, idx, x * 2)
            return self.cache * 3

    x = torch.empty(1, 512, dtype=torch.bfloat16, device="meta")
    idx = torch.zeros(1, dtype=torch.long, device="meta")
    comp = rl.torch.estimate(M(), (x, idx), HW, mode="inference", launch="compiled")
    nbytes = [float(r.estimate.bytes) for r in comp.records]
    # x read (1024 B), index read (8 B), the new row written (1024 B); then the buffer read
    # and the product written: 2 * 4096*512*2
    assert nbytes == [1024 + 8 + 1024, 2 * 4096 * 512 * 2]


# ---- the H200 programs (data/programs/h200): pinned errors, nothing fitted --------------


def _h200(name: str) -> dict:
    with open(os.path.join(DATA, "programs.jsonl")) as f:
        return next(r for r in map(json.loads, f) if r["name"] == name)


@pytest.mark.parametrize("name,launch,tol", [
    ("llama_decode_static_compiled_b64", "compiled", 0.05),
    ("llama_decode_static_compiledgraph_b64", "graph", 0.05),
    # batch 1: every fused kernel is priced at the model's small-kernel floor (~5 us; the
    # trace's Triton kernels took 1-3.6 us): GPU time +20 %
    ("llama_decode_static_compiledgraph_b1", "graph", 0.20),
])
def test_h200_compiled_decode(name, launch, tol):
    """Before runtime='compiled' the HF eager program priced these -54 % (b64), -59 %
    (graph b64) and +53 % (graph b1) against the measured step."""
    r = _h200(name)
    e = rl.transformer.estimate(_cfg(), "decode", r["config"]["batch"], kv_len=CACHE + 1,
                                hardware=HW, runtime="compiled", cache="static",
                                launch=launch)
    assert e.wall_s == pytest.approx(r["wall_s"], rel=tol)


def test_h200_compiled_train_gpu_time():
    """The compiled train step (batch 1 x 4096, AdamW foreach): the model is 11 % fast (18 %
    before the optimizer was priced as its 8 x 71 multi_tensor_apply launches: 14.1 -> 18.6 ms
    vs 19.6 ms of kernels), from the masked attention (cuDNN with the mask HF builds under
    Dynamo ran 824 / 2412 us per layer, forward / backward; the non-causal model 464 / 1352
    us) and the loss statistics kernel (742 us vs 220 us priced)."""
    r = _h200("llama_train_compiled_b1")
    e = rl.transformer.estimate(_cfg(), "train", 1, seq_len=CACHE, hardware=HW,
                                runtime="compiled", optimizer="adamw_foreach")
    assert -0.15 < e.time_s / r["gpu_s"] - 1 < 0.0
