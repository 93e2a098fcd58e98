"""rl.fusion: graph byte accounting, fusion groups, transforms, comparisons, bad input."""

from __future__ import annotations

import math

import pytest

import roofline as rl
from roofline.fusion import Graph

HW = "H100 SXM"


def relu_graph(n: int = 1024) -> Graph:
    g = Graph("relu(A @ B)")
    g.input("A", (n, n))
    g.input("B", (n, n))
    g.gemm("C", "A", "B")
    g.elementwise("R", ["C"], op="relu")
    return g


def test_unfused_kernels_come_from_the_op_functions() -> None:
    n = 1024
    plan = relu_graph(n).estimate(hardware=HW)
    gemm = rl.gemm(n, n, n, hardware=HW)
    relu = rl.elementwise(n * n, reads=1, writes=1, flops_per_element=1, hardware=HW)
    assert [k.ops for k in plan.kernels] == [("C",), ("R",)]
    assert plan.time_s == pytest.approx(float(gemm.time_s) + float(relu.time_s), rel=1e-12)
    # 2 B/element: gemm 3·n², relu 2·n² -> 10·n² bytes
    assert plan.bytes == 10 * n * n
    assert plan.launches == 2


def test_epilogue_group_keeps_the_intermediate_on_chip() -> None:
    n = 1024
    plan = relu_graph(n).estimate(groups=[["C", "R"]], hardware=HW)
    assert len(plan.kernels) == 1 and plan.launches == 1
    assert plan.bytes == 6 * n * n  # A, B read, R written: 3 x 2·n²
    assert plan.flops == 2 * n**3 + n * n  # the relu's n² FLOPs are counted
    assert plan.time_s == pytest.approx(float(rl.gemm(n, n, n, hardware=HW).time_s))


def test_epilogue_extra_input_adds_its_bytes() -> None:
    m, k, n = 512, 1024, 2048
    g = Graph()
    g.input("x", (m, k))
    g.input("w", (k, n))
    g.input("bias", (n,))
    g.gemm("y", "x", "w")
    g.elementwise("z", ["y", "bias"], op="bias_add")
    fused = g.estimate([["y", "z"]], hardware=HW, efficiency="peak")
    gemm = rl.gemm(m, k, n, hardware=HW, efficiency="peak")
    assert fused.bytes == float(gemm.bytes) + 2 * n  # the bias: n bf16 values
    # peak preset: the extra bytes cost bytes / bandwidth on top of the GEMM
    assert fused.time_s == pytest.approx(float(gemm.time_s) + 2 * n / 3.35e12, rel=1e-9)
    unfused = g.estimate(hardware=HW, efficiency="peak")
    # unfused: the bias add reads y (m·n) and the bias (n), writes z (m·n)
    assert unfused.kernels[1].estimate.bytes == 2 * (2 * m * n + n)


def test_elementwise_chain_fuses_into_one_stream() -> None:
    g = Graph()
    g.input("a", (4096, 4096))
    g.input("b", (4096, 4096))
    g.elementwise("c", ["a", "b"], op="add")
    g.elementwise("d", ["c"], op="gelu", flops_per_element=8)
    fused = g.estimate([["c", "d"]], hardware=HW)
    ref = rl.elementwise(4096 * 4096, reads=2, writes=1, flops_per_element=9, hardware=HW)
    assert fused.time_s == pytest.approx(float(ref.time_s))
    assert fused.bytes == 3 * 2 * 4096 * 4096
    assert g.estimate(hardware=HW).bytes == 5 * 2 * 4096 * 4096


def test_intermediate_read_outside_the_group_is_written() -> None:
    g = relu_graph(512)
    g.elementwise("S", ["C"], op="square")  # C is also read by a kernel outside the group
    plan = g.estimate([["C", "R"]], hardware=HW)
    assert plan.kernels[0].estimate.bytes == 2 * 512 * 512 * 4  # A, B, C and R
    assert g.outputs() == ["R", "S"]


def test_gemm_chain_group_is_a_flash_attention_kernel() -> None:
    s, d = 2048, 64
    g = Graph()
    g.input("Q", (s, d))
    g.input("Kt", (d, s))
    g.input("V", (s, d))
    g.gemm("S", "Q", "Kt")
    g.elementwise("P", ["S"], op="relu")
    g.gemm("O", "P", "V")
    fused = g.estimate([["S", "P", "O"]], hardware=HW)
    ref = rl.attention(1, 1, s, s, d, flash=True, hardware=HW)
    assert fused.time_s == pytest.approx(float(ref.time_s))
    assert fused.flops == 4 * s * s * d  # 2·s²·d per GEMM


def test_batched_and_folded_gemm_shapes() -> None:
    g = Graph()
    g.input("x", (4, 128, 256))
    g.input("w", (4, 256, 64))
    g.input("v", (64, 32))
    g.gemm("y", "x", "w")  # bmm: batch 4
    g.gemm("z", "y", "v")  # (4, 128, 64) @ (64, 32): m folds to 512
    assert g.ops["y"].params == {"m": 128, "k": 256, "n": 64, "batch": 4, "dtype": "bf16",
                                 "out_dtype": "bf16"}
    assert g.ops["z"].params["m"] == 512 and g.ops["z"].params["batch"] == 1
    assert g.tensors["z"].shape == (4, 128, 32)


def test_transforms_conserve_flops_and_save_launches() -> None:
    h = rl.fusion.horizontal_fusion(16, 2304, [1024, 1024, 8], hardware=HW)
    assert h.baseline.flops == h.candidate.flops == 2 * 16 * 2304 * 2056
    assert (h.baseline.launches, h.candidate.launches) == (3, 1)
    # x is read once instead of three times
    assert h.bytes_saved == 2 * 2 * 16 * 2304
    b = rl.fusion.batch_gemms(64, 128, 1024, 2, hardware=HW)
    assert b.baseline.flops == b.candidate.flops and b.baseline.bytes == b.candidate.bytes
    assert b.candidate.time_s < b.baseline.time_s


def test_flash_attention_transform_matches_rl_attention() -> None:
    c = rl.fusion.flash_attention(2, 8, 1024, 1024, 128, causal=True, hardware=HW)
    fl = rl.attention(2, 8, 1024, 1024, 128, causal=True, flash=True, hardware=HW)
    mat = rl.attention(2, 8, 1024, 1024, 128, causal=True, flash=False, hardware=HW)
    assert c.candidate.time_s == pytest.approx(float(fl.time_s))
    assert c.baseline.time_s == pytest.approx(float(mat.time_s))
    # The default model's materialized baseline is SDPA's math path: 3 upcasts, 2 scalings,
    # the causal mask (ones, tril, where), QK^T, mask add, softmax, eq, all, where, PV and two
    # downcasts (fp32 compute, as PyTorch runs it).
    from roofline.ops.attention import attention_kernels

    rows = attention_kernels(2, 8, 1024, 1024, 128, causal=True, flash=False, hardware=HW)
    assert c.baseline.launches == sum(r["launches"] for r in rows) == 17
    assert c.candidate.launches == 1


def test_matmul_chain_enumerates_every_association() -> None:
    for count, catalan in ((2, 1), (3, 2), (4, 5), (5, 14)):
        ch = rl.fusion.matmul_chain([64] * (count + 1), hardware=HW)
        assert len(ch.orders) == catalan
    ch = rl.fusion.matmul_chain([10, 1000, 10, 1000], hardware=HW, efficiency="peak")
    times = [p.time_s for _, p in ch.orders]
    assert times == sorted(times)
    assert ch.best[0] == "(M0 @ M1) @ M2"
    # FLOPs: (M0 M1) M2 = 2·10·1000·10 + 2·10·10·1000 = 400,000
    assert ch.best[1].flops == 400_000
    assert ch.compare().speedup > 1


def test_comparison_table_and_text() -> None:
    c = rl.fusion.epilogue_fusion(512, 512, 512, hardware=HW)
    df = c.to_pandas()
    assert list(df["plan"]) == [c.baseline.name, c.candidate.name, "saving"]
    assert df["time_s"].iloc[2] == pytest.approx(c.saving_s)
    assert "saved" in str(c) and c.to_dict()["speedup"] == pytest.approx(c.speedup)
    assert math.isclose(c.saving, 1 - 1 / c.speedup)


def test_same_model_for_both_plans() -> None:
    c = rl.fusion.epilogue_fusion(512, 512, 512, hardware="H200", efficiency="peak")
    assert c.baseline.efficiency == c.candidate.efficiency == "peak"
    a = relu_graph(256).estimate(hardware=HW)
    b = relu_graph(256).estimate(hardware="H200")
    with pytest.raises(ValueError, match="same hardware"):
        rl.fusion.compare(a, b)
    with pytest.raises(ValueError, match="different hardware"):
        a + b


def test_bad_input() -> None:
    g = relu_graph(64)
    with pytest.raises(KeyError, match="unknown op 'X'"):
        g.estimate([["X"]], hardware=HW)
    with pytest.raises(ValueError, match="two groups"):
        g.estimate([["C"], ["C", "R"]], hardware=HW)
    with pytest.raises(ValueError, match="empty"):
        g.estimate([[]], hardware=HW)
    with pytest.raises(TypeError, match="groups"):
        g.estimate("CR", hardware=HW)  # type: ignore[arg-type]
    for bad in ([None], [[["C"]]], [[1]], 5, [[b"C"]]):
        with pytest.raises(TypeError, match="groups"):
            g.estimate(bad, hardware=HW)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="twice in group 0"):
        g.estimate([["C", "C"]], hardware=HW)
    # None means no fusion groups, like the default
    assert g.estimate(None, hardware=HW).time_s == g.estimate(hardware=HW).time_s
    with pytest.raises(KeyError, match="unknown tensor"):
        g.gemm("D", "A", "Z")
    with pytest.raises(ValueError, match="already exists"):
        g.input("A", (2, 2))
    with pytest.raises(ValueError, match="inner dimensions"):
        g.input("E", (3, 3))
        g.gemm("F", "A", "E")
    with pytest.raises(ValueError, match="shape"):
        g.input("G", (0, 2))
    with pytest.raises(TypeError, match="shape"):
        g.input("H", (2.5, 2))
    with pytest.raises(KeyError):
        g.input("I", (2, 2), dtype="bf17")
    with pytest.raises(ValueError, match="m must be a positive integer, got 0"):
        rl.fusion.epilogue_fusion(0, 1, 1, hardware=HW)
    with pytest.raises(TypeError, match="ns"):
        rl.fusion.horizontal_fusion(1, 1, "1024", hardware=HW)
    with pytest.raises(ValueError, match="at most 8"):
        rl.fusion.matmul_chain([2] * 10, hardware=HW)
    with pytest.raises(KeyError):
        rl.fusion.epilogue_fusion(4, 4, 4, hardware="H900")
    with pytest.raises(ValueError, match="cannot fuse"):
        g2 = Graph()
        g2.input("a", (8, 8))
        g2.gemm("b", "a", "a")
        g2.gemm("c", "a", "a")
        g2.estimate([["b", "c"]], hardware=HW)
    with pytest.raises(ValueError, match="share one shape"):
        rl.fusion.fuse_projections(4, 8, [16, 32], [(0, 8), (1, 8)], hardware=HW)


def test_cli_fusion(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from roofline.cli import main

    assert main(["fusion", "epilogue", "512", "512", "512", "--hardware", HW,
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    ref = rl.fusion.epilogue_fusion(512, 512, 512, hardware=HW)
    assert data["speedup"] == pytest.approx(ref.speedup)
    assert data["candidate"]["bytes"] == 6 * 512 * 512
    assert main(["fusion", "horizontal", "64", "2304", "1024,1024,1024,8,128,128",
                 "--follow-up", "4:1024", "--follow-up", "5:1024", "--hardware", "H200"]) == 0
    out = capsys.readouterr().out
    assert "1 GEMM + 1 bmm" in out and "saving" in out
    assert main(["fusion", "chain", "128,10000,128,10000", "--names", "C,A,B",
                 "--hardware", HW, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["candidate"]["name"] == "(C @ A) @ B"
    assert main(["fusion", "batch", "0", "1", "1", "--count", "2", "--hardware", HW]) == 2
    assert "M must be a positive integer, got 0" in capsys.readouterr().err
