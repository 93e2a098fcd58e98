"""float8 linear estimates over a set of shapes: torchao float8_roofline's named shape sets
and its table (``columns="torchao"``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

import numpy as np

from .._checks import _show, contains_bool, one_of, positive_int_array
from ..efficiency import EfficiencyLike
from ..hardware import HardwareLike
from .layer import linear

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SHAPE_SETS", "TORCHAO_COLUMNS", "ShapesLike", "shape_table", "shapes", "sweep"]


ShapesLike = (
    str | Iterable[tuple[int, int, int]] | dict[str, tuple[int, int, int]] | np.ndarray
)


def shapes(name: str) -> list[tuple[str, tuple[int, int, int]]]:
    """torchao float8_roofline's named shape sets as (name, (M, K, N)) pairs.

    ``pow2``: M = K = N = 1024 .. 16384; ``pow2_extended``: those and 1.5x each;
    ``sweep``: every (M, K, N) in 256 .. 32768 (powers of two, 512 shapes); ``square``:
    256 .. 32768 cubes; ``llama``: Llama-2 70B linears at M = 16384.
    """
    key = one_of("float8.shapes", "shapes", name, {s: s for s in SHAPE_SETS})
    return SHAPE_SETS[key]()


def _pow2() -> list[tuple[str, tuple[int, int, int]]]:
    return [(str(i), (2**p,) * 3) for i, p in enumerate(range(10, 15))]


def _pow2_extended() -> list[tuple[str, tuple[int, int, int]]]:
    out = []
    for i, p in enumerate(range(10, 15)):
        out.append((str(2 * i), (2**p,) * 3))
        v = 2**p + 2 ** (p - 1)
        out.append((str(2 * i + 1), (v, v, v)))
    return out


def _sweep() -> list[tuple[str, tuple[int, int, int]]]:
    vals = [2**p for p in range(8, 16)]
    return [(str(i), (m, k, n)) for i, (m, k, n) in
            enumerate((m, k, n) for m in vals for k in vals for n in vals)]


def _square() -> list[tuple[str, tuple[int, int, int]]]:
    return [(str(i), (2**p,) * 3) for i, p in enumerate(range(8, 16))]


def _llama() -> list[tuple[str, tuple[int, int, int]]]:
    m = 4 * 4096
    return [
        ("attn.wqkv", (m, 8192, 1280)),
        ("attn.w0", (m, 1024, 8192)),
        ("ffn.w13", (m, 8192, 7168)),
        ("ffn.w2", (m, 3584, 8192)),
    ]


SHAPE_SETS = {
    "pow2": _pow2,
    "pow2_extended": _pow2_extended,
    "sweep": _sweep,
    "square": _square,
    "llama": _llama,
}


def shape_table(spec: ShapesLike) -> tuple[list[str], np.ndarray]:
    """Names and an (n, 3) float array of (M, K, N) from a set name or explicit shapes."""
    fn = "float8.sweep"
    if isinstance(spec, str):
        pairs = shapes(spec)
        return [p[0] for p in pairs], np.array([p[1] for p in pairs], dtype=np.float64)
    what = "a shape-set name, a list of (M, K, N), a dict name -> (M, K, N) or an (n, 3) array"
    if isinstance(spec, dict):
        names = [str(k) for k in spec]
        rows = list(spec.values())
    elif isinstance(spec, (np.ndarray, list, tuple)) or (
        isinstance(spec, Iterable) and not isinstance(spec, (bytes, Mapping))
    ):
        rows = list(spec)
        names = [str(i) for i in range(len(rows))]
    else:
        raise TypeError(f"{fn}: shapes must be {what}, got {spec!r}")
    if contains_bool(rows):
        raise TypeError(f"{fn}: shapes must hold positive integers, got a bool in {_show(rows)}")
    try:
        arr = np.asarray(rows)
    except ValueError:
        raise ValueError(
            f"{fn}: shapes must be {what}; every entry needs three dimensions, got {_show(rows)}"
        ) from None
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] == 0:
        raise ValueError(
            f"{fn}: shapes must be a shape-set name or a non-empty list of (M, K, N), "
            f"got array of shape {arr.shape}"
        )
    return names, positive_int_array(fn, "shapes", arr)


#: ``columns="torchao"``: our column names -> torchao float8_roofline's.
TORCHAO_COLUMNS = {
    "name": "name", "m": "fwd_M", "k": "fwd_K", "n": "fwd_N", "bf16_s": "r_bf16_gemm_s",
    "fp8_gemm_s": "r_fp8_gemm_s", "fp8_overhead_s": "r_fp8_ovhd_s",
    "fp8_s": "r_fp8_gemm_and_ovhd_s", "gpu_speedup": "r_fp8_gemm_and_ovhd_spdp",
}


def sweep(
    shapes: ShapesLike = "pow2",
    recipe: str = "tensorwise",
    hardware: HardwareLike = None,
    mode: str = "training",
    fuse_with_prev: bool = False,
    *,
    efficiency: EfficiencyLike = "default",
    columns: Literal["roofline", "torchao"] = "roofline",
    launch: str = "compiled",
) -> pd.DataFrame:
    """float8 linear estimates for a set of shapes, as a pandas DataFrame (one row per shape).

    Parameters
    ----------
    shapes : str, list of (M, K, N), dict name -> (M, K, N), or (n, 3) array
        A named set (``pow2``, ``pow2_extended``, ``sweep``, ``square``, ``llama``) or
        explicit shapes.
    recipe, hardware, mode, fuse_with_prev, efficiency, launch
        As for :func:`linear`.
    columns : {"roofline", "torchao"}
        ``"roofline"`` (default): ``name`` (the shape's name: ``"8192x8192x8192"``, a
        ``llama`` layer such as ``"ffn.w13"``, or your dict key), ``m``, ``k``, ``n``,
        ``recipe``, ``mode``, ``hardware``, ``bf16_s``, ``fp8_gemm_s``, ``fp8_overhead_s``,
        ``fp8_s``, ``gpu_speedup``, ``launch``, ``bf16_wall_s``, ``wall_s``, ``speedup``
        (the attributes of :class:`Float8Linear`; ``speedup`` per call, host time included).
        ``"torchao"``: torchao float8_roofline's table, names and all: ``name`` (torchao's
        row index for the numbered sets), ``fwd_M``, ``fwd_K``, ``fwd_N``,
        ``r_bf16_gemm_s``, ``r_fp8_gemm_s``, ``r_fp8_ovhd_s``, ``r_fp8_gemm_and_ovhd_s``,
        ``r_fp8_gemm_and_ovhd_spdp`` (``r_`` = roofline, ``spdp`` = speedup: GPU time only,
        our ``gpu_speedup``, as torchao computes it).

    Returns
    -------
    pandas.DataFrame
    """
    import pandas as pd

    style = one_of("float8.sweep", "columns", columns, {"roofline": "roofline",
                                                         "torchao": "torchao"})
    names, table = shape_table(shapes)
    r = linear(table[:, 0], table[:, 1], table[:, 2], recipe, hardware, mode, fuse_with_prev,
               efficiency=efficiency, launch=launch)
    dims = table.astype(np.int64)
    if style == "torchao":
        return pd.DataFrame({
            "name": names, "fwd_M": dims[:, 0], "fwd_K": dims[:, 1], "fwd_N": dims[:, 2],
            "r_bf16_gemm_s": r.bf16_s, "r_fp8_gemm_s": r.fp8_gemm_s,
            "r_fp8_ovhd_s": r.fp8_overhead_s, "r_fp8_gemm_and_ovhd_s": r.fp8_s,
            "r_fp8_gemm_and_ovhd_spdp": r.gpu_speedup,
        })
    numbered = names == [str(i) for i in range(len(names))]
    if numbered:
        names = [f"{m}x{k}x{n}" for m, k, n in dims.tolist()]
    frame = r.to_pandas()
    frame.insert(0, "name", names)
    return frame.drop(columns=["fuse_with_prev"])
