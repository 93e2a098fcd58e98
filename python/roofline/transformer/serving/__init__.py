"""Serving as engines run it: in-flight batching steps priced from the op models."""

from __future__ import annotations

from .engine import StepPricer, split_time

__all__ = ["StepPricer", "split_time"]
