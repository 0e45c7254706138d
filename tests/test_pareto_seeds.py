"""Training seeds of the Pareto study's learned methods (issue 48, item 6): found beside the
seed-0 predictors, evaluated on the same episodes, one front per seed in Table 3."""

import csv
import json

import numpy as np
import pytest

from abm.validation import ConfigError
from lab.reproduce.pareto import (
    POINT_COLUMNS,
    TABLE3_COLUMNS,
    StudyConfig,
    earlier_points,
    evaluation_study,
    not_evaluated,
    policy_seed,
    predictor_dir,
    rf_at_rr,
    run_pareto,
    seeds_beside,
    with_seeds,
)
from lab.study import run_id
from lab.study.stats import world_interval


def _trained(directory, seed):
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text(json.dumps({"kind": "predictor", "seed": seed}))


def _row(method, rr, rf, policy, alpha="", tau="", margin="", episodes=4):
    return {
        "method": method,
        "family": method.split("-")[0],
        "alpha": alpha,
        "tau": tau,
        "margin": margin,
        "policy": policy,
        "rr": rr,
        "rf": rf,
        "rr_episodes": json.dumps([rr] * episodes),
        "rf_episodes": json.dumps([rf] * episodes),
    }


def _rl(seed, rf_shift, grid=((1, 1), (10, 1))):
    """rl points of one training seed: (0.9, 0.6) and (1.0, 0.4), RF shifted, so the
    front reads 0.5 + shift at RR 0.95."""
    suffix = f"-seed{seed}" if seed else ""
    return [
        _row("rl", rr, rf + rf_shift, f"rl:path=p/rl-a{a}-t{t}{suffix}", str(a), str(t))
        for (a, t), (rr, rf) in zip(grid, ((0.9, 0.6), (1.0, 0.4)), strict=True)
    ]


def _margin_phi():
    """The margin-phi front: (0.9, 0.55), (1.0, 0.35); RF 0.45 at RR 0.95."""
    return [
        _row("margin-phi", rr, rf, f"last-threshold:margin={c}+rl:path=phi", margin=str(c))
        for c, (rr, rf) in ((0.0, (0.9, 0.55)), (0.1, (1.0, 0.35)))
    ]


def test_a_method_with_three_seeds_is_the_mean_of_its_seeds_fronts():
    """Seeds 0, 1, 2 read 0.50, 0.53, 0.59 at RR 0.95; the margin front reads 0.45 there
    and reaches RF 0.55 at most, so seed 2's RF lies outside it: no RR distance for it."""
    rows = _margin_phi() + _rl(0, 0.0) + _rl(1, 0.03) + _rl(2, 0.09)
    row = {r["method"]: r for r in rf_at_rr(rows, 1, 0.05)}["rl"]
    _, lo, hi, n = world_interval(np.array([[0.50], [0.53], [0.59]]))
    assert n == 3 and lo < 0.50 and hi > 0.59  # the seed is the unit: 2 degrees of freedom
    assert row["rf_at_rr095"] == pytest.approx(0.54) and row["rr"] == 0.95
    assert (row["rf_lo"], row["rf_hi"]) == (
        pytest.approx(lo, abs=1e-4),
        pytest.approx(hi, abs=1e-4),
    )
    assert row["training_seeds"] == 3 and row["worlds"] == 1 and row["n_predictors"] == 2
    assert row["trained"] == "μ: 3 training seeds (a random effect); φ: one training seed"
    assert row["episodes"] == 4 and list(row) == list(TABLE3_COLUMNS)
    # RF at equal RR: 0.05, 0.08, 0.14 over the front
    _, lo, hi, _ = world_interval(np.array([[0.05], [0.08], [0.14]]))
    assert row["diff"] == pytest.approx(0.09)
    assert (row["diff_lo"], row["diff_hi"]) == (
        pytest.approx(lo, abs=1e-4),
        pytest.approx(hi, abs=1e-4),
    )
    # RR at equal RF: 0.95 - 0.925 and 0.95 - 0.91 for seeds 0 and 1
    assert row["rr_diff"] == pytest.approx(0.0325)
    _, lo, hi, n = world_interval(np.array([[0.025], [0.04], [np.nan]]))
    assert n == 2 and (row["rr_diff_lo"], row["rr_diff_hi"]) == (
        pytest.approx(lo, abs=1e-4),
        pytest.approx(hi, abs=1e-4),
    )
    assert row["outside"] == "seed 2: RF 0.59 outside the front"
    assert row["verdict"] == "inconclusive (1 world, 3 training seeds)"


def test_a_seed_without_every_point_or_not_yet_evaluated_is_left_out_and_named():
    """Seed 1 lacks the (10, 1) point and seed 2 has none: rl rests on seed 0 alone, with
    its one-world interval over episodes, and says which seeds wait."""
    rows = _margin_phi() + _rl(0, 0.0) + _rl(1, 0.03, grid=((1, 1), (2, 1)))
    row = {r["method"]: r for r in rf_at_rr(rows, 1, 0.05, pending={"rl": [2]})}["rl"]
    assert row["rf_at_rr095"] == pytest.approx(0.5) and row["training_seeds"] == 1
    assert (
        row["trained"] == "μ: one training seed, seeds 1, 2 not yet evaluated; φ: one training seed"
    )
    assert row["diff"] == pytest.approx(0.05) and row["verdict"] == "inconclusive (1 world)"
    # the baselines: φ's one seed, nothing trained for threshold
    rows.append(_row("threshold", 0.44, 0.55, "threshold"))
    table = {r["method"]: r for r in rf_at_rr(rows, 1, 0.05)}
    assert (table["margin-phi"]["training_seeds"], table["margin-phi"]["trained"]) == (
        1,
        "φ: one training seed",
    )
    assert (table["threshold"]["training_seeds"], table["threshold"]["trained"]) == ("", "")


def test_seeds_are_found_beside_the_seed_0_predictor(tmp_path):
    base = predictor_dir(tmp_path, "rl", 1.0, 1.0)
    assert base == tmp_path / "predictors" / "rl-a1-t1"
    _trained(base, 0)
    for seed in (1, 3):
        _trained(predictor_dir(tmp_path, "rl", 1.0, 1.0, seed=seed), seed)
    (tmp_path / "predictors" / "rl-a1-t1-seed2").mkdir()  # still training: no manifest
    _trained(tmp_path / "predictors" / "rl-a1-t10-seed5", 5)  # another τ
    _trained(predictor_dir(tmp_path, "rl", 1.0, 1.0, steps=300, seed=4), 4)  # another budget
    assert predictor_dir(tmp_path, "rl", 1, 1, steps=300, seed=4).name == "rl-a1-t1-s300-seed4"
    assert seeds_beside(base) == [0, 1, 3]
    assert seeds_beside(tmp_path / "predictors" / "rl-a1-t10") == [0, 5]
    assert seeds_beside(tmp_path / "predictors" / "rl-a4-t1") == [0]  # nothing there
    _trained(tmp_path / "predictors" / "rl-a2-t1-seed1", 0)
    with pytest.raises(ConfigError, match="seed = 0"):
        seeds_beside(tmp_path / "predictors" / "rl-a2-t1")


def test_only_rl_and_the_exact_linear_hybrid_are_evaluated_with_every_seed(tmp_path):
    rl, hybrid = (predictor_dir(tmp_path, stem, 10.0, 1.0) for stem in ("rl", "hybrid"))
    for d in (rl, hybrid):
        _trained(d, 0)
        _trained(d.with_name(f"{d.name}-seed1"), 1)
    jobs = [
        ("rl", "rl", 10.0, 1.0, None, f"rl:path={rl}"),
        ("hybrid-exact-linear", "hybrid", 10.0, 1.0, None, f"hybrid-exact-linear:path={hybrid}"),
        ("hybrid-wachter", "hybrid", 10.0, 1.0, None, f"hybrid-wachter:path={hybrid}"),
    ]
    seeded = with_seeds(jobs)
    assert [(j[0], policy_seed(j[5])) for j in seeded] == [
        ("rl", 0),
        ("rl", 1),
        ("hybrid-exact-linear", 0),
        ("hybrid-exact-linear", 1),
        ("hybrid-wachter", 0),
    ]
    assert seeded[1][5] == f"rl:path={rl}-seed1" and with_seeds(seeded) == seeded
    # the points still to evaluate, from the rows evaluated so far
    rows = [{"method": j[0], "alpha": "10", "tau": "1", "policy": j[5]} for j in seeded]
    assert not_evaluated(rows) == []
    assert not_evaluated(rows[:1] + rows[2:]) == [("rl", 1, "10", "1")]


def test_seed_0_points_keep_their_run_ids_and_every_seed_has_its_own(tmp_path):
    pdir = predictor_dir(tmp_path, "rl", 10.0, 1.0)
    _trained(pdir, 0)
    _trained(pdir.with_name(f"{pdir.name}-seed2"), 2)
    cfg = StudyConfig.of(setting="T1-b005")
    jobs = [
        ("threshold", "baseline", None, None, None, "threshold"),
        ("rl", "rl", 10.0, 1.0, None, f"rl:path={pdir}"),
    ]
    runs = evaluation_study(cfg, with_seeds(jobs)).runs()
    assert len(runs) == 3 and len({r.run_id for r in runs}) == 3
    assert runs[0].run_id == "be2f8f421f263d2b"  # tests/test_pareto_margins.py's threshold
    before = {"method": "rl", "family": "rl", "alpha": 10.0, "tau": 1.0, "episodes": 10}
    assert runs[1].run_id == run_id(runs[1].config, f"rl:path={pdir}", "pareto-eval", before)
    assert runs[2].policy.endswith("-seed2") and runs[2].config == runs[1].config  # paired


# the columns of an earlier schema's points.csv that the report does not read
_REST = dict.fromkeys(("rr_std", "rf_std", "gini", "cost", "n_unadvised", "seconds"), 0)


def _points_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=POINT_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows({**_REST, "episodes": 4, "results_schema": 3, **r} for r in rows)


def test_report_only_names_the_points_not_yet_evaluated(tmp_path):
    """Shipped points of training seed 0 only (an earlier results schema), predictors of
    seeds 1 and 2 beside them: the report is built, seeds 1 and 2 are named as waiting."""
    out, grid = tmp_path / "study", ((1, 1), (10, 1))
    for a, t in grid:
        for seed in (0, 1, 2):
            _trained(predictor_dir(tmp_path, "rl", a, t, seed=seed), seed)
    rl = [
        {**r, "policy": f"rl:path={predictor_dir(tmp_path, 'rl', int(r['alpha']), 1)}"}
        for r in _rl(0, 0.0, grid)
    ]
    out.mkdir()
    _points_csv(out / "points.csv", _margin_phi() + rl)
    said = []
    res = run_pareto(StudyConfig.of(report_only=True), out, log=said.append)
    assert "not yet evaluated: 4 point(s)" in said[1]
    assert said[2:] == [
        "  rl, training seed 1: α:τ 1:1, 10:1",
        "  rl, training seed 2: α:τ 1:1, 10:1",
    ]
    row = {r["method"]: r for r in res["table3"]}["rl"]
    assert row["rf_at_rr095"] == pytest.approx(0.5) and row["training_seeds"] == 1
    assert row["trained"].startswith("μ: one training seed, seeds 1, 2 not yet evaluated")
    # points.csv keeps one point per training seed, with the seed written out
    _points_csv(out / "points.csv", _margin_phi() + rl + _rl(1, 0.03, grid))
    points = earlier_points(out, log=said.append)
    assert sorted((p["alpha"], p["training_seed"]) for p in points if p["method"] == "rl") == [
        ("1", "0"),
        ("1", "1"),
        ("10", "0"),
        ("10", "1"),
    ]
