"""rl.attention(backend=...): SDPA's dispatch rule, per-backend physics, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline._params.architecture import architecture
from roofline.ops.attention import BACKENDS, attention_backend, attention_kernels

H100 = "H100 SXM"


@pytest.mark.parametrize(("hw", "arch"), [
    ("H100 SXM", "hopper"), ("H200", "hopper"), ("H800", "hopper"), ("GH200 144GB", "hopper"),
    ("B200", "blackwell"), ("GB200", "blackwell"), ("A100 SXM 80GB", "ampere"),
    ("A10G", "ampere"), ("L40S", "ada"), ("RTX 4090", "ada"), ("RTX 5090", "blackwell_consumer"),
    ("V100 SXM2 16GB", "volta"), ("MI300X", "rocm"), ("TPU v5p", "other"), ("Gaudi 3", "other"),
])
def test_architecture_from_name(hw: str, arch: str) -> None:
    assert architecture(rl.hardware(hw)) == arch


@pytest.mark.parametrize(("hw", "kw", "expected"), [
    # Hopper / datacenter Blackwell try cuDNN first (torch >= 2.10, cuDNN > 9.15)
    (H100, {}, "cudnn"),
    (H100, {"backward": True}, "cudnn"),
    (H100, {"q_len": 1, "kv_len": 4096, "kv_heads": 8}, "cudnn"),
    ("H200", {}, "cudnn"),
    ("B200", {}, "cudnn"),
    # cuDNN limits: head dim <= 128 (or 192/128), multiple of 8, kv_len != 1
    (H100, {"head_dim": 256}, "flash"),
    (H100, {"head_dim": 192, "v_head_dim": 128}, "cudnn"),
    (H100, {"head_dim": 100}, "flash"),          # flash takes any head dim <= 256
    (H100, {"head_dim": 260}, "efficient"),      # 260 % 8 != 0 -> not efficient... see below
    (H100, {"head_dim": 512}, "efficient"),
    (H100, {"head_dim": 516}, "math"),           # not a multiple of 8 and > 256
    (H100, {"q_len": 1, "kv_len": 1}, "flash"),
    (H100, {"dtype": "fp32"}, "efficient"),
    (H100, {"dtype": "fp8"}, "standard"),
    (H100, {"shared_kv": True, "head_dim": 576, "v_head_dim": 512, "kv_heads": 1}, "standard"),
    # Ampere / Ada: FlashAttention-2 first
    ("A100 SXM 80GB", {}, "flash"),
    # a causal (bottom-right) mask on q_len != kv_len: CausalBias(LOWER_RIGHT)'s dispatch,
    # flash first (SDPA's non-square check only guards its top-left is_causal), no cuDNN
    ("A100 SXM 80GB", {"causal": True, "q_len": 128, "kv_len": 1024}, "flash"),
    (H100, {"causal": True, "q_len": 128, "kv_len": 1024}, "flash"),
    (H100, {"causal": True, "q_len": 1024, "kv_len": 1024}, "cudnn"),
    ("MI300X", {"causal": True, "q_len": 128, "kv_len": 1024}, "flash"),
    ("A100 SXM 80GB", {"causal": True, "q_len": 1, "kv_len": 1024}, "flash"),
    ("L40S", {}, "flash"),
    ("L40S", {"head_dim": 200, "backward": True}, "efficient"),
    ("A100 SXM 80GB", {"head_dim": 200, "backward": True}, "flash"),
    # Volta: no flash, no bf16 tensor cores
    ("V100 SXM2 16GB", {"dtype": "fp16"}, "efficient"),
    ("V100 SXM2 16GB", {}, "math"),
    # ROCm: AOTriton flash, head dims up to 512
    ("MI300X", {}, "flash"),
    ("MI300X", {"head_dim": 512}, "flash"),
    # no CUDA / ROCm SDPA
    ("TPU v5p", {}, "standard"),
])
def test_dispatch_rule(hw: str, kw: dict, expected: str) -> None:
    args = {"batch": 2, "heads": 8, "q_len": 1024, "kv_len": 1024, "head_dim": 128, **kw}
    if args["head_dim"] == 260:  # 260 is a multiple of 4, not of 8: bf16 needs 8 -> math
        expected = "math"
    assert attention_backend(**args, hardware=hw) == expected


def test_dispatch_over_arrays() -> None:
    names = attention_backend(1, 8, 512, 512, np.array([64, 256, 512, 516]), hardware=H100)
    assert list(names) == ["cudnn", "flash", "efficient", "math"]
    # a mixed array is estimated per element, as the scalar calls are
    d = np.array([64, 256, 512])
    e = rl.attention(1, 8, 512, 512, d, hardware=H100)
    for i, di in enumerate(d):
        assert e.time_s[i] == pytest.approx(float(rl.attention(1, 8, 512, 512, int(di),
                                                               hardware=H100).time_s))


def test_auto_equals_the_resolved_backend() -> None:
    for backward in (False, True):
        a = rl.attention(4, 16, 2048, 2048, 128, causal=True, backward=backward, hardware=H100)
        c = rl.attention(4, 16, 2048, 2048, 128, causal=True, backward=backward, hardware=H100,
                         backend="cudnn")
        assert float(a.time_s) == float(c.time_s)


def test_flash_false_means_math() -> None:
    a = rl.attention(2, 8, 512, 512, 64, flash=False, hardware=H100)
    m = rl.attention(2, 8, 512, 512, 64, backend="math", hardware=H100)
    assert float(a.time_s) == float(m.time_s)
    assert float(rl.attention(2, 8, 512, 512, 64, flash=False, backend="math",
                              hardware=H100).time_s) == float(m.time_s)
    with pytest.raises(ValueError, match="flash=False"):
        rl.attention(2, 8, 512, 512, 64, flash=False, backend="cudnn", hardware=H100)


def test_math_path_runs_in_fp32() -> None:
    # b=1, h=2, q=kv=64, d=32, bf16: QK^T and PV at the fp32 rate on fp32 scores
    rows = attention_kernels(1, 2, 64, 64, 32, backend="math", hardware=H100, efficiency="peak")
    names = [r["kernel"] for r in rows]
    # _safe_softmax = softmax, eq(-inf), all() over each row, where(all masked, 0, softmax)
    assert names == ["upcast Q, K, V", "scale Q, K", "QK^T", "softmax", "eq -inf",
                     "all over rows", "where", "PV", "downcast O", "downcast weights"]
    assert rows[-1]["bytes_read"] == 2 * 64 * 64 * 4     # the fp32 weights it also returns
    assert rows[-1]["bytes_written"] == 2 * 64 * 64 * 2
    qk = rows[2]
    assert qk["flops"] == 2 * 2 * 64 * 64 * 32           # 524288
    assert qk["bytes_written"] == 2 * 64 * 64 * 4        # fp32 scores: 32768
    assert rows[4]["bytes_written"] == 2 * 64 * 64        # eq writes one bool per score
    assert rows[0]["bytes_read"] == 3 * 2 * 64 * 32 * 2  # Q, K, V in bf16: 24576
    assert rows[0]["bytes_written"] == 3 * 2 * 64 * 32 * 4
    causal = attention_kernels(1, 2, 64, 64, 32, causal=True, backend="math", hardware=H100)
    cnames = [r["kernel"] for r in causal]
    assert cnames[2:5] == ["causal mask", "QK^T", "mask add"]
    assert causal[2]["bytes_written"] == 64 * 64 * (1 + 1 + 4)  # ones, tril, where -> fp32
    # the broadcast mask add, eq and where run aten's non-vectorized kernel: slower than their
    # bytes at the DRAM rate; the vectorized softmax is not
    big = {r["kernel"]: r for r in attention_kernels(32, 32, 512, 512, 64, causal=True,
                                                     backend="math", hardware=H100)}
    for name in ("mask add", "eq -inf", "where"):
        assert big[name]["compute_s"] > big[name]["memory_s"] > 0
    assert big["softmax"]["compute_s"] == 0
    # fp32 inputs need no casts
    f32 = attention_kernels(1, 2, 64, 64, 32, dtype="fp32", backend="math", hardware=H100)
    assert f32[0]["kernel"] == "scale Q, K"


def test_math_gqa_expands_kv_per_query_head() -> None:
    # SDPA's math path with enable_gqa: K, V (fp32 after the upcast) are repeat_interleave'd to
    # every query head, so the GEMMs run per query head; the backward sums each group back.
    # b=1, h=8, g=2, q=kv=64, d=32, bf16.
    rows = {r["kernel"]: r for r in attention_kernels(1, 8, 64, 64, 32, kv_heads=2,
                                                      backend="math", hardware=H100)}
    rep = rows["repeat K, V"]
    assert rep["bytes_read"] == 2 * (2 * 64 * 32) * 4       # K, V of 2 kv heads: 32768
    assert rep["bytes_written"] == 2 * (8 * 64 * 32) * 4    # ... of 8 query heads: 131072
    qk = rows["QK^T"]
    assert qk["flops"] == 2 * 8 * 64 * 64 * 32              # 8 bmm problems of 64 x 64 x 32
    assert qk["bytes_read"] == (8 * 64 * 32 + 8 * 64 * 32) * 4  # Q and the expanded K
    assert rows["scale Q, K"]["bytes_read"] == (8 * 64 * 32 + 8 * 64 * 32) * 4
    bwd = {r["kernel"]: r for r in attention_kernels(1, 8, 64, 64, 32, kv_heads=2,
                                                     backward=True, backend="math",
                                                     hardware=H100)}
    assert "repeat K, V" not in bwd
    red = bwd["dK, dV group sum"]
    assert red["bytes_read"] == 2 * (8 * 64 * 32) * 4
    assert red["bytes_written"] == 2 * (2 * 64 * 32) * 4
    # equal head counts: K, V pass untouched (no copies, no sums)
    mha = [r["kernel"] for r in attention_kernels(1, 8, 64, 64, 32, kv_heads=8, backward=True,
                                                  backend="math", hardware=H100)]
    assert "dK, dV group sum" not in mha
    # within GQA the backward is flat but for the group sums' writes: more kv heads never faster
    t = [float(rl.attention(1, 8, 64, 64, 32, kv_heads=g, backward=True, backend="math",
                            hardware=H100).time_s) for g in (1, 2, 4)]
    assert t[0] <= t[1] <= t[2]


def test_cudnn_gqa_backward_reduces_heads() -> None:
    # b=1, h=8, g=2, kv=64, d=32: dK, dV written per query head in fp32, reduced per kv head
    rows = attention_kernels(1, 8, 64, 64, 32, kv_heads=2, backward=True, backend="cudnn",
                             hardware=H100)
    names = [r["kernel"] for r in rows]
    assert names[-1] == "dK, dV head reduce"
    red = rows[-1]
    assert red["bytes_read"] == 1 * 8 * 64 * (32 + 32) * 4      # 131072
    assert red["bytes_written"] == 1 * 2 * 64 * (32 + 32) * 2   # 16384
    mha = attention_kernels(1, 8, 64, 64, 32, backward=True, backend="cudnn", hardware=H100)
    assert "dK, dV head reduce" not in [r["kernel"] for r in mha]
    fl = attention_kernels(1, 8, 64, 64, 32, kv_heads=2, backward=True, backend="flash",
                           hardware=H100)
    assert "dK, dV head reduce" not in [r["kernel"] for r in fl]


def test_presets_keep_the_standard_formulas() -> None:
    for eff in ("peak", "torchao", "constant"):
        for kw in ({}, {"backward": True, "kv_heads": 2}, {"flash": False}):
            auto = rl.attention(2, 8, 512, 512, 64, hardware=H100, efficiency=eff, **kw)
            std = rl.attention(2, 8, 512, 512, 64, hardware=H100, efficiency=eff,
                               **({"backend": "standard"} | kw))
            assert float(auto.time_s) == float(std.time_s)


def test_zero_terms_reproduce_the_standard_model() -> None:
    from roofline._params.shape_aware import core_objects

    hw = rl.hardware(H100)
    chw, ceff = core_objects(hw)
    ceff.attention = _core.AttentionTerms()  # every term zero
    args = [np.array([x]) for x in (4.0, 16.0, 16.0, 2048.0, 2048.0, 128.0, 128.0)]
    for backward in (False, True):
        std = _core.attention_sweep(*args, False, True, True, backward, _core.DType.bf16, chw,
                                    ceff, _core.AttentionBackend.standard)
        for b in (_core.AttentionBackend.flash, _core.AttentionBackend.efficient):
            got = _core.attention_sweep(*args, False, True, True, backward, _core.DType.bf16,
                                        chw, ceff, b)
            assert float(got[0][0]) == float(std[0][0])


def test_physics_ordering_on_hopper() -> None:
    # wgmma (cuDNN) beats mma.sync (FA2), which beats the memory-efficient kernel and math
    t = {b: float(rl.attention(4, 16, 4096, 4096, 128, causal=True, backend=b,
                               hardware=H100).time_s)
         for b in ("cudnn", "flash", "efficient", "math")}
    assert t["cudnn"] < t["flash"] < t["efficient"] < t["math"]
    # on Ampere cuDNN runs mma.sync kernels too: within a few percent of FA2
    a = [float(rl.attention(4, 16, 4096, 4096, 128, backend=b, hardware="A100 SXM 80GB").time_s)
         for b in ("cudnn", "flash")]
    assert a[0] == pytest.approx(a[1], rel=0.05)


def test_h200_takes_h100_terms() -> None:
    # Same SMs and clocks: compute-bound FA2 backward is the same; bandwidth-bound decode is faster
    for b in ("flash", "cudnn"):
        h100 = rl.attention(1, 16, 16384, 16384, 128, backward=True, backend=b, hardware=H100)
        h200 = rl.attention(1, 16, 16384, 16384, 128, backward=True, backend=b, hardware="H200")
        assert float(h200.time_s) == pytest.approx(float(h100.time_s), rel=0.05)
        d100 = rl.attention(64, 32, 1, 32768, 128, kv_heads=8, backend=b, hardware=H100)
        d200 = rl.attention(64, 32, 1, 32768, 128, kv_heads=8, backend=b, hardware="H200")
        assert float(d200.time_s) < 0.85 * float(d100.time_s)  # 4.8 vs 3.35 TB/s


@pytest.mark.parametrize("backend", ["flash", "cudnn", "efficient", "math", "standard",
                                     "flash_triton"])
@pytest.mark.parametrize("backward", [False, True])
def test_monotone_in_every_dimension(backend: str, backward: bool) -> None:
    base = {"batch": 2, "heads": 8, "q_len": 512, "kv_len": 1024, "head_dim": 64,
            "kv_heads": 2}
    t0 = float(rl.attention(**base, backward=backward, backend=backend, hardware=H100).time_s)
    # kv_heads grows within GQA (2 -> 4 of 8 heads); at kv_heads == heads cuDNN's backward drops
    # its head-reduce kernel and the math path its K, V copies and group sums (test_monotone_u4)
    for key, bigger in (("batch", 4), ("heads", 16), ("q_len", 1024), ("kv_len", 4096),
                        ("head_dim", 128), ("kv_heads", 4)):
        t1 = float(rl.attention(**{**base, key: bigger}, backward=backward, backend=backend,
                                hardware=H100).time_s)
        assert t1 >= t0, (key, t0, t1)
    # decode: more cached tokens or more sequences never get faster
    prev = 0.0
    for kv in (256, 1024, 4096, 16384, 65536):
        t = float(rl.attention(8, 32, 1, kv, 128, kv_heads=8, backend=backend,
                               hardware=H100).time_s)
        assert t >= prev
        prev = t


def test_backends_listed() -> None:
    assert set(BACKENDS) == {"auto", "flash", "cudnn", "efficient", "math", "standard", "fa3",
                             "flashinfer", "flashmla", "flash_triton", "flex"}


@pytest.mark.parametrize(("value", "exc", "match"), [
    ("flahs", KeyError, "flash"),
    ("cuDNN ", None, None),
    (3, TypeError, "backend must be a string"),
    (None, TypeError, "backend must be a string"),
])
def test_bad_backend(value: object, exc: type | None, match: str | None) -> None:
    if exc is None:
        rl.attention(1, 8, 128, 128, 64, backend=value, hardware=H100)  # type: ignore[arg-type]
        return
    with pytest.raises(exc, match=match):
        rl.attention(1, 8, 128, 128, 64, backend=value, hardware=H100)  # type: ignore[arg-type]
    with pytest.raises(exc, match=match):
        attention_kernels(1, 8, 128, 128, 64, backend=value, hardware=H100)  # type: ignore[arg-type]


def test_fa2_on_blackwell_scales_with_sms_and_clock() -> None:
    # mma.sync throughput per SM per clock is the H100's: B200 = 148 SMs x 1.965 GHz vs
    # 132 x 1.83 GHz -> ~1.2x the H100's FA2 speed, not its 2.3x larger tcgen05 peak.
    args = (4, 32, 8192, 8192, 128)
    h100 = float(rl.attention(*args, backend="flash", hardware=H100).time_s)
    b200 = float(rl.attention(*args, backend="flash", hardware="B200").time_s)
    expected = (148 * 1.965e9) / (132 * 1.83e9)  # 1.204
    assert h100 / b200 == pytest.approx(expected, rel=0.05)
    # cuDNN (native tcgen05 / wgmma path) gains with the peak instead
    c100 = float(rl.attention(*args, backend="cudnn", hardware=H100).time_s)
    c200 = float(rl.attention(*args, backend="cudnn", hardware="B200").time_s)
    assert c100 / c200 > 1.8


def test_math_strided_kernels_scale_with_the_fp32_rate() -> None:
    # The non-vectorized kernels' element rate is a per-SM, per-clock property: on H200 (same
    # SMs and clocks as H100) the mask add takes as long, though its bytes move 1.4x faster.
    add = {hw: next(r for r in attention_kernels(32, 32, 512, 512, 64, causal=True,
                                                 backend="math", hardware=hw)
                    if r["kernel"] == "mask add") for hw in (H100, "H200")}
    assert add["H200"]["compute_s"] == pytest.approx(add[H100]["compute_s"], rel=1e-9)
    assert add["H200"]["memory_s"] < 0.8 * add[H100]["memory_s"]
    assert add["H200"]["time_s"] == pytest.approx(add[H100]["time_s"], rel=0.02)


def test_efficient_decode_one_cta_per_sm_is_latency_bound() -> None:
    # batch 1, 32 heads: 32 CTAs of the memory-efficient kernel, one per SM, no split-KV; each
    # streams its 64 K keys x 2 x 128 x 2 bytes of K and V at the rate one CTA sustains alone
    t = float(rl.attention(1, 32, 1, 65536, 128, backend="efficient", hardware=H100).time_s)
    assert t > 65536 * 2 * 128 * 2 / 50e9
    # with more (sequence, head) pairs than SMs the loads overlap across CTAs: DRAM-bound
    big = float(rl.attention(32, 32, 1, 65536, 128, backend="efficient", hardware=H100).time_s)
    assert big / t > 5.0
    # the bound is the memory-efficient kernel's: FA2 splits the KV loop over the idle SMs
    fa2 = float(rl.attention(1, 32, 1, 65536, 128, backend="flash", hardware=H100).time_s)
    assert fa2 < t / 4


def test_cudnn_decode_terms_on_hopper_only() -> None:
    from roofline._params.attention import core_terms
    from roofline._params.packaged import terms

    doc = terms("attention")

    hopper = core_terms(rl.hardware(H100), doc).cudnn
    assert hopper.bandwidth_scale > 1.0 and hopper.decode_call_s > hopper.call_s
    # elsewhere cuDNN runs mma.sync kernels without TMA: the streaming rate
    assert core_terms(rl.hardware("A100 SXM 80GB"), doc).cudnn.bandwidth_scale == 0.0


def test_cudnn_softmax_on_blackwell_at_the_sfu_rate() -> None:
    """Blackwell doubled the tensor rate per SM and clock, not the SFUs (exp): cuDNN's softmax
    cost per score, in bf16 FLOP-equivalents, grows by the tensor rate per SM and clock
    against the H100's; Blackwell Ultra (GB300 / B300) doubles the SFUs and halves that.
    Hopper and FA2 (mma.sync: the H100's rate per SM and clock) keep the fitted 130."""
    from roofline._params.attention import _softmax_scale, softmax_flops_scale
    from roofline._params.resolve import resolve

    def cudnn_softmax(name: str) -> tuple[float, float]:
        ceff = resolve(name, "default")[2]
        return ceff.attention.cudnn.softmax_flops, ceff.attention_softmax_flops

    sm, base = cudnn_softmax("B200")
    assert base == 130.0
    b200 = rl.hardware("B200")
    # B200: 2.25e15 x its bf16 fraction / (148 SMs x 1.965 GHz) against the H100's
    assert sm == pytest.approx(130.0 * _softmax_scale(b200), rel=1e-12)
    assert 1.5 < softmax_flops_scale(b200) < 2.2
    gb300 = rl.hardware("GB300")
    assert softmax_flops_scale(gb300) == pytest.approx(_softmax_scale(gb300) / 2, rel=1e-12)
    assert cudnn_softmax("H100 SXM")[0] == 0.0  # the standard 130 applies
    assert softmax_flops_scale(rl.hardware("H200")) == 1.0
    # the exponentials now cost more of a B200 cuDNN forward at head dim 64 than at 128
    args = dict(batch=2, heads=64, q_len=8192, kv_len=8192, causal=True, hardware="B200",
                backend="cudnn")
    t64 = float(rl.attention(head_dim=64, **args).time_s)
    t128 = float(rl.attention(head_dim=128, **args).time_s)
    assert t64 > 0.5 * t128


def test_triton_flash_attention_is_fa2_work_at_its_measured_share() -> None:
    """backend="flash_triton": Tri Dao's Triton FlashAttention (llm-foundry's attn_impl
    triton). Its rate is FA2's times the median Triton / FA2 forward + backward TFLOPS over
    the 21 A100 shapes of FlashAttention-2's README charts where both ran (0.4813, between
    0.42 and 0.68 per shape); the rest of its terms (tiles, call times) are FA2's. The
    share is recomputed from the measurements, so the document cannot drift from them."""
    from _benchmarks import load_benchmark

    from roofline._params.attention import core_terms
    from roofline._params.packaged import terms

    fit = load_benchmark("fit_attention")
    doc = terms("attention")
    rho = doc["universal"]["flash_triton"]["ratio"]
    assert rho == pytest.approx(fit.triton_ratio(), abs=5e-5)
    assert 0.42 < rho < 0.68
    for hw in (H100, "A100 SXM 80GB"):
        t = core_terms(rl.hardware(hw), doc)
        assert t.flash_triton.fraction == pytest.approx(t.flash.fraction * rho)
        assert t.flash_triton.bwd_fraction == pytest.approx(t.flash.bwd_fraction * rho)
        # a long causal call is rate-bound: about 1 / rho times FA2's time, both directions
        for bwd in (False, True):
            kw = dict(causal=True, backward=bwd, hardware=hw)
            fa2 = float(rl.attention(4, 16, 8192, 8192, 128, backend="flash", **kw).time_s)
            tri = float(rl.attention(4, 16, 8192, 8192, 128, backend="flash_triton",
                                     **kw).time_s)
            assert tri / fa2 == pytest.approx(1 / rho, rel=0.05), (hw, bwd)
    with pytest.raises(ValueError, match="flash_triton.*V100"):
        rl.attention(1, 8, 128, 128, 64, backend="flash_triton", hardware="V100")
