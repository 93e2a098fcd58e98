"""Fit a profile's terms to measurements: bounded coordinate descent, one term at a time.

Each term (``roofline.calibration.terms``) is searched on its bounded interval (a coarse grid,
then three finer grids around the best value) when some row of the groups it acts on is there,
minimising over all usable rows (a term moves other families too: the bf16 fraction sets grouped
GEMMs, attention and float8 linears) the mean over families of ``median + p90 / 4`` of the
absolute relative error of the public API's prediction (``roofline.validation.compare``). Two
sweeps over all terms, since some interact (GEMM latency and compute fraction, call time and
rate). A term moves only when that lowers the loss by at least ``MIN_GAIN``, so terms the data
cannot see keep their packaged values and noise is not chased.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..hardware import Hardware
from .profile import Profile
from .terms import AREAS, Term, group, terms_for

__all__ = ["fit_profile", "loss", "profile_of"]


def profile_of(base: Hardware, fitted: dict[str, Any] | None = None,
               fit: dict[str, Any] | None = None) -> Profile:
    """A Profile with ``base``'s Hardware fields (a Profile base keeps its own patch)."""
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Hardware)}
    patch = base.fitted.to_dict() if isinstance(base, Profile) else {}
    return Profile(**fields, fitted=fitted if fitted is not None else patch, fit=fit or {})


def current(hw: Hardware, path: tuple[str, ...]) -> float:
    """The value the default model uses for the term at ``path`` on ``hw``."""
    from .. import _calibration
    from .._terms import attention, host
    from .documents import documents

    cal, areas = documents(hw)
    if path[0] == "compute_fraction":
        return float(_calibration.compute_fractions(hw, cal)[path[1]])
    if path == ("attention", "flash_fraction"):
        return float(attention.core_terms(hw, areas["attention"]).flash.fraction)
    node: Any = cal["params"] if path[0] == "params" else areas[path[0]]
    for key in path[1:]:
        node = node.get(key) if isinstance(node, dict) else None
    if node is None:
        return float(host.DEFAULTS.get(path[-1], 0.0)) if path[0] == "host" else 0.0
    return float(node)


def _set(fitted: dict[str, Any], path: tuple[str, ...], value: float) -> dict[str, Any]:
    out = copy.deepcopy(fitted)
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return out


def family_errors(rows: list[dict[str, Any]], hw: Hardware,
                  failures: list[tuple[str, str]] | None = None) -> dict[str, np.ndarray]:
    """Signed relative error (predicted / measured - 1) of each family's rows on ``hw``."""
    from ..validation import compare

    out: dict[str, list[float]] = {}
    for c in compare(rows, hardware=hw, errors=failures):
        out.setdefault(c.family, []).append(c.error)
    return {k: np.array(v) for k, v in out.items()}


def loss(errors: dict[str, np.ndarray]) -> float:
    """Mean over families of median + p90 / 4 of the absolute relative error."""
    if not errors:
        return 0.0
    return float(np.mean([np.median(np.abs(e)) + 0.25 * np.percentile(np.abs(e), 90)
                          for e in errors.values()]))


def _round(x: float) -> float:
    return float(f"{x:.4g}")


#: A term leaves its current value only when that lowers the loss by this much (the
#: measurement noise floor is ~2 % per row): no chasing noise on small families.
MIN_GAIN = 0.002

#: A term is fitted only when its groups have at least this many rows.
MIN_ROWS = 1


def search(evaluate: Callable[[float], float], x0: float, lo: float, hi: float,
           points: int = 13, rounds: int = 3, min_gain: float = MIN_GAIN) -> tuple[float, float]:
    """Best (value, loss) on [lo, hi] from x0: a grid, then finer grids around the best.

    The first move away from ``x0`` must gain at least ``min_gain``; refinements any gain.
    """
    start = evaluate(x0)
    best_x, best = x0, start
    grid, step = np.linspace(lo, hi, points), (hi - lo) / (points - 1)
    for _ in range(rounds + 1):
        for x in grid:
            x = _round(float(x))
            v = evaluate(x)
            if v < best - 1e-9 and v < start - min_gain:
                best, best_x = v, x
        grid = np.linspace(max(lo, best_x - step), min(hi, best_x + step), 9)
        step /= 4
    return best_x, best


def _base(rows: list[dict[str, Any]], hardware: Any) -> Hardware:
    from ..hardware import hardware as lookup

    if hardware is not None:
        return lookup(hardware)
    names = sorted({str(r["hardware"]) for r in rows if r.get("hardware")})
    if len(names) > 1:
        raise ValueError(f"calibrate: the measurements are of several accelerators {names}; "
                         "pass hardware= (the base the profile is fitted for) or split the file")
    return lookup(names[0] if names else None)


_SOURCE = re.compile(r"measured on (?P<device>[^,]+?), torch (?P<torch>[^\s,]+)")


def provenance(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Device and software versions the rows were measured with (fields, else ``source``)."""
    for r in rows:
        sw = dict(r.get("software") or {})
        device = r.get("device") or sw.pop("device", None)
        for key in ("torch", "cuda", "hip"):
            if r.get(key):
                sw[key] = r[key]
        m = _SOURCE.search(str(r.get("source", "")))
        if m and not device:
            device = m["device"]
        if m and "torch" not in sw:
            sw["torch"] = m["torch"]
        if device or sw:
            return {"device": str(device or ""), "software": {k: str(v) for k, v in sw.items()}}
    return {"device": "", "software": {}}


def fit_profile(measurements: str | Path | Iterable[dict[str, Any]], hardware: Any = None, *,
                terms: Iterable[str] | None = None, sweeps: int = 2,
                progress: Callable[[str], None] | None = None) -> Profile:
    """Fit the default model's terms for one accelerator to measured rows; return the Profile.

    See ``roofline.calibrate.calibrate`` (the public entry) for the parameters.
    """
    from ..validation import read_measurements

    fn = "calibrate"
    areas = AREAS if terms is None else tuple(terms)
    unknown_areas = [a for a in areas if a not in AREAS]
    if isinstance(terms, str) or unknown_areas:
        raise ValueError(f"{fn}: terms must be a list of {AREAS}, got {terms!r}")
    if isinstance(sweeps, bool) or not isinstance(sweeps, int) or sweeps < 1:
        raise ValueError(f"{fn}: sweeps must be a positive integer, got {sweeps!r}")
    where = str(measurements) if isinstance(measurements, (str, Path)) else "rows"
    rows = [dict(r, id=str(r.get("id") or f"row-{i}"))
            for i, r in enumerate(read_measurements(measurements))]
    if not rows:
        raise ValueError(f"{fn}: no measurement rows in {where}")
    base = _base(rows, hardware)
    start = profile_of(base)
    unused: dict[str, str] = {}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        g = group(r)
        if g is None:
            unused.setdefault(str(r["family"]), f"no model for op {r['op']!r}")
        else:
            grouped.setdefault(g, []).append(r)
    failures: list[tuple[str, str]] = []
    before = family_errors([r for rs in grouped.values() for r in rs], start, failures)
    bad = {rid for rid, _ in failures}
    for _, msg in failures:
        unused.setdefault(msg.split(":")[0], "prediction failed: " + msg.split(": ", 1)[-1])
    grouped = {g: [r for r in rs if r["id"] not in bad] for g, rs in grouped.items()}
    grouped = {g: rs for g, rs in grouped.items() if rs}
    candidates = terms_for(set(grouped), areas)
    todo = [t for t in candidates
            if sum(len(grouped.get(g, [])) for g in t.groups) >= MIN_ROWS]
    decided = {g for t in todo for g in t.groups}
    seen = {g for t in candidates for g in t.groups}
    for g, rs in grouped.items():
        if g not in decided:
            why = (f"fewer than {MIN_ROWS} rows for its terms" if g in seen
                   else "no fitted term acts on it (validated only)")
            for r in rs:
                unused.setdefault(str(r["family"]), why)
    if not todo:
        reasons = "; ".join(f"{k}: {v}" for k, v in sorted(unused.items()))
        raise ValueError(f"{fn}: no usable rows in {where} for terms {list(areas)} ({reasons})")
    fitted = start.fitted.to_dict()
    changes: dict[str, dict[str, float]] = {}
    # Every term is judged on every usable row: a term fitted on its own groups moves others
    # too (the bf16 fraction sets grouped GEMMs, attention and float8 linears).
    sel = [r for rs in grouped.values() for r in rs]
    for sweep in range(sweeps):
        for term in todo:
            x0 = min(max(current(profile_of(base, fitted), term.path), term.lo), term.hi)

            def evaluate(x: float, term: Term = term, now: dict[str, Any] = fitted) -> float:
                return loss(family_errors(sel, profile_of(base, _set(now, term.path, x))))

            x, _ = search(evaluate, x0, term.lo, term.hi)
            if x != x0:
                fitted = _set(fitted, term.path, x)
            changes.setdefault(term.label, {"base": _round(current(start, term.path))})
            if progress is not None:
                progress(f"sweep {sweep + 1}: {term.label} = {x:.4g}")
    for term in todo:
        changes[term.label]["fitted"] = _round(current(profile_of(base, fitted), term.path))
    used = [r for rs in grouped.values() for r in rs]
    after = family_errors(used, profile_of(base, fitted))
    families = {f: {"rows": int(len(e)), "before": round(float(np.median(np.abs(before[f]))), 4),
                    "after": round(float(np.median(np.abs(e))), 4)}
                for f, e in sorted(after.items()) if f in before}
    meta = {
        "base": base.base if isinstance(base, Profile) else base.name,
        **provenance(rows),
        "measurements": where,
        "rows": len(used),
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "terms": changes,
        "families": families,
        "unused": dict(sorted(unused.items())),
    }
    return profile_of(base, fitted, meta)
