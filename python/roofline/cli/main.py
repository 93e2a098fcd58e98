"""The ``roofline`` command: its parser (one subcommand per module of this package) and
:func:`main`, which runs a subcommand and turns bad input into one ``error: ...`` line on
stderr and exit status 2."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from .._version import __version__
from . import float8, gemm, hardware
from ._common import USAGE_ERROR, CLIError, cli_message, one_line

__all__ = ["build_parser", "main"]

#: Subcommands whose parsers are always built (their modules load with this one), in order.
_EAGER_COMMANDS = (float8, gemm, hardware)

#: Subcommands loaded on demand: (name, module of this package with add_parser, --help
#: line). build_parser imports only the module of the command being run.
_LAZY_COMMANDS = (
    ("model", "model",
     "one decode / prefill / training step of a transformer, per op, with memory"),
    ("fusion", "fusion",
     "what fusing, batching or re-associating ops saves (two plans side by side)"),
    ("explain", "explain",
     "a measured kernel time against its roofline and the model's prediction"),
    ("calibrate", "calibrate",
     "fit the model to measurements (a profile), or measure this machine"),
    ("plan", "plan",
     "search tp/pp/dp/ep/cp/ZeRO/recompute/offload layouts of a training or serving job"),
    ("explain-trace", "trace",
     "explain a PyTorch profiler trace kernel by kernel against the roofline"),
    ("bench", "bench",
     "measure real kernels with torch on this machine (JSON lines, shared schema)"),
    ("validate", "validate",
     "the model's error against measurement files (JSON lines), per family"),
)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`CLIError` instead of printing usage and exiting."""

    def error(self, message: str) -> Any:
        raise CLIError(f"{message} (see '{self.prog} --help')")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``roofline`` command (subcommands set ``func``).

    ``command``: the subcommand about to run; the others defined in their own modules get a
    placeholder (name and help line) instead of their full parser. Default: every parser.
    """
    parser = _Parser(
        prog="roofline",
        description="Predict how long ML kernels take on accelerators (roofline model with "
        "a shape-aware efficiency model).",
    )
    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for eager in _EAGER_COMMANDS:
        eager.add_parser(sub)
    for name, module, summary in _LAZY_COMMANDS:
        if command is None or command == name:
            importlib.import_module(f".{module}", __package__).add_parser(sub)
        else:  # listed in --help; its module (and its options) load only when it runs
            sub.add_parser(name, help=summary, add_help=False)

    _attach_flags(parser)
    return parser


def _flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> ``--option`` (or a positional's metavar) for one (sub)parser."""
    out: dict[str, str] = {}
    for action in parser._actions:
        if action.dest in ("help", "version", "func") or action.dest.startswith("_"):
            continue
        if action.option_strings:
            out[action.dest] = max(action.option_strings, key=len)
        elif isinstance(action.metavar, str):
            out[action.dest] = action.metavar
    return out


def _attach_flags(parser: argparse.ArgumentParser) -> None:
    """Give every leaf subcommand ``_flags`` (its dest -> flag map) for error messages."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        parser.set_defaults(_flags=_flags(parser))
        return
    for action in subs:
        for child in set(action.choices.values()):
            _attach_flags(child)


def main(argv: list[str] | None = None) -> int:
    """Run the ``roofline`` command with ``argv`` (default ``sys.argv[1:]``); return the exit
    status: 0 on success, 2 on bad input (after one ``error: ...`` line on stderr)."""
    args: argparse.Namespace | None = None
    try:
        argv = sys.argv[1:] if argv is None else argv
        command = next((a for a in argv if not a.startswith("-")), None)
        args = build_parser(command).parse_args(argv)
        status = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except CLIError as exc:
        message = str(exc)
    except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:  # bad input
        if isinstance(exc, TypeError) and not hasattr(exc, "argument"):
            raise  # a TypeError that no argument check raised is a bug: show its traceback
        message = cli_message(exc, getattr(args, "_flags", {}))
    except BrokenPipeError:  # e.g. `roofline float8 --shapes sweep | head` (status 1, as
        _silence_stdout()     # rich's console exits when it meets the closed pipe itself)
        return 1
    except KeyboardInterrupt:
        return 130
    print(f"error: {one_line(message)}", file=sys.stderr)
    return USAGE_ERROR


def _silence_stdout() -> None:
    """After a reader closed the pipe: send what is left to /dev/null, so the interpreter's
    final flush does not print a BrokenPipeError traceback."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
