"""Calibrated profiles: the default model's terms fitted to one device's measurements.

``rl.calibrate(measurements=..., hardware=...)`` (the public entry, :mod:`.api`) fits them
(:mod:`.fit`, :mod:`.terms`) and returns a :class:`Profile`; without measurements it measures
this machine's peaks with torch (:mod:`.measure`). Profiles are saved and loaded as JSON
(:mod:`.profile`), found in the user's cache (:mod:`.cache`) and by ``rl.hardware``
(:mod:`.resolve`); ``roofline._params.documents`` is how the model reads a profile's terms.
"""

from __future__ import annotations

from .cache import cache_dir, profile_path
from .profile import Profile, load_profile, save_profile

__all__ = ["Profile", "cache_dir", "load_profile", "profile_path", "save_profile"]
