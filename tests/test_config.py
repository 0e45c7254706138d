"""Scenario configuration: presets, TOML files, validation messages."""

import math

import numpy as np
import pytest

from abm import ConfigError, RecourseModel, ScenarioConfig, get_scenario
from abm.scenarios import PRESETS, resolve_scenario, scenario_from_toml


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("k", 0, "k = 0 is not allowed; allowed: an integer in [1, 10000000]"),
        ("k", 2.5, "k = 2.5 is not allowed; allowed: an integer in [1, 10000000]"),
        ("k", True, "k = True is not allowed; allowed: an integer in [1, 10000000]"),
        ("k", "3", "k = '3' is not allowed; allowed: an integer in [1, 10000000]"),
        ("beta", 0.0, "beta = 0.0 is not allowed; allowed: a number in (0, inf]"),
        ("beta", -1, "beta = -1 is not allowed; allowed: a number in (0, inf]"),
        ("beta", math.nan, "beta = nan is not allowed; allowed: a number in (0, inf]"),
        ("validity", 0, "validity = 0 is not allowed; allowed: an integer in [1, 10000]"),
        ("rho", -0.1, "rho = -0.1 is not allowed; allowed: a number in [0, inf)"),
        ("nu", math.inf, "nu = inf is not allowed; allowed: a number in [0, inf)"),
        ("difficulty", (0.5,) * 9, "allowed: one number in (0, 1] per feature (n_features = 10"),
        (
            "difficulty",
            (0.5,) * 9 + (1.5,),
            "difficulty = (0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.5) is not",
        ),
        ("difficulty", (0.5,) * 9 + ("x",), "difficulty[9] = 'x' is not allowed; allowed: one"),
        ("mean_range", (0.8, 0.2), "mean_range = (0.8, 0.2) is not allowed; allowed: a pair"),
        ("mean_range", (0.1, 0.2, 0.3), "allowed: a pair [lo, hi] with 0 <= lo <= hi <= 1"),
        (
            "std_range",
            (0.0, 0.0),
            "std_range = (0.0, 0.0) is not allowed; allowed: a pair [lo, "
            "hi] with 0 <= lo <= hi <= 10 and hi > 0",
        ),
        (
            "immutable",
            (10,),
            "immutable = (10,) is not allowed; allowed: distinct feature indices in [0, 9]",
        ),
        ("immutable", tuple(range(10)), "leaving one feature mutable"),
        (
            "decision_model",
            "svm",
            "decision_model = 'svm' is not allowed; allowed: one of logistic, mlp",
        ),
        ("n_initial", -1, "n_initial = -1 is not allowed; allowed: an integer in [0, 10000000]"),
        ("seed", -3, "seed = -3 is not allowed; allowed: an integer in [0, 2**63 - 1]"),
        ("name", "", "name = '' is not allowed; allowed: a non-empty string"),
    ],
)
def test_validation_names_field_value_and_range(field, value, message):
    with pytest.raises(ConfigError) as info:
        ScenarioConfig().replace(**{field: value})
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_cross_field_checks_name_the_fields():
    with pytest.raises(
        ConfigError, match=r"n_initial \+ m = 0 is not allowed; allowed: at least 1"
    ):
        ScenarioConfig(n_initial=0, m=0)
    # the difficulty check follows n_features
    c = ScenarioConfig(n_features=3, difficulty=(0.5, 0.5, 0.5), immutable=(2,))
    assert (c.n_features, c.difficulty, c.immutable) == (3, (0.5, 0.5, 0.5), (2,))
    with pytest.raises(ConfigError, match=r"immutable = \(3,\).*indices in \[0, 2\]"):
        c.replace(immutable=(3,))


def test_types_are_kept_exact():
    """Ints stay ints; numbers for float fields become floats, exactly; lists become tuples."""
    c = ScenarioConfig().replace(k=np.int64(4), beta=1, difficulty=[1] * 10, mean_range=[0, 1])
    assert type(c.k) is int and c.k == 4
    assert type(c.beta) is float and c.beta == 1.0
    assert c.difficulty == (1.0,) * 10 and all(type(d) is float for d in c.difficulty)
    assert c.mean_range == (0.0, 1.0)
    assert ScenarioConfig().replace(beta=math.inf).beta == math.inf  # "every change succeeds"


def test_unknown_field_is_an_error():
    with pytest.raises(ConfigError, match=r"betta = 0.1 is not a known field; allowed: name, "):
        ScenarioConfig().replace(betta=0.1)
    with pytest.raises(ConfigError, match="kk = 3 is not a known field"):
        ScenarioConfig.from_dict({"kk": 3})


def test_description_is_a_label():
    a, b = ScenarioConfig(description="one"), ScenarioConfig(description="two")
    assert a == b and hash(a) == hash(b)
    assert a != ScenarioConfig(k=8)


def test_paper_presets_match_appendix_d():
    for name, T, beta in [
        ("paper", 1, 0.05),
        ("paper-T5", 5, 0.05),
        ("paper-hard", 1, 0.01),
        ("paper-T5-hard", 5, 0.01),
    ]:
        c = get_scenario(name)
        assert (c.n_initial, c.k, c.m, c.ticks, c.validity, c.beta) == (20, 9, 10, 100, T, beta)
        assert c.difficulty == (0.84, 0.15, 0.85, 0.78, 0.25, 0.18, 0.29, 0.83, 0.91, 0.10)
    large = get_scenario("large")
    assert (large.n_initial, large.m, large.k) == (100_000, 100_000, 90_000)


def test_toml_roundtrip_and_base(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'base = "paper-T5"\nbeta = 0.02\nk = 5\ndifficulty = [0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]\n'
    )
    c = scenario_from_toml(path)
    assert (c.name, c.validity, c.beta, c.k) == ("mine", 5, 0.02, 5)
    assert c.difficulty == (0.5,) * 10
    model = RecourseModel(str(path), "threshold", ticks=3).run()
    assert model.tick == 3


def test_toml_unknown_key_and_bad_syntax(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("kk = 3\n")
    with pytest.raises(ConfigError, match="kk = 3 is not a known field"):
        scenario_from_toml(bad)
    broken = tmp_path / "broken.toml"
    broken.write_text("k = = 3\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        scenario_from_toml(broken)
    with pytest.raises(ConfigError, match="missing.toml' does not exist; allowed: an existing"):
        scenario_from_toml(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="scenario = 'nope' is not a preset; allowed: .*paper-T5"):
        resolve_scenario("nope")
    based = tmp_path / "based.toml"
    based.write_text("base = 3\n")
    with pytest.raises(ConfigError, match="base = 3 is not allowed; allowed: a preset name"):
        scenario_from_toml(based)


def test_config_is_frozen_and_hashable():
    c = get_scenario("paper")
    with pytest.raises(AttributeError, match="frozen"):
        c.k = 3  # type: ignore[misc]
    assert hash(c) == hash(get_scenario("paper"))


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_runs(name):
    ticks = 2 if name == "large" else None
    model = RecourseModel(name, "threshold", agents=name != "large", record_events=name != "large")
    model.run(ticks)
    row = model.last_row
    assert row["n_accepted"] == min(model.config.k, row["n_applicants"])


def test_motivating_example_tells_the_threshold_trap():
    m = RecourseModel("motivating-example", "threshold")
    m.step()
    first = m.last_row
    assert (first["n_applicants"], first["n_accepted"], first["n_rejected"]) == (4, 2, 2)
    threshold = first["threshold"]
    m.step()
    second = m.last_row
    # both rejected reached exactly the old threshold, reapplied, and only one got in
    assert second["n_reapplied"] == 2 and second["n_succ"] == 2
    assert second["n_succ_accepted"] == 1 and second["rr"] == 0.5
    events = m.candidate_table()
    back = events[(events["tick"] == 1) & events["reapplied"]]
    assert (back["score"] >= threshold - 1e-9).all()
    newcomers = events[(events["tick"] == 1) & ~events["reapplied"]]
    assert (newcomers["score"] > threshold).any()


def test_motivating_example_is_common_across_seeds():
    hits = 0
    for seed in range(30):
        m = RecourseModel("motivating-example", "threshold", seed=seed, agents=False)
        m.run(2)
        hits += m.last_row["n_succ"] == 2 and m.last_row["n_succ_accepted"] < 2
    assert hits >= 8  # the trap is no fluke of one seed


@pytest.mark.parametrize("scenario", ["paper", "lending", "fair-scarf"])
def test_a_new_seed_alone_is_the_config_built_anew(scenario):
    """replace(seed=...) validates the seed alone and copies the rest: the same config
    (values, run-id dictionary, fields set) and the same one-line errors as a full build."""
    base = resolve_scenario(scenario)
    for value in (0, 7, 2**63 - 1):
        fast = base.replace(seed=value)
        full = ScenarioConfig(**{**base._values(), "seed": value})
        assert fast == full and fast.to_dict() == full.to_dict() and fast.seed == value
        assert fast.model_fields_set == full.model_fields_set
    for bad in (-1, True, 2.0, "3", 2**63):
        with pytest.raises(ConfigError) as fast_error:
            base.replace(seed=bad)
        with pytest.raises(ConfigError) as full_error:
            ScenarioConfig(**{**base._values(), "seed": bad})
        assert str(fast_error.value) == str(full_error.value)
