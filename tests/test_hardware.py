"""Tests for roofline.hardware: the Hardware dataclass, name matching and detection.

These tests need neither the compiled core nor a GPU: torch is replaced by a fake
module in ``sys.modules`` wherever detection is exercised.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from _hardware_package import PACKAGE, hardware_package

ROOT = Path(__file__).resolve().parents[1]
rh = hardware_package()
#: The database module, whose data folder and table cache the database tests replace.
database = hardware_package("database")

Hardware = rh.Hardware
hardware = rh.hardware

# --------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _clean_defaults(monkeypatch: pytest.MonkeyPatch) -> Any:
    """No default hardware and no ROOFLINE_HARDWARE, before and after every test."""
    monkeypatch.delenv("ROOFLINE_HARDWARE", raising=False)
    rh.set_default_hardware(None)
    yield
    rh.set_default_hardware(None)


def fake_torch(
    available: bool = True, name: str = "NVIDIA H100 80GB HBM3", arch: str = ""
) -> types.ModuleType:
    """A stand-in for the torch module with just the torch.cuda calls hardware() uses."""
    module = types.ModuleType("torch")
    props = types.SimpleNamespace(gcnArchName=arch, name=name)
    module.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: available,
        get_device_name=lambda index=0: name,
        get_device_properties=lambda index=0: props,
    )
    return module


def minimal(**overrides: Any) -> Any:
    kwargs: dict[str, Any] = {"name": "X", "bf16_flops_per_s": 1e15, "mem_bytes_per_s": 2e12}
    kwargs.update(overrides)
    return Hardware(**kwargs)


# --------------------------------------------------------------------------- names

#: Every device string in hardware-notes.md section 3 -> the row it must resolve to.
DEVICE_STRINGS = {
    "Tesla V100-SXM2-16GB": "V100 SXM2 16GB",
    "Tesla V100-SXM2-32GB": "V100 SXM2 32GB",
    "NVIDIA A100-SXM4-40GB": "A100 SXM 40GB",
    "NVIDIA A100-PG509-200": "A100 SXM 40GB",
    "NVIDIA A100-SXM4-80GB": "A100 SXM 80GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe 40GB",
    "NVIDIA A100-PCIe-40GB": "A100 PCIe 40GB",  # vLLM's spelling; matching is case-blind
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA A10": "A10",
    "NVIDIA A10G": "A10G",
    "GPU 0: NVIDIA A10G": "A10G",  # collect_env form
    "NVIDIA L4": "L4",
    "NVIDIA L40S": "L40S",
    "NVIDIA GeForce RTX 4090": "RTX 4090",
    "NVIDIA GeForce RTX 3090": "RTX 3090",
    "NVIDIA GeForce RTX 5090": "RTX 5090",
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA H800": "H800",
    "NVIDIA H20": "H20",
    "NVIDIA H200": "H200",
    "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA GH200 480GB": "GH200 96GB",
    "NVIDIA GH200 120GB": "GH200 96GB",
    "NVIDIA GH200 144G HBM3e": "GH200 144GB",
    "NVIDIA B100": "B100",
    "NVIDIA B200": "B200",
    "NVIDIA GB200": "GB200",
    "NVIDIA B300 SXM6 AC": "B300",
    "NVIDIA GB300": "GB300",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "RTX PRO 6000 Server",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "RTX PRO 6000 Workstation",
    "AMD Instinct MI250X/MI250": "MI250X",
    "AMD Instinct MI250X/MI250 (gfx90a:sramecc+:xnack-)": "MI250X",
    "AMD Instinct MI250X": "MI250X",
    "AMD Instinct MI300X": "MI300X",
    "AMD INSTINCT MI300X": "MI300X",  # PyTorch inductor's upper-case alias
    "AMD Instinct MI300X (gfx942:sramecc+:xnack-)": "MI300X",
    "AMD Instinct MI325X": "MI325X",
    "AMD Instinct MI355X": "MI355X",
    "TPU v4": "TPU v4",
    "TPU v5 lite": "TPU v5e",
    "TPU v5": "TPU v5p",
    "TPU v5p": "TPU v5p",
    "TPU v6 lite": "TPU v6e",
    "TPU7x": "TPU7x",
    "GAUDI2": "Gaudi 2",
    "GAUDI3": "Gaudi 3",
}

#: Real device names of *other* SKUs (hardware-notes section 3) that must not be
#: mapped to a neighbouring row by prefix or substring.
OTHER_SKUS = [
    "NVIDIA H800 PCIe",
    "NVIDIA H800 NVL",
    "NVIDIA H20-3e",
    "NVIDIA H20 NVL16",
    "NVIDIA PG509-210",
    "NVIDIA GeForce RTX 4090 D",
    "NVIDIA GeForce RTX 5090 D",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
    "NVIDIA Graphics Device",
    "AMD Instinct MI350X",
    "AMD Instinct MI300A",
    "NVIDIA L40",  # not L4, not L40S
    "NVIDIA H100 80GB",  # truncated SXM name: no prefix matching
    "H10",
    "MI250",  # a different, slower part than MI250X
]

CANONICAL_NAMES = [
    "V100 SXM2 16GB", "V100 SXM2 32GB", "A100 SXM 40GB", "A100 SXM 80GB", "A100 PCIe 40GB",
    "A100 PCIe 80GB", "A10", "A10G", "L4", "L40S", "RTX 4090", "RTX 3090", "H100 SXM",
    "H100 PCIe", "H100 NVL", "H800", "H20", "H200", "H200 NVL", "GH200 96GB", "GH200 144GB",
    "B100", "B200", "GB200", "B300", "GB300", "RTX 5090", "RTX PRO 6000 Server",
    "RTX PRO 6000 Workstation", "MI250X", "MI300X", "MI325X", "MI355X", "TPU v4", "TPU v5e",
    "TPU v5p", "TPU v6e", "TPU7x", "Gaudi 2", "Gaudi 3",
]  # fmt: skip


def test_list_hardware_is_the_canonical_names_in_database_order() -> None:
    assert rh.list_hardware() == CANONICAL_NAMES
    assert rh.list_hardware("roofline") == CANONICAL_NAMES


@pytest.mark.parametrize("name", CANONICAL_NAMES)
def test_canonical_names_resolve_to_themselves(name: str) -> None:
    assert hardware(name).name == name


@pytest.mark.parametrize(("device", "expected"), sorted(DEVICE_STRINGS.items()))
def test_device_strings_resolve_to_their_row(device: str, expected: str) -> None:
    assert hardware(device).name == expected


@pytest.mark.parametrize("name", OTHER_SKUS)
def test_other_skus_are_not_prefix_matched(name: str) -> None:
    with pytest.raises(KeyError):
        hardware(name)


def test_required_results() -> None:
    assert hardware("NVIDIA H100 80GB HBM3").mem_bytes_per_s == 3.35e12
    assert hardware("NVIDIA H100 80GB HBM3").name == "H100 SXM"
    assert hardware("NVIDIA H100 PCIe").mem_bytes_per_s == 2.0e12
    assert hardware("NVIDIA H100 NVL").name == "H100 NVL"
    assert hardware("NVIDIA H200").name == "H200"  # torchao: no match; startswith: not H100
    assert hardware("NVIDIA H200").mem_bytes_per_s == 4.8e12
    assert hardware("NVIDIA L40S").name == "L40S"  # Lightning's "l4" in name trap
    assert hardware("NVIDIA L4").name == "L4"
    assert hardware("NVIDIA L4").mem_bytes_per_s == 0.3e12
    assert hardware("TPU v5 lite").name == "TPU v5e"
    assert hardware("GAUDI3").name == "Gaudi 3"


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("H100 SXM5", "H100 SXM"),
        ("H100-SXM", "H100 SXM"),
        ("h100_sxm", "H100 SXM"),
        ("  h100 \t SXM  ", "H100 SXM"),
        ("H100--SXM5__80GB", "H100 SXM"),
        ("NVIDIA H100 SXM5 80GB", "H100 SXM"),  # the CSV's full name
        ("A100", "A100 SXM 80GB"),
        ("NVIDIA A100", "A100 SXM 80GB"),  # PyTorch inductor's key; vendor word dropped
        ("A100 40GB", "A100 SXM 40GB"),
        ("H200 SXM", "H200"),
        ("h200-nvl", "H200 NVL"),
        ("MI300X", "MI300X"),
        ("mi300x", "MI300X"),
        ("AMD MI300X", "MI300X"),
        ("Gaudi2", "Gaudi 2"),
        ("gaudi 3", "Gaudi 3"),
        ("TPU v5e", "TPU v5e"),
        ("Ironwood", "TPU7x"),
        ("GH200", "GH200 96GB"),
        ("RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Server"),
        ("4090", "RTX 4090"),
        ("V100", "V100 SXM2 32GB"),
    ],
)
def test_aliases(alias: str, expected: str) -> None:
    assert hardware(alias).name == expected


@pytest.mark.parametrize(
    "name", ["H100", "h100", "NVIDIA H100", "nvidia-h100", "GPU 0: NVIDIA H100", " H100 "]
)
def test_bare_h100_is_ambiguous(name: str) -> None:
    with pytest.raises(KeyError) as info:
        hardware(name)
    message = str(info.value)
    for piece in ("ambiguous", "H100 SXM", "H100 PCIe", "H100 NVL", "2339", "2.4 TB/s"):
        assert piece in message
    assert "table='torchao'" in message


@pytest.mark.parametrize("name", ["AMD Radeon Graphics", "", "   ", "GPU 0: AMD Radeon Graphics"])
def test_generic_rocm_names_explain(name: str) -> None:
    with pytest.raises(KeyError) as info:
        hardware(name)
    message = str(info.value)
    assert "ROOFLINE_HARDWARE" in message
    assert "MI300X" in message  # shows what to pass


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(rh.UnknownHardwareError) as info:
        hardware("H100 SMX")
    message = str(info.value)
    assert "close matches: H100 SXM" in message
    assert "list_hardware()" in message
    assert "from_dict" in message
    suggestions = message.split("close matches: ")[1].split(". See")[0].split(", ")
    assert 1 <= len(suggestions) <= 5


def test_unknown_name_is_a_keyerror_with_a_readable_message() -> None:
    with pytest.raises(KeyError) as info:
        hardware("Quantum 9000")
    assert str(info.value).startswith("hardware: unknown hardware 'Quantum 9000'")


@pytest.mark.parametrize("bad", [3, 3.5, b"H100 SXM", ["H100 SXM"], {"name": "x"}])
def test_non_str_names_are_type_errors(bad: object) -> None:
    with pytest.raises(TypeError, match="name must be a str"):
        hardware(bad)  # type: ignore[arg-type]


def test_hardware_instances_pass_through() -> None:
    hw = minimal()
    assert hardware(hw) is hw
    assert hardware(hw, table="torchao") is hw


def test_bad_table() -> None:
    with pytest.raises(ValueError, match="table must be one of"):
        hardware("H100 SXM", table="peak")
    with pytest.raises(ValueError, match="table must be one of"):
        rh.list_hardware("nope")


def test_lookups_return_the_same_cached_object() -> None:
    assert hardware("H100 SXM") is hardware("NVIDIA H100 80GB HBM3")


# --------------------------------------------------------------------------- torchao table


def test_torchao_table_names() -> None:
    assert rh.list_hardware("torchao") == [
        "NVIDIA H100",
        "NVIDIA B200",
        "NVIDIA B300 SXM6 AC",
        "NVIDIA GB200",
        "AMD Instinct MI300X",
        "NVIDIA GeForce RTX 5090",
    ]


def test_torchao_table_uses_torchaos_own_matching() -> None:
    # exact key
    h100 = hardware("NVIDIA H100", table="torchao")
    assert (h100.bf16_flops_per_s, h100.fp8_flops_per_s) == (989e12, 1979e12)
    assert h100.mem_bytes_per_s == 2.4e12
    assert (h100.achievable_flops_fraction, h100.achievable_mem_fraction) == (0.78, 0.92)
    assert h100.table == "torchao"
    # startswith: torchao sends every H100 variant to its "NVIDIA H100" entry
    for name in ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL"):
        assert hardware(name, table="torchao") is h100
    # and matches nothing for H200, and nothing case-insensitively
    for name in ("NVIDIA H200", "nvidia h100", "H100 SXM"):
        with pytest.raises(KeyError):
            hardware(name, table="torchao")


def test_torchao_entries_keep_torchaos_numbers_and_bugs() -> None:
    b200 = hardware("NVIDIA B200", table="torchao")
    assert b200.mem_bytes_per_s == (7680 / 8) * 3.996e9 * 2  # ~7.672e12
    b300 = hardware("NVIDIA B300 SXM6 AC", table="torchao")
    assert (b300.achievable_flops_fraction, b300.achievable_mem_fraction) == (0.82, 0.84)
    assert b300.fp4_flops_per_s == 14e15
    rtx = hardware("NVIDIA GeForce RTX 5090", table="torchao")
    assert rtx.mem_bytes_per_s == 1.792e15  # torchao's bug, kept on purpose
    assert rtx.achievable_flops_fraction is None and rtx.achievable_mem_fraction is None
    assert "1.792e12" in rtx.notes
    gb200 = hardware("NVIDIA GB200", table="torchao")
    assert gb200.bf16_flops_per_s == 2.25e15  # B200's numbers, as torchao has them


def test_torchao_parity_with_get_roofline_gpu_name() -> None:
    utils = pytest.importorskip("torchao.testing.training.roofline_utils")
    names = [
        "NVIDIA H100",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H100 PCIe",
        "NVIDIA H100 NVL",
        "NVIDIA H200",
        "NVIDIA B200",
        "NVIDIA B300 SXM6 AC",
        "NVIDIA GB200",
        "NVIDIA GB300",
        "AMD Instinct MI300X",
        "AMD Instinct MI300X (gfx942:sramecc+:xnack-)",
        "NVIDIA GeForce RTX 5090",
        "NVIDIA L40S",
        "",
    ]
    for name in names:
        try:
            expected: str | None = utils.get_roofline_gpu_name(name)
        except ValueError:
            expected = None
        if expected is None:
            with pytest.raises(KeyError):
                hardware(name, table="torchao")
        else:
            hw = hardware(name, table="torchao")
            assert hw.name == expected
            specs = utils.gpu_name_to_specs[expected]
            assert hw.bf16_flops_per_s == specs["bf16_peak_tops"]
            assert hw.fp8_flops_per_s == specs["fp8_peak_tops"]
            assert hw.fp4_flops_per_s == specs.get("fp4_peak_tops")
            assert hw.mem_bytes_per_s == specs["peak_mem_bw_bytes_sec"]
            assert hw.achievable_flops_fraction == specs.get("pct_achievable_gemm_tops")
            assert hw.achievable_mem_fraction == specs.get("pct_achievable_mem_bw")


# --------------------------------------------------------------------------- detection


def test_detect_cuda_device_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(name="NVIDIA H100 PCIe"))
    assert hardware().name == "H100 PCIe"
    assert rh.default_hardware_name_or_none() == "H100 PCIe"


def test_detect_with_torchao_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(name="NVIDIA H100 80GB HBM3"))
    assert hardware(table="torchao").name == "NVIDIA H100"


def test_default_then_env_then_detected_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # The documented order: the default, then the env var, then the detected GPU.
    monkeypatch.setitem(sys.modules, "torch", fake_torch(name="NVIDIA L40S"))
    rh.set_default_hardware("B200")
    monkeypatch.setenv("ROOFLINE_HARDWARE", "MI300X")
    assert hardware().name == "B200"
    rh.set_default_hardware(None)
    assert hardware().name == "MI300X"
    monkeypatch.delenv("ROOFLINE_HARDWARE")
    assert hardware().name == "L40S"


def test_detect_generic_rocm_name_uses_gcn_arch(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = fake_torch(name="AMD Radeon Graphics", arch="gfx90a:sramecc+:xnack-")
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert hardware().name == "MI250X"


@pytest.mark.parametrize("arch", ["gfx942:sramecc+:xnack-", "gfx950"])
def test_detect_ambiguous_gcn_arch_explains(monkeypatch: pytest.MonkeyPatch, arch: str) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(name="AMD Radeon Graphics", arch=arch))
    with pytest.raises(KeyError) as info:
        hardware()
    message = str(info.value)
    assert arch in message and "ROOFLINE_HARDWARE" in message and "MI3" in message
    assert rh.default_hardware_name_or_none() is None
    # following the hint works:
    monkeypatch.setenv("ROOFLINE_HARDWARE", "MI355X")
    assert hardware().name == "MI355X"


def test_detect_empty_rocm_name_without_arch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(name="", arch=""))
    with pytest.raises(KeyError, match="ROOFLINE_HARDWARE"):
        hardware()
    rh.set_default_hardware("MI300X")
    assert hardware().name == "MI300X"


def test_detect_unknown_gpu_falls_back_to_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(name="NVIDIA A40"))
    with pytest.raises(KeyError, match="NVIDIA A40"):
        hardware()
    rh.set_default_hardware("A10")
    assert hardware().name == "A10"


def test_no_cuda_uses_default_then_env_then_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(available=False))
    with pytest.raises(RuntimeError) as info:
        hardware()
    assert isinstance(info.value, rh.HardwareNotSpecifiedError)
    message = str(info.value)
    assert "set_default_hardware" in message and "ROOFLINE_HARDWARE" in message
    assert "hardware('H100 SXM')" in message
    assert rh.default_hardware_name_or_none() is None

    monkeypatch.setenv("ROOFLINE_HARDWARE", "mi300x")
    assert hardware().name == "MI300X"
    assert rh.default_hardware_name_or_none() == "MI300X"

    rh.set_default_hardware("H200 NVL")  # the default beats the environment variable
    assert hardware().name == "H200 NVL"

    custom = minimal(name="my accelerator")
    rh.set_default_hardware(custom)
    assert hardware() is custom

    rh.set_default_hardware(None)  # cleared: back to the environment variable
    assert hardware().name == "MI300X"


def test_bad_env_var_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(available=False))
    monkeypatch.setenv("ROOFLINE_HARDWARE", "H100")
    with pytest.raises(KeyError) as info:
        hardware()
    assert "ROOFLINE_HARDWARE='H100'" in str(info.value)
    assert "ambiguous" in str(info.value)


def test_torch_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(rh.HardwareNotSpecifiedError):
        hardware()
    rh.set_default_hardware("L4")
    assert hardware().name == "L4"


def test_broken_cuda_counts_as_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = fake_torch()

    def boom() -> bool:
        raise RuntimeError("driver mismatch")

    torch.cuda.is_available = boom  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    rh.set_default_hardware("A100")
    assert hardware().name == "A100 SXM 80GB"


def test_set_default_hardware_validates_now() -> None:
    with pytest.raises(KeyError):
        rh.set_default_hardware("H100")
    with pytest.raises(TypeError):
        rh.set_default_hardware(42)  # type: ignore[arg-type]
    assert rh.set_default_hardware("h100-sxm") is hardware("H100 SXM")
    assert rh.set_default_hardware(None) is None
    torchao_h100 = rh.set_default_hardware("NVIDIA H100", table="torchao")
    assert torchao_h100 is not None and torchao_h100.table == "torchao"


def test_package_imports_only_the_standard_library_and_errors() -> None:
    # roofline.hardware loaded under a bare parent package: no roofline/__init__, no core
    code = (
        "import importlib, sys, types\n"
        "parent = types.ModuleType('hw_only')\n"
        f"parent.__path__ = [{str(PACKAGE)!r}]\n"
        "sys.modules['hw_only'] = parent\n"
        "m = importlib.import_module('hw_only.hardware')\n"
        "m.hardware('H100 SXM'); m.list_hardware('torchao')\n"
        "bad = [n for n in sys.modules if n == 'torch' or n.startswith(('torch.', 'numpy',"
        " 'roofline'))]\n"
        "bad += [n for n in sys.modules if n.startswith('hw_only.')"
        " and n.split('.')[1] not in ('hardware', '_errors')]\n"
        "print(bad)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- Hardware


def test_minimal_hardware_and_int_coercion() -> None:
    hw = Hardware(name="X", bf16_flops_per_s=10**15, mem_bytes_per_s=2 * 10**12, sms=132.0)
    assert isinstance(hw.bf16_flops_per_s, float) and hw.bf16_flops_per_s == 1e15
    assert isinstance(hw.mem_bytes_per_s, float)
    assert hw.sms == 132 and isinstance(hw.sms, int)
    assert hw.table == "roofline" and hw.device_names == () and hw.aliases == ()


def test_mem_bytes_per_s_is_required() -> None:
    with pytest.raises(TypeError, match="mem_bytes_per_s"):
        Hardware(name="X", bf16_flops_per_s=1e15)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="mem_bytes_per_s must be a number, got None"):
        minimal(mem_bytes_per_s=None)


def test_at_least_one_peak_is_required() -> None:
    with pytest.raises(ValueError, match="at least one peak"):
        Hardware(name="X", mem_bytes_per_s=1e12)


def test_error_message_format() -> None:
    with pytest.raises(ValueError) as info:
        minimal(mem_bytes_per_s=-1.0)
    assert str(info.value) == (
        "Hardware: mem_bytes_per_s must be a positive finite number, got -1.0"
    )


NUMERIC_FIELDS = [
    "fp64_flops_per_s",
    "fp32_flops_per_s",
    "tf32_flops_per_s",
    "bf16_flops_per_s",
    "fp8_flops_per_s",
    "int8_flops_per_s",
    "fp4_flops_per_s",
    "mem_bytes_per_s",
    "mem_capacity_bytes",
    "l2_bytes",
    "sms",
    "clock_hz",
    "tdp_w",
    "interconnect_bytes_per_s",
    "achievable_flops_fraction",
    "achievable_mem_fraction",
]


@pytest.mark.parametrize("field", NUMERIC_FIELDS)
@pytest.mark.parametrize("value", [-1.0, 0, 0.0, math.nan, math.inf, -math.inf])
def test_bad_numbers_are_value_errors(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        minimal(**{field: value})


@pytest.mark.parametrize("field", NUMERIC_FIELDS)
@pytest.mark.parametrize("value", [True, False, "1e12", b"1", [1.0]])
def test_non_numbers_are_type_errors(field: str, value: object) -> None:
    with pytest.raises(TypeError, match=field):
        minimal(**{field: value})


def test_fractions_and_sms() -> None:
    assert minimal(achievable_flops_fraction=1).achievable_flops_fraction == 1.0
    with pytest.raises(ValueError, match=r"achievable_mem_fraction must be in \(0, 1\]"):
        minimal(achievable_mem_fraction=1.5)
    with pytest.raises(ValueError, match="sms must be a positive integer, got 132.5"):
        minimal(sms=132.5)


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("name", "", ValueError),
        ("name", 3, TypeError),
        ("vendor", None, TypeError),
        ("table", "peak", ValueError),
        ("device_names", "NVIDIA H100 PCIe", TypeError),  # a str, not a tuple of str
        ("aliases", ("ok", 3), TypeError),
    ],
)
def test_bad_other_fields(field: str, value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=field):
        minimal(**{field: value})


def test_frozen_and_hashable() -> None:
    hw = hardware("H100 SXM")
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.mem_bytes_per_s = 1.0  # type: ignore[misc]
    assert len({hw, hardware("NVIDIA H100 80GB HBM3")}) == 1


def test_peak_flops_per_s() -> None:
    hw = hardware("H100 SXM")
    assert hw.peak_flops_per_s("bf16") == 989.5e12  # dense, not the sparse 1979
    assert hw.peak_flops_per_s("fp8") == 1979e12
    with pytest.raises(KeyError) as info:
        hw.peak_flops_per_s("fp16")
    assert "fp64, fp32, tf32, bf16, fp8, int8, fp4" in str(info.value)
    with pytest.raises(ValueError) as missing:
        hardware("H100 PCIe").peak_flops_per_s("fp4")
    assert str(missing.value) == (
        "H100 PCIe has no fp4 peak in the database; pass a Hardware with fp4_flops_per_s set "
        "(hw.replace(fp4_flops_per_s=...))"
    )
    patched = hardware("H100 PCIe").replace(fp4_flops_per_s=3e15)
    assert patched.peak_flops_per_s("fp4") == 3e15


def test_ridge_point() -> None:
    # 989.5e12 FLOP/s / 3.35e12 B/s = 295.37... FLOP/byte
    assert hardware("H100 SXM").ridge_point("bf16") == pytest.approx(295.373, rel=1e-5)
    # 1307.4e12 / 5.3e12 = 246.68
    assert hardware("MI300X").ridge_point("bf16") == pytest.approx(246.679, rel=1e-5)


def test_replace() -> None:
    hw = hardware("H100 SXM")
    meta = hw.replace(mem_bytes_per_s=2.4e12, name="H100 (Meta)")
    assert meta.mem_bytes_per_s == 2.4e12 and meta.name == "H100 (Meta)"
    assert meta.bf16_flops_per_s == hw.bf16_flops_per_s
    assert hw.mem_bytes_per_s == 3.35e12  # original untouched
    with pytest.raises(TypeError, match="'mem_bandwidth'"):
        hw.replace(mem_bandwidth=1e12)
    with pytest.raises(ValueError, match="mem_bytes_per_s"):
        hw.replace(mem_bytes_per_s=-1.0)


def test_repr() -> None:
    text = repr(hardware("H100 SXM"))
    assert text == "Hardware('H100 SXM', bf16=989.5 TFLOP/s, fp8=1979 TFLOP/s, mem=3.35 TB/s)"
    assert "table='torchao'" in repr(hardware("NVIDIA B200", table="torchao"))
    assert "fp32=125 TFLOP/s" in repr(hardware("RTX PRO 6000 Workstation"))  # fp32 only


def test_to_dict_from_dict_round_trip_for_every_entry() -> None:
    for table in ("roofline", "torchao"):
        for name in rh.list_hardware(table):
            hw = hardware(name, table=table)
            data = hw.to_dict()
            text = json.dumps(data)  # JSON-able
            again = Hardware.from_dict(json.loads(text))
            assert again == hw
            assert isinstance(again.device_names, tuple)


def test_from_dict_errors() -> None:
    good = minimal().to_dict()
    with pytest.raises(ValueError, match="'mem_bandwidth'"):
        Hardware.from_dict({**good, "mem_bandwidth": 1e12})
    without_name = {k: v for k, v in good.items() if k != "name"}
    with pytest.raises(ValueError, match="name"):
        Hardware.from_dict(without_name)
    with pytest.raises(TypeError):
        Hardware.from_dict([("name", "X")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mem_bytes_per_s"):
        Hardware.from_dict({**good, "mem_bytes_per_s": -3})
    # a minimal hand-written dict is enough
    assert Hardware.from_dict({"name": "Y", "fp8_flops_per_s": 1e15, "mem_bytes_per_s": 1e12})


def test_from_file(tmp_path: Path) -> None:
    hw = hardware("MI300X").replace(name="MI300X tuned", mem_bytes_per_s=4.2e12)
    path = tmp_path / "mi300x.json"
    path.write_text(json.dumps(hw.to_dict()), encoding="utf-8")
    assert Hardware.from_file(path) == hw
    assert Hardware.from_file(str(path)) == hw


def test_from_file_malformed_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "X",\n "mem_bytes_per_s": }', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        Hardware.from_file(path)
    message = str(info.value)
    assert str(path) in message and "line 2 column" in message
    not_object = tmp_path / "list.json"
    not_object.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="JSON object"):
        Hardware.from_file(not_object)


# --------------------------------------------------------------------------- database


def _with_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doc: dict[str, Any]) -> None:
    (tmp_path / "hardware.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setattr(database, "DATA_DIR", tmp_path)
    database.load.cache_clear()


@pytest.fixture
def original_doc() -> Any:
    doc = json.loads((PACKAGE / "data" / "hardware.json").read_text("utf-8"))
    yield doc
    database.load.cache_clear()  # drop whatever a test loaded from elsewhere


@pytest.mark.parametrize(
    ("field", "value"),
    [("aliases", ["H100 SXM"]), ("device_names", ["NVIDIA L40S"]), ("name", "h100-sxm")],
)
def test_database_rejects_duplicates(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    original_doc: dict[str, Any],
    field: str,
    value: Any,
) -> None:
    original_doc["entries"][0][field] = value
    _with_data(tmp_path, monkeypatch, original_doc)
    with pytest.raises(ValueError, match="names both"):
        rh.list_hardware()


def test_database_rejects_bad_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, original_doc: dict[str, Any]
) -> None:
    original_doc["entries"][22]["mem_bytes_per_s"] = -2.0  # B200
    _with_data(tmp_path, monkeypatch, original_doc)
    with pytest.raises(ValueError, match="mem_bytes_per_s"):
        hardware("B200")


def test_database_rejects_unknown_keys_and_bare_h100(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, original_doc: dict[str, Any]
) -> None:
    original_doc["entries"][0]["colour"] = "green"
    _with_data(tmp_path, monkeypatch, original_doc)
    with pytest.raises(ValueError, match="colour"):
        rh.list_hardware()
    del original_doc["entries"][0]["colour"]
    original_doc["entries"][0]["aliases"] = ["H100"]
    _with_data(tmp_path, monkeypatch, original_doc)
    with pytest.raises(ValueError, match="ambiguous"):
        rh.list_hardware()
