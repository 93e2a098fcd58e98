"""Entries of ``nll_loss_forward`` / ``nll_loss_backward``: aten's one-block kernels.

With a mean or sum reduction over 2-d log-probabilities (``F.cross_entropy`` in eager HF
training), aten launches one block (``nll_loss_forward_reduce_cuda_kernel_2d``,
``nll_loss_backward_reduce_cuda_kernel_2d``) of ``clamp(2^round(log2(rows / 16)), 32, 1024)``
threads; each thread walks its rows one after another. The forward loads a row's target,
then the log-probability it indexes (2 dependent loads per row); the backward loads the
target and stores ``-grad`` at that index (1: the store does not wait; the gradient was
zeroed by a separate ``zero_``). The kernel touches a few bytes per row, never the logits:
its time is that chain, ``_core.nll_loss_chain_s(rows, trips, CAT_STEP_S)`` (a DRAM round
trip of :data:`.memory_entries.CAT_STEP_S` per load), on top of the streaming kernel's
fixed time. The H200 traces (4096 and 8192 rows: 256 and 512 threads, 16 rows each): 19-20 us
forward, 10-11 us backward; this model gives 25.6 and 12.8 us plus the fixed time (the
round trip of a lone block is shorter than a loaded one).

Without a reduction (``reduction=0``) or over 1-d input, one pass over the bytes as before.
"""

from __future__ import annotations

from ... import _core
from .call import Call
from .memory_entries import CAT_STEP_S, memory_at_least, memory_pricer
from .pricer import Pricer
from .table import Entry, Priced, add

__all__ = ["nll_loss_price"]

_PLAIN = memory_pricer("reduce", "reduction")


def _reduction(call: Call) -> int | None:
    """The recorded ``reduction`` (0 none, 1 mean, 2 sum); None when not recorded."""
    v = call.scalar("reduction", 3 if call.base == "nll_loss_forward" else 4)
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def nll_loss_price(call: Call, p: Pricer) -> Priced:
    """One block's dependent loads over the rows (see the module); a plain pass otherwise."""
    back = call.base == "nll_loss_backward"
    x = call.tensor(1 if back else 0)
    target = call.tensor(2 if back else 1)
    if x is None or target is None or len(x.shape) != 2 or _reduction(call) in (None, 0):
        return _PLAIN(call, p)
    rows = int(x.shape[0])
    trips = 1 if back else 2
    read = rows * target.itemsize + (0 if back else rows * x.itemsize)
    written = rows * x.itemsize if back else x.itemsize
    chain = _core.nll_loss_chain_s(float(rows), float(trips), CAT_STEP_S)
    e = p.traffic(read, written, 0.0, call.base)
    e = p.cached(("nll", call.base, rows, x.itemsize), lambda: memory_at_least(e, chain))
    threads = int(_core.nll_loss_threads(float(rows)))
    return [("reduction", e)], (
        f"{call.name}: one block of {threads} threads, {-(-rows // threads)} rows each, "
        f"{trips} dependent DRAM round trip(s) per row ({read} B read, {written} B written)")


for _name in ("aten::nll_loss_forward", "aten::nll_loss_backward"):
    add(_name, entry=lambda n: Entry(n, "memory", "reduction", nll_loss_price))
