"""roofline.torch.float8_speedup: per-linear float8 decisions and the whole-step speedup."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import roofline as rl  # noqa: E402
import roofline.torch as rlt  # noqa: E402
from roofline.ops.sustained import settle_columns, settled_clock  # noqa: E402

HW = "H100 SXM"


class Mixed(nn.Module):
    """One big linear that float8 speeds up, one tiny one it does not, one with N % 16 != 0."""

    def __init__(self) -> None:
        super().__init__()
        self.big = nn.Linear(4096, 8192, bias=False)
        self.small = nn.Linear(8192, 64, bias=False)
        self.odd = nn.Linear(64, 10, bias=False)

    def forward(self, x):  # type: ignore[no-untyped-def]
        return self.odd(self.small(self.big(x)))


@pytest.fixture(scope="module")
def model() -> nn.Module:
    with torch.device("meta"):
        return Mixed()


def test_per_linear_rows_match_float8_linear(model: nn.Module) -> None:
    x = torch.empty(8, 2048, 4096, device="meta")
    r = rlt.float8_speedup(model, x, recipe="tensorwise", hardware=HW)
    t = r.to_pandas().set_index("name")
    assert list(t.index) == ["big", "small", "odd"]
    assert (t.loc["big", "M"], t.loc["big", "K"], t.loc["big", "N"]) == (16384, 4096, 8192)
    ref = rl.float8.linear(16384, 4096, 8192, recipe="tensorwise", hardware=HW)
    # `big` reads the model input, which needs no grad: no grad_input GEMM in the step
    kern = ref.kernels().set_index("kernel")
    no_gi_bf16 = ref.bf16_s - kern.loc["grad_input = grad_output @ weight^T (bf16)", "time_s"]
    no_gi_fp8 = ref.fp8_s - kern.loc["grad_input = grad_output @ weight^T", "time_s"]
    assert t.loc["big", "bf16_s"] == pytest.approx(no_gi_bf16)
    assert t.loc["big", "fp8_s"] == pytest.approx(no_gi_fp8)
    steps = r.step.to_pandas()
    big_gemms = steps[(steps["module"] == "Mixed.big") & (steps["kind"] == "gemm")]
    # the step's GEMMs are the linear's bf16 GEMMs at the power limiter's settled clock (a
    # training step keeps the tensor cores busy: roofline.ops.sustained), slower than alone
    gemms = kern[kern.index.str.endswith("(bf16)") & ~kern.index.str.startswith("grad_input")]
    cols = gemms[["time_s", "compute_s", "memory_s", "overhead_s"]].to_numpy().copy()
    clock = settled_clock(HW, "default")
    assert clock is not None
    settle_columns(cols, clock)
    assert big_gemms["time_s"].sum() == pytest.approx(cols[:, 0].sum(), rel=1e-9)
    assert no_gi_bf16 < big_gemms["time_s"].sum() < no_gi_bf16 / clock[0] + 1e-12
    # `small` reads big's output: all three GEMMs
    small = rl.float8.linear(16384, 8192, 64, recipe="tensorwise", hardware=HW)
    assert t.loc["small", "bf16_s"] == pytest.approx(small.bf16_s)
    assert t.loc["big", "convert"]
    assert not t.loc["small", "convert"] and "too small" in t.loc["small", "reason"]
    assert not t.loc["odd", "convert"] and "multiple of 16" in t.loc["odd", "reason"]
    assert r.convert == ["big"]
    # step arithmetic: only `big` changes
    saved = no_gi_bf16 - no_gi_fp8
    assert r.step_fp8_s == pytest.approx(r.step_bf16_s - saved)
    assert r.speedup == pytest.approx(r.step_bf16_s / (r.step_bf16_s - saved))
    assert 1.0 < r.speedup < t.loc["big", "speedup"]
    keep = r.module_filter_fn()
    assert keep(model.big, "big") and not keep(model.small, "small")
    assert "1/3 linears converted" in repr(r)


def test_inference_and_recipes(model: nn.Module) -> None:
    x = torch.empty(4, 1024, 4096, device="meta")
    inf = rlt.float8_speedup(model, x, recipe="rowwise", hardware=HW, mode="inference")
    ref = rl.float8.linear(4096, 4096, 8192, recipe="rowwise", hardware=HW, mode="inference")
    assert inf.to_pandas().iloc[0]["fp8_s"] == pytest.approx(ref.fp8_s)
    assert inf.step.mode == "inference"
    # a threshold nobody reaches converts nothing: speedup exactly 1
    none = rlt.float8_speedup(model, x, hardware=HW, min_speedup=100.0)
    assert none.convert == [] and none.speedup == 1.0


def test_llama_style_mlp_on_b200_mxfp8() -> None:
    class SwiGLU(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate = nn.Linear(4096, 14336, bias=False)
            self.up = nn.Linear(4096, 14336, bias=False)
            self.down = nn.Linear(14336, 4096, bias=False)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.down(nn.functional.silu(self.gate(x)) * self.up(x))

    with torch.device("meta"):
        m = SwiGLU()
    r = rlt.float8_speedup(m, torch.empty(8, 4096, 4096, device="meta"),
                           recipe="mxfp8_cublas", hardware="B200")
    assert r.convert == ["gate", "up", "down"]
    assert r.speedup > 1.1


def test_bad_input(model: nn.Module) -> None:
    x = torch.empty(2, 4096, device="meta")
    with pytest.raises(KeyError, match="unknown recipe 'fp7'"):
        rlt.float8_speedup(model, x, recipe="fp7", hardware=HW)
    with pytest.raises(ValueError, match="mode must be 'training' or 'inference', got 'x'"):
        rlt.float8_speedup(model, x, mode="x", hardware=HW)
    with pytest.raises(ValueError, match="min_speedup must be a positive number, got 0"):
        rlt.float8_speedup(model, x, min_speedup=0, hardware=HW)
    with pytest.raises(TypeError, match="module must be a torch.nn.Module"):
        rlt.float8_speedup("model", x, hardware=HW)
