"""rl.validate and `roofline validate`: errors per family, unmapped rows, formats, plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import roofline as rl
from roofline.cli import main
from roofline.validation.report import POOLED

H100 = Path(__file__).resolve().parents[1] / "data" / "measurements" / \
    "gpu_h100_calibration.jsonl"

#: Default-model median error per family on the H100 file when rl.validate was written
#: (percent, from benchmarks/validate.py --gpu-only); each may grow by at most 2 points.
PINNED = {
    # end-to-end do_bench calls of one compiled linear (host time included: compiled_call_s,
    # compiled_forward_s, torchao_call_s): issue #23's targets (<= 12 %); pinned where the
    # model stands (was 18.2, 16.6, 11.0, 64.2 before the host terms of the launch modes;
    # rowwise 16.2 -> 16.5 with the backward's one-element new_ones launch the traces show)
    "gpu_float8_training_speedup (tensorwise)": 11.9,
    "gpu_float8_training_speedup (rowwise)": 16.5, "gpu_linear_train_bf16": 8.8,
    "gpu_float8_inference_speedup (rowwise)": 18.4,
    "gpu_attention_cudnn": 2.7, "gpu_attention_cudnn_bwd": 2.2, "gpu_attention_flash": 6.0,
    "gpu_attention_flash_bwd": 3.4, "gpu_attention_materialized": 13.2,
    "gpu_cast_fp8_rowwise": 21.5, "gpu_cast_fp8_tensorwise": 49.4, "gpu_cross_entropy": 5.3,
    "gpu_cross_entropy_compiled": 4.6, "gpu_decode_cudnn": 4.3, "gpu_decode_efficient": 3.0,
    "gpu_decode_flash": 5.2, "gpu_elementwise": 4.3,
    "gpu_float8_linear wall_s (all recipes)": 6.9, "gpu_float8_linear_kernels (bf16)": 5.8,
    "gpu_float8_linear_kernels (rowwise)": 6.2,
    "gpu_float8_linear_kernels (rowwise_with_gw_hp)": 1.4,
    "gpu_float8_linear_kernels (tensorwise)": 3.7, "gpu_gemm_bf16": 7.1, "gpu_gemm_fp32": 2.0,
    "gpu_gemm_fp8_rowwise": 4.5, "gpu_gemm_fp8_tensorwise": 5.9, "gpu_gemm_tf32": 3.9,
    "gpu_grouped_gemm_bf16": 3.8, "gpu_grouped_gemm_counts": 1.0, "gpu_grouped_gemm_fp8": 2.5,
    "gpu_launch_overhead": 3.3, "gpu_launch_overhead (CUDA graph)": 2.3, "gpu_layernorm": 6.9,
    "gpu_layernorm_compiled": 16.2, "gpu_noise_gemm_rep0": 4.9, "gpu_noise_gemm_rep1": 7.6,
    "gpu_rmsnorm": 7.7, "gpu_rmsnorm_bwd": 4.5, "gpu_rmsnorm_compiled": 3.5,
    "gpu_sdpa_default": 1.5, "gpu_softmax": 6.3, "gpu_softmax_compiled": 3.4,
}

ROW = {"id": "a-0", "family": "gpu_gemm_bf16", "hardware": "H100 SXM", "op": "gemm",
       "args": {"m": 4096, "k": 4096, "n": 4096, "dtype": "bf16"}, "measured": 2.0e-4,
       "unit": "s", "method": "test", "source": "test"}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def h100() -> rl.validation.ValidationResult:
    if not H100.exists():
        pytest.fail("H100 measurements not found in data/measurements")
    return rl.validate(H100, hardware="H100 SXM")


def test_h100_table_families_and_pins(h100: rl.validation.ValidationResult) -> None:
    t = h100.table.set_index("family")
    assert set(PINNED) <= set(t.index)
    for family, pinned in PINNED.items():
        assert t.loc[family, "default_median"] * 100 <= pinned + 2.0, family
    assert t.loc[POOLED, "default_median"] < 0.10
    # the presets sit beside the model, and are worse on the pooled rows
    assert t.loc[POOLED, "constant_median"] > t.loc[POOLED, "default_median"]
    assert t.loc[POOLED, "peak_median"] > t.loc[POOLED, "default_median"]
    assert h100.unmapped.empty and h100.errors.empty
    assert h100.models == ("default", "constant", "peak")


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2"):
        rl.validate(path)


def test_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(ValueError, match="no measurement rows"):
        rl.validate(path)
    assert main(["validate", str(path)]) == 2


def test_unknown_op_is_listed_as_unmapped(tmp_path: Path) -> None:
    rows = [ROW, {**ROW, "id": "b-1", "family": "mystery", "op": "warp_drive"},
            {**ROW, "id": "b-2", "family": "mystery", "op": "warp_drive"}]
    r = rl.validate(_write(tmp_path / "m.jsonl", rows))
    assert r.unmapped.to_dict(orient="records") == [
        {"file": "m.jsonl", "family": "mystery", "op": "warp_drive", "rows": 2}]
    assert list(r.table["family"])[0] == "gpu_gemm_bf16"


def test_rows_that_raise_are_listed(tmp_path: Path) -> None:
    rows = [ROW, {**ROW, "id": "c-1", "family": "cpu_gemm_fp32", "hardware": "Some CPU"}]
    r = rl.validate(_write(tmp_path / "m.jsonl", rows))
    rec = r.errors.to_dict(orient="records")
    assert [(e["family"], e["rows"]) for e in rec] == [("cpu_gemm_fp32", 1)]
    assert "Some CPU" in rec[0]["message"]


def test_several_files_get_a_file_column(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", [ROW])
    b = _write(tmp_path / "b.jsonl", [{**ROW, "measured": 3e-4}])
    r = rl.validate([a, b], hardware="H100 SXM")
    assert "file" in r.table.columns
    assert set(r.table["file"]) == {str(a), str(b)}


def test_cli_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "m.jsonl", [ROW, {**ROW, "id": "x", "op": "warp_drive"}])
    assert main(["validate", str(path), "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[0].startswith("family,rows,default_median")
    assert "unmapped: 1 rows of gpu_gemm_bf16" in out.err
    assert main(["validate", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["table"][0]["family"] == "gpu_gemm_bf16" and doc["unmapped"][0]["rows"] == 1
    assert main(["validate", str(path), "--hardware", "H100 SXM"]) == 0
    text = capsys.readouterr().out
    assert "gpu_gemm_bf16" in text and "constant med" in text and "unmapped" in text


def test_cli_profile_and_hardware_exclude_each_other(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    path = _write(tmp_path / "m.jsonl", [ROW])
    profile = tmp_path / "hw.json"
    profile.write_text(json.dumps(rl.hardware("H100 SXM").to_dict()))
    assert main(["validate", str(path), "--profile", str(profile), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["table"][0]["rows"] == 1
    assert main(["validate", str(path), "--profile", str(profile), "--hardware", "H100 SXM"]
                ) == 2


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = _write(tmp_path / "m.jsonl", [ROW, {**ROW, "id": "z", "measured": 1e-3}])
    png = tmp_path / "out.png"
    assert main(["validate", str(path), "--format", "csv", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
