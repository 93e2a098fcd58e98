# Type stub for the compiled pybind11 module roofline._core (cpp/bindings/module.cpp).
# Its contents are typed loosely: the Python layer validates every value before the call.
from typing import Any

def __getattr__(name: str) -> Any: ...
