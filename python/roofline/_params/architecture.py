"""The architecture of an accelerator: which kernel code paths it runs (every area shares it)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["CUDNN_FIRST", "architecture"]

#: Architecture of an accelerator, from its canonical or full name (first match wins).
_ARCH_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bGB?[23]00\b|\bB[12]00\b|\bB300\b", "blackwell"),       # sm100 / sm103
    (r"RTX 50\d0|RTX PRO 6000", "blackwell_consumer"),            # sm120
    (r"\bG?H(100|200|800|20)\b", "hopper"),                       # sm90
    (r"\bL4\b|\bL40S?\b|RTX 40\d0|RTX 6000 Ada", "ada"),           # sm89
    (r"\bA100\b|\bA10G?\b|\bA30\b|\bA40\b|RTX 30\d0|RTX A\d+", "ampere"),  # sm80 / sm86
    (r"\bV100\b|\bT4\b", "volta"),                                # sm70 / sm75
)

#: Architectures whose compute capability is 9.x or 10.x: PyTorch (>= 2.10 with cuDNN > 9.15)
#: tries cuDNN attention before FlashAttention-2 there.
CUDNN_FIRST = frozenset({"hopper", "blackwell"})


def architecture(hw: Any) -> str:
    """``"hopper"``, ``"blackwell"``, ``"blackwell_consumer"``, ``"ada"``, ``"ampere"``,
    ``"volta"``, ``"rocm"`` (AMD Instinct / Radeon) or ``"other"`` (TPU, Gaudi, unknown)."""
    if getattr(hw, "vendor", "") == "AMD":
        return "rocm"
    if getattr(hw, "vendor", "") != "NVIDIA":
        return "other"
    text = f"{hw.name} {getattr(hw, 'full_name', '')}"
    for pattern, arch in _ARCH_PATTERNS:
        if re.search(pattern, text):
            return arch
    return "ampere"  # an unknown NVIDIA part: the sm80 code path every CUDA kernel ships
