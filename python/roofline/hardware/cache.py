"""Where saved profiles live: the user's cache folder, one file per device and software.

``<cache>/roofline/profiles/<device>__torch-<v>__cuda-<v>.json``, where ``<cache>`` is
``platformdirs.user_cache_dir()`` when platformdirs is installed, else ``$XDG_CACHE_HOME`` or
``~/.cache``. Keying by torch and CUDA (or HIP) versions means a profile fitted under one
software stack is not silently used under another (kernels and their speeds change).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

__all__ = ["cache_dir", "profile_path", "software_versions"]


def cache_dir() -> Path:
    """The folder saved profiles live in (not created here)."""
    try:
        import platformdirs
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return root / "roofline" / "profiles"
    return Path(platformdirs.user_cache_dir("roofline")) / "profiles"


def software_versions(torch: Any) -> dict[str, str]:
    """torch and CUDA / HIP versions of an imported torch module (empty strings if absent)."""
    version = getattr(torch, "version", None)
    return {"torch": str(getattr(torch, "__version__", "") or ""),
            "cuda": str(getattr(version, "cuda", "") or ""),
            "hip": str(getattr(version, "hip", "") or "")}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.+]+", "-", text.strip().lower()).strip("-") or "unknown"


def profile_path(device: str, software: dict[str, str]) -> Path:
    """Path of the saved profile for ``device`` (a torch device name) under ``software``."""
    if not isinstance(device, str) or not device.strip():
        raise ValueError(f"profile_path: device must be a non-empty string, got {device!r}")
    parts = [_slug(device)]
    for key in ("torch", "cuda", "hip"):
        if software.get(key):
            parts.append(f"{key}-{_slug(software[key])}")
    return cache_dir() / ("__".join(parts) + ".json")
