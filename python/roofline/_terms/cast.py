"""Fitted CastTerms for an accelerator (see roofline/_terms/__init__.py)."""

from __future__ import annotations

from typing import Any

from .. import _core


def core_terms(hw: Any, doc: dict[str, Any]) -> Any:
    """The core CastTerms for hw from the fitted document doc."""
    terms = _core.CastTerms()
    return terms
