"""Calibrated profiles: the default model's terms fitted to one device's measurements.

``rl.calibrate(measurements=..., hardware=...)`` (the public entry, :mod:`.api`) fits them
(:mod:`.fit`, :mod:`.terms`) and returns a :class:`Profile`; without measurements it measures
this machine's peaks with torch (:mod:`.measure`). A Profile, its JSON and the user's cache of
saved profiles live with the hardware it describes (``roofline.hardware.profile``,
``roofline.hardware.cache``), where ``rl.hardware`` finds them; ``roofline._params.documents``
is how the model reads a profile's terms.
"""

from __future__ import annotations

from ..hardware.cache import cache_dir, profile_path
from ..hardware.profile import Profile, load_profile, save_profile

__all__ = ["Profile", "cache_dir", "load_profile", "profile_path", "save_profile"]
