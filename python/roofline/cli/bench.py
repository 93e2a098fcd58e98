"""``roofline bench``: measure kernels on this machine into a JSON-lines file.

``add_parser(sub)`` adds it to the ``roofline`` parser (it sets ``func=run``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import CLIError

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "bench",
        help="measure real kernels with torch on this machine (JSON lines, shared schema)",
        description="Time GEMMs, grouped GEMMs, attention, norms, softmax, cross-entropy, "
        "elementwise ops, fp8 casts and launch overhead with torch on the local device; one "
        "JSON object per row, written and flushed as measured (Ctrl-C keeps them).",
    )
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="default: %(default)s")
    suite = p.add_mutually_exclusive_group()
    suite.add_argument("--quick", dest="suite", action="store_const", const="quick",
                       help="a few shapes per family (default)")
    suite.add_argument("--full", dest="suite", action="store_const", const="full",
                       help="many shapes per family")
    p.set_defaults(suite="quick")
    p.add_argument("--families", nargs="+", default=None, metavar="NAME",
                   help="families to run: gpu_gemm_bf16, gemm_bf16 or patterns such as "
                   "'gemm_*' (default: all; --list shows them)")
    p.add_argument("-o", "--out", default=None, metavar="FILE.jsonl",
                   help="write rows here (default: stdout)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--append", action="store_true", help="add rows to an existing file")
    mode.add_argument("--force", action="store_true", help="replace an existing file")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    p.add_argument("--list", action="store_true", help="print the family names and exit")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``roofline bench``; returns the exit status (130 after Ctrl-C)."""
    from ..bench import BenchInterrupted, family_names
    from ..bench import run as bench_run

    if args.list:
        print("\n".join(family_names(args.device)))
        return 0

    def to_stdout(row: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()

    try:
        result = bench_run(args.device, args.suite, args.families, args.out,
                           append=args.append, force=args.force,
                           progress=False if args.quiet else None,
                           on_row=None if args.out else to_stdout)
    except BenchInterrupted as exc:
        where = f" in {args.out}" if args.out else ""
        print(f"interrupted: kept {len(exc.rows)} rows{where}", file=sys.stderr)
        return 130
    except (FileExistsError, RuntimeError) as exc:
        raise CLIError(str(exc)) from None
    if not args.quiet:
        where = f" to {args.out}" if args.out else ""
        families = len({r["family"] for r in result})
        print(f"{len(result)} rows ({families} families) in {result.seconds:.1f} s{where}",
              file=sys.stderr)
        for s in result.skipped:
            cases = f" ({s.cases} cases)" if s.cases else ""
            print(f"skipped {s.family}{cases}: {s.reason}", file=sys.stderr)
    return 0
