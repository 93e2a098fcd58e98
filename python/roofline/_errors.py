"""The one error class for names roofline does not know (hardware, dtype, recipe, ...)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["RooflineDeprecationWarning", "UnknownNameError", "close_matches"]


class RooflineDeprecationWarning(DeprecationWarning):
    """A roofline call spelled the old way (it still works): the message says the new way.

    Its own class so a test suite can turn roofline's deprecations (and only those) into
    errors: ``filterwarnings = ["error::roofline.RooflineDeprecationWarning"]``.
    """


class UnknownNameError(KeyError, ValueError):
    """A name that matches none of the choices: hardware, dtype, recipe, backend, preset...

    Both a :class:`KeyError` (a failed lookup) and a :class:`ValueError` (a bad argument
    value), so ``except KeyError`` and ``except ValueError`` both catch it. ``str()`` is the
    plain message (a bare KeyError would quote it); :attr:`matches` holds the close matches
    the message suggests (possibly empty).

    >>> import roofline as rl
    >>> try:
    ...     rl.gemm(64, 64, 64, dtype="bf61", hardware="H100 SXM")
    ... except rl.UnknownNameError as exc:
    ...     exc.matches[0]
    'bf16'
    """

    def __init__(self, message: str = "", matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.matches: tuple[str, ...] = tuple(matches)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def close_matches(word: str, choices: Iterable[str], n: int = 5,
                  cutoff: float = 0.5) -> list[str]:
    """The choices closest to ``word`` (difflib), best first."""
    import difflib

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
