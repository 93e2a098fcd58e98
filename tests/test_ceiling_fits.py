"""The packaged GEMM ceilings are what their fitting procedures give from the committed data.

``calibration.json``'s ``achievable_compute_fraction`` / ``fallback_compute_fraction`` come
from ``benchmarks/calibrate.py`` steps 1-2 (``achievable``, ``fallback_fractions``) at the
packaged parameters, and ``terms/gemm.json``'s ``compute_scale`` / ``fallback_compute_scale``
from ``benchmarks/fit_gemm.py``'s ``compute_scales`` at the packaged terms, both on
``data/measurements/gemm_max_achievable.csv`` and the hardware of ``data/hardware.csv``.
A change to the hardware fields, the peaks or the GEMM model that is not followed by a refit
fails here (GB200's entry stayed as fitted with no SM count for days after it gained its 152
SMs; hardware-notes §42).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _benchmarks import load_benchmark

import roofline as rl
from roofline import _core

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"
PACKAGED = ROOT / "python" / "roofline" / "data"


def _json(name: str) -> dict[str, Any]:
    return json.loads((PACKAGED / name).read_text())


def _plain(d: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {k: {c: float(x) for c, x in v.items()} for k, v in d.items()}


@pytest.fixture(scope="module")
def calibrate() -> Any:
    return load_benchmark("calibrate")


@pytest.fixture(scope="module")
def fit_gemm() -> Any:
    return load_benchmark("fit_gemm")


def test_achievable_fractions_are_calibrate_py_s(calibrate: Any) -> None:
    doc = _json("calibration.json")
    fitted = _plain(calibrate.achievable(DATA, doc["params"]))
    assert fitted == doc["achievable_compute_fraction"]
    assert _plain(calibrate.fallback_fractions(fitted)) == doc["fallback_compute_fraction"]


def test_the_whole_calibration_json_is_calibrate_py_s(calibrate: Any) -> None:
    # every step of calibrate.fit (streaming, GEMM globals, fractions, attention, decode;
    # well under a second): the packaged document, key by key
    doc = _json("calibration.json")
    fitted = json.loads(json.dumps(calibrate.fit(DATA)))
    assert set(fitted) == set(doc)
    for key in doc:
        assert fitted[key] == doc[key], key


def test_compute_scales_are_fit_gemm_py_s(fit_gemm: Any) -> None:
    doc = _json("terms/gemm.json")
    own, fallback = fit_gemm.compute_scales(fit_gemm.published_rows(DATA), doc["terms"])
    assert _plain(own) == doc["compute_scale"]
    assert _plain(fallback) == doc["fallback_compute_scale"]


@pytest.mark.parametrize("name", ["GB200", "B200", "B300"])
def test_blackwell_ceilings_named(name: str, calibrate: Any, fit_gemm: Any) -> None:
    # the entries the drift was found in, spelled out (the tests above cover every accelerator)
    cal, gemm = _json("calibration.json"), _json("terms/gemm.json")
    assert calibrate.achievable(DATA, cal["params"])[name] == \
        cal["achievable_compute_fraction"][name]
    own, fallback = fit_gemm.compute_scales(fit_gemm.published_rows(DATA), gemm["terms"])
    assert own[name] == gemm["compute_scale"][name]
    assert fallback["NVIDIA"] == gemm["fallback_compute_scale"]["NVIDIA"]


def test_gb200_fraction_is_mamf_over_peak_over_the_models_own_efficiency(
        calibrate: Any) -> None:
    # stas00's MAMF best shapes on GB200: bf16 4096 x 9728 x 2048 at 1822 TFLOP/s, fp8
    # 19456 x 5120 x 1536 at 3615.6 (of 2500 / 5000 dense). Whole waves of 152 SMs (1216 /
    # 3040 tiles of 128 x 256), but the model at fraction 1 still pays the 3 us GEMM latency
    # and the operand reads' p-norm overlap there: 2 * 4096 * 9728 * 2048 / 2.5e15 = 65.3 us
    # of math + 3 us = 68.3 us -> 0.956 of peak before the overlap; the fraction is
    # (1822 / 2500) / that efficiency, above MAMF / peak (0.7288).
    cal = _json("calibration.json")
    frac = cal["achievable_compute_fraction"]["GB200"]
    p = cal["params"]
    hw = rl.hardware("GB200")
    for cls, (m, n, k), meas, peak in (("bf16", (4096, 9728, 2048), 1822.0e12, 2500e12),
                                       ("fp8", (19456, 5120, 1536), 3615.6e12, 5000e12)):
        dt = _core.DType.fp8_e4m3 if cls == "fp8" else _core.DType.bf16
        t1 = calibrate.gemm_times(hw, {}, p, np.array([float(m)]), np.array([float(k)]),
                                  np.array([float(n)]), dt, dt, dt)[0]
        eff = 2.0 * m * n * k / t1 / peak
        bound = 2.0 * m * n * k / peak + p["gemm_latency_s"]
        assert eff <= 2.0 * m * n * k / bound / peak + 1e-12
        assert 0.94 < eff < 0.96
        assert frac[cls] == pytest.approx(meas / peak / eff, abs=5e-5)
        assert frac[cls] > meas / peak + 0.03


def test_without_an_sm_count_the_procedure_gives_the_old_gb200_values(
        calibrate: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the stale 0.7288 / 0.7231 came from: fitted while GB200 had no SM count (before
    # 9a1b40e), when the model had no tile, wave or latency terms there and its efficiency
    # at fraction 1 was exactly 1, so fraction = MAMF / peak.
    real = rl.hardware

    def no_sms(name: str) -> rl.Hardware:
        hw = real(name)
        return dataclasses.replace(hw, sms=None) if name == "GB200" else hw

    monkeypatch.setattr(calibrate.rl, "hardware", no_sms)
    old = calibrate.achievable(DATA, _json("calibration.json")["params"])["GB200"]
    assert old == {"bf16": 0.7288, "fp8": 0.7231}
