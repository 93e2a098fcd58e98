"""Wall time of each ``roofline`` CLI command, as a person waits for it (subprocess, cold).

Run: ``PYTHONPATH=python python benchmarks/cli_speed.py [--repeat 7]``. Every command runs in
a fresh interpreter (``python -m roofline ...``) with ``ROOFLINE_HARDWARE`` set (so no GPU
detection runs); the table shows the median and the minimum of ``--repeat`` runs, and the
interpreter's own start (``python -c pass``) and ``import numpy`` for scale. Target: every
command under 0.5 s on the 2-core development machine. Times vary with machine load: read
the minimum as the cost, the median as what one waits on a busy machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = [
    ["float8"],
    ["float8", "--format", "csv"],
    ["float8", "--format", "json"],
    ["gemm", "4096", "4096", "4096"],
    ["hardware", "list"],
    ["hardware", "show", "H100 SXM"],
    ["model", "Llama-3-8B", "--kv-len", "4096", "--batch", "8"],
    ["explain", "gemm", "4096", "4096", "4096", "--measured-us", "200"],
    ["explain", "attention", "8", "32", "1", "4096", "128", "--kv-heads", "8",
     "--measured-us", "50"],
]


def wall(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.perf_counter() - t0


def measure(repeat: int) -> list[tuple[str, float, float]]:
    """(label, median s, min s) per command, with ROOFLINE_HARDWARE=H100 SXM."""
    env = {**os.environ, "ROOFLINE_HARDWARE": "H100 SXM",
           "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # With the bytecode cache a user has: PYTHONDONTWRITEBYTECODE would recompile every module.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    rows = []
    base = [("python -c pass", [sys.executable, "-c", "pass"]),
            ("python -c 'import numpy'", [sys.executable, "-c", "import numpy"])]
    cmds = base + [("roofline " + " ".join(c), [sys.executable, "-m", "roofline", *c])
                   for c in COMMANDS]
    for label, argv in cmds:
        wall(argv, env)  # warm-up: writes the bytecode cache
        times = [wall(argv, env) for _ in range(repeat)]
        rows.append((label, statistics.median(times), min(times)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rows = measure(args.repeat)
    print(f"CLI wall time, ROOFLINE_HARDWARE='H100 SXM', {args.repeat} runs each "
          f"({os.cpu_count()} cores)")
    print(f"{'command':<72} {'median':>8} {'min':>8}")
    for label, med, best in rows:
        flag = "" if label.startswith("python") or med < 0.5 else "  > 0.5 s"
        print(f"{label:<72} {med:>7.3f}s {best:>7.3f}s{flag}")


if __name__ == "__main__":
    main()
