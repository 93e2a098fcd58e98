"""Name matching: how a user's spelling or a device's reported name finds a table entry.

Matching is exact after :func:`normalize` (case-folding; runs of whitespace, ``-`` and ``_``
become one space) and :func:`clean` (a leading ``GPU 0: `` and a trailing ROCm ``(gfx...)``
dropped); a leading vendor word is ignored. Generic ROCm names and a bare ``H100`` are refused
with an error that says what to pass. torchao's table matches as torchao does (exact key,
else the first key the name starts with).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .._errors import close_matches
from .spec import ENV_VAR, Hardware, UnknownHardwareError

__all__ = [
    "AMBIGUOUS_H100",
    "GCN_ARCH",
    "GCN_ARCH_AMBIGUOUS",
    "GENERIC_NAMES",
    "clean",
    "match_roofline",
    "match_torchao",
    "normalize",
]


def normalize(name: str) -> str:
    """Case-fold and turn runs of whitespace, ``-`` and ``_`` into single spaces."""
    return " ".join(re.sub(r"[-_\s]+", " ", name).split()).casefold()


_GPU_INDEX_PREFIX = re.compile(r"^\s*GPU\s*\d+\s*:\s*", re.IGNORECASE)
_GFX_SUFFIX = re.compile(r"\s*\(\s*gfx[0-9a-z]*[^)]*\)\s*$", re.IGNORECASE)
_VENDOR_PREFIXES = ("nvidia ", "tesla ", "amd instinct ", "amd ", "google ", "intel ", "habana ")
#: Normalised device names that do not identify a model (no entry may carry them).
GENERIC_NAMES = frozenset({"", "amd radeon graphics", "amd instinct", "nvidia graphics device"})
#: Normalised names that could be several H100 SKUs (no entry may carry them).
AMBIGUOUS_H100 = frozenset({"h100", "nvidia h100"})
#: ROCm gcnArchName (before the first ':') -> canonical name, where unambiguous.
GCN_ARCH = {"gfx90a": "MI250X"}
#: ROCm gcnArchName -> the models it could be, where several share it.
GCN_ARCH_AMBIGUOUS = {
    "gfx942": "MI300X, MI325X or MI300A",
    "gfx950": "MI350X or MI355X",
}


def clean(name: str) -> str:
    """Drop a leading ``GPU 0: `` and a trailing ROCm `` (gfx...)`` from a device name."""
    return _GFX_SUFFIX.sub("", _GPU_INDEX_PREFIX.sub("", name)).strip()


def _generic_name_error(name: str) -> UnknownHardwareError:
    shown = f"the generic name {name!r}" if name.strip() else "an empty name"
    return UnknownHardwareError(
        f"hardware: the device reported {shown}, which does not identify the model "
        "(some ROCm stacks report 'AMD Radeon Graphics' or '' even on an MI300X). Pass the "
        f"model name, e.g. hardware('MI300X'), or set {ENV_VAR}=MI300X; "
        "see list_hardware() for the choices."
    )


def _ambiguous_h100_error(name: str) -> UnknownHardwareError:
    return UnknownHardwareError(
        f"hardware: {name!r} is ambiguous. A bare 'H100' could be 'H100 SXM' (3.35 TB/s), "
        "'H100 PCIe' (2.0 TB/s) or 'H100 NVL' (3.9 TB/s); and the exact device name "
        "'NVIDIA H100' belongs to a different SKU (PCI id 2339) whose specs are not "
        "published (torchao uses 2.4 TB/s for it). Pass 'H100 SXM', 'H100 PCIe' or "
        "'H100 NVL', or hardware('NVIDIA H100', table='torchao') for torchao's numbers.",
        ("H100 SXM", "H100 PCIe", "H100 NVL"), argument="hardware", function="hardware",
        ambiguous=True,
    )


def _unknown_error(name: str, candidates: Mapping[str, Hardware],
                   table: str) -> UnknownHardwareError:
    matches = close_matches(normalize(name), candidates, n=20, cutoff=0.5)
    suggestions: list[str] = []
    for key in matches:
        if candidates[key].name not in suggestions:
            suggestions.append(candidates[key].name)
    hint = f"; close matches: {', '.join(suggestions[:5])}" if suggestions else ""
    table_arg = "" if table == "roofline" else f"table={table!r}"
    return UnknownHardwareError(
        f"hardware: unknown hardware {name!r}{' in ' + table_arg if table_arg else ''}{hint}. "
        f"See list_hardware({table_arg}) for the names, or describe your device with "
        "Hardware(...) / Hardware.from_dict({...}).",
        suggestions[:5],
    )


def match_roofline(name: str, index: Mapping[str, Hardware]) -> Hardware:
    """The entry of the roofline table ``name`` spells (``index``: normalised name -> entry).

    Raises
    ------
    UnknownHardwareError
        Generic, ambiguous or unknown names (the message lists close matches).
    """
    cleaned = clean(name)
    key = normalize(cleaned)
    if key in GENERIC_NAMES:
        raise _generic_name_error(cleaned)
    if key in AMBIGUOUS_H100:
        raise _ambiguous_h100_error(name)
    hw = index.get(key)
    if hw is not None:
        return hw
    for prefix in _VENDOR_PREFIXES:
        if key.startswith(prefix):
            stripped = key[len(prefix) :]
            if stripped in AMBIGUOUS_H100:
                raise _ambiguous_h100_error(name)
            hw = index.get(stripped)
            if hw is not None:
                return hw
    raise _unknown_error(name, index, "roofline")


def match_torchao(name: str, entries: Sequence[Hardware]) -> Hardware:
    """Match exactly as torchao's ``get_roofline_gpu_name``: exact key, else first prefix."""
    for hw in entries:
        if name == hw.name:
            return hw
    for hw in entries:
        if name.startswith(hw.name):
            return hw
    raise _unknown_error(name, {normalize(hw.name): hw for hw in entries}, "torchao")
