"""How fast the jobs validation runs, with and without the pricing memos, side by side.

Runs ``validate_jobs`` on the packaged ``published_jobs.jsonl`` in a fresh process per row:
this checkout with every memo of :mod:`roofline._params.memo` off (each serving step and each
step program's part priced afresh: the slow path), the same with them on, and, with
``--old ROOT``, another package root (e.g. an older checkout's ``python/``) on the same file.
Prints wall and CPU seconds per row and whether every row's prediction equals the first
row's (bit for bit).

Run: ``python benchmarks/jobs_speed.py [--old /path/to/python] [--repeat N]`` (the least CPU
time of N runs per row).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "python"

_CHILD = r"""
import contextlib, json, sys, time
sys.path.insert(0, {root!r})
from roofline.validation import jobs
off = contextlib.nullcontext()
if {memos_off!r}:
    from roofline._params.memo import memos_disabled
    off = memos_disabled()
wall, cpu = time.perf_counter(), time.process_time()
with off:
    res = jobs.validate_jobs(jobs.JOBS_FILE)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps(dict(wall=wall, cpu=cpu, predicted=[float(p) for p in res.jobs["predicted"]])))
"""


def _run(root: str, memos_off: bool) -> dict:
    code = _CHILD.format(root=root, memos_off=memos_off)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", help="another package root to time on the same file")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    rows = [("this, memos off (slow path)", str(ROOT), True),
            ("this, memos on", str(ROOT), False)]
    if args.old:
        rows.insert(0, (f"old ({args.old})", args.old, False))
    results = {}
    for name, root, off in rows:
        runs = [_run(root, off) for _ in range(args.repeat)]
        results[name] = min(runs, key=lambda r: r["cpu"])
    print(f"{'':40s} {'wall s':>8s} {'CPU s':>8s}  same predictions")
    first = next(iter(results.values()))["predicted"]
    for name, r in results.items():
        same = r["predicted"] == first
        print(f"{name:40s} {r['wall']:8.2f} {r['cpu']:8.2f}  {same} ({len(r['predicted'])} rows)")


if __name__ == "__main__":
    main()
