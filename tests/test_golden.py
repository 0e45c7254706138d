"""Results never drift silently: every golden case reproduces its reference tables.

The contract (tests/golden/compare.py, docs/architecture.md): on any CPU every discrete
outcome is identical and every float agrees within a relative 1e-9 (absolute floor 1e-12);
on the machine that wrote the reference, with the same package versions, the tables are
also bitwise equal, which each case reports ("bitwise" or the largest relative difference
it allowed). ``scripts/check.sh`` runs this file twice: natively, and under other kernel
choices (``scripts/other-kernels.sh``). A change that alters results regenerates the
reference (``python tests/golden/generate.py``) and records old vs new figures in
CHANGELOG.md.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

import generate  # noqa: E402
from cases import (  # noqa: E402
    CASES,
    ENV_CASES,
    bitwise,
    case_id,
    env_key,
    fingerprint,
    load_golden,
    read_reference,
    run_case,
    run_env,
)
from compare import ATOL, RTOL_64, Verdict, compare_frames, compare_summary  # noqa: E402

GOLDEN = load_golden()


def check_case(case: dict, summary: dict, tables: dict[str, pd.DataFrame]) -> Verdict:
    """Compare one run with its reference; ``bitwise`` when every fingerprint matches."""
    key = case_id(case)
    expected = GOLDEN[key]
    reference = read_reference(key)
    verdict = Verdict()
    tol = tuple(case.get("tol", (RTOL_64, ATOL)))
    compare_summary(expected["summary"], summary, verdict, tol)
    for name, df in tables.items():
        compare_frames(name, reference[name], df, verdict, tol)
    verdict.bitwise = bitwise(expected, summary, tables)
    return verdict


def _report(record_property, verdict: Verdict, exception: bool = False) -> None:
    """What the run's terminal summary says of this run (tests/conftest.py)."""
    if verdict.bitwise:
        record_property("golden", "bitwise")
    else:
        kind = "exception" if exception else "tolerance"
        where = verdict.worst_where or "differences within the absolute floor"
        record_property("golden", f"{kind} {verdict.worst_rel:.3g} {where}")


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if c.get("slow") else c for c in CASES],
    ids=case_id,
)
def test_golden_case(case, record_property):
    needs = case.get("needs")
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed")
    verdict = check_case(case, *run_case(case))
    _report(record_property, verdict, exception="tol" in case)
    assert verdict.ok, verdict.message(case_id(case))


@pytest.mark.parametrize("name", list(ENV_CASES))
def test_population_env_trace(name, record_property):
    """Observations, rewards and infos of 200 PopulationEnv steps (eq. 16 with its NaN rule)."""
    pytest.importorskip("gymnasium")
    key = env_key(name)
    trace = run_env(ENV_CASES[name])
    verdict = Verdict()
    compare_frames("trace", read_reference(key)["trace"], trace, verdict)
    verdict.bitwise = fingerprint(trace) == GOLDEN[key]["trace"]
    _report(record_property, verdict)
    assert verdict.ok, verdict.message(key)
    assert (trace.step >= 0).sum() == 200 and list(trace.seed.unique()) == [2029167940, 1342382291]


def test_the_reference_hashes_to_its_fingerprints():
    """The stored tables are the ones golden.json fingerprinted (none edited or corrupt)."""
    assert generate.check() == []


def test_every_case_has_a_golden_record():
    keys = sorted(case_id(c) for c in CASES) + sorted(env_key(n) for n in ENV_CASES)
    assert sorted(GOLDEN) == sorted([*keys, "run_ids"])


@pytest.mark.slow  # over 5 s on 2 cores (the fast tier keeps under 5 s a test)
def test_study_run_ids_do_not_depend_on_the_cpu():
    """Run ids hash the configuration, never a computed float: the shipped studies' ids."""
    assert generate.study_run_ids() == GOLDEN["run_ids"]


# -- the goldens still catch real changes ---------------------------------------------------

PAPER = {"scenario": "paper", "policy": "threshold", "seed": 0}


def _breaks(verdict: Verdict) -> dict[str, object]:
    return {d.where: d for d in verdict.differences}


def test_an_unchanged_run_keeps_the_contract():
    verdict = check_case(PAPER, *run_case(PAPER))
    assert verdict.ok, verdict.message(case_id(PAPER))


def test_one_flipped_acceptance_fails(monkeypatch):
    """At tick 5 the last accepted applicant and the best rejected one change places."""
    from abm import selection

    select = selection.select_top_k
    calls = []

    def swap_one(scores, k, rng):
        accepted, threshold = select(scores, k, rng)
        calls.append(1)
        if len(calls) == 6 and (~accepted).any():
            accepted = accepted.copy()
            inside = np.flatnonzero(accepted)
            outside = np.flatnonzero(~accepted)
            accepted[inside[np.argmin(scores[inside])]] = False
            accepted[outside[np.argmax(scores[outside])]] = True
        return accepted, threshold

    monkeypatch.setattr(selection, "select_top_k", swap_one)
    verdict = check_case(PAPER, *run_case(PAPER))
    found = _breaks(verdict)
    assert "candidates.accepted" in found
    first = found["candidates.accepted"]
    assert first.context.startswith("tick 5") and first.discrete
    assert "golden case" in verdict.message(case_id(PAPER))


def test_one_changed_dropout_draw_fails(monkeypatch):
    """One uniform of the dropout stream at tick 3 is replaced by 0: that applicant leaves."""
    from abm import stages

    real = stages.dropout
    calls = []

    def changed(*args):
        out = real(*args)
        calls.append(1)
        if len(calls) == 4 and not out.all():
            out = out.copy()
            out[np.flatnonzero(~out)[0]] = True
        return out

    monkeypatch.setattr(stages, "dropout", changed)
    verdict = check_case(PAPER, *run_case(PAPER))
    found = _breaks(verdict)
    assert "candidates.dropped" in found and found["candidates.dropped"].context.startswith(
        "tick 3"
    )
    assert "summary.n_dropped" in found


def test_a_float_moved_by_a_millionth_fails(monkeypatch):
    """The decision model's intercept moved by 1e-6 relative: scores move, and the comparison
    names the first float column and row that left the tolerance, with the size."""
    import copy
    import dataclasses

    from abm import model as model_module

    build = model_module.build_world

    def nudged(config, estimator=None):
        world = build(config, estimator)  # cached and shared: changed on a copy only
        decision_model = copy.copy(world.decision_model)
        decision_model.intercept *= 1 + 1e-6
        return dataclasses.replace(world, decision_model=decision_model)

    monkeypatch.setattr(model_module, "build_world", nudged)
    verdict = check_case(PAPER, *run_case(PAPER))
    found = _breaks(verdict)
    assert "candidates.score" in found
    score = found["candidates.score"]
    assert not score.discrete and 1e-9 < score.rel_diff < 1e-4 and score.row == 0
    assert "relative" in str(score) and "candidates.score row 0 (tick 0, cid" in str(score)


NOISY_CASES = [
    PAPER,
    {"scenario": "paper-T5", "policy": "threshold-estimated", "seed": 1},
    {
        "scenario": "paper",
        "policy": "hybrid-exact-linear",
        "seed": 1,
        "ticks": 20,
        "tol": (1e-5, 1e-7),
    },
    {"scenario": "paper-T5", "policy": "safear:beta_risk=1", "seed": 2, "ticks": 20},
    {"scenario": "paper-T5", "policy": "lookahead", "seed": 0, "ticks": 8},
]


@pytest.mark.parametrize("case", NOISY_CASES, ids=case_id)
def test_last_digit_noise_in_every_score_changes_no_outcome(case, monkeypatch):
    """Another CPU, simulated in-process: every score M(x) carries a relative error of
    about 1e-13 that depends on x alone, as a kernel's rounding does. Scores equal in exact
    arithmetic now differ the other way round; no discrete outcome may change."""
    from abm import world

    assert case in CASES
    score = world.DecisionModel.score

    def noisy(self, X):
        s = score(self, X)
        X = np.asarray(X, dtype=float)
        phase = np.add.reduce(X * np.arange(1.0, X.shape[1] + 1), axis=1)
        return s * (1 + 1e-13 * np.sin(3.3e7 * phase + 0.1))

    monkeypatch.setattr(world.DecisionModel, "score", noisy)
    verdict = check_case(case, *run_case(case))
    assert verdict.ok, verdict.message(case_id(case))
    assert not verdict.bitwise


def test_the_tolerance_is_tight_and_names_what_broke():
    """Unit check of the comparison on the stored reference: last-digit noise passes, a
    1e-6 move, a NaN appearing and a flipped boolean each fail with their row."""
    ref = read_reference(case_id(PAPER))["candidates"]
    noisy = ref.copy()
    noisy["score"] = noisy["score"] * (1 + 1e-10)
    verdict = Verdict()
    compare_frames("candidates", ref, noisy, verdict)
    assert verdict.ok and verdict.worst_where == "candidates.score"

    row = int(np.flatnonzero(ref["cost"].notna())[3])  # an advised application
    for change, where in [
        (lambda df: df.loc[row, "score"] * (1 + 1e-6), "candidates.score"),
        (lambda df: np.nan, "candidates.cost"),
        (lambda df: not df.loc[row, "accepted"], "candidates.accepted"),
    ]:
        bad = ref.copy()
        column = where.split(".")[1]
        bad.loc[row, column] = change(bad)
        verdict = Verdict()
        compare_frames("candidates", ref, bad, verdict)
        (d,) = verdict.differences
        assert (d.where, d.row) == (where, row)
