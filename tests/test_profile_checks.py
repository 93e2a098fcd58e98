"""Calibration profiles are checked at load (issue #25, section 2): every bad patch raises a
clear error naming ``fitted.<path>`` and the value, hostile files raise ValueError, and no
accepted profile prices a kernel below the datasheet roofline."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline._params import packaged
from roofline.hardware.profile import Profile, load_profile

H100 = "H100 SXM"


def _fields(name: str = H100) -> dict:
    hw = rl.hardware(name)
    return {f.name: getattr(hw, f.name) for f in dataclasses.fields(type(hw))}


def _write(tmp_path, fitted, name="p.json"):
    d = rl.hardware(H100).to_dict()
    d["fitted"] = fitted
    path = tmp_path / name
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


@pytest.mark.parametrize("fitted,exc,words", [
    ({"compute_fraction": {"bf16": -1}}, ValueError, ["fitted.compute_fraction.bf16", "-1"]),
    ({"compute_fraction": {"bf16": 0}}, ValueError, ["fitted.compute_fraction.bf16", "0"]),
    ({"compute_fraction": {"bf16": 50}}, ValueError, ["fitted.compute_fraction.bf16", "50"]),
    ({"compute_fraction": {"bf16": 1e30}}, ValueError, ["fitted.compute_fraction.bf16", "1e+30"]),
    ({"compute_fraction": {"bf17": 0.5}}, ValueError, ["fitted.compute_fraction.bf17"]),
    ({"compute_fraction": 0.5}, TypeError, ["fitted.compute_fraction", "0.5"]),
    ({"params": {"memory_fraction": 0}}, ValueError, ["fitted.params.memory_fraction", "0"]),
    ({"params": {"memory_latency_s": -1}}, ValueError, ["fitted.params.memory_latency_s"]),
    ({"params": {"overlap_p": 1e-9}}, ValueError, ["fitted.params.overlap_p"]),
    ({"params": {"memory_fraction": "0.9"}}, TypeError, ["fitted.params.memory_fraction"]),
    ({"params": {"memory_fraction": True}}, TypeError, ["fitted.params.memory_fraction"]),
    ({"params": {"no_such_term": 1.0}}, ValueError, ["unknown key fitted.params.no_such_term"]),
    ({"gemm": 5}, TypeError, ["fitted.gemm", "5"]),
    ({"gemm": {"terms": {"latency_s": math.nan}}}, ValueError, ["fitted.gemm.terms.latency_s"]),
    ({"gemm": {"terms": {"latency_s": None}}}, TypeError, ["fitted.gemm.terms.latency_s"]),
    ({"gemm": {"terms": {"latncy_s": 1e-6}}}, ValueError, ["unknown key fitted.gemm.terms"]),
    ({"gemm": {"compute_scale": {H100: {"bf16": 50}}}}, ValueError,
     ["fitted.gemm.compute_scale.H100 SXM.bf16"]),
    ({"attention": {"flash_fraction": 2.0}}, ValueError, ["fitted.attention.flash_fraction"]),
    ({"host": {"terms": {"eager_launch_s": -1e-6}}}, ValueError,
     ["fitted.host.terms.eager_launch_s"]),
    ({"cast": {"universal": {"amax_fraction": [0.5]}}}, TypeError,
     ["fitted.cast.universal.amax_fraction"]),
    ({"nope": {}}, ValueError, ["nope"]),
])
def test_bad_patches_raise_naming_path_and_value(tmp_path, fitted, exc, words):
    with pytest.raises(exc) as info:
        Profile(**_fields(), fitted=fitted)
    for w in words:
        assert w in str(info.value), str(info.value)
    # the same at load, from a file (TypeError from the patch becomes the file's ValueError)
    with pytest.raises((TypeError, ValueError)) as info2:
        load_profile(_write(tmp_path, fitted))
    for w in words:
        assert w in str(info2.value)
    with pytest.raises((TypeError, ValueError)):
        rl.Hardware.from_file(_write(tmp_path, fitted, "h.json"))


def test_good_patches_load(tmp_path):
    fitted = {"compute_fraction": {"bf16": 0.8, "fp8": 0.7},
              "params": {"memory_fraction": 0.9, "memory_latency_s": 5e-6},
              "gemm": {"terms": {"latency_s": 4e-6, "compute_scale_16": 1.0},
                       "compute_scale": {"My GPU": {"bf16": 1.01}},
                       "vendor_overrides": {"NVIDIA": {"latency_s": 3e-6}}},
              "attention": {"flash_fraction": 0.6},
              "host": {"terms": {"eager_launch_s": 1.2e-5},
                       "per_hardware": {H100: {"kernel_gap_s": 1e-6}}},
              "cast": {"per_architecture": {"hopper": {"amax_fraction": 0.5}}}}
    prof = load_profile(_write(tmp_path, fitted))
    assert prof.fitted.to_dict() == fitted
    assert rl.gemm(4096, 4096, 4096, hardware=prof).time_s > 0


def test_hostile_files(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        load_profile(deep)
    nested = tmp_path / "nested.json"
    d = rl.hardware(H100).to_dict()
    inner: dict = {}
    d["fitted"] = {"params": inner}
    for _ in range(40):
        inner["x"] = {}
        inner = inner["x"]
    nested.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="nests deeper"):
        load_profile(nested)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b'{"name": "\xff\xfe"}')
    with pytest.raises(ValueError, match="not UTF-8"):
        load_profile(binary)
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(rl.hardware(H100).to_dict())[:-1]
                   + ', "fitted": {"params": {"memory_fraction": NaN}}}')
    with pytest.raises(ValueError, match="memory_fraction"):
        load_profile(nan)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.seek(17 * 2**20)
        f.write(b" ")
    with pytest.raises(ValueError, match="more than a profile"):
        load_profile(huge)
    longint = tmp_path / "int.json"
    longint.write_text('{"fitted": {"params": {"overlap_p": ' + "9" * 5000 + "}}}")
    with pytest.raises(ValueError):
        load_profile(longint)


def _leaves(doc, path=()):
    for k, v in doc.items():
        if isinstance(v, dict):
            yield from _leaves(v, (*path, k))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            yield (*path, k)


_PATHS = ([("compute_fraction", c) for c in ("bf16", "fp8")]
          + [("params", *p) for p in _leaves(packaged.calibration()["params"])]
          + [(a, *p) for a in packaged.TERM_AREAS for p in _leaves(packaged.terms(a))
             if p[0] not in ("fit", "fit_median_error", "measurement", "source")]
          + [("attention", "flash_fraction")])




@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_PATHS),
                          st.one_of(st.floats(allow_nan=False, allow_infinity=False,
                                              min_value=-1e30, max_value=1e30),
                                    st.sampled_from([0.0, 1e-12, 0.5, 0.99, 1.0, 1.5, 2.0,
                                                     50.0]))),
                min_size=1, max_size=6),
       st.sampled_from([H100, "MI300X", "B200"]))
def test_accepted_profiles_never_beat_the_datasheet(terms, name):
    """Random patches: each is rejected with a clear error, or prices GEMMs, streaming and
    attention at no less than the peak preset (the datasheet roofline)."""
    fitted: dict = {}
    for path, v in terms:
        node = fitted
        for k in path[:-1]:
            node = node.setdefault(k, {}) if isinstance(node.get(k, {}), dict) else {}
        node[path[-1]] = v
    try:
        prof = Profile(**_fields(name), fitted=fitted)
    except (TypeError, ValueError) as exc:
        assert "fitted." in str(exc)
        return
    for fn, args in ((rl.gemm, (4096, 4096, 4096)), (rl.gemm, (64, 8192, 8192)),
                     (rl.elementwise, (2**26, 1, 1)),
                     (rl.attention, (8, 32, 4096, 4096, 128))):
        t = fn(*args, hardware=prof).time_s
        floor = fn(*args, hardware=prof, efficiency="peak").time_s
        assert math.isfinite(t) and t >= floor * (1 - 1e-12), (fn.__name__, args, fitted)
