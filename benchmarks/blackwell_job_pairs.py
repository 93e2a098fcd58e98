"""The same Megatron-Bridge 25.11 job on B200, GB200 and GB300: measured against predicted ratios.

For every model and precision that Megatron-Bridge's 25.11 performance summary publishes on
more than one Blackwell system (rows ``mbridge2511_<gpu>_<model>`` of
``python/roofline/data/jobs/published_jobs.jsonl``), prints each GPU's measured and predicted
tokens/s/GPU, the GPU's throughput over the GB200's (measured and predicted), and the keys in
which the rows' configurations differ (``like-for-like`` when only the hardware and its
NVLink domain differ). For
the like-for-like pairs it splits one micro-batch of the predicted GPU time into the parts
whose rate follows the SM clock (GEMMs, attention and the LM head, which the settled-clock rule
of ``roofline.ops.sustained`` slows) and the rest, and prints the factor ``k`` by which the
GB200's clock-bound parts would have to run slower for the predicted ratio to equal the
measured one (``k = 1 + (gap - 1) / share``, ``share`` the clock-bound fraction of the GB200's
micro-batch; ``gap`` = measured ratio / predicted ratio), with the settled clock that implies
(the GB200's ``throttle_fraction / k``). Nothing here is fitted; it is a reading of the rows,
not a parameter (hardware-notes §19). Run:
``PYTHONPATH=python python benchmarks/blackwell_job_pairs.py``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from roofline import _core
from roofline.hardware import hardware
from roofline.ops.sustained import settled_clock
from roofline.validation.jobs import JOBS_FILE, job_estimate, price_job, read_jobs

GPUS = ("B200", "GB200", "GB300")
#: Config keys that describe the row or the system, not the run's choices: the NVLink domain
#: (``gpus_per_node``: 8 on a DGX B200, 72 on an NVL72 rack) comes with the hardware.
_IGNORED = frozenset({"assumptions", "gpus_per_node"})
#: Op kinds whose rate follows the SM clock in a training step (GEMMs and attention).
_CLOCK_KINDS = frozenset({"gemm", "linear", "attention"})


def pair_key(row_id: str) -> tuple[str, str] | None:
    """``(model_precision, gpu)`` of a Megatron-Bridge 25.11 Blackwell row id, else ``None``."""
    parts = row_id.split("_", 2)
    if len(parts) != 3 or parts[0] != "mbridge2511" or parts[1].upper() not in GPUS:
        return None
    return parts[2], parts[1].upper()


def config_diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Config keys whose values differ between two rows (``assumptions`` and
    ``gpus_per_node`` ignored)."""
    keys = (set(a) | set(b)) - _IGNORED
    return sorted(k for k in keys if a.get(k) != b.get(k))


def clock_share(row: dict[str, Any]) -> float:
    """Fraction of one micro-batch's predicted GPU time (busiest stage) in GEMMs and attention."""
    c = row["config"]
    est = job_estimate(row)
    model = est.config
    pp = int(c.get("pp", 1))
    stage = float(_core.busiest_stage_layers(model.num_layers, pp))
    clock = total = 0.0
    for (g, _name, kind), t in zip(est.rows, est.columns["time_s"], strict=True):
        gkind, layers = est.groups[g]
        share = 1.0 / pp if gkind == "head" else len(layers) * stage / model.num_layers
        total += float(t) * share
        if kind in _CLOCK_KINDS:
            clock += float(t) * share
    return clock / total


def pairs() -> list[dict[str, Any]]:
    """One entry per row of a model and precision published on two or more of the GPUs:
    ``name``, ``gpu``, ``row``, ``measured`` and ``predicted`` tokens/s/GPU, and against the
    GB200 row of the same name (``None`` for the GB200 itself or without one): ``meas_ratio``,
    ``pred_ratio`` (this GPU's throughput over the GB200's) and ``diff`` (config keys that
    differ)."""
    groups: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in read_jobs(JOBS_FILE):
        key = pair_key(str(row["id"]))
        if key is not None and row["config"].get("api") == "train":
            groups[key[0]][key[1]] = row
    out: list[dict[str, Any]] = []
    for name in sorted(groups):
        rows = groups[name]
        if len(rows) < 2:
            continue
        pred = {gpu: price_job(r) for gpu, r in rows.items()}
        ref = rows.get("GB200")
        for gpu in GPUS:
            r = rows.get(gpu)
            if r is None:
                continue
            e: dict[str, Any] = {"name": name, "gpu": gpu, "row": r,
                                 "measured": float(r["measured"]), "predicted": pred[gpu],
                                 "meas_ratio": None, "pred_ratio": None, "diff": None}
            if ref is not None and gpu != "GB200":
                e["meas_ratio"] = float(r["measured"]) / float(ref["measured"])
                e["pred_ratio"] = pred[gpu] / pred["GB200"]
                e["diff"] = config_diff(r["config"], ref["config"])
            out.append(e)
    return out


def main() -> None:
    clock = settled_clock(hardware("GB200"), "default")
    f_gb200 = clock[0] if clock is not None else 1.0
    entries = pairs()
    gb200 = {e["name"]: e["row"] for e in entries if e["gpu"] == "GB200"}
    print(f"{'model / precision':28s} {'gpu':6s} {'measured':>9s} {'predicted':>9s} {'error':>7s}"
          f" {'meas/GB200':>10s} {'pred/GB200':>10s}  config vs GB200")
    for e in entries:
        err = e["measured"] / e["predicted"] - 1.0
        line = (f"{e['name']:28s} {e['gpu']:6s} {e['measured']:9.0f} {e['predicted']:9.0f} "
                f"{err:+7.1%}")
        if e["meas_ratio"] is not None:
            diff = e["diff"]
            line += (f" {e['meas_ratio']:10.3f} {e['pred_ratio']:10.3f}  "
                     + ("like-for-like" if not diff else "differs: " + ", ".join(diff)))
            if not diff and e["gpu"] == "GB300":
                share = clock_share(gb200[e["name"]])
                k = 1.0 + (e["meas_ratio"] / e["pred_ratio"] - 1.0) / share
                line += (f"; GB200 clock-bound share {share:.2f}, needs k {k:.3f} "
                         f"(settled clock {f_gb200:.3f} -> {f_gb200 / k:.3f})")
        print(line)


if __name__ == "__main__":
    main()
