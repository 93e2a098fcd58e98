"""The ``roofline`` command line (console script ``roofline = roofline.cli:main``, and
``python -m roofline``).

One module per subcommand (``float8``, ``gemm``, ``hardware``, ``model``, ``fusion``,
``explain``, ``calibrate``, ``plan``, ``trace`` for ``explain-trace``, ``bench``,
``validate``), each with ``add_parser(subparsers)``; ``main`` assembles the parser and runs
the command; ``_common`` holds what they share. Tables use rich (imported only when a table is
printed); ``--format csv|json`` prints machine-readable SI values and nothing else on stdout.
Bad input prints one ``error: ...`` line on stderr and exits 2.
"""

from .main import main

__all__ = ["main"]
