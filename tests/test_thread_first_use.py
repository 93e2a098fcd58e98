"""First use from several threads at once (issue #25, section 2): one thread builds the first
DataFrame (importing pandas, which imports numpy.ma) while others pass numpy arrays, which the
argument checks test for masked arrays. Run in fresh processes, where the imports are first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import threading
import numpy as np
import roofline as rl

errors = []
start = threading.Barrier(4)
done = threading.Event()

def frame():
    start.wait()
    try:
        rl.gemm(np.array([64, 128]), 64, 64, hardware="H100 SXM").to_pandas()
    except Exception as exc:
        errors.append(repr(exc))
    done.set()

def arrays():
    start.wait()
    try:
        while not done.is_set():
            rl.gemm(np.arange(1, 9), np.array([64]), 64, hardware="H100 SXM")
            rl.elementwise(np.array([1024, 2048]), 1, 1, hardware="H100 SXM")
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=frame)] + [threading.Thread(target=arrays)
                                              for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ERRORS", errors)
assert not errors, errors
"""


def test_first_use_race_in_fresh_processes():
    env = dict(os.environ)
    import roofline

    # the roofline this test imports (installed, or the source tree with its built core)
    src = str(Path(roofline.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for p, out in zip(procs, outs, strict=True):
        assert p.returncode == 0, out[-2000:]
        assert "ERRORS []" in out


def test_masked_arrays_still_rejected():
    import numpy as np
    import pytest

    import roofline as rl

    with pytest.raises(ValueError, match="masked"):
        rl.gemm(np.ma.masked_array([64, 128], mask=[0, 1]), 64, 64, hardware="H100 SXM")
    assert rl.gemm(np.ma.masked_array([64, 128], mask=[0, 0]), 64, 64,
                   hardware="H100 SXM").time_s.shape == (2,)
