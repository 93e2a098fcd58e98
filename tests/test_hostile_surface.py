"""Hostile input on the surface sessions 7-8 added (issue #25, section 2; session-9 audit).

Synthetic traces of the newer registry entries with recorded arguments no profiler writes,
``from_hf`` of newer configs with missing or odd keys, jobs rows with odd fields; plus a
seeded run of the fuzzer's new-surface calls (``benchmarks/_fuzz_surface.py``) and the
entries' monotonicity (``benchmarks/monotonicity_entries.py``). Each case failed before its
fix with a raw exception, an error naming an internal op, or a silent wrong price.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from _benchmarks import load_benchmark

import roofline as rl
from roofline import hardware
from roofline.ops.registry import Call, Pricer, TensorArg, price
from roofline.trace import synthetic_trace
from roofline.validation.jobs import JOBS_FILE, _check_row, price_job

ROOT = Path(__file__).resolve().parents[1]
H100 = "H100 SXM"
F = "float"
TOPK_TYPES = [F, "Scalar", "Scalar", "Scalar", "Scalar"]


def _records(op: str, shapes: Any, types: Any, concrete: Any = None,
             measured_s: float = 1e-5) -> rl.trace.TraceReport:
    rec: dict[str, Any] = {"op": op, "shapes": shapes, "types": types,
                           "measured_s": measured_s}
    if concrete is not None:
        rec["concrete"] = concrete
    return rl.trace.from_records([rec], H100)


# --------------------------------------------------------------- recorded sizes of a trace

@pytest.mark.parametrize("dims", [
    [64, -128],                    # was priced (1.4 us, or 0 s for nonzero)
    [64, "abc"],                   # ValueError: invalid literal for int()
    [64, 2.5],                     # silently truncated to 2
    [64, float("nan")],            # ValueError: cannot convert float NaN
    [64, float("inf")],            # OverflowError
    [64, [1]],                     # TypeError from int()
    [64, True],
    [2**40, 2**40],                # "elementwise: numel must be ..." (an internal op)
    [10**30],
])
@pytest.mark.parametrize("op", ["aten::topk", "aten::sort", "aten::sum", "aten::nonzero",
                                "aten::mm", "aten::add"])
def test_recorded_sizes_that_are_not_sizes_are_named(op: str, dims: list[Any]) -> None:
    shapes = [dims, dims] if op in ("aten::mm", "aten::add") else [dims, [], [], [], []]
    types = [F, F] if op in ("aten::mm", "aten::add") else TOPK_TYPES
    with pytest.raises(ValueError, match=rf"^trace\.explain: {op}: recorded Input Dims .* "
                                         r"must be non-negative integers"):
        _records(op, shapes, types, ["", "4", "-1", "True", "True"][:len(types)])


def test_tensor_list_sizes_are_checked_too() -> None:
    with pytest.raises(ValueError, match=r"^trace\.explain: aten::cat: recorded Input Dims "
                                         r"\[64, -1\]"):
        _records("aten::cat", [[[64, 128], [64, -1]], []], ["TensorList", "Scalar"], ["", "0"])


def test_empty_tensors_stay_accepted() -> None:
    rep = _records("aten::nonzero", [[0, 128]], [F])
    assert rep.predicted_s == 0.0 and rep.unpriced_s > 0  # no kernel priced, said so


@pytest.mark.parametrize("key,value,match", [
    ("types", None, "types must be a list"),          # TypeError: 'NoneType' not iterable
    ("concrete", "xyz", "concrete must be a list"),   # read character by character
    ("shapes", 5, "shapes must be a list"),
    ("op", 5, "op must be an op name"),
    ("measured_s", float("inf"), "measured_s must be a positive finite number"),
])
def test_from_records_checks_each_field(key: str, value: Any, match: str) -> None:
    rec = {"op": "aten::topk", "shapes": [[64, 128], [], [], [], []], "types": TOPK_TYPES,
           "concrete": ["", "4", "-1", "True", "True"], "measured_s": 1e-5, key: value}
    with pytest.raises(ValueError, match=rf"^trace\.from_records: record 0 {match}"):
        rl.trace.from_records([rec], H100)


def test_unhashable_input_types_in_a_trace_are_unpriced_not_a_crash() -> None:
    doc = synthetic_trace([{"op": "aten::add", "shapes": [[64, 128], [64, 128]],
                            "types": [F, F], "measured_s": 1e-5}])
    op = next(e for e in doc["traceEvents"] if e["cat"] == "cpu_op")
    op["args"]["Input type"] = [["float"], {"a": 1}]  # was TypeError: unhashable type
    rep = rl.trace.explain(doc, hardware=H100)
    assert not bool(rep.kernels()["priced"].iloc[0])


# ------------------------------------------------------------------------- topk arguments

def _topk_s(slices: int, n: int, k: Any, sorted_: str = "True") -> float:
    call = Call("aten::topk", (TensorArg((slices, n), "bf16", 2),),
                concrete=("", str(k), "-1", "True", sorted_))
    costs, _ = price(call, Pricer(hardware(H100), "default"))
    return sum(float(e.time_s) for _, e in costs or [])


@pytest.mark.parametrize("k", [-5, 129, 10**23, "inf", "nan"])
def test_topk_k_outside_the_slice_is_one_plain_pass(k: Any) -> None:
    # torch refuses k outside [0, n]; it was priced with negative or 10**23 x written bytes
    # (the latter raising "elementwise: numel must be ...")
    plain = _topk_s(64, 128, 0, "False")
    assert _topk_s(64, 128, k) == pytest.approx(_topk_s(64, 128, "x"))
    assert 0 < _topk_s(64, 128, k) <= plain * 1.01


def test_topk_hand_built_infinite_k_is_not_an_overflow() -> None:
    call = Call("aten::topk", (TensorArg((64, 128), "bf16", 2), float("inf")))
    costs, _ = price(call, Pricer(hardware(H100), "default"))  # was OverflowError
    assert costs and float(costs[0][1].time_s) > 0


@pytest.mark.parametrize("slices,n", [(1, 33), (64, 128), (16384, 128), (4096, 1024),
                                      (8, 262144)])
def test_sorted_topk_past_32_is_never_faster_than_at_32(slices: int, n: int) -> None:
    # k = 33 ran no sort at all in the model: up to 2x faster than k = 32 (10.85 -> 5.09 us)
    for k in [k for k in (33, 64, 128) if k <= n]:
        assert _topk_s(slices, n, k) >= _topk_s(slices, n, 32)
    assert _topk_s(slices, n, 33, "False") <= _topk_s(slices, n, 33)


def test_grouped_weight_gradient_of_empty_operands_is_empty() -> None:
    p = Pricer(hardware(H100), "default")
    for a, b, offs in [((64, 0), (0, 64), (8,)), ((0, 64), (64, 64), (8,)),
                       ((64, 64), (64, 64), (0,))]:
        call = Call("aten::_grouped_mm", (TensorArg(a, "bf16", 2), TensorArg(b, "bf16", 2),
                                          TensorArg(offs, None, 4)))
        costs, how = price(call, p)  # was "grouped_gemm: n must be a positive integer"
        assert costs == [] and "empty" in how


# ------------------------------------------------------------------------------- from_hf

def _gpt_oss() -> dict[str, Any]:
    d = json.loads((ROOT / "python/roofline/transformer/configs/gpt-oss-20b.json").read_text())
    return {k: v for k, v in d.items() if not k.startswith("_")}


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "num_attention_heads"])
def test_from_hf_missing_required_key_is_a_value_error_naming_it(key: str) -> None:
    d = _gpt_oss()
    del d[key]
    with pytest.raises(ValueError, match=rf"^from_hf: {key} is missing: the config has none "
                                         r"of") as info:
        rl.transformer.from_hf(d)  # was a KeyError whose str() is a quoted repr
    assert not str(info.value).startswith('"')


def test_from_hf_layer_types_with_a_list_entry_is_named() -> None:
    d = _gpt_oss()
    d["layer_types"] = [["sliding_attention"]] + d["layer_types"][1:]
    with pytest.raises(ValueError, match=r"^from_hf: layer_types entries must be one of"):
        rl.transformer.from_hf(d)  # was TypeError: unhashable type: 'list'


# ---------------------------------------------------------------------------- jobs rows

def _row(api: str) -> dict[str, Any]:
    for line in JOBS_FILE.read_text().splitlines():
        r = json.loads(line)
        if r["config"]["api"] == api and any(m in str(r["config"].get("model"))
                                             for m in ("Llama-3-8B", "Llama-2-7B")):
            return copy.deepcopy(r)
    raise AssertionError(api)


@pytest.mark.parametrize("hw", [None, 3, ["H100 SXM"], ""])
def test_jobs_row_hardware_must_be_a_name(hw: Any) -> None:
    row = _row("train")
    row["hardware"] = hw  # None: HardwareNotSpecifiedError (a RuntimeError) from inside
    with pytest.raises(ValueError, match=r"^read_jobs: row 1 \(.*\): hardware must be a "
                                         r"hardware name"):
        _check_row(row, "row 1")


@pytest.mark.parametrize("key,value", [("api", ["train"]), ("api", {"a": 1})])
def test_jobs_row_unhashable_api_is_named(key: str, value: Any) -> None:
    row = _row("train")
    row["config"][key] = value  # was TypeError: unhashable type
    with pytest.raises(ValueError, match=r"config\.api must be one of"):
        _check_row(row, "row 1")


def test_jobs_row_output_len_list_is_named() -> None:
    row = _row("batch_throughput")
    row["config"]["output_len"] = [128, 128]  # was "unsupported operand type(s) for //"
    with pytest.raises(TypeError, match=rf"^price_job: {row['id']}: config\.output_len must be "
                                        r"a positive integer, got \[128, 128\]"):
        price_job(row)


@pytest.mark.parametrize("key,value,exc,match", [
    ("mtp_layers", [None], TypeError, "TransformerConfig: mtp_layers must be an int"),
    ("tp", -2, ValueError, "transformer.estimate: tp must be"),
])
def test_price_job_errors_name_the_row(key: str, value: Any, exc: type, match: str) -> None:
    row = _row("train")
    row["config"][key] = value
    with pytest.raises(exc, match=rf"^price_job: {row['id']}: {match}"):
        price_job(row)


# --------------------------------------------------- the fuzzer and the monotonicity grid

def _bench(name: str) -> Any:
    return load_benchmark(name)


@pytest.mark.parametrize("kind,calls", [("trace op", 150), ("trace file", 20),
                                        ("from_hf", 25),
                                        ("config field", 25), ("serve runtime", 15),
                                        ("estimate runtime", 15),
                                        ("price_job", 8)])
def test_new_surface_fuzz_finds_nothing(kind: str, calls: int) -> None:
    fs = _bench("_fuzz_surface")
    rng = random.Random(2025)
    prefix = fs.PREFIX[kind]
    for _ in range(calls):
        try:
            fs.KINDS[kind](rng)
        except (ValueError, TypeError, LookupError, NotImplementedError) as exc:
            assert str(exc).startswith(prefix), f"{type(exc).__name__}: {exc}"
        # anything else (OverflowError, a BadResult: silent nonsense) fails the test


def test_new_entries_are_monotone_but_for_aten_heuristics() -> None:
    assert _bench("monotonicity_entries").main(["--hardware", H100]) == 0


# ------------------------------------------------------------ windows below the query tile

def test_a_window_below_the_query_tile_runs_whole_tiles() -> None:
    from roofline.transformer.layers import local_attention

    # window 1 was 4096 one-query calls (priced 8 % slower than window 128 on GPT-OSS-20B)
    assert local_attention("sliding", 1, 4096, 4096) == (32, 128, 129, False, 1.0)
    assert local_attention("chunked", 16, 4096, 4096) == (32, 128, 128, True, 1.0)
    assert local_attention("sliding", 1, 100, 100) == (1, 100, 100, True, 1.0)
    assert local_attention("sliding", 128, 4096, 4096) == (32, 128, 256, False, 1.0)  # as before


@pytest.mark.parametrize("kind", ["sliding", "chunked"])
def test_prefill_time_grows_with_the_window(kind: str) -> None:
    base = rl.transformer.config("GPT-OSS-20B")
    size_field = "sliding_window" if kind == "sliding" else "attention_chunk"
    times = []
    for w in (1, 16, 64, 127, 128, 129, 1024, 4096, 8192):
        cfg = base.replace(num_layers=2, layer_types=(kind, "full"), **{size_field: w})
        times.append(float(rl.transformer.estimate(cfg, "prefill", 1, seq_len=4096,
                                                   hardware=H100).time_s))
    assert times == sorted(times), times


@pytest.mark.parametrize("key", ["num_local_experts", "num_experts", "n_routed_experts"])
def test_from_hf_expert_count_is_bounded(key: str) -> None:
    # 2**31 experts hung estimate() for minutes (a per-expert token count tuple)
    d = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 512, "vocab_size": 1000, "num_experts_per_tok": 2,
         "moe_intermediate_size": 128, key: 2**31}
    with pytest.raises(ValueError, match=rf"^from_hf: {key} must be at most 100000, got "
                                         r"2147483648"):
        rl.transformer.from_hf(d)
    with pytest.raises(ValueError, match=r"^TransformerConfig: num_experts must be a "
                                         r"non-negative integer no larger than 100000"):
        rl.transformer.config("Qwen3-30B-A3B").replace(num_experts=2**31)


@pytest.mark.parametrize("name", ["DeepSeek-V3", "GPT-OSS-20B"])
def test_too_many_kernels_names_the_layers(name: str) -> None:
    # 100,000 MoE layers: "wall_time: kernel_times_s holds 12600006 kernels" (an internal
    # function's argument), after minutes materialising the backward's launches
    c = rl.transformer.config(name)
    cfg = c.replace(num_layers=100_000,
                    layer_types=(c.layer_types * 100_000)[:100_000] if c.layer_types else ())
    with pytest.raises(ValueError, match=rf"^transformer\.estimate: this step launches more "
                                         rf"than 10000000 kernels over {name}'s 100000 "
                                         r"layers"):
        rl.transformer.estimate(cfg, "train", 1, seq_len=4096, hardware=H100, ep=8, dp=8)


def test_cli_validate_jobs_with_no_row_priced_exits_non_zero(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    row = _row("train")
    row["config"]["seq_len"] = float("nan")  # was: an empty table, one note, exit 0
    path = tmp_path / "jobs.jsonl"
    path.write_text(json.dumps(row) + "\n")
    for fmt in ("table", "json"):
        assert main(["validate", str(path), "--format", fmt]) == 2
        out = capsys.readouterr()
        assert out.out == ""
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            "error: validate: none of the 1 jobs rows could be priced; e.g. "
            f"{row['id']}: ") and "seq_len must be an integer, got nan" in lines[0]


def test_from_hf_layer_types_length_is_checked() -> None:
    d = _gpt_oss()
    d["layer_types"] = ["full_attention"] * 5_000  # 24 layers: an all-full list passed, and
    with pytest.raises(ValueError, match=r"^from_hf: layer_types must have one entry per "
                                         r"layer \(num_hidden_layers=24\), got 5000"):
        rl.transformer.from_hf(d)  # 5 M entries took 6 s to check one by one


# ------------------------------------------------------------------------------ serving

def test_serve_prompt_plus_output_beyond_2_24_names_both() -> None:
    # was "transformer.estimate: kv_len must be an integer <= 16777216" (an internal call)
    with pytest.raises(ValueError, match=r"^transformer\.serve: output_len must keep "
                                         r"prompt_len \+ output_len within 16777216 \(2\*\*24\)"
                                         r" tokens, got prompt_len=512 \+ output_len=16777116"):
        rl.transformer.serve("Llama-3-8B", H100, prompt_len=512, output_len=2**24 - 100)


def test_serve_finite_run_request_beyond_the_cache_is_said_plainly() -> None:
    # was "num_requests=8: inflight_run: one request's KV cache (32784.000000 pages of
    # 32.000000 tokens) exceeds the cache's 13337.000000 pages"
    with pytest.raises(ValueError, match=r"^transformer\.serve: a finite run of num_requests=8:"
                                         r" the longest request \(1049088 tokens of prompt and "
                                         r"output\) needs 32784 KV-cache pages of 32 tokens, "
                                         r"more than the \d+ pages the cache holds; shorten"):
        rl.transformer.serve("Llama-3-8B", H100, prompt_len=512, output_len=2**20,
                             num_requests=8, runtime="sglang")


# ------------------------------------------------------------------ recorded integer lists

@pytest.mark.parametrize("text", ["-" * 100_000 + "1", "~" * 50_000 + "1", "[" * 1000])
def test_hostile_recorded_dim_lists_are_not_parsed_by_python(text: str) -> None:
    # ast.literal_eval raised MemoryError (the parser's stack) out of trace.explain
    rep = _records("aten::sum", [[64, 128], [], [], []], [F, "ScalarList", "Scalar", ""],
                   ["", text, "False", ""])
    assert rep.predicted_s > 0


@pytest.mark.parametrize("shape", ["[-128]", "[0]", "[1.5]", "[nan]", "[100000]",
                                   "-" * 100_000 + "1", "[abc]"])
def test_hostile_normalized_shape_falls_back_to_the_last_dim(shape: str) -> None:
    # "[nan]" / "[abc]": ValueError from int(); "[-128]": "layer_norm: cols must be a
    # positive integer" (an internal name); the long string: MemoryError
    ok = _records("aten::native_layer_norm", [[64, 128], [], [128], [128], []],
                  [F, "ScalarList", F, F, "Scalar"], ["", "[128]", "", "", "1e-05"])
    rep = _records("aten::native_layer_norm", [[64, 128], [], [128], [128], []],
                   [F, "ScalarList", F, F, "Scalar"], ["", shape, "", "", "1e-05"])
    assert rep.predicted_s == pytest.approx(ok.predicted_s)


def test_jobs_row_a_runtime_does_not_model_is_a_row_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main
    from roofline.validation.jobs import validate_jobs

    row = _row("train")
    row["config"].update(runtime="hf", tp=2, dp=row["config"]["dp"] // 2)
    # NotImplementedError (runtime='hf' runs one GPU) escaped validate: a traceback
    with pytest.raises(NotImplementedError, match=rf"^price_job: {row['id']}: transformer\."
                                                  r"estimate: runtime='hf' does not model"):
        price_job(row)
    got = validate_jobs([row, _row("train")])
    assert len(got.errors) == 1 and "does not model" in got.errors["message"].iloc[0]
    path = tmp_path / "jobs.jsonl"
    path.write_text(json.dumps(row) + "\n")
    assert main(["validate", str(path)]) == 2
    assert "does not model tensor" in capsys.readouterr().err
