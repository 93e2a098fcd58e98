"""The hardware database: the packaged JSON tables, loaded lazily once and checked at load.

``data/hardware.json`` is built from the research CSV by ``scripts/build_hardware_json.py``
(every number carries a source); ``data/torchao_hardware.json`` is torchao's own table, kept
verbatim for 1:1 comparisons. :func:`lookup` finds an entry by name (:mod:`.names`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .names import AMBIGUOUS_H100, GENERIC_NAMES, match_roofline, match_torchao, normalize
from .spec import PEAK_CLASSES, TABLES, Hardware

__all__ = ["DATA_DIR", "check_table", "list_hardware", "load", "lookup"]

#: Folder of the packaged tables.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
_TABLE_FILES = {"roofline": "hardware.json", "torchao": "torchao_hardware.json"}


@dataclass(frozen=True)
class Table:
    entries: tuple[Hardware, ...]
    index: dict[str, Hardware]  # normalised name -> entry (roofline table only)


_ENTRY_KEYS = frozenset(
    {
        "name",
        "full_name",
        "vendor",
        "compute_capability",
        "device_names",
        "aliases",
        "peak_flops_per_s",
        "mem_bytes_per_s",
        "mem_capacity_bytes",
        "l2_bytes",
        "sms",
        "clock_hz",
        "tdp_w",
        "interconnect_bytes_per_s",
        "interconnect_note",
        "notes",
        "sources",
        "derived",
    }
)


def _roofline_entry(entry: dict[str, Any], where: str) -> Hardware:
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    missing = sorted(_ENTRY_KEYS - set(entry))
    if unknown or missing:
        raise ValueError(f"{where}: unknown keys {unknown}, missing keys {missing}")
    peaks = entry["peak_flops_per_s"]
    bad = sorted(set(peaks) - set(PEAK_CLASSES))
    if bad:
        raise ValueError(f"{where}: unknown peak classes {bad}")
    notes = " ".join(s for s in (entry["interconnect_note"], entry["notes"]) if s)
    cc = entry["compute_capability"]
    return Hardware(
        name=entry["name"],
        full_name=entry["full_name"],
        vendor=entry["vendor"],
        **{f"{p}_flops_per_s": peaks.get(p) for p in PEAK_CLASSES},
        mem_bytes_per_s=entry["mem_bytes_per_s"],
        mem_capacity_bytes=entry["mem_capacity_bytes"],
        l2_bytes=entry["l2_bytes"],
        sms=entry["sms"],
        clock_hz=entry["clock_hz"],
        tdp_w=entry["tdp_w"],
        interconnect_bytes_per_s=entry["interconnect_bytes_per_s"],
        device_names=tuple(entry["device_names"]),
        aliases=tuple(entry["aliases"]),
        sources=entry["sources"],
        notes=notes,
        table="roofline",
        compute_capability=None if cc is None else tuple(cc),
    )


def _torchao_entry(entry: dict[str, Any], doc: dict[str, Any]) -> Hardware:
    origin = f"torchao {doc['torchao_version']} {doc['source_file']}"
    key = entry["key"]
    notes = " ".join(["Known torchao bugs:", *entry["known_bugs"]]) if entry["known_bugs"] else ""
    return Hardware(
        name=key,
        full_name=key,
        vendor=entry["vendor"],
        bf16_flops_per_s=entry["bf16_peak_tops"],
        fp8_flops_per_s=entry["fp8_peak_tops"],
        fp4_flops_per_s=entry.get("fp4_peak_tops"),
        mem_bytes_per_s=entry["peak_mem_bw_bytes_sec"],
        achievable_flops_fraction=entry.get("pct_achievable_gemm_tops"),
        achievable_mem_fraction=entry.get("pct_achievable_mem_bw"),
        device_names=(key,),
        sources=f"{origin} gpu_name_to_specs[{key!r}]: {entry['torchao_comments']}",
        notes=notes,
        table="torchao",
    )


def _index(entries: tuple[Hardware, ...], where: str, *, roofline: bool) -> dict[str, Hardware]:
    """Map every normalised name, alias, full name and device name to its entry."""
    index: dict[str, Hardware] = {}
    for hw in entries:
        for raw in (hw.name, hw.full_name, *hw.aliases, *hw.device_names):
            key = normalize(raw)
            if not key:
                raise ValueError(f"{where}: {hw.name!r} has an empty name or alias")
            other = index.get(key)
            if other is not None and other.name != hw.name:
                raise ValueError(
                    f"{where}: {raw!r} names both {other.name!r} and {hw.name!r} "
                    "(duplicate name, alias or device name)"
                )
            index[key] = hw
    for key in AMBIGUOUS_H100 | GENERIC_NAMES if roofline else ():
        if key in index:
            raise ValueError(f"{where}: {key!r} must not name an entry (it is ambiguous)")
    return index


@functools.cache
def load(table: str) -> Table:
    """The entries of one table and its name index, read and checked on first use."""
    path = DATA_DIR / _TABLE_FILES[table]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    if table == "roofline":
        entries = tuple(
            _roofline_entry(e, f"{path.name} entry {i}") for i, e in enumerate(doc["entries"])
        )
    else:
        entries = tuple(_torchao_entry(e, doc) for e in doc["entries"])
    index = _index(entries, path.name, roofline=table == "roofline")
    return Table(entries=entries, index=index)


def check_table(table: object, func: str) -> str:
    if not isinstance(table, str) or table not in TABLES:
        raise ValueError(f"{func}: table must be one of {', '.join(TABLES)}; got {table!r}")
    return table


def list_hardware(table: str = "roofline") -> list[str]:
    """Canonical names of every entry, in database order.

    Parameters
    ----------
    table : {"roofline", "torchao"}
        Which table; ``"torchao"`` lists torchao's ``gpu_name_to_specs`` keys.
    """
    check_table(table, "list_hardware")
    return [hw.name for hw in load(table).entries]


def lookup(name: str, table: str) -> Hardware:
    """The entry of ``table`` that ``name`` spells (see :mod:`.names` for the matching)."""
    if table == "roofline":
        return match_roofline(name, load("roofline").index)
    return match_torchao(name, load("torchao").entries)
