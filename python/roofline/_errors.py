"""The one error class for names roofline does not know (hardware, dtype, recipe, ...)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["ArgumentTypeError", "ArgumentValueError", "MissingKeyError",
           "RooflineDeprecationWarning", "UnknownNameError", "close_matches", "table_renamed"]


class _ArgumentError:
    """What a bad-argument error carries besides its message, so that a front end (the CLI)
    can name the argument its own way (``--seq-len``) without parsing the message.

    Attributes
    ----------
    function : str
        The public function that checked the argument (``"gemm"``, ``"transformer.plan"``).
    argument : str or None
        The argument's name as the caller wrote it (``"seq_len"``, ``"m"``).
    detail : str
        The message without the ``"function: argument "`` prefix (``"must be ..., got 0"``)
        and without ``advice``.
    advice : str
        What to do, in Python terms (``"pass hardware=hw.replace(...)"``), or ``""``: the
        message ends with it; a front end with its own terms leaves it out. A raiser may
        word the whole message itself (``message=``); the attributes stay as given.
    """

    function: str
    argument: str | None
    detail: str
    advice: str

    def _carry(self, function: str, argument: str | None, detail: str, advice: str,
               message: str | None) -> str:
        self.function, self.argument, self.detail, self.advice = (function, argument, detail,
                                                                  advice)
        if message is not None:  # the raiser words the whole message itself
            return message
        head = f"{function}: {argument} {detail}" if argument else f"{function}: {detail}"
        return f"{head}; {advice}" if advice else head


class ArgumentValueError(_ArgumentError, ValueError):
    """A bad argument value (a :class:`ValueError`) naming its function and argument."""

    def __init__(self, function: str, argument: str | None, detail: str,
                 advice: str = "", message: str | None = None) -> None:
        ValueError.__init__(self, self._carry(function, argument, detail, advice, message))


class ArgumentTypeError(_ArgumentError, TypeError):
    """An argument of the wrong type (a :class:`TypeError`) naming its function and argument."""

    def __init__(self, function: str, argument: str | None, detail: str,
                 advice: str = "", message: str | None = None) -> None:
        TypeError.__init__(self, self._carry(function, argument, detail, advice, message))


class MissingKeyError(_ArgumentError, KeyError, ValueError):
    """A required key missing from a mapping the caller passed (``from_hf``'s config): a
    :class:`KeyError` (a failed lookup) and a :class:`ValueError` (a bad argument), whose
    ``str()`` is the plain message (a bare KeyError would quote it)."""

    def __init__(self, function: str, argument: str, detail: str) -> None:
        KeyError.__init__(self, self._carry(function, argument, detail, "", None))

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RooflineDeprecationWarning(DeprecationWarning):
    """A roofline call spelled the old way (it still works): the message says the new way.

    Its own class so a test suite can turn roofline's deprecations (and only those) into
    errors: ``filterwarnings = ["error::roofline.RooflineDeprecationWarning"]``.
    """


def table_renamed(obj: object) -> None:
    """Warn that ``obj.to_pandas()`` is now ``obj.to_pandas()`` (the one name of a result's
    table, on every result object); the old name still returns the same frame."""
    import warnings

    name = type(obj).__name__
    warnings.warn(f"{name}.to_pandas() is deprecated: call {name}.to_pandas() (the same table)",
                  RooflineDeprecationWarning, stacklevel=3)


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

    def __init__(self, message: str = "", matches: Sequence[str] = (),
                 argument: str | None = None, function: str | None = None,
                 ambiguous: bool = False) -> None:
        super().__init__(message)
        self.matches: tuple[str, ...] = tuple(matches)
        #: The argument that held the unknown name, when the raiser knows it (``"dtype"``).
        self.argument = argument
        #: The public function whose name prefixes the message (``"gemm"``), if any.
        self.function = function
        #: True when the name matches several entries (then :attr:`matches` lists them).
        self.ambiguous = ambiguous

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def close_matches(word: str, choices: Iterable[str], n: int = 5,
                  cutoff: float = 0.5) -> list[str]:
    """The choices closest to ``word`` (difflib), best first."""
    import difflib

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
