"""Bad input to the public API raises at the boundary, naming the argument and the value.

The contract (DESIGN.md): ``ValueError("gemm: k must be a positive integer, got 0")``;
unknown names raise ``KeyError`` listing close matches; never a crash, NaN or silent zero.
Each case is checked in scalar form and, where it applies, inside an array.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

import roofline as rl


@pytest.fixture(autouse=True)
def _constant_default_model() -> Iterator[None]:
    """These tests derive numbers by hand for the constant model (78 % / 92 % / 2 µs, exact
    bytes), so they pin ``efficiency="default"`` to it; the calibrated default model is
    checked in tests/test_validation.py and tests/test_calibrated.py."""
    rl.set_default_efficiency("constant")
    yield
    rl.set_default_efficiency(None)


HW = "H100 SXM"
BIG = 2**53  # 9007199254740992: largest dimension accepted
TOO_BIG = f"a positive integer no larger than 2**53 ({BIG})"


def call_gemm(name: str, value: Any) -> Any:
    args = {"m": 64, "k": 64, "n": 64, "batch": 1}
    args[name] = value
    return rl.gemm(args["m"], args["k"], args["n"], "bf16", HW, batch=args["batch"])


def call_elementwise(name: str, value: Any) -> Any:
    args = {"numel": 4096, "reads": 1, "writes": 1}
    args[name] = value
    return rl.elementwise(args["numel"], args["reads"], args["writes"], hardware=HW)


def call_linear(name: str, value: Any) -> Any:
    args = {"m": 64, "k": 64, "n": 64}
    args[name] = value
    return rl.float8.linear(args["m"], args["k"], args["n"], "tensorwise", HW)


def call_sweep(name: str, value: Any) -> Any:
    """float8.sweep with one dimension of an explicit (M, K, N) shape replaced."""
    shape: list[Any] = [64, 64, 64]
    shape["mkn".index(name)] = value
    return rl.float8.sweep([tuple(shape)], "tensorwise", HW)


# (function, callable, argument names that must be positive)
POSITIVE_ARGS: list[tuple[str, Callable[[str, Any], Any], str]] = [
    ("gemm", call_gemm, "m"),
    ("gemm", call_gemm, "k"),
    ("gemm", call_gemm, "n"),
    ("gemm", call_gemm, "batch"),
    ("elementwise", call_elementwise, "numel"),
    ("float8.linear", call_linear, "m"),
    ("float8.linear", call_linear, "k"),
    ("float8.linear", call_linear, "n"),
]
IDS = [f"{fn}-{arg}" for fn, _, arg in POSITIVE_ARGS]

# bad scalar -> (exception, the message's tail after "<fn>: <arg> must be ")
BAD_SCALARS: list[tuple[Any, type[Exception], str]] = [
    (0, ValueError, "a positive integer, got 0"),
    (-5, ValueError, "a positive integer, got -5"),
    (-0.0, ValueError, "a positive integer, got -0.0"),
    (np.int64(0), ValueError, "a positive integer, got 0"),
    (float("nan"), ValueError, "a positive integer, got nan"),
    (float("inf"), ValueError, "a positive integer, got inf"),
    (float("-inf"), ValueError, "a positive integer, got -inf"),
    (2.5, ValueError, "a positive integer, got 2.5"),
    (np.float32(0.5), ValueError, "a positive integer, got 0.5"),
    (BIG + 1, ValueError, f"a positive integer no larger than 2**53 ({BIG}), got {BIG + 1}"),
    (2**70, ValueError, f"a positive integer no larger than 2**53 ({BIG}), got {2**70}"),
    (-(2**70), ValueError, f"a positive integer, got {-(2**70)}"),
    (1e300, ValueError, f"a positive integer no larger than 2**53 ({BIG}), got 1e+300"),
    (np.complex64(1), TypeError, "a positive integer, got (1+0j)"),
    ("4096", TypeError, "a positive integer, got string '4096'"),
    (b"4096", TypeError, "a positive integer, got string b'4096'"),
    (True, TypeError, "a positive integer, got bool True"),
    (np.bool_(False), TypeError, "a positive integer, got bool False"),
    (None, TypeError, "a positive integer or an array of them, got None"),
    (1 + 2j, TypeError, "a positive integer, got (1+2j)"),
    (Decimal("4096"), TypeError, "a positive integer, got Decimal('4096')"),
    ({"m": 1}, TypeError, "a positive integer or an array of them, got {'m': 1}"),
]


def expect(exc: type[Exception], fn: str, arg: str, tail: str) -> Any:
    """pytest.raises for '<fn>: <arg> must be <tail>' (or 'must not ...' when tail says so)."""
    verb = "must" if tail.startswith("not ") else "must be"
    return pytest.raises(exc, match=re.escape(f"{fn}: {arg} {verb} {tail}"))


def assert_finite_positive(*values: Any) -> None:
    for v in values:
        a = np.asarray(v, dtype=np.float64)
        assert np.all(np.isfinite(a)) and np.all(a > 0), v


# ------------------------------------------------------------------ scalar dimensions


@pytest.mark.parametrize(("fn", "call", "arg"), POSITIVE_ARGS, ids=IDS)
@pytest.mark.parametrize(("value", "exc", "tail"), BAD_SCALARS,
                         ids=[repr(v)[:24] for v, _, _ in BAD_SCALARS])
def test_bad_scalar_dimension(fn: str, call: Any, arg: str, value: Any, exc: type[Exception],
                              tail: str) -> None:
    with expect(exc, fn, arg, tail):
        call(arg, value)


@pytest.mark.parametrize("arg", ["m", "k", "n"])
@pytest.mark.parametrize(("value", "exc", "tail"), [
    (0, ValueError, "a positive integer, got 0 (at shapes[0, {i}])"),
    (-3, ValueError, "a positive integer, got -3 (at shapes[0, {i}])"),
    (float("nan"), ValueError, "a positive integer, got nan (at shapes[0, {i}])"),
    (float("inf"), ValueError, "a positive integer, got inf (at shapes[0, {i}])"),
    (2.5, ValueError, "a positive integer, got 2.5 (at shapes[0, {i}])"),
    (BIG * 2, ValueError, f"{TOO_BIG}, got {BIG * 2} (at shapes[0, {{i}}])"),
    (2**70, ValueError, f"{TOO_BIG}, got {2**70} (at shapes[0, {{i}}])"),
])
def test_bad_sweep_dimension(arg: str, value: Any, exc: type[Exception], tail: str) -> None:
    tail = tail.format(i="mkn".index(arg))
    with expect(exc, "float8.sweep", "shapes", tail):
        call_sweep(arg, value)


@pytest.mark.parametrize("arg", ["m", "k", "n"])
@pytest.mark.parametrize("value", ["64", True, None, 1j, object()])
def test_bad_sweep_dimension_type(arg: str, value: Any) -> None:
    with pytest.raises(TypeError, match=r"float8\.sweep: shapes must"):
        call_sweep(arg, value)


@pytest.mark.parametrize("name", ["reads", "writes"])
@pytest.mark.parametrize(("value", "exc", "tail"), [
    (-1, ValueError, "a non-negative integer, got -1"),
    (2.5, ValueError, "a non-negative integer, got 2.5"),
    (float("nan"), ValueError, "a non-negative integer, got nan"),
    (float("inf"), ValueError, "a non-negative integer, got inf"),
    (BIG + 1, ValueError, f"a non-negative integer no larger than 2**53 ({BIG}), got {BIG + 1}"),
    (2**70, ValueError, f"a non-negative integer no larger than 2**53 ({BIG}), got {2**70}"),
    ("1", TypeError, "a non-negative integer, got string '1'"),
    (True, TypeError, "a non-negative integer, got bool True"),
    (None, TypeError, "a non-negative integer or an array of them, got None"),
    (1j, TypeError, "a non-negative integer, got 1j"),
    (np.array([1, -1]), ValueError, "a non-negative integer, got -1 (at {name}[1])"),
    (np.array([]), ValueError, "not be an empty array, got array([], dtype=float64)"),
    ([1, None], TypeError, "a non-negative integer or an array of them, got [1, None]"),
])
def test_bad_elementwise_counts(name: str, value: Any, exc: type[Exception], tail: str) -> None:
    with expect(exc, "elementwise", name, tail.format(name=name)):
        call_elementwise(name, value)


def test_elementwise_that_moves_nothing_is_refused() -> None:
    msg = re.escape("elementwise: reads + writes must be at least 1 (a kernel that moves no "
                    "data), got reads=0, writes=0")
    with pytest.raises(ValueError, match=msg):
        rl.elementwise(4096, reads=0, writes=0, hardware=HW, efficiency="peak")
    with pytest.raises(ValueError, match=msg):
        rl.elementwise(4096, reads=[1, 0], writes=[1, 0], hardware=HW)
    # but either alone is fine: a fill (writes only), a reduction read (reads only)
    assert rl.elementwise(4096, reads=0, writes=1, hardware=HW).bytes == 4096 * 2
    assert rl.elementwise(4096, reads=1, writes=0, hardware=HW).bytes == 4096 * 2


@pytest.mark.parametrize(("value", "exc", "tail"), [
    (-1.0, ValueError, "finite and >= 0, got -1.0"),
    (float("nan"), ValueError, "finite and >= 0, got nan"),
    (float("inf"), ValueError, "finite and >= 0, got inf"),
    ("4", TypeError, "a real number, got '4'"),
    (True, TypeError, "a real number, got True"),
    (None, TypeError, "a real number, got None"),
    (1j, TypeError, "a real number, got 1j"),
    ([1.0], TypeError, "a real number, got [1.0]"),
])
def test_bad_flops_per_element(value: Any, exc: type[Exception], tail: str) -> None:
    with expect(exc, "elementwise", "flops_per_element", tail):
        rl.elementwise(4096, flops_per_element=value, hardware=HW)


# ------------------------------------------------------------------- array dimensions

BAD_ARRAYS: list[tuple[Any, type[Exception], str]] = [
    (np.array([64, 0]), ValueError, "a positive integer, got 0 (at {arg}[1])"),
    (np.array([[64], [-2]]), ValueError, "a positive integer, got -2 (at {arg}[1, 0])"),
    (np.array([64.0, np.nan]), ValueError, "a positive integer, got nan (at {arg}[1])"),
    (np.array([np.inf]), ValueError, "a positive integer, got inf (at {arg}[0])"),
    (np.array([64, 2.5]), ValueError, "a positive integer, got 2.5 (at {arg}[1])"),
    (np.array([-1], dtype=np.int8), ValueError, "a positive integer, got -1 (at {arg}[0])"),
    (np.array([2**60], dtype=np.int64), ValueError,
     f"a positive integer no larger than 2**53 ({BIG}), got {2**60} (at {{arg}}[0])"),
    (np.array([2**64 - 1], dtype=np.uint64), ValueError,
     f"a positive integer no larger than 2**53 ({BIG}), got {2**64 - 1} (at {{arg}}[0])"),
    ([64, 2**70], ValueError, f"{TOO_BIG}, got {2**70} (at {{arg}}[1])"),
    ([64, 0], ValueError, "a positive integer, got 0 (at {arg}[1])"),
    (np.array([]), ValueError, "not be an empty array, got array([], dtype=float64)"),
    (np.zeros((3, 0)), ValueError, "not be an empty array"),
    ([], ValueError, "not be an empty array, got []"),
    (np.array(["64"]), TypeError, "a positive integer or an array of them, got array(['64']"),
    (np.array([True]), TypeError, "a positive integer or an array of them, got array([ True])"),
    ([True, 2], TypeError, "a positive integer or an array of them, got [True, 2]"),
    (np.array([1 + 0j]), TypeError,
     "a positive integer or an array of them, got array([1.+0.j]) (dtype complex128)"),
    (np.array([64, None], dtype=object), TypeError,
     "a positive integer or an array of them, got array([64, None], dtype=object) "
     "(dtype object)"),
    (np.array([object()]), TypeError, "a positive integer or an array of them"),
    ([[64, 128], [256]], TypeError,
     "a positive integer or an array of them, got [[64, 128], [256]]"),
    (np.ma.masked_array([64, 128], mask=[False, True]), ValueError, "not have masked elements"),
]


@pytest.mark.parametrize(("fn", "call", "arg"), POSITIVE_ARGS, ids=IDS)
@pytest.mark.parametrize(("value", "exc", "tail"), BAD_ARRAYS,
                         ids=[f"case{i}" for i in range(len(BAD_ARRAYS))])
def test_bad_array_dimension(fn: str, call: Any, arg: str, value: Any, exc: type[Exception],
                             tail: str) -> None:
    with expect(exc, fn, arg, tail.format(arg=arg)):
        call(arg, value)


def test_first_bad_extent_scan() -> None:
    # The compiled scan behind every extent check: the first value that is not an integer in
    # [lo, hi], NaN, infinities, fractions and signed zero included, or -1.
    from roofline import _core

    def reference(a: np.ndarray, lo: float, hi: float) -> int:
        with np.errstate(invalid="ignore"):
            good = (a >= lo) & (a <= hi) & (a == np.floor(a))
        bad = np.flatnonzero(~good)
        return int(bad[0]) if bad.size else -1

    cases = [
        np.array([1.0, 2.0, 2.0**53]),
        np.array([1.0, 2.0**53 + 2]),
        np.array([3.0, 0.5]),
        np.array([4.0, -0.0]),
        np.array([4.0, np.nan, 0.0]),
        np.array([np.inf]),
        np.array([-np.inf, 1.0]),
        np.array([1e300]),
        np.array([], dtype=float),
        np.arange(1.0, 100_000.0),
    ]
    for a in cases:
        for lo in (0.0, 1.0):
            assert _core.first_bad_extent(a, lo, float(BIG)) == reference(a, lo, float(BIG)), a


@pytest.mark.parametrize(("fn", "call"), [
    ("gemm", lambda a, b: rl.gemm(a, b, 64, hardware=HW)),
    ("elementwise", lambda a, b: rl.elementwise(a, b, hardware=HW)),
    ("float8.linear", lambda a, b: rl.float8.linear(a, b, 64, hardware=HW)),
])
def test_arrays_that_do_not_broadcast(fn: str, call: Any) -> None:
    first = "m" if fn != "elementwise" else "numel"
    second = "k" if fn != "elementwise" else "reads"
    msg = re.escape(f"{fn}: arguments do not broadcast together: {first}(2,), {second}(3,)")
    with pytest.raises(ValueError, match=msg):
        call([64, 128], [1, 2, 3])
    with pytest.raises(ValueError, match=re.escape(f"{first}(2, 2), {second}(3,)")):
        call(np.full((2, 2), 64), [1, 2, 3])


# ----------------------------------------------------------- huge but valid dimensions


def test_int64_products_do_not_overflow_gemm() -> None:
    big = np.array([2**40], dtype=np.int64)  # m*k*n = 2**120 overflows int64 many times over
    e = rl.gemm(big, big, big, "bf16", HW)
    assert e.flops[0] == 2.0 * 2.0**120  # 2*2**40*2**40*2**40 = 2.658e36, exactly a float
    assert e.bytes[0] == 3.0 * 2.0**80 * 2  # (m*k + k*n + m*n)*2 = 6*2**80
    assert e.compute_s[0] == pytest.approx(2.0**121 / (989.5e12 * 0.78), rel=1e-12)
    assert_finite_positive(e.time_s, e.compute_s, e.memory_s, e.flops, e.bytes, e.intensity)
    s = rl.gemm(2**40, 2**40, 2**40, "bf16", HW, batch=2**40)  # Python ints too
    assert s.flops == 2.0**161
    assert math.isfinite(s.time_s)


def test_largest_dimension_is_accepted_everywhere() -> None:
    e = rl.gemm(BIG, BIG, BIG, "fp8", HW, batch=BIG)
    assert e.flops == 2.0 * float(BIG) ** 4  # 2 * 2**212
    assert_finite_positive(e.time_s, e.bytes, e.intensity)
    w = rl.elementwise(BIG, reads=BIG, writes=BIG, flops_per_element=1e6, dtype="fp32",
                       hardware=HW)
    assert w.bytes == 4.0 * BIG * (2.0 * BIG)  # numel*(reads + writes)*4
    assert_finite_positive(w.time_s, w.flops)
    for mode in ("training", "inference"):
        r = rl.float8.linear(np.array([2**40], dtype=np.int64), 2**40, BIG, "mxfp8_cublas",
                             "B200", mode)
        assert_finite_positive(r.bf16_s, r.fp8_gemm_s, r.fp8_overhead_s, r.speedup)
    df = rl.float8.sweep([(BIG, BIG, BIG)], hardware=HW, columns="torchao")
    assert_finite_positive(df["r_fp8_gemm_and_ovhd_spdp"].to_numpy())
    assert int(df["fwd_M"].iloc[0]) == BIG


def test_float_and_unsigned_arrays_of_integers_are_fine() -> None:
    a = rl.gemm(np.array([64.0, 128.0]), np.uint16(64), np.int8(64), "bf16", HW)
    b = rl.gemm([64, 128], 64, 64, "bf16", HW)
    np.testing.assert_array_equal(a.time_s, b.time_s)


# ------------------------------------------------------------------------ names


@pytest.mark.parametrize("call", [
    lambda d: rl.gemm(64, 64, 64, d, HW),
    lambda d: rl.elementwise(64, dtype=d, hardware=HW),
], ids=["gemm", "elementwise"])
def test_unknown_dtype(call: Any) -> None:
    with pytest.raises(KeyError, match=r"unknown dtype 'fp9'; did you mean 'fp8'"):
        call("fp9")
    with pytest.raises(KeyError, match=r"unknown dtype 'bfloat'; did you mean .*'bfloat16'"):
        call("bfloat")
    with pytest.raises(TypeError, match=r"dtype must be a string, got None"):
        call(None)
    with pytest.raises(TypeError, match=r"dtype must be a string, got 16"):
        call(16)


def test_unknown_out_dtype() -> None:
    with pytest.raises(KeyError, match=r"gemm: unknown out_dtype 'bf61'"):
        rl.gemm(64, 64, 64, "fp8", HW, out_dtype="bf61")


@pytest.mark.parametrize("call", [
    lambda r: rl.float8.linear(64, 64, 64, r, HW),
    lambda r: rl.float8.sweep("pow2", r, HW),
], ids=["linear", "sweep"])
def test_unknown_recipe(call: Any) -> None:
    with pytest.raises(KeyError, match=r"float8\.linear: unknown recipe 'rowise'; did you mean "
                                       r"'rowwise'"):
        call("rowise")
    with pytest.raises(KeyError, match=r"unknown recipe 'mxfp9_cublas'; did you mean "
                                       r"'mxfp8_cublas'"):
        call("mxfp9_cublas")
    with pytest.raises(TypeError, match=r"float8\.linear: recipe must be a string, got None"):
        call(None)


def test_unknown_mode_and_bad_fuse_flag() -> None:
    with pytest.raises(KeyError, match=r"float8\.linear: unknown mode 'eval'"):
        rl.float8.linear(64, 64, 64, "tensorwise", HW, mode="eval")
    with pytest.raises(KeyError, match=r"unknown mode 'inferense'; did you mean 'inference'"):
        rl.float8.sweep("pow2", "tensorwise", HW, mode="inferense")
    with pytest.raises(TypeError, match=r"float8\.linear: mode must be a string, got 1"):
        rl.float8.linear(64, 64, 64, "tensorwise", HW, mode=1)
    with pytest.raises(TypeError, match=r"fuse_with_prev must be a bool, got 'yes'"):
        rl.float8.linear(64, 64, 64, "tensorwise", HW, fuse_with_prev="yes")
    with pytest.raises(TypeError, match=r"fuse_with_prev must be a bool, got 1"):
        rl.float8.sweep("pow2", "tensorwise", HW, fuse_with_prev=1)


def test_bad_shape_sets() -> None:
    with pytest.raises(KeyError, match=r"unknown shapes 'pow3'; did you mean 'pow2'"):
        rl.float8.sweep("pow3", hardware=HW)
    for bad in (None, 42, 4.5, b"pow2"):
        msg = rf"float8\.sweep: shapes must be .*, got {re.escape(repr(bad))}"
        with pytest.raises(TypeError, match=msg):
            rl.float8.sweep(bad, hardware=HW)
    with pytest.raises(ValueError, match=r"non-empty list of \(M, K, N\), got array of shape"):
        rl.float8.sweep([], hardware=HW)
    with pytest.raises(ValueError, match=r"got array of shape \(1, 2\)"):
        rl.float8.sweep([(64, 64)], hardware=HW)
    with pytest.raises(ValueError, match=r"every entry needs three dimensions"):
        rl.float8.sweep([(64, 64, 64), (64, 64)], hardware=HW)
    with pytest.raises(ValueError, match=r"got array of shape \(2, 4\)"):
        rl.float8.sweep(np.ones((2, 4)), hardware=HW)
    with pytest.raises(TypeError, match=r"shapes must hold positive integers, got a bool"):
        rl.float8.sweep([(64, 64, True)], hardware=HW)
    msg = re.escape("float8.sweep: shapes must be a positive integer, got 0 (at shapes[1, 0])")
    with pytest.raises(ValueError, match=msg):
        rl.float8.sweep({"a": (64, 64, 64), "b": (0, 64, 64)}, hardware=HW)


@pytest.mark.parametrize("call", [
    lambda e: rl.gemm(64, 64, 64, "bf16", HW, efficiency=e),
    lambda e: rl.elementwise(64, hardware=HW, efficiency=e),
    lambda e: rl.float8.linear(64, 64, 64, "tensorwise", HW, efficiency=e),
    lambda e: rl.float8.sweep("pow2", "tensorwise", HW, efficiency=e),
], ids=["gemm", "elementwise", "linear", "sweep"])
def test_unknown_efficiency_preset(call: Any) -> None:
    with pytest.raises(KeyError, match=r"unknown efficiency preset 'peek'; did you mean 'peak'"):
        call("peek")
    with pytest.raises(KeyError, match=r"unknown efficiency preset 'fast'"):
        call("fast")
    for bad in (None, 0.78, ("peak",)):
        msg = rf"efficiency must be one of .*, got {re.escape(repr(bad))}"
        with pytest.raises(TypeError, match=msg):
            call(bad)


@pytest.mark.parametrize("call", [
    lambda h: rl.gemm(64, 64, 64, "bf16", h),
    lambda h: rl.elementwise(64, hardware=h),
    lambda h: rl.float8.linear(64, 64, 64, "tensorwise", h),
    lambda h: rl.float8.sweep("pow2", "tensorwise", h),
], ids=["gemm", "elementwise", "linear", "sweep"])
def test_unknown_hardware(call: Any) -> None:
    with pytest.raises(KeyError, match=r"unknown hardware 'H1000 SXM'; close matches: H100 SXM"):
        call("H1000 SXM")
    with pytest.raises(KeyError, match=r"'H100' is ambiguous"):
        call("H100")
    with pytest.raises(TypeError, match=r"hardware: name must be a str, a Hardware or None, "
                                        r"got 123"):
        call(123)


# ------------------------------------------------------------------------- Efficiency


@pytest.mark.parametrize("field", ["compute_fraction", "memory_fraction"])
@pytest.mark.parametrize(("value", "exc", "tail"), [
    (0, ValueError, "a positive finite number, got 0"),
    (-0.1, ValueError, "a positive finite number, got -0.1"),
    (float("nan"), ValueError, "a positive finite number, got nan"),
    (float("inf"), ValueError, "a positive finite number, got inf"),
    (1.5, ValueError, "in (0, 1], got 1.5"),
    ("0.5", TypeError, "a number, got '0.5'"),
    (True, TypeError, "a number, got True"),
    (None, TypeError, "a number, got None"),
    (0.5j, TypeError, "a number, got 0.5j"),
])
def test_bad_efficiency_fractions(field: str, value: Any, exc: type[Exception],
                                  tail: str) -> None:
    with pytest.raises(exc, match=re.escape(f"Efficiency: {field} must be {tail}")):
        rl.Efficiency(**{field: value})


@pytest.mark.parametrize(("value", "exc", "tail"), [
    (-1e-6, ValueError, "a non-negative finite number, got -1e-06"),
    (float("nan"), ValueError, "a non-negative finite number, got nan"),
    (float("inf"), ValueError, "a non-negative finite number, got inf"),
    ("2e-6", TypeError, "a number, got '2e-6'"),
    (False, TypeError, "a number, got False"),
])
def test_bad_kernel_floor(value: Any, exc: type[Exception], tail: str) -> None:
    with pytest.raises(exc, match=re.escape(f"Efficiency: kernel_floor_s must be {tail}")):
        rl.Efficiency(kernel_floor_s=value)


def test_bad_torchao_conventions_flag() -> None:
    for bad in (1, "yes", None):
        msg = rf"torchao_conventions must be a bool, got {re.escape(repr(bad))}"
        with pytest.raises(TypeError, match=msg):
            rl.Efficiency(torchao_conventions=bad)


def test_efficiency_values_are_stored_as_floats() -> None:
    from fractions import Fraction

    eff = rl.Efficiency(Fraction(1, 2), np.float32(0.5), 0)
    assert type(eff.compute_fraction) is float and eff.compute_fraction == 0.5
    assert type(eff.kernel_floor_s) is float
    e = rl.gemm(4096, 4096, 4096, "bf16", HW, efficiency=eff)
    assert e.compute_s == pytest.approx(2 * 4096**3 / (989.5e12 * 0.5), rel=1e-12)


# -------------------------------------------------------------- no NaN, no silent zero


@pytest.mark.parametrize("preset", ["default", "peak", "torchao"])
def test_smallest_inputs_give_positive_finite_times(preset: str) -> None:
    e = rl.gemm(1, 1, 1, "bf16", HW, efficiency=preset)
    assert_finite_positive(e.time_s, e.flops, e.bytes, e.intensity)
    w = rl.elementwise(1, reads=0, writes=1, hardware=HW, efficiency=preset)
    assert_finite_positive(w.time_s, w.bytes)
    assert w.flops == 0 and w.intensity == 0
    for mode in ("training", "inference"):
        r = rl.float8.linear(1, 1, 1, "tensorwise", HW, mode, efficiency=preset)
        assert_finite_positive(r.bf16_s, r.fp8_gemm_s, r.fp8_overhead_s, r.speedup)
