"""Calibrate the model to a device: fit a profile to measurements, or measure peaks with torch.

>>> import roofline as rl
>>> prof = rl.calibrate(measurements="m.jsonl", hardware="H100 SXM", path="h100.json")
>>> rl.gemm(8192, 8192, 8192, hardware=prof)        # the default model with the fitted terms
>>> rl.hardware(profile="h100.json")                 # loads it back (or Hardware.from_file)
>>> hw = rl.calibrate(device="cuda", path="my_gpu.json")     # measured peaks, no fit
>>> rl.gemm(8192, 8192, 8192, hardware=hw, efficiency="peak")  # the measured roofline

``rl.calibrate`` (``roofline/__init__.py``) imports :func:`calibrate` from here on first use;
torch is imported only when it measures (:mod:`.measure`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from ..hardware import Hardware
from ..hardware.cache import profile_path
from ..hardware.profile import save_profile
from .fit import fit_profile
from .measure import measure

__all__ = ["calibrate"]


def calibrate(
    device: str | None = None,
    *,
    measurements: str | os.PathLike[str] | Iterable[dict[str, Any]] | None = None,
    hardware: Any = None,
    terms: Sequence[str] | None = None,
    save: bool = False,
    name: str | None = None,
    dtypes: Sequence[str] | None = None,
    sizes: Sequence[int] | None = None,
    copy_bytes: int | None = None,
    repeats: int = 3,
    min_time_s: float = 0.02,
    path: str | os.PathLike[str] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> Hardware:
    """Fit the default model to measurements, or measure achievable peaks on this machine.

    With ``measurements``: fit the default model's terms for one accelerator and return a
    calibrated ``roofline.calibration.Profile`` (a Hardware every op accepts; under
    ``efficiency="default"`` it uses the fitted terms). Without: measure matmul rates, copy
    bandwidth and launch latency with torch and return them as a plain Hardware.

    Parameters
    ----------
    device : {"cuda", "cpu"}, optional
        Where to measure (``"cuda"``, the default, is the current GPU; ROCm builds also answer
        to it). Not used with ``measurements``.
    measurements : path or iterable of dict, optional
        A JSON-lines file in the shared measurement schema (``roofline bench`` writes them), or
        its rows. Rows of ops the model covers fit the terms they decide: achievable fraction
        per peak class (GEMM rows per dtype), GEMM latency / memory fraction / grouped rate,
        streaming bandwidth and latency (elementwise and row ops), row-op re-read terms,
        attention rate, call time and backward / decode ratios per SDPA backend, float8 cast
        bandwidth fractions, launch overheads. A term is fitted only when at least 4 rows of 2
        distinct shapes (in families of at least 4 rows) inform it and the move improves
        held-out families (see ``roofline.calibration.fit``); other terms keep their base
        values.
    hardware : Hardware, str or Profile, optional
        The base the profile is fitted for (peaks, bandwidth, SMs): default the rows'
        ``hardware`` field (all rows must agree), else ``rl.hardware()``. A Profile as base is
        refined (its fitted terms are the starting point).
    terms : sequence of str, optional
        Restrict the fit to these areas of ``roofline.calibration.terms.FIT_AREAS``
        (``streaming``, ``compute``, ``gemm``, ``row_ops``, ``attention``, ``cast``, ``host``).
    save : bool
        Also save the profile in the user's cache for the device and software the rows name
        (``rl.hardware()`` then returns it on that machine; see
        ``roofline.hardware.cache``).
    name : str, optional
        Name of the returned Hardware; default ``"calibrated <device name>"``.
    dtypes : sequence of str, optional
        torch dtype names to time matmuls in (default: float32, bfloat16 on the CPU; also
        float16 and float8_e4m3fn via ``torch._scaled_mm`` on a GPU). Unsupported ones are
        skipped and noted.
    sizes : sequence of int, optional
        Square matmul sizes (default 256, 512, 1024 on the CPU; 2048, 4096, 8192 on a GPU);
        the best rate over the sizes is the achievable peak.
    copy_bytes : int, optional
        Size of the tensor copied to measure bandwidth (default 64 MiB on the CPU, 1 GiB on a
        GPU; make it larger than the last-level cache).
    repeats : int
        Best of this many timed repeats per measurement.
    min_time_s : float
        Each repeat runs the op enough times to last about this long.
    path : str or PathLike, optional
        Also write the result as JSON (``Hardware.from_file(path)`` loads it back).
    rows : list, optional
        When measuring, receives the measurements as rows of the shared schema: one row per
        term (best matmul per dtype, one copy, one launch). ``roofline calibrate`` (no ``-i``)
        fits a profile on them; ``calibrate(measurements=rows)`` needs at least 4 rows of 2
        shapes per term, so use ``roofline.calibration.fit.fit_profile(rows, hw, min_rows=1,
        min_shapes=1)`` for these.

    Returns
    -------
    Hardware
        With ``measurements``: the fitted Profile (``profile.fit`` holds each term's base and
        fitted value, each family's median error before and after, and the families no term
        uses, with the reason). Otherwise measured achievable peaks per class (``bf16``
        holds the better of bfloat16 and float16), ``mem_bytes_per_s`` from the copy, the
        device's SM count on a GPU, and in ``notes`` every measurement, the launch latency
        and what was skipped.

    Raises
    ------
    ValueError
        An unknown device, an unknown dtype name, a non-positive size or count; measurements
        that are malformed (file and line named), of several accelerators without
        ``hardware=``, or with no row any term can use (the families and reasons named).
    RuntimeError
        ``device="cuda"`` without a GPU, or torch is not installed.

    Notes
    -----
    matmul rate = 2·n³ / best time; bandwidth = 2·copy_bytes / best time of ``dst.copy_(src)``
    (read + write); launch latency = best time of ``x.add_(1)`` on a 1-element tensor
    (synchronised; includes the synchronisation on a GPU). The peaks are *achieved* values:
    use ``efficiency="peak"`` to get the measured roofline, since the default model applies
    its own achievable fractions on top of a datasheet-like peak.
    """
    if measurements is not None:
        return _fit(measurements, hardware, terms, save, path)
    return measure(device, name=name, dtypes=dtypes, sizes=sizes, copy_bytes=copy_bytes,
                   repeats=repeats, min_time_s=min_time_s, path=path, rows=rows)


def _fit(measurements: Any, hardware: Any, terms: Sequence[str] | None, save: bool,
         path: str | os.PathLike[str] | None) -> Hardware:
    """The measurement branch of :func:`calibrate`: fit, then write / save as asked."""
    if not isinstance(save, bool):
        raise TypeError(f"calibrate: save must be a bool, got {save!r}")
    prof = fit_profile(measurements, hardware, terms=terms)
    if path is not None:
        save_profile(prof, path)
    if save:
        meta = prof.fit.to_dict()
        if not meta.get("device"):
            raise ValueError("calibrate: save=True needs the device the rows were measured on "
                             "(a 'device' field or 'measured on <device>, torch <v>' source)")
        save_profile(prof, profile_path(meta["device"], meta.get("software", {})))
    return prof
