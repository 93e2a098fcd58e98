"""roofline.torch.estimate on real nn.Modules built here (CPU, meta tensors, torch 2.13)."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import roofline as rl  # noqa: E402
import roofline.torch as rlt  # noqa: E402

HW = "H100 SXM"


class MLP(nn.Module):
    def __init__(self, d: int = 256, h: int = 1024) -> None:
        super().__init__()
        self.up = nn.Linear(d, h)
        self.act = nn.GELU()
        self.down = nn.Linear(h, d)

    def forward(self, x):  # type: ignore[no-untyped-def]
        return self.down(self.act(self.up(x)))


class LlamaBlock(nn.Module):
    """RMSNorm, GQA attention with SDPA (causal), SwiGLU MLP, residuals."""

    def __init__(self, d: int = 256, heads: int = 8, kv_heads: int = 2, hidden: int = 512):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.attn_norm = nn.RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.mlp_norm = nn.RMSNorm(d)
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):  # type: ignore[no-untyped-def]
        b, s, d = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(h).view(b, s, 2, self.kv_heads, self.hd).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def test_mlp_gemms_match_rl_gemm() -> None:
    model = MLP()
    x = torch.randn(4, 32, 256)
    rep = rlt.estimate(model, x, hardware=HW, mode="inference")
    gemms = rep.table().query("kind == 'gemm'")
    # two addmm: (128 x 256) @ (256 x 1024) and (128 x 1024) @ (1024 x 256), fp32
    assert list(gemms["op"]) == ["addmm", "addmm"]
    assert gemms["flops"].sum() == 2 * (2 * 128 * 256 * 1024)
    want = rl.gemm(128, 256, 1024, "fp32", HW).time_s + rl.gemm(128, 1024, 256, "fp32", HW).time_s
    assert math.isclose(gemms["time_s"].sum(), want, rel_tol=1e-12)
    assert set(rep.table()["module"]) >= {"MLP.up", "MLP.down", "MLP.act"}
    assert rep.unmodeled == []
    assert rep.time_s == pytest.approx(rep.table()["time_s"].sum())
    assert rep.time_s == pytest.approx(float(rep.estimate.time_s))


def test_train_is_forward_plus_backward() -> None:
    model = MLP()
    x = torch.randn(4, 32, 256)
    inf = rlt.estimate(model, x, hardware=HW, mode="inference")
    train = rlt.estimate(model, x, hardware=HW, mode="train")
    t = train.table()
    assert set(t["phase"]) == {"forward", "backward"}
    # training: 2 forward GEMMs + 3 backward (grad_weight of both linears, grad_input of
    # `down` only: the input x does not require grad), all 2*128*256*1024 FLOPs = 2.5x
    gemm_flops = t.query("kind == 'gemm'")["flops"].sum()
    assert gemm_flops == 5 * 2 * 128 * 256 * 1024
    assert gemm_flops == 2.5 * inf.table().query("kind == 'gemm'")["flops"].sum()
    assert train.time_s > 2 * inf.time_s
    assert model.training  # training flags restored


def test_module_is_not_touched_and_meta_inputs_cost_nothing() -> None:
    with torch.device("meta"):
        model = MLP(4096, 16384)
    x = torch.empty(8, 2048, 4096, device="meta")  # 8x2048x4096: no memory
    rep = rlt.estimate(model, x, hardware=HW, dtype="bf16")
    gemms = rep.table().query("kind == 'gemm'")
    # 5 GEMMs (x needs no grad) of 2*16384*4096*16384 FLOPs
    assert gemms["flops"].sum() == 5 * 2 * 16384 * 4096 * 16384
    assert set(gemms["dtype"]) == {"bfloat16"}
    assert model.up.weight.dtype == torch.float32


def test_transformer_encoder_layer_uses_fused_attention() -> None:
    layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
    x = torch.randn(2, 64, 128)
    rep = rlt.estimate(layer, x, hardware=HW, dtype="bf16")
    ops = set(rep.table()["op"])
    assert {"scaled_dot_product_attention", "scaled_dot_product_attention_backward"} <= ops
    assert "native_layer_norm" in ops and "native_layer_norm_backward" in ops
    attn = rep.table().query("op == 'scaled_dot_product_attention'").iloc[0]
    want = rl.attention(2, 4, 64, 64, 32, dtype="bf16", hardware=HW)
    assert attn["time_s"] == pytest.approx(want.time_s)
    assert attn["module"] == "TransformerEncoderLayer.self_attn"
    assert rep.unmodeled == []
    by_module = rep.by_module(depth=1)
    assert by_module["time_s"].sum() == pytest.approx(rep.time_s)
    assert by_module["fraction"].sum() == pytest.approx(1.0)
    # materialized path when asked: bmm + softmax instead of one kernel
    mat = rlt.estimate(layer, x, hardware=HW, dtype="bf16", fused_attention=False)
    assert "bmm" in set(mat.table()["op"]) and "_safe_softmax" in set(mat.table()["op"])


def test_llama_block_gqa_causal_rmsnorm() -> None:
    block = LlamaBlock()
    x = torch.randn(2, 128, 256)
    rep = rlt.estimate(block, x, hardware=HW, dtype="bf16")
    t = rep.table()
    attn = t.query("op == 'scaled_dot_product_attention'").iloc[0]
    want = rl.attention(2, 8, 128, 128, 32, kv_heads=2, causal=True, hardware=HW)
    assert attn["flops"] == pytest.approx(want.flops)
    bwd = t.query("op == 'scaled_dot_product_attention_backward'").iloc[0]
    want_bwd = rl.attention(2, 8, 128, 128, 32, kv_heads=2, causal=True, backward=True,
                            hardware=HW)
    assert bwd["time_s"] == pytest.approx(want_bwd.time_s)
    # RMSNorm: one fused kernel forward and one backward per norm
    assert (t["op"] == "rms_norm").sum() == 2
    assert (t["op"] == "rms_norm_backward").sum() == 2
    assert rep.top_ops(3)["time_s"].is_monotonic_decreasing
    assert len(rep.by_op()) == t["op"].nunique()
    # 6 linears (q, kv, o, gate, up, down) x (forward, grad_weight, grad_input): every
    # linear's input comes after an RMSNorm whose weight requires grad
    assert rep.by_kind().loc["gemm", "kernels"] == 6 * 3


def test_conv_embedding_reduction_and_unmodeled_ops_are_listed() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(1000, 64)
            self.conv = nn.Conv1d(64, 128, 3, padding=1)

        def forward(self, ids):  # type: ignore[no-untyped-def]
            h = self.conv(self.emb(ids).transpose(1, 2))
            return torch.cumsum(h, dim=-1).mean()

    ids = torch.randint(0, 1000, (4, 32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = rlt.estimate(Net(), ids, hardware=HW)
    mine = [w for w in caught if issubclass(w.category, rlt.UnmodeledOpsWarning)]
    assert len(mine) == 1  # one warning per call, listing every unmodeled op name
    assert "cumsum" in str(mine[0].message) and mine[0].filename == __file__
    t = rep.table()
    conv = t.query("kind == 'conv'")
    # forward implicit GEMM: M = 4*32, K = 64*3, N = 128; backward: grad_input + grad_weight
    assert conv.iloc[0]["flops"] == 2 * (4 * 32) * (64 * 3) * 128
    assert len(conv) == 3
    assert "embedding" in set(t["op"]) and "embedding_dense_backward" in set(t["op"])
    assert "cumsum" in rep.unmodeled  # not modeled: estimated from bytes, listed by name
    row = t.query("op == 'cumsum'").iloc[0]
    assert not row["modeled"] and row["bytes"] == 2 * 4 * 128 * 32 * 4
    assert "cumsum" in repr(rep) or "unmodeled" in repr(rep)


def test_scaled_mm_is_a_fp8_gemm() -> None:
    class Fp8(nn.Module):
        def forward(self, a, b):  # type: ignore[no-untyped-def]
            one = torch.ones((), dtype=torch.float32, device=a.device)
            return torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)

    a = torch.empty(256, 512, dtype=torch.float8_e4m3fn, device="meta")
    b = torch.empty(1024, 512, dtype=torch.float8_e4m3fn, device="meta").t()
    rep = rlt.estimate(Fp8(), (a, b), hardware=HW, mode="inference")
    g = rep.table().query("op == '_scaled_mm'").iloc[0]
    assert g["time_s"] == pytest.approx(rl.gemm(256, 512, 1024, "fp8", HW).time_s)


def test_bad_input() -> None:
    x = torch.randn(2, 256)
    with pytest.raises(TypeError, match="module must be a torch.nn.Module"):
        rlt.estimate(lambda t: t, x, hardware=HW)
    with pytest.raises(ValueError, match="mode must be 'train' or 'inference', got 'fwd'"):
        rlt.estimate(MLP(), x, hardware=HW, mode="fwd")
    with pytest.raises(ValueError, match="dtype must be"):
        rlt.estimate(MLP(), x, hardware=HW, dtype="int3")
    with pytest.raises(ValueError, match="ranks must be a positive integer, got 0"):
        rlt.estimate(MLP(), x, hardware=HW, ranks=0)
    with pytest.raises(KeyError):
        rlt.estimate(MLP(), x, hardware="no such gpu")
    rep = rlt.estimate(MLP(), x, hardware=HW)
    with pytest.raises(ValueError, match="n must be a positive integer, got 0"):
        rep.top_ops(0)
    with pytest.raises(ValueError, match="depth must be a non-negative integer"):
        rep.by_module(depth=-1)


def test_import_roofline_does_not_import_torch() -> None:
    code = ("import sys, roofline; bad = [m for m in ('torch', 'matplotlib', 'pandas') "
            "if m in sys.modules]; print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
