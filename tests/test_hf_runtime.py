"""transformer.estimate(runtime="hf") against roofline.torch.estimate of the real Hugging Face
modules (LlamaForCausalLM with Llama-3-8B dims, MixtralForCausalLM), built on the meta device:
the same kernels, priced by the same registry entries, within 5 % (issue #23)."""

from __future__ import annotations

import warnings

import pytest

import roofline as rl
from roofline.ops.registry import Call, Pricer, TensorArg, price

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from _hf_meta import meta_model, step_inputs  # noqa: E402

import roofline.torch  # noqa: E402,F401

HW = "H100 SXM"
CACHE = 4096


@pytest.fixture(scope="module")
def llama():
    return meta_model("llama")


@pytest.fixture(scope="module")
def mixtral():
    return meta_model("mixtral")


def _torch_step(hc, model, phase: str, batch: int) -> float:
    ids, kw, mode = step_inputs(hc, phase, batch, CACHE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rl.torch.UnmodeledOpsWarning)
        return rl.torch.estimate(model, ids, HW, mode=mode, kwargs=kw).time_s


def _config_step(hc, phase: str, batch: int, runtime: str = "hf") -> float:
    cfg = rl.transformer.from_hf(hc.to_dict())
    kw: dict[str, int | bool] = {"kv_len": CACHE + 1} if phase == "decode" else {"seq_len": CACHE}
    if phase == "train":
        # the module's step is forward + backward: torch.estimate runs no optimizer
        kw["optimizer_update"] = False
    return rl.transformer.estimate(cfg, phase, batch, hardware=HW, runtime=runtime,
                                   **kw).time_s


@pytest.mark.parametrize("phase", ["train", "prefill", "decode"])
@pytest.mark.parametrize("batch", [1, 16, 64])
def test_llama_hf_runtime_agrees_with_torch_estimate(llama, phase, batch):
    hc, model = llama
    ref = _torch_step(hc, model, phase, batch)
    assert _config_step(hc, phase, batch) == pytest.approx(ref, rel=0.05)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
@pytest.mark.parametrize("batch", [1, 16, 64])
def test_mixtral_hf_runtime_agrees_with_torch_estimate(mixtral, phase, batch):
    hc, model = mixtral
    ref = _torch_step(hc, model, phase, batch)
    assert _config_step(hc, phase, batch) == pytest.approx(ref, rel=0.05)


def test_megatron_is_the_default_and_hf_is_slower(llama):
    hc, _ = llama
    cfg = rl.transformer.from_hf(hc.to_dict())
    default = rl.transformer.estimate(cfg, "decode", 16, kv_len=CACHE + 1, hardware=HW)
    meg = _config_step(hc, "decode", 16, "megatron")
    assert default.time_s == meg
    # the HF step pays the cache cats, the fp32 norm chains and the unfused ops
    assert _config_step(hc, "decode", 16) > 1.3 * meg


def test_decode_cache_cats_run_the_vectorized_kernel(llama):
    """A generation loop's DynamicCache step cats a contiguous past (the previous step's
    cat) with one token's contiguous states, 16-byte slices: aten's
    ``CatArrayBatchedCopy_vectorized``, one streaming pass over 2 x the output (read +
    write), not the generic strided kernel's 0.68 TB/s. The H200 decode programs rewound
    their cache with ``crop(-1)`` (a non-contiguous past): there the 4 cats took ~6 of the
    7.6 ms step (2 layers, batch 64), which ``tests/test_h200_programs.py`` checks."""
    from roofline.ops.registry import Pricer

    hc, _ = llama
    cfg = rl.transformer.from_hf(hc.to_dict())
    e = rl.transformer.estimate(cfg, "decode", 64, kv_len=CACHE + 1, hardware=HW, runtime="hf")
    ops = e.ops()
    cat = float(ops.loc[ops["op"] == "kv cache cat", "time_s"].sum()) * 2  # two layers
    out = 64 * 8 * 4097 * 128 * 2
    one = Pricer(rl.hardware(HW), "default").traffic(2 * out, 0, 0.0, "cat")
    assert cat == pytest.approx(4 * float(one.time_s), rel=0.03)
    generic = 4 * 2 * out / (1024 * 132 * 2 * 2 / 0.8e-6)
    assert cat < 0.3 * generic
    assert 0.2 < cat / e.time_s < 0.6


def test_batched_copy_prices_twice_the_output_at_its_bandwidth():
    """The generic strided kernel (a non-contiguous input, or strides not recorded)."""
    hw = rl.hardware(HW)
    p = Pricer(hw, "default")
    past = TensorArg((64, 8, 4096, 128), "bf16", 2, (4097 * 1024, 4097 * 128, 128, 1))
    new = TensorArg((64, 8, 1, 128), "bf16", 2)
    full = TensorArg((64, 8, 4097, 128), "bf16", 2)
    live, _ = price(Call("aten::cat", ((past, new), -2), (full,)), p)
    trace, _ = price(Call("aten::cat", ((past, new), -2)), p)  # a trace: inputs only
    want = 2 * full.nbytes / (1024 * 132 * 2 * 2 / 0.8e-6)  # the kernel's bytes in flight
    for found in (live, trace):
        (_, e), = found
        assert float(e.bytes) == 2 * full.nbytes
        assert float(e.memory_s) == pytest.approx(want)
        assert float(e.time_s) >= want
    # the rate is set by the SMs, not the HBM: the same on an H200 (132 SMs, 4.8 TB/s)
    (_, e200), = price(Call("aten::cat", ((past, new), -2), (full,)),
                       Pricer(rl.hardware("H200"), "default"))[0]
    assert float(e200.memory_s) == pytest.approx(want)


def test_index_copy_prices_the_rows_it_writes():
    """StaticCache's ``index_copy_`` of one token into a 4097-slot cache moves that token's
    K (or V), not the 1 GB cache: read + write of 256 x 8 x 1 x 128 bf16 and one index."""
    p = Pricer(rl.hardware("H200"), "default")
    cache = TensorArg((256, 8, 4097, 128), "bf16", 2)
    idx = TensorArg((1,), None, 8)
    src = TensorArg((256, 8, 1, 128), "bf16", 2)
    for call in (Call("aten::index_copy_", (cache, 2, idx, src), (cache,)),
                 Call("aten::index_copy_", (cache, 2, idx, src))):
        (_, e), = price(call, p)[0]
        assert float(e.bytes) == 2 * src.nbytes + 8
        assert float(e.time_s) < 20e-6  # launch-bound, not 2 x 537 MB / 4.8 TB/s


def test_grouped_mm_entry_splits_rows_evenly():
    p = Pricer(rl.hardware(HW), "default")
    a, b = TensorArg((32, 4096), "bf16", 2), TensorArg((8, 4096, 28672), "bf16", 2)
    offs = TensorArg((8,), None, 4)
    (_, e), = price(Call("aten::_grouped_mm", (a, b, offs), (TensorArg((32, 28672), "bf16",
                                                                     2),)), p)[0]
    ref = rl.grouped_gemm(None, 4096, 28672, hardware=HW, counts=[4] * 8)
    assert float(e.time_s) == pytest.approx(float(ref.time_s))
    assert float(e.flops) == pytest.approx(2 * 32 * 4096 * 28672)


def test_grouped_mm_weight_gradient_is_the_grouped_kernel():
    """2D x 2D (the expert weight gradient, offs along K) runs torch's CUTLASS grouped kernel
    and its setup kernel, as the forward does: priced as rl.grouped_gemm of the mean K."""
    p = Pricer(rl.hardware(HW), "default")
    a, b = TensorArg((2048, 32768), "bf16", 2), TensorArg((32768, 1536), "bf16", 2)
    offs = TensorArg((128,), None, 4)
    (_, e), = price(Call("aten::_grouped_mm", (a, b, offs)), p)[0]
    ref = rl.grouped_gemm(2048, 256, 1536, 128, hardware=HW)
    assert float(e.time_s) == pytest.approx(float(ref.time_s))
    assert float(e.flops) == pytest.approx(2 * 2048 * 32768 * 1536)
    cublas = rl.gemm(2048, 256, 1536, batch=128, hardware=HW)
    assert float(e.time_s) > float(cublas.time_s)  # the grouped rate and setup kernel


def test_runtime_names_are_checked():
    with pytest.raises(rl.UnknownNameError, match="runtime") as exc:
        rl.transformer.estimate("llama-3-8b", "decode", kv_len=10, hardware=HW, runtime="hff")
    assert "hf" in str(exc.value)
    # every name in RUNTIMES is modeled (compiled: test_compiled_runtime.py; vllm, sglang:
    # test_engine_runtimes.py)
    with pytest.raises(TypeError, match="runtime"):
        rl.transformer.estimate("llama-3-8b", "decode", kv_len=10, hardware=HW, runtime=3)


def test_hf_runtime_refuses_what_it_does_not_model():
    with pytest.raises(NotImplementedError, match="parallelism"):
        rl.transformer.estimate("llama-3-8b", "decode", kv_len=10, hardware=HW, runtime="hf", tp=2)
    with pytest.raises(NotImplementedError, match="latent"):
        rl.transformer.estimate("deepseek-v3", "decode", kv_len=10, hardware=HW, runtime="hf")
    with pytest.raises(NotImplementedError, match="MoE training"):
        rl.transformer.estimate("mixtral-8x7b", "train", seq_len=128, hardware=HW, runtime="hf")


@pytest.mark.parametrize("cache", ["dynamic", "static"])
@pytest.mark.parametrize("phase,batch", [("decode", 1), ("decode", 16), ("prefill", 1)])
def test_llama_hf_eager_wall_agrees_with_torch_estimate(llama, cache, phase, batch):
    """The eager host model (views, module calls, op dispatch by class, the step's entry) gives
    transformer.estimate(runtime="hf") the wall roofline.torch.estimate gives the real module:
    host-bound decode steps included."""
    if cache == "static" and phase == "prefill":
        pytest.skip("prefill into an empty StaticCache: decode is the case that differs")
    hc, model = llama
    if phase == "decode":
        ids = torch.zeros(batch, 1, dtype=torch.long, device="meta")
        if cache == "static":
            kv = transformers.StaticCache(config=hc, max_cache_len=CACHE + 1)
        else:
            kv = transformers.DynamicCache(config=hc)
        for i in range(hc.num_hidden_layers):
            k = torch.empty(batch, hc.num_key_value_heads, CACHE, 128, dtype=torch.bfloat16,
                            device="meta")
            kv.update(k, k.clone(), i)
        kw = {"cache": kv, "use_cache": True}
        if cache == "static":
            kw["position_ids"] = torch.zeros(batch, 1, dtype=torch.long, device="meta")
        size = {"kv_len": CACHE + 1}
    else:
        ids = torch.zeros(batch, CACHE, dtype=torch.long, device="meta")
        kw, size = {"logits_to_keep": 1}, {"seq_len": CACHE}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = rl.torch.estimate(model, ids, HW, mode="inference", kwargs=kw)
    cfg = rl.transformer.from_hf(hc.to_dict())
    est = rl.transformer.estimate(cfg, phase, batch, hardware=HW, runtime="hf", cache=cache,
                                  **size)
    assert est.wall_s == pytest.approx(ref.wall_s, rel=0.05)
    assert est.wall_s >= est.time_s
    if phase == "decode" and batch == 1:
        assert est.wall.launch_bound  # host-bound, as measured (data/programs/h200)
