"""Property tests of the scenario config: it round-trips through dicts and TOML files, and
every out-of-range value is a ConfigError naming the field, the value and the range."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abm.config import ScenarioConfig, field_names, omitted_defaults
from abm.scenarios import scenario_from_toml
from abm.validation import ConfigError, require_int, require_number

SETTINGS = settings(max_examples=60, deadline=None)

unit = st.floats(0.0, 1.0)
positive_unit = st.floats(0.0, 1.0, exclude_min=True)
non_negative = st.floats(0.0, 1e6)


@st.composite
def pairs(draw, low: float, high: float, positive_high: bool = False):
    lo = draw(st.floats(low, high))
    hi = draw(st.floats(lo, high, exclude_min=positive_high and lo == 0.0))
    return (lo, hi)


@st.composite
def configs(draw) -> ScenarioConfig:
    """Any valid scenario (every field drawn within its bounds)."""
    z = draw(st.integers(1, 12))
    immutable = draw(st.lists(st.integers(0, z - 1), max_size=z - 1, unique=True))
    n_initial = draw(st.integers(0, 500))
    return ScenarioConfig(
        name=draw(st.text(min_size=1, max_size=12)),
        n_features=z,
        mean_range=draw(pairs(0.0, 1.0)),
        std_range=draw(pairs(0.0, 10.0, positive_high=True)),
        weight_range=draw(pairs(0.0, 1e3, positive_high=True)),
        label_noise=draw(non_negative),
        n_train=draw(st.integers(10, 10**6)),
        decision_model=draw(st.sampled_from(["logistic", "mlp"])),
        immutable=tuple(immutable),
        n_initial=n_initial,
        k=draw(st.integers(1, 500)),
        m=draw(st.integers(0 if n_initial else 1, 500)),
        ticks=draw(st.integers(1, 1_000_000)),
        validity=draw(st.integers(1, 10_000)),
        beta=draw(st.one_of(st.floats(0.0, 1e6, exclude_min=True), st.just(math.inf))),
        difficulty=tuple(draw(st.lists(positive_unit, min_size=z, max_size=z))),
        rho=draw(non_negative),
        chi=draw(non_negative),
        omega=draw(non_negative),
        nu=draw(non_negative),
        risk_aversion=draw(pairs(0.0, 100.0)),
        seed=draw(st.integers(0, 2**63 - 1)),
        world_seed=draw(st.integers(0, 2**63 - 1)),
        description=draw(st.text(max_size=30)),
    )


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string, once DEL is escaped too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    return "[" + ", ".join(_toml_value(v) for v in value) + "]"


@SETTINGS
@given(configs())
def test_dict_round_trip(config):
    data = config.to_dict()
    # the world extensions' and the one-way fields appear only when set (none is here)
    assert list(data) == [f for f in field_names() if f not in omitted_defaults()]
    again = ScenarioConfig.from_dict(data)
    assert again == config and hash(again) == hash(config)
    assert again.to_dict() == data  # description too, though equality ignores it
    assert ScenarioConfig.from_dict(data, base=ScenarioConfig(k=3)).to_dict() == data
    assert json.loads(json.dumps(data)) == data  # plain JSON data (inf as Infinity)


@settings(SETTINGS, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=configs())
def test_toml_file_round_trip(config, tmp_path):
    path = tmp_path / "scenario.toml"
    path.write_text("".join(f"{k} = {_toml_value(v)}\n" for k, v in config.to_dict().items()))
    again = scenario_from_toml(path)
    assert again.to_dict() == config.to_dict()
    # type by type: ints stay ints, floats stay (the same) floats
    assert [type(v) for v in again.to_dict().values()] == [
        type(v) for v in config.to_dict().values()
    ]


# field -> (a strategy of values outside the bounds, the allowed range as the message says)
OUT_OF_RANGE = {
    "n_features": (
        st.one_of(st.integers(max_value=0), st.integers(min_value=10_001)),
        "an integer in [1, 10000]",
    ),
    "n_train": (st.integers(max_value=9), "an integer in [10, 10000000]"),
    "n_initial": (st.integers(max_value=-1), "an integer in [0, 10000000]"),
    "k": (
        st.one_of(st.integers(max_value=0), st.integers(min_value=10_000_001)),
        "an integer in [1, 10000000]",
    ),
    "m": (st.integers(max_value=-1), "an integer in [0, 10000000]"),
    "ticks": (
        st.one_of(st.integers(max_value=0), st.integers(min_value=1_000_001)),
        "an integer in [1, 1000000]",
    ),
    "validity": (
        st.one_of(st.integers(max_value=0), st.integers(min_value=10_001)),
        "an integer in [1, 10000]",
    ),
    "seed": (
        st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63)),
        "an integer in [0, 2**63 - 1]",
    ),
    "world_seed": (st.integers(max_value=-1), "an integer in [0, 2**63 - 1]"),
    "beta": (st.one_of(st.floats(max_value=0.0), st.just(math.nan)), "a number in (0, inf]"),
    "label_noise": (
        st.one_of(st.floats(max_value=0.0, exclude_max=True), st.just(math.inf)),
        "a number in [0, inf)",
    ),
    "rho": (
        st.one_of(st.floats(max_value=0.0, exclude_max=True), st.just(math.inf)),
        "a number in [0, inf)",
    ),
    "chi": (st.floats(max_value=0.0, exclude_max=True), "a number in [0, inf)"),
    "omega": (st.just(math.nan), "a number in [0, inf)"),
    "nu": (st.floats(max_value=-1e-300), "a number in [0, inf)"),
    "mean_range": (
        st.tuples(st.floats(0.5, 1.0, exclude_min=True), st.floats(0.0, 0.5)),
        "a pair [lo, hi] with 0 <= lo <= hi <= 1",
    ),
    "risk_aversion": (
        st.tuples(st.just(0.0), st.floats(100.0, exclude_min=True)),
        "a pair [lo, hi] with 0 <= lo <= hi <= 100",
    ),
    "decision_model": (
        st.text().filter(lambda t: t not in ("logistic", "mlp", "dp", "ei")),
        "one of logistic, mlp, dp, ei",
    ),
}


@pytest.mark.parametrize("field", sorted(OUT_OF_RANGE))
def test_out_of_range_values_name_field_value_and_range(field):
    values, allowed = OUT_OF_RANGE[field]

    @SETTINGS
    @given(values)
    def check(value):
        with pytest.raises(ConfigError) as info:
            ScenarioConfig().replace(**{field: value})
        text = str(info.value)
        assert text.startswith(f"{field} = ")
        assert text.endswith(f"; allowed: {allowed}")
        assert "\n" not in text

    check()


@SETTINGS
@given(
    st.one_of(
        st.booleans(), st.text(), st.floats(allow_nan=False).filter(lambda x: not x.is_integer())
    )
)
def test_an_integer_field_takes_integers_only(value):
    with pytest.raises(
        ConfigError, match=r"^k = .* is not allowed; allowed: an integer in \[1, 10000000\]$"
    ):
        ScenarioConfig().replace(k=value)


@SETTINGS
@given(st.integers(), st.integers(-5, 5), st.integers(5, 50))
def test_require_int_matches_the_config_style(value, low, high):
    if low <= value <= high:
        assert require_int("levels", value, low, high) == value
    else:
        with pytest.raises(ConfigError) as info:
            require_int("levels", value, low, high)
        assert str(info.value) == (
            f"levels = {value} is not allowed; allowed: an integer in [{low}, {high}]"
        )


@SETTINGS
@given(st.floats(allow_nan=True))
def test_require_number_open_interval(value):
    if 0.0 < value <= 1.0:
        assert require_number("max_step", value, 0.0, 1.0, low_open=True) == value
    else:
        with pytest.raises(ConfigError, match=r"^max_step = .* allowed: a number in \(0, 1\]$"):
            require_number("max_step", value, 0.0, 1.0, low_open=True)
