"""The pricing memos (roofline._params.memo): the fast path (serving steps and step-program
parts read from memos) gives exactly what the slow path (every memo off) gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import roofline as rl
from roofline._params.memo import Memo, clear_memos, memos_disabled, pricing_token
from roofline.transformer.serving import StepPricer

T = rl.transformer
H100 = "H100 SXM"

#: Finite runs of a few engines and schedulers (mixed prefill, SGLang's prefill batches and
#: overlap, a run without CUDA graphs, an MoE model under expert parallelism).
RUNS = [
    dict(model="Llama-3-8B", runtime="vllm", num_requests=40, request_rate=20.0),
    dict(model="Llama-3-8B", runtime="sglang", num_requests=40, lengths="uniform"),
    dict(model="Llama-3-8B", runtime="megatron", num_requests=30, cuda_graphs=False),
    dict(model="Mixtral-8x7B", runtime="vllm", num_requests=24, tp=2,
         arrivals="poisson", request_rate=10.0),
]


def _serve(run: dict) -> pd.DataFrame:
    kw = dict(run)
    return T.serve(kw.pop("model"), H100, prompt_len=300, output_len=40, **kw)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: f"{r['model']}-{r['runtime']}")
def test_finite_runs_identical_with_and_without_memos(run: dict) -> None:
    with memos_disabled():
        slow = _serve(run)
    clear_memos()
    fast = _serve(run)
    again = _serve(run)  # every step read from the memos this time
    pd.testing.assert_frame_equal(slow, fast, check_exact=True)
    pd.testing.assert_frame_equal(slow, again, check_exact=True)


def test_step_prices_identical_with_and_without_memos() -> None:
    kw = dict(hardware=H100, tp=2, runtime="vllm")
    grid = [(d, p, k) for d in (0, 1, 3, 40, 300, 700) for p in (0, 1, 77, 512, 3000)
            for k in (None, 64, 1040) if d or p]
    with memos_disabled():
        slow = StepPricer(T.config("Llama-3-8B"), 700, 200, 1, dict(kw))
        want = [slow.mixed_step_s(d, p, kv_len=k) for d, p, k in grid]
    clear_memos()
    for _ in range(2):  # the second pricer reads every term from the memos
        fast = StepPricer(T.config("Llama-3-8B"), 700, 200, 1, dict(kw))
        got = [fast.mixed_step_s(d, p, kv_len=k) for d, p, k in grid]
        assert got == want
    est = fast.decode_estimate(40, 1040)
    assert fast.decode_step_s(40, 1040) == float(est.wall_s)


def test_estimates_identical_with_and_without_part_memos() -> None:
    with memos_disabled():
        slow = [T.estimate("Llama-3-8B", "decode", b, kv_len=kv, hardware=H100, tp=2,
                           runtime="sglang", launch="graph")
                for b, kv in ((5, 100), (6, 900), (300, 100))]
    clear_memos()
    for _ in range(2):
        fast = [T.estimate("Llama-3-8B", "decode", b, kv_len=kv, hardware=H100, tp=2,
                           runtime="sglang", launch="graph")
                for b, kv in ((5, 100), (6, 900), (300, 100))]
        for s, f in zip(slow, fast, strict=True):
            for c in s.columns:
                np.testing.assert_array_equal(s.columns[c], f.columns[c])
            assert s.wall_s == f.wall_s


def test_memo_bound_switch_and_token() -> None:
    m = Memo(2)
    m.put("a", 1)
    m.put("b", 2)
    assert m.get("a") == 1
    m.put("c", 3)  # full: emptied, then stored
    assert m.get("a") is None and m.get("c") == 3
    with memos_disabled():
        assert m.get("c") is None
        m.put("d", 4)
    assert m.get("d") is None and m.get("c") == 3
    assert pricing_token(None, "default") is None  # the default hardware may change
    assert pricing_token(H100, ["unhashable"]) is None
    assert pricing_token(H100, "default") == pricing_token(H100, "default")
    assert pricing_token(H100, "default") != pricing_token(H100, "peak")


COLS = ("time_s", "compute_s", "memory_s", "overhead_s", "flops", "bytes")


def _columns(e) -> np.ndarray:
    return np.stack([np.atleast_1d(np.asarray(getattr(e, c), dtype=np.float64))
                     for c in COLS], axis=1)


@pytest.mark.parametrize("kw", [
    dict(batch=7, heads=16, kv_heads=2, q_len=1, kv_len=1500, head_dim=128, backend="fa3",
         page_tokens=1, causal=True),
    dict(batch=300, heads=64, kv_heads=8, q_len=4, kv_len=900, head_dim=128, backend="fa3",
         page_tokens=16, causal=True),
    dict(batch=3, heads=16, q_len=2048, kv_len=2048, head_dim=128, backend="fa3",
         causal=True),
    dict(batch=40, heads=128, kv_heads=1, q_len=1, kv_len=4000, head_dim=576, v_head_dim=512,
         shared_kv=True, backend="flashmla", page_tokens=64, causal=True),
    dict(batch=9, heads=32, kv_heads=8, q_len=1, kv_len=333, head_dim=128,
         backend="flashinfer", page_tokens=1, causal=True, dtype="fp8"),
])
def test_attention_columns_equal_attention(kw: dict) -> None:
    from roofline.ops.attention_columns import attention_columns

    for _ in range(2):  # the second call reads the checked settings back
        got = attention_columns(**kw, hardware="H200", efficiency="default")
        assert got is not None
        want = _columns(rl.attention(**kw, hardware="H200"))
        np.testing.assert_array_equal(got, want)


def test_attention_columns_leave_the_rest_to_attention() -> None:
    from roofline.ops.attention_columns import attention_columns

    base = dict(batch=2, heads=16, q_len=1, kv_len=64, head_dim=128, hardware="H200",
                efficiency="default")
    assert attention_columns(**base) is None  # SDPA: attention()'s scalar path
    assert attention_columns(**base, backend="fa3", kv_heads=3) is None  # 3 does not divide 16
    assert attention_columns(**base, backend="fa3", page_tokens=0) is None
    assert attention_columns(**dict(base, head_dim=512), backend="fa3") is None  # > 256
    assert attention_columns(**dict(base, hardware="A100 SXM 80GB"), backend="fa3") is None
    with pytest.raises(ValueError, match="page_tokens"):
        rl.attention(2, 16, 1, 64, 128, hardware="H200", backend="fa3", page_tokens=0)


def test_gemm_and_elementwise_columns_equal_the_ops() -> None:
    from roofline.ops.elementwise import elementwise_columns
    from roofline.ops.gemm import gemm_columns

    m, k, n, b = (np.array(v) for v in ([1, 77, 4096, 300], [4096, 8192, 128, 14336],
                                        [1024, 28672, 8192, 4096], [1, 1, 8, 1]))
    for at in (False, True):
        got = gemm_columns(m, k, n, b, "bf16", "H200", "default", at)
        want = _columns(rl.gemm(m, k, n, "bf16", "H200", batch=b, a_transposed=at))
        np.testing.assert_array_equal(got, want)
    assert gemm_columns(np.array([0]), k[:1], n[:1], b[:1], "bf16", "H200", "default") is None
    assert gemm_columns(np.array([1.5]), k[:1], n[:1], b[:1], "bf16", "H200", "default") is None
    num, rd, wr = np.array([8192.0, 3e6, 1.0]), np.array([1, 2, 0]), np.array([1, 2, 1])
    got = elementwise_columns(num, rd, wr, "bf16", "H200", "default")
    np.testing.assert_array_equal(got, _columns(rl.elementwise(num, rd, wr, 0.0, "bf16",
                                                               "H200")))
    assert elementwise_columns(num, rd * 0, wr * 0, "bf16", "H200", "default") is None
    assert elementwise_columns(num - 1, rd, wr, "bf16", "H200", "default") is None


def test_collective_columns_equal_the_ops() -> None:
    from roofline.ops.collectives import collective_columns

    nb, ranks = np.array([1, 4096, 8 * 2**20, 3 * 2**30]), np.array([2, 4, 8, 8])
    for name, fn in (("all_reduce", rl.all_reduce), ("all_gather", rl.all_gather),
                     ("reduce_scatter", rl.reduce_scatter)):
        for algo, link, lat in (("ring", None, 1e-6), ("ring", 2e11, 3e-6),
                                ("nccl", 3.6e11, 1e-6)):
            got = collective_columns(name, nb, ranks, algo, "H200", link, lat)
            want = _columns(fn(nb, ranks, algo, hardware="H200", link_bytes_per_s=link,
                               latency_s=lat))
            np.testing.assert_array_equal(got, want)
    assert collective_columns("all_reduce", nb * 0, ranks, "ring", "H200", None, 1e-6) is None
    assert collective_columns("all_reduce", nb, ranks, "ring", "H200", -1.0, 1e-6) is None
    assert collective_columns("all_to_all", nb, ranks, "ring", "H200", None, 1e-6) is None
