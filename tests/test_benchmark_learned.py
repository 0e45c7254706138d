"""Learned entries of the benchmark (issue 50): a hybrid's predictor μ trained by the
protocol's recipe in each preset, on worlds it is not judged in, with several training
seeds whose mean is the entry's run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from abm.registry import REGISTRY
from abm.validation import ConfigError
from lab.benchmark import card, learned
from lab.benchmark.learned import probe, seed_means, trained_with, variants
from lab.benchmark.protocol import VERSION, Protocol, Training, protocol, same_runs
from lab.cli import app
from lab.envs import PopulationEnv

runner = CliRunner()


def test_the_protocol_trains_the_hybrids_that_name_no_predictor():
    assert trained_with("hybrid-exact-linear") == "exact-linear"
    assert trained_with("hybrid-ustun:levels=10,allow_mismatch=true") == "ustun:levels=10"
    assert trained_with("hybrid-exact-linear:path=some/where") is None
    for spec in ("threshold", "last-threshold+exact-linear", "rl", "hybrid-other"):
        assert trained_with(spec) is None, spec
    assert probe("hybrid-wachter") == "last-threshold+wachter"
    assert probe("threshold-true") == "threshold-true"
    proto = protocol("full")
    named = variants("hybrid-ustun:levels=10", proto, "paper", "A")
    assert list(named.values()) == list(proto.training.seeds) == [0, 1, 2]
    slug = VERSION.replace("/", "-")
    for spec, seed in named.items():
        assert spec.endswith(f",path=A/{slug}/hybrid-ustun-levels-10/paper/seed-{seed}")
        REGISTRY.validate(spec)
    assert variants("threshold", proto, "paper", "A") == {"threshold": -1}


def test_training_worlds_are_never_evaluation_worlds_and_the_recipe_is_fixed():
    full = protocol("full")
    assert not set(full.training.worlds) & set(full.world_seeds)
    assert len(full.training.seeds) >= 3 and full.training.steps == 7000
    with pytest.raises(ValueError, match=r"training worlds \[3\] are evaluation worlds"):
        Protocol(training=Training(worlds=(3, 20)))
    other = full.model_copy(update={"training": Training(steps=100)})
    assert other.digest() != full.digest()
    # the recipe makes a learned entry's runs, not any other entry's
    assert same_runs(full, other) and not same_runs(full, other, learned=True)


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
    assert said[0].startswith("predictors:") and "bit for bit" in said[-1]
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
    with pytest.raises(ConfigError, match="artefact = .* was trained with"):
        learned.train("hybrid-exact-linear", changed, ["paper"], art, workers=1, log=str)
