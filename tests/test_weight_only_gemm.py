"""rl.weight_only_gemm (int4 / int8 weights x 16-bit activations, Marlin) and the weight-only
recipes of rl.transformer.estimate / serve."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import roofline as rl
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.transformer.formats import weight_bytes_of, weight_only_recipe

H100 = "H100 SXM"
BIG = [(4096, 4096), (8192, 28672), (28672, 8192), (73728, 18432)]
HW = ["A10", "A100 SXM 80GB", H100, "L40S", "B200"]


def test_bytes_and_flops_by_hand() -> None:
    e = rl.weight_only_gemm(16, 4096, 4096, "int4", "bf16", H100)
    # A 16*4096*2 = 131072; W 4096*4096/2 = 8388608; scales (4096/128)*4096*2 = 262144;
    # C 16*4096*2 = 131072
    assert e.bytes == 131072 + 8388608 + 262144 + 131072
    assert e.flops == 2 * 16 * 4096 * 4096
    zp = rl.weight_only_gemm(16, 4096, 4096, "int4", "bf16", H100, zero_points=True)
    assert zp.bytes - e.bytes == 32 * 4096 // 2  # one packed 4-bit zero point per group, column
    i8 = rl.weight_only_gemm(16, 4096, 4096, "int8", "bf16", H100, group_size=-1)
    assert i8.bytes == 131072 + 4096 * 4096 + 4096 * 2 + 131072  # per-channel: n scales
    # Marlin, 100 rows: a 64-row pass and a 36-row remainder launch read the weight twice;
    # Machete's one launch reads it once
    two = rl.weight_only_gemm(100, 4096, 4096, "int4", "bf16", H100, kernel="marlin")
    assert two.bytes == 100 * 4096 * 2 + 2 * (8388608 + 262144) + 100 * 4096 * 2
    one = rl.weight_only_gemm(100, 4096, 4096, "int4", "bf16", H100, kernel="machete")
    assert one.bytes == 100 * 4096 * 2 + (8388608 + 262144) + 100 * 4096 * 2


def test_peak_preset_is_the_roofline_of_its_bytes() -> None:
    hw = rl.hardware(H100)
    e = rl.weight_only_gemm(16, 4096, 4096, "int4", "bf16", hw, efficiency="peak")
    # 8912896 B / 3.35e12 B/s = 2.6606 us > 536870912 FLOP / 989.5e12 = 0.54 us
    assert e.time_s == pytest.approx(8912896 / 3.35e12, rel=1e-12)
    assert e.time_s == pytest.approx(e.bytes / hw.mem_bytes_per_s, rel=1e-12)


@pytest.mark.parametrize("hw", HW)
def test_never_faster_than_the_datasheet_roofline(hw: str) -> None:
    h = rl.hardware(hw)
    m = np.array([1, 7, 16, 33, 64, 100, 128, 1000, 4096, 16384])[:, None]
    for k, n in BIG + [(2048, 512)]:
        e = rl.weight_only_gemm(m, k, n, "int4", "bf16", h)
        roof = np.maximum(e.flops / h.peak_flops_per_s("bf16"), e.bytes / h.mem_bytes_per_s)
        assert np.all(e.time_s >= roof)


@pytest.mark.parametrize("hw", HW)
def test_speedup_over_bf16_falls_with_m(hw: str) -> None:
    m = 2 ** np.arange(4, 13)  # 16 ... 4096
    for k, n in BIG:
        s = rl.gemm(m, k, n, "bf16", hw).time_s / rl.weight_only_gemm(m, k, n, "int4", "bf16",
                                                                      hw).time_s
        # falls, then flat once both are compute-bound (4 %: tile and wave rounding of either
        # kernel, clock drop of the bf16 GEMM)
        assert np.all(np.diff(s) <= 0.04 * s[:-1]), (k, n, s)
        assert s[-1] < 0.5 * s[0]
        # memory-bound: up to 16 / 4.125 = 3.88 (Marlin's A100 figure: 2.2 on Llama-7B's
        # small layers, where fixed times weigh; B200: 1.7), near it on the largest layer
        assert 1.5 < s[0] < 4.0
        if k * n > 1e9:
            assert s[0] > 3.0
        assert s[-1] < 1.05  # compute-bound: the bf16 rate or below (dequantization)


@pytest.mark.parametrize("hw", HW)
def test_monotone_in_m_n_k(hw: str) -> None:
    # Marlin's launches: m <= 64 and multiples of 64 read the weight once (see Notes)
    m = np.concatenate([np.arange(1, 65), 64 * np.arange(2, 40)])
    t = rl.weight_only_gemm(m, 8192, 8192, "int4", "bf16", hw).time_s
    assert np.all(np.diff(t) >= 0)
    for wdt in ("int4", "int8"):
        n = 128 * np.arange(1, 120)
        assert np.all(np.diff(rl.weight_only_gemm(32, 4096, n, wdt, "bf16", hw).time_s) >= 0)
        k = 128 * np.arange(1, 120)
        assert np.all(np.diff(rl.weight_only_gemm(32, k, 4096, wdt, "bf16", hw).time_s) >= 0)
    # int8 weights stream twice the bytes: slower than int4 while memory-bound (m <= 16)
    small = m[:16]
    i8 = rl.weight_only_gemm(small, 8192, 8192, "int8", "bf16", hw).time_s
    assert np.all(i8 > t[:16])


def test_bad_input_names_argument_and_value() -> None:
    with pytest.raises(ValueError, match=r"group_size must divide k, got group_size=128 and "
                       r"k=4100"):
        rl.weight_only_gemm(16, 4100, 4096, "int4", hardware=H100)
    with pytest.raises(ValueError, match=r"weight_dtype 'int3'"):
        rl.weight_only_gemm(16, 4096, 4096, "int3", hardware=H100)
    with pytest.raises(ValueError, match=r"dtype must be bf16 or fp16.*'fp32'"):
        rl.weight_only_gemm(16, 4096, 4096, "int4", "fp32", hardware=H100)
    with pytest.raises(TypeError, match=r"group_size must be an integer.*1.5"):
        rl.weight_only_gemm(16, 4096, 4096, "int4", hardware=H100, group_size=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"m must be a positive integer"):
        rl.weight_only_gemm(0, 4096, 4096, "int4", hardware=H100)


def test_registry_prices_vllm_marlin_ops() -> None:
    a = TensorArg((16, 4096), "fp16", 2)
    w = TensorArg((4096 // 16, 4096 * 16 * 4 // 32), "int32", 4)  # Marlin's packed int4 layout
    s = TensorArg((32, 4096), "fp16", 2)
    ws = TensorArg((512,), "int32", 4)
    want = rl.weight_only_gemm(16, 4096, 4096, "int4", "fp16", H100, kernel="marlin")
    new = Call("_C::gptq_marlin_gemm", inputs=(a, None, w, None, s, None, None, None, None, ws,
                                               0, 16, 4096, 4096, True, False, True, False))
    old = Call("_C::marlin_gemm", inputs=(a, w, s, ws, None, None, None),
               concrete=("", "", "", "", "16", "4096", "4096"))
    for call in (new, old):
        found, how = price(call, Pricer(H100, "default"))
        assert found is not None and len(found) == 1, how
        assert found[0][1].time_s == want.time_s
        assert "group_size=128, kernel='marlin'" in how
    b = TensorArg((4096 * 4096 // 8,), "int32", 4)  # Machete's prepacked int4 weight
    mach = Call("_C::machete_mm", inputs=(a, b, 0, None, s, None, 128, None, None, None))
    found, how = price(mach, Pricer(H100, "default"))
    assert found is not None, how
    assert found[0][1].time_s == rl.weight_only_gemm(16, 4096, 4096, "int4", "fp16", H100,
                                                     kernel="machete").time_s


def test_kernel_choice_follows_vllm() -> None:
    # Hopper: Machete for group 64 / 128 / per channel and k % 64, n % 128 aligned shapes
    assert rl.weight_only_gemm(16, 4096, 4096, hardware=H100).meta["inputs"]["kernel"] == \
        "machete"
    assert rl.weight_only_gemm(16, 4096, 4096, hardware="H200", group_size=32).meta[
        "inputs"]["kernel"] == "marlin"
    assert rl.weight_only_gemm(16, 4096, 4160, hardware=H100).meta["inputs"]["kernel"] == \
        "marlin"  # n = 4160 is not a multiple of 128
    for hw in ("A100 SXM 80GB", "L40S", "B200"):
        assert rl.weight_only_gemm(16, 4096, 4096, hardware=hw).meta["inputs"]["kernel"] == \
            "marlin"
    with pytest.raises(ValueError, match=r"kernel 'machete' runs on Hopper \(sm90\) only, got "
                       r"hardware 'A100 SXM 80GB'"):
        rl.weight_only_gemm(16, 4096, 4096, hardware="A100 SXM 80GB", kernel="machete")
    with pytest.raises(ValueError, match=r"kernel 'machete' needs group_size 64, 128 or 0.*"
                       r"group_size=32"):
        rl.weight_only_gemm(16, 4096, 4096, hardware=H100, kernel="machete", group_size=32)
    with pytest.raises(ValueError, match=r"unknown kernel 'cutlass'"):
        rl.weight_only_gemm(16, 4096, 4096, hardware=H100, kernel="cutlass")


def test_machete_runs_at_the_bf16_rate_when_compute_bound() -> None:
    # wgmma runs asynchronously: the dequantization (1.625 lane ops per weight and 128-row
    # tile at 33.5e12 lane ops/s) hides under the MMAs (256 FLOPs per weight and tile at
    # 989.5e12 FLOP/s), while Marlin's mma.sync pays it on top: ~30 % on an H100
    m = 8192
    bf16 = rl.gemm(m, 8192, 28672, "bf16", H100).time_s
    mach = rl.weight_only_gemm(m, 8192, 28672, hardware=H100, kernel="machete").time_s
    marl = rl.weight_only_gemm(m, 8192, 28672, hardware=H100, kernel="marlin").time_s
    assert 0.95 < bf16 / mach < 1.05
    assert bf16 / marl < 0.8


def test_recipe_names() -> None:
    assert weight_only_recipe("w4a16") == ("int4", 128, False)
    assert weight_only_recipe("W8A16_channel") == ("int8", 0, False)
    assert weight_only_recipe("w4a16_g32_zp") == ("int4", 32, True)
    assert weight_only_recipe("tensorwise") is None
    assert weight_only_recipe("w3a16") is None
    assert weight_bytes_of("w4a16", 2.0) == 0.5 + 2 / 128  # 0.515625
    assert weight_bytes_of("w8a16_channel", 2.0) == 1.0
    assert weight_bytes_of(None, 2.0) == 2.0


def test_transformer_weight_only_recipes() -> None:
    kw = dict(kv_len=2048, hardware=H100)
    bf16 = rl.transformer.estimate("llama-3-8b", "decode", 1, **kw)
    w4 = rl.transformer.estimate("llama-3-8b", "decode", 1, linear_recipe="w4a16", **kw)
    w8 = rl.transformer.estimate("llama-3-8b", "decode", 1, linear_recipe="w8a16", **kw)
    assert w4.time_s < w8.time_s < bf16.time_s
    cfg = rl.transformer.config("llama-3-8b")
    counts = cfg.param_counts()
    other = counts["embedding"] + counts["lm_head"] + counts["norms"]
    linear = counts["attention"] + counts["mlp"]  # 1342177280 + 5637144576
    # the linears at 0.515625 bytes per weight, embeddings / head / norms in bf16
    assert w4.memory["weights_bytes"] == pytest.approx(linear * 0.515625 + other * 2, rel=1e-9)
    with pytest.raises(ValueError, match=r"linear_recipe 'w4a16' \(weight-only\) is for "
                       r"inference.*phase='train'"):
        rl.transformer.estimate("llama-3-8b", "train", 1, seq_len=2048, hardware=H100,
                                linear_recipe="w4a16")


def test_serve_w4a16_frees_memory_for_kv_cache() -> None:
    kw = dict(batches=(1, 32), prompt_len=1024, output_len=256)
    bf16 = rl.transformer.serve("llama-3-8b", "A10", **kw)
    w4 = rl.transformer.serve("llama-3-8b", "A10", linear_recipe="w4a16", **kw)
    assert w4["weights_gb"].iloc[0] < 0.4 * bf16["weights_gb"].iloc[0]
    assert w4.attrs["max_batch"] > bf16.attrs["max_batch"]
    assert w4["tpot_s"].iloc[0] < 0.5 * bf16["tpot_s"].iloc[0]  # decode streams the weights


DATA = Path(__file__).resolve().parents[1] / "data" / "measurements" / "marlin_readme.csv"


@pytest.mark.validation
def test_marlin_readme_figures() -> None:
    """Speedup over the fp16 GEMM of Marlin's README figures (A10 batch sweep; model layers
    at batch 16 on A10, RTX 3090, A100): median error 1.8 % (max 32 %: Llama-7B on A100,
    whose small layers are latency-bound), pinned with 2 points of slack."""
    errors = []
    with DATA.open() as f:
        for row in csv.DictReader(f):
            if row["hardware"] not in rl.list_hardware():
                continue
            m = int(row["m"])
            ks = np.array([int(x) for x in row["k"].split(";")])
            ns = np.array([int(x) for x in row["n"].split(";")])
            dense = rl.gemm(m, ks, ns, row["dtype"], row["hardware"]).time_s.sum()
            quant = rl.weight_only_gemm(m, ks, ns, row["weight_dtype"], row["dtype"],
                                        row["hardware"],
                                        group_size=int(row["group_size"])).time_s.sum()
            errors.append(abs(dense / quant / float(row["speedup_over_fp16"]) - 1))
    assert len(errors) == 23
    assert np.median(errors) < 0.038
    assert max(errors) < 0.35


def test_grouped_moe_by_hand_and_against_dense() -> None:
    from roofline.ops.weight_only_gemm import weight_only_grouped_gemm

    counts = np.zeros(128, dtype=np.int64)
    counts[:8] = 1  # decode: 8 experts with one token each
    e = weight_only_grouped_gemm(counts, 2048, 1536, hardware=H100)
    # per active expert: A 2048*2, W 2048*1536/2 + 16*1536*2 scales, C 1536*2
    assert e.bytes == 8 * (4096 + 1572864 + 49152 + 3072)
    assert e.flops == 2 * 8 * 2048 * 1536
    # one expert alone is one Marlin launch of the same shape
    one = np.zeros(128, dtype=np.int64)
    one[5] = 16
    assert weight_only_grouped_gemm(one, 2048, 1536, hardware=H100).bytes == \
        rl.weight_only_gemm(16, 2048, 1536, hardware=H100, kernel="marlin").bytes
    # more tokens never take less time; scenarios along the leading axis
    more = counts.copy()
    more[:64] += 3
    t = weight_only_grouped_gemm(np.stack([counts, more]), 2048, 1536, hardware=H100).time_s
    assert t.shape == (2,) and t[1] > t[0]
    bf16 = rl.grouped_gemm(None, 2048, 1536, dtype="bf16", hardware=H100, counts=counts)
    # bytes 50.39 MB / 13.03 MB = 3.87; torch._grouped_mm adds its setup kernel
    assert 3.0 < bf16.time_s / e.time_s < 4.5
    with pytest.raises(ValueError, match=r"counts must be an array with one entry per expert"):
        weight_only_grouped_gemm(np.zeros(8, dtype=np.int64), 2048, 1536, hardware=H100)


def test_moe_model_with_w4a16() -> None:
    kw = dict(kv_len=2048, hardware=H100)
    bf16 = rl.transformer.estimate("qwen3-30b-a3b", "decode", 8, **kw)
    w4 = rl.transformer.estimate("qwen3-30b-a3b", "decode", 8, linear_recipe="w4a16", **kw)
    assert w4.time_s < 0.6 * bf16.time_s
    assert w4.memory["weights_bytes"] < 0.3 * bf16.memory["weights_bytes"]
