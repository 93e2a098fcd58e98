"""Megatron-Core core_v0.11 / core_v0.12's MoE layer (``megatron_core``,
``moe_permute_fusion``): no probabilities all-to-all, the unfused drop-and-pad permute and
unpermute (``moe_utils.permute`` / ``unpermute`` at core_v0.11.0 / core_v0.12.0) kernel by
kernel, core_v0.11's count kernels under padding, and the arguments' checks."""

from __future__ import annotations

import pytest

import roofline as rl
from roofline.ops.host import HOST_CLASSES
from roofline.transformer.framework_ops import mcore_unfused_permute
from roofline.transformer.moe_host import moe_extra_launches
from roofline.transformer.program import Program

_KERNEL = HOST_CLASSES.index("kernel")
_PAD = {"moe_capacity_factor": 1.0, "moe_pad_to_capacity": True}


def _kernels(ops: Program, name: str) -> list[tuple[float, float, float]]:
    """The (elements, reads, writes) of row ``name``'s kernels."""
    for _, row, _, parts in ops.rows:
        if row == name:
            return [tuple(ops.elts[i]) for _, i in parts]
    raise KeyError(name)


def test_unfused_permute_kernels_by_hand():
    """T = 8192 tokens, E = 8, C = 2048 (E·C = 16384 rows), hidden 4096, in 2-byte elements:
    to(int8) and .T.contiguous() T·E/2 each; the argsort (8 rows of 8192 > 4096: PyTorch's
    full-sort path) an int2 fill 4·T·E, cub's pairs sort of the int8 keys (histogram T·E/2,
    scan, pass 4.5·T·E) and keys sort of the int2 (histogram 4·T·E, scan, pass 4·T·E), the
    postprocess 4.5·T·E; the [:, :C] copy 4·E·C, index_select rows·hidden; backward
    zeros(T·hidden) and index_add_ of rows·hidden."""
    ops = Program(train=True, recipe=None)
    mcore_unfused_permute(ops, 0, "permute", 8192, 8, 16384, 4096)
    te, n = 8192 * 8, 16384 * 4096
    assert _kernels(ops, "permute") == [
        (te / 2, 1, 1), (te / 2, 1, 1),
        (4 * te, 0, 1), (te / 2, 1, 0), (256, 1, 1), (4.5 * te, 1, 1),
        (4 * te, 1, 0), (256, 1, 1), (4 * te, 1, 1), (4.5 * te, 1, 1),
        (4 * 16384, 1, 1), (n, 1, 1)]
    assert _kernels(ops, "permute bwd") == [(8192 * 4096, 0, 1), (n, 1, 1)]
    assert "moe weighted sum" not in {r[1] for r in ops.rows}


def test_unfused_unpermute_kernels_by_hand():
    """probs.T.contiguous() T·E, arange(E) and * T (4·E int64), + sorted_indices (4·E·C),
    the probabilities' index_select (E·C values, 4·E·C index), the product rows·hidden,
    zeros(T·hidden), scatter_add_ rows·hidden; backward gather, grad·probs, grad·tokens and
    its sum, zeros(T·E) and index_add_ of the probabilities; saved rows·hidden + rows."""
    ops = Program(train=True, recipe=None)
    mcore_unfused_permute(ops, 0, "unpermute", 8192, 8, 16384, 4096)
    te, s, n, th = 8192 * 8, 16384, 16384 * 4096, 8192 * 4096
    assert _kernels(ops, "moe weighted sum") == [
        (te, 1, 1), (32, 0, 1), (32, 1, 1), (4 * s, 1, 1), (s, 5, 1), (n, 1, 1), (th, 0, 1),
        (n, 1, 1)]
    assert _kernels(ops, "moe weighted sum bwd") == [
        (n, 1, 1), (n, 1, 1), (n, 2, 1), (n, 1, 0), (te, 0, 1), (s, 5, 1)]
    assert ops.saved[0] == n + s


def _mixtral(**kw):
    return rl.transformer.estimate("Mixtral-8x7B", "train", seq_len=512, micro_batch=1,
                                   hardware="H100 SXM", ep=8, **_PAD, **kw)


def _rows(est) -> dict[str, float]:
    df = est.to_pandas()
    d = df[df["layer"] == 0]
    return dict(zip(d["op"], d["bytes"], strict=True))


def test_core_0_11_sends_no_probabilities_and_keeps_the_other_rows():
    """0.11 / 0.12 drop the probabilities' all-to-all and nothing else; without fusion only
    the permute and the weighted sum (unpermute) rows change."""
    base, old = _rows(_mixtral()), _rows(_mixtral(megatron_core="0.12"))
    assert "dispatch probs all_to_all" in base and "dispatch probs all_to_all" not in old
    assert {k: v for k, v in base.items() if "probs" not in k} == old
    eager = _rows(_mixtral(megatron_core="0.11", moe_permute_fusion=False))
    moved = {k for k in old if old[k] != eager.get(k)}
    assert moved == {"permute", "permute bwd", "moe weighted sum", "moe weighted sum bwd"}
    # the eager unpermute moves more bytes than TE's fused weighted sum
    assert eager["moe weighted sum"] > old["moe weighted sum"]


def test_core_0_11_counts_tokens_before_the_padded_return():
    """core_v0.11's preprocess runs routing_map.sum(dim=0).long() (2 kernels) before its
    drop-and-pad early return; core_v0.12 returns first (one device fill either way)."""
    none: frozenset[str] = frozenset()
    for ep in (1, 8):
        new = moe_extra_launches("preprocess", ep, none, capacity=(1.0, True), core="0.12")
        old = moe_extra_launches("preprocess", ep, none, capacity=(1.0, True), core="0.11")
        assert new[:, _KERNEL].sum() == 1 and old[:, _KERNEL].sum() == 3
    # dropless, the count runs in every release
    assert moe_extra_launches("preprocess", 8, none, core="0.11").shape == \
        moe_extra_launches("preprocess", 8, none).shape


@pytest.mark.parametrize("kw, exc, match", [
    ({"megatron_core": "0.13"}, ValueError, "megatron_core"),
    ({"megatron_core": 0.11}, TypeError, "megatron_core"),
    ({"moe_permute_fusion": "no"}, TypeError, "moe_permute_fusion must be a bool"),
    ({"moe_permute_fusion": False}, NotImplementedError, "megatron_core='0.11' or '0.12'"),
    ({"moe_permute_fusion": False, "megatron_core": "0.11", "moe_pad_to_capacity": False},
     NotImplementedError, "drop-and-pad"),
    ({"megatron_core": "0.11", "moe_dispatcher": "hybridep", "moe_capacity_factor": None,
      "moe_pad_to_capacity": False}, ValueError, "moe_dispatcher='alltoall'"),
])
def test_core_option_checks(kw, exc, match):
    args = {**_PAD, **kw}
    with pytest.raises(exc, match=match):
        rl.transformer.estimate("Mixtral-8x7B", "train", seq_len=512, micro_batch=1,
                                hardware="H100 SXM", ep=8, **args)


def test_core_options_apply_to_megatron_training_only():
    with pytest.raises(ValueError, match="phase='train'"):
        rl.transformer.estimate("Mixtral-8x7B", "decode", kv_len=512, hardware="H100 SXM",
                                megatron_core="0.11")
    # the defaults stay valid everywhere
    rl.transformer.estimate("Mixtral-8x7B", "decode", kv_len=512, hardware="H100 SXM",
                            megatron_core="0.15", moe_permute_fusion=True)
