"""Tensor-parallel communication overlapped with the GEMMs beside it (``tp_comm_overlap``).

Megatron-Core with Transformer Engine's userbuffers (``tp_comm_overlap=True``; NeMo's
performance configs set ``ub_tp_comm_overlap: True``, e.g. NeMo-Framework-Launcher
``conf/training/gpt3/175b.yaml``) splits each sequence-parallel all-gather and reduce-scatter
into ``tp`` chunks exchanged while the neighbouring GEMM (QKV / FC1 after the all-gather,
the output projection / FC2 before the reduce-scatter, and in the backward their data- and
weight-gradient GEMMs) works on the chunk already there. Per layer and pass, the TP
collectives (the program's ``... all_reduce`` rows: one all-gather plus one reduce-scatter
each under sequence parallelism) are exposed for ``max(C - G, 0) + C/tp``
(``_core.tp_overlap_exposed_s``) with ``C`` their time and ``G`` the time of the layer's GEMMs
in that pass; the exposed time is split over the rows in proportion to their time. Expert
all-to-alls and the head are not touched.
"""

from __future__ import annotations

import numpy as np

from .. import _core

__all__ = ["overlap_tp_collectives"]


def overlap_tp_collectives(rows: list[tuple[int, str, str]],
                           groups: list[tuple[str, list[int]]], time_s: np.ndarray,
                           tp: int) -> np.ndarray:
    """``time_s`` with each layer group's TP collective rows replaced by their exposed part."""
    out = np.array(time_s, dtype=np.float64, copy=True)
    # share of each row in the forward pass (float8 linears price fwd + bwd in one row)
    fwd = np.array([0.0 if n.endswith(" bwd") else (1 / 3 if n.endswith("(fwd+bwd)") else 1.0)
                    for _, n, _ in rows])
    for gi, (kind, _) in enumerate(groups):
        if kind == "head":
            continue
        in_group = np.array([g == gi for g, _, _ in rows])
        gemm = in_group & np.array([k in ("gemm", "linear") for _, _, k in rows])
        tp_comm = in_group & np.array([k == "collective" and "all_reduce" in n
                                       for _, n, k in rows])
        for share in (fwd, 1.0 - fwd):  # forward pass, backward pass
            comm = tp_comm & (share > 0)
            c = float(out[comm].sum())
            if c <= 0:
                continue
            g_s = float(np.sum(out[gemm] * share[gemm]))
            exposed = float(_core.tp_overlap_exposed_s(c, g_s, float(tp)))
            out[comm] *= exposed / c
    return out
