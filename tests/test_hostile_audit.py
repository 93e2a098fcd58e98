"""Issue #25 re-audit: hostile arguments that still raised a raw ``TypeError`` ("unhashable
type: 'list'", numpy's "ufunc 'isfinite' not supported", a pybind11 RuntimeError) or blamed
another argument, plan rows that needed hidden settings to reproduce, and CLI errors that named
a flag the user never typed. Every error here names the argument the caller wrote."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import pytest

import roofline as rl
from roofline.cli.main import main
from roofline.transformer.planner.train_search import ROW_ARGUMENTS

H100 = "H100 SXM"


def _train(**kw: Any) -> Any:
    return rl.transformer.estimate("Llama-3-8B", "train", 1, seq_len=1024, hardware=H100, **kw)


@pytest.mark.parametrize("kw,argument", [
    (dict(kv_dtype=[]), "kv_dtype"),
    (dict(kv_dtype={}), "kv_dtype"),
    (dict(reduce_dtype=[1, 2], zero=3), "reduce_dtype"),
    (dict(dtype=[1]), "dtype"),
    (dict(linear_recipe=3), "linear_recipe"),
    (dict(linear_recipe="nope"), "linear_recipe"),
    (dict(network_bytes_per_s="x"), "network_bytes_per_s"),
    (dict(network_bytes_per_s=-1), "network_bytes_per_s"),
    (dict(tp=3), "tp"),
    (dict(cp=3), "cp"),
    (dict(pp=999), "pp"),
    (dict(routing_skew=-1), "routing_skew"),
])
def test_estimate_names_the_argument(kw: dict[str, Any], argument: str) -> None:
    with pytest.raises((ValueError, TypeError)) as info:
        _train(**kw)
    assert getattr(info.value, "argument", None) == argument
    assert f"{argument} " in str(info.value)


def test_decode_without_kv_len_names_it() -> None:
    with pytest.raises(ValueError) as info:
        rl.transformer.estimate("Llama-3-8B", "decode", 1, hardware=H100)
    assert getattr(info.value, "argument", None) == "kv_len"


def test_huge_network_bandwidth_prices_finite() -> None:
    e = _train(network_bytes_per_s=10**30)  # a Python int too large for numpy's isfinite
    assert np.isfinite(float(e.time_s)) and float(e.wall_s) >= float(e.time_s) > 0


@pytest.mark.parametrize("kw,argument", [
    (dict(ep=None), "ep"),
    (dict(ep="x"), "ep"),
    (dict(tp=[1, 2]), "tp"),
    (dict(price_per_gpu_hour="x"), "price_per_gpu_hour"),
    (dict(price_per_gpu_hour=[]), "price_per_gpu_hour"),
    (dict(price_per_gpu_hour=-2.0), "price_per_gpu_hour"),
    (dict(page_tokens=2**63), "page_tokens"),
    (dict(draft_model=0), "draft_model"),
    (dict(draft_model="no-such-model", spec_k=2), "draft_model"),
    (dict(kv_dtype=[]), "kv_dtype"),
])
def test_serve_names_the_argument(kw: dict[str, Any], argument: str) -> None:
    with pytest.raises((ValueError, TypeError)) as info:
        rl.transformer.serve("Llama-3-8B", H100, batches=[1], **kw)
    assert getattr(info.value, "argument", None) == argument
    assert argument in str(info.value)


@pytest.mark.parametrize("kw,argument", [
    (dict(price_per_gpu_hour="x"), "price_per_gpu_hour"),
    (dict(train_tokens=float("nan")), "train_tokens"),
    (dict(max_tpot_s="x", phase="decode"), "max_tpot_s"),
    (dict(max_tpot_s=[1, 2], phase="decode"), "max_tpot_s"),
    (dict(max_tpot_s=float("nan"), phase="decode"), "max_tpot_s"),
])
def test_plan_names_the_argument(kw: dict[str, Any], argument: str) -> None:
    with pytest.raises((ValueError, TypeError)) as info:
        rl.transformer.plan("Llama-3-8B", 8, H100, seq_len=1024, **kw)
    assert getattr(info.value, "argument", None) == argument


def test_plan_row_columns_reproduce_through_estimate() -> None:
    """A row's own columns (plus the seq_len and hardware the caller passed) are every setting
    it used: across nodes (16 GPUs, 8 per node) the data-parallel traffic crosses the network,
    which estimate's default (one scale-up domain) would not price."""
    df = rl.transformer.plan("Llama-3-8B", 16, H100, seq_len=2048)
    assert (df["gpus_per_node"] == 8).all()
    for i in np.linspace(0, len(df) - 1, 6).astype(int):
        row = df.iloc[int(i)]
        kw = {c: (row[c].item() if hasattr(row[c], "item") else row[c]) for c in ROW_ARGUMENTS}
        e = rl.transformer.estimate("Llama-3-8B", "train", seq_len=2048, hardware=H100, **kw)
        assert float(e.time_s) == pytest.approx(float(row["time_s"]), rel=1e-9)
        assert float(e.memory["total_bytes"]) == pytest.approx(float(row["total_bytes"]),
                                                               rel=1e-9)
        assert float(e.wall_s) >= float(e.time_s)


@pytest.mark.parametrize("argv,named,not_named", [
    (["hardware", "show", "H100 SXMX"], "NAME:", "--hardware:"),
    (["hardware", "show", "nope.json"], "NAME:", "--hardware:"),
    (["hardware", "show", "H100"], "NAME:", "or --hardware"),
    (["model", "Llama-3-8B", "--hardware", H100], "--kv-len", "kv_len"),
    (["model", "Llama-3-8B", "--hardware", H100, "--kv-len", "64", "--tp", "3"], "--tp ",
     "tp="),
    (["model", "Llama-3-8B", "--hardware", H100, "--kv-len", "64", "--ep", "2"], "--ep ",
     "ep="),
])
def test_cli_names_what_the_user_typed(argv: list[str], named: str, not_named: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and named in err and not_named not in err


@pytest.mark.parametrize("field,value", [("dur", 1e300), ("ts", -1e300), ("ts", 2.0**60),
                                         ("dur", 2.0**54)])
def test_trace_times_beyond_2_53_us_are_refused(tmp_path: Any, field: str, value: float
                                                ) -> None:
    """A kernel of 1e300 µs was accepted (GPU time 5e+293 s per step, exit 0): a start or a
    duration beyond 2**53 µs holds no whole microseconds, so no profiler wrote it."""
    import gzip
    import json
    from pathlib import Path

    src = Path(__file__).parent / "data" / "traces" / "encoder_layer_train.json.gz"
    doc = json.loads(gzip.open(src).read())
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    kernels[3][field] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="2\\*\\*53"):
        rl.trace.explain(path, hardware=H100)


@pytest.mark.parametrize("call,argument", [
    (lambda: rl.fusion.matmul_chain([64, 128, 32], names=3, hardware=H100), "names"),
    (lambda: rl.fusion.fuse_projections(64, 64, [64, 64], follow_ups=0, hardware=H100),
     "follow_ups"),
    (lambda: rl.fusion.fuse_projections(64, 64, [64, 64], follow_ups=None, hardware=H100),
     "follow_ups"),
    (lambda: rl.fusion.flash_attention([1, 2], 8, 128, 128, 64, hardware=H100), "batch"),
    (lambda: rl.fusion.flash_attention(1, 8, 128, [128], 64, hardware=H100), "kv_len"),
    (lambda: rl.fusion.flash_attention(1, 8, 128, 128, 64, kv_heads=[2], hardware=H100),
     "kv_heads"),
])
def test_fusion_names_the_argument(call: Any, argument: str) -> None:
    """Raw TypeErrors ('int' object is not iterable, object of type 'int' has no len()) and an
    internal function's name ('attention_kernels: sizes must be scalars') before."""
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert f"{argument} " in str(info.value) and "attention_kernels" not in str(info.value)


def test_trace_report_methods_check_their_arguments() -> None:
    """opportunities(top=-1) silently dropped the last line (a slice bound); 1.5, a str or a
    list in top / min_s / by raised raw TypeErrors; to_dict(kernels='x') passed."""
    from pathlib import Path

    rep = rl.trace.explain(Path(__file__).parent / "data" / "traces" /
                           "encoder_layer_train.json.gz", hardware=H100)
    for call, argument in [(lambda: rep.opportunities(top=-1), "top"),
                           (lambda: rep.opportunities(top=1.5), "top"),
                           (lambda: rep.gaps(min_s="x"), "min_s"),
                           (lambda: rep.gaps(min_s=float("nan")), "min_s"),
                           (lambda: rep.losses(by=[]), "by"),
                           (lambda: rep.to_dict(kernels="x"), "kernels")]:
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        assert getattr(info.value, "argument", None) == argument
    assert len(rep.opportunities(top=1)) <= 1 and len(rep.gaps(min_s=0.0)) > 0


def test_hardware_from_file_and_chain_compare_name_the_argument() -> None:
    """Hardware.from_file(None) raised os.fspath's 'expected str, bytes or os.PathLike
    object'; ChainOrders.compare(baseline='x') blamed 'ChainOrders.plan: unknown expr'."""
    with pytest.raises(TypeError) as info:
        rl.Hardware.from_file(None)  # type: ignore[arg-type]
    assert getattr(info.value, "argument", None) == "path"
    chain = rl.fusion.matmul_chain([64, 128, 32, 64], hardware=H100)
    with pytest.raises(KeyError) as key:
        chain.compare(baseline="x")
    assert "ChainOrders.compare: unknown baseline 'x'" in str(key.value)
    assert chain.compare(baseline=chain.worst[0]).title == chain.compare().title


@pytest.mark.parametrize("fitted,where", [
    ({"attention": {"flash_fraction": 1e-300}}, "fitted.attention.flash_fraction"),
    ({"compute_fraction": {"bf16": 1e-9}}, "fitted.compute_fraction.bf16"),
    ({"gemm": {"compute_scale": {H100: {"bf16": 1e-9}}}}, "fitted.gemm.compute_scale"),
])
def test_profile_rates_below_a_thousandth_of_peak_are_refused(tmp_path: Any, fitted: Any,
                                                              where: str) -> None:
    """A profile's flash_fraction of 1e-300 priced one causal attention call at 1.8e297 s
    (finite, silent); fractions, ratios and scales now start at 0.1 % of the peak."""
    import json

    doc = rl.hardware(H100).to_dict()
    doc["fitted"] = fitted
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=re.escape(where)):
        rl.Hardware.from_file(path)
    doc["fitted"] = {"attention": {"flash_fraction": 0.001}}  # the bound itself prices
    path.write_text(json.dumps(doc))
    a = rl.attention(1, 8, 512, 512, 64, hardware=rl.Hardware.from_file(path), backend="flash")
    assert np.isfinite(float(a.time_s))


#: Values no keyword of estimate / serve / plan accepts (a list, a dict, a nonsense word).
_NEVER = ([], {}, "no-such-thing", float("nan"))


def _keywords(fn: Any, skip: tuple[str, ...]) -> list[str]:
    import inspect

    return [p for p in inspect.signature(fn).parameters if p not in skip]


@pytest.mark.parametrize("keyword", _keywords(rl.transformer.estimate,
                                              ("model", "phase", "hardware", "efficiency")))
def test_fuzz_every_estimate_keyword_is_named(keyword: str) -> None:
    """Every keyword of transformer.estimate, given a list, a dict, a nonsense word or NaN,
    raises a ValueError / TypeError that names it (the class of the #25 re-audit's findings:
    'unhashable type', numpy's isfinite, an internal op's name)."""
    for value in _NEVER:
        kw = dict(seq_len=512, kv_len=512, hardware=H100)
        kw[keyword] = value
        phase = "decode" if keyword in ("kv_len", "q_len", "cache") else "train"
        if phase == "decode":
            kw.pop("seq_len")
        with pytest.raises((ValueError, TypeError)) as info:
            rl.transformer.estimate("Llama-3-8B", phase, **kw)
        assert keyword in str(info.value), (keyword, value, str(info.value))


@pytest.mark.parametrize("keyword", _keywords(rl.transformer.serve,
                                              ("model", "hardware", "efficiency")))
def test_fuzz_every_serve_keyword_is_named(keyword: str) -> None:
    for value in _NEVER:
        kw: dict[str, Any] = dict(batches=[1], output_len=8, prompt_len=64)
        kw[keyword] = value
        with pytest.raises((ValueError, TypeError)) as info:
            rl.transformer.serve("Llama-3-8B", H100, **kw)
        assert keyword in str(info.value), (keyword, value, str(info.value))


@pytest.mark.parametrize("keyword", _keywords(rl.transformer.plan,
                                              ("model", "gpus", "hardware", "phase")))
def test_fuzz_every_plan_keyword_is_named(keyword: str) -> None:
    for value in _NEVER:
        kw: dict[str, Any] = dict(seq_len=512)
        kw[keyword] = value
        with pytest.raises((ValueError, TypeError)) as info:
            rl.transformer.plan("Llama-3-8B", 8, H100, **kw)
        assert keyword in str(info.value), (keyword, value, str(info.value))


@pytest.mark.parametrize("keyword", _keywords(rl.all_to_all, ("hardware",)))
def test_fuzz_every_all_to_all_keyword_is_named(keyword: str) -> None:
    """all_to_all's keywords, the spanning ones (ranks_per_node, network_bytes_per_s)
    included, given a list, a dict, a nonsense word, NaN, a bool, -1 or 10**400."""
    for value in (*_NEVER, True, -1, 10**400):
        kw: dict[str, Any] = dict(nbytes=2**20, ranks=16, hardware=H100, ranks_per_node=8,
                                  network_bytes_per_s=50e9)
        kw[keyword] = value
        with pytest.raises((ValueError, TypeError)) as info:
            rl.all_to_all(**kw)
        assert keyword in str(info.value), (keyword, value, str(info.value))


_TRACE = os.path.join(os.path.dirname(__file__), "data", "traces", "encoder_layer_train.json.gz")


@pytest.mark.parametrize("value", [*_NEVER, True, -1, 1.5, 10**400, float("inf")])
def test_fuzz_trace_prior_load_is_named(value: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="prior_load"):
        rl.trace.explain(_TRACE, prior_load=value)
