"""SAC training smoke test, artefacts (round trip, tampering), learned policies, resume, CLI."""

import json
import pickle
import shutil

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the rl extra")
from typer.testing import CliRunner

from abm.model import RecourseModel
from abm.provenance import file_sha256
from abm.registry import make_policy
from abm.validation import ConfigError
from lab.cli import app
from lab.envs import PopulationEnv
from lab.evaluation import evaluate
from lab.reproduce.pareto import TABLE3_COLUMNS
from lab.training import (
    PREDICTOR_SAC,
    RECOMMENDER_MAX_STEP,
    RECOMMENDER_OBSERVATION,
    RECOMMENDER_SAC,
    SACParams,
    train_predictor,
    train_recommender,
)
from policies.rl.artefacts import ArtefactError, load_sac, read_manifest

TINY = dict(ticks=10)
SAC_TINY = PREDICTOR_SAC.replace(
    net=(32, 32), learning_starts=30, batch_size=64, learning_rate=3e-3, gamma=0.5
)


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Training runs on one torch thread, as `recourse-abm train` does."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny φ and a μ trained with it (RF-only reward: low goals are best)."""
    root = tmp_path_factory.mktemp("rl")
    rec = root / "rec"
    train_recommender(
        rec,
        warmup_episodes=5,
        episodes=10,
        checkpoint_every=50,
        sac=RECOMMENDER_SAC.replace(net=(32, 32), learning_starts=30, batch_size=32),
    )
    pred = root / "pred"
    train_predictor(
        pred,
        alpha=0.0,
        tau=1.0,
        recommender="exact-linear",
        steps=300,
        seed=0,
        sac=SAC_TINY,
        checkpoint_every=100,
        **TINY,
    )
    pred_rl = root / "pred-rl"
    train_predictor(
        pred_rl,
        alpha=1.0,
        tau=1.0,
        recommender=f"rl:path={rec}",
        steps=60,
        seed=0,
        sac=SAC_TINY,
        checkpoint_every=1000,
        **TINY,
    )
    return root, rec, pred, pred_rl


def _episode_rewards(env, act, seeds):
    out = []
    for s in seeds:
        obs, _ = env.reset(seed=s)
        total, done = 0.0, False
        while not done:
            obs, r, done, _, _ = env.step(act(obs))
            total += r
        out.append(total)
    return float(np.mean(out))


@pytest.mark.slow
def test_training_improves_reward_over_random_actions(trained):
    _, _, pred, _ = trained
    _, sac = load_sac(pred, "predictor")
    env = PopulationEnv("paper", alpha=0.0, tau=1.0, **TINY)
    seeds = [101, 102, 103]
    learned = _episode_rewards(env, lambda o: sac.predict(o, deterministic=True)[0], seeds)
    # uniform random actions average 0: the goal halfway up its range, on the same seeds
    # (a sample of random actions is too noisy a yardstick over 3 short episodes)
    centre = _episode_rewards(env, lambda o: np.zeros(1, dtype=np.float32), seeds)
    env.close()
    # RF-only reward: the best goals sit low (episode reward -22 at action 0, +1 at -1)
    assert learned > centre + 1.0, (learned, centre)


@pytest.mark.slow
def test_manifest_round_trip_and_learning_curve(trained):
    root, rec, pred, pred_rl = trained
    m = read_manifest(pred, "predictor", n_features=10)
    assert m["kind"] == "predictor" and m["steps"] == 300 and m["alpha"] == 0.0
    assert {"torch", "stable-baselines3", "gymnasium", "numpy"} <= set(m["versions"])
    assert (pred / "learning_curve.csv").read_text().startswith("episode,timesteps,reward")
    r = read_manifest(rec, "recommender")
    assert len(r["d_hat"]) == 10 and r["d_error"] >= 0
    # StopTrainingOnMaxEpisodes ends φ's training after warm-up + episodes, one curve row each
    assert r["episodes_trained"] == 15
    assert len((rec / "learning_curve.csv").read_text().splitlines()) == 1 + 15
    assert (
        r["obs_dim"] == 24
        and r["action_mode"] == "direction"
        and r["max_step"] == RECOMMENDER_MAX_STEP
    )
    assert r["env"]["reward_scale"] == 1.0
    assert r["observation"] == RECOMMENDER_OBSERVATION
    assert read_manifest(pred_rl, "predictor")["recommender_path"] == "../rec"


@pytest.mark.slow
def test_learned_recommender_rebuilds_the_training_observation(trained, tmp_path):
    """φ at inference = the SAC actor on [x, g, M(x), gaps, d̂ from the manifest], both mappings."""
    from policies.rl.encoding import recommender_counterfactual, recommender_observation
    from policies.rl.learned import LearnedRecommender

    _, rec, _, _ = trained
    direct = tmp_path / "direct"
    train_recommender(
        direct,
        warmup_episodes=2,
        episodes=3,
        checkpoint_every=50,
        action="direct",
        max_step=0.25,
        sac=RECOMMENDER_SAC.replace(net=(16,), learning_starts=10, batch_size=8),
    )
    assert read_manifest(direct, "recommender")["env"]["reward_scale"] == 30.0
    ctx = RecourseModel("paper", "none", ticks=1).context
    X = np.random.default_rng(1).uniform(0, 1, (20, 10))
    s = ctx.decision_model.score(X)
    goals = np.minimum(s + 0.2, 0.95)
    for path, mode, step in ((rec, "direction", RECOMMENDER_MAX_STEP), (direct, "direct", 0.25)):
        phi = LearnedRecommender(path)
        phi.prepare(ctx)
        assert (phi.action_mode, phi.max_step) == (mode, step)
        _, sac = load_sac(path, "recommender")
        obs = recommender_observation(X, goals, s, np.asarray(phi.manifest["d_hat"]))
        want = recommender_counterfactual(
            X, sac.predict(obs, deterministic=True)[0], goals, ctx, mode, step
        )
        want[~(s < goals)] = X[~(s < goals)]
        got = phi.recommend(X, goals, np.random.default_rng(0))
        np.testing.assert_allclose(got, want)
        if mode == "direction":  # meets every reachable goal, whatever φ learned
            reach = s < goals
            assert np.abs(ctx.decision_model.score(got[reach]) - goals[reach]).max() < 1e-6


@pytest.mark.slow
def test_learned_policies_run_deterministically(trained):
    root, rec, pred, pred_rl = trained
    for policy in (
        f"rl:path={pred_rl}",
        f"hybrid-exact-linear:path={pred}",
        f"rl-recommender:path={rec}",
        f"rl:path={pred}+exact-linear",
    ):
        a = evaluate("paper", policy, episodes=2, seed=5, **TINY)
        b = evaluate("paper", policy, episodes=2, seed=5, **TINY)
        # NaN != NaN: the card's undefined figures compare as text
        assert json.dumps(a["per_episode"]) == json.dumps(b["per_episode"]), policy
        assert np.isfinite(a["rf_mean"])


@pytest.mark.slow
def test_rl_policy_needs_a_predictor_trained_with_phi(trained):
    _, rec, pred, _ = trained
    with pytest.raises(ArtefactError, match="exact-linear"):
        RecourseModel("paper", make_policy(f"rl:path={pred}"), ticks=2)
    RecourseModel("paper", make_policy(f"rl:path={pred},recommender={rec}"), ticks=2).run()


def _copy(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("checkpoints"))
    return dst


@pytest.mark.slow
def test_bad_artefacts_are_refused(trained, tmp_path):
    root, rec, pred, _ = trained
    wrong_kind = _copy(pred, tmp_path / "kind")
    with pytest.raises(ArtefactError, match="expected 'recommender'"):
        make_policy(f"rl-recommender:path={wrong_kind}").prepare(
            RecourseModel("paper", "none", ticks=1).context
        )
    tampered = _copy(pred, tmp_path / "tampered")
    m = json.loads((tampered / "manifest.json").read_text())
    m["kind"] = "recommender"
    (tampered / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ArtefactError, match="sha256|n_features|obs_dim"):
        load_sac(tampered, "recommender", n_features=10, obs_dim=11)
    swapped = _copy(pred, tmp_path / "swapped")
    shutil.copy(rec / "actor.safetensors", swapped / "actor.safetensors")
    with pytest.raises(ArtefactError, match="sha256"):
        load_sac(swapped, "predictor")
    missing = _copy(pred, tmp_path / "missing")
    (missing / "manifest.json").unlink()
    with pytest.raises(ArtefactError, match="manifest.json is missing"):
        load_sac(missing, "predictor")
    (missing / "manifest.json").write_text("{not json")
    with pytest.raises(ArtefactError, match="not valid JSON"):
        load_sac(missing, "predictor")
    with pytest.raises(ArtefactError, match="obs_dim"):  # trained at T = 1, used at T = 5
        RecourseModel("paper", f"hybrid-exact-linear:path={pred}", validity=5, ticks=1)
    with pytest.raises(FileNotFoundError):
        load_sac(tmp_path / "nowhere", "predictor")
    old_phi = _copy(rec, tmp_path / "old-phi")  # a φ from before observation (x, g, M, gap, d̂)
    m = json.loads((old_phi / "manifest.json").read_text())
    for key in ("observation", "action_mode", "max_step"):
        del m[key]
    m["obs_dim"] = 11
    (old_phi / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ArtefactError, match="older recourse-abm.*train it again"):
        RecourseModel("paper", f"rl-recommender:path={old_phi}", ticks=1)


class _Boom:
    """A pickle that would create ``path`` when unpickled."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (type(self.path).touch, (self.path,))


@pytest.mark.slow
def test_crafted_artefact_is_refused_without_running_code(trained, tmp_path):
    """A pickle (plain, or torch's zip of one) disguised as the weights, with the manifest's
    hash updated to match, is refused as not safetensors; its code never runs."""
    import torch

    _, _, pred, _ = trained
    marker = tmp_path / "code-ran"
    for name, write in (
        ("pickle", lambda f: f.write_bytes(pickle.dumps(_Boom(marker)))),
        ("torch", lambda f: torch.save({"w": _Boom(marker)}, f)),
    ):
        crafted = _copy(pred, tmp_path / name)
        write(crafted / "actor.safetensors")
        m = json.loads((crafted / "manifest.json").read_text())
        m["weights_sha256"] = file_sha256(crafted / "actor.safetensors")
        (crafted / "manifest.json").write_text(json.dumps(m))
        with pytest.raises(ArtefactError, match="not a safetensors file"):
            load_sac(crafted, "predictor")
        assert not marker.exists(), name
    # a format-1 artefact (SB3 zip, pickles inside) is refused before anything is read
    old = _copy(pred, tmp_path / "format1")
    (old / "model.zip").write_bytes(pickle.dumps(_Boom(marker)))
    m = json.loads((old / "manifest.json").read_text())
    m["format"] = 1
    (old / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ArtefactError, match="format-1.*convert_artefacts"):
        load_sac(old, "predictor")
    # weights of another architecture than the manifest's policy
    other = _copy(pred, tmp_path / "arch")
    m = json.loads((other / "manifest.json").read_text())
    m["policy"]["net_arch"] = [16]
    (other / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ArtefactError, match="does not fit the manifest's policy"):
        load_sac(other, "predictor")
    assert not marker.exists()


def test_training_parameters_are_frozen_validated_models():
    with pytest.raises(ConfigError, match=r"^net\[0\] = 0 is not allowed; allowed: a number >= 1$"):
        SACParams.make(net=(0, 64))
    with pytest.raises(ConfigError, match="gama.*allowed: net, learning_rate"):
        PREDICTOR_SAC.replace(gama=0.5)
    with pytest.raises(ConfigError, match="^gamma = 1.5 is not allowed; allowed: a number <= 1$"):
        PREDICTOR_SAC.replace(gamma=1.5)
    with pytest.raises(ValueError):  # frozen
        PREDICTOR_SAC.gamma = 0.5
    assert PREDICTOR_SAC.replace(gamma=0.5).sb3_kwargs()["gamma"] == 0.5
    with pytest.raises(ConfigError, match="^alpha = -1.0 is not allowed"):
        train_predictor("unused", alpha=-1.0, tau=1.0)
    with pytest.raises(ConfigError, match="^action = 'sideways' is not allowed; allowed: one of"):
        train_recommender("unused", action="sideways")


def test_training_leaves_nothing_in_the_temp_dir(tmp_path, monkeypatch):
    """SB3's default logger would make an empty SB3-<time> folder there at every learn()."""
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    kw = dict(alpha=1.0, tau=1.0, seed=4, steps=20, sac=SAC_TINY, checkpoint_every=1000, **TINY)
    train_predictor(tmp_path / "out", **kw)
    assert [f.name for f in temp.iterdir() if f.name.startswith("SB3-")] == []


@pytest.mark.slow
def test_same_seed_same_learning_curve_and_weights_with_or_without_evaluation(tmp_path):
    """EvalCallback evaluates on its own environment and never perturbs training."""
    kw = dict(alpha=1.0, tau=1.0, seed=4, steps=60, sac=SAC_TINY, checkpoint_every=1000, **TINY)
    a = train_predictor(tmp_path / "a", **kw)
    b = train_predictor(tmp_path / "b", eval_every=20, eval_episodes=1, **kw)
    curve = [(tmp_path / d / "learning_curve.csv").read_text() for d in "ab"]
    assert curve[0] == curve[1] and len(curve[0].splitlines()) == 1 + 60 // TINY["ticks"]
    assert a["weights_sha256"] == b["weights_sha256"]
    with np.load(tmp_path / "b" / "evaluations.npz", allow_pickle=False) as ev:
        assert ev["timesteps"].tolist() == [20, 40, 60]
        assert ev["results"].shape == (3, 1) and np.isfinite(ev["results"]).all()
    assert b["evaluations"] == "evaluations.npz" and "evaluations" not in a


@pytest.mark.slow
def test_resume_continues_from_the_latest_checkpoint(tmp_path):
    import torch

    out = tmp_path / "p"
    kw = dict(alpha=1.0, tau=1.0, seed=3, sac=SAC_TINY, checkpoint_every=40, **TINY)
    train_predictor(out, steps=80, **kw)
    curve_rows = len((out / "learning_curve.csv").read_text().splitlines())
    # checkpoints hold tensors, arrays and JSON only: each reads back with pickles refused
    files = sorted(f.name for f in (out / "checkpoints").iterdir())
    assert files == [
        f"step_0000000{s}{x}" for s in (40, 80) for x in (".json", ".pt", "_buffer.npz")
    ]
    torch.load(out / "checkpoints" / "step_000000080.pt", weights_only=True)
    with np.load(out / "checkpoints" / "step_000000080_buffer.npz", allow_pickle=False) as buf:
        # SB3 stores a step's transition after the callbacks ran: step 80 keeps 79
        assert buf["observations"].shape[0] == 79
    m = train_predictor(out, steps=120, resume=True, **kw)  # "interrupted" at 80, asked for 120
    assert m["steps"] == 120
    assert len((out / "learning_curve.csv").read_text().splitlines()) > curve_rows
    with pytest.raises(ValueError, match="other settings"):
        train_predictor(out, steps=160, resume=True, **{**kw, "alpha": 2.0})


def test_cli_bad_input_exits_2(tmp_path):
    runner = CliRunner()
    for args in (
        ["train", "predictor", "--alpha", "-1", "--tau", "1", "--out", str(tmp_path)],
        ["train", "recommender", "--episodes", "0", "--out", str(tmp_path)],
        ["reproduce", "pareto", "--setting", "T2-b005", "--out", str(tmp_path)],
        ["reproduce", "pareto", "--grid", "1-2", "--out", str(tmp_path)],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert "error:" in r.output


def test_shipped_artefacts_load_and_act_deterministically():
    """The default `rl` and `hybrid-*` policies load the artefacts shipped in results/pareto."""
    from policies.rl.learned import DEFAULT_PREDICTOR_RL, DEFAULT_RECOMMENDER

    assert (
        read_manifest(DEFAULT_RECOMMENDER, "recommender", n_features=10)["action_mode"]
        == "direction"
    )
    assert read_manifest(DEFAULT_PREDICTOR_RL, "predictor", n_features=10)["max_margin"] > 0
    runs = [
        RecourseModel("paper", name, seed=3, ticks=8, agents=False, record_events=False)
        .run()
        .tick_table()
        for name in ("rl", "rl", "hybrid-exact-linear", "hybrid-wachter")
    ]
    np.testing.assert_array_equal(runs[0].to_numpy(np.float64), runs[1].to_numpy(np.float64))
    # the learned predictor aims above the last threshold: goals never fall below it
    for t in (runs[0], runs[2], runs[3]):
        advised = t["mean_goal"].notna()
        assert (t.loc[advised, "mean_goal"] >= t.loc[advised, "threshold"] - 1e-12).all()


@pytest.mark.slow
def test_pareto_study_runs_every_piece_on_a_tiny_budget(tmp_path):
    """`reproduce pareto` end to end: own hybrid predictors, φ reused across T, merged Table 3,
    resume without new work, and a φ of the wrong β refused."""
    import csv

    runner = CliRunner()
    tiny = [
        "--grid",
        "1:1",
        "--recommenders",
        "exact-linear,wachter",
        "--predictor-steps",
        "30",
        "--rec-episodes",
        "15",
        "--episodes",
        "1",
        "--no-lookahead",
        "--summary",
        str(tmp_path),
        "--margins",
        "0,0.1",
        "--margin-recommenders",
        "exact-linear,phi",
    ]
    t1 = tmp_path / "T1"
    r = runner.invoke(
        app,
        [
            "reproduce",
            "pareto",
            "--setting",
            "T1-b005",
            "--out",
            str(t1),
            "--hybrid-predictors",
            "own",
            *tiny,
        ],
    )
    assert r.exit_code == 0, r.output
    # a budget other than the paper's 7,000 steps is part of the name
    assert {p.name for p in (t1 / "predictors").iterdir()} == {
        "rl-a1-t1-s30",
        "hybrid-a1-t1-s30",
        "hybrid-wachter-a1-t1-s30",
    }
    with open(t1 / "points.csv") as f:
        points = list(csv.DictReader(f))
    policies = {p["method"]: p["policy"] for p in points}
    assert policies["hybrid-wachter"].endswith("hybrid-wachter-a1-t1-s30")
    assert policies["hybrid-exact-linear"].endswith("hybrid-a1-t1-s30")
    assert {"threshold", "threshold-wachter", "rl-recommender", "rl"} <= set(policies)
    # the constant-margin fronts: threshold + c with exact-linear and with this φ
    margins = {(p["method"], p["margin"]): p["policy"] for p in points if p["family"] == "margin"}
    assert set(margins) == {
        (m, c) for m in ("margin-exact-linear", "margin-phi") for c in ("0", "0.1")
    }
    assert (
        margins[("margin-phi", "0.1")] == f"last-threshold:margin=0.1+rl:path={t1 / 'recommender'}"
    )
    with open(t1 / "table3.csv") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == list(TABLE3_COLUMNS)
    rows = {r["method"]: r for r in table}
    assert (
        rows["rl"]["vs_margin"] == "margin-phi"
        and rows["threshold"]["vs_margin"] == "margin-exact-linear"
    )

    rerun = runner.invoke(
        app,
        [
            "reproduce",
            "pareto",
            "--setting",
            "T1-b005",
            "--out",
            str(t1),
            "--hybrid-predictors",
            "own",
            *tiny,
        ],
    )
    assert rerun.exit_code == 0, rerun.output
    assert (
        len((t1 / "points.csv").read_text().splitlines()) == len(points) + 1
    )  # nothing re-evaluated
    (t1 / "table3.csv").unlink()
    report = runner.invoke(
        app,
        [
            "reproduce",
            "pareto",
            "--setting",
            "T1-b005",
            "--out",
            str(t1),
            "--report-only",
            "--summary",
            "",
        ],
    )
    assert report.exit_code == 0, report.output
    assert (t1 / "table3.csv").is_file() and len(
        (t1 / "points.csv").read_text().splitlines()
    ) == len(points) + 1

    t5 = tmp_path / "T5"
    r = runner.invoke(
        app,
        [
            "reproduce",
            "pareto",
            "--setting",
            "T5-b005",
            "--out",
            str(t5),
            "--phi",
            str(t1 / "recommender"),
            *tiny,
        ],
    )
    assert r.exit_code == 0, r.output
    assert not (t5 / "recommender").exists()
    with open(tmp_path / "table3.csv") as f:
        merged = list(csv.DictReader(f))
    assert {(m["T"], m["beta"]) for m in merged} == {("1", "0.05"), ("5", "0.05")}
    assert (tmp_path / "pareto-T1-b005.png").is_file() and (
        tmp_path / "pareto-T5-b005.png"
    ).is_file()

    wrong = runner.invoke(
        app,
        [
            "reproduce",
            "pareto",
            "--setting",
            "T1-b001",
            "--out",
            str(tmp_path / "b001"),
            "--phi",
            str(t1 / "recommender"),
            *tiny,
        ],
    )
    assert wrong.exit_code == 2 and "beta" in wrong.output


def test_run_records_artefacts_and_refuses_a_mismatch_unless_allowed(tmp_path):
    import json

    from lab.cli import app as cli_app

    runner = CliRunner()
    res = runner.invoke(cli_app, ["run", "-p", "rl", "--ticks", "3", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    kinds = sorted(a["kind"] for a in summary["artefacts"])
    assert kinds == ["predictor", "recommender"] and summary["policy_spec"] == "rl"
    assert all(len(a["weights_sha256"]) == 64 and a["mismatch"] == [] for a in summary["artefacts"])
    # beta = 0.01 is not what the shipped artefacts were trained for
    res = runner.invoke(
        cli_app,
        ["run", "-s", "paper-hard", "-p", "rl", "--ticks", "3", "--out", str(tmp_path / "b")],
    )
    assert res.exit_code == 2 and "trained for another scenario" in res.output
    assert "beta: trained 0.05, here 0.01" in res.output
    res = runner.invoke(
        cli_app,
        [
            "run",
            "-s",
            "paper-hard",
            "-p",
            "rl",
            "--ticks",
            "3",
            "--out",
            str(tmp_path / "b"),
            "--allow-mismatch",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert all(a["mismatch"] == ["beta: trained 0.05, here 0.01"] for a in summary["artefacts"])
    # phi does not depend on the validity horizon: T = 5 reuses the T = 1 recommender
    res = runner.invoke(
        cli_app,
        [
            "run",
            "-s",
            "paper-T5",
            "-p",
            "rl-recommender",
            "--ticks",
            "3",
            "--out",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output


@pytest.mark.slow  # a real (short) SAC training run
def test_train_command_writes_a_learning_curve_plot(tmp_path):
    from lab.cli import app as cli_app

    out = tmp_path / "phi"
    res = CliRunner().invoke(
        cli_app,
        ["train", "recommender", "--episodes", "3", "--warmup-episodes", "1", "--out", str(out)],
    )
    assert res.exit_code == 0, res.output
    png = out / "learning_curve.png"
    assert png.is_file() and png.read_bytes()[:4] == b"\x89PNG"


def test_sac_on_the_batched_vec_env_of_one_is_sac_on_the_env_alone():
    """One environment through the batch (PopulationVectorEnv + BatchedVecEnv) trains the
    same weights as DummyVecEnv(Monitor(PopulationEnv)), the path n_envs = 1 takes."""
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    from lab.envs import PopulationVectorEnv
    from lab.training import BatchedVecEnv, silent_logger

    def weights(vec):
        model = SAC("MlpPolicy", vec, seed=2, device="cpu", **SAC_TINY.sb3_kwargs())
        model.set_logger(silent_logger())
        model.learn(total_timesteps=50)
        return torch.cat([p.detach().flatten() for p in model.policy.parameters()])

    alone = weights(DummyVecEnv([lambda: Monitor(PopulationEnv("paper", **TINY))]))
    batched = weights(VecMonitor(BatchedVecEnv(PopulationVectorEnv("paper", 1, **TINY))))
    assert torch.equal(alone, batched)


@pytest.mark.slow
def test_training_with_several_environments(tmp_path):
    """--n-envs 3: every environment's episodes on the curve, checkpoints where a multiple
    of checkpoint_every is passed, the same weights from the same seed, n_envs in the
    manifest, and a resume with another n_envs refused."""
    kw = dict(alpha=1.0, tau=1.0, seed=1, sac=SAC_TINY, checkpoint_every=25, n_envs=3, **TINY)
    a = train_predictor(tmp_path / "a", steps=60, **kw)
    b = train_predictor(tmp_path / "b", steps=60, **kw)
    assert a["steps"] == 60 and a["n_envs"] == 3
    assert a["weights_sha256"] == b["weights_sha256"]
    rows = (tmp_path / "a" / "learning_curve.csv").read_text().splitlines()
    assert len(rows) == 1 + 3 * (60 // 3) // TINY["ticks"]  # 20 ticks each: 2 episodes
    names = sorted(f.name for f in (tmp_path / "a" / "checkpoints").glob("*.json"))
    assert names == ["step_000000027.json", "step_000000051.json"]  # 3 steps a call: 25, 50
    with pytest.raises(ValueError, match="other settings"):
        train_predictor(tmp_path / "a", steps=90, resume=True, **{**kw, "n_envs": 2})
    m = train_predictor(tmp_path / "a", steps=90, resume=True, **kw)
    assert m["steps"] == 90
    with pytest.raises(ConfigError, match="^n_envs = 0 is not allowed"):
        train_predictor("unused", alpha=1.0, tau=1.0, n_envs=0)
