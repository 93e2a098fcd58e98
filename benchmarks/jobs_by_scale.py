"""The training rows of the jobs validation by source and GPU count, and their loss with scale.

Prices every ``train`` row of the packaged ``published_jobs.jsonl`` in a fresh process per
package root (this checkout, and with ``--old ROOT`` another one, e.g. main's ``python/``)
and prints, side by side:

1. per (source, hardware, GPUs): rows, median |error| and bias (median signed error, + =
   predicted too slow) of each root;
2. per source: the median |error| of each root;
3. the scaling pairs: rows of one source table, hardware, model, sequence length and
   micro-batch that differ only in their GPUs; per pair, the published change of the
   per-GPU rate per doubling of the GPUs, ``(r2 / r1) ** (1 / log2(g2 / g1)) - 1``, beside
   each root's predicted one. A model that prices every cost of adding ranks reproduces
   the published column.

Run: ``python benchmarks/jobs_by_scale.py [--old /path/to/other/python]`` (about 15 s of CPU
per root).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1] / "python"

_CHILD = r"""
import json, sys
sys.path.insert(0, {root!r})
from roofline.validation import jobs
rows = {{r["id"]: r for r in jobs.read_jobs(jobs.JOBS_FILE)}}
res = jobs.validate_jobs(jobs.JOBS_FILE)
out = []
for _, j in res.jobs.iterrows():
    r = rows[j["id"]]
    c = r["config"]
    if c["api"] != "train":
        continue
    m = c.get("model")
    out.append(dict(id=j["id"], source=r["source"], label=j["source"], hardware=r["hardware"],
                    gpus=r["gpus"], micro_batch=c.get("micro_batch"), seq_len=c.get("seq_len"),
                    model=m.get("name") if isinstance(m, dict) else m,
                    measured=float(j["measured"]), predicted=float(j["predicted"]),
                    error=float(j["error"])))
print(json.dumps(out))
"""


def _run(root: str) -> dict[str, dict]:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(root=root)], capture_output=True,
                         text=True, check=True)
    return {r["id"]: r for r in json.loads(out.stdout.strip().splitlines()[-1])}


def _cell(errors: list[float]) -> str:
    return f"{100 * median(abs(e) for e in errors):6.1f}% {100 * median(errors):+6.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", help="another package root priced beside this checkout")
    args = ap.parse_args()
    roots = ([("old", args.old)] if args.old else []) + [("this", str(ROOT))]
    priced = {name: _run(root) for name, root in roots}
    base = priced[roots[-1][0]]
    ids = [i for i in base if all(i in p for p in priced.values())]
    head = "  ".join(f"{name:>14s}" for name, _ in roots)

    groups: dict[tuple[str, str, int], list[str]] = defaultdict(list)
    for i in ids:
        r = base[i]
        groups[(r["label"][:28], r["hardware"][:14], r["gpus"])].append(i)
    print(f"{'source':28s} {'hardware':14s} {'GPUs':>5s} {'rows':>4s}  {head}")
    for key in sorted(groups):
        cells = "  ".join(_cell([p[i]["error"] for i in groups[key]]) for p in priced.values())
        print(f"{key[0]:28s} {key[1]:14s} {key[2]:5d} {len(groups[key]):4d}  {cells}")

    print(f"\n{'source (median |error|)':50s} {'rows':>4s}  {head}")
    sources: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        sources[base[i]["label"]].append(i)
    for s in sorted(sources):
        cells = "  ".join(f"{100 * median(abs(p[i]['error']) for i in sources[s]):13.1f}%"
                          for p in priced.values())
        print(f"{s[:50]:50s} {len(sources[s]):4d}  {cells}")

    tables: dict[tuple, list[str]] = defaultdict(list)
    for i in ids:
        r = base[i]
        tables[(r["source"], r["hardware"], str(r["model"]), r["seq_len"],
                r["micro_batch"])].append(i)
    print("\nper-GPU rate change per doubling of the GPUs (same table, model, seq, micro-batch)")
    names = "  ".join(f"{name:>8s}" for name, _ in roots)
    print(f"{'model':28s} {'hardware':10s} {'GPUs':>9s}  {'published':>9s}  {names}")
    for key in sorted(tables, key=lambda k: (k[0], k[1], k[2])):
        rows = sorted(tables[key], key=lambda i: base[i]["gpus"])
        for a, b in zip(rows, rows[1:], strict=False):
            g1, g2 = base[a]["gpus"], base[b]["gpus"]
            if g2 == g1:
                continue
            k = 1.0 / math.log2(g2 / g1)

            def per_doubling(p: dict[str, dict], col: str, a: str = a, b: str = b,
                             k: float = k) -> float:
                return 100.0 * ((p[b][col] / p[a][col]) ** k - 1.0)

            pred = "  ".join(f"{per_doubling(p, 'predicted'):+7.1f}%" for p in priced.values())
            print(f"{key[2][:28]:28s} {key[1][:10]:10s} {g1:4d}>{g2:<4d}  "
                  f"{per_doubling(base, 'measured'):+8.1f}%  {pred}")


if __name__ == "__main__":
    main()
