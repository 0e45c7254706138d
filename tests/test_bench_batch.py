"""benchmarks/bench_batch.py: how the vector env's step cost is read (its timings are the
benchmark's business, not a test's)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_batch as bench  # noqa: E402


def _figures(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+\.\d+", line)]


def test_the_env_fit_recovers_a_linear_step_cost():
    """Steps of 0.6 ms + 20 us an environment, one environment at 0.35 ms: the fit gives
    both parts back, at most 0.35 / 0.02 = 17.5x for any n, and 20x at 64 would need
    (64 * 0.35 / 20 - 0.6) / 64 ms = 8.1 us an environment; sizes under 16 are left out."""
    steps = {n: 0.6e-3 + 20e-6 * n for n in (16, 64, 256)}
    steps[1] = 5e-3  # not on the line: left out of the fit
    line = bench.env_fit(steps, 0.35e-3)
    assert "n = 16,64,256" in line
    assert _figures(line) == [0.60, 20.0, 17.5, 8.1]


def test_the_env_fit_needs_two_sizes():
    assert "needs two sizes" in bench.env_fit({1: 1e-3, 64: 2e-3}, 0.3e-3)
