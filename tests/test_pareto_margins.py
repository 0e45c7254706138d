"""Constant-margin baselines and paired intervals of the Pareto study (issue 14, item 2;
intervals over world 0's episodes, issue 48)."""

import json
from pathlib import Path

import numpy as np
import pytest

from abm.provenance import RESULTS_SCHEMA
from abm.registry import make_policy
from abm.validation import ConfigError
from lab.reproduce.pareto import (
    EVALUATIONS,
    TABLE3_COLUMNS,
    StudyConfig,
    evaluation_study,
    margin_baseline,
    margin_jobs,
    oracle_jobs,
    read_off,
    read_points,
    rf_at_rr,
)
from lab.study import Study, load_study, run_id, run_study
from lab.study.stats import world_interval


def test_read_off_interpolates_on_the_front_and_falls_back_to_the_nearest_point():
    rr = np.array([0.9, 1.0, 0.8, np.nan])
    rf = np.array([0.5, 0.3, 0.4, 0.9])  # (0.8, 0.4) is dominated by (0.9, 0.5)
    assert read_off(rr, rf) == pytest.approx((0.4, 0.95))
    # a front that stops short of RR 0.95: its point closest to it, with its own RR
    assert read_off(np.array([0.5, 0.7]), np.array([0.6, 0.2])) == (0.2, 0.7)
    assert np.isnan(read_off(np.array([np.nan]), np.array([np.nan]))[0])


def _point(method, rr_eps, rf_eps, **labels):
    rr_eps, rf_eps = np.asarray(rr_eps, float), np.asarray(rf_eps, float)
    row = {"method": method, "alpha": "", "tau": "", "margin": "", "family": "margin"}
    row.update(labels)
    row.update(
        rr=float(np.nanmean(rr_eps)),
        rf=float(np.nanmean(rf_eps)),
        rr_episodes=json.dumps(rr_eps.tolist()),
        rf_episodes=json.dumps(rf_eps.tolist()),
    )
    return row


def test_paired_intervals_of_a_constant_shift_collapse_to_the_shift():
    """Two fronts that differ by exactly 0.1 in RF on every episode: the paired difference
    is 0.1 with any episode left out, while each method's own interval has the episodes'
    spread."""
    rng = np.random.default_rng(5)
    rows = []
    for i, c in enumerate((0.0, 0.1, 0.2)):
        rr = np.clip(0.85 + 0.06 * i + rng.normal(0, 0.01, 12), 0, 1)
        rf = np.clip(0.6 - 0.2 * i + rng.normal(0, 0.05, 12), 0, 1)
        rows.append(_point("margin-phi", rr, rf, margin=f"{c:g}"))
        rows.append(_point("rl", rr, rf + 0.1, alpha=str(i + 1), tau="1", family="rl"))
    table = {r["method"]: r for r in rf_at_rr(rows, 1, 0.05)}
    rl, base = table["rl"], table["margin-phi"]
    assert rl["vs_margin"] == "margin-phi" and base["vs_margin"] == ""
    assert rl["diff"] == pytest.approx(0.1, abs=1e-4)
    assert rl["diff_lo"] == pytest.approx(0.1, abs=1e-4)
    assert rl["diff_hi"] == pytest.approx(0.1, abs=1e-4)
    assert base["rf_lo"] < base["rf_at_rr095"] < base["rf_hi"]
    assert base["rf_hi"] - base["rf_lo"] > 0.01
    assert rl["episodes"] == 12 and rl["n_predictors"] == 3 and base["n_predictors"] == 0
    # 0.1 more RF at equal RR is more RR at equal RF too: the front falls as RR rises
    assert rl["rr_diff_lo"] < rl["rr_diff"] < rl["rr_diff_hi"] and rl["rr_diff_lo"] > 0
    # one world: intervals, but no verdict
    assert rl["worlds"] == 1 and rl["verdict"] == "inconclusive (1 world)" and rl["outside"] == ""
    # one training seed of μ (and of φ): the interval is over episodes alone
    assert rl["training_seeds"] == 1
    assert rl["trained"] == "μ: one training seed; φ: one training seed"
    assert list(rl) == list(TABLE3_COLUMNS)
    # deterministic: the same rows give the same table
    assert rf_at_rr(rows, 1, 0.05) == list(table.values())


def test_the_interval_of_a_mean_is_the_one_world_interval_of_its_episodes():
    """A method of one point short of RR 0.95 is read at that point: its RF is an episode
    mean, whose jackknife pseudo-values are the episodes themselves, so the interval is
    lab.study.stats.world_interval's over them."""
    rf = np.array([0.52, 0.61, 0.55, 0.47, 0.58, 0.66, 0.5, 0.54])
    (row,) = rf_at_rr([_point("threshold", np.full(8, 0.44), rf, family="baseline")], 1, 0.05)
    mean, lo, hi, n = world_interval(rf[None, :])
    assert (row["rf_at_rr095"], row["rr"], n) == (round(mean, 4), 0.44, 1)
    assert (row["rf_lo"], row["rf_hi"]) == (round(lo, 4), round(hi, 4))


def test_a_method_short_of_the_target_is_compared_at_the_rr_it_reached():
    """`threshold` is the c = 0 point of the exact-linear margin front: read off at its own
    RR (0.45), the front gives its RF, so the difference is exactly 0 with any episode left
    out."""
    rng = np.random.default_rng(2)
    eps = [
        (
            np.clip(0.45 + 0.25 * i + rng.normal(0, 0.02, 8), 0, 1),
            np.clip(0.55 - 0.2 * i + rng.normal(0, 0.03, 8), 0, 1),
        )
        for i in range(3)
    ]
    rows = [_point("margin-exact-linear", rr, rf, margin=str(i)) for i, (rr, rf) in enumerate(eps)]
    rows.append(_point("threshold", *eps[0], family="baseline"))
    row = {r["method"]: r for r in rf_at_rr(rows, 1, 0.05)}["threshold"]
    assert row["rr"] == pytest.approx(np.mean(eps[0][0]), abs=1e-4) and row["rr"] < 0.95
    assert (row["diff"], row["diff_lo"], row["diff_hi"]) == (0.0, 0.0, 0.0)
    assert (row["rr_diff"], row["rr_diff_lo"], row["rr_diff_hi"]) == (0.0, 0.0, 0.0)


def test_no_distance_outside_the_range_the_margin_front_spans():
    """A method read at an RR below the margin front's lowest is not compared with that
    front's nearest point: no RF difference, and ``outside`` says why."""
    front = ((0.6, 0.5), (0.9, 0.3), (1.0, 0.1))
    rows = [
        _point("margin-exact-linear", [rr] * 3, [rf] * 3, margin=str(i))
        for i, (rr, rf) in enumerate(front)
    ]
    rows.append(_point("threshold", [0.5] * 3, [0.4] * 3, family="baseline"))
    row = {r["method"]: r for r in rf_at_rr(rows, 1, 0.05)}["threshold"]
    assert (row["diff"], row["diff_lo"]) == ("", "")
    assert row["outside"] == "RR 0.5 outside the front"
    # its RF, 0.4, lies on the front at RR 0.75: 0.25 less RR at equal RF
    assert row["rr_diff"] == pytest.approx(-0.25) and row["rr_diff_lo"] == pytest.approx(-0.25)


def test_points_without_episode_figures_get_no_interval_but_keep_their_value():
    rows = [
        {
            "method": "threshold",
            "alpha": "",
            "tau": "",
            "margin": "",
            "rr": 0.44,
            "rf": 0.55,
            "rr_episodes": "",
            "rf_episodes": "",
        }
    ]
    (row,) = rf_at_rr(rows, 1, 0.05)
    assert (row["rf_at_rr095"], row["rr"], row["rf_lo"], row["diff"]) == (0.55, 0.44, "", "")


def test_each_method_is_compared_with_the_margin_front_of_its_own_recommender():
    assert margin_baseline("rl") == margin_baseline("rl-recommender") == "margin-phi"
    for m in ("threshold", "hybrid-exact-linear", "lookahead"):
        assert margin_baseline(m) == "margin-exact-linear"
    assert margin_baseline("threshold-true") == "margin-true"
    assert margin_baseline("threshold-estimated") == "margin-estimated"
    assert margin_baseline("hybrid-ustun") == margin_baseline("threshold-ustun") == "margin-ustun"
    assert margin_baseline("margin-phi") is None
    assert margin_baseline("lookahead-true") == "margin-true"


def test_the_privileged_front_sweeps_the_planners_objective_over_the_grid():
    cfg = StudyConfig.of(grid=((1.0, 4.0), (30.0, 1.0)))
    jobs = oracle_jobs(cfg)
    assert [(j[0], j[1], j[2], j[3]) for j in jobs] == [
        ("lookahead-true", "lookahead", 1.0, 4.0),
        ("lookahead-true", "lookahead", 30.0, 1.0),
    ]
    policy = make_policy(jobs[1][5])
    assert policy.goal.alpha == 30.0 and policy.goal.tau == 1.0
    assert policy.goal.margins[-1] == pytest.approx(0.3) and len(policy.goal.margins) == 13
    assert policy.recommender.weights == "true"


def test_margin_points_are_registered_policies_with_the_goal_th_plus_c():
    cfg = StudyConfig.of(margins=(0.0, 0.05), margin_recommenders=("exact-linear", "true"))
    jobs = margin_jobs(cfg, Path("phi"))
    assert [(j[0], j[4]) for j in jobs] == [
        ("margin-exact-linear", 0.0),
        ("margin-exact-linear", 0.05),
        ("margin-true", 0.0),
        ("margin-true", 0.05),
    ]
    assert jobs[3][5] == "last-threshold:margin=0.05+exact-linear:weights=true"
    for job in jobs:
        make_policy(job[5])  # parses and validates
    with pytest.raises(ConfigError, match="margins"):
        StudyConfig.of(margins=(1.5,))
    with pytest.raises(ConfigError, match="margin_recommenders"):
        StudyConfig.of(margin_recommenders=("cheapest",))


def test_points_without_a_margin_keep_their_run_ids():
    """Adding the margin field changed no run id: a point without one is keyed by the
    parameters it had before (so stored evaluations are still found); the `threshold` point
    of T1-b005 had id 6077e933856fd0dd under results schema 3 (the shipped one)."""
    cfg = StudyConfig.of(setting="T1-b005")
    study = evaluation_study(cfg, [("threshold", "baseline", None, None, None, "threshold")])
    (run,) = study.runs()
    before = {
        "method": "threshold",
        "family": "baseline",
        "alpha": None,
        "tau": None,
        "episodes": 10,
    }
    assert run.run_id == run_id(run.config, "threshold", "pareto-eval", before)
    assert RESULTS_SCHEMA == 10 and run.run_id == "be2f8f421f263d2b"


def test_the_spec_behaviour_reaches_every_run_and_leaves_the_calibrated_ids_alone():
    """--behaviour spec puts SPEC §1's (rho, chi, omega) into every evaluated run's config
    (and so its run id); the calibrated default adds nothing to the overrides."""
    job = [("threshold", "baseline", None, None, None, "threshold")]
    calibrated = StudyConfig.of(setting="T1-b001")
    spec = StudyConfig.of(setting="T1-b001", behaviour="spec")
    assert calibrated.overrides == {"validity": 1, "beta": 0.01}
    (run_c,) = evaluation_study(calibrated, job).runs()
    (run_s,) = evaluation_study(spec, job).runs()
    assert (run_c.config["rho"], run_c.config["chi"], run_c.config["omega"]) == (1.0, 0.0, 0.0)
    assert (run_s.config["rho"], run_s.config["chi"], run_s.config["omega"]) == (2.0, 0.1, 1.0)
    assert run_s.config["beta"] == run_c.config["beta"] == 0.01
    assert run_s.run_id != run_c.run_id
    with pytest.raises(ConfigError, match="behaviour"):
        StudyConfig.of(behaviour="default")


def test_a_margin_point_runs_and_keeps_per_episode_figures(tmp_path):
    cfg = StudyConfig.of(setting="T1-b005", episodes=2)
    jobs = [
        (
            "margin-exact-linear",
            "margin",
            None,
            None,
            0.05,
            "last-threshold:margin=0.05+exact-linear",
        )
    ]
    study = evaluation_study(cfg, jobs)
    study = Study.build(
        study.base.replace(ticks=10),
        name=study.name,
        experiment="pareto-eval",
        overrides={"episodes": 2, "validity": 1, "beta": 0.05},
        seeds=[0],
        zip=[
            {
                "method": ["margin-exact-linear"],
                "family": ["margin"],
                "alpha": [None],
                "tau": [None],
                "margin": [0.05],
                "policy": [jobs[0][5]],
            }
        ],
    )
    out = tmp_path / EVALUATIONS
    assert run_study(study, out, workers=1, shared=True).completed == 1
    (point,) = read_points(tmp_path)
    assert point["margin"] == "0.05" and point["method"] == "margin-exact-linear"
    rr, rf = json.loads(point["rr_episodes"]), json.loads(point["rf_episodes"])
    assert len(rr) == len(rf) == 2
    assert point["rf"] == pytest.approx(np.nanmean(rf))
    # a finished run named in `rerun` runs again; the others are kept
    before = load_study(out)[1]["finished_at"].iloc[0]
    status = run_study(study, out, workers=1, shared=True, rerun={study.runs()[0].run_id})
    assert status.completed == 1 and load_study(out)[1]["finished_at"].iloc[0] > before
    assert run_study(study, out, workers=1, shared=True).skipped == 1


@pytest.mark.slow
def test_quick_pareto_runs_every_piece_and_leaves_the_shipped_table_alone(tmp_path):
    """`reproduce pareto --quick`: φ, μ, baselines, margins and the report in about half a
    minute, nothing merged into results/table3.csv."""
    import csv

    from typer.testing import CliRunner

    from lab.cli import app

    shipped = (Path(__file__).parents[1] / "results" / "table3.csv").read_bytes()
    out = tmp_path / "quick"
    r = CliRunner().invoke(app, ["reproduce", "pareto", "--quick", "--out", str(out)])
    assert r.exit_code == 0, r.output
    with open(out / "table3.csv") as f:
        methods = {row["method"]: row for row in csv.DictReader(f)}
    assert set(methods) == {
        "threshold",
        "rl-recommender",
        "rl",
        "hybrid-exact-linear",
        "margin-exact-linear",
        "margin-phi",
    }
    assert methods["rl"]["vs_margin"] == "margin-phi" and methods["rl"]["episodes"] == "2"
    assert (out / "pareto.png").is_file()
    assert (Path(__file__).parents[1] / "results" / "table3.csv").read_bytes() == shipped
