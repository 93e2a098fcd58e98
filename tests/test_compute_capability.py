"""The CUDA compute capability column (``cc`` in data/hardware.csv, ``Hardware.compute_capability``)
and the rules that read it: TN-only fp8 GEMMs, Transformer Engine's MXFP8, the architecture and
Blackwell Ultra's SFUs (hardware-notes §54).

Expected values are NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus) and TE 2.9's
source (``nvte_is_non_tn_fp8_gemm_supported``: any layout on sm100-sm119 and sm130+;
``check_mxfp8_support``: 10.0+, not 12.0+).
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

import roofline as rl
from roofline._params.architecture import architecture, sfu_doubled
from roofline.float8.recipes import check_te_support, core_recipe
from roofline.hardware import Hardware

ROOT = Path(__file__).resolve().parents[1]
CSV_PATH = ROOT / "data" / "hardware.csv"

#: NVIDIA's table (and, for H800 / H20 / A10G / B100, device prints and the die).
EXPECTED = {
    "V100 SXM2 32GB": (7, 0), "A100 SXM 80GB": (8, 0), "A10G": (8, 6), "RTX 3090": (8, 6),
    "L4": (8, 9), "L40S": (8, 9), "RTX 4090": (8, 9), "H100 SXM": (9, 0), "H800": (9, 0),
    "H20": (9, 0), "GH200 144GB": (9, 0), "B100": (10, 0), "B200": (10, 0), "GB200": (10, 0),
    "B300": (10, 3), "GB300": (10, 3), "RTX 5090": (12, 0), "RTX PRO 6000 Server": (12, 0),
}


def _build_module():
    spec = importlib.util.spec_from_file_location("build_hardware_json",
                                                  ROOT / "scripts" / "build_hardware_json.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows() -> list[dict[str, str]]:
    with CSV_PATH.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------- the column


def test_every_nvidia_part_has_one_and_no_other_vendor_does() -> None:
    for name in rl.list_hardware():
        hw = rl.hardware(name)
        if hw.vendor == "NVIDIA":
            assert hw.compute_capability is not None, name
        else:
            assert hw.compute_capability is None, name
    for row in _rows():
        assert bool(row["cc"].strip()) == (row["vendor"] == "NVIDIA"), row["name"]
        if row["cc"].strip():
            assert "cc:" in row["sources"], row["name"]  # its source is recorded


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_values(name: str) -> None:
    assert rl.hardware(name).compute_capability == EXPECTED[name]


def test_json_and_dict_forms() -> None:
    doc = json.loads((ROOT / "python" / "roofline" / "data" / "hardware.json").read_text())
    entry = next(e for e in doc["entries"] if e["name"] == "GB300")
    assert entry["compute_capability"] == [10, 3]
    hw = rl.hardware("GB300")
    d = hw.to_dict()
    assert d["compute_capability"] == [10, 3]
    assert Hardware.from_dict(d) == hw and Hardware.from_dict(d).compute_capability == (10, 3)
    assert rl.hardware("MI300X").to_dict()["compute_capability"] is None
    assert hw.to_pandas()["compute_capability"].iloc[0] == "10.3"


@pytest.mark.parametrize(("cell", "vendor", "match"), [
    ("9", "NVIDIA", "major.minor"), ("9.0.1", "NVIDIA", "major.minor"),
    ("sm90", "NVIDIA", "major.minor"), ("0.9", "NVIDIA", "major.minor"),
    ("", "NVIDIA", "required"), ("9.4", "AMD", "must be empty"),
])
def test_build_script_rejects_bad_cells_naming_the_column(cell: str, vendor: str,
                                                          match: str) -> None:
    build = _build_module()
    row = dict(_rows()[0], cc=cell, vendor=vendor)
    with pytest.raises(ValueError, match=rf"column cc.*{match}"):
        build.convert_row(row)


def test_build_script_converts_a_cell() -> None:
    build = _build_module()
    row = dict(_rows()[0], cc="10.3")
    assert build.convert_row(row)["compute_capability"] == [10, 3]


@pytest.mark.parametrize(("value", "error"), [
    ("9.0", TypeError), (9.0, TypeError), ((9,), TypeError), ((9, 0, 1), TypeError),
    ((9.0, 0), TypeError), ((True, 0), TypeError), ((0, 0), ValueError), ((9, -1), ValueError),
])
def test_hardware_rejects_bad_values(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="compute_capability"):
        rl.hardware("H100 SXM").replace(compute_capability=value)


def test_hardware_rejects_one_on_another_vendor() -> None:
    with pytest.raises(ValueError, match="compute_capability.*NVIDIA.*'AMD'"):
        rl.hardware("MI300X").replace(compute_capability=(9, 4))
    assert Hardware(name="x", bf16_flops_per_s=1e15, mem_bytes_per_s=1e12,
                    compute_capability=[9, 0]).compute_capability == (9, 0)  # list -> tuple


# -------------------------------------------------------------------------- the rules


def test_tn_only_reads_the_capability_not_the_peaks() -> None:
    h100 = rl.hardware("H100 SXM")
    # an fp8 peak and no fp4 peak, but compute capability 10.0: any-layout fp8 GEMMs
    assert h100.fp4_flops_per_s is None
    assert core_recipe("tensorwise_te", h100.replace(compute_capability=(10, 0))).name == \
        "tensorwise_te"
    assert core_recipe("tensorwise_te", h100).name == "tensorwise_te_sm90"
    # Ada (8.9) is TN-only; so is sm120 (TE 2.9: any layout only on sm100-sm119), fp4 peak or not
    for name in ("L40S", "L4", "RTX 4090", "RTX 5090", "RTX PRO 6000 Server"):
        assert core_recipe("tensorwise_te", rl.hardware(name)).name == "tensorwise_te_sm90", name
    for name in ("B200", "GB200", "B300", "GB300"):
        assert core_recipe("tensorwise_te", rl.hardware(name)).name == "tensorwise_te", name
    # an Ada part's rule does not depend on its name
    ada = rl.hardware("L40S").replace(name="some card", full_name="")
    assert core_recipe("tensorwise_te", ada).name == "tensorwise_te_sm90"
    # no capability (not NVIDIA, or a Hardware built without one): the peaks decide, as before
    bare = h100.replace(compute_capability=None)
    assert core_recipe("tensorwise_te", bare).name == "tensorwise_te_sm90"
    assert core_recipe("tensorwise_te", bare.replace(fp4_flops_per_s=1e15)).name == \
        "tensorwise_te"


def test_te_mxfp8_runs_on_10x_only() -> None:
    for name in ("B200", "GB200", "B300", "GB300"):
        check_te_support("f", "mxfp8_te", rl.hardware(name))
    check_te_support("f", "mxfp8_te", rl.hardware("H100 SXM").replace(compute_capability=(10, 0)))
    for name in ("H100 SXM", "L40S", "A100 SXM 80GB", "RTX 5090", "RTX PRO 6000 Server"):
        with pytest.raises(ValueError, match=r"recipe.*'mxfp8_te'.*compute capability 10\.0"):
            check_te_support("f", "mxfp8_te", rl.hardware(name))
    # the RTX 5090 has an fp4 peak (the old proxy let it through); TE 2.9 refuses 12.0+
    assert rl.hardware("RTX 5090").fp4_flops_per_s
    with pytest.raises(ValueError, match=r"compute capability 12\.0"):
        check_te_support("f", "mxfp8_te", rl.hardware("RTX 5090"))


def test_architecture_reads_the_capability() -> None:
    expected = {"V100 SXM2 32GB": "volta", "A10G": "ampere", "L4": "ada", "H20": "hopper",
                "GH200 96GB": "hopper", "B100": "blackwell", "GB300": "blackwell",
                "RTX PRO 6000 Workstation": "blackwell_consumer", "MI355X": "rocm",
                "TPU v5p": "other"}
    for name, arch in expected.items():
        assert architecture(rl.hardware(name)) == arch, name
    # a renamed part keeps its architecture; without a capability the name decides
    renamed = rl.hardware("B200").replace(name="my gpu", full_name="")
    assert architecture(renamed) == "blackwell"
    assert architecture(renamed.replace(compute_capability=None)) == "ampere"
    assert architecture(rl.hardware("A100 SXM 80GB").replace(compute_capability=(8, 9))) == "ada"


def test_blackwell_ultra_sfus_are_cc_10_3() -> None:
    assert sfu_doubled(rl.hardware("B300")) and sfu_doubled(rl.hardware("GB300"))
    assert not sfu_doubled(rl.hardware("B200")) and not sfu_doubled(rl.hardware("GB200"))
    renamed = rl.hardware("GB300").replace(name="ultra", full_name="")
    assert sfu_doubled(renamed)
    assert not sfu_doubled(renamed.replace(compute_capability=(10, 0)))
    # by name where the capability is unknown
    assert sfu_doubled(rl.hardware("B200").replace(name="B300", compute_capability=None))


def test_the_proxy_and_the_capability_agree_on_every_part_but_sm120() -> None:
    """Where the old peak / name proxies were right, the capability gives the same answer; the
    three sm120 parts are the only ones that move (TN-only; MXFP8 refused)."""
    moved = set()
    for name in rl.list_hardware():
        hw = rl.hardware(name)
        bare = hw.replace(compute_capability=None)
        assert architecture(hw) == architecture(bare), name
        assert sfu_doubled(hw) == sfu_doubled(bare), name
        if core_recipe("tensorwise_te", hw).name != core_recipe("tensorwise_te", bare).name:
            moved.add(name)
    assert moved == {"RTX 5090", "RTX PRO 6000 Server", "RTX PRO 6000 Workstation"}
