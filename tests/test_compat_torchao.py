"""Parity with torchao itself: ``roofline.compat.torchao`` and the public float8 API against
torchao's ``torchao/testing/training/roofline_utils.py`` (the installed torchao, not a copy).

How the reference is evaluated
------------------------------
torchao builds sympy expressions in symbols ``M, K, N`` (exactly as its
``benchmarks/float8/float8_roofline.py`` does: plain ``sympy.symbols("M K N")``) and
evaluates them with ``.subs`` (~40 ms a shape). Here each expression is built once per
(GPU, recipe, fusion setting) and turned into a numpy function with ``sympy.lambdify``
(``Max`` -> ``reduce(maximum, ...)``, ``floor`` -> ``numpy.floor``, rationals -> float
constants), then evaluated on ~17k shapes at once. The lambdified reference is itself
checked: against ``.subs`` on a few points for every kind of construct
(:func:`test_lambdified_reference_matches_subs`), and against torchao's functions called
with plain Python ints on a few points of every combination (:func:`_check`).
Floats stay exact where it matters: ``floor((1/32)*K*M + ...)`` is exact in float64 for
dimensions up to 2**17 (the products are below 2**53 and 1/32 is a power of two).

Tolerance: relative 1e-9, absolute 0, everywhere (the only differences are float rounding
of the same formula, ~1e-16).

torchao bugs the torchao preset reproduces (for parity; our own database is right)
---------------------------------------------------------------------------------
1. ``NVIDIA GeForce RTX 5090``: torchao's table says 1.792e15 B/s (a typo for 1.792e12,
   1792 GB/s) and has no ``pct_achievable_*`` keys, so every torchao function that needs
   them raises ``KeyError``. ``rl.hardware(name, table="torchao")`` keeps 1.792e15 and the
   compat functions raise the same ``KeyError``; ``rl.hardware("RTX 5090")`` says 1.792e12.
   The public API with ``efficiency="torchao"`` does not raise: it falls back to torchao's
   78 % / 92 % constants (documented in ``roofline.efficiency.preset``), checked here by
   comparing with torchao after adding those keys to its table.
2. ``get_inference_float8_mem_sympy(..., "mxfp4_cutlass", ...)``: torchao's inference cast
   model matches the exact name ``"mxfp4"`` only, so the training recipe's name raises
   ``ValueError`` (its GEMM function accepts any ``mxfp4*``). Compat raises the same
   ``ValueError``; ``rl.float8.linear(..., recipe="mxfp4_cutlass", mode="inference")`` with
   the default efficiency works and equals ``recipe="mxfp4"``.
Also reproduced (torchao behaviour, not a bug): GPUs without an fp4 peak (H100, MI300X)
raise ``KeyError('fp4_peak_tops')`` for fp4 GEMMs, while fp4 cast overheads still work; and
``get_tensor_memory_traffic_ovhd_s(role="weight", fuse_with_prev=True)`` fuses the weight's
read for the role-free MX recipes (torchao's own linear never asks for that).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.parity

torch = pytest.importorskip("torch")
sympy = pytest.importorskip("sympy")
pytest.importorskip("torchao")
tu = pytest.importorskip("torchao.testing.training.roofline_utils")

import roofline as rl  # noqa: E402
from roofline.compat import torchao as rt  # noqa: E402

RTOL = 1e-9

GPUS = list(tu.gpu_name_to_specs)
PCT_KEYS = ("pct_achievable_gemm_tops", "pct_achievable_mem_bw")
COMPLETE_GPUS = [g for g in GPUS if all(k in tu.gpu_name_to_specs[g] for k in PCT_KEYS)]
RTX5090 = "NVIDIA GeForce RTX 5090"

BF16, FP8, FP4 = torch.bfloat16, torch.float8_e4m3fn, torch.float4_e2m1fn_x2

FLOAT8_RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")
MX_RECIPES = ("mxfp8_emulated", "mxfp8_cublas", "mxfp8_cublas_rceil", "mxfp4_cutlass",
              "mxfp8_32x32_flexible_gemm_layout", "mxfp8_32x32_weight")
#: (float8_recipe_name, mx_recipe_name): every pair get_tensor_memory_traffic_ovhd_s accepts.
TRAINING = [(r, None) for r in FLOAT8_RECIPES] + [(None, r) for r in MX_RECIPES]
TRAINING_IDS = [f or m for f, m in TRAINING]
#: Recipe names torchao's inference functions accept ("mxfp8" as the benchmark spells it).
INFERENCE = ("tensorwise", "rowwise", "mxfp8_cublas", "mxfp8", "mxfp4", "nvfp4",
             "nvfp4_static", "nvfp4_no_global_scale")
ROLES = ("input", "weight", "grad_output")

M, K, N = SYMS = sympy.symbols("M K N")


#: 31, 33, 127, 129 and 2**0 .. 2**17 (1, 32, 128 among them): 22 values
EDGES = np.array(sorted({1, 31, 32, 33, 127, 128, 129} | {2**p for p in range(18)}))


def _shapes(ndim: int, seed: int) -> np.ndarray:
    """3000 log-uniform random integer shapes in [1, 2**17]**ndim (fixed seed), then every
    combination of EDGES (22**ndim)."""
    rng = np.random.default_rng(seed)
    rand = np.floor(np.exp(rng.uniform(0.0, np.log(2**17 + 1), size=(3000, ndim))))
    rand = np.clip(rand, 1, 2**17).astype(np.int64)
    grid = np.stack(np.meshgrid(*[EDGES] * ndim, indexing="ij"), axis=-1).reshape(-1, ndim)
    return np.concatenate([rand, grid.astype(np.int64)])


SHAPES = _shapes(3, 20250611)  # (M, K, N): 3000 + 10648
SM, SK, SN = SHAPES[:, 0], SHAPES[:, 1], SHAPES[:, 2]
DIMS = _shapes(2, 20250612)  # (dim0, dim1) for the per-kernel functions: 3000 + 484
D0, D1 = DIMS[:, 0], DIMS[:, 1]
#: Points for scalar calls (ours -> float) against torchao called with Python ints.
SCALAR_POINTS = [(1, 1, 1), (33, 31, 129), (4096, 4096, 4096), (16384, 8192, 1280),
                 (127, 2**17, 33), (2**17, 2**17, 2**17)]


def test_shape_set() -> None:
    assert len(EDGES) == 22
    assert len(SHAPES) == 3000 + 22**3 and len(DIMS) == 3000 + 22**2
    assert SHAPES.min() == DIMS.min() == 1 and SHAPES.max() == DIMS.max() == 2**17
    # log-uniform: about as many random dims below 2**8.5 as above (half of log2 range 17)
    rand = SHAPES[:3000].ravel()
    assert 0.4 < np.mean(rand < 2**8.5) < 0.6


def _lambdify(expr, args=SYMS):
    """A numpy function for a torchao expression (or a constant), broadcast to the inputs."""
    f = sympy.lambdify(args, expr, modules="numpy")

    def g(*vals):
        shape = np.broadcast(*vals).shape
        return np.broadcast_to(np.asarray(f(*vals), dtype=np.float64), shape)

    return g


@functools.cache
def _ref(fn_name: str, *args):
    """torchao's ``fn_name(M, K, N, *args)`` as (expression, numpy function), built once."""
    expr = getattr(tu, fn_name)(M, K, N, *args)
    return expr, _lambdify(expr)


def _assert_close(ours, want) -> None:
    np.testing.assert_allclose(ours, want, rtol=RTOL, atol=0)


def _check(fn_name: str, args: tuple, ours_fn, points=SCALAR_POINTS):
    """torchao's ``fn_name(M, K, N, *args)`` against ``ours_fn(m, k, n)``.

    If torchao raises KeyError (missing spec key), ours must raise the same KeyError, for
    arrays and scalars. Otherwise: all SHAPES in one vectorised call, then scalar calls on
    ``points`` against torchao evaluated with Python ints (which also re-checks the
    lambdified reference there).
    """
    try:
        _, ref = _ref(fn_name, *args)
    except KeyError as exc:
        with pytest.raises(KeyError) as info:
            ours_fn(SM, SK, SN)
        assert info.value.args == exc.args
        with pytest.raises(KeyError) as info:
            ours_fn(64, 64, 64)
        assert info.value.args == exc.args
        return
    want = ref(SM, SK, SN)
    ours = ours_fn(SM, SK, SN)
    assert isinstance(ours, np.ndarray) and ours.shape == SM.shape
    _assert_close(ours, want)
    for p in points:
        direct = float(getattr(tu, fn_name)(*p, *args))
        got = ours_fn(*p)
        assert isinstance(got, float), type(got)
        assert got == pytest.approx(direct, rel=RTOL, abs=0), p
        assert float(ref(*(np.array(v) for v in p))) == pytest.approx(direct, rel=1e-12, abs=0)


def _check_kernels(torchao_fn, ours_fn, d0: np.ndarray, d1: np.ndarray) -> None:
    """Per-kernel lists: same length, element-wise equal (arrays and a few scalars)."""
    X, Y = sympy.symbols("X Y")
    exprs = torchao_fn(X, Y)
    ours = ours_fn(d0, d1)
    assert isinstance(ours, list) and len(ours) == len(exprs)
    for i, (e, o) in enumerate(zip(exprs, ours, strict=True)):
        want = _lambdify(e, (X, Y))(d0, d1)
        assert isinstance(o, np.ndarray) and o.shape == d0.shape, i
        _assert_close(o, want)
    for a, b in [(1, 1), (31, 33), (4096, 129), (2**17, 2**17)]:
        direct = [float(v) for v in torchao_fn(a, b)]
        got = ours_fn(a, b)
        assert len(got) == len(direct)
        for g, w in zip(got, direct, strict=True):
            assert isinstance(g, float) and g == pytest.approx(w, rel=RTOL, abs=0)


# ------------------------------------------------------------------ the reference itself


def test_lambdified_reference_matches_subs() -> None:
    """lambdify handles Max, floor and rationals like sympy's own .subs (what torchao uses)."""
    gpu = "NVIDIA B200"
    specs = tu.get_specs(gpu)
    exprs = [
        tu.get_gemm_time_sympy(M, K, N, FP8, None, "mxfp8_cublas", gpu),  # Max + floor /32
        tu.get_gemm_time_sympy(M, K, N, FP4, None, "mxfp4_cutlass", gpu),  # fp4 bytes 0.5
        tu.get_inference_gemm_time_sympy(M, K, N, FP4, "nvfp4", gpu),  # floor /16
        tu.get_float8_mem_sympy(M, K, N, "rowwise", None, True, gpu),  # sum of Max
        tu.get_inference_float8_mem_sympy(M, K, N, "mxfp8_cublas", gpu),  # M*floor(K/32)
        tu.get_inference_float8_mem_sympy(M, K, N, "nvfp4", gpu),  # M*floor(K/16)
        tu.get_blockwise_float8_mem_sympy(M, K, N, False, gpu),  # rationals /128, /128**2
        tu.get_blockwise_gemm_time_sympy(M, K, N, gpu),
        *tu.get_tensor_memory_traffic_ovhd_s(specs, M, K, "weight", "tensorwise", None),
    ]
    # memory-bound points where the floors cut a fraction off: K*(M+N) = 16383*131074,
    # /32 = 67105791.9 (GEMM scale reads); 4127/32 = 128.97 (inference scale writes)
    points = [(1, 1, 1), (33, 31, 129), (16385, 4127, 97), (5, 16383, 131069),
              (16384, 8192, 1280)]
    for expr in exprs:
        f = _lambdify(expr)
        for p in points:
            want = float(expr.subs(M, p[0]).subs(K, p[1]).subs(N, p[2]))
            got = float(f(*(np.array(v) for v in p)))
            assert got == pytest.approx(want, rel=1e-12, abs=0), (expr, p)
    # ... and at those points the floors change the result (so lambdify's floor is exercised)
    for expr, p in [(exprs[0], (5, 16383, 131069)), (exprs[4], (16385, 4127, 97))]:
        assert expr.has(sympy.floor) and expr.has(sympy.Max)
        no_floor = expr.replace(sympy.floor, lambda x: x)
        # (a fraction of one byte-time in ~1 ms: 2e-10 relative, far above float rounding)
        assert float(_lambdify(no_floor)(*p)) > float(_lambdify(expr)(*p)) * (1 + 1e-12)


# ------------------------------------------------------------------ table and names


def test_gpu_table_keys_and_specs() -> None:
    assert list(rt.gpu_name_to_specs) == GPUS
    for gpu in GPUS:
        assert rt.get_specs(gpu) == tu.get_specs(gpu), gpu
        assert rt.gpu_name_to_specs[gpu] == tu.gpu_name_to_specs[gpu], gpu
    assert rt.KERNEL_LAUNCH_OVERHEAD_SEC == tu.KERNEL_LAUNCH_OVERHEAD_SEC
    for name in ("BYTES_PER_EL_FLOAT4", "BYTES_PER_EL_FLOAT8", "BYTES_PER_EL_BF16",
                 "BYTES_PER_EL_FLOAT32", "BLOCKWISE_FP8_BLOCK_SIZE"):
        assert getattr(rt, name) == getattr(tu, name), name


def test_gpu_table_filled_at_import() -> None:
    """``from ... import gpu_name_to_specs`` must see the table before any call."""
    code = ("from roofline.compat.torchao import gpu_name_to_specs as t; "
            "print(len(t), t['NVIDIA H100']['peak_mem_bw_bytes_sec'])")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(rl.__path__[0])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.split() == [str(len(GPUS)), "2400000000000.0"]


@pytest.mark.parametrize("name", [
    *GPUS,
    "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA B200",
    "NVIDIA GB200 NVL72", "NVIDIA B300 SXM6 AC", "AMD Instinct MI300X VF",
    "NVIDIA GeForce RTX 5090 D",
    # torchao's startswith quirk: matches a key it merely starts with
    "NVIDIA H1000",
    # torchao raises ValueError for these (no key is a prefix; matching is case-sensitive)
    "NVIDIA H200", "NVIDIA B300", "NVIDIA A100-SXM4-80GB", "nvidia h100", "H100",
    " NVIDIA H100", "AMD Instinct MI325X", "",
])
def test_get_roofline_gpu_name(name: str) -> None:
    try:
        want = tu.get_roofline_gpu_name(name)
    except ValueError:
        with pytest.raises(ValueError, match="Unrecognized GPU"):
            rt.get_roofline_gpu_name(name)
        with pytest.raises(ValueError):
            rt.get_specs(name)
        return
    assert rt.get_roofline_gpu_name(name) == want
    assert rt.get_specs(name) == tu.get_specs(name)


def test_get_roofline_gpu_name_detects_like_torchao(monkeypatch) -> None:
    """gpu_name=None reads torch.cuda.get_device_name(0), as in torchao."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    assert tu.get_roofline_gpu_name(None) == "NVIDIA H100"
    assert rt.get_roofline_gpu_name(None) == "NVIDIA H100"
    assert rt.get_specs() == tu.get_specs()
    assert rt.get_gemm_time_sympy(4096, 4096, 4096, BF16, None, None, None) == pytest.approx(
        float(tu.get_gemm_time_sympy(4096, 4096, 4096, BF16, None, None, None)), rel=RTOL)


# ------------------------------------------------------------------ training


@pytest.mark.parametrize("gpu", GPUS)
def test_bf16_gemm(gpu: str) -> None:
    args = (BF16, None, None, gpu)
    _check("get_gemm_time_sympy", args, lambda m, k, n: rt.get_gemm_time_sympy(m, k, n, *args))
    args1 = (BF16, None, gpu)
    _check("get_individual_gemm_time_sympy", args1,
           lambda m, k, n: rt.get_individual_gemm_time_sympy(m, k, n, *args1))


@pytest.mark.parametrize("recipe", TRAINING, ids=TRAINING_IDS)
@pytest.mark.parametrize("gpu", GPUS)
def test_training_lowp_gemm(gpu: str, recipe: tuple) -> None:
    f8, mx = recipe
    dtype = FP4 if mx == "mxfp4_cutlass" else FP8
    args = (dtype, f8, mx, gpu)
    _check("get_gemm_time_sympy", args, lambda m, k, n: rt.get_gemm_time_sympy(m, k, n, *args))
    if dtype is FP4 and "fp4_peak_tops" not in tu.gpu_name_to_specs[gpu]:
        with pytest.raises(KeyError, match="fp4_peak_tops"):
            tu.get_gemm_time_sympy(M, K, N, *args)


@pytest.mark.parametrize("fusion", [False, True])
@pytest.mark.parametrize("recipe", TRAINING, ids=TRAINING_IDS)
@pytest.mark.parametrize("gpu", GPUS)
def test_training_float8_mem(gpu: str, recipe: tuple, fusion: bool) -> None:
    args = (*recipe, fusion, gpu)
    _check("get_float8_mem_sympy", args,
           lambda m, k, n: rt.get_float8_mem_sympy(m, k, n, *args))


@pytest.mark.parametrize("fusion", [False, True])
@pytest.mark.parametrize("recipe", TRAINING, ids=TRAINING_IDS)
@pytest.mark.parametrize("gpu", GPUS)
def test_training_tensor_traffic_per_kernel(gpu: str, recipe: tuple, fusion: bool) -> None:
    f8, mx = recipe
    t_specs, r_specs = tu.get_specs(gpu), rt.get_specs(gpu)
    for role in ROLES:
        def theirs(a, b, role=role):
            return tu.get_tensor_memory_traffic_ovhd_s(t_specs, a, b, role, f8, mx, fusion)

        def ours(a, b, role=role):
            return rt.get_tensor_memory_traffic_ovhd_s(r_specs, a, b, role, f8, mx, fusion)

        if gpu not in COMPLETE_GPUS:
            with pytest.raises(KeyError) as want:
                theirs(64, 64)
            with pytest.raises(KeyError) as got:
                ours(D0, D1)
            assert got.value.args == want.value.args
            continue
        _check_kernels(theirs, ours, D0, D1)


# ------------------------------------------------------------------ blockwise


@pytest.mark.parametrize("gpu", GPUS)
def test_blockwise_gemm_and_mem(gpu: str) -> None:
    _check("get_blockwise_gemm_time_sympy", (gpu,),
           lambda m, k, n: rt.get_blockwise_gemm_time_sympy(m, k, n, gpu))
    for fusion in (False, True):
        _check("get_blockwise_float8_mem_sympy", (fusion, gpu),
               lambda m, k, n, f=fusion: rt.get_blockwise_float8_mem_sympy(m, k, n, f, gpu))


@pytest.mark.parametrize("gpu", GPUS)
def test_blockwise_quant_and_mem_time(gpu: str) -> None:
    X, S, B = sympy.symbols("X S B")
    numel = SM * SK  # up to 2**34
    # scales as Float8BlockwiseLinear has them: 1 x 128 (activations), 128 x 128 (weights)
    for scale in (numel / 128, numel / 128**2):
        for fuse in (False, True):
            try:
                expr = tu.get_blockwise_quant_ovhd_s(X, S, gpu, fuse)
            except KeyError as exc:
                with pytest.raises(KeyError) as info:
                    rt.get_blockwise_quant_ovhd_s(numel, scale, gpu, fuse)
                assert info.value.args == exc.args
                continue
            want = _lambdify(expr, (X, S))(numel, scale)
            _assert_close(rt.get_blockwise_quant_ovhd_s(numel, scale, gpu, fuse), want)
            got = rt.get_blockwise_quant_ovhd_s(4096 * 4096, 4096 * 4096 / 128, gpu, fuse)
            direct = float(tu.get_blockwise_quant_ovhd_s(
                4096 * 4096, sympy.Integer(4096 * 4096) / 128, gpu, fuse))
            assert got == pytest.approx(direct, rel=RTOL, abs=0)
    # bytes: 0, fractional, tiny and huge
    rng = np.random.default_rng(7)
    nbytes = np.concatenate([[0.0, 0.5, 1.0, 4600.0, 4.6e6, 2.0**60],
                             np.exp(rng.uniform(0, np.log(1e13), 2000))])
    try:
        expr = tu.get_blockwise_mem_time_sympy(B, gpu)
    except KeyError as exc:
        with pytest.raises(KeyError) as info:
            rt.get_blockwise_mem_time_sympy(nbytes, gpu)
        assert info.value.args == exc.args
        return
    _assert_close(rt.get_blockwise_mem_time_sympy(nbytes, gpu), _lambdify(expr, (B,))(nbytes))
    for b in (0, 12345, 10**12):
        assert rt.get_blockwise_mem_time_sympy(b, gpu) == pytest.approx(
            float(tu.get_blockwise_mem_time_sympy(b, gpu)), rel=RTOL, abs=0)


# ------------------------------------------------------------------ inference


def _inference_gemm_args(recipe: str) -> tuple:
    """The (dtype, recipe_name) torchao's float8_inference_roofline.py passes."""
    if recipe.startswith(("nvfp4", "mxfp4")):
        return FP4, recipe
    return FP8, ("mxfp8" if recipe.startswith("mxfp8") else None)


@pytest.mark.parametrize("gpu", GPUS)
def test_inference_bf16(gpu: str) -> None:
    args = (BF16, None, gpu)
    _check("get_inference_gemm_time_sympy", args,
           lambda m, k, n: rt.get_inference_gemm_time_sympy(m, k, n, *args))
    _check("get_inference_bf16_activation_mem_sympy", (gpu,),
           lambda m, k, n: rt.get_inference_bf16_activation_mem_sympy(m, k, n, gpu))


@pytest.mark.parametrize("recipe", INFERENCE)
@pytest.mark.parametrize("gpu", GPUS)
def test_inference(gpu: str, recipe: str) -> None:
    _check("get_inference_float8_mem_sympy", (recipe, gpu),
           lambda m, k, n: rt.get_inference_float8_mem_sympy(m, k, n, recipe, gpu))
    args = (*_inference_gemm_args(recipe), gpu)
    _check("get_inference_gemm_time_sympy", args,
           lambda m, k, n: rt.get_inference_gemm_time_sympy(m, k, n, *args))
    t_specs, r_specs = tu.get_specs(gpu), rt.get_specs(gpu)

    def theirs(a, b):
        return tu.get_inference_tensor_memory_traffic_ovhd_s(t_specs, a, b, "input", recipe)

    def ours(a, b):
        return rt.get_inference_tensor_memory_traffic_ovhd_s(r_specs, a, b, "input", recipe)

    if gpu in COMPLETE_GPUS:
        _check_kernels(theirs, ours, D0, D1)
    else:
        with pytest.raises(KeyError) as want:
            theirs(64, 64)
        with pytest.raises(KeyError) as got:
            ours(D0, D1)
        assert got.value.args == want.value.args


# ------------------------------------------------------------------ torchao's bugs


def test_rtx5090_bandwidth_bug_reproduced() -> None:
    """torchao's 1.792e15 B/s (should be 1.792e12) is kept in the torchao preset only."""
    assert tu.gpu_name_to_specs[RTX5090]["peak_mem_bw_bytes_sec"] == 1.792e15
    assert rt.get_specs(RTX5090)["peak_mem_bw_bytes_sec"] == 1.792e15
    assert rl.hardware(RTX5090, table="torchao").mem_bytes_per_s == 1.792e15
    assert rl.hardware("RTX 5090").mem_bytes_per_s == 1.792e12  # 1792 GB/s, NVIDIA's figure
    assert rl.hardware("NVIDIA GeForce RTX 5090").mem_bytes_per_s == 1.792e12
    for key in PCT_KEYS:
        assert key not in tu.get_specs(RTX5090) and key not in rt.get_specs(RTX5090)
    assert RTX5090 not in COMPLETE_GPUS  # the parametrized tests assert KeyError for it


def test_rtx5090_every_function_raises_keyerror_like_torchao() -> None:
    g, s = RTX5090, None
    calls = [
        ("get_gemm_time_sympy", (64, 64, 64, BF16, None, None, g)),
        ("get_individual_gemm_time_sympy", (64, 64, 64, FP8, None, g)),
        ("get_float8_mem_sympy", (64, 64, 64, "tensorwise", None, False, g)),
        ("get_float8_mem_sympy", (64, 64, 64, None, "mxfp4_cutlass", True, g)),
        ("get_blockwise_gemm_time_sympy", (64, 64, 64, g)),
        ("get_blockwise_float8_mem_sympy", (64, 64, 64, True, g)),
        ("get_blockwise_quant_ovhd_s", (4096, 32, g)),
        ("get_blockwise_mem_time_sympy", (4096, g)),
        ("get_inference_float8_mem_sympy", (64, 64, 64, "nvfp4", g)),
        ("get_inference_gemm_time_sympy", (64, 64, 64, FP4, "nvfp4", g)),
        ("get_inference_bf16_activation_mem_sympy", (64, 64, 64, g)),
        ("get_tensor_memory_traffic_ovhd_s", (s, 64, 64, "weight", "rowwise", None)),
        ("get_inference_tensor_memory_traffic_ovhd_s", (s, 64, 64, "input", "mxfp8")),
    ]
    for name, args in calls:
        t_args = tuple(tu.get_specs(g) if a is None and i == 0 else a for i, a in enumerate(args))
        r_args = tuple(rt.get_specs(g) if a is None and i == 0 else a for i, a in enumerate(args))
        with pytest.raises(KeyError) as want:
            getattr(tu, name)(*t_args)
        with pytest.raises(KeyError) as got:
            getattr(rt, name)(*r_args)
        assert got.value.args == want.value.args, name


def test_mxfp4_inference_name_bug_reproduced() -> None:
    gpu = "NVIDIA B200"
    with pytest.raises(ValueError, match="Unknown recipe name: mxfp4_cutlass"):
        tu.get_inference_float8_mem_sympy(M, K, N, "mxfp4_cutlass", gpu)
    with pytest.raises(ValueError, match="Unknown recipe name: mxfp4_cutlass"):
        rt.get_inference_float8_mem_sympy(SM, SK, SN, "mxfp4_cutlass", gpu)
    with pytest.raises(ValueError, match="Unknown recipe name: mxfp4_cutlass"):
        tu.get_inference_tensor_memory_traffic_ovhd_s(tu.get_specs(gpu), M, K, "input",
                                                      "mxfp4_cutlass")
    with pytest.raises(ValueError, match="Unknown recipe name: mxfp4_cutlass"):
        rt.get_inference_tensor_memory_traffic_ovhd_s(rt.get_specs(gpu), D0, D1, "input",
                                                      "mxfp4_cutlass")
    # torchao's GEMM function accepts any mxfp4* name: equal on both sides
    _check("get_inference_gemm_time_sympy", (FP4, "mxfp4_cutlass", gpu),
           lambda m, k, n: rt.get_inference_gemm_time_sympy(m, k, n, FP4, "mxfp4_cutlass", gpu))
    # our public API takes the training recipe's name for inference too
    hw = rl.hardware("B200")
    cut = rl.float8.linear(SM, SK, SN, recipe="mxfp4_cutlass", hardware=hw, mode="inference")
    mx4 = rl.float8.linear(SM, SK, SN, recipe="mxfp4", hardware=hw, mode="inference")
    for field in ("bf16_s", "fp8_gemm_s", "fp8_overhead_s"):
        np.testing.assert_array_equal(getattr(cut, field), getattr(mx4, field))
    assert np.all(np.isfinite(cut.fp8_overhead_s)) and np.all(cut.fp8_overhead_s > 0)
    one = rl.float8.linear(4096, 4096, 4096, recipe="mxfp4_cutlass", hardware=hw,
                           mode="inference")
    assert one.speedup == rl.float8.linear(4096, 4096, 4096, recipe="mxfp4", hardware=hw,
                                           mode="inference").speedup


def test_fp4_gemm_without_fp4_peak_raises_like_torchao() -> None:
    for gpu in GPUS:
        if "fp4_peak_tops" in tu.gpu_name_to_specs[gpu] or gpu not in COMPLETE_GPUS:
            continue
        for fn, args in [("get_gemm_time_sympy", (FP4, None, "mxfp4_cutlass", gpu)),
                         ("get_inference_gemm_time_sympy", (FP4, "nvfp4", gpu)),
                         ("get_individual_gemm_time_sympy", (FP4, "mxfp4", gpu))]:
            with pytest.raises(KeyError, match="fp4_peak_tops"):
                getattr(tu, fn)(16384, 16384, 16384, *args)
            with pytest.raises(KeyError, match="fp4_peak_tops"):
                getattr(rt, fn)(16384, 16384, 16384, *args)
        # the fp4 cast overhead needs no fp4 peak: it works on both sides (tested above)
        assert rt.get_float8_mem_sympy(4096, 4096, 4096, None, "mxfp4_cutlass", False, gpu) > 0


# ------------------------------------------------------------------ public API


def _torchao_hw(gpu: str):
    return rl.hardware(gpu, table="torchao")


@pytest.mark.parametrize("fusion", [False, True])
@pytest.mark.parametrize("recipe", TRAINING, ids=TRAINING_IDS)
@pytest.mark.parametrize("gpu", COMPLETE_GPUS)
def test_public_linear_training(gpu: str, recipe: tuple, fusion: bool) -> None:
    f8, mx = recipe
    name = f8 or mx
    dtype = FP4 if mx == "mxfp4_cutlass" else FP8

    def run(m, k, n):
        return rl.float8.linear(m, k, n, recipe=name, hardware=_torchao_hw(gpu),
                                efficiency="torchao", fuse_with_prev=fusion)

    if dtype is FP4 and "fp4_peak_tops" not in tu.get_specs(gpu):
        with pytest.raises(ValueError, match="fp4"):  # documented: no fp4 peak
            run(SM, SK, SN)
        return
    _check("get_gemm_time_sympy", (BF16, None, None, gpu), lambda m, k, n: run(m, k, n).bf16_s)
    _check("get_gemm_time_sympy", (dtype, f8, mx, gpu), lambda m, k, n: run(m, k, n).fp8_gemm_s)
    _check("get_float8_mem_sympy", (f8, mx, fusion, gpu),
           lambda m, k, n: run(m, k, n).fp8_overhead_s)


@pytest.mark.parametrize("fusion", [False, True])
@pytest.mark.parametrize("gpu", COMPLETE_GPUS)
def test_public_linear_blockwise(gpu: str, fusion: bool) -> None:
    def run(m, k, n):
        return rl.float8.linear(m, k, n, recipe="blockwise", hardware=_torchao_hw(gpu),
                                efficiency="torchao", fuse_with_prev=fusion)

    _check("get_gemm_time_sympy", (BF16, None, None, gpu), lambda m, k, n: run(m, k, n).bf16_s)
    _check("get_blockwise_gemm_time_sympy", (gpu,), lambda m, k, n: run(m, k, n).fp8_gemm_s)
    _check("get_blockwise_float8_mem_sympy", (fusion, gpu),
           lambda m, k, n: run(m, k, n).fp8_overhead_s)


@pytest.mark.parametrize("recipe", [r for r in INFERENCE if r != "mxfp8"])  # public names
@pytest.mark.parametrize("gpu", COMPLETE_GPUS)
def test_public_linear_inference(gpu: str, recipe: str) -> None:
    dtype, gemm_recipe = _inference_gemm_args(recipe)

    def run(m, k, n):
        return rl.float8.linear(m, k, n, recipe=recipe, hardware=_torchao_hw(gpu),
                                efficiency="torchao", mode="inference")

    if dtype is FP4 and "fp4_peak_tops" not in tu.get_specs(gpu):
        with pytest.raises(ValueError, match="fp4"):
            run(SM, SK, SN)
        return
    _check("get_inference_gemm_time_sympy", (BF16, None, gpu),
           lambda m, k, n: run(m, k, n).bf16_s)
    _check("get_inference_gemm_time_sympy", (dtype, gemm_recipe, gpu),
           lambda m, k, n: run(m, k, n).fp8_gemm_s)
    _check("get_inference_float8_mem_sympy", (recipe, gpu),
           lambda m, k, n: run(m, k, n).fp8_overhead_s)


def test_public_linear_rtx5090_falls_back_to_torchao_constants(monkeypatch) -> None:
    """efficiency="torchao" on the RTX 5090 entry uses 78 % / 92 % (torchao would raise)."""
    patched = {**tu.gpu_name_to_specs[RTX5090], "pct_achievable_gemm_tops": 0.78,
               "pct_achievable_mem_bw": 0.92}
    monkeypatch.setitem(tu.gpu_name_to_specs, RTX5090, patched)
    r = rl.float8.linear(SM, SK, SN, recipe="rowwise", hardware=_torchao_hw(RTX5090),
                         efficiency="torchao", fuse_with_prev=True)
    for fn, args, got in [("get_gemm_time_sympy", (BF16, None, None), r.bf16_s),
                          ("get_gemm_time_sympy", (FP8, "rowwise", None), r.fp8_gemm_s),
                          ("get_float8_mem_sympy", ("rowwise", None, True), r.fp8_overhead_s)]:
        expr = getattr(tu, fn)(M, K, N, *args, RTX5090)
        _assert_close(got, _lambdify(expr)(SM, SK, SN))


#: torchao benchmarks/float8/utils.py get_name_to_shapes_iter("pow2"): 2**10 .. 2**14 cubes
TORCHAO_POW2 = [(2**p, 2**p, 2**p) for p in range(10, 15)]


def _float8_roofline_rows(gpu, f8, mx, fusion, evaluate):
    """The r_* columns of torchao's float8_roofline.py run(), for TORCHAO_POW2.

    ``evaluate(fn_name, args, m, k, n)`` evaluates torchao's ``fn_name(M, K, N, *args)``.
    """
    lowp = FP4 if mx == "mxfp4_cutlass" else FP8
    exprs = [("get_gemm_time_sympy", (BF16, None, None, gpu)),
             ("get_gemm_time_sympy", (lowp, f8, mx, gpu)),
             ("get_float8_mem_sympy", (f8, mx, fusion, gpu))]
    rows = []
    for m, k, n in TORCHAO_POW2:
        b, f, o = (evaluate(fn, args, m, k, n) for fn, args in exprs)
        rows.append((m, k, n, b, f, o, f + o, b / (f + o)))
    return rows


COLUMNS = ["fwd_M", "fwd_K", "fwd_N", "r_bf16_gemm_s", "r_fp8_gemm_s", "r_fp8_ovhd_s",
           "r_fp8_gemm_and_ovhd_s", "r_fp8_gemm_and_ovhd_spdp"]


def _check_sweep(df, rows) -> None:
    assert list(df.columns[-len(COLUMNS):]) == COLUMNS
    want = np.array(rows, dtype=np.float64)
    np.testing.assert_array_equal(df[COLUMNS[:3]].to_numpy(), want[:, :3])
    _assert_close(df[COLUMNS[3:]].to_numpy(dtype=np.float64), want[:, 3:])


def test_public_sweep_pow2_exactly_as_float8_roofline() -> None:
    """Replicates float8_roofline.py's per-row ``.subs(M).subs(K).subs(N)`` literally."""
    gpu = "NVIDIA H100"

    def subs(fn, args, m, k, n):
        e = _ref(fn, *args)[0]
        return float(e.subs(M, m).subs(K, k).subs(N, n))

    for f8, mx, fusion in [("tensorwise", None, False), (None, "mxfp8_32x32_weight", True)]:
        df = rl.float8.sweep(shapes="pow2", recipe=f8 or mx, hardware=_torchao_hw(gpu),
                             efficiency="torchao", fuse_with_prev=fusion, columns="torchao")
        _check_sweep(df, _float8_roofline_rows(gpu, f8, mx, fusion, subs))


@pytest.mark.parametrize("fusion", [False, True])
@pytest.mark.parametrize("recipe", TRAINING, ids=TRAINING_IDS)
@pytest.mark.parametrize("gpu", COMPLETE_GPUS)
def test_public_sweep_pow2(gpu: str, recipe: tuple, fusion: bool) -> None:
    f8, mx = recipe
    kwargs = dict(shapes="pow2", recipe=f8 or mx, hardware=_torchao_hw(gpu),
                  efficiency="torchao", fuse_with_prev=fusion, columns="torchao")
    if mx == "mxfp4_cutlass" and "fp4_peak_tops" not in tu.get_specs(gpu):
        with pytest.raises(ValueError, match="fp4"):  # torchao: KeyError('fp4_peak_tops')
            rl.float8.sweep(**kwargs)
        return
    df = rl.float8.sweep(**kwargs)

    def lam(fn, args, m, k, n):
        return float(_ref(fn, *args)[1](np.array(m), np.array(k), np.array(n)))

    _check_sweep(df, _float8_roofline_rows(gpu, f8, mx, fusion, lam))
