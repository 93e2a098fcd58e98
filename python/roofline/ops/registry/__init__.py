"""THE op registry: for each framework op, how it is priced.

One :class:`Entry` per op name: aten ops (overloads map to their base op), functional and NCCL
collectives, memset / memcpy events, ops that launch nothing (``kind="free"``), and the public
ops as measurement rows name them (``gemm``, ``attention``, ``cast``, ...; ``kind="public"``).
Families price names no entry lists: Inductor's ``triton_*`` kernels, and on the live path
torch's ``pointwise`` / ``reduction`` / view tags. Like ``torch.utils.flop_counter``'s
``register_flop_formula``: data plus small functions, and registering a name twice raises.

Every path prices through it: ``roofline.torch`` builds a :class:`Call` from a live aten
dispatch, ``roofline.trace`` from a Kineto event, and both call :func:`price`;
``roofline.validation`` and ``roofline.calibration`` take a measurement row's predictor, array
support and fit group from its entry.
"""

from __future__ import annotations

from . import (
    aten_memory,
    atomic_entries,
    attention_entries,
    fallback,
    foreach_entries,
    gather_entries,
    gemm_entries,
    index_put_entries,
    kernel_entries,
    nll_entries,
    nonzero_entries,
    public_entries,
    reduce_entries,
    sort_entries,
    weight_only_entries,
)
from .call import Call, Impl, TensorArg
from .pricer import Pricer
from .public_entries import row_entry
from .table import Entry, Priced, entries, lookup, register, register_family, resolve

__all__ = ["Call", "Entry", "Impl", "Pricer", "Priced", "TensorArg", "entries", "lookup",
           "price", "register", "register_family", "resolve", "row_entry"]

del aten_memory, atomic_entries, attention_entries, fallback, foreach_entries, gather_entries
del gemm_entries, index_put_entries
del kernel_entries, nll_entries, nonzero_entries
del public_entries, reduce_entries, sort_entries, weight_only_entries


def price(call: Call, pricer: Pricer) -> Priced:
    """The kernels ``call`` launches, priced by its entry, and how; ``(None, why)`` when no
    entry prices it."""
    entry = resolve(call)
    if entry is None or entry.price is None:
        return None, f"{call.name}: no registry entry"
    return entry.price(call, pricer)
