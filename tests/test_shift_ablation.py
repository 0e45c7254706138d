"""The two switches of the shift ablation (issue 55): Altmeyer et al.'s data entry
(``retrain_data = advised``: every advised counterfactual joins the refit's data labelled
positive) and their kernel (``shift_length_scale``: a Gaussian kernel of fixed length-scale),
each off by default, refused where it cannot apply, and the ablation's report."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from cli_checks import one_error_line
from typer.testing import CliRunner

from abm import RecourseModel
from abm.config import ScenarioConfig
from abm.mechanisms.retraining import ShiftReference
from abm.validation import ConfigError
from lab.cli import app
from lab.reproduce import endogenous

WORLD = {"n_train": 1000, "outcome_delay": 1, "retrain_every": 5, "ticks": 12}


def _retraining(model: RecourseModel):
    return next(m for m in model.mechanisms.stages if m.name == "retraining")


def test_both_switches_are_off_by_default_and_leave_the_config_dict_as_before():
    c = ScenarioConfig()
    assert (c.retrain_data, c.retrain_advised_share, c.shift_length_scale) == (
        "outcomes",
        1.0,
        None,
    )
    # left out at their defaults: run ids hashed from the dict do not move
    keys = c.to_dict().keys()
    assert not {"retrain_advised_share", "shift_length_scale"} & set(keys)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"retrain_data": "advised"}, "retrain_data"),  # no retraining
        (
            {"retrain_every": 5, "outcome_delay": 1, "retrain_advised_share": 0.5},
            "retrain_advised_share",
        ),
        (
            {"retrain_advised_share": 0.0, "retrain_every": 5, "retrain_data": "advised"},
            "retrain_advised_share",
        ),
        ({"shift_length_scale": 0.5}, "shift_length_scale"),  # no retraining
        ({**WORLD, "shift_points": 0, "shift_length_scale": 0.5}, "shift_length_scale"),
        ({**WORLD, "shift_length_scale": -1.0}, "shift_length_scale"),
    ],
)
def test_each_switch_is_refused_in_one_line_where_it_cannot_apply(settings, field):
    with pytest.raises(ConfigError) as info:
        ScenarioConfig(**settings)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{field} = ") and "allowed: " in text


def test_the_cli_refuses_the_data_entry_without_retraining(tmp_path):
    out = tmp_path / "x"
    res = CliRunner().invoke(
        app, ["run", "--ticks", "3", "--set", "retrain_data=advised", "--out", str(out)]
    )
    line = one_error_line(res, 2)
    assert line.startswith("error: retrain_data = 'advised'") and "retrain_every" in line
    assert not out.exists()


def test_advised_entry_lets_in_each_advised_candidate_once_per_refit_labelled_positive():
    m = RecourseModel(
        "paper", "threshold-wachter", seed=3, agents=False, retrain_data="advised", **WORLD
    ).run()
    events = m.candidate_table()
    advised = events[events["goal"].notna()]
    # refits at ticks 5 and 10 take the advice of ticks 0-4 and 5-9: each candidate once
    want = [advised[advised.tick.between(a, a + 4)]["cid"].nunique() for a in (0, 5)]
    entered = _retraining(m)._entered
    assert [e.shape[0] for e in entered] == want and min(want) > 0
    # as advised: each candidate's last counterfactual of the window, scored at issue by
    # the first model (version 0 decides ticks 0-4)
    last = advised[advised.tick.between(0, 4)].drop_duplicates("cid", keep="last")
    scores = m.world.decision_model.score(entered[0])
    assert np.allclose(np.sort(scores), np.sort(last["cf_score"].to_numpy()), atol=1e-12)
    # the model in force was fitted on the first data plus these rows, all labelled 1
    ret = _retraining(m)
    X = np.concatenate([m.world.X_train, *entered])
    y = np.concatenate([m.world.y_train, np.ones(X.shape[0] - m.world.y_train.shape[0])])
    from sklearn.base import clone

    again = clone(m.world.decision_model.estimator).fit(X, y.astype(np.int8))
    assert np.array_equal(again.coef_, ret.scorer.estimator.coef_)


def test_a_share_of_the_advised_enters_and_the_rest_of_the_world_is_paired():
    half = RecourseModel(
        "paper",
        "threshold-wachter",
        seed=3,
        agents=False,
        retrain_data="advised",
        retrain_advised_share=0.5,
        **WORLD,
    ).run()
    full = RecourseModel(
        "paper", "threshold-wachter", seed=3, agents=False, retrain_data="advised", **WORLD
    ).run()
    n_full = _retraining(full)._entered[0].shape[0]
    assert _retraining(half)._entered[0].shape[0] == round(0.5 * n_full)
    # the first refit sees the same advice either way: the ticks before it are identical
    a = half.tick_table().query("tick < 5").drop(columns=["model_version"])
    b = full.tick_table().query("tick < 5").drop(columns=["model_version"])
    pd.testing.assert_frame_equal(a, b)


def test_the_fixed_kernel_changes_the_shift_figures_only():
    median = RecourseModel("paper", "threshold-wachter", seed=1, agents=False, **WORLD).run()
    fixed = RecourseModel(
        "paper", "threshold-wachter", seed=1, agents=False, shift_length_scale=0.5, **WORLD
    ).run()
    a, b = median.tick_table(), fixed.tick_table()
    moved = ["domain_mmd", "model_mmd", "domain_p", "model_p"]
    pd.testing.assert_frame_equal(a.drop(columns=moved), b.drop(columns=moved))
    refits = a["domain_mmd"].notna()
    assert refits.sum() == 2 and not np.allclose(
        a.loc[refits, "domain_mmd"], b.loc[refits, "domain_mmd"]
    )


def test_the_paper_length_scale_is_gamma_two_for_both_kernels():
    m = RecourseModel("paper", "threshold", seed=0, agents=False, **WORLD)
    ref = ShiftReference.draw(m.world, 200, np.random.default_rng(0), 0.5)
    assert ref.gamma_positive == ref.gamma_scores == 2.0  # exp(-|x - y|^2 / (2 * 0.5^2))
    median = ShiftReference.draw(m.world, 200, np.random.default_rng(0))
    assert np.array_equal(median.positive, ref.positive)  # the same rows either way
    assert median.gamma_positive != 2.0


def test_the_ablation_settings_are_the_study_with_one_or_both_switches():
    ours = endogenous.study()
    for setting, keys in endogenous.SETTINGS.items():
        s = endogenous.study(setting=setting)
        runs = s.runs()
        assert s.name == (
            "endogenous-shift" if setting == "ours" else f"endogenous-shift-{setting}"
        )
        for key, value in keys.items():
            assert all(r.config[key] == value for r in runs)
        if setting != "ours":
            assert {r.policy for r in runs} == set(endogenous.ABLATION_POLICIES)
            # the same worlds and seeds as ours: paired
            assert {(r.params["world_seed"], r.seed) for r in runs} == {
                (r.params["world_seed"], r.seed) for r in ours.runs()
            }


def _fake_runs(shift_of: dict[str, float]) -> pd.DataFrame:
    """Runs of every ablation policy over 10 worlds x 2 episodes: a policy's domain shift
    is its value in ``shift_of`` plus world noise shared by all (paired)."""
    rng = np.random.default_rng(7)
    rows = []
    for w in range(10):
        noise = rng.normal(0, 0.01, 2)
        for s in range(2):
            for p in endogenous.ABLATION_POLICIES:
                row = {"policy": p, "world_seed": w, "seed": s}
                for f in endogenous.ABLATION_FIGURES + endogenous.ABLATION_P:
                    row[f] = 0.5 + noise[s]
                row["domain_shift"] = shift_of.get(p, 0.0) + noise[s]
                rows.append(row)
    return pd.DataFrame(rows)


def test_the_ablation_table_pairs_with_wachter_in_each_setting_and_corrects_once():
    runs = {
        "ours": _fake_runs({"threshold-claproar": 0.05}),
        "entry": _fake_runs({"threshold-claproar": -0.05}),
    }
    board = endogenous.ablation_table(runs)
    at = board.set_index(["setting", "policy", "figure"])
    assert math.isclose(at.loc[("ours", "threshold-claproar", "domain_shift"), "vs_wachter"], 0.05)
    assert math.isclose(
        at.loc[("entry", "threshold-claproar", "domain_shift"), "vs_wachter"], -0.05
    )
    assert at.loc[("ours", "threshold-claproar", "domain_shift"), "vs_wachter_verdict"] == "higher"
    assert at.loc[("entry", "threshold-claproar", "domain_shift"), "vs_wachter_verdict"] == "lower"
    # one family: every paired row of both settings carries an adjusted p-value
    paired = board[board["figure"].isin(endogenous.ABLATION_FIGURES)]
    assert paired.loc[paired.policy != "threshold-wachter", "vs_wachter_p_adj"].notna().all()
    text = endogenous.ablation_markdown(board)
    assert "| ours | domain_shift |" in text and "| entry | domain_shift |" in text
    assert "**+0.050" in text and "**-0.050" in text
    assert endogenous.ablation_chart(board)[:4] == b"\x89PNG"
