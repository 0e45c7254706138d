"""Learned entries of the benchmark (issue 50): a hybrid's predictor μ, and φ with the μ
that advises with it, trained by the protocol's recipe in each preset, on worlds they are
not judged in, with several training seeds whose mean is the entry's run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from abm.registry import REGISTRY
from abm.validation import ConfigError
from lab.benchmark import card, learned
from lab.benchmark.learned import Plan, as_entry, plan, probe, seed_means, variants
from lab.benchmark.protocol import RECIPE_FIELDS, Protocol, Training, past, protocol, same_runs
from lab.cli import app
from lab.envs import PopulationEnv, RecommenderEnv

runner = CliRunner()


def test_the_protocol_trains_the_learned_entries_that_name_no_artefact():
    assert plan("hybrid-exact-linear") == Plan("hybrid", "exact-linear")
    assert plan("hybrid-ustun:levels=10,allow_mismatch=true").recommender == "ustun:levels=10"
    assert plan("rl") == Plan("rl") and plan("rl-recommender") == Plan("rl-recommender")
    assert plan("rl-constrained").target == 0.95
    assert plan("rl-constrained:target=0.9") == Plan("rl-constrained", None, 0.9)
    for spec in ("hybrid-exact-linear:path=a", "rl:path=a", "rl:recommender=a", "threshold"):
        assert plan(spec) is None, spec
    assert plan("last-threshold+exact-linear") is None and plan("hybrid-other") is None
    assert plan("hybrid-wachter").recommender == "wachter" and plan("rl").recommender is None
    assert plan("rl").mu and not plan("rl-recommender").mu  # φ alone: no μ
    assert probe("hybrid-wachter") == "last-threshold+wachter"
    assert probe("rl-recommender") == probe("rl") == "last-threshold+exact-linear"
    assert probe("threshold-true") == "threshold-true"
    proto = protocol("full")
    named = variants("hybrid-ustun:levels=10", proto, "paper", "A")
    assert list(named.values()) == list(proto.training.seeds) == [0, 1, 2]
    # a hybrid's predictors stay where version 3 put them: version 4 changed only φ's part
    # of the recipe, so its runs keep their ids
    for spec, seed in named.items():
        assert spec.endswith(f",path=A/dynamic-recourse-3/hybrid-ustun-levels-10/paper/seed-{seed}")
        REGISTRY.validate(spec)
    phi = "A/dynamic-recourse-4/phi/paper/seed-{}"
    for spec, seed in variants("rl", proto, "paper", "A").items():
        mu = f"A/dynamic-recourse-4/rl/paper/seed-{seed}"
        assert spec == f"rl:path={mu},recommender={phi.format(seed)}"
        REGISTRY.validate(spec)
    for spec, seed in variants("rl-recommender", proto, "paper", "A").items():
        assert spec == f"rl-recommender:path={phi.format(seed)}"  # the same φ as rl's
        REGISTRY.validate(spec)
    for spec in variants("rl-constrained:target=0.9", proto, "paper", "A"):
        assert spec.startswith("rl-constrained:target=0.9,path=A/dynamic-recourse-4/")
        REGISTRY.validate(spec)
    assert variants("threshold", proto, "paper", "A") == {"threshold": -1}
    # φ first, then the μ that advises with it
    chain = learned.tasks("rl-constrained:target=0.9", proto, "paper", 1, "A")
    assert [t["kind"] for t in chain] == ["recommender", "constrained"]
    assert chain[0]["episodes"] == 20_000 and chain[1]["target"] == 0.9
    assert chain[1]["recommender"] == f"rl:path={phi.format(1)}"


def test_training_worlds_are_never_evaluation_worlds_and_the_recipe_is_fixed():
    full = protocol("full")
    assert not set(full.training.worlds) & set(full.world_seeds)
    assert len(full.training.seeds) >= 3 and full.training.steps == 7000
    assert full.training.phi_episodes == 20_000
    with pytest.raises(ValueError, match=r"training worlds \[3\] are evaluation worlds"):
        Protocol(training=Training(worlds=(3, 20)))
    other = full.model_copy(update={"training": Training(steps=100)})
    assert other.digest() != full.digest()
    # the recipe makes a learned entry's runs, not any other entry's
    assert same_runs(full, other) and not same_runs(full, other, RECIPE_FIELDS["hybrid"])
    # φ's budget makes the runs of the entries with φ, not a hybrid's
    phi = full.model_copy(update={"training": Training(phi_episodes=100)})
    assert same_runs(full, phi, RECIPE_FIELDS["hybrid"])
    for kind in ("rl", "rl-recommender", "rl-constrained"):
        assert not same_runs(full, phi, RECIPE_FIELDS[kind]), kind
    assert same_runs(full, past("dynamic-recourse/3"), RECIPE_FIELDS["hybrid"])
    assert not same_runs(full, past("dynamic-recourse/3"), RECIPE_FIELDS["rl"])


def test_a_learned_entry_s_run_is_the_mean_of_its_training_seeds():
    base = {"preset": "paper", "world_seed": 0, "seed": 0}
    runs = pd.DataFrame(
        [
            {**base, "policy": "e", "training_seed": 0, "run_id": "a", "rr": 0.2, "rf": 1.0},
            {**base, "policy": "e", "training_seed": 1, "run_id": "b", "rr": 0.4, "rf": 0.5},
            {**base, "policy": "none", "training_seed": -1, "run_id": "c", "rr": 0.9, "rf": 0.1},
        ]
    )
    out = seed_means(runs, "e").set_index("policy")
    assert out.loc["e", "rr"] == pytest.approx(0.3) and out.loc["e", "rf"] == 0.75
    assert out.loc["none", "run_id"] == "c" and len(out) == 2
    plain = runs.assign(training_seed=-1)
    assert seed_means(plain, "e").equals(plain)


def test_learned_entries_of_one_pass_each_keep_their_seeds():
    # two learned entries judged in one pass (scripts/leaderboard_cards.py): naming the
    # second must not clear the first's seeds, or its card would judge 6 runs a world
    base = {"preset": "paper", "world_seed": 0, "seed": 0, "rr": 0.5}
    runs = pd.DataFrame(
        [{**base, "policy": f"{e}:path=s{s}", "run_id": f"{e}{s}"} for e in "ab" for s in (0, 1)]
        + [{**base, "policy": "none", "run_id": "n"}]
    )
    for entry in "ab":
        runs = as_entry(runs, entry, {f"{entry}:path=s{s}": s for s in (0, 1)})
    assert runs.set_index("run_id")["training_seed"].to_dict() == {
        "a0": 0,
        "a1": 1,
        "b0": 0,
        "b1": 1,
        "n": -1,
    }
    for entry in "ab":
        means = seed_means(runs, entry)
        assert (means["policy"] == entry).sum() == 1 and len(means) == 4


def test_population_env_rotates_its_episodes_over_its_worlds():
    env = PopulationEnv("paper", worlds=(1000, 1001), ticks=3)
    seen = []
    for seed in (0, None, None, 0):
        env.reset(seed=seed)
        seen.append(env.model.config.world_seed)
    assert seen == [1000, 1001, 1000, 1000]
    assert PopulationEnv("paper", ticks=3).worlds is None
    with pytest.raises(ValueError, match="worlds"):
        PopulationEnv("paper", worlds=())


def test_recommender_env_rotates_its_episodes_over_its_worlds():
    env = RecommenderEnv("paper", worlds=(1000, 1001))
    models = []
    for seed in (0, None, None, 0):
        env.reset(seed=seed)
        models.append(env.ctx.decision_model)
        assert env.config.world_seed == (1000, 1001)[(env.episodes - 1) % 2]
    assert models[0] is models[2] is models[3] and models[1] is not models[0]
    # one world: the scenario's, episode after episode (as before worlds existed)
    alone = RecommenderEnv("paper")
    assert alone.worlds is None and alone.config.world_seed == 0
    with pytest.raises(ValueError, match="worlds"):
        RecommenderEnv("paper", worlds=())


@pytest.mark.slow  # trains one μ (300 ticks) and runs the smoke tier: about 40 s
def test_a_learned_entry_is_trained_run_on_its_seeds_and_verifies(tmp_path):
    store, art = tmp_path / "store", tmp_path / "artefacts"
    out = tmp_path / "card"
    args = ["benchmark", "hybrid-exact-linear", "--tier", "smoke", "--workers", "1"]
    args += ["--store", str(store), "--artefacts", str(art), "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = card.read(out / "card.json")
    proto = protocol("smoke")
    seeds = proto.training.seeds
    entry = pd.DataFrame(doc["runs"]["entry"])
    assert len(entry) == proto.worlds * proto.episodes * len(seeds)
    assert sorted(entry["training_seed"].unique()) == list(seeds)
    trained = doc["learned"]["trained"]
    assert [(t["preset"], t["training_seed"]) for t in trained] == [("paper", s) for s in seeds]
    first = Path(trained[0]["path"]) / "manifest.json"
    assert first.is_relative_to(art)
    manifest = json.loads(first.read_text())
    assert manifest["worlds"] == list(proto.training.worlds)
    assert manifest["steps"] == proto.training.steps and manifest["alpha"] == proto.training.alpha
    assert doc["learned"]["seed_fronts"] and "training seed" in (out / "card.html").read_text()
    said = card.verify(out / "card.json", store=store, log=str)
    assert said[0].startswith("artefacts:") and "bit for bit" in said[-1]
    # a predictor other than the one the runs used is caught
    edited = json.loads((out / "card.json").read_text())
    edited["learned"]["trained"][0]["weights_sha256"] = "0" * 64
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    with pytest.raises(card.Mismatch, match="weights"):
        card.verify(tmp_path / "edited.json", store=store, log=str)
    # trained predictors are kept; one trained otherwise is refused, not overwritten
    before = first.stat().st_mtime_ns
    learned.train("hybrid-exact-linear", proto, ["paper"], art, workers=1, log=str)
    assert first.stat().st_mtime_ns == before
    changed = proto.model_copy(
        update={"training": proto.training.model_copy(update={"alpha": 4.0})}
    )
    # a recipe no version fixed trains elsewhere; one trained otherwise in its place is
    # refused, not overwritten
    assert learned.artefact_dir(art, changed, "hybrid-exact-linear", "paper", 0) != first.parent
    first.write_text(json.dumps({**manifest, "steps": proto.training.steps - 1}))
    with pytest.raises(ConfigError, match="artefact = .* was trained with"):
        learned.train("hybrid-exact-linear", proto, ["paper"], art, workers=1, log=str)


@pytest.mark.slow  # trains φ (30 episodes) and μ (300 ticks), runs the smoke tier twice: 15-90 s
def test_a_curve_ships_as_its_block_means(tmp_path):
    rows = [
        {"episode": e, "timesteps": 2 * e, "reward": float(e), "warmup": int(e < 3)}
        for e in range(1, 251)
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "learning_curve.csv", index=False)
    got = pd.read_csv(learned.curve_blocks(tmp_path, block=100))
    assert got["episode"].tolist() == [100, 200, 250]
    assert got["timesteps"].tolist() == [200, 400, 500]
    assert got["episodes"].tolist() == [100, 100, 50]
    assert got["reward"].tolist() == [50.5, 150.5, 225.5]
    assert got["warmup"].tolist() == pytest.approx([0.02, 0.0, 0.0])


def test_the_phi_entries_train_phi_once_and_verify(tmp_path):
    store, art = tmp_path / "store", tmp_path / "artefacts"
    proto = protocol("smoke")
    base = ["--tier", "smoke", "--workers", "1", "--store", str(store), "--artefacts", str(art)]
    result = runner.invoke(app, ["benchmark", "rl", *base, "--out", str(tmp_path / "rl")])
    assert result.exit_code == 0, result.output
    doc = card.read(tmp_path / "rl" / "card.json")
    kinds = [(t["kind"], t["training_seed"]) for t in doc["learned"]["trained"]]
    assert kinds == [("recommender", 0), ("predictor", 0)]
    phi, mu = (Path(t["path"]) for t in doc["learned"]["trained"])
    phi_manifest = json.loads((phi / "manifest.json").read_text())
    assert phi_manifest["env"]["episodes"] == proto.training.phi_episodes
    # what ships of φ's curve: its block means (30 episodes: one block of all)
    curve = pd.read_csv(phi / "learning_curve.csv")
    blocks = pd.read_csv(phi / learned.BLOCKS_FILE)
    assert blocks[["episode", "episodes"]].values.tolist() == [[30, 30]]
    assert blocks["reward"].iloc[0] == pytest.approx(curve["reward"].mean(), rel=1e-12)
    assert phi_manifest["worlds"] == list(proto.training.worlds)
    # μ advised with that φ in its training, and its runs load both
    assert json.loads((mu / "manifest.json").read_text())["recommender"] == f"rl:path={phi}"
    (spec,) = variants("rl", proto, "paper", art)
    assert spec == f"rl:path={mu.as_posix()},recommender={phi.as_posix()}"
    said = card.verify(tmp_path / "rl" / "card.json", store=store, log=str)
    assert said[0] == "artefacts: the 2 the card's runs used, byte for byte"
    # rl-recommender runs the same φ: nothing is trained again
    before = (phi / "manifest.json").stat().st_mtime_ns
    out = tmp_path / "rl-recommender"
    result = runner.invoke(app, ["benchmark", "rl-recommender", *base, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (phi / "manifest.json").stat().st_mtime_ns == before
    trained = card.read(out / "card.json")["learned"]["trained"]
    assert [(t["kind"], t["path"]) for t in trained] == [("recommender", phi.as_posix())]


def _trained_seconds(root: Path, name: str, kind: str) -> list[float]:
    """The ``cpu_seconds`` of the 24 artefacts of ``kind`` (``predictor`` or
    ``recommender``) that the shipped full-tier card of ``name`` was trained with."""
    doc = card.read(root / "results/benchmark/cards" / f"{name}-full.json")
    paths = [t["path"] for t in doc["learned"]["trained"] if t.get("kind", "predictor") == kind]
    assert len(paths) == 24, name
    return [json.loads((root / p / "manifest.json").read_text())["cpu_seconds"] for p in paths]


def test_the_cost_table_s_training_seconds_are_the_shipped_manifests():
    """docs/benchmarks.md's table of what the learned cards cost quotes each card's
    training as the sum of its artefacts' ``cpu_seconds``: every such figure is the
    manifests' sum (μ of the card named in the row; φ once for the three φ entries)."""
    import re

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (?:φ of )?`([^`]+)`[^|]*\| 24 (μ|φ)[^(]*\(([\d,]+) s\)", text, re.M)
    assert {(name, kind) for name, kind, _ in rows} >= {("hybrid-ustun", "μ"), ("rl", "φ")}
    for name, kind, quoted in rows:
        seconds = sum(_trained_seconds(root, name, "recommender" if kind == "φ" else "predictor"))
        assert int(quoted.replace(",", "")) == round(seconds), (name, kind)


def test_the_guide_s_training_figures_are_the_shipped_manifests():
    """Each learned card's paragraph in docs/benchmark.md quotes its trainings as
    "LO–HI CPU-seconds each, TOTAL in all": the least, the most and the sum of the
    ``cpu_seconds`` of the card's 24 artefacts of that kind (φ where the figure follows
    "24 φ", else the predictors μ), each rounded to the second."""
    import re

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "benchmark.md").read_text(encoding="utf-8")
    seen = set()
    for paragraph in re.split(r"\n\s*\n", text):
        quoted = re.search(r"([\d,]+)–([\d,]+)\s+CPU-seconds each,\s+([\d,]+) in all", paragraph)
        if quoted is None:
            continue
        name = re.search(r"`([^`]+)`", paragraph).group(1)
        kinds = re.findall(r"24 (μ|φ|predictors)", paragraph[: quoted.start()])
        wanted = "recommender" if kinds and kinds[-1] == "φ" else "predictor"
        seconds = _trained_seconds(root, name, wanted)
        figures = [int(q.replace(",", "")) for q in quoted.groups()]
        assert figures == [round(min(seconds)), round(max(seconds)), round(sum(seconds))], name
        seen.add(name)
    assert {"hybrid-exact-linear", "rl-recommender", "rl", "hybrid-ustun"} <= seen
