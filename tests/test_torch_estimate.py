"""roofline.torch.estimate on real nn.Modules built here (CPU, meta tensors, torch 2.13)."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import roofline as rl  # noqa: E402
import roofline.torch as rlt  # noqa: E402
from roofline.ops.sustained import at_settled_clock, settled_clock  # noqa: E402
from roofline.torch import _dedupe  # noqa: E402

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
    gemms = rep.to_pandas().query("kind == 'gemm'")
    # two addmm: (128 x 256) @ (256 x 1024) and (128 x 1024) @ (1024 x 256), fp32
    assert list(gemms["op"]) == ["addmm", "addmm"]
    assert gemms["flops"].sum() == 2 * (2 * 128 * 256 * 1024)
    want = rl.gemm(128, 256, 1024, "fp32", HW).time_s + rl.gemm(128, 1024, 256, "fp32", HW).time_s
    assert math.isclose(gemms["time_s"].sum(), want, rel_tol=1e-12)
    assert set(rep.to_pandas()["module"]) >= {"MLP.up", "MLP.down", "MLP.act"}
    assert rep.unmodeled == []
    assert rep.time_s == pytest.approx(rep.to_pandas()["time_s"].sum())
    assert rep.time_s == pytest.approx(float(rep.estimate.time_s))


def test_train_is_forward_plus_backward() -> None:
    model = MLP()
    x = torch.randn(4, 32, 256)
    inf = rlt.estimate(model, x, hardware=HW, mode="inference")
    train = rlt.estimate(model, x, hardware=HW, mode="train")
    t = train.to_pandas()
    assert set(t["phase"]) == {"forward", "backward"}
    # training: 2 forward GEMMs + 3 backward (grad_weight of both linears, grad_input of
    # `down` only: the input x does not require grad), all 2*128*256*1024 FLOPs = 2.5x
    gemm_flops = t.query("kind == 'gemm'")["flops"].sum()
    assert gemm_flops == 5 * 2 * 128 * 256 * 1024
    assert gemm_flops == 2.5 * inf.to_pandas().query("kind == 'gemm'")["flops"].sum()
    assert train.time_s > 2 * inf.time_s
    assert model.training  # training flags restored


def test_module_is_not_touched_and_meta_inputs_cost_nothing() -> None:
    with torch.device("meta"):
        model = MLP(4096, 16384)
    x = torch.empty(8, 2048, 4096, device="meta")  # 8x2048x4096: no memory
    rep = rlt.estimate(model, x, hardware=HW, dtype="bf16")
    gemms = rep.to_pandas().query("kind == 'gemm'")
    # 5 GEMMs (x needs no grad) of 2*16384*4096*16384 FLOPs
    assert gemms["flops"].sum() == 5 * 2 * 16384 * 4096 * 16384
    assert set(gemms["dtype"]) == {"bfloat16"}
    assert model.up.weight.dtype == torch.float32


def test_transformer_encoder_layer_uses_fused_attention() -> None:
    layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
    x = torch.randn(2, 64, 128)
    rep = rlt.estimate(layer, x, hardware=HW, dtype="bf16")
    ops = set(rep.to_pandas()["op"])
    assert {"scaled_dot_product_attention", "scaled_dot_product_attention_backward"} <= ops
    assert "native_layer_norm" in ops and "native_layer_norm_backward" in ops
    attn = rep.to_pandas().query("op == 'scaled_dot_product_attention'").iloc[0]
    # the layer trains with its default dropout=0.1 inside SDPA; a training step's attention
    # runs at the power limiter's settled clock
    want = at_settled_clock(rl.attention(2, 4, 64, 64, 32, dtype="bf16", hardware=HW,
                                         dropout_p=0.1), settled_clock(HW, "default"))
    assert attn["time_s"] == pytest.approx(want.time_s)
    assert attn["module"] == "TransformerEncoderLayer.self_attn"
    assert rep.unmodeled == []
    by_module = rep.by_module(depth=1)
    assert by_module["time_s"].sum() == pytest.approx(rep.time_s)
    assert by_module["fraction"].sum() == pytest.approx(1.0)
    # materialized path when asked: bmm + softmax instead of one kernel
    mat = rlt.estimate(layer, x, hardware=HW, dtype="bf16", fused_attention=False)
    assert "bmm" in set(mat.to_pandas()["op"]) and "_safe_softmax" in set(mat.to_pandas()["op"])


def test_llama_block_gqa_causal_rmsnorm() -> None:
    block = LlamaBlock()
    x = torch.randn(2, 128, 256)
    rep = rlt.estimate(block, x, hardware=HW, dtype="bf16")
    t = rep.to_pandas()
    attn = t.query("op == 'scaled_dot_product_attention'").iloc[0]
    want = rl.attention(2, 8, 128, 128, 32, kv_heads=2, causal=True, hardware=HW)
    assert attn["flops"] == pytest.approx(want.flops)
    bwd = t.query("op == 'scaled_dot_product_attention_backward'").iloc[0]
    want_bwd = at_settled_clock(rl.attention(2, 8, 128, 128, 32, kv_heads=2, causal=True,
                                             backward=True, hardware=HW),
                                settled_clock(HW, "default"))
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
            return torch.logcumsumexp(h, dim=-1).mean()

    ids = torch.randint(0, 1000, (4, 32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = rlt.estimate(Net(), ids, hardware=HW)
    mine = [w for w in caught if issubclass(w.category, rlt.UnmodeledOpsWarning)]
    assert len(mine) == 1  # one warning per call, listing every unmodeled op name
    assert "logcumsumexp" in str(mine[0].message) and mine[0].filename == __file__
    t = rep.to_pandas()
    conv = t.query("kind == 'conv'")
    # forward implicit GEMM: M = 4*32, K = 64*3, N = 128; backward: grad_input + grad_weight
    assert conv.iloc[0]["flops"] == 2 * (4 * 32) * (64 * 3) * 128
    assert len(conv) == 3
    assert "embedding" in set(t["op"]) and "embedding_dense_backward" in set(t["op"])
    assert "logcumsumexp" in rep.unmodeled  # not modeled: estimated from bytes, listed by name
    row = t.query("op == 'logcumsumexp'").iloc[0]
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
    g = rep.to_pandas().query("op == '_scaled_mm'").iloc[0]
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


# --- dedupe=True (replayed identical layers) equals a full trace ---------------------------


def _key(r: Any) -> tuple[Any, ...]:
    e = r.estimate
    return (r.module, r.op, r.kind, r.phase, r.modeled, r.shapes, r.dtype,
            tuple(float(getattr(e, f)) for f in ("time_s", "compute_s", "memory_s",
                                                 "overhead_s", "flops", "bytes")),
            e.label, e.hardware)


def _both(model: Any, x: Any, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[Any, Any, int]:
    """(dedupe=True result, dedupe=False result, replayed layer calls kept in the result:
    0 when none was replayed or the check after the run fell back to a full trace)."""
    replays: list[Any] = []
    kept: list[int] = []
    original, records = _dedupe.Deduper._replay, _dedupe.Deduper.records

    def spy(self: Any, *args: Any) -> Any:
        replays.append(args[1])
        return original(self, *args)

    def spy_records(self: Any, recs: Any) -> Any:
        out = records(self, recs)
        kept.append(len(replays) if out is not None else 0)
        return out

    monkeypatch.setattr(_dedupe.Deduper, "_replay", spy)
    monkeypatch.setattr(_dedupe.Deduper, "records", spy_records)
    with warnings.catch_warnings(record=True) as w_fast:
        warnings.simplefilter("always")
        fast = rlt.estimate(model, x, hardware=HW, **kw)
    with warnings.catch_warnings(record=True) as w_slow:
        warnings.simplefilter("always")
        slow = rlt.estimate(model, x, hardware=HW, dedupe=False, **kw)
    assert [str(w.message) for w in w_fast] == [str(w.message) for w in w_slow]
    assert [_key(r) for r in fast.records] == [_key(r) for r in slow.records]
    assert fast.time_s == slow.time_s and fast.flops == slow.flops
    assert fast.bytes == slow.bytes and fast.wall_s == slow.wall_s
    assert fast.unmodeled == slow.unmodeled
    assert fast.to_pandas().equals(slow.to_pandas())
    return fast, slow, kept[0] if kept else 0


class Stack(nn.Module):
    def __init__(self, layers: list[nn.Module], d: int = 256) -> None:
        super().__init__()
        self.emb = nn.Embedding(1000, d)
        self.layers = nn.ModuleList(layers)
        self.norm = nn.RMSNorm(d)
        self.head = nn.Linear(d, 1000, bias=False)

    def forward(self, tokens):  # type: ignore[no-untyped-def]
        x = self.emb(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


@pytest.mark.parametrize("mode", ["train", "inference"])
def test_llama_stack(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    model = Stack([LlamaBlock() for _ in range(4)])
    tokens = torch.zeros(2, 64, dtype=torch.long)
    fast, _, replays = _both(model, tokens, monkeypatch, mode=mode, dtype="bf16")
    assert replays == 3
    assert {r.module.split(".")[2] for r in fast.records if r.module.startswith(
        "Stack.layers.")} == {"0", "1", "2", "3"}


def test_mlp_sequential(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(8, 256)
    # layer 0's input needs no grad: layer 1 is traced, layers 2-4 replay it
    _, _, replays = _both(nn.Sequential(*(MLP() for _ in range(5)), nn.Linear(256, 8)), x,
                          monkeypatch)
    assert replays == 3
    # the step's last layer starts the backward, where the module tracker names its first
    # kernels after the parent: not the representative's state, so a full trace
    _, _, replays = _both(nn.Sequential(*(MLP() for _ in range(5))), x, monkeypatch)
    assert replays == 0


def test_launch_modes_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    model = nn.Sequential(*(MLP(64, 128) for _ in range(4)), nn.Linear(64, 8))
    for launch in ("eager", "compiled", "graph"):
        fast, slow, replays = _both(model, torch.randn(4, 64), monkeypatch, launch=launch)
        assert replays == (0 if launch == "compiled" else 2)  # compiled: every layer traced
        assert fast.launch == slow.launch == launch
        assert repr(fast.wall) == repr(slow.wall) and fast.launch_bound == slow.launch_bound


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder(monkeypatch: pytest.MonkeyPatch, norm_first: bool) -> None:
    layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, norm_first=norm_first)
    encoder = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    model = nn.Sequential(nn.Linear(64, 128), encoder, nn.Linear(128, 10))
    _, _, replays = _both(model, torch.randn(2, 32, 64), monkeypatch, dtype="bf16")
    assert replays == 2  # layer 0's input is a view (a 3-d linear's output): layer 1 traced
    # alone: layer 0's input needs no grad and the last layer starts the backward
    _, _, replays = _both(encoder, torch.randn(2, 32, 128), monkeypatch, dtype="bf16")
    assert replays == 0


def test_differing_layers_are_traced(monkeypatch: pytest.MonkeyPatch) -> None:
    # other widths, another class, and the same class with another attribute
    layers: list[nn.Module] = [LlamaBlock(), LlamaBlock(hidden=1024), MLP(256, 512),
                               LlamaBlock(heads=4, kv_heads=4)]
    _, _, replays = _both(Stack(layers), torch.zeros(1, 32, dtype=torch.long), monkeypatch)
    assert replays == 0


class Windowed(LlamaBlock):
    """A block whose forward depends on a plain attribute (alternating layers)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def forward(self, x):  # type: ignore[no-untyped-def]
        out = super().forward(x)
        return out * 2 if self.index % 2 else out


def test_attribute_difference_and_hooks_disable_replay(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    model = Stack([Windowed(i) for i in range(4)])
    tokens = torch.zeros(1, 32, dtype=torch.long)
    _, _, replays = _both(model, tokens, monkeypatch)
    assert replays == 0
    stack = Stack([LlamaBlock() for _ in range(3)])
    handle = stack.layers[1].q.register_forward_hook(lambda m, i, o: None)
    try:
        _, _, replays = _both(stack, tokens, monkeypatch)
    finally:
        handle.remove()
    assert replays == 1  # layer 2 replays layer 0; layer 1 has a hook


class Skips(nn.Module):
    """Every layer's output also feeds the head (a non-sequential backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(MLP(64, 128) for _ in range(4))

    def forward(self, x):  # type: ignore[no-untyped-def]
        outs = []
        for layer in self.layers:
            x = layer(x)
            outs.append(x)
        return torch.stack(outs).sum(0)


class Reused(nn.Module):
    """One layer called twice, then an identical one."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(64, 64)
        self.layers = nn.ModuleList(MLP(64, 128) for _ in range(2))
        self.out = nn.Linear(64, 8)

    def forward(self, x):  # type: ignore[no-untyped-def]
        x = self.inp(x)
        for layer in (self.layers[0], self.layers[0], self.layers[1]):
            x = layer(x)
        return self.out(x)


def test_skip_connections_and_reused_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    # every layer's input gradient is summed with the skip's outside it: a full trace
    _, _, replays = _both(Skips(), torch.randn(4, 64), monkeypatch)
    assert replays == 0
    _both(Reused(), torch.randn(4, 64), monkeypatch)


def test_dedupe_must_be_bool() -> None:
    with pytest.raises(TypeError, match="dedupe"):
        rlt.estimate(MLP(), torch.randn(2, 256), hardware=HW, dedupe=1)  # type: ignore[arg-type]


def test_records_are_new_objects_per_layer() -> None:
    model = nn.Sequential(*(MLP(64, 128) for _ in range(2)))
    rep = rlt.estimate(model, torch.randn(4, 64), hardware=HW)
    assert all(dataclasses.is_dataclass(r) for r in rep.records)
    assert {r.module.split(".")[1] for r in rep.records if "." in r.module} == {"0", "1"}


def test_module_registered_twice_and_tied_weights() -> None:
    # nn.Sequential(lin, relu, lin) names one Linear's parameters twice ('0.weight', '2.weight'):
    # both names get one meta tensor, so the trace runs, and the backward pays autograd's
    # accumulation of the two weight and bias gradients (two adds) beside two distinct Linears
    lin = nn.Linear(256, 256)
    shared = rlt.estimate(nn.Sequential(lin, nn.ReLU(), lin), torch.randn(8, 256), hardware=HW)
    apart = rlt.estimate(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256)),
                         torch.randn(8, 256), hardware=HW)
    assert [r.op for r in shared.records] == [r.op for r in apart.records] + ["add", "add"]
    adds = [r for r in shared.records if r.op == "add"]
    assert {r.shapes for r in adds} == {"256 256", "256x256 256x256"}
    assert all(r.phase == "backward" for r in adds)
    # a tied embedding / LM head (weight shared by nn.Embedding and nn.Linear)
    model = Stack([MLP() for _ in range(2)])
    model.head.weight = model.emb.weight
    rep = rlt.estimate(model, torch.zeros(2, 16, dtype=torch.long), hardware=HW)
    assert rep.time_s > 0


# --- HF decoder stacks: layer_idx indexes the cache only; keyword inputs -------------------


def _hf_llama(layers: int = 4) -> Any:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512,
                                   num_hidden_layers=layers, num_attention_heads=8,
                                   num_key_value_heads=2, vocab_size=1000,
                                   max_position_embeddings=512)
    with torch.device("meta"):
        return transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)


@pytest.mark.parametrize("mode", ["train", "inference"])
def test_hf_llama_layers_replay(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    # every HF attention keeps its own layer_idx (used only to index the KV cache) and each
    # layer gets the same DynamicCache: layers 1-3 replay layer 0, with identical tables
    model = _hf_llama(4)
    ids = torch.zeros(2, 64, dtype=torch.long, device="meta")
    fast, _, replays = _both(model, ids, monkeypatch, mode=mode)
    assert replays == 3
    # every decoder layer's kernels are named after it, the backward's included
    layers = {r.module.split(".")[3] for r in fast.records
              if r.module.startswith("LlamaForCausalLM.model.layers.")}
    assert layers == {"0", "1", "2", "3"}
    if mode == "train":
        # the embedding's backward is the embedding's, not the last attention's entered
        emb = [r for r in fast.records if r.op == "embedding_dense_backward"]
        assert [r.module for r in emb] == ["LlamaForCausalLM.model.embed_tokens"]
        # per layer: the same backward kernels under each layer's own name
        per = {i: [(r.op, r.shapes, r.module.split(".", 4)[-1]) for r in fast.records
                   if r.phase == "backward"
                   and r.module.startswith(f"LlamaForCausalLM.model.layers.{i}")]
               for i in range(4)}
        assert per[0] and all(per[i] == per[0] for i in range(4))


class IndexedBlock(LlamaBlock):
    """A block that uses its layer_idx for more than a cache (a scale per layer)."""

    def __init__(self, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx

    def forward(self, x):  # type: ignore[no-untyped-def]
        out = super().forward(x)
        return out if self.layer_idx == 0 else out * 2


class CacheBlock(LlamaBlock):
    """A block that reads a per-layer slot of a cache it is given."""

    def __init__(self, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx

    def forward(self, x, cache):  # type: ignore[no-untyped-def]
        past = cache.layers[self.layer_idx].keys
        if past is not None:
            x = torch.cat([past, x], dim=1)[:, -x.shape[1]:]
        return super().forward(x)


class _Slot:
    def __init__(self, keys: Any) -> None:
        self.keys = keys


class FakeCache:
    def __init__(self, slots: list[Any]) -> None:
        self.layers = [_Slot(k) for k in slots]


class CacheStack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(CacheBlock(i) for i in range(4))
        self.out = nn.Linear(256, 8)

    def forward(self, x, cache):  # type: ignore[no-untyped-def]
        for layer in self.layers:
            x = layer(x, cache)
        return self.out(x)


def test_layer_index_used_otherwise_or_cache_slots_differ(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    tokens = torch.zeros(1, 32, dtype=torch.long)
    # layer_idx read outside a cache expression: kept in the signature, nothing replayed
    _, _, replays = _both(Stack([IndexedBlock(i) for i in range(4)]), tokens, monkeypatch)
    assert replays == 0
    x = torch.randn(1, 16, 256)
    # empty slots everywhere: layers 2-3 replay layer 1 (layer 0's input needs no grad)
    _, _, replays = _both(CacheStack(), x, monkeypatch,
                          kwargs={"cache": FakeCache([None] * 4)})
    assert replays == 2
    # layer 2's slot holds past keys (a concatenation more): only layer 3 replays layer 1
    slots = [None, None, torch.empty(1, 8, 256, device="meta"), None]
    fast, _, replays = _both(CacheStack(), x, monkeypatch, kwargs={"cache": FakeCache(slots)})
    assert replays == 1
    assert [r.module for r in fast.records if r.op == "cat"] == ["CacheStack.layers.2"]


class WithLoss(nn.Module):
    """An MLP that returns its loss beside its logits (like HF models given labels)."""

    def __init__(self, logits_too: bool) -> None:
        super().__init__()
        self.mlp = MLP(64, 128)
        self.logits_too = logits_too

    def forward(self, x):  # type: ignore[no-untyped-def]
        logits = self.mlp(x)
        loss = logits.pow(2).mean()
        return {"loss": loss, "logits": logits} if self.logits_too else loss


def test_train_backpropagates_the_loss_only() -> None:
    # loss.backward() runs the same kernels whether or not the logits are returned too: no
    # gradient of the logits' own, and no add summing it with the loss's
    x = torch.randn(8, 64)
    both = rlt.estimate(WithLoss(True), x, hardware=HW)
    loss = rlt.estimate(WithLoss(False), x, hardware=HW)
    assert [_key(r) for r in both.records] == [_key(r) for r in loss.records]
    assert both.time_s == loss.time_s
    # HF: labels give a loss; no backward add of two logits-shaped gradients
    model = _hf_llama(2)
    ids = torch.zeros(2, 64, dtype=torch.long, device="meta")
    rep = rlt.estimate(model, ids, hardware=HW, kwargs={"labels": ids})
    logits = "2x64x1000"
    assert not [r for r in rep.records if r.phase == "backward" and r.op == "add"
                and r.shapes == f"{logits} {logits}"]
    # without a loss every output needing grad is backpropagated, as before
    plain = rlt.estimate(WithLoss(False).mlp, x, hardware=HW)
    assert any(r.phase == "backward" for r in plain.records)


def test_op_cache_keys_and_parity(monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline.torch import _ops

    t = torch.empty(4, 8, device="meta")
    assert _ops._key(t) != _ops._key(t.t().contiguous().t())  # same shape, other strides
    assert _ops._key(t) != _ops._key(t.to(torch.bfloat16))
    assert _ops._key(0.0) != _ops._key(-0.0) and _ops._key(1) != _ops._key(True)
    assert _ops._key(1) != _ops._key(1.0) and _ops._key([1, 2]) != _ops._key((1, 2))
    with pytest.raises(_ops._Uncacheable):
        _ops._key(object())
    # every op priced afresh (no key) gives the same records as the per-run cache
    model = Stack([LlamaBlock() for _ in range(2)])
    tokens = torch.zeros(2, 32, dtype=torch.long)
    cached = rlt.estimate(model, tokens, hardware=HW, dedupe=False)

    def uncacheable(v: Any) -> Any:
        raise _ops._Uncacheable

    monkeypatch.setattr(_ops, "_key", uncacheable)
    fresh = rlt.estimate(model, tokens, hardware=HW, dedupe=False)
    assert [_key(r) for r in cached.records] == [_key(r) for r in fresh.records]
