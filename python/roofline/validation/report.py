"""``roofline.validate``: the model's error on measurement files, per family, beside presets."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..efficiency import EfficiencyLike
from ..hardware import hardware as lookup_hardware
from ..ops.registry import row_entry
from .compare import Comparison, compare, summary
from .read import read_measurements

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["POOLED", "ValidationResult", "validate"]

#: Presets reported beside the chosen model.
BESIDE = ("constant", "peak")
#: Name of the pooled row per file: every kernel-time comparison once (launch chains and
#: wall times are host time, not kernels).
POOLED = "all kernel-time rows (pooled)"
#: Name of the median-of-family-medians row per file.
FAMILY_MEDIAN = "all families (median of family medians)"


def _is_kernel_time(family: str) -> bool:
    return "launch" not in family and "wall" not in family


@dataclass
class ValidationResult:
    """What :func:`validate` found.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per family (and file, when several): ``rows`` and, per model,
        ``<model>_median`` / ``<model>_p90`` (absolute relative error) and ``<model>_bias``
        (median signed error, + = predicted too slow); then a pooled and a
        median-of-family-medians row per file.
    unmapped : pandas.DataFrame
        Rows no predictor covers, by ``file``, ``family``, ``op`` and count (``rows``).
    errors : pandas.DataFrame
        Rows whose prediction raised, by ``file``, ``family``, count and first ``message``.
    models : tuple of str
        Model labels in column order (the chosen one first).
    comparisons : dict
        Model label -> list of (file, :class:`Comparison`).
    """

    table: pd.DataFrame
    unmapped: pd.DataFrame
    errors: pd.DataFrame
    models: tuple[str, ...]
    comparisons: dict[str, list[tuple[str, Comparison]]] = field(repr=False)

    def to_pandas(self) -> pd.DataFrame:
        """The per-family table (see ``table``)."""
        return self.table

    def _repr_html_(self) -> str:
        from .._html import result_html

        return result_html(f"predicted vs measured, per family (models: {', '.join(self.models)})",
                           [("rows no predictor covers", int(self.unmapped["rows"].sum())
                             if "rows" in self.unmapped else len(self.unmapped)),
                            ("rows whose prediction raised", int(self.errors["rows"].sum())
                             if "rows" in self.errors else len(self.errors))],
                           self.table)

    def to_csv(self) -> str:
        """The table as CSV (errors as fractions, SI everywhere)."""
        return str(self.table.to_csv(index=False))

    def to_json(self) -> str:
        """Table, unmapped rows and prediction errors as one JSON document."""
        doc = {"models": list(self.models),
               "table": json.loads(self.table.to_json(orient="records")),
               "unmapped": json.loads(self.unmapped.to_json(orient="records")),
               "errors": json.loads(self.errors.to_json(orient="records"))}
        return json.dumps(doc, indent=2)

    def plot(self, path: str | os.PathLike[str]) -> Path:
        """Predicted against measured time (log-log, one color per family, y = x) as a PNG."""
        from ._plot import plot_comparisons

        return plot_comparisons(self.comparisons[self.models[0]], Path(path), self.models[0])


def _label(efficiency: EfficiencyLike) -> str:
    return efficiency if isinstance(efficiency, str) else "model"


def _sources(measurements: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """(file label, rows) per input; paths are read and checked, empty inputs refused."""
    if isinstance(measurements, (str, os.PathLike)):
        items: list[Any] = [measurements]
    elif isinstance(measurements, Sequence) and measurements and all(
            isinstance(m, (str, os.PathLike)) for m in measurements):
        items = list(measurements)
    elif isinstance(measurements, Iterable) and not isinstance(measurements, (bytes, dict)):
        rows = read_measurements(list(measurements))
        if not rows:
            raise ValueError("validate: measurements has no rows")
        return [("rows", rows)]
    else:
        raise TypeError("validate: measurements must be a path, a list of paths or an "
                        f"iterable of row dicts, got {measurements!r}")
    out = []
    for item in items:
        path = Path(item)
        if not path.is_file():
            raise FileNotFoundError(f"validate: no such file: {str(path)!r}")
        rows = read_measurements(path)
        if not rows:
            raise ValueError(f"validate: {str(path)!r} has no measurement rows (empty file)")
        out.append((path.name if len(items) == 1 else str(path), rows))
    return out


def validate(
    measurements: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
    | Iterable[dict[str, Any]],
    hardware: Any = None,
    efficiency: EfficiencyLike = "default",
) -> ValidationResult:
    """Compare the model with measured kernel times, per family, beside the presets.

    Parameters
    ----------
    measurements : path, list of paths, or iterable of dict
        JSON-lines files in the shared measurement schema (``roofline bench`` writes them),
        or their rows.
    hardware : Hardware or str, optional
        Accelerator to predict on; default: each row's ``hardware`` field (rows measured on
        a CPU name a device the database does not have: pass a Hardware, e.g. a calibrated
        profile).
    efficiency : str or Efficiency
        The model to validate; ``"constant"`` and ``"peak"`` are reported beside it.

    Returns
    -------
    ValidationResult
        ``table`` (pandas), ``unmapped`` and ``errors`` (never dropped silently), ``plot()``.

    Raises
    ------
    FileNotFoundError
        A path does not exist.
    ValueError
        A malformed line (the message names file and line), or an empty input.
    KeyError
        ``hardware`` names no known accelerator.
    """
    import pandas as pd

    if isinstance(hardware, str):
        hardware = lookup_hardware(hardware)
    sources = _sources(measurements)
    models = (_label(efficiency), *(p for p in BESIDE if p != _label(efficiency)))
    effs: dict[str, EfficiencyLike] = {models[0]: efficiency, **{p: p for p in models[1:]}}
    several = len(sources) > 1
    table: list[dict[str, Any]] = []
    unmapped: dict[tuple[str, str, str], int] = {}
    errors: dict[tuple[str, str], list[Any]] = {}
    comparisons: dict[str, list[tuple[str, Comparison]]] = {m: [] for m in models}
    for file, rows in sources:
        mapped = []
        for row in rows:
            if row_entry(row["op"]) is not None:
                mapped.append(row)
            else:
                key = (file, str(row["family"]), str(row["op"]))
                unmapped[key] = unmapped.get(key, 0) + 1
        family_of = {str(r.get("id", "")): str(r["family"]) for r in mapped}
        per_model: dict[str, dict[str, dict[str, float]]] = {}
        pooled: dict[str, np.ndarray] = {}
        for m in models:
            errs: list[tuple[str, str]] = []
            comps = compare(mapped, hardware, effs[m], errors=errs)
            comparisons[m].extend((file, c) for c in comps)
            per_model[m] = summary(comps)
            pooled[m] = np.array([abs(c.error) for c in comps if _is_kernel_time(c.family)])
            if m == models[0]:
                for rid, msg in errs:
                    fam = family_of.get(rid, msg.split(":")[0])
                    slot = errors.setdefault((file, fam), [0, msg.split(": ", 1)[-1]])
                    slot[0] += 1
        entries: list[dict[str, Any]] = []
        for fam in sorted(set().union(*(s.keys() for s in per_model.values()))):
            entry: dict[str, Any] = {"file": file, "family": fam, "rows": 0}
            for m in models:
                s = per_model[m].get(fam)
                if s is None:
                    continue
                entry["rows"] = int(s["rows"])
                entry[f"{m}_median"] = s["median"]
                entry[f"{m}_p90"] = s["p90"]
                entry[f"{m}_bias"] = s["bias"]
            entries.append(entry)
        table.extend(entries)
        if entries:
            table.append({"file": file, "family": FAMILY_MEDIAN,
                          "rows": sum(e["rows"] for e in entries),
                          **{f"{m}_median": float(np.median([e[f"{m}_median"] for e in entries
                                                             if f"{m}_median" in e]))
                             for m in models if any(f"{m}_median" in e for e in entries)}})
        if len(pooled[models[0]]):
            table.append({"file": file, "family": POOLED, "rows": len(pooled[models[0]]),
                          **{k: v for m in models if len(pooled[m])
                             for k, v in ((f"{m}_median", float(np.median(pooled[m]))),
                                          (f"{m}_p90", float(np.percentile(pooled[m], 90))),
                                          )}})
    columns = ["file", "family", "rows"] + [f"{m}_{s}" for m in models
                                            for s in ("median", "p90", "bias")]
    df = pd.DataFrame(table, columns=columns)
    if not several:
        df = df.drop(columns="file")
    return ValidationResult(
        table=df,
        unmapped=pd.DataFrame([{"file": f, "family": fam, "op": op, "rows": n}
                               for (f, fam, op), n in sorted(unmapped.items())],
                              columns=["file", "family", "op", "rows"]),
        errors=pd.DataFrame([{"file": f, "family": fam, "rows": n, "message": msg}
                             for (f, fam), (n, msg) in sorted(errors.items())],
                            columns=["file", "family", "rows", "message"]),
        models=models,
        comparisons=comparisons,
    )
