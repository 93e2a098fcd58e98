"""The architecture of an accelerator: which kernel code paths it runs (every area shares it).

NVIDIA parts carry their CUDA compute capability (``Hardware.compute_capability``, from
``data/hardware.csv``'s ``cc`` column: NVIDIA's CUDA GPUs table and device prints,
hardware-notes §54); the rules here read it. A Hardware without one (other vendors, torchao's
table, a Hardware built by hand) falls back to its name.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["CUDNN_FIRST", "architecture", "compute_capability", "sfu_doubled"]

#: Architecture of an accelerator, from its canonical or full name (first match wins): the
#: fallback for an NVIDIA Hardware with no compute capability.
_ARCH_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bGB?[23]00\b|\bB[12]00\b|\bB300\b", "blackwell"),       # sm100 / sm103
    (r"RTX 50\d0|RTX PRO 6000", "blackwell_consumer"),            # sm120
    (r"\bG?H(100|200|800|20)\b", "hopper"),                       # sm90
    (r"\bL4\b|\bL40S?\b|RTX 40\d0|RTX 6000 Ada", "ada"),           # sm89
    (r"\bA100\b|\bA10G?\b|\bA30\b|\bA40\b|RTX 30\d0|RTX A\d+", "ampere"),  # sm80 / sm86
    (r"\bV100\b|\bT4\b", "volta"),                                # sm70 / sm75
)

#: Architecture by compute capability major version (8.9 is Ada, the other 8.x Ampere).
_ARCH_BY_MAJOR = {7: "volta", 8: "ampere", 9: "hopper", 10: "blackwell",
                  12: "blackwell_consumer"}

#: Blackwell Ultra (sm103: B300, GB300) doubles the special-function units' MUFU.EX2
#: throughput of Blackwell (sm100) (NVIDIA technical blog, "Making Softmax More Efficient with
#: NVIDIA Blackwell Ultra"); the name fallback for a Hardware with no compute capability.
_SFU_DOUBLED_NAME = re.compile(r"\bG?B300\b")

#: Architectures whose compute capability is 9.x or 10.x: PyTorch (>= 2.10 with cuDNN > 9.15)
#: tries cuDNN attention before FlashAttention-2 there.
CUDNN_FIRST = frozenset({"hopper", "blackwell"})


def compute_capability(hw: Any) -> tuple[int, int] | None:
    """``hw``'s CUDA compute capability ``(major, minor)``, or None where it has none."""
    cc = getattr(hw, "compute_capability", None)
    return None if cc is None else (int(cc[0]), int(cc[1]))


def architecture(hw: Any) -> str:
    """``"hopper"``, ``"blackwell"``, ``"blackwell_consumer"``, ``"ada"``, ``"ampere"``,
    ``"volta"``, ``"rocm"`` (AMD Instinct / Radeon) or ``"other"`` (TPU, Gaudi, unknown).

    An NVIDIA part's compute capability decides (7.x Volta / Turing, 8.9 Ada, other 8.x
    Ampere, 9.x Hopper, 10.x Blackwell, 12.x consumer / workstation Blackwell); without one,
    or with a major version not listed, its name does, and an unknown NVIDIA part runs the
    sm80 code path every CUDA kernel ships."""
    if getattr(hw, "vendor", "") == "AMD":
        return "rocm"
    if getattr(hw, "vendor", "") != "NVIDIA":
        return "other"
    cc = compute_capability(hw)
    if cc is not None:
        if cc == (8, 9):
            return "ada"
        if cc[0] in _ARCH_BY_MAJOR:
            return _ARCH_BY_MAJOR[cc[0]]
    text = f"{hw.name} {getattr(hw, 'full_name', '')}"
    for pattern, arch in _ARCH_PATTERNS:
        if re.search(pattern, text):
            return arch
    return "ampere"  # an unknown NVIDIA part: the sm80 code path every CUDA kernel ships


def sfu_doubled(hw: Any) -> bool:
    """Whether ``hw`` is Blackwell Ultra (compute capability 10.3: B300, GB300), whose SFUs run
    MUFU.EX2 at twice Blackwell's rate; by name (B300 / GB300) where the capability is unknown.
    """
    cc = compute_capability(hw)
    if cc is not None:
        return cc == (10, 3)
    return bool(_SFU_DOUBLED_NAME.search(f"{hw.name} {getattr(hw, 'full_name', '')}"))
