"""The compiled ROAR steps (policies.robust.kernels) against the NumPy reference: same bits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from policies.robust.kernels import pairwise_rows
from policies.robust.solvers import roar

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("z", [0, 1, 3, 7, 8, 9, 10, 15, 16, 17, 100, 128, 129, 257, 1000, 5000])
def test_pairwise_rows_is_numpys_sum(z):
    rng = np.random.default_rng(z)
    for m in (1, 3, 17):
        # magnitudes over six decades: any other order of the additions shows in the bits
        P = rng.standard_normal((m, z)) * 10 ** rng.uniform(-3, 3, (m, z))
        out = np.empty(m)
        pairwise_rows(P, out)
        np.testing.assert_array_equal(out, np.add.reduce(P, axis=1))


def test_pairwise_rows_signed_zeros():
    for P in (np.full((2, 3), -0.0), np.full((2, 9), -0.0), np.array([[0.0, -0.0, -0.0]])):
        out = np.empty(P.shape[0])
        pairwise_rows(P, out)
        np.testing.assert_array_equal(np.signbit(out), np.signbit(np.add.reduce(P, axis=1)))


def _instance(rng, case):
    """A random ROAR problem; ``case`` picks the adversary, the box and the weights' shape."""
    n, z = int(rng.integers(1, 9)), int(rng.integers(1, 13))
    nonneg = case % 3 != 0
    lo = np.zeros(z) if nonneg else -np.ones(z)
    hi = np.ones(z)
    X0 = rng.random((n, z)) if nonneg else rng.uniform(-1, 1, (n, z))
    if case % 5 == 0:
        X0[0] = hi  # a feature at |x| = 1: the L1 adversary moves a weight, not the intercept
    immutable = rng.random(z) < 0.25 if case % 2 else None
    per_row = case % 4 != 0
    w = rng.standard_normal((n, z)) if per_row else rng.standard_normal(z)
    b = rng.standard_normal(n) if per_row else float(rng.standard_normal())
    p = (1.0, np.inf)[case % 2]
    alpha = (0.0, 0.05, 0.5, 1.2)[case % 4]
    lam = float(rng.uniform(0.005, 0.3))
    return X0, w, b, alpha, lam, p, lo, hi, immutable


@pytest.mark.parametrize("case", range(24))
def test_compiled_roar_is_numpy_roar_bit_for_bit(case):
    rng = np.random.default_rng(100 + case)
    args = _instance(rng, case)
    X_c, steps_c = roar(*args, max_steps=2000, compiled=True)
    X_n, steps_n = roar(*args, max_steps=2000, compiled=False)
    np.testing.assert_array_equal(steps_c, steps_n)
    np.testing.assert_array_equal(X_c, X_n)
    assert (steps_c >= 1).all()


def test_compiled_roar_stops_at_the_cap_like_numpy():
    # a cap inside the first block: both stop there, at the same point
    rng = np.random.default_rng(7)
    args = _instance(rng, 1)
    X_c, steps_c = roar(*args, max_steps=5, compiled=True)
    X_n, steps_n = roar(*args, max_steps=5, compiled=False)
    assert steps_c.max() <= 5
    np.testing.assert_array_equal(steps_c, steps_n)
    np.testing.assert_array_equal(X_c, X_n)


def test_compiled_roar_runs_from_numbas_cache_in_a_new_process():
    # the kernels are cached on disk; a second process loads them instead of compiling
    # (a recursive kernel crashed there once: this runs the load path twice)
    code = (
        "import numpy as np; from policies.robust.solvers import roar; "
        "X = np.random.default_rng(0).random((3, 10)); "
        "print(roar(X, np.ones(10), -3.0, 0.5, 0.05, 1, np.zeros(10), np.ones(10))[1].tolist())"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        for _ in range(2)
    ]
    for run in outs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert outs[0].stdout == outs[1].stdout
    assert outs[0].stdout.strip().startswith("[")
