"""Study specification: grid expansion, stable run ids and validation errors."""

import math

import pytest

from abm.config import ConfigError
from lab.study import EXPERIMENTS, Study, paired_seeds, parse_seeds, run_id
from lab.study.spec import ExperimentName, StudyFile


def build(**keys):
    keys.setdefault("ticks", 5)
    return Study.build(keys.pop("scenario", "paper"), **keys)


def test_grid_is_product_of_axes_times_seeds():
    s = build(sweep={"k": [3, 5, 7], "policy": ["threshold", "none"]}, seeds=4)
    runs = s.runs()
    assert s.n_runs == len(runs) == 3 * 2 * 4
    assert len({r.run_id for r in runs}) == len(runs)
    assert {(r.params["k"], r.policy, r.seed) for r in runs} == {
        (k, p, seed) for k in (3, 5, 7) for p in ("threshold", "none") for seed in range(4)
    }
    for r in runs:
        assert (
            r.config["k"] == r.params["k"] and r.config["seed"] == r.seed and r.config["ticks"] == 5
        )


def test_zip_fields_advance_together():
    s = build(zip=[{"n_initial": [10, 100], "m": [10, 100], "k": [9, 90]}], seeds=[7])
    assert [(r.config["n_initial"], r.config["m"], r.config["k"]) for r in s.runs()] == [
        (10, 10, 9),
        (100, 100, 90),
    ]
    assert s.axis_fields == ("n_initial", "m", "k")


def test_run_ids_are_stable_and_ignore_order_and_labels():
    a = build(sweep={"k": [3, 5], "beta": [0.01, 0.05]}, seeds=2)
    b = build(sweep={"beta": [0.05, 0.01], "k": [5, 3]}, seeds=[1, 0], name="other")
    assert {r.run_id for r in a.runs()} == {r.run_id for r in b.runs()}
    # an integer for a float field names the same run as the float
    c = build(sweep={"beta": [1, 0.5]})
    d = build(sweep={"beta": [1.0, 0.5]})
    assert [r.run_id for r in c.runs()] == [r.run_id for r in d.runs()]
    # the id changes with any parameter and with the policy
    cfg = a.runs()[0].config
    assert run_id(cfg, "threshold") != run_id(cfg, "none")
    assert run_id(cfg, "threshold") != run_id({**cfg, "rho": 2.5}, "threshold")
    assert run_id(cfg, "threshold") == run_id({**cfg, "name": "x", "description": "y"}, "threshold")


def test_ranges():
    s = build(sweep={"k": {"start": 1, "stop": 9, "step": 2}})
    assert [r.params["k"] for r in s.runs()] == [1, 3, 5, 7, 9]
    s = build(sweep={"beta": {"start": 0.1, "stop": 0.3, "step": 0.1}})
    assert [r.params["beta"] for r in s.runs()] == [0.1, 0.2, 0.3]
    s = build(sweep={"beta": {"start": 0.01, "stop": 1, "num": 3, "log": True}})
    assert [r.params["beta"] for r in s.runs()] == pytest.approx([0.01, 0.1, 1.0])
    s = build(sweep={"nu": {"start": 0, "stop": 1, "num": 5}})
    assert [r.params["nu"] for r in s.runs()] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert build(seeds={"start": 3, "stop": 5}).seeds == (3, 4, 5)


def test_policy_selection_by_registry():
    s = build(sweep={"policy": {"registered": ["threshold", "no-such-policy", "none"]}})
    assert [r.policy for r in s.runs()] == ["threshold", "none"]
    assert s.skipped_policies == ("no-such-policy",)


def test_toml_file_and_relative_scenario(tmp_path):
    (tmp_path / "base.toml").write_text('base = "paper-T5"\nk = 4\n')
    path = tmp_path / "s.toml"
    path.write_text(
        'scenario = "base.toml"\nticks = 3\nseeds = 2\nmetrics = ["rr", "rf"]\n'
        "[set]\nbeta = 0.02\n[sweep]\nm = [5, 10]\n"
    )
    s = Study.from_toml(path)
    assert s.name == "s" and s.metrics == ("rr", "rf") and s.report_metrics == ("rr", "rf")
    cfg = s.runs()[0].config
    assert (cfg["validity"], cfg["k"], cfg["beta"], cfg["ticks"]) == (5, 4, 0.02, 3)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"sweep": {"kk": [1]}}, "unknown scenario field 'kk'"),
        ({"sweep": {"k": []}}, "sweep.k is empty"),
        ({"sweep": {"k": 5}}, "sweep.k = 5 is not allowed; allowed: a list or a range"),
        ({"sweep": {"k": {"start": 5, "stop": 1, "step": 1}}}, "stop (1) must be >= start (5)"),
        ({"sweep": {"k": {"start": 1, "stop": 5, "step": 0}}}, "sweep.k.step = 0 is not allowed"),
        ({"sweep": {"k": {"start": 1, "stop": 5}}}, "exactly one of `step` or `num`"),
        ({"sweep": {"k": {"start": 1, "stop": 5, "num": 0}}}, "sweep.k.num = 0 is not allowed"),
        (
            {"sweep": {"beta": {"start": 0, "stop": 1, "num": 3, "log": True}}},
            "log range needs start > 0",
        ),
        ({"sweep": {"k": {"start": 1, "stop": 5, "by": 1}}}, "sweep.k.by"),
        ({"sweep": {"k": [0, 3]}}, "sweep point k=0: k = 0 is not allowed"),
        ({"sweep": {"k": [3, 3]}}, "lists 3 more than once"),
        ({"sweep": {"seed": [1, 2]}}, "use the top-level `seeds` key"),
        ({"sweep": {"policy": ["threshold", "nope"]}}, "sweep.policy[1]: policy = 'nope' is not"),
        ({"sweep": {"policy": {"registered": ["a", "b"]}}}, "none of ['a', 'b'] is registered"),
        ({"sweep": {"k": {"registered": ["a"]}}}, "use it for policy only"),
        ({"sweep": {"k": [3]}, "set": {"k": 4}}, "k is set or swept twice"),
        ({"policy": "nope"}, "policy: policy = 'nope' is not registered"),
        ({"set": {"beta": -1}}, "[set]: beta = -1 is not allowed"),
        ({"set": {"bogus": 1}}, "[set]: bogus"),
        ({"seeds": 0}, "seeds: 0 is not allowed; allowed: a count N"),
        ({"seeds": "9-3"}, "seeds: '9-3' is not allowed"),
        ({"seeds": "a-b"}, "seeds: 'a-b' is not allowed"),
        ({"seeds": [1, 1]}, "more than once"),
        ({"seeds": [-1]}, "seeds: [-1] is not allowed"),
        ({"metrics": ["rr", "speed"]}, "unknown metric(s) speed"),
        ({"report_metrics": ["nope"]}, "report_metrics: unknown metric(s) nope"),
        ({"zip": [{"m": [1, 2], "k": [1]}]}, "lists must have equal lengths, got m: 2, k: 1"),
        ({"sweepz": {}}, "sweepz"),
        ({"experiment": "nope"}, "experiment = 'nope' is not allowed; allowed: one of episode"),
        ({"experiment": "recommender-bench", "policy": "threshold"}, "takes no policy"),
        ({"experiment": "recommender-bench", "set": {"n": 0}}, "set.n = 0 is not allowed"),
        ({"experiment": "recommender-bench", "metrics": ["rr"]}, "keeps no tick columns"),
        ({"ticks": "5"}, "ticks = '5' is not allowed"),
        ({"ticks": 0}, "ticks = 0 is not allowed"),
    ],
)
def test_validation_errors_name_the_field(keys, message):
    with pytest.raises(ConfigError) as err:
        build(**keys)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_sweep_point_errors_name_the_point():
    # each value is valid alone; together with n_features=2 the difficulty length is wrong
    with pytest.raises(ConfigError, match=r"sweep point n_features=2: difficulty = "):
        build(sweep={"n_features": [2]})


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("scenario = 'paper'\n[sweep]\nk = []\n")
    with pytest.raises(ConfigError, match=r"bad.toml: sweep.k is empty"):
        Study.from_toml(path)
    with pytest.raises(ConfigError, match="study file not found"):
        Study.from_toml(tmp_path / "missing.toml")
    (tmp_path / "broken.toml").write_text("scenario = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Study.from_toml(tmp_path / "broken.toml")


@pytest.mark.slow  # over 5 s on 2 cores (the fast tier keeps under 5 s a test)
def test_shipped_studies_validate():
    from pathlib import Path

    files = sorted((Path(__file__).parents[1] / "studies").glob("*.toml"))
    assert len(files) >= 3
    for f in files:
        s = Study.from_toml(f)
        assert s.n_runs == len(s.runs()) > 0
        assert not math.isnan(s.base.beta)


@pytest.mark.parametrize(
    ("raw", "seeds"),
    [
        (3, (0, 1, 2)),
        ("3", (0, 1, 2)),
        ("5-7", (5, 6, 7)),
        ("4,1,9", (4, 1, 9)),
        ([2, 0], (2, 0)),
        ({"start": 2, "stop": 6, "step": 2}, (2, 4, 6)),
    ],
)
def test_one_seed_syntax(raw, seeds):
    assert parse_seeds(raw) == seeds
    assert build(seeds=raw).seeds == seeds


def test_paired_seeds_and_their_bounds():
    assert paired_seeds(5, 3) == (5, 6, 7)
    with pytest.raises(ConfigError, match="episodes = 0 is not allowed"):
        paired_seeds(0, 0)
    with pytest.raises(ConfigError, match="seed = -1 is not allowed"):
        paired_seeds(-1, 2)


def test_the_spec_model_is_frozen_and_lists_every_experiment():
    assert set(ExperimentName.__args__) == set(EXPERIMENTS)
    spec = StudyFile(scenario="paper")
    with pytest.raises(Exception, match="frozen"):
        spec.name = "x"


def test_experiment_parameters_are_set_swept_and_part_of_the_run_id():
    s = build(
        experiment="recommender-bench",
        set={"n": 20},
        seeds="0-1",
        sweep={"recommender": ["ustun", "wachter"]},
    )
    runs = s.runs()
    assert [(r.settings["recommender"], r.settings["n"], r.seed) for r in runs] == [
        ("ustun", 20, 0),
        ("ustun", 20, 1),
        ("wachter", 20, 0),
        ("wachter", 20, 1),
    ]
    assert s.report_metrics == ("error", "cost") and s.metrics == ()
    other = build(
        experiment="recommender-bench",
        set={"n": 21},
        seeds="0-1",
        sweep={"recommender": ["ustun", "wachter"]},
    )
    assert not {r.run_id for r in runs} & {r.run_id for r in other.runs()}
    # an episode keeps the id of its configuration and policy alone
    episode = build(seeds=1).runs()[0]
    assert episode.run_id == run_id(episode.config, episode.policy)


def test_a_scenario_axis_starts_each_point_from_its_preset_with_set_applied():
    study = Study.build(
        "paper",
        zip=[{"scenario": ["paper", "groups"], "policy": ["threshold", "none"]}],
        sweep={"world_seed": [0, 1]},
        seeds=2,
        ticks=5,
        set={"k": 4},
    )
    runs = study.runs()
    assert len(runs) == 2 * 2 * 2 and len({r.run_id for r in runs}) == 8
    groups = [r for r in runs if r.params["scenario"] == "groups"]
    assert all(r.policy == "none" and r.config["group_share"] == [0.5, 0.5] for r in groups)
    assert all(r.config["ticks"] == 5 and r.config["k"] == 4 for r in runs)
    with pytest.raises(ConfigError, match=r"^sweep.scenario\[0\] = 'nowhere' is not allowed"):
        Study.build("paper", sweep={"scenario": ["nowhere"]})


def test_world_seeds_run_every_seed_in_every_world_in_the_seed_syntax():
    study = Study.build("paper", world_seeds="3-4", seeds=2, ticks=3)
    runs = study.runs()
    assert [(r.config["world_seed"], r.seed) for r in runs] == [(3, 0), (3, 1), (4, 0), (4, 1)]
    with pytest.raises(ConfigError, match="world_seed is set or swept twice"):
        Study.build("paper", world_seeds=2, sweep={"world_seed": [0, 1]})
    with pytest.raises(ConfigError, match=r"^world_seeds = 'x' is not allowed"):
        Study.build("paper", world_seeds="x")


def test_policies_compared_over_different_ticks_are_refused_in_one_line():
    """Issue 48: a zip of policy and ticks would compare a 20-tick with a 100-tick run;
    a sweep of both gives every policy every length and stays a comparison."""
    with pytest.raises(ConfigError) as err:
        Study.build("paper", zip=[{"policy": ["threshold", "threshold-ustun"], "ticks": [100, 20]}])
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("policies run different tick counts (threshold: 100; ")
    assert "threshold-ustun: 20" in message and "fewer seeds" in message
    with pytest.raises(ConfigError, match=r"different tick counts at k=3 \(threshold: 5; none: 9"):
        Study.build(
            "paper", sweep={"k": [3]}, zip=[{"policy": ["threshold", "none"], "ticks": [5, 9]}]
        )
    both = Study.build("paper", sweep={"policy": ["threshold", "none"], "ticks": [5, 9]}, seeds=2)
    assert {(r.policy, r.config["ticks"]) for r in both.runs()} == {
        (p, t) for p in ("threshold", "none") for t in (5, 9)
    }
    # one policy at several lengths is no comparison of policies; nor are points of two worlds
    assert Study.build("paper", zip=[{"ticks": [5, 9], "k": [3, 4]}]).n_runs == 2
    study = Study.build(
        "paper",
        zip=[{"scenario": ["paper", "motivating-example"], "policy": ["threshold", "none"]}],
    )
    assert {r.config["ticks"] for r in study.runs()} == {100, 3}
