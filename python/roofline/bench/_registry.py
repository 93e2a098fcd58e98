"""Every benchmark family, and selecting them by name for a device."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from ._cases import Family

__all__ = ["PREFIXES", "all_families", "family_names", "select"]

#: Device -> family-name prefix (``gpu_gemm_bf16``, ``cpu_gemm_fp32``).
PREFIXES = {"cuda": "gpu", "cpu": "cpu"}


def all_families() -> list[Family]:
    """Every family, in the order a run measures them (imports only the standard library)."""
    from . import _attention, _gemm, _launch, _memory, _rows

    return [*_gemm.FAMILIES, *_attention.FAMILIES, *_rows.FAMILIES, *_memory.FAMILIES,
            *_launch.FAMILIES]


def family_names(device: str = "cuda") -> list[str]:
    """Full family names on ``device`` (``"cuda"`` -> ``gpu_*``, ``"cpu"`` -> ``cpu_*``)."""
    prefix = PREFIXES[device]
    return [f"{prefix}_{f.name}" for f in all_families()]


def select(names: str | Iterable[str] | None, device: str) -> tuple[list[Family], bool]:
    """The families ``names`` picks on ``device``, and whether the user named them.

    A name is a full name (``gpu_gemm_bf16``), a base name (``gemm_bf16``) or a shell
    pattern of either (``gemm_*``, ``*_compiled``).

    Raises
    ------
    TypeError
        ``names`` is not a string or an iterable of strings.
    ValueError
        A name matches no family; the message lists the valid ones.
    """
    families = all_families()
    if names is None:
        return families, False
    if isinstance(names, str):
        names = [n for n in names.replace(",", " ").split() if n]
    try:
        wanted = list(names)
    except TypeError:
        raise TypeError(f"bench: families must be a list of names, got {names!r}") from None
    if not wanted:
        raise ValueError("bench: families must name at least one family, got an empty list")
    prefix = PREFIXES[device] + "_"
    chosen: set[str] = set()
    for name in wanted:
        if not isinstance(name, str):
            raise TypeError(f"bench: family names must be strings, got {name!r}")
        base = name[len(prefix):] if name.startswith(prefix) else name
        hits = [f.name for f in families if fnmatch.fnmatchcase(f.name, base)]
        if not hits:
            valid = ", ".join(prefix + f.name for f in families)
            raise ValueError(f"bench: unknown family {name!r} on {device}; valid families: "
                             f"{valid}")
        chosen.update(hits)
    return [f for f in families if f.name in chosen], True
