"""Tensor-parallel collectives pipelined with their GEMMs (``tp_comm_overlap=True``)."""

from __future__ import annotations

import importlib

import pytest

import roofline as rl
from roofline import _core

T = rl.transformer
KW = {"batch": 1, "seq_len": 4096, "hardware": "H100 SXM", "tp": 4}


@pytest.mark.parametrize(("comm", "gemm", "tp", "exposed"), [
    (1.0, 3.0, 4, 0.25),   # hidden behind the GEMM but its first chunk: 1/4
    (3.0, 1.0, 4, 2.75),   # longer than the GEMM: 3 - 1 + 3/4
    (2.0, 0.0, 2, 3.0),    # nothing to hide behind: all of it, plus a chunk (2 + 1)
    (0.0, 5.0, 8, 0.0),
])
def test_exposed_by_hand(comm: float, gemm: float, tp: int, exposed: float) -> None:
    assert float(_core.tp_overlap_exposed_s(comm, gemm, tp)) == pytest.approx(exposed)


def test_overlap_hides_tp_collectives_of_each_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the overlap NCCL carries the TP all-reduces (its tuning model's protocols);
    with it TransformerEngine's userbuffers do, priced as the plain ring: the exposed part
    is ``max(C - G, 0) + C/tp`` of that ring price ``C``."""
    off_nccl = T.estimate("Llama-3-8B", "train", **KW)
    on = T.estimate("Llama-3-8B", "train", tp_comm_overlap=True, **KW)
    est = importlib.import_module("roofline.transformer.estimate")  # the module, not the function
    ring = est.evaluate
    monkeypatch.setattr(est, "evaluate", lambda *a, **k: ring(*a, **dict(k, nccl_bw=None)))
    off = T.estimate("Llama-3-8B", "train", **KW)  # the same collectives at the ring price
    a, b = off.to_pandas(), on.to_pandas()
    comm = a["op"].str.contains("all_reduce")
    assert comm.any()
    # NCCL's protocol latencies make its price at least the ring's
    assert (off_nccl.to_pandas().loc[comm, "time_s"] >= a.loc[comm, "time_s"]).all()
    layer = (a["layer"] == 0)
    for bwd in (False, True):
        rows = layer & comm & (a["op"].str.endswith("bwd") == bwd)
        gemm = layer & (a["kind"] == "gemm") & (a["op"].str.endswith("bwd") == bwd)
        c, g = a.loc[rows, "time_s"].sum(), a.loc[gemm, "time_s"].sum()
        # per layer and pass: max(C - G, 0) + C/tp, here C < G so C/4
        assert b.loc[rows, "time_s"].sum() == pytest.approx(max(c - g, 0) + c / 4)
    # nothing else moves
    assert (b.loc[~comm, "time_s"].to_numpy() == a.loc[~comm, "time_s"].to_numpy()).all()
    assert on.time_s < off.time_s


def test_overlap_needs_tp_and_a_bool() -> None:
    kw = dict(KW, tp=1)
    assert T.estimate("Llama-3-8B", "train", tp_comm_overlap=True, **kw).time_s == \
        pytest.approx(T.estimate("Llama-3-8B", "train", **kw).time_s)
    with pytest.raises(TypeError, match="tp_comm_overlap must be a bool, got 'yes'"):
        T.estimate("Llama-3-8B", "train", tp_comm_overlap="yes", **KW)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tp_comm_overlap applies to phase='train' only"):
        T.estimate("Llama-3-8B", "prefill", seq_len=4096, hardware="H100 SXM", tp=4,
                   tp_comm_overlap=True)
