"""What the ``roofline`` subcommands share: the error type and exit status, argparse types,
the hardware options and their resolution, library messages in CLI terms, and output (a rich
console, literal table cells, JSON, CSV and the metadata every JSON document records).

rich is imported only when a table is printed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..efficiency import PRESETS
from ..hardware import ENV_VAR, TABLES, Hardware
from ..hardware import hardware as lookup_hardware

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = [
    "FALLBACK_HARDWARE",
    "MAX_COUNT",
    "USAGE_ERROR",
    "CLIError",
    "add_hardware_options",
    "cli_message",
    "count",
    "error_message",
    "literal",
    "make_console",
    "meta",
    "mode",
    "note",
    "one_line",
    "require_matplotlib",
    "peak",
    "print_json",
    "resolve_hardware",
    "write_csv",
]

#: Hardware used when none is named, no GPU is detected and no default is set.
FALLBACK_HARDWARE = {"roofline": "H100 SXM", "torchao": "NVIDIA H100"}

#: Exit status for bad input (as argparse uses).
USAGE_ERROR = 2

#: Largest integer a CLI count accepts (beyond it a float64 no longer holds every integer).
MAX_COUNT = 2**53

#: Spellings of training / inference the CLI accepts wherever it asks for a mode or phase.
MODE_ALIASES = {"train": "training", "training": "training", "inference": "inference",
                "infer": "inference", "eval": "inference"}


class CLIError(Exception):
    """Bad command-line input; the message is printed as ``error: <message>``."""


# ------------------------------------------------------------------------- messages


def note(message: str) -> None:
    """Print ``note: <message>`` on stderr."""
    print(f"note: {message}", file=sys.stderr)


def require_matplotlib(flag: str) -> None:
    """Raise CLIError naming ``flag`` and the install command when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CLIError(f"{flag} needs matplotlib: pip install roofline[plot]") from None


def one_line(message: str) -> str:
    """``message`` with every run of whitespace (newlines too) as one space."""
    return " ".join(message.split())


def error_message(exc: BaseException) -> str:
    """The readable message of an exception (a plain KeyError's str() adds quotes)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def cli_message(exc: BaseException, flags: dict[str, str]) -> str:
    """A library error in CLI terms, from what the exception carries (no message parsing).

    An argument check's error (:class:`~roofline._errors.ArgumentValueError`, ...,
    :class:`~roofline.UnknownNameError`) carries ``argument``; ``flags`` maps argparse
    ``dest`` names to what the user typed (``--seq-len``, or the metavar ``M`` of a
    positional), so the message names the flag: ``--seq-len must be a positive integer, got
    0``. Other errors print as the library wrote them, less the ``function: `` prefix when the
    exception carries ``function``.
    """
    message = error_message(exc)
    argument = getattr(exc, "argument", None)
    function = getattr(exc, "function", None)
    detail = getattr(exc, "detail", None)
    if function and message.startswith(f"{function}: "):
        message = message[len(function) + 2:]
    if argument is not None and argument in flags:
        if detail is not None:  # the Python advice (exc.advice) is left out
            return f"{flags[argument]} {detail}"
        return f"{flags[argument]}: {message}"
    return message


# ------------------------------------------------------------------------- argument types


def count(flag: str, limit: int = MAX_COUNT, minimum: int = 1) -> Any:
    """An argparse ``type`` for an integer in [minimum, limit]; errors name ``flag``."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum or value > limit:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            bound = f" no larger than {limit:,}" if value > limit else ""
            raise argparse.ArgumentTypeError(f"must be {what}{bound}, got {text}")
        return value

    parse.__name__ = flag  # argparse names the type in some messages
    return parse


def mode(text: str) -> str:
    """``--mode`` values: train / training -> training; inference (eval) -> inference."""
    return MODE_ALIASES.get(text.strip().lower(), text)


# ------------------------------------------------------------------------- hardware


def add_hardware_options(p: argparse.ArgumentParser, efficiency: bool = True) -> None:
    """Add ``--hardware`` and ``--table`` (and ``--efficiency``) to a subcommand's parser."""
    p.add_argument(
        "--hardware",
        metavar="NAME",
        help="accelerator name or alias (see 'roofline hardware list'), or a JSON file in "
        "Hardware.to_dict() form; default: ROOFLINE_HARDWARE, else the detected GPU, "
        f"else {FALLBACK_HARDWARE['roofline']}",
    )
    p.add_argument(
        "--table",
        choices=TABLES,
        default="roofline",
        help="hardware table to look NAME up in: this project's database (default) or "
        "torchao's own table (for 1:1 comparisons with torchao)",
    )
    if efficiency:
        p.add_argument(
            "--efficiency",
            choices=PRESETS,
            default="default",
            help="efficiency model: 'default' (shape-aware), 'peak' (datasheet roofline) "
            "or 'torchao' (torchao's constants and byte counts); default: %(default)s",
        )


def resolve_hardware(name: str | None, table: str, flag: str = "--hardware") -> Hardware:
    """``--hardware`` (a name, or a ``.json`` file in ``Hardware.to_dict()`` form), else the
    detected GPU / ``set_default_hardware`` / ``ROOFLINE_HARDWARE``, else the fallback with a
    note on stderr. ``flag``: how errors name the argument the user typed the name in
    (``NAME`` for ``roofline hardware show NAME``)."""
    if name is not None and name.lower().endswith(".json"):
        try:
            return Hardware.from_file(name)
        except FileNotFoundError:
            raise CLIError(f"{flag}: cannot read {name}: No such file or directory") from None
        except OSError as exc:
            raise CLIError(f"{flag}: cannot read {name}: {exc.strerror or exc}") from None
    try:
        return lookup_hardware(name, table=table)
    except KeyError as exc:  # unknown, generic or ambiguous name (also a detected GPU's)
        listing = "roofline hardware list" + (" --table torchao" if table == "torchao" else "")
        where = f"{flag}: " if name is not None else ""
        close = getattr(exc, "matches", ())
        if getattr(exc, "ambiguous", False):
            shown = " or ".join(repr(c) for c in close)
            again = "--hardware " if flag.startswith("-") else ""
            raise CLIError(f"{flag}: {name!r} is ambiguous: pass {shown}, or {again}"
                           "'NVIDIA H100' --table torchao for torchao's numbers") from None
        hint = f"; close matches: {', '.join(close)}" if close else ""
        what = f"unknown hardware {name!r}{hint}" if name is not None else error_message(exc)
        raise CLIError(f"{where}{what} ('{listing}' shows the names; --hardware FILE.json, "
                       "in the form of 'roofline hardware show NAME --format json', describes "
                       "your own device.)") from None
    except RuntimeError:  # HardwareNotSpecifiedError: no GPU, no default, no ROOFLINE_HARDWARE
        if name is not None:
            raise
        fallback = FALLBACK_HARDWARE[table]
        note(
            f"no GPU detected and no default set; using {fallback} "
            f"(pass --hardware or set {ENV_VAR})"
        )
        return lookup_hardware(fallback, table=table)


def peak(hw: Hardware, peak_class: str) -> float | None:
    """The dense peak of ``peak_class`` (bf16, fp8, ...) in FLOP/s, or None if unknown."""
    value: float | None = getattr(hw, f"{peak_class}_flops_per_s")
    return value


# ------------------------------------------------------------------------- output


def make_console() -> Console:
    """A rich console on stdout; wide when stdout is not a terminal, so tables never wrap.

    Its ``print`` keeps every table cell whole (:func:`keep_cells_whole`): in a narrow
    terminal text columns wrap at spaces, long words fold, numbers never shrink, and nothing
    is cut to ``…``. A table too wide for the terminal first loses the columns named in
    ``table.droppable`` (a list of headers, the first dropped first; the caption says which),
    then is printed at the narrowest width that keeps every cell whole (the terminal wraps
    its lines; the numbers stay whole).
    """
    from rich.console import Console
    from rich.table import Table

    class _WholeCells(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            for obj in objects:
                if isinstance(obj, Table):
                    need = drop_columns(obj, self.width, keep_cells_whole(obj, self))
                    natural = Console(width=100_000).measure(obj).maximum
                    if natural > self.width:  # rich's own squeeze stops short (and crops)
                        for col in obj.columns:  # fixed widths: every cell's minimum ...
                            col.width = col.min_width
                        _widen_text(obj, self.width - need)  # ... and the slack to the text
                    if need > self.width:  # at the narrowest width that keeps cells whole
                        wide = Console(width=need, highlight=False, file=self.file,
                                       force_terminal=self.is_terminal,
                                       color_system="auto" if self.color_system else None)
                        wide.print(obj, **kwargs)
                        continue
                super().print(obj, **kwargs)

    wide = "COLUMNS" not in os.environ and not _isatty(sys.stdout)
    return _WholeCells(width=240 if wide else None, highlight=False)


def _widen_text(table: Any, slack: int) -> None:
    """Give ``slack`` columns of width to the table's left-justified (text) columns, each up
    to its widest cell, first column first."""
    from rich.text import Text

    for col in table.columns:
        if slack <= 0:
            return
        if col.justify == "right":
            continue
        cells = [c.plain if isinstance(c, Text) else str(c) for c in col._cells]
        longest = max((len(c) for c in cells), default=0)
        extra = min(slack, max(longest - (col.width or 0), 0))
        col.width = (col.width or 0) + extra
        slack -= extra


def drop_columns(table: Any, width: int, need: int) -> int:
    """Remove ``table.droppable``'s columns (headers, first dropped first) until the table's
    whole cells fit ``width``; name them in the caption; return the width still needed."""
    dropped = []
    for header in getattr(table, "droppable", ()):
        if need <= width:
            break
        for i, col in enumerate(table.columns):
            if (col.header.plain if hasattr(col.header, "plain") else str(col.header)) == header:
                del table.columns[i]
                need = keep_cells_whole(table, None)
                dropped.append(header)
                break
    if dropped:
        note = (f"left out at this width: {', '.join(dropped)} (a wider terminal, or "
                "--format csv / json, shows every column)")
        table.caption = f"{table.caption}\n{note}" if table.caption else note
    return need


def keep_cells_whole(table: Any, console: Any) -> int:
    """Set ``table``'s columns so that no cell is ever cut to ``…``; return the width the table
    needs at least.

    Right-justified (numeric) columns get ``min_width`` = their widest cell, so a number
    never wraps or shrinks; text columns get their longest word, so they wrap at spaces only;
    headers count with their longest word (as rich measures them); every column folds instead
    of cutting (``overflow="fold"``). The width returned is the sum of those minimums with
    padding and borders: at that width or more, rich lays the table out without cutting.
    """
    from rich.text import Text

    need = 0
    for col in table.columns:
        col.overflow = "fold"
        cells = [c.plain if isinstance(c, Text) else str(c) for c in col._cells]
        if col.justify == "right":
            widest = max((len(c) for c in cells), default=0)
        else:
            widest = max((len(w) for c in cells for w in c.split()), default=0)
        header = col.header.plain if isinstance(col.header, Text) else str(col.header)
        widest = max([widest, *(len(w) for w in header.split())])  # as rich measures it
        col.min_width = max(col.min_width or 0, widest)
        need += col.min_width + 2  # one space of padding on each side
    return int(need + table._extra_width)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def literal(value: object, style: str = "") -> Text:
    """A table cell taken literally (no rich markup in database strings)."""
    from rich.text import Text

    return Text(str(value), style=style)


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout (NaN and infinity refused)."""
    json.dump(data, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number ``json`` can write."""
    return value.item() if hasattr(value, "item") else value


def meta(args: argparse.Namespace, hw: Hardware, **extra: Any) -> dict[str, Any]:
    """What every JSON document records: version, command, hardware, efficiency, options."""
    out: dict[str, Any] = {"roofline_version": __version__, "command": args.command,
                           "hardware": hw.name, "hardware_table": hw.table}
    if hasattr(args, "efficiency"):
        out["efficiency"] = args.efficiency
    out.update(extra)
    return out


def write_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    """``rows`` as CSV on stdout with a header of ``columns`` (None as an empty cell)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else _plain(row.get(c)) for c in columns])
