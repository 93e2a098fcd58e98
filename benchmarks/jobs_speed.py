"""How fast the jobs validation runs, with and without the pricing memos, side by side.

Runs ``validate_jobs`` on the packaged ``published_jobs.jsonl`` twice in one process: first
with every memo of :mod:`roofline._params.memo` off (each serving step and each step
program's parts priced afresh: the slow path), then with them on from empty; prints wall
and CPU seconds of each and whether every row's prediction is the same (bit for bit).

Run: ``python benchmarks/jobs_speed.py [--repeat N]`` (the least CPU time of N runs each).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from roofline._params.memo import clear_memos, memos_disabled  # noqa: E402
from roofline.validation import jobs  # noqa: E402


def _once() -> tuple[float, float, list[float]]:
    jobs._FINITE_RUNS.clear()  # the finite runs' medians: priced again in each run
    clear_memos()
    wall, cpu = time.perf_counter(), time.process_time()
    res = jobs.validate_jobs(jobs.JOBS_FILE)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, [float(p) for p in res.jobs["predicted"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    rows = {}
    for name in ("memos off (slow path)", "memos on"):
        best = None
        for _ in range(args.repeat):
            if name.startswith("memos off"):
                with memos_disabled():
                    got = _once()
            else:
                got = _once()
            if best is None or got[1] < best[1]:
                best = got
        assert best is not None
        rows[name] = best
    print(f"{'':24s} {'wall s':>8s} {'CPU s':>8s}")
    for name, (wall, cpu, _) in rows.items():
        print(f"{name:24s} {wall:8.2f} {cpu:8.2f}")
    slow, fast = (r[2] for r in rows.values())
    same = len(slow) == len(fast) and all(
        a == b or (a != a and b != b) for a, b in zip(slow, fast, strict=True))
    print(f"predictions identical: {same} ({len(fast)} rows)")


if __name__ == "__main__":
    main()
