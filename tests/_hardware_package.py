"""``roofline.hardware`` for the hardware tests, with or without the compiled core.

``roofline/__init__`` needs the compiled core; ``roofline.hardware`` does not (it imports only
the standard library and ``roofline._errors``). Without the core, the same files load under a
bare parent package named ``roofline_standalone``.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

#: The package's source folder in this checkout.
PACKAGE = Path(__file__).resolve().parents[1] / "python" / "roofline"


def hardware_package(submodule: str = "") -> Any:
    """``roofline.hardware`` (or ``roofline.hardware.<submodule>``), the module itself.

    import_module, not ``import roofline.hardware as rh``: the package re-exports the function
    ``hardware``, which shadows the subpackage as an attribute of ``roofline``.
    """
    name = "hardware" + (f".{submodule}" if submodule else "")
    try:
        return importlib.import_module(f"roofline.{name}")
    except ImportError:
        if "roofline_standalone" not in sys.modules:
            parent = types.ModuleType("roofline_standalone")
            parent.__path__ = [str(PACKAGE)]
            sys.modules[parent.__name__] = parent
        return importlib.import_module(f"roofline_standalone.{name}")
