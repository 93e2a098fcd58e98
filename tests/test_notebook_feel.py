"""Notebook feel (#25 item 11): every result object renders as HTML, has ``.to_pandas()``,
keeps its old table name as a deprecated alias, shows counts as ints, types ``bound`` by the
estimate's shape, and the model CLI titles its table in words."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
HW = "H100 SXM"
TRACE = ROOT / "tests" / "data" / "traces" / "encoder_layer_train.json.gz"
MEASUREMENTS = ROOT / "data" / "measurements" / "gpu_h100_calibration.jsonl"


def _validation() -> Any:
    rows = [json.loads(line) for line in MEASUREMENTS.read_text().splitlines()[:40]]
    return rl.validate(rows, hardware=HW)


def _torch_estimate() -> Any:
    torch = pytest.importorskip("torch")
    import roofline.torch as rlt

    with torch.device("meta"):
        mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                  torch.nn.Linear(512, 256))
        x = torch.randn(64, 256)
    return rlt.estimate(mlp, (x,), hardware=HW)


def _float8_speedup() -> Any:
    torch = pytest.importorskip("torch")
    import roofline.torch as rlt

    with torch.device("meta"):
        mlp = torch.nn.Sequential(torch.nn.Linear(4096, 8192, bias=False))
        x = torch.randn(8192, 4096)
    return rlt.float8_speedup(mlp, (x,), hardware=HW)


#: (name, builder): one of every result object the public API returns.
RESULTS: list[tuple[str, Any]] = [
    ("estimate", lambda: rl.gemm(4096, 4096, 4096, hardware=HW)),
    ("estimate array", lambda: rl.gemm(np.array([128, 4096]), 4096, 4096, hardware=HW)),
    ("attention", lambda: rl.attention(2, 8, 1024, 1024, 128, hardware=HW)),
    ("sum of estimates", lambda: rl.gemm(64, 64, 64, hardware=HW) + rl.rmsnorm(64, 64,
                                                                                  hardware=HW)),
    ("float8 linear", lambda: rl.float8.linear(8192, 8192, 8192, hardware=HW)),
    ("float8 linear array", lambda: rl.float8.linear(np.array([1024, 8192]), 8192, 8192,
                                                     hardware=HW)),
    ("explanation", lambda: rl.explain(rl.gemm(4096, 4096, 4096, hardware=HW), 400e-6)),
    ("model estimate", lambda: rl.transformer.estimate("Llama-3-8B", "decode", 1, kv_len=4096,
                                                       hardware=HW)),
    ("trace report", lambda: rl.trace.explain(TRACE)),
    ("validation", _validation),
    ("hardware", lambda: rl.hardware(HW)),
    ("wall time", lambda: rl.wall_time([1e-5, 2e-5], hardware=HW)),
    ("fusion plan", lambda: rl.fusion.batch_gemms(64, 128, 1024, 2, hardware=HW).baseline),
    ("fusion comparison", lambda: rl.fusion.batch_gemms(64, 128, 1024, 2, hardware=HW)),
    ("matmul chain", lambda: rl.fusion.matmul_chain([10, 1000, 10, 1000], hardware=HW)),
    ("torch estimate", _torch_estimate),
    ("float8 speedup", _float8_speedup),
]


@pytest.mark.parametrize("name,build", RESULTS, ids=[n for n, _ in RESULTS])
def test_every_result_renders_html(name: str, build: Any) -> None:
    obj = build()
    out = obj._repr_html_()
    assert out.startswith("<div><b>") and "</table>" in out, name  # a headline or a frame
    assert "Estimate(" not in out and "object at 0x" not in out
    # numbers are formatted, never a float repr with 10+ digits
    assert not re.search(r"\d\.\d{10,}", out), out[:400]


@pytest.mark.parametrize("name,build", [r for r in RESULTS if r[0] not in ("explanation",
                                                                           "wall time")],
                         ids=[n for n, _ in RESULTS if n not in ("explanation", "wall time")])
def test_every_table_is_to_pandas(name: str, build: Any) -> None:
    df = build().to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) >= 1


@pytest.mark.parametrize("name,build", [r for r in RESULTS if r[0] in (
    "model estimate", "fusion plan", "fusion comparison", "matmul chain", "torch estimate",
    "float8 speedup")])
def test_table_is_a_deprecated_alias(name: str, build: Any) -> None:
    obj = build()
    with pytest.warns(rl.RooflineDeprecationWarning, match=r"\.to_pandas\(\)"):
        old = obj.table()
    pd.testing.assert_frame_equal(old, obj.to_pandas())


def test_html_escapes_labels() -> None:
    e = rl.gemm(64, 64, 64, hardware=HW)
    import dataclasses

    out = dataclasses.replace(e, label="<script>x</script>")._repr_html_()
    assert "<script>" not in out and "&lt;script&gt;" in out


def test_scalar_estimate_html_has_its_terms() -> None:
    e = rl.gemm(8192, 8192, 8192, hardware=HW)
    out = e._repr_html_()
    assert "compute-bound" in out and "FLOP/B" in out
    # the vector estimate shows its rows (one per element), not a min..max line
    v = rl.gemm(np.array([128, 256, 512]), 4096, 4096, hardware=HW)._repr_html_()
    assert v.count("</tr>") == 1 + 3 and "shape (3,)" in v


def test_trace_counts_are_ints() -> None:
    rep = rl.trace.explain(TRACE)
    ops = rep.to_pandas()
    assert ops["calls"].dtype.kind == "i" and ops["kernels"].dtype.kind == "i"
    pd.testing.assert_frame_equal(ops, rep.by_op())
    assert rep.losses("class")["kernels"].dtype.kind == "i"
    assert "calls" in rep._repr_html_() and ">1.0<" not in rep._repr_html_()


def test_trace_counts_per_step_stay_fractions_when_uneven() -> None:
    from roofline.trace._report import _per_step_count

    assert _per_step_count(6, 3) == 2 and isinstance(_per_step_count(6, 3), int)
    assert _per_step_count(5, 2) == 2.5


def test_bound_is_a_str_on_a_scalar_and_an_array_on_a_vector() -> None:
    e = rl.gemm(8192, 8192, 8192, hardware=HW)
    assert type(e.bound) is str and e.bound == "compute"
    v = rl.gemm(np.array([1, 8192]), 8192, 8192, hardware=HW)
    assert isinstance(v.bound, np.ndarray) and list(v.bound) == ["memory", "compute"]
    assert type((e + e).bound) is str and type((2 * e).bound) is str


def test_hardware_to_pandas() -> None:
    hw = rl.hardware(HW)
    df = hw.to_pandas()
    assert len(df) == 1 and df["mem_bytes_per_s"].iloc[0] == hw.mem_bytes_per_s
    assert df["name"].iloc[0] == HW and isinstance(df["aliases"].iloc[0], str)
    every = pd.concat([rl.hardware(n).to_pandas() for n in rl.list_hardware()],
                      ignore_index=True)
    assert list(every["name"]) == list(rl.list_hardware())
    assert "TFLOP/s" in hw._repr_html_() and "TB/s" in hw._repr_html_()


def test_model_cli_title_is_words_not_a_repr() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "roofline", "model", "Llama-3-8B", "--kv-len", "4096",
         "--hardware", HW], capture_output=True, text=True, check=True,
        env={"COLUMNS": "160", "PATH": "", "PYTHONPATH": str(Path(rl.__file__).parents[1])},
    ).stdout
    first = out.splitlines()[0].strip()
    assert first.startswith("Llama-3-8B decode on H100 SXM: batch 1, q_len 1, kv_len 4096")
    assert "ModelEstimate(" not in out and "per step (GPU; wall" in out
