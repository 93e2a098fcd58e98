"""Two builds of the core give the same sweeps, bit for bit (for speed-only changes).

Dumps the default-, peak- and torchao-model float8 linear sweeps (every recipe, both modes,
H100 SXM, H200, B200, MI300X, L4, A100; one and two threads) and the GEMM sweep on the packaged
terms and off them (per-SM bandwidth cap, p = 3, p = 0), on random shapes; errors are recorded
as their messages, so both builds must also refuse alike. Keep a copy of the old package (with
its _core .so) and run each build in its own interpreter:

    PYTHONPATH=/tmp/old python benchmarks/compare_builds.py dump /tmp/old.npz 30000
    PYTHONPATH=python python benchmarks/compare_builds.py dump /tmp/new.npz 30000
    python benchmarks/compare_builds.py compare /tmp/old.npz /tmp/new.npz
"""

import sys
from typing import Any

import numpy as np

RECIPES = ["tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8_cublas", "mxfp8_cublas_rceil",
           "mxfp8_emulated", "mxfp8_cutlass", "mxfp8_32x32_flexible_gemm_layout",
           "mxfp8_32x32_weight", "mxfp4_cutlass", "nvfp4", "nvfp4_static",
           "nvfp4_no_global_scale", "blockwise"]
HW = ["H100 SXM", "H200", "B200", "MI300X", "L4", "A100 SXM 80GB"]


def dump(path: str, points: int) -> None:
    import roofline as rl
    from roofline import _core
    from roofline._dtypes import DTYPES, default_out
    from roofline._params.resolve import resolve
    out: dict[str, Any] = {}  # arrays (np.savez keywords)
    rng = np.random.default_rng(123)
    linears = 0
    for hi, name in enumerate(HW):
        hw = rl.hardware(name)
        for eff in ("default", "peak", "torchao"):
            for ri, recipe in enumerate(RECIPES):
                for mode in ("training", "inference"):
                    n_pts = points if eff == "default" else points // 8
                    # log-uniform shapes, a few small and repeated extents, one thread
                    s = np.exp(rng.uniform(0, np.log(70000), size=(n_pts, 3))).round() + 1
                    s[::5, 2] = s[::5, 0]
                    s[::11, 1] = s[::11, 2]
                    m, k, n = (np.ascontiguousarray(s[:, i]) for i in range(3))
                    fuse = bool((hi + ri) % 2)
                    key = f"{name}|{eff}|{recipe}|{mode}"
                    rl.set_num_threads(1 + (ri % 2))
                    try:
                        r = rl.float8.linear(m, k, n, recipe, hw, mode, fuse, efficiency=eff)
                        out[key] = np.stack([np.asarray(r.bf16_s), np.asarray(r.fp8_gemm_s),
                                             np.asarray(r.fp8_overhead_s), np.asarray(r.fp8_s)])
                        linears += n_pts
                    except Exception as exc:  # recorded: both builds must raise alike
                        out[key] = np.frombuffer(repr(exc).encode(), dtype=np.uint8)
    rl.set_num_threads(0)
    # The GEMM sweep off the packaged defaults: per-SM bandwidth cap, p = 3, p = 0 (max).
    gemms = 0
    for variant in ("default", "capped", "p3", "p0"):
        large = np.exp(rng.uniform(0, np.log(70000), size=(points, 4))) + 0.5
        small = np.exp(rng.uniform(0, np.log(600), size=(points, 4))).round() + 1
        shapes = np.concatenate([large, small, large.round()])
        m, k, n = (np.ascontiguousarray(shapes[:, i]) for i in range(3))
        batch = np.where(shapes[:, 3] < 5, np.ceil(shapes[:, 3]), 1.0)
        for name in HW:
            hw, chw, ceff = resolve(name, "default")
            eff = ceff
            if variant != "default":
                eff = _core.Efficiency(
                    ceff.compute_fraction, ceff.memory_fraction, ceff.kernel_floor_s, False,
                    True, ceff.gemm_latency_s, ceff.memory_latency_s,
                    {"capped": 4.0, "p3": 3.0, "p0": 0.0}[variant],
                    3e10 if variant == "capped" else 0.0)
                eff.gemm = ceff.gemm
            for dtype in ("bf16", "fp8", "nvfp4"):
                dt = DTYPES[dtype]
                if not getattr(hw, f"{_core.peak_class(dt).name}_flops_per_s"):
                    continue
                for sc in ("none", "tensorwise", "rowwise"):
                    if sc != "none" and dtype != "fp8":
                        continue
                    args = (m, k, n, batch, dt, dt, default_out(dt), False, chw, eff)
                    r = _core.gemm_sweep(*args, 1, getattr(_core.Scaling, sc))
                    out[f"gemm|{variant}|{name}|{dtype}|{sc}"] = np.stack(list(r))
                    gemms += len(m)
    np.savez(path, **out)
    print(f"{linears} linears, {gemms} GEMMs, {len(out)} arrays -> {path}")


def compare(a_path: str, b_path: str) -> None:
    a, b = np.load(a_path), np.load(b_path)
    assert sorted(a.files) == sorted(b.files), "different keys"
    bad = 0
    values = 0
    for key in a.files:
        x, y = a[key], b[key]
        values += x.size
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            bad += 1
            print("DIFF", key)
    print(f"{len(a.files)} arrays, {values} values compared, {bad} differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 20000)
    else:
        compare(sys.argv[2], sys.argv[3])
