"""Instructions per float8 linear of the default-model sweep, counted by callgrind.

Wall-clock rates on a shared 2-core machine move by tens of percent between runs; instruction
counts repeat exactly for the same build and inputs, so small changes to the core can be
compared. Runs ``rl.float8.linear`` (training, tensorwise, H100 SXM, default model, one thread)
on N random shapes and on 8 under ``valgrind --tool=callgrind``, and prints
(instructions(N) - instructions(8)) / (N - 8): the core's work per linear plus the per-point
share of validation and conversion, without interpreter start-up.

Run: ``PYTHONPATH=python python benchmarks/sweep_instructions.py [--points 20000]
[--low 256] [--high 65536]`` (needs valgrind; a few seconds per 1,000 points).
``--low 8192`` leaves out the small extents whose GEMMs run the split-K search.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile

_CHILD = """
import sys
import numpy as np
import roofline as rl
points, low, high = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
rng = np.random.default_rng(0)
s = np.exp(rng.uniform(np.log(low), np.log(high), size=(points, 3))).round()
rl.set_num_threads(1)
rl.float8.linear(s[:, 0].copy(), s[:, 1].copy(), s[:, 2].copy(), hardware=rl.hardware("H100 SXM"))
"""


def _instructions(points: int, low: float, high: float) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out",
             sys.executable, "-c", _CHILD, str(points), str(low), str(high)],
            capture_output=True, text=True, check=True)
    found = re.search(r"refs:\s+([\d,]+)", out.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no instruction count:\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000, help="shapes of the long run")
    parser.add_argument("--low", type=float, default=256.0, help="smallest extent")
    parser.add_argument("--high", type=float, default=65536.0, help="largest extent")
    args = parser.parse_args()
    if args.points <= 8:
        parser.error(f"--points must exceed 8, got {args.points}")
    if shutil.which("valgrind") is None:
        sys.exit("sweep_instructions.py needs valgrind (Debian: apt install valgrind)")
    long_run = _instructions(args.points, args.low, args.high)
    short_run = _instructions(8, args.low, args.high)
    per_linear = (long_run - short_run) / (args.points - 8)
    print(f"default-model training float8 linear (tensorwise, H100 SXM, 1 thread), "
          f"{args.points:,} shapes in [{args.low:g}, {args.high:g}]^3: "
          f"{per_linear:,.0f} instructions per linear")


if __name__ == "__main__":
    main()
