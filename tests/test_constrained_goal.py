"""A learned goal at a fixed reliability (issue 51): the Lagrangian reward (L1) stays in
[-1, 1] per tick whatever RR and counts the ticks the card's RR counts, the multiplier follows the RR shortfall (L2), the replay
buffer relabels stale rewards, training rotates over worlds and resumes with its λ, the
policy refuses a target it was not trained for, and the comparison's table."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("gymnasium", reason="needs the rl extra")

from abm.model import RecourseModel
from abm.validation import ConfigError
from lab.envs import ReliableGoalEnv
from lab.reproduce import capacity_goal as cg
from lab.reproduce import constrained_goal as rg
from lab.training import PREDICTOR_SAC, RelabelledReplayBuffer, train_constrained_predictor
from policies.rl.artefacts import ArtefactError, mismatches

SAC_TINY = PREDICTOR_SAC.replace(net=(16, 16), learning_starts=10, batch_size=8)
SMALL = {"ticks": 8, "validity": 1}


def test_the_lagrangian_reward_is_bounded_and_known():
    env = ReliableGoalEnv("paper", target=0.9, multiplier=1.0, **SMALL)
    assert env.lagrangian(0.5, -0.9) == pytest.approx(-0.2)  # RR = 0: bounded, not -inf
    assert env.lagrangian(0.5, 0.1, multiplier=0.0) == 0.5  # λ = 0: RF alone
    assert env.lagrangian(0.2, 0.1, multiplier=1e6) == pytest.approx(0.1, abs=1e-5)
    env.reset(seed=3)
    done, seen = False, []
    while not done:
        _, r, done, _, info = env.step(np.array([-1.0]))  # goal = threshold: low RR
        rf, excess = info["lagrangian"]
        rows = [x for x in env._last_rows if x["rf"] == x["rf"]]
        assert rf == pytest.approx(sum(x["rf"] for x in rows))
        # only ticks with RR defined enter the constraint, as the card's RR counts them
        defined = [x["rr"] for x in rows if x["rr"] == x["rr"]]
        assert excess == pytest.approx(sum(v - 0.9 for v in defined))
        seen += defined
        lam = info["multiplier"]
        assert r == pytest.approx((rf + lam * excess) / (1 + lam))
        assert -info["ticks"] <= r <= info["ticks"]
    # (L2): λ moved by η (ρ - RR̄) after the episode, RR̄ the card's RR (mean of defined ticks)
    assert info["episode_rr"] == pytest.approx(np.mean(seen))
    assert env.multiplier == pytest.approx(max(0.0, 1.0 + 5.0 * (0.9 - info["episode_rr"])))


def test_the_multiplier_stays_in_its_box():
    env = ReliableGoalEnv("paper", target=0.99, multiplier=2.0, multiplier_max=2.5, **SMALL)
    env.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, _ = env.step(np.array([-1.0]))
    assert env.multiplier == 2.5  # the shortfall pushed it past its cap
    low = ReliableGoalEnv("paper", target=0.01, multiplier=0.0, **SMALL)
    low.reset(seed=1)
    done = False
    while not done:
        _, _, done, _, _ = low.step(np.array([1.0]))
    assert low.multiplier == 0.0  # RR above the target never makes λ negative


def test_episodes_rotate_over_the_worlds():
    env = ReliableGoalEnv("paper", worlds=(4, 9, 11), **SMALL)
    seen = [env.reset(seed=0 if i == 0 else None)[1]["world_seed"] for i in range(5)]
    assert seen == [4, 9, 11, 4, 9]


@pytest.mark.parametrize(
    "kw", [{"target": 1.0}, {"target": 0.0}, {"worlds": ()}, {"multiplier": -1.0}]
)
def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError):
        ReliableGoalEnv("paper", **{**SMALL, **kw})


def test_the_replay_buffer_relabels_with_the_multiplier_in_force():
    env = ReliableGoalEnv("paper", **SMALL)
    buf = RelabelledReplayBuffer(
        16, env.observation_space, env.action_space, device="cpu", reward=env.lagrangian
    )
    obs = np.zeros((1, *env.observation_space.shape), np.float32)
    parts = [(0.5, 0.05), (0.2, -0.95), (0.8, -0.3)]
    for rf, rr in parts:
        buf.add(
            obs, obs, np.zeros((1, 1)), np.array([9.0]), np.array([0.0]), [{"lagrangian": (rf, rr)}]
        )
    for value in (0.0, 3.0):
        env.multiplier = value  # λ in force when the batch is drawn
        got = buf._get_samples(np.arange(3)).rewards.numpy().ravel()
        want = [(rf + value * rr) / (1 + value) for rf, rr in parts]
        np.testing.assert_allclose(got, want, rtol=1e-6)  # the stored 9.0 is never used


def test_training_writes_the_target_and_resumes_with_its_multiplier(tmp_path):
    kw = dict(
        target=0.9,
        worlds=(2, 3),
        sac=SAC_TINY,
        checkpoint_every=8,
        recommender="exact-linear",
        **SMALL,
    )
    m = train_constrained_predictor(tmp_path / "mu", "paper", steps=16, **kw)
    assert m["rr_target"] == 0.9 and m["worlds"] == [2, 3]
    assert m["objective"].startswith("max RF s.t. RR >= rr_target")
    curve = pd.read_csv(tmp_path / "mu" / "learning_curve.csv")
    assert "mean_multiplier" in curve and len(curve) == 2
    # (L2) read the deployed policy's RR (the actor's mean, an episode of its own)
    lam, judged = curve["mean_multiplier"], curve["mean_judged_rr"]
    assert lam.iloc[1] == pytest.approx(max(0.0, lam.iloc[0] + 5.0 * (0.9 - judged.iloc[0])))
    assert m["multiplier_final"] == pytest.approx(
        max(0.0, lam.iloc[1] + 5.0 * (0.9 - judged.iloc[1]))
    )
    # λ after the last episode is what the manifest and the checkpoint say
    state = json.loads(sorted((tmp_path / "mu" / "checkpoints").glob("*.json"))[-1].read_text())
    assert state["env"]["multiplier"] == pytest.approx(m["multiplier_final"])
    more = train_constrained_predictor(tmp_path / "mu", "paper", steps=24, resume=True, **kw)
    assert more["steps"] == 24
    curve = pd.read_csv(tmp_path / "mu" / "learning_curve.csv")
    # the resumed run started from the checkpoint's λ: its first episode's value
    assert curve["mean_multiplier"].iloc[2] == pytest.approx(m["multiplier_final"])
    # trained across worlds: the world seed is not a mismatch, the population still is
    assert not mismatches(more, {**more["scenario"], "world_seed": 17})
    assert mismatches(more, {**more["scenario"], "k": 3})


@pytest.fixture(scope="module")
def trained_mu(tmp_path_factory):
    out = tmp_path_factory.mktemp("mu")
    train_constrained_predictor(
        out, "paper", target=0.9, worlds=(0,), steps=10, sac=SAC_TINY, **SMALL
    )
    return out


def test_the_policy_runs_deterministically_and_refuses_other_targets(trained_mu):
    spec = f"rl-constrained:path={trained_mu},target=0.9,recommender=results/pareto/T1-b005/recommender,allow_mismatch=true"
    a = RecourseModel("paper", spec, seed=4, agents=False, **SMALL).run().tick_table()
    b = RecourseModel("paper", spec, seed=4, agents=False, **SMALL).run().tick_table()
    pd.testing.assert_frame_equal(a, b)
    assert np.isfinite(a["mean_goal"].to_numpy()[1:]).any()
    with pytest.raises(ConfigError, match=r"target = 0.95 is not allowed; allowed: 0.9"):
        RecourseModel("paper", spec.replace("0.9,", "0.95,"), seed=4, agents=False, **SMALL)
    for bad in ("1.5", "0"):
        with pytest.raises(ConfigError, match=r"target = .* allowed: \(0, 1\)"):
            RecourseModel("paper", spec.replace("target=0.9", f"target={bad}"), agents=False)


def test_an_eq16_predictor_is_not_a_constrained_one():
    eq16 = "results/pareto/T1-b005/predictors/rl-a10-t1"
    with pytest.raises(ArtefactError, match="eq. 16, not for an RR target"):
        RecourseModel("paper", f"rl-constrained:path={eq16}", seed=1, agents=False, ticks=3)


@pytest.mark.parametrize(
    "args, text",
    [
        (["--target", "1.2"], "target = 1.2 is not allowed; allowed: (0, 1)"),
        (["--worlds", "a-b"], "worlds = 'a-b' is not allowed"),
    ],
)
def test_the_training_command_refuses_bad_input_in_one_line(tmp_path, args, text):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "lab",
            "train",
            "constrained-predictor",
            "--out",
            str(tmp_path),
            *args,
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and text in res.stderr + res.stdout
    assert "Traceback" not in res.stderr


def _constructed(pts, worlds: int) -> pd.DataFrame:
    """Runs on constructed fronts: every constant margin's RF falls by 4 per unit of RR;
    the constrained μ sits 0.05 above φ's front at RR 0.94, the other methods on it."""
    rows = []
    tops = {"margin-phi": 0.6, "margin-true": 0.55, "margin-estimated": 0.5}
    tops.update({"margin-exact-linear": 0.45, "trend-phi": 0.6})
    for w in range(worlds):
        shift = 0.01 * w
        for p in pts:
            if p["method"] in tops:
                rr, rf = 0.9 + p["margin"] / 2, tops[p["method"]] - 2 * p["margin"]
            elif p["method"] == "threshold":
                rr, rf = 0.4, 0.7
            elif p["method"] == rg.METHOD:
                rr = 0.94 + 0.001 * p["training_seed"]
                rf = 0.6 - 4 * (rr - 0.9) + 0.05
            else:  # lookahead, eq. 16's μ: on φ's front
                rr = 0.93
                rf = 0.6 - 4 * (rr - 0.9)
            run = {"world_seed": w, "policy": p["policy"], "rr": rr, "rf": rf + shift}
            rows += [{**run, "seed": e, "run_id": f"{w}-{p['policy']}-{e}"} for e in range(2)]
    return pd.DataFrame(rows)


def test_the_constrained_mu_is_read_at_its_own_rr_against_every_front():
    pts = rg.points("results/constrained-goal", "recession", quick=True)
    table = rg.summarise(_constructed(pts, 10), pts)
    mine = table[(table["name"] == rg.METHOD) & (table["kind"] == "front")]
    rf = mine[mine["figure"] == "rf_at_equal_rr"].set_index("against")
    assert list(rf.index) == list(rg.FRONTS[rg.METHOD])
    # on φ's front it is 0.05 above (read at its own RR, 0.94-0.942): a clear "beats"
    assert rf.loc["margin-phi", "mean"] == pytest.approx(0.05, abs=1e-9)
    assert rf.loc["margin-phi", "verdict"] == "beats"
    assert rf.loc["margin-phi", "units"] == 30 and rf.loc["margin-phi", "training_seeds"] == 3
    assert rf.loc["margin-phi", "rr_at"] == pytest.approx(0.941)
    diffs = table[table["kind"] == "difference"].set_index("against")
    assert set(diffs.index) == {"trend-phi", "lookahead-true", "rl"}
    assert "3 training seeds" in mine["trained"].iloc[0]
    # one family: every front and difference row of 10 or more worlds was corrected
    # together (a point outside a front's range in some worlds has fewer, and no verdict)
    tested = table[table["kind"].isin(["front", "difference"])]
    assert tested[tested["worlds"] >= 10]["p_adj"].notna().all()
    assert tested[tested["worlds"] < 10]["verdict"].str.startswith("inconclusive").all()


def test_reach_is_per_training_seed_and_world():
    pts = rg.points("results/constrained-goal", "paper", quick=True)
    got = rg.reach(_constructed(pts, 3), pts)
    assert len(got) == 9 and set(got["training_seed"]) == {0, 1, 2}
    assert got[got["training_seed"] == 2]["rr"].tolist() == pytest.approx([0.942] * 3)


SHIPPED = cg.ROOT / "results" / "constrained-goal"


@pytest.mark.skipif(not (SHIPPED / "paper" / "check.csv").is_file(), reason="not shipped yet")
def test_the_shipped_predictors_were_trained_for_the_target_across_five_worlds():
    for world in rg.WORLDS:
        for s in rg.SEEDS:
            m = json.loads((rg.predictor_dir(SHIPPED, world, s) / "manifest.json").read_text())
            assert m["rr_target"] == rg.TARGET and tuple(m["worlds"]) == rg.TRAIN_WORLDS
            assert m["steps"] == rg.STEPS and m["seed"] == s
            assert ("capacity_observation" in m) == rg.WORLDS[world][1]


@pytest.mark.slow  # six episodes of 100 ticks with φ inside
@pytest.mark.skipif(not (SHIPPED / "paper" / "check.csv").is_file(), reason="not shipped yet")
@pytest.mark.parametrize("world", list(rg.WORLDS))
def test_the_shipped_figures_still_hold(world, monkeypatch):
    """Runs of the shipped report made again: RR and RF within the cross-CPU tolerance
    (bit for bit on the machine that made them); a change that moves results fails here
    until `recourse-abm reproduce constrained-goal` is run again."""
    from abm.provenance import FLOAT_ATOL, FLOAT_RTOL
    from lab.study.experiments import execute_run

    monkeypatch.chdir(cg.ROOT)  # run ids name the artefacts by their path in the repository
    check = pd.read_csv(SHIPPED / world / "check.csv")
    study = rg.evaluation_study(Path("results/constrained-goal"), world)
    by_id = {r.run_id: r for r in study.runs()}
    for row in check.itertuples():
        result = execute_run(by_id[row.run_id].task(study.metrics))
        assert result["status"] == "ok", result.get("error")
        (got,) = result["rows"]
        for f in ("rr", "rf"):
            want = getattr(row, f)
            assert abs(got[f] - want) <= FLOAT_ATOL + FLOAT_RTOL * abs(want), (row, f)


@pytest.mark.skipif(not (SHIPPED / "paper" / "check.csv").is_file(), reason="not shipped yet")
def test_the_docs_page_shows_the_shipped_tables():
    script = cg.ROOT / "scripts" / "constrained_goal_doc.py"
    res = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow  # 6 μ of 300 ticks, 2 worlds x 2 episodes of 60 ticks per point
def test_quick_run_trains_evaluates_and_reports(tmp_path):
    res = rg.run(tmp_path, quick=True, workers=1, log=lambda s: None)
    for world in rg.WORLDS:
        table = pd.read_csv(tmp_path / world / "table.csv")
        assert set(table["kind"]) == {"rf_at_rr095", "threshold", "front", "difference"}
        assert (tmp_path / world / "goals.png").stat().st_size > 10_000
        assert len(pd.read_csv(tmp_path / world / "reach.csv")) == 2 * len(rg.SEEDS)
        goals = pd.read_csv(tmp_path / world / "goals.csv")
        assert {f"{rg.METHOD}_mean_goal", f"{rg.METHOD}_threshold"} <= set(goals.columns)
    k = pd.read_csv(tmp_path / "recession" / "goals.csv")[f"{rg.METHOD}_k"]
    assert k.min() < k.max()  # k_t as recorded: the recession's cut
    again = rg.write_report(rg.read_runs(tmp_path, quick=True), tmp_path, quick=True)
    assert again["report"] == res["report"]
    assert pd.read_csv(tmp_path / "paper" / "table.csv").equals(
        pd.read_csv(res["table"])
    )  # the report is a function of the store
