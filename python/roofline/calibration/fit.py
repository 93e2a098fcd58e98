"""Fit a profile's terms to measurements: guarded, regularised coordinate descent.

Rows are predicted in batches (:mod:`.batch`: one array call per family and fixed arguments,
the same numbers ``roofline.validation.compare`` gives row by row); a term re-predicts only the
units whose prediction it moves (found by setting it to its bounds), the rest are cached.

Each term (``roofline.calibration.terms``) is one bounded physical parameter. The rules:

- **Enough evidence.** A row *informs* a term when its prediction moves by more than
  ``INFORM`` (2 %) when the term moves by a quarter of its value (times: by at least 2 % of
  their range). Only families of at least ``MIN_ROWS`` rows *drive* a fit. A term is fitted
  only when at least ``MIN_ROWS`` (4) rows of at least ``MIN_SHAPES`` (2) distinct shapes of
  driving families inform it; otherwise it keeps its base value (``fit.terms`` says why).
- **Families weigh equally.** The loss is the sum over driving families of the family's
  median + p90 / 4 of ``|log(predicted / measured)|`` (a 40-row family counts as much as a
  4-row one), plus ``LAMBDA`` (0.4) times the term's distance from its base (packaged) value,
  ``|log(x / base)|`` capped at ``PRIOR_SPAN`` (0.1; times softened by 1 us so a base of 0 is
  allowed): a 10 % move must buy 4 points of one family's error, a larger one no more.
- **No family much worse.** A value is admissible only if no family it touches (driving or
  not) gets worse than before the fit by more than ``max(WORSE_ABS, WORSE_REL * error)``
  (1 point, or a tenth).
- **Held-out gain.** With two or more driving families, each in turn is held out: the value
  chosen on the others must improve it, by ``MIN_GAIN`` (0.02) summed over families (a term is
  physics shared by kernels, not a knob per family). With one, its rows are split alternately
  into ``FOLDS`` (2) folds, and every fold must gain. The loss on all rows must drop by
  ``MIN_GAIN`` too. So noise and the model mismatch of a few rows are not chased.

The search per term: a grid over the bounds plus multiplicative steps around the current value
(all folds are scored from the same predictions), then two finer grids around the best. Sweeps
repeat only for terms whose units another accepted move changed (at most ``sweeps``).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._params import attention, host
from .._params.achievable import compute_fractions
from .._params.documents import documents
from ..hardware import Hardware
from ..hardware.profile import Profile
from .batch import Unit, build_units
from .terms import FIT_AREAS, Term, group, terms_for

__all__ = ["fit_profile", "loss", "profile_of"]


def profile_of(base: Hardware, fitted: dict[str, Any] | None = None,
               fit: dict[str, Any] | None = None) -> Profile:
    """A Profile with ``base``'s Hardware fields (a Profile base keeps its own patch)."""
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Hardware)}
    patch = base.fitted.to_dict() if isinstance(base, Profile) else {}
    return Profile(**fields, fitted=fitted if fitted is not None else patch, fit=fit or {})


def current(hw: Hardware, path: tuple[str, ...]) -> float:
    """The value the default model uses for the term at ``path`` on ``hw``."""
    cal, areas = documents(hw)
    if path[0] == "compute_fraction":
        return float(compute_fractions(hw, cal)[path[1]])
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
    """Mean over families of the per-family error the fit uses (median + p90 / 4 of
    ``|log(predicted / measured)|``; ``errors``: signed relative errors per family, as
    :func:`family_errors` gives)."""
    if not errors:
        return 0.0
    return float(np.mean([_stat(np.abs(np.log1p(e))) for e in errors.values()]))


def _round(x: float) -> float:
    return float(f"{x:.4g}")


#: A row informs a term when its prediction moves by more than this when the term moves by a
#: quarter of its value (the elasticity is above ~0.1).
INFORM = 0.02
#: A term is fitted only when at least this many rows, of this many distinct shapes, inform it.
MIN_ROWS = 4
MIN_SHAPES = 2
#: Weight of a term's distance from its base value, ``|log(x / base)|``, in the loss (the sum
#: over families of the median |log error|).
LAMBDA = 0.4
#: The distance from the base is capped at this (|log| 0.1: about 10 %).
PRIOR_SPAN = 0.1
#: Times are compared on a log scale softened by this (a base of 0 s is allowed).
_TIME_SOFTENING_S = 1e-6
#: A move must lower both the loss and the held-out loss (summed over folds) by this much.
MIN_GAIN = 0.02
#: A value is not admissible when it makes a family worse than before the fit by more than
#: max(WORSE_ABS, WORSE_REL * its error before).
WORSE_ABS = 0.01
WORSE_REL = 0.1
#: Folds of the held-out check (rows of each family split alternately).
FOLDS = 2


def _stat(a: np.ndarray) -> float:
    """A family's error in the loss: median + p90 / 4 of its |log(predicted / measured)|
    (nan when empty); the median alone leaves coordinate descent stuck where two terms trade
    off (a latency and a rate), the tail term sees the rows the median ignores."""
    n = len(a)
    if n == 0:
        return float("nan")
    s = np.sort(a)
    q = 0.9 * (n - 1)
    i = int(q)
    p90 = s[i] + (q - i) * (s[min(i + 1, n - 1)] - s[i])  # np.percentile(a, 90)
    return float(0.5 * (s[(n - 1) // 2] + s[n // 2]) + 0.25 * p90)


def _distance(term: Term, x: float, base: float) -> float:
    """How far ``x`` is from the base value: |log(x / base)| (times: softened by 1 us), capped
    at ``PRIOR_SPAN``: the base is trusted to about that; a device whose data asks for more is
    another device, and a large move costs no more than a moderate one."""
    s = _TIME_SOFTENING_S if term.lo <= 0 else 0.0
    return min(abs(float(np.log((x + s) / (max(base, term.lo) + s)))), PRIOR_SPAN)


def _grid(x0: float, lo: float, hi: float) -> list[float]:
    """Candidate values: x0 first, a grid over the bounds, multiplicative steps around x0."""
    pts = [x0, *np.linspace(lo, hi, 17).tolist()]
    if x0 > 0:
        pts += [x0 * f for f in (0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 1.02, 1.05, 1.1, 1.25, 1.4,
                                 1.7)]
    else:
        pts += [lo + (hi - lo) * f for f in (0.005, 0.01, 0.02, 0.04)]
    out: list[float] = []
    for p in pts:
        p = _round(min(max(float(p), lo), hi))
        if p not in out:
            out.append(p)
    return out


@dataclasses.dataclass
class _Family:
    """A family's entries (unit index, entry index), fold of each of its values."""

    slots: list[tuple[int, int]]
    fold: np.ndarray


class _Fitter:
    """Predictions of every unit under the current patch; scores trial values of one term."""

    def __init__(self, base: Hardware, fitted: dict[str, Any], units: list[Unit]) -> None:
        self.base, self.fitted, self.units = base, fitted, units
        self.preds = [u.predict(profile_of(base, fitted)) for u in units]
        self.families: dict[str, _Family] = {}
        for i, u in enumerate(units):
            for j, e in enumerate(u.entries):
                self.families.setdefault(e.family, _Family([], np.zeros(0, int))).slots \
                    .append((i, j))
        for f in self.families.values():
            n = sum(len(self.units[i].entries[j].measured) for i, j in f.slots)
            f.fold = np.arange(n) % FOLDS
        self.reference = {f: m[0] for f, m in self.medians(self.preds).items()}
        self.evaluations = 0

    def hw(self, fitted: dict[str, Any]) -> Profile:
        return profile_of(self.base, fitted)

    def logerr(self, preds: list[list[np.ndarray]], fam: str) -> np.ndarray:
        f = self.families[fam]
        out: np.ndarray = np.abs(np.log(np.concatenate(
            [preds[i][j] / self.units[i].entries[j].measured for i, j in f.slots])))
        return out

    def relerr(self, preds: list[list[np.ndarray]], fam: str) -> np.ndarray:
        """|predicted / measured - 1| of the family's values."""
        out: np.ndarray = np.abs(np.expm1(np.log(np.concatenate(
            [preds[i][j] / self.units[i].entries[j].measured
             for i, j in self.families[fam].slots]))))
        return out

    def medians(self, preds: list[list[np.ndarray]], fams: Iterable[str] | None = None
                ) -> dict[str, np.ndarray]:
        """Per family: [median on all rows, median on each fold, median without each fold]
        of |log error| (nan where a fold is empty)."""
        out = {}
        for fam in (self.families if fams is None else fams):
            e, fold = self.logerr(preds, fam), self.families[fam].fold
            vals = [_stat(e)]
            for sel in ([fold == k for k in range(FOLDS)] + [fold != k for k in range(FOLDS)]):
                vals.append(_stat(e[sel]))
            out[fam] = np.array(vals)
        return out

    def trial(self, path: tuple[str, ...], x: float, touched: Sequence[int]
              ) -> list[list[np.ndarray]]:
        """Predictions with the term at ``path`` set to ``x`` (only ``touched`` re-predicted)."""
        self.evaluations += 1
        hw = self.hw(_set(self.fitted, path, x))
        preds = list(self.preds)
        for i in touched:
            preds[i] = self.units[i].predict(hw)
        return preds

    def probe(self, term: Term, x0: float
              ) -> tuple[list[int], dict[str, set[tuple[str, str]]]]:
        """Units the term moves at all (between its bounds), and per family the (row id,
        shape) it informs: whose prediction moves by more than ``INFORM`` when the term moves
        from ``x0`` by a quarter (times: by a quarter, at least 2 % of their range)."""
        lo = self.trial(term.path, term.lo, range(len(self.units)))
        hi = self.trial(term.path, term.hi, range(len(self.units)))
        if term.lo > 0:
            x1 = x0 * 1.25 if x0 * 1.25 <= term.hi else x0 / 1.25
        else:
            x1 = min(x0 + max(0.25 * x0, 0.02 * (term.hi - term.lo)), term.hi)
        touched = [i for i, u in enumerate(self.units)
                   if any(np.any(lo[i][j] != self.preds[i][j]) or np.any(hi[i][j] !=
                                                                          self.preds[i][j])
                          for j in range(len(u.entries)))]
        near = self.trial(term.path, x1, touched)
        informs: dict[str, set[tuple[str, str]]] = {}
        for i in touched:
            for j, e in enumerate(self.units[i].entries):
                big = np.abs(np.log(near[i][j] / self.preds[i][j])) > INFORM
                for k in np.flatnonzero(big):
                    informs.setdefault(e.family, set()).add((e.ids[k], e.shapes[k]))
        return touched, informs


def _admissible(fitter: _Fitter, meds: dict[str, np.ndarray], now: dict[str, np.ndarray]
                ) -> bool:
    for fam, m in meds.items():
        ref = fitter.reference[fam]
        if m[0] > max(ref + max(WORSE_ABS, WORSE_REL * ref), now[fam][0]) + 1e-12:
            return False
    return True


def _fit_term(fitter: _Fitter, term: Term, x0: float, xb: float, touched: list[int],
              fams: list[str], driving: list[str], informed: int) -> tuple[float, str]:
    """Best admissible value of ``term`` (x0 when no move passes the held-out check): the loss
    sums over the ``driving`` families (the first ``informed`` of them are informed by the
    term: the held-out check is over those); every family in ``fams`` is guarded."""
    def score(x: float) -> tuple[np.ndarray, float, bool]:
        """(per driving family: [all, in fold k..., without fold k...] medians, penalty,
        admissible)."""
        meds = fitter.medians(fitter.trial(term.path, x, touched), fams)
        m = np.array([meds[f] for f in driving]).reshape(len(driving), 1 + 2 * FOLDS)
        return m, LAMBDA * _distance(term, x, xb), _admissible(fitter, meds, now)

    now = fitter.medians(fitter.preds, fams)
    grid = _grid(x0, term.lo, term.hi)
    scored = [score(x) for x in grid]
    ok = [i for i, (_, _, adm) in enumerate(scored) if adm]
    loss = np.array([scored[i][0][:, 0].sum() + scored[i][1] for i in ok])
    best_x, best = grid[ok[int(np.argmin(loss))]], float(loss.min())
    if loss[0] - best < MIN_GAIN:  # ok[0] is x0 (admissible: nothing changed)
        return x0, "no gain"
    # Held out: with >= 2 informed driving families, each family in turn (the value chosen on
    # the others must improve it: a term is physics shared by kernels, not a per-family knob);
    # with one, its rows split alternately into folds.
    held = []
    by_family = informed >= 2
    if by_family:
        for f in range(informed):
            others = [scored[i][0][:, 0].sum() - scored[i][0][f, 0] + scored[i][1] for i in ok]
            k = ok[int(np.argmin(others))]
            held.append(scored[0][0][f, 0] - scored[k][0][f, 0])
    else:
        for f in range(FOLDS):
            without = [np.nansum(scored[i][0][:, 1 + FOLDS + f]) + scored[i][1] for i in ok]
            k = ok[int(np.argmin(without))]
            held.append(float(np.nansum(scored[0][0][:, 1 + f] - scored[k][0][:, 1 + f])))
    if sum(held) < MIN_GAIN or (not by_family and min(held) < -WORSE_ABS):
        return x0, "held-out gain " + " ".join(f"{h:+.3f}" for h in held) + \
            (" (per family)" if by_family else " (per fold)")
    steps = sorted({abs(x - best_x) for x in grid if x != best_x})
    step = steps[0] if steps else (term.hi - term.lo) / 16
    for _ in range(2):
        for x in np.linspace(max(term.lo, best_x - step), min(term.hi, best_x + step), 9):
            x = _round(float(x))
            m, pen, adm = score(x)
            if adm and m[:, 0].sum() + pen < best - 1e-9:
                best_x, best = x, float(m[:, 0].sum() + pen)
        step /= 4
    return best_x, ""


def _base(rows: list[dict[str, Any]], hardware: Any) -> Hardware:
    from ..hardware import hardware as lookup

    if hardware is not None:
        return lookup(hardware)
    names = sorted({str(r["hardware"]) for r in rows if r.get("hardware")})
    if len(names) > 1:
        raise ValueError(f"calibrate: the measurements are of several accelerators {names}; "
                         "pass hardware= (the base the profile is fitted for) or split the file")
    if names and rows and all(str(r.get("family", "")).startswith("cpu_") for r in rows):
        from ..hardware import UnknownNameError

        try:
            return lookup(names[0])
        except UnknownNameError:
            # CPU rows (roofline bench --device cpu) name a processor the database does not
            # have: the base is this machine's measured peaks (the rows are assumed to come
            # from this machine, as bench writes them), which the fit then refines.
            from .measure import measure

            return measure(device="cpu")
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
                terms: Iterable[str] | None = None, sweeps: int = 3,
                progress: Callable[[str], None] | None = None,
                min_rows: int = MIN_ROWS, min_shapes: int = MIN_SHAPES) -> Profile:
    """Fit the default model's terms for one accelerator to measured rows; return the Profile.

    See ``roofline.calibrate`` (the public entry) for the parameters and the module
    docstring for the rules; ``min_rows`` / ``min_shapes``: the evidence a term needs (the
    one-row-per-term measurements of ``roofline calibrate`` without ``-i`` pass 1 / 1).
    """
    from ..validation import read_measurements

    fn = "calibrate"
    areas = FIT_AREAS if terms is None else tuple(terms)
    unknown_areas = [a for a in areas if a not in FIT_AREAS]
    if isinstance(terms, str) or unknown_areas:
        raise ValueError(f"{fn}: terms must be a list of {FIT_AREAS}, got {terms!r}")
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
    units = build_units(grouped, start, failures)
    for _, msg in failures:
        unused.setdefault(msg.split(":")[0], "prediction failed: " + msg.split(": ", 1)[-1])
    candidates = terms_for({u.group for u in units}, areas)
    fitted = start.fitted.to_dict()
    fitter = _Fitter(base, fitted, units)
    before = list(fitter.preds)
    changes: dict[str, dict[str, Any]] = {}
    todo: list[tuple[Term, list[int], list[str], list[str]]] = []
    held_out: dict[str, int] = {}  # per term: how many driving families it informs
    row_family = {str(r["id"]): str(r["family"]) for r in rows}
    informed_by_fitted: set[str] = set()
    informed_by_some: set[str] = set()
    # only families with enough rows drive a fit; smaller ones are guarded (never much worse)
    drivers = {f for f in fitter.families if len(fitter.logerr(fitter.preds, f)) >= min_rows}
    for term in candidates:
        x0 = min(max(current(start, term.path), term.lo), term.hi)
        touched, informs = fitter.probe(term, x0)
        pairs: set[tuple[str, str]] = set()
        for f, v in informs.items():
            if f in drivers:
                pairs |= v
        n_rows, n_shapes = len({i for i, _ in pairs}), len({s for _, s in pairs})
        info: dict[str, Any] = {"base": _round(current(start, term.path)), "rows": n_rows,
                                "shapes": n_shapes}
        changes[term.label] = info
        informed_by_fitted_now = {row_family[i] for i, _ in pairs}
        informed_by_some |= {row_family[i] for v in informs.values() for i, _ in v}
        if n_rows < min_rows or n_shapes < min_shapes:
            info["kept"] = f"too few rows (needs {min_rows}, {min_shapes} shapes)"
            continue
        informed_by_fitted |= informed_by_fitted_now
        moved = sorted({fitter.units[i].entries[j].family for i in touched
                        for j in range(len(fitter.units[i].entries))})
        # driving families first in the order the held-out check uses: informed ones first
        informed = [f for f in moved if f in drivers and f in informs]
        todo.append((term, touched, moved,
                     informed + [f for f in moved if f in drivers and f not in informs]))
        held_out[term.label] = len(informed)
    for u in units:
        for r in u.rows:
            fam = str(r["family"])
            if fam in informed_by_fitted or fam in unused:
                continue
            unused[fam] = (f"fewer than {min_rows} rows (or shapes) for the terms that act on "
                           "it: validated, and no fitted term may make it much worse"
                           if fam in informed_by_some else
                           "no fitted term acts on it (validated only)")
    if not todo:
        reasons = "; ".join(f"{k}: {v}" for k, v in sorted(unused.items()))
        raise ValueError(f"{fn}: no usable rows in {where} for terms {list(areas)} ({reasons})")
    dirty = {t.label for t, _, _, _ in todo}
    for sweep in range(sweeps):
        if not dirty:
            break
        for term, touched, fams, driving in todo:
            if term.label not in dirty:
                continue
            dirty.discard(term.label)
            x0 = min(max(current(fitter.hw(fitter.fitted), term.path), term.lo), term.hi)
            x, why = _fit_term(fitter, term, x0, changes[term.label]["base"], touched, fams,
                               driving, held_out[term.label])
            if x != x0:
                fitter.fitted = _set(fitter.fitted, term.path, x)
                fitter.preds = fitter.trial(term.path, x, touched)
                dirty |= {t.label for t, tu, _, _ in todo
                          if t is not term and set(tu) & set(touched)}
                changes[term.label].pop("kept", None)
            elif why and sweep == 0:
                changes[term.label]["kept"] = why
            if progress is not None:
                progress(f"sweep {sweep + 1}: {term.label} = {x:.4g}")
    fitted = fitter.fitted
    final = profile_of(base, fitted)
    for term, _, _, _ in todo:
        changes[term.label]["fitted"] = _round(current(final, term.path))
    for info in changes.values():
        info.setdefault("fitted", info["base"])
    families = {fam: {"rows": int(len(fitter.logerr(before, fam))),
                      "before": round(float(np.median(fitter.relerr(before, fam))), 4),
                      "after": round(float(np.median(fitter.relerr(fitter.preds, fam))), 4)}
                for fam in sorted(fitter.families)}
    meta = {
        "base": base.base if isinstance(base, Profile) else base.name,
        **provenance(rows),
        "measurements": where,
        "rows": sum(len(u.rows) for u in units),
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rule": {"min_rows": min_rows, "min_shapes": min_shapes, "inform": INFORM},
        "terms": changes,
        "families": families,
        "unused": dict(sorted(unused.items())),
    }
    return profile_of(base, fitted, meta)
