"""The registry table: one :class:`Entry` per framework op name, and the families that price
names no entry lists (Inductor kernels by prefix, torch's pointwise / reduction tags)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .call import Call

__all__ = ["Entry", "Priced", "base_name", "entries", "lookup", "register", "resolve"]

#: What an entry's ``price`` returns: the kernels the op launches as (kind, Estimate) pairs
#: (empty: launches nothing) and how they were priced, or (None, why it was not).
Priced = tuple[list[tuple[str, Any]] | None, str]
PriceFn = Callable[[Call, Any], Priced]

#: Kinds of entries.
KINDS = ("gemm", "conv", "attention", "row", "memory", "free", "collective", "kernel",
         "public")


@dataclass(frozen=True)
class Entry:
    """How one framework op is priced.

    ``op`` names the public op that prices it (``gemm``, ``attention``, ``rmsnorm``,
    ``elementwise``, ``all_reduce``, ...; None for ops that launch nothing); ``price`` reads the
    arguments from a :class:`Call`. Entries of measurement-row ops (kind ``public``) carry the
    row ``predictor``, whether it takes arrays (``vector``) and the fit ``group`` instead.
    """

    name: str
    kind: str
    op: str | None
    price: PriceFn | None = None
    predictor: Callable[..., Any] | None = None
    vector: bool = False
    group: Callable[[dict[str, Any]], str | None] | None = None


_ENTRIES: dict[str, Entry] = {}
_FAMILIES: list[tuple[str, Callable[[Call], bool], Entry]] = []
_FIRST: list[tuple[str, Callable[[Call], bool], Entry]] = []
_LAST: list[tuple[str, Callable[[Call], bool], Entry]] = []


def base_name(name: str) -> str:
    """The op an overload belongs to (``aten::add.Tensor`` -> ``aten::add``)."""
    head, sep, tail = name.partition("::")
    if not sep:
        return name
    return f"{head}::{tail.split('.')[0]}"


def register(*names: str, kind: str, op: str | None = None, **fields: Any
             ) -> Callable[[PriceFn], PriceFn]:
    """Register ``price`` for each of ``names`` (decorator; also callable as
    ``register(...)(fn)``). A name registered twice raises ``ValueError``."""
    if kind not in KINDS:
        raise ValueError(f"registry: unknown kind {kind!r}")

    def deco(fn: PriceFn) -> PriceFn:
        add(*names, entry=lambda n: Entry(n, kind, op, fn, **fields))
        return fn

    return deco


def add(*names: str, entry: Callable[[str], Entry]) -> None:
    """Add one entry per name (built by ``entry(name)``); a name registered twice raises."""
    for n in names:
        key = base_name(n)
        if key in _ENTRIES:
            raise ValueError(f"registry: {key!r} is registered twice")
        _ENTRIES[key] = entry(key)


def register_family(name: str, match: Callable[[Call], bool], kind: str, op: str | None,
                    price: PriceFn, first: bool = False, last: bool = False) -> None:
    """A family of op names priced alike (``triton_*`` kernels, torch's pointwise tag),
    consulted when no entry lists the name itself (``first``: before the entries, as views
    are: a view launches nothing whatever its name; ``last``: after every other family)."""
    if any(f == name for f, _, _ in _FAMILIES + _FIRST + _LAST):
        raise ValueError(f"registry: family {name!r} is registered twice")
    where = _FIRST if first else _LAST if last else _FAMILIES
    where.append((name, match, Entry(name, kind, op, price)))


def lookup(name: str) -> Entry | None:
    """The entry of one op name (overloads map to their base op), None when none."""
    return _ENTRIES.get(base_name(name))


def resolve(call: Call) -> Entry | None:
    """The entry pricing ``call``: its name's entry, else the first family that matches."""
    e = next((f for _, match, f in _FIRST if match(call)), None) or lookup(call.name)
    if e is not None:
        return e
    return next((f for _, match, f in _FAMILIES + _LAST if match(call)), None)


def entries() -> Iterator[Entry]:
    """Every registered entry, in registration order."""
    return iter(list(_ENTRIES.values()))
