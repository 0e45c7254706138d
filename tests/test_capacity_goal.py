"""A learned goal in a world whose capacity changes (issue 39): μ's capacity observation,
the artefact checks that keep a stationary μ out of a recession unless asked, and the
comparison's read-off and paired differences."""

import json

import numpy as np
import pandas as pd
import pytest
from observing import observations

from abm.model import RecourseModel
from lab.envs import PopulationEnv
from lab.experiments import capacity_goal as cg
from lab.experiments.rl_training import PREDICTOR_SAC, train_predictor
from policies.rl.artefacts import ArtefactError, mismatches
from policies.rl.encoding import encode_observation, observation_size

SAC_TINY = PREDICTOR_SAC.replace(net=(16, 16), learning_starts=20, batch_size=16)


def test_capacity_observation_appends_k_and_m_in_force_and_leaves_the_rest_alone():
    seen = {o.tick: o for o in observations("recession", 45, goal=0.9)}
    for tick, k_t in ((39, 9), (40, 5), (44, 5)):
        obs = seen[tick]
        s = np.linspace(0, 1, obs.history.ids.shape[0])
        plain = encode_observation(obs, s, 9, 100, 1)
        full = encode_observation(obs, s, 9, 100, 1, m=10)
        assert plain.shape == (observation_size(10, 1),)
        assert full.shape == (observation_size(10, 1, capacity=True),) == (plain.shape[0] + 2,)
        np.testing.assert_array_equal(full[:-2], plain)  # the old layout, bit for bit
        np.testing.assert_allclose(full[-2:], [k_t / 9, 1.0])


def test_population_env_with_capacity_sees_the_recession():
    env = PopulationEnv("recession", capacity_obs=True, ticks=45)
    obs, _ = env.reset(seed=2)
    assert obs.shape == env.observation_space.shape == (observation_size(10, 1, True),)
    ks, done = [], False
    while not done:
        ks.append((env._obs.tick, round(float(obs[-2]) * 9)))
        obs, _, done, _, _ = env.step(np.array([0.0], np.float32))
        assert done or env.observation_space.contains(obs)
    assert dict(ks)[39] == 9 and dict(ks)[40] == 5
    assert PopulationEnv("recession").observation_space.shape == (observation_size(10, 1),)


def test_a_stationary_predictor_is_a_mismatch_in_a_capacity_world_and_not_in_its_own():
    old = {"kind": "predictor", "scenario": {"n_features": 10, "k": 9}}  # no schedule keys
    from abm.scenarios import resolve_scenario

    paper, recession = resolve_scenario("paper").to_dict(), resolve_scenario("recession").to_dict()
    assert not any("k_steps" in m for m in mismatches(old, paper))
    assert any(m.startswith("k_steps: trained None") for m in mismatches(old, recession))
    recommender = {"kind": "recommender", "scenario": {"k_steps": None}}
    assert not any("k_steps" in m for m in mismatches(recommender, recession))  # φ: no pool


@pytest.mark.slow
def test_a_capacity_predictor_runs_as_rl_and_hybrid_and_is_refused_elsewhere(tmp_path):
    m = train_predictor(tmp_path / "mu", "recession", alpha=1.0, tau=1.0, steps=40, sac=SAC_TINY,
                        checkpoint_every=1000, capacity_obs=True, ticks=45)  # fmt: skip
    assert m["capacity_observation"] == "k_t / k, m_t / m"
    assert m["obs_dim"] == observation_size(10, 1, capacity=True)
    assert m["scenario"]["k_steps"] == [[40, 0.5], [60, 1.0]]
    run = RecourseModel("recession", f"hybrid-exact-linear:path={tmp_path / 'mu'}", seed=1,
                        agents=False, ticks=45).run()  # fmt: skip
    goals = run.tick_table()["mean_goal"].to_numpy()
    assert np.isfinite(goals[1:]).all()
    with pytest.raises(ArtefactError, match="k_steps"):
        RecourseModel("paper", f"hybrid-exact-linear:path={tmp_path / 'mu'}", seed=1, agents=False,
                      ticks=5).run()  # fmt: skip


def _fronts(values: dict[str, list[tuple[float, float]]], worlds: int = 2, episodes: int = 3):
    """method -> (RR, RF) arrays (worlds, points, episodes), every episode at the point."""
    out = {}
    for m, pts in values.items():
        rr = np.array([[[r] * episodes for r, _ in pts]] * worlds, float)
        rf = np.array([[[f] * episodes for _, f in pts]] * worlds, float)
        out[m] = (rr, rf)
    return out


def test_differences_read_the_baseline_at_the_rr_the_method_reached():
    line = [(0.9, 0.6), (1.0, 0.2)]  # RF at RR 0.95 = 0.4 by interpolation
    fronts = _fronts({m: line for m in cg.FRONT_METHODS})
    fronts["rl"] = _fronts({"rl": [(0.9, 0.7), (1.0, 0.3)]})["rl"]  # 0.5 at 0.95
    fronts["margin-true"] = _fronts({"x": [(0.9, 0.8), (1.0, 0.4)]})["x"]  # 0.6 at 0.95
    # a front that stops short of 0.95: read at its own RR, the baseline there too
    fronts["trend-phi"] = _fronts({"x": [(0.8, 0.9), (0.9, 0.65)]})["x"]
    best = cg.best_constant(fronts, 2, 3)
    assert best == "margin-true"
    f = cg._world_figures(fronts, 0, np.arange(3), best)
    assert f["read"]["rl"] == pytest.approx((0.5, 0.95))
    assert f["diffs"]["rl - margin-phi"] == pytest.approx(0.1)
    assert f["diffs"]["rl - best-margin"] == pytest.approx(0.5 - 0.6)
    assert f["read"]["trend-phi"] == pytest.approx((0.65, 0.9))
    assert f["diffs"]["trend-phi - margin-phi"] == pytest.approx(0.65 - 0.6)


def test_summary_intervals_cover_the_mean_and_world_zero_is_reported():
    rng = np.random.default_rng(0)
    pts = cg.points("results/capacity-goal", quick=True)
    rows = []
    for w in range(3):
        for p in pts:
            base = 0.9 + 0.02 * (p["margin"] or 0) * 10 + 0.01 * w
            for seed in range(4):
                rows.append({"world_seed": w, "policy": p["policy"], "seed": seed,
                             "rr": min(1.0, base + rng.normal(0, 0.01)),
                             "rf": 0.8 - 2 * (p["margin"] or 0) + rng.normal(0, 0.01)})  # fmt: skip
    table = cg.summarise(pd.DataFrame(rows), pts, resamples=40)
    assert set(table["kind"]) == {"rf_at_rr095", "threshold", "difference"}
    ok = table.dropna(subset=["mean"])
    assert ((ok["lo"] <= ok["mean"] + 1e-12) & (ok["mean"] <= ok["hi"] + 1e-12)).all()
    for r in table.itertuples():
        assert json.loads(r.per_world)[0] == pytest.approx(r.world0, abs=1e-4)
    text = cg.markdown(table)
    assert "| rl − best constant margin |" in text and "3 worlds x 4 paired episodes" in text


def test_points_cover_every_front_with_the_papers_grid_and_margins():
    pts = cg.points("results/capacity-goal")
    by = pd.DataFrame(pts).groupby("method").size()
    assert by["threshold"] == 1
    for m in ("margin-exact-linear", "margin-estimated", "margin-true", "margin-phi",
              "trend-phi", "trend-exact-linear"):  # fmt: skip
        assert by[m] == 12
    for m in ("rl", "hybrid-exact-linear", "lookahead-true", "rl-stationary"):
        assert by[m] == 6
    assert by["rl-long"] == 3 and "rl-long" not in {p["method"] for p in cg.points("x", True)}
    assert len({p["policy"] for p in pts}) == len(pts)


def test_the_docs_page_shows_the_shipped_table():
    import subprocess
    import sys

    script = cg.ROOT / "scripts" / "capacity_goal_doc.py"
    res = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_shipped_predictors_see_the_capacity_and_were_trained_in_world_zero():
    shipped = [(f, a, t, cg.STEPS) for f in cg.FAMILIES for a, t in cg.GRID]
    shipped += [("rl", a, t, cg.LONG_STEPS) for a, t in cg.PLANS[False]["long"]]
    for family, a, t, steps in shipped:
        where = cg.predictor_dir(cg.Path("results/capacity-goal"), family, a, t, steps)
        m = json.loads((cg.ROOT / where / "manifest.json").read_text())
        assert m["capacity_observation"] == "k_t / k, m_t / m" and m["steps"] == steps
        assert m["scenario"]["world_seed"] == 0 and m["scenario"]["name"] == "recession"
        assert (m["alpha"], m["tau"]) == (a, t)


@pytest.mark.slow
def test_quick_run_trains_evaluates_and_reports(tmp_path):
    res = cg.run(tmp_path, quick=True, workers=1, log=lambda s: None)
    table = pd.read_csv(res["table"])
    assert set(table["kind"]) == {"rf_at_rr095", "threshold", "difference"}
    assert (tmp_path / "fronts.png").stat().st_size > 10_000
    assert (tmp_path / "ticks.png").stat().st_size > 10_000
    again = cg.write_report(cg.read_runs(tmp_path, quick=True), tmp_path, quick=True)
    assert pd.read_csv(again["table"]).equals(table)  # the report is a function of the store
