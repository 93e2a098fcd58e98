"""Whole jobs against published figures: training throughput and serving, per family and source.

A jobs file has one JSON object per line (schema of ``data/jobs/published_jobs.jsonl``):
``id``, ``family``, ``hardware``, ``gpus``, ``config`` (the model, the parallel layout, the
precision and ``api``: which question the figure answers), ``measured``, ``unit``, ``source``,
``notes``. :func:`price_job` answers one row's question with ``rl.transformer.estimate`` /
``serve``; :func:`validate_jobs` scores every row and summarises the error per family and per
source.

The error is ``predicted time / measured time - 1`` (``+`` = predicted too slow), the sign
convention of the kernel validation: for a throughput row the time is ``1 / throughput``, so
the error is ``measured / predicted - 1``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._checks import positive_int
from ..efficiency import EfficiencyLike
from ..hardware import Hardware
from ..transformer.config import TransformerConfig, config
from ..transformer.estimate import estimate
from ..transformer.planner.serve import serve
from .compare import Comparison
from .report import ValidationResult

if TYPE_CHECKING:
    import pandas as pd

    from ..transformer.report import ModelEstimate

__all__ = ["APIS", "JOBS_FILE", "JobsValidation", "batch_throughput", "is_jobs_file",
           "is_jobs_input", "is_jobs_row", "job_estimate", "price_job", "read_jobs",
           "serve_max_throughput",
           "source_label", "validate_jobs"]

#: The published figures shipped with the package (see its README).
JOBS_FILE = Path(__file__).resolve().parent.parent / "data" / "jobs" / "published_jobs.jsonl"

#: Questions a row may ask (``config.api``) and the units each may be given in.
APIS: dict[str, tuple[str, ...]] = {
    "train": ("tokens/s/GPU",),
    "serve_max_throughput": ("output tokens/s (whole TP group)",),
    "serve_ttft": ("s", "ms"),
    "serve_itl": ("s", "ms"),
    "batch_e2e_latency": ("s", "ms"),
    "batch_throughput": ("output tokens/s (whole TP group)",),
}
_THROUGHPUT = {"train", "serve_max_throughput", "batch_throughput"}
_REQUIRED = ("id", "family", "hardware", "gpus", "config", "measured", "unit", "source")
_TRAIN_KEYS = ("seq_len", "micro_batch", "grad_accum", "dp", "tp", "pp", "cp", "ep",
               "virtual_stages", "zero", "recompute", "sequence_parallel", "gpus_per_node",
               "runtime", "tp_comm_overlap", "overlap_param_gather",
               "cuda_graph_scope", "moe_load_balancing", "moe_expert_bias", "moe_dispatcher",
               "moe_router", "moe_capacity_factor", "moe_pad_to_capacity", "megatron_core",
               "moe_a2a_overlap", "moe_permute_fusion", "moe_shared_overlap",
               "reduce_dtype", "reshard_after_forward", "network_bytes_per_s",
               "attention_backend", "optimizer", "fsdp", "train_metrics", "modules",
               "clip_grad_norm", "offload_layers", "host_bytes_per_s", "pipeline_head",
               "cross_entropy", "mlp_activation", "check_for_nan_in_grad",
               "fp8_param_gather", "cp_comm")
#: Optional ``serve`` arguments a serving row may set (the engine's scheduler, program and
#: launch mode).
#: Config keys that describe a row, not the run it prices (a finite run's TTFT and ITL rows
#: differ only in these).
_NOT_RUN_KEYS = frozenset({"api", "assumptions", "engine"})
#: Medians (TTFT, ITL) of the finite serving runs priced so far, by the run's configuration,
#: hardware and efficiency preset (a benchmark reports both from one run).
_FINITE_RUNS: dict[tuple[str, str], tuple[float, float]] = {}
_SERVE_KEYS = ("runtime", "token_budget", "kv_admission", "page_tokens", "chunk_tokens",
               "decode_kv_reads", "arrivals", "cuda_graphs", "gated_mlp", "allreduce",
               "attention_plugin", "lengths")
#: Most concurrent requests trtllm-bench lets a maximum-throughput run hold (its tuning caps the
#: batch at 4096 before rounding; the CUDA-graph batch list reaches 8192).
_SERVE_MAX_CONCURRENCY = 4096


def is_jobs_row(row: Any) -> bool:
    """A row in the jobs schema: an object with ``config`` (an object) and no ``op``."""
    return isinstance(row, Mapping) and isinstance(row.get("config"), Mapping) and (
        "op" not in row)


def is_jobs_file(path: str | os.PathLike[str]) -> bool:
    """Whether the first non-blank line of ``path`` is a jobs row (detected by schema)."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return is_jobs_row(json.loads(line))
    except (OSError, ValueError, RecursionError):
        return False
    return False


def is_jobs_input(source: Any) -> bool:
    """Whether ``source`` (a path, or a list of row dicts) holds whole-job rows."""
    if isinstance(source, (str, os.PathLike)):
        return Path(source).is_file() and is_jobs_file(source)
    if isinstance(source, (list, tuple)) and source:
        return is_jobs_row(source[0])
    return False


def _check_row(row: Any, where: str) -> dict[str, Any]:
    fn = "read_jobs"
    if not isinstance(row, Mapping):
        raise ValueError(f"{fn}: {where}: a row must be a JSON object, got {type(row).__name__}")
    missing = [k for k in _REQUIRED if k not in row]
    if missing:
        raise ValueError(f"{fn}: {where}: missing {', '.join(missing)}")
    rid = row["id"]
    if not isinstance(row["config"], Mapping):
        raise ValueError(f"{fn}: {where} ({rid}): config must be an object, got "
                         f"{row['config']!r:.60}")
    api = row["config"].get("api")
    if not isinstance(api, str) or api not in APIS:
        raise ValueError(f"{fn}: {where} ({rid}): config.api must be one of {tuple(APIS)}, "
                         f"got {api!r:.60}")
    if not isinstance(row["unit"], str) or row["unit"] not in APIS[api]:
        raise ValueError(f"{fn}: {where} ({rid}): unit for api {api!r} must be one of "
                         f"{APIS[api]}, got {row['unit']!r}")
    value = row["measured"]
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{fn}: {where} ({rid}): measured must be a positive finite number, "
                         f"got {value!r}")
    gpus = row["gpus"]
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ValueError(f"{fn}: {where} ({rid}): gpus must be a positive integer, got {gpus!r}")
    hw = row["hardware"]
    if not (isinstance(hw, str) and hw.strip()) and not isinstance(hw, Hardware):
        raise ValueError(f"{fn}: {where} ({rid}): hardware must be a hardware name (e.g. "
                         f"'H100 SXM'), got {hw!r:.60}")
    return dict(row)


def read_jobs(source: str | os.PathLike[str] | Iterable[Mapping[str, Any]]
              ) -> list[dict[str, Any]]:
    """Rows of a jobs file (or an iterable of row dicts), checked.

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    ValueError
        A line that is not JSON, a row missing one of ``id``, ``family``, ``hardware``,
        ``gpus``, ``config``, ``measured``, ``unit``, ``source``, an unknown ``config.api``,
        a unit that does not fit it, or a ``measured`` that is not a positive finite number;
        the message names the file and line (or row index) and the row id.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"read_jobs: no such file: {str(path)!r}")
        rows = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as exc:
                raise ValueError(f"read_jobs: {path}:{number}: not JSON ({str(exc)[:100]})"
                                 ) from None
            rows.append(_check_row(row, f"{path}:{number}"))
        return rows
    return [_check_row(r, f"row {i}") for i, r in enumerate(source)]


def source_label(source: str) -> str:
    """``owner/repo path`` of a source string (commit and table dropped), or the URL host."""
    head = str(source).split(" @ ")[0].strip()
    return head.removeprefix("github.com/").removeprefix("https://").removeprefix("http://")


def _model(spec: Any, rid: str, mtp_layers: Any) -> TransformerConfig:
    if isinstance(spec, Mapping):
        try:
            cfg = TransformerConfig(**spec)
        except TypeError as exc:
            raise ValueError(f"price_job: {rid}: config.model: {exc}") from None
    elif isinstance(spec, str):
        cfg = config(spec)
    else:
        raise ValueError(f"price_job: {rid}: config.model must be a built-in name or an object "
                         f"of TransformerConfig fields, got {spec!r:.60}")
    if mtp_layers is not None:
        cfg = cfg.replace(mtp_layers=mtp_layers)
    return cfg


def _kv_dtype(c: Mapping[str, Any]) -> str | None:
    kv = c.get("kv_dtype")
    return None if kv is None else str(kv)


def price_job(row: Mapping[str, Any], efficiency: EfficiencyLike = "default") -> float:
    """The model's answer to one row's question, in the row's unit.

    ``train``: ``estimate(phase="train", ...)`` with the row's layout; tokens/s of the job
    divided by its GPUs. ``serve_max_throughput``: :func:`serve_max_throughput`, or, when the
    row gives ``num_requests`` (a finite benchmark run), ``serve(num_requests=...)``'s
    ``tokens_per_s`` (output tokens / makespan; all sent at once unless ``request_rate``).
    ``serve_ttft`` / ``serve_itl``: ``ttft_s`` / ``tpot_s`` (the mean engine step) of
    ``serve`` at the row's ``batch`` (the concurrency), or at the concurrency its
    ``request_rate`` (requests/s) sustains; with ``num_requests`` (a finite run at that
    rate, or all at once without one, ``sglang.bench_serving``'s ``--num-prompts``; other
    row kinds refuse it), the run's median TTFT / ITL
    (``ttft_median_s`` / ``itl_median_s``: what the benchmark reports), under the engine's
    scheduler (``runtime``). ``batch_e2e_latency``: prefill of ``batch``
    prompts plus ``output_len`` decode steps at the mean context. ``batch_throughput``:
    :func:`batch_throughput`. Serving rows may set ``serve``'s ``runtime``,
    ``token_budget``, ``kv_admission``, ``page_tokens``, ``chunk_tokens``,
    ``decode_kv_reads``, ``arrivals``, ``lengths``, ``gated_mlp``, ``allreduce``,
    ``attention_plugin`` and ``cuda_graphs``
    (``false``: the engine launches its steps kernel by kernel, e.g. TensorRT-LLM v0.5's
    context step, so a step lasts at least the host's issue time of its kernels).

    Raises
    ------
    ValueError, TypeError, NotImplementedError
        A row marked ``not_expressible`` (with its reason), or a configuration the API
        refuses or does not model (the message starts ``price_job: <row id>:`` and names the
        config key).
    """
    rid = str(row.get("id", "?"))
    try:
        return _price_job(row, rid, efficiency)
    except (ValueError, TypeError, LookupError, NotImplementedError) as exc:
        raise _naming(exc, rid) from None


def job_estimate(row: Mapping[str, Any], efficiency: EfficiencyLike = "default"
                 ) -> ModelEstimate:
    """The :func:`~roofline.transformer.estimate` of a ``train`` row, as :func:`price_job`
    prices it (its model, hardware, recipe and layout keys): the op-by-op step behind the
    row's tokens/s/GPU. Errors as :func:`price_job`'s."""
    rid = str(row.get("id", "?"))
    try:
        c = row["config"]
        if c.get("not_expressible"):
            raise ValueError(f"price_job: {rid}: not expressible: {c['not_expressible']}")
        if c.get("api") != "train":
            raise ValueError(f"price_job: {rid}: job_estimate takes a train row, got api="
                             f"{c.get('api')!r}")
        return _train_estimate(row, rid, efficiency)
    except (ValueError, TypeError, LookupError, NotImplementedError) as exc:
        raise _naming(exc, rid) from None


def _naming(exc: Exception, rid: str) -> Exception:
    """``exc`` (class and attributes kept) with its message naming the row."""
    if not str(exc).startswith("price_job:") and exc.args:
        exc.args = (f"price_job: {rid}: {exc}", *exc.args[1:])
    return exc


def _train_estimate(row: Mapping[str, Any], rid: str, efficiency: EfficiencyLike
                    ) -> ModelEstimate:
    """The training estimate of row ``rid`` (errors not yet prefixed)."""
    c = row["config"]
    missing = [k for k in ("seq_len", "micro_batch") if k not in c]
    if missing:
        raise ValueError(f"price_job: {rid}: a train row needs config {', '.join(missing)}")
    kw = {k: c[k] for k in _TRAIN_KEYS if k in c}
    return estimate(_model(c.get("model"), rid, c.get("mtp_layers")), "train",
                    hardware=row["hardware"], linear_recipe=c.get("linear_recipe"),
                    efficiency=efficiency, **kw)


def _price_job(row: Mapping[str, Any], rid: str, efficiency: EfficiencyLike) -> float:
    """:func:`price_job` of a row whose id is ``rid`` (errors not yet prefixed)."""
    c = row["config"]
    if c.get("not_expressible"):
        raise ValueError(f"price_job: {rid}: not expressible: {c['not_expressible']}")
    api = c["api"]
    if api == "train":
        est = _train_estimate(row, rid, efficiency)
        assert est.step is not None
        gpus = est.step.gpus
        if gpus != row["gpus"]:
            raise ValueError(f"price_job: {rid}: the layout uses dp·tp·pp·cp = {gpus} GPUs, "
                             f"the row says gpus={row['gpus']}")
        return float(est.step.tokens_per_s / gpus)
    cfg = _model(c.get("model"), rid, c.get("mtp_layers"))
    hw = row["hardware"]
    recipe = c.get("linear_recipe")
    skw: dict[str, Any] = dict(prompt_len=c.get("prompt_len"), output_len=c.get("output_len"),
                               tp=c.get("tp", 1), ep=c.get("ep", 1), linear_recipe=recipe,
                               kv_dtype=_kv_dtype(c),
                               memory_fraction=c.get("memory_fraction", 0.9),
                               efficiency=efficiency,
                               **{k: c[k] for k in _SERVE_KEYS if c.get(k) is not None})
    if skw["prompt_len"] is None or skw["output_len"] is None:
        raise ValueError(f"price_job: {rid}: a serving row needs config prompt_len and "
                         "output_len")
    for length in ("prompt_len", "output_len"):  # this function's arithmetic uses them
        positive_int(f"price_job: {rid}", f"config.{length}", skw[length])
    if api == "serve_max_throughput":
        n = c.get("num_requests")
        if n is not None:  # a finite benchmark run: N requests at once (or at request_rate)
            df = serve(cfg, hw, num_requests=n, request_rate=c.get("request_rate"), **skw)
            return float(df["tokens_per_s"].iloc[0])
        return serve_max_throughput(cfg, hw, rid=rid, **skw)
    scale = 1e3 if row["unit"] == "ms" else 1.0
    rate = c.get("request_rate")
    if c.get("num_requests") is not None and api not in ("serve_ttft", "serve_itl"):
        raise ValueError(f"price_job: {rid}: config num_requests={c['num_requests']!r} sets a "
                         "finite run, which serve_max_throughput, serve_ttft and serve_itl "
                         f"rows price; not {api}")
    if api in ("serve_ttft", "serve_itl") and c.get("num_requests") is not None:
        # a finite run at the row's rate, or sent all at once without one; a benchmark's
        # TTFT and ITL rows come from the same run, simulated once
        key = (json.dumps([{k: v for k, v in c.items() if k not in _NOT_RUN_KEYS}, hw],
                          sort_keys=True, default=repr), efficiency) \
            if isinstance(efficiency, str) else None
        medians = _FINITE_RUNS.get(key) if key is not None else None
        if medians is None:
            df = serve(cfg, hw, request_rate=rate, num_requests=c["num_requests"], **skw)
            medians = (float(df["ttft_median_s"].iloc[0]), float(df["itl_median_s"].iloc[0]))
            if key is not None:
                if len(_FINITE_RUNS) >= 32:
                    _FINITE_RUNS.clear()
                _FINITE_RUNS[key] = medians
        return medians[0 if api == "serve_ttft" else 1] * scale
    if api in ("serve_ttft", "serve_itl") and rate is not None:
        df = serve(cfg, hw, request_rate=rate, **skw)
        col = "ttft_s" if api == "serve_ttft" else "tpot_s"
        return float(df[col].iloc[0]) * scale
    batch = c.get("batch")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"price_job: {rid}: {api} needs config batch (a positive integer), "
                         f"got {batch!r}")
    if api == "batch_throughput":
        return batch_throughput(cfg, hw, batch=batch, **skw)
    df = serve(cfg, hw, batches=(batch,), **skw)
    if api == "serve_ttft":
        return float(df["ttft_s"].iloc[0]) * scale
    if api == "serve_itl":  # the mean step, mixed (prefill-carrying) steps included
        return float(df["tpot_s"].iloc[0]) * scale
    e2e = batch * df.attrs["prefill_s"] + skw["output_len"] * float(df["decode_step_s"].iloc[0])
    return float(e2e * scale)


def serve_max_throughput(cfg: TransformerConfig, hardware: Any, *, rid: str = "?",
                         **kw: Any) -> float:
    """Output tokens/s of one replica at the highest concurrency its KV cache admits.

    An offline maximum-throughput run (trtllm-bench at an infinite request rate) keeps the
    engine full: as many requests run as the KV cache admits (``serve``'s
    ``attrs["max_batch"]`` for the row's prompt / output lengths, at most 4096), each
    finished request replaced at once. Throughput rises with concurrency in the steady
    state (the weights are read once per step for more tokens), so that concurrency is the
    maximum; ``kw`` are :func:`~roofline.transformer.serve`'s arguments. The engine runs
    full, step after step, for minutes: its GEMMs and attention run at the power limiter's
    settled clock (``serve(sustained_clock=True)``), as a training step's do.

    Raises
    ------
    ValueError
        Not even one request's KV cache fits next to the weights (names the row id).
    """
    kw = {"sustained_clock": True, **kw}
    probe = serve(cfg, hardware, batches=(1,), **kw)
    n = min(int(probe.attrs["max_batch"]), _SERVE_MAX_CONCURRENCY)
    if n < 1:
        raise ValueError(f"price_job: {rid}: no request fits in memory (weights "
                         f"{probe['weights_gb'].iloc[0]:.1f} GB per GPU)")
    df = serve(cfg, hardware, batches=(n,), **kw)
    return float(df["tokens_per_s"].iloc[0])


def batch_throughput(cfg: TransformerConfig, hardware: Any, *, batch: int, prompt_len: int,
                     output_len: int, tp: int = 1, ep: int = 1, linear_recipe: str | None = None,
                     kv_dtype: str | None = None, efficiency: EfficiencyLike = "default",
                     runtime: str | None = None, decode_kv_reads: str | None = None,
                     gated_mlp: str | None = None, allreduce: str | None = None,
                     **_: Any) -> float:
    """Output tokens/s of one static batch (TensorRT-LLM's ``gptSessionBenchmark``).

    ``batch`` prompts of ``prompt_len`` tokens are prefilled together in one step (which
    emits each request's first token), then ``output_len - 1`` decode steps of all
    ``batch`` requests follow at the mean context ``prompt_len + output_len / 2``, each
    launched as one CUDA graph; no request leaves or joins. Throughput =
    ``batch · output_len / (prefill + (output_len - 1) · decode step)``. Scheduler arguments
    of ``serve`` (``memory_fraction``, ``token_budget``, ...) do not apply and are ignored;
    ``decode_kv_reads`` is ``estimate``'s (the decode attention kernel's KV reads), and
    ``gated_mlp`` / ``allreduce`` are ``estimate``'s program choices for both steps.
    """
    kw: dict[str, Any] = dict(hardware=hardware, tp=tp, ep=ep, linear_recipe=linear_recipe,
                              kv_dtype=kv_dtype, efficiency=efficiency)
    if runtime is not None:
        kw["runtime"] = runtime
    if gated_mlp is not None:
        kw["gated_mlp"] = gated_mlp
    if allreduce is not None:
        kw["allreduce"] = allreduce
    prefill = estimate(cfg, "prefill", batch, seq_len=prompt_len, **kw).wall_s
    if decode_kv_reads is not None:
        kw["decode_kv_reads"] = decode_kv_reads
    decode = estimate(cfg, "decode", batch, kv_len=prompt_len + max(output_len // 2, 1),
                      launch="graph", **kw).wall_s
    return float(batch * output_len / (prefill + (output_len - 1) * decode))


def _error(api: str, measured: float, predicted: float) -> float:
    """Predicted time / measured time - 1."""
    return measured / predicted - 1.0 if api in _THROUGHPUT else predicted / measured - 1.0


def _stats(err: np.ndarray) -> dict[str, float]:
    return {"rows": int(err.size), "median": float(np.median(np.abs(err))),
            "p90": float(np.percentile(np.abs(err), 90)), "bias": float(np.median(err))}


class JobsValidation(ValidationResult):
    """What :func:`validate_jobs` found (a :class:`ValidationResult` for whole jobs).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per family, then one per source, then all jobs: ``by`` (``"family"``,
        ``"source"`` or ``"all"``), ``family`` (the family or source name), ``rows`` and
        ``<model>_median`` / ``_p90`` (absolute error) / ``_bias`` (median signed error,
        + = predicted too slow).
    jobs : pandas.DataFrame
        One row per priced job: ``id``, ``family``, ``source``, ``api``, ``unit``,
        ``measured``, ``predicted``, ``error``.
    unmapped, errors : pandas.DataFrame
        Rows marked ``not_expressible`` (with the reason) and rows whose pricing raised.
    held_out : None
        Nothing in the job model is fitted to these rows yet, so there is no "fit on some
        sources, score the others" split to report; every error above is out of sample.
    """

    jobs: pd.DataFrame
    held_out: None = None

    def to_pandas(self) -> pd.DataFrame:
        """The per-job predictions (see ``jobs``)."""
        return self.jobs


def validate_jobs(source: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
                  efficiency: EfficiencyLike = "default") -> JobsValidation:
    """Price every row of a jobs file and summarise the error per family and per source.

    Parameters
    ----------
    source : path or iterable of dict
        A jobs file (schema of ``JOBS_FILE``) or its rows.
    efficiency : str or Efficiency
        Efficiency model of every kernel.

    Returns
    -------
    JobsValidation
        ``table`` (per family, per source, all), ``jobs`` (per row), ``unmapped`` (rows
        marked not expressible, with the reason), ``errors`` (rows whose pricing raised),
        ``plot()``.
    """
    import pandas as pd

    rows = read_jobs(source)
    if not rows:
        raise ValueError("validate: the jobs input has no rows")
    label = efficiency if isinstance(efficiency, str) else "model"
    file = Path(source).name if isinstance(source, (str, os.PathLike)) else "rows"
    priced, unmapped, errors = [], [], []
    comps: list[tuple[str, Comparison]] = []
    for row in rows:
        c = row["config"]
        rid, fam, api = str(row["id"]), str(row["family"]), str(c["api"])
        if c.get("not_expressible"):
            unmapped.append({"file": file, "family": fam, "id": rid,
                             "reason": str(c["not_expressible"])})
            continue
        try:
            pred = price_job(row, efficiency)
        except (ValueError, TypeError, KeyError, NotImplementedError) as exc:  # (the last: a
            # layout a runtime does not model, e.g. runtime='hf' with tp > 1)
            errors.append({"file": file, "family": fam, "id": rid,
                           "message": f"{type(exc).__name__}: {exc}"})
            continue
        meas = float(row["measured"])
        err = _error(api, meas, pred)
        priced.append({"id": rid, "family": fam, "source": source_label(row["source"]),
                       "hardware": row["hardware"], "api": api, "unit": row["unit"],
                       "measured": meas, "predicted": pred, "error": err})
        # time-like values for the plot: seconds per token for throughputs
        m_s, p_s = (1 / meas, 1 / pred) if api in _THROUGHPUT else (meas, pred)
        comps.append((file, Comparison(fam, rid, api, m_s, p_s)))
    jobs = pd.DataFrame(priced, columns=["id", "family", "source", "hardware", "api", "unit",
                                         "measured", "predicted", "error"])
    table = []
    for by in ("family", "source"):
        for name, grp in jobs.groupby(by, sort=True):
            s = _stats(grp["error"].to_numpy())
            table.append({"by": by, "family": name, "rows": s["rows"],
                          **{f"{label}_{k}": s[k] for k in ("median", "p90", "bias")}})
    if len(jobs):
        s = _stats(jobs["error"].to_numpy())
        table.append({"by": "all", "family": "all jobs", "rows": s["rows"],
                      **{f"{label}_{k}": s[k] for k in ("median", "p90", "bias")}})
    cols = ["by", "family", "rows"] + [f"{label}_{k}" for k in ("median", "p90", "bias")]
    result = JobsValidation(
        table=pd.DataFrame(table, columns=cols),
        unmapped=pd.DataFrame(unmapped, columns=["file", "family", "id", "reason"]),
        errors=pd.DataFrame(errors, columns=["file", "family", "id", "message"]),
        models=(label,),
        comparisons={label: comps},
    )
    result.jobs = jobs
    return result
