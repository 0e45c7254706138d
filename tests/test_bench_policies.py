"""benchmarks/bench_policies.py: where each policy runs, how a world is scaled, and how a
ratio is judged (its timings are the benchmark's business, not a test's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from abm.scenarios import PRESETS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_policies as bench  # noqa: E402


@pytest.mark.slow  # builds a model per preset tried (ei and scarf try several)
def test_each_policy_finds_the_first_preset_that_runs_it():
    assert bench.home("threshold-true") == "paper"
    assert bench.home("improve-linucb") == "improvement"  # outcomes: not in `paper`
    assert bench.home("scarf") == "fair-scarf"
    assert bench.home("ei") == "fair-scarf"  # with its own decision model (WORLD): groups


def test_scaling_keeps_k_and_m_in_proportion():
    paper = PRESETS["paper"]
    over = bench.scaled("paper", 1000, 5)
    factor = 1000 / paper.n_initial
    assert over == {
        "n_initial": 1000,
        "k": round(paper.k * factor),
        "m": round(paper.m * factor),
        "ticks": 5,
    }


@pytest.mark.parametrize(
    ("policy", "ratio", "per_advised", "words"),
    [
        ("robust-l1", 9.9, 0.0, "<= 10x: met"),
        ("safear", 33.0, 0.0, "<= 10x: NOT met"),
        ("threshold-ustun", 49.0, 0.0, "<= 50x: met"),
        ("lookahead", 31.0, 0.0, "<= 30x: NOT met"),
        ("improve-bwo", 60.0, 0.05, "<= 100 ms a round: met"),
        ("improve-linucb", 2.5, 0.0005, "<= 1 ms a round: met; <= 2x: NOT met"),
        ("threshold-dice", 9.0, 0.0005, "<= 10x: met"),
    ],
)
def test_targets_follow_the_issue_and_the_bandits_spec(policy, ratio, per_advised, words):
    assert bench.verdict(policy, {"ratio": ratio, "per_advised": per_advised}) == words


def test_a_pair_times_both_and_counts_the_advised():
    r = bench.paired("paper", "threshold-true", 1, ticks=10)
    assert r["threshold"] > 0 and r["policy"] > 0
    assert r["ratio"] == pytest.approx(r["policy"] / r["threshold"])
    assert 0 < r["per_advised"] < r["policy"]
