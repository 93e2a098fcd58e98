"""Tests for the hardware database content (data/hardware.json, data/torchao_hardware.json).

The CSV checks compare against data/hardware.csv (the repository's copy of the shared source table).
Sanity checks (dense peaks, plausible ranges) need only the JSON.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _hardware_package import PACKAGE, hardware_package

ROOT = Path(__file__).resolve().parents[1]
rh = hardware_package()
DATA = PACKAGE / "data"
CSV_PATH = ROOT / "data" / "hardware.csv"


DOC: dict[str, Any] = json.loads((DATA / "hardware.json").read_text(encoding="utf-8"))
ENTRIES: list[dict[str, Any]] = DOC["entries"]
BY_FULL_NAME = {e["full_name"]: e for e in ENTRIES}
BY_NAME = {e["name"]: e for e in ENTRIES}
TORCHAO_DOC: dict[str, Any] = json.loads(
    (DATA / "torchao_hardware.json").read_text(encoding="utf-8")
)

PEAKS = ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
#: Rows whose mem_gb cell is GiB in the vendor documents (hardware-notes.md section 1).
GIB_ROWS = {
    "Google TPU v4",
    "Google TPU v5p",
    "Google TPU7x (Ironwood)",
    "Intel Gaudi 2",
    "Intel Gaudi 3",
}
#: The only values not read from the CSV: fp8 = int8 on these two Hopper PCIe cards.
DERIVED_FP8 = {"H100 NVL", "H200 NVL"}



def _csv_rows() -> list[dict[str, str]]:
    if not CSV_PATH.exists():
        return []
    with CSV_PATH.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


CSV_ROWS = _csv_rows()


def _si(cell: str, factor: float) -> float | None:
    cell = cell.strip()
    return float(cell) * factor if cell else None


def same(actual: float | None, expected: float | None) -> None:
    """Equal up to float rounding of the unit conversion; None (empty cell) only to None."""
    if expected is None:
        assert actual is None
    else:
        assert actual == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- CSV parity


def test_every_csv_row_is_an_entry_in_order() -> None:
    assert [r["name"] for r in CSV_ROWS] == [e["full_name"] for e in ENTRIES]
    assert len(ENTRIES) == 40


@pytest.mark.parametrize("row", CSV_ROWS, ids=[r["name"] for r in CSV_ROWS])
def test_entry_matches_csv_row_in_si(row: dict[str, str]) -> None:
    entry = BY_FULL_NAME[row["name"]]

    for peak in PEAKS:
        expected = _si(row[peak], 1e12)  # TFLOPS -> FLOP/s
        if expected is None and peak == "fp8" and entry["name"] in DERIVED_FP8:
            expected = _si(row["int8"], 1e12)
        if expected is None:
            assert peak not in entry["peak_flops_per_s"], peak
        else:
            same(entry["peak_flops_per_s"][peak], expected)

    same(entry["mem_bytes_per_s"], _si(row["mem_tbps"], 1e12))  # TB/s
    capacity_factor = 2**30 if row["name"] in GIB_ROWS else 1e9  # GiB or decimal GB
    reported = _si(row["mem_cuda_mib"], 2**20)  # the device's own total, MiB
    if reported is not None:
        same(entry["mem_capacity_bytes"], reported)
    else:
        same(entry["mem_capacity_bytes"], _si(row["mem_gb"], capacity_factor))
    same(entry["l2_bytes"], _si(row["l2_mb"], 2**20))  # cache "MB" = MiB
    sms = row["sms"].strip()
    assert entry["sms"] == (int(sms) if sms else None)
    same(entry["clock_hz"], _si(row["boost_mhz"], 1e6))  # MHz
    same(entry["tdp_w"], _si(row["tdp_w"], 1.0))
    same(entry["interconnect_bytes_per_s"], _si(row["interconnect_gbps"], 1e9))  # GB/s
    assert entry["interconnect_note"] == row["interconnect_note"].strip()
    assert entry["sources"] == row["sources"]
    assert entry["vendor"] == row["vendor"]
    assert entry["device_names"] == [s.strip() for s in row["torch_device_names"].split(";")]

    # the same numbers through the public API
    hw = rh.hardware(row["name"])
    assert hw.name == entry["name"] and hw.full_name == row["name"]
    assert hw.mem_bytes_per_s == entry["mem_bytes_per_s"]
    for peak in PEAKS:
        assert getattr(hw, f"{peak}_flops_per_s") == entry["peak_flops_per_s"].get(peak)
    for device in entry["device_names"]:
        assert rh.hardware(device) is hw


def test_build_script_output_is_up_to_date() -> None:
    script = ROOT / "scripts" / "build_hardware_json.py"
    out = subprocess.run(
        [sys.executable, str(script), str(CSV_PATH), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr


def test_gib_conversion_examples() -> None:
    # 32 GiB = 32 * 2**30 = 34359738368 bytes; TPU v5e "16 GB" stays decimal.
    assert BY_NAME["TPU v4"]["mem_capacity_bytes"] == 34359738368.0
    assert BY_NAME["Gaudi 3"]["mem_capacity_bytes"] == 128 * 2**30
    assert BY_NAME["TPU v5e"]["mem_capacity_bytes"] == 16e9
    # A100 L2 "40 MB" = 41943040 B, as deviceQuery reports it
    assert BY_NAME["A100 SXM 80GB"]["l2_bytes"] == 41943040.0


def test_capacity_is_what_the_device_reports() -> None:
    """Where CUDA's / HIP's total was found, it is the capacity, in MiB x 2**20; else the
    vendor label, decimal GB for NVIDIA / AMD (a lower bound: their "GB" are GiB of HBM
    less ECC / reserved carve-outs)."""
    mib = 2**20
    # H100 SXM "80GB": torch total_memory=81090MB (MiB): 81090 x 1048576 = 85,029,027,840 B,
    # 6.3 % over 80e9 and 0.6 % under nvidia-smi's 81559 MiB (the driver's reservation).
    assert BY_NAME["H100 SXM"]["mem_capacity_bytes"] == 85_029_027_840.0
    assert BY_NAME["H100 SXM"]["mem_capacity_bytes"] == 81090 * mib
    # H200 "141GB": 143156 MiB = 150,109,945,856 B (SGLang sizes its pool from this).
    assert BY_NAME["H200"]["mem_capacity_bytes"] == 143156 * mib == 150_109_945_856.0
    # MI300X "192GB": HIP's 196592 MiB = 191.98 GiB = 206.14e9 B.
    assert BY_NAME["MI300X"]["mem_capacity_bytes"] == 196592 * mib
    # B300 "288GB": 274113 MiB = 287.43e9 B, *under* the label (one of 16 HBM controllers
    # off, hardware-notes section 41)
    assert BY_NAME["B300"]["mem_capacity_bytes"] == 274113 * mib < 288e9
    # GB300 has no vendor label in the CSV; its device total fills the gap
    assert BY_NAME["GB300"]["mem_capacity_bytes"] == 283136 * mib
    # A10G "24GB": CUDA's 22587 MiB = 23.68e9 B, 1.3 % under the label
    assert BY_NAME["A10G"]["mem_capacity_bytes"] == 22587 * mib < 24e9
    # session 14 (memrest14), the remaining parts with a CUDA / HIP print:
    # H100 NVL "94GB": Ultralytics' total_memory / 2**20 = 95320 MiB = 99,950,264,320 B, +6.3 %
    assert BY_NAME["H100 NVL"]["mem_capacity_bytes"] == 95320 * mib == 99_950_264_320.0
    # A100 PCIe "80GB": deviceQuery 84974239744 B = 81037.75 MiB, CSV 81038 (whole MiB)
    assert BY_NAME["A100 PCIe 80GB"]["mem_capacity_bytes"] == 81038 * mib
    assert abs(81038 * mib - 84_974_239_744) <= mib / 2
    # A100 PCIe "40GB" 40326 MiB: 210 MiB under the SXM4 40GB's 40536
    assert BY_NAME["A100 PCIe 40GB"]["mem_capacity_bytes"] == 40326 * mib
    assert BY_NAME["A100 PCIe 40GB"]["mem_capacity_bytes"] < BY_NAME["A100 SXM 40GB"][
        "mem_capacity_bytes"
    ]
    # V100 "16GB" / "32GB": 16160 / 32494 MiB (16.94e9 / 34.07e9 B)
    assert BY_NAME["V100 SXM2 16GB"]["mem_capacity_bytes"] == 16160 * mib == 16_944_988_160.0
    assert BY_NAME["V100 SXM2 32GB"]["mem_capacity_bytes"] == 32494 * mib
    # GDDR parts with ECC on report under the decimal label: L4 22518 MiB = 23.61e9 B,
    # A10 22599 MiB = 23.70e9 B; the RTX 3090 (no ECC) 24259 MiB = 25.44e9 B over it
    assert BY_NAME["L4"]["mem_capacity_bytes"] == 22518 * mib < 24e9
    assert BY_NAME["A10"]["mem_capacity_bytes"] == 22599 * mib < 24e9
    assert BY_NAME["RTX 3090"]["mem_capacity_bytes"] == 24259 * mib > 24e9
    # RTX 5090 "32GB" 32101 MiB; RTX PRO 6000 Server "96GB" 97250 MiB = 101,974,016,000 B
    assert BY_NAME["RTX 5090"]["mem_capacity_bytes"] == 32101 * mib
    assert BY_NAME["RTX PRO 6000 Server"]["mem_capacity_bytes"] == 97250 * mib == 101_974_016_000.0
    # GH200 96GB: deviceQuery 102005473280 B = 97280 MiB exactly (95 GiB)
    assert BY_NAME["GH200 96GB"]["mem_capacity_bytes"] == 102_005_473_280.0 == 95 * 2**30
    # MI250X "128GB" is the whole OAM (2 GCDs, 220 CUs); HIP shows each GCD as a device of
    # 65520 MiB, so the row is 2 x 65520 = 131040 MiB = 137,405,399,040 B
    assert BY_NAME["MI250X"]["mem_capacity_bytes"] == 2 * 65520 * mib == 137_405_399_040.0
    # H800 "80GB": a PyTorch profiler trace's deviceProperties totalGlobalMem 84943110144 B
    # = 81008.06 MiB -> 81008 (the H100 PCIe's figure; H100 SXM 81090)
    assert BY_NAME["H800"]["mem_capacity_bytes"] == 81008 * mib
    assert abs(81008 * mib - 84_943_110_144) <= mib / 2
    # no device total found: the label, decimal (H200 NVL "141GB", MI355X "288GB")
    assert BY_NAME["H200 NVL"]["mem_capacity_bytes"] == 141e9
    assert BY_NAME["MI355X"]["mem_capacity_bytes"] == 288e9
    for name in ("H100 SXM", "H100 PCIe", "H20", "H200", "B200", "GB200", "A100 SXM 80GB",
                 "H100 NVL", "L4"):
        assert "the total the device reports to CUDA" in BY_NAME[name]["notes"]
    assert "the total the device reports to HIP" in BY_NAME["MI300X"]["notes"]
    # MI250X: the whole package, HIP's two per-GCD totals summed (65520 MiB each)
    assert BY_NAME["MI250X"]["mem_capacity_bytes"] == 2 * 65520 * mib
    assert "2 x 65520 MiB, the totals HIP reports for each" in BY_NAME["MI250X"]["notes"]


def test_only_the_documented_values_are_derived() -> None:
    for entry in ENTRIES:
        if entry["name"] in DERIVED_FP8:
            assert len(entry["derived"]) == 1 and entry["derived"][0].startswith("fp8 = int8")
            peaks = entry["peak_flops_per_s"]
            assert peaks["fp8"] == peaks["int8"]
            assert "Derived" in rh.hardware(entry["name"]).notes
        else:
            assert entry["derived"] == [], entry["name"]


# --------------------------------------------------------------------------- sanity


def test_names_are_unique() -> None:
    assert len(BY_NAME) == len(ENTRIES) == len(BY_FULL_NAME)
    devices = [d for e in ENTRIES for d in e["device_names"]]
    assert len(devices) == len(set(devices))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_sources_and_ranges(entry: dict[str, Any]) -> None:
    assert entry["sources"].strip()
    assert rh.hardware(entry["name"]).sources.strip()
    assert 0.2e12 <= entry["mem_bytes_per_s"] <= 10e12  # 0.2 - 10 TB/s
    if entry["mem_capacity_bytes"] is not None:
        assert 8e9 <= entry["mem_capacity_bytes"] <= 300e9  # 8 - 300 GB
    if entry["clock_hz"] is not None:
        assert 0.5e9 <= entry["clock_hz"] <= 3e9
    if entry["tdp_w"] is not None:
        assert 50 <= entry["tdp_w"] <= 1500
    if entry["sms"] is not None:
        assert 40 <= entry["sms"] <= 310
    for value in entry["peak_flops_per_s"].values():
        assert 0.5e12 <= value <= 20e15


#: Dense values (NVIDIA/AMD datasheet sparse figure / 2) the database must hold, and
#: never the sparse ones (H100 SXM bf16 1979, fp8 3958; L4 bf16 242; B200 bf16 4500).
DENSE = {
    ("H100 SXM", "bf16"): 989.5e12,
    ("H100 SXM", "fp8"): 1979e12,
    ("H100 SXM", "tf32"): 494.5e12,
    ("H100 PCIe", "bf16"): 756e12,
    ("H100 NVL", "bf16"): 835.5e12,
    ("H200", "bf16"): 989.5e12,
    ("L4", "bf16"): 121e12,
    ("L40S", "bf16"): 362.05e12,
    ("B200", "bf16"): 2250e12,
    ("B200", "fp4"): 9000e12,
    ("GB200", "bf16"): 2500e12,
    ("MI300X", "bf16"): 1307.4e12,
    ("RTX 4090", "bf16"): 165.2e12,  # FP32-accumulate rate
    ("RTX 5090", "bf16"): 209.5e12,
}


@pytest.mark.parametrize(("key", "value"), sorted(DENSE.items()))
def test_dense_peaks(key: tuple[str, str], value: float) -> None:
    name, peak = key
    assert rh.hardware(name).peak_flops_per_s(peak) == value


BLACKWELL_DC = {"B100", "B200", "GB200", "B300", "GB300"}


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_no_sparse_tensor_peaks(entry: dict[str, Any]) -> None:
    peaks = entry["peak_flops_per_s"]
    if entry["vendor"] == "NVIDIA" and "bf16" in peaks and "fp32" in peaks:
        # Dense BF16 tensor / FP32 vector is at most 16x on Volta..Hopper (A100: 312/19.5)
        # and about 31x on datacenter Blackwell (GB200: 2500/80); sparse would be 2x that.
        ratio = 32 if entry["name"] in BLACKWELL_DC else 16
        assert peaks["bf16"] < 1.2 * ratio * peaks["fp32"]
    if (entry["vendor"] == "NVIDIA" or entry["name"] in {"MI300X", "MI325X"}) and (
        "bf16" in peaks and "tf32" in peaks
    ):
        # BF16 = 2 x TF32 on every tensor-core generation (L40S 362.05/183 = 1.98)
        assert peaks["bf16"] / peaks["tf32"] == pytest.approx(2.0, rel=0.03)


#: Rows where FP8 = 2 x BF16 (dense), checked by hand against the CSV:
#: Hopper, Blackwell (incl. RTX 5090 / RTX PRO at FP32 accumulate), MI300 class.
#: H100 PCIe 1513 / (2 x 756) = 1.0007 and H800 / GH200 1979 / (2 x 989) = 1.0005
#: are vendor rounding, hence rel=1e-3. Not listed: L40S (733 vs 2 x 362.05 = 724.1),
#: Gaudi 3 and TPU v5p (FP8 = BF16 there), TPU7x (not an fp8/bf16-class claim here).
FP8_IS_2X_BF16 = [
    "H100 SXM", "H100 PCIe", "H100 NVL", "H800", "H20", "H200", "H200 NVL", "GH200 96GB",
    "GH200 144GB", "B100", "B200", "GB200", "B300", "GB300", "RTX 5090", "RTX PRO 6000 Server",
    "MI300X", "MI325X", "MI355X",
]  # fmt: skip


@pytest.mark.parametrize("name", FP8_IS_2X_BF16)
def test_fp8_is_twice_bf16(name: str) -> None:
    peaks = BY_NAME[name]["peak_flops_per_s"]
    assert peaks["fp8"] == pytest.approx(2 * peaks["bf16"], rel=1e-3)


def test_fp8_equals_bf16_where_the_csv_says_so() -> None:
    for name in ("Gaudi 3", "TPU v5p"):
        peaks = BY_NAME[name]["peak_flops_per_s"]
        assert peaks["fp8"] == peaks["bf16"]


# --------------------------------------------------------------------------- torchao table


def test_torchao_table_records_its_origin() -> None:
    assert TORCHAO_DOC["torchao_version"] == "0.18.0"
    assert TORCHAO_DOC["source_file"] == "torchao/testing/training/roofline_utils.py"
    for entry in TORCHAO_DOC["entries"]:
        assert isinstance(entry["known_bugs"], list)
    rtx = next(e for e in TORCHAO_DOC["entries"] if e["key"] == "NVIDIA GeForce RTX 5090")
    assert rtx["peak_mem_bw_bytes_sec"] == 1.792e15 and rtx["known_bugs"]


def test_torchao_table_equals_torchaos_dict() -> None:
    utils = pytest.importorskip("torchao.testing.training.roofline_utils")
    spec_keys = {
        "bf16_peak_tops",
        "fp8_peak_tops",
        "fp4_peak_tops",
        "peak_mem_bw_bytes_sec",
        "pct_achievable_gemm_tops",
        "pct_achievable_mem_bw",
    }
    ours = {
        e["key"]: {k: v for k, v in e.items() if k in spec_keys} for e in TORCHAO_DOC["entries"]
    }
    import torchao

    version = getattr(torchao, "__version__", "?")
    assert ours == utils.gpu_name_to_specs, (
        f"transcribed from torchao {TORCHAO_DOC['torchao_version']}, installed {version}"
    )
    assert list(ours) == list(utils.gpu_name_to_specs)  # order matters for startswith
