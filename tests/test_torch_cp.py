"""Context parallelism as PyTorch's ``context_parallel`` runs it (``cp_comm="all_gather"`` /
``"all_to_all"``, roofline.transformer.torch_cp): hand-derived kernel counts and bytes of one
layer's ring SDPA, the exposed rotation by hand, properties and argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import roofline as rl
from roofline import _core
from roofline.transformer.program import Program
from roofline.transformer.torch_cp import torch_cp_attention, torch_cp_passes

T = rl.transformer


def _units(passes: list[tuple[float, float, float]]) -> float:
    """2-byte units moved by a list of kernels (elements x (reads + writes))."""
    return sum(n * (r + w) for n, r, w in passes)


def test_passes_by_hand() -> None:
    # p = 4 ranks, 16 (sequence, head, local token) rows of head dim 4: q = o = k = v = 64
    # elements, 16 log-sum-exp entries; counts in 2-byte units (fp32 = 2)
    p = torch_cp_passes(4, 64.0, 64.0, 64.0, 64.0, 16.0)
    fwd, bwd = p["copies"]
    # forward: K, V contiguous (2 copies) and a K/V cat before steps 0, 1, 2 (3 copies)
    assert len(fwd) == 5
    assert _units(fwd) == 2 * 64 * 2 + 3 * 128 * 2
    # backward: the same 5, a fp32 dK/dV cat at each of the 4 steps, the final dK/dV cast
    assert len(bwd) == 10
    assert _units(bwd) == 2 * 64 * 2 + 3 * 128 * 2 + 4 * 256 * 2 + 128 * 3
    fwd, bwd = p["merge"]
    # forward: step 0's output cast to fp32; per later step its cast, lse_b - lse, sigmoid,
    # out - out_b, the product, the difference, lse - lse_b, logsigmoid, the difference;
    # the final cast back: 1 + 3 x 9 + 1 kernels
    assert len(fwd) == 29
    step = 64 * 3 + (32 * 3 + 32 * 2) + (128 * 3 + 128 * 2 + 128 * 3) + (32 * 3 + 32 * 2
                                                                          + 32 * 3)
    assert _units(fwd) == 64 * 3 + 3 * step + 64 * 3
    # backward: 3 fp32 zero fills; step 0 adds dK, dV, dQ (fp32 += bf16: 3 reads, 2 writes);
    # each later step (last rank) adds half of dK and dV, rebuilds each with a cat, adds dQ;
    # dQ cast back: 3 + 3 + 3 x 5 + 1
    assert len(bwd) == 22
    later = 32 * 5 + 128 * 2 + 32 * 5 + 128 * 2 + 64 * 5
    assert _units(bwd) == 3 * 128 + 3 * 64 * 5 + 3 * later + 64 * 3


def test_program_rows_by_hand() -> None:
    ops = Program(train=True, recipe=None)
    torch_cp_attention(ops, 0, "attention", batch=1, heads=2, seq=64, head_dim=8, v_head_dim=8,
                       ranks=4, method="all_to_all", act_bytes=2.0,
                       attn_kw=dict(causal=True, flash=True, dtype="bf16", scale=0.25))
    rows = {name: parts for _, name, _, parts in ops.rows}
    # one diagonal causal call (16 x 16) and three later calls (16 x 8, not causal)
    assert len(rows["attention (cp step 0, causal)"]) == 1
    assert len(rows["attention (cp steps 1-3, L x L/2) bwd"]) == 3
    first, later = ops.attn[0], ops.attn[2]
    assert (first["q_len"], first["kv_len"], first["causal"]) == (16, 16, True)
    assert (later["q_len"], later["kv_len"], later["causal"]) == (16, 8, False)
    assert "scale" not in first or first["scale"] == 1.0
    assert len(rows["cp merge (fp32)"]) == 29 and len(rows["cp merge (fp32) bwd"]) == 22
    # K/V chunk of this rank: 2 tensors x 2 heads x 16 tokens x 8 x 2 B; fp32 gradients
    kv, dkv, ranks, gather, back, f, s = ops.cp_rotations[1]
    assert (kv, dkv, ranks, gather, back) == (1024.0, 2048.0, 4, False, True)
    assert ops.attn[f]["backward"] and ops.attn[f]["causal"]
    assert ops.attn[s]["backward"] and not ops.attn[s]["causal"]


def test_exposed_rotation_by_hand() -> None:
    def x(first: float, step: float, kv: float, dkv: float, p: int, gather: bool,
          back: bool) -> float:
        return float(_core.torch_cp_exposed_s(first, step, kv, dkv, p, gather, back))

    # forward, all-gather (3 s) behind the diagonal call (1 s): 2 s
    assert x(1.0, 0.5, 3.0, 9.0, 4, True, False) == pytest.approx(2.0)
    # forward, 3 permutes of 2 s: behind the diagonal call (1 s), then 2 calls of 0.5 s
    assert x(1.0, 0.5, 2.0, 9.0, 4, False, False) == pytest.approx(1.0 + 2 * 1.5)
    # backward, all-gather: 2 s exposed, dK/dV (0.7 s) behind 3 calls of 0.5 s, last exposed
    assert x(1.0, 0.5, 3.0, 0.7, 4, True, True) == pytest.approx(2.0 + 3 * 0.2 + 0.7)
    # backward, permutes: K/V behind the diagonal call, then K/V + dK/dV behind 2 calls,
    # dK/dV behind the last call, the last dK/dV exposed
    assert x(1.0, 0.5, 2.0, 0.7, 4, False, True) == pytest.approx(
        1.0 + 2 * (2.7 - 0.5) + 0.2 + 0.7)
    assert x(5.0, 5.0, 1.0, 1.0, 4, False, False) == 0.0  # hidden
    assert x(5.0, 5.0, 1.0, 1.0, 1, False, True) == 0.0  # one rank: no rotation


def test_exposed_rotation_properties() -> None:
    rng = np.random.default_rng(7)
    a = rng.uniform(0.0, 2.0, size=(5, 400))
    p = rng.integers(2, 17, size=400).astype(float)
    for gather in (True, False):
        for back in (True, False):
            e = np.asarray(_core.torch_cp_exposed_s(*a[:4], p, gather, back))
            more = np.asarray(_core.torch_cp_exposed_s(a[0], a[1], a[2] + a[4], a[3] + a[4],
                                                       p, gather, back))
            longer = np.asarray(_core.torch_cp_exposed_s(a[0] + a[4], a[1] + a[4], a[2],
                                                         a[3], p, gather, back))
            assert np.all(e >= 0)
            assert np.all(more >= e - 1e-12)  # slower transfers never expose less
            assert np.all(longer <= e + 1e-12)  # longer calls never expose more


KW = dict(batch=1, seq_len=16384, hardware="H100 SXM", cp=4, latency_s=0.0)


@pytest.mark.parametrize("comm", ["all_gather", "all_to_all"])
def test_estimate_rows(comm: str) -> None:
    e = T.estimate("Llama-3-8B", "train", cp_comm=comm, **KW)
    ring = T.estimate("Llama-3-8B", "train", **KW)
    df, r = e.ops(), ring.ops()
    attn = df[df["op"].str.startswith("attention (cp")]
    assert len(attn) == 4  # diagonal and later calls, forward and backward
    # the load-balanced calls cover exactly the causal pairs of the ring path's share
    flops = attn[~attn["op"].str.endswith(" bwd")]["flops"].sum()
    assert flops == pytest.approx(float(r[r["op"] == "attention"]["flops"].iloc[0]), rel=1e-12)
    # K/V chunk: 4096 local tokens x 32 heads (repeat_kv) x 128 x 2 tensors x 2 B
    kv = 4096 * 32 * 128 * 2 * 2
    fwd = df[df["op"] == f"cp {comm} kv"]
    bwd = df[df["op"] == f"cp {comm} kv bwd"]
    # all-gather: 3/4 of the 4 chunks crosses each GPU's link once; permutes: 3 chunks;
    # backward: the same K/V plus 4 fp32 dK/dV permutes
    assert float(fwd["bytes"].iloc[0]) == pytest.approx(3 * kv)
    assert float(bwd["bytes"].iloc[0]) == pytest.approx(3 * kv + 4 * 2 * kv)
    assert e.time_s > ring.time_s  # same pairs, more kernels and traffic


def test_slow_link_exposes_the_permutes() -> None:
    slow = T.estimate("Llama-3-8B", "train", cp_comm="all_to_all", link_bytes_per_s=1e9,
                      **KW).ops()
    kv = 4096 * 32 * 128 * 2 * 2 / 1e9  # one permute, s
    first = float(slow[slow["op"] == "attention (cp step 0, causal)"]["time_s"].iloc[0])
    step = float(slow[slow["op"] == "attention (cp steps 1-3, L x L/2)"]["time_s"].iloc[0]) / 3
    row = float(slow[slow["op"] == "cp all_to_all kv"]["time_s"].iloc[0])
    assert row == pytest.approx(kv - first + 2 * (kv - step), rel=1e-9)


def test_cp1_is_no_cp() -> None:
    kw = dict(batch=1, seq_len=8192, hardware="H100 SXM")
    base = T.estimate("Llama-3-8B", "train", **kw)
    for comm in ("all_gather", "all_to_all"):
        e = T.estimate("Llama-3-8B", "train", cp=1, cp_comm=comm, **kw)
        assert e.time_s == base.time_s and e.step.time_s == base.step.time_s
        assert e.to_pandas().equals(base.to_pandas())


def test_overheads_grow_with_cp() -> None:
    # the same 8192 local tokens, more ranks: more merges, copies and transfers per layer
    prev = 0.0
    for cp in (2, 4, 8):
        df = T.estimate("Llama-3-8B", "train", batch=1, seq_len=8192 * cp, cp=cp,
                        hardware="H100 SXM", cp_comm="all_gather").ops()
        over = df[df["op"].str.startswith("cp ")]["time_s"].sum()
        assert over > prev
        prev = over
    # a slower link never makes the step faster
    times = [T.estimate("Llama-3-8B", "train", cp_comm="all_to_all", link_bytes_per_s=bw,
                        **dict(KW, latency_s=5e-6)).step.time_s
             for bw in (400e9, 100e9, 25e9, 5e9)]
    assert times == sorted(times)


def test_bad_inputs() -> None:
    kw = dict(batch=1, hardware="H100 SXM")
    with pytest.raises(ValueError, match=r"cp must have 2·cp dividing seq_len \(4100\)"):
        T.estimate("Llama-3-8B", "train", seq_len=4100, cp=4, cp_comm="all_gather", **kw)
    with pytest.raises(ValueError, match="'all_to_all' .* GPT-OSS-20B has sliding"):
        T.estimate("GPT-OSS-20B", "train", seq_len=4096, cp=2, cp_comm="all_to_all", **kw)
    with pytest.raises(ValueError, match="cp_comm must be one of .* got 'alltoall'"):
        T.estimate("Llama-3-8B", "train", seq_len=4096, cp=2, cp_comm="alltoall", **kw)


def test_eager_hf_program_takes_torch_cp() -> None:
    kw = dict(batch=1, seq_len=16384, hardware="H100 SXM", dp=2, zero=3)
    hf = T.estimate("Llama-3-8B", "train", runtime="hf", cp=4, cp_comm="all_gather", **kw)
    meg = T.estimate("Llama-3-8B", "train", cp=4, cp_comm="all_gather", **kw)
    h, m = hf.ops(), meg.ops()
    # every kernel over the 4096 local tokens: q_proj is 2·4096·4096·4096 FLOPs forward
    assert float(h[h["op"] == "q_proj"]["flops"].iloc[0]) == 2 * 4096 * 4096 * 4096
    # the ring SDPA recorded alike in both programs
    for op in ("attention (cp step 0, causal)", "attention (cp steps 1-3, L x L/2) bwd",
               "cp merge (fp32)", "cp kv copies bwd", "cp all_gather kv bwd"):
        assert float(h[h["op"] == op]["time_s"].iloc[0]) == pytest.approx(
            float(m[m["op"] == op]["time_s"].iloc[0]), rel=1e-12)
    one = T.estimate("Llama-3-8B", "train", runtime="hf", **kw)
    assert T.estimate("Llama-3-8B", "train", runtime="hf", cp=1, cp_comm="all_to_all",
                      **kw).step.time_s == one.step.time_s
    with pytest.raises(NotImplementedError, match="context parallelism other than PyTorch"):
        T.estimate("Llama-3-8B", "train", runtime="hf", cp=4, **kw)  # Megatron's ring
    with pytest.raises(NotImplementedError, match="context parallelism other than PyTorch"):
        T.estimate("Llama-3-8B", "train", runtime="compiled", cp=4, **kw)  # Megatron's ring
    # compiled: the same ring SDPA rows between the compiled regions (NeMo AutoModel's Llama
    # with enable_compile under context_parallel), every other kernel over the local tokens
    c = T.estimate("Llama-3-8B", "train", runtime="compiled", cp=4, cp_comm="all_gather",
                   **kw).to_pandas()
    assert float(c[c["op"] == "q_proj"]["flops"].iloc[0]) == 2 * 4096 * 4096 * 4096
    for op in ("attention (cp step 0, causal)", "attention (cp steps 1-3, L x L/2) bwd",
               "cp merge (fp32)", "cp kv copies bwd", "cp all_gather kv bwd"):
        assert float(c[c["op"] == op]["time_s"].iloc[0]) == pytest.approx(
            float(h[h["op"] == op]["time_s"].iloc[0]), rel=1e-12)
