"""Capacity that changes over time (the extension abm.mechanisms.capacity): schedules of k
and m, off by default."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from abm import RecourseModel
from abm.config import ScenarioConfig
from abm.mechanisms.capacity import CAPACITY_FIELDS, Capacity, round_half_up
from abm.planning import RolloutStreams, WithoutFeedback
from abm.rng import Streams
from abm.scenarios import get_scenario
from abm.testing import check_policy
from abm.validation import ConfigError
from lab.cli import app

OFF = {name: () for name in CAPACITY_FIELDS}


def _table(scenario="paper", seed=0, ticks=30, policy="threshold", **overrides):
    model = RecourseModel(scenario, policy, seed=seed, ticks=ticks, agents=False, **overrides)
    return model.run().tick_table()


def test_off_leaves_configs_and_results_as_they_were():
    paper = get_scenario("paper")
    explicit = paper.replace(**OFF)
    assert explicit == paper and explicit.to_dict() == paper.to_dict()
    assert not set(CAPACITY_FIELDS) & set(paper.to_dict()) and not paper.capacity_on
    base, off = _table(), _table(**OFF)
    pd.testing.assert_frame_equal(base, off, check_exact=True)
    assert "k" not in base.columns and "m" not in base.columns
    model = RecourseModel("paper", "threshold", agents=False)
    obs = model.decide()
    assert (obs.k_t, obs.m_t) == (9, 10)  # the scenario's values without a schedule


def test_a_step_schedule_gives_the_stated_k_each_tick():
    table = _table("recession", ticks=100)
    k = np.full(100, 9)
    k[40:60] = 5  # 9 * 0.5 = 4.5, rounded half up
    np.testing.assert_array_equal(table["k"], k)
    assert table["k"].dtype == np.int64 and (table["m"] == 10).all()
    assert (table["n_accepted"] <= table["k"]).all()
    full = table["n_applicants"] >= table["k"]
    assert full.any()
    np.testing.assert_array_equal(table["n_accepted"][full], table["k"][full])
    # the columns sit after the SPEC's and the mechanisms' columns
    assert list(table.columns[-2:]) == ["k", "m"]


def test_rounding_and_the_floors_of_k_and_m():
    assert [round_half_up(x) for x in (2.5, 3.5, 4.49, 0.5)] == [3, 4, 4, 1]
    c = ScenarioConfig(k=10, m=10, k_steps=((0, 0.25), (5, 0.0)), m_steps=((3, 0.0),))
    cap = Capacity(c)
    assert [cap.at(t) for t in (0, 3, 5)] == [(3, 10), (3, 0), (1, 0)]  # a tick keeps one place
    table = _table(c, ticks=8)
    np.testing.assert_array_equal(table["n_new"][3:], 0)  # m_t = 0: nobody new arrives
    np.testing.assert_array_equal(table["n_accepted"][5:] <= 1, True)


def test_seasonal_schedule_known_values():
    c = ScenarioConfig(k=10, m=20, k_season=(0.5, 4.0, 0.0), m_season=(0.25, 8.0, 2.0))
    k, m = Capacity(c).schedule(8)
    # 1 + 0.5 sin(pi t / 2): 1, 1.5, 1, 0.5, ...
    np.testing.assert_array_equal(k, [10, 15, 10, 5, 10, 15, 10, 5])
    # 1 + 0.25 sin(pi (t - 2) / 4) times 20: 15, 16.46, 20, 23.54, 25, 23.54, 20, 16.46
    np.testing.assert_array_equal(m, [15, 16, 20, 24, 25, 24, 20, 16])
    table = _table(c, ticks=8)
    np.testing.assert_array_equal(table["k"], k)
    np.testing.assert_array_equal(table["n_new"][1:], m[1:])  # tick 0 admits n_initial
    assert table["n_new"][0] == c.n_initial


def test_shocks_are_deterministic_per_seed_and_touch_no_other_stream():
    shocks = {"k_shocks": (0.1, 0.5, 5)}
    one, again = _table(ticks=60, **shocks), _table(ticks=60, **shocks)
    pd.testing.assert_frame_equal(one, again, check_exact=True)
    other = _table(seed=1, ticks=60, **shocks)
    assert (one["k"] == 5).any() and not one["k"].equals(other["k"])
    assert set(one["k"]) == {9, 5}  # overlapping shocks do not compound
    # a shock holds for its duration: every run of k = 5 is at least 5 ticks long
    runs = np.diff(np.flatnonzero(np.diff(np.r_[9, one["k"].to_numpy(), 9]) != 0))[::2]
    assert (runs[:-1] >= 5).all()

    def entrants(**overrides):
        model = RecourseModel("paper", "threshold", seed=0, ticks=60, **overrides).run()
        c = model.candidate_table()
        return c.loc[~c["reapplied"], ["cid", "tick", "entered", "score"]].reset_index(drop=True)

    # k is shocked, m is not: the newcomers are the same people at the same ticks
    pd.testing.assert_frame_equal(entrants(), entrants(**shocks), check_exact=True)
    # m's shocks do not move k's: both rows of uniforms are always drawn
    both = ScenarioConfig(ticks=60, k_shocks=(0.1, 0.5, 5), m_shocks=(0.2, 2.0, 3))
    alone = ScenarioConfig(ticks=60, k_shocks=(0.1, 0.5, 5))
    k_both, m_both = Capacity(both, None, Streams(0)).schedule(60)
    k_alone, _ = Capacity(alone, None, Streams(0)).schedule(60)
    np.testing.assert_array_equal(k_both, k_alone)
    assert set(m_both) == {10, 20}
    # the episode's other streams are where they were: only "capacity" was drawn from
    with_shocks, without = Streams(0), Streams(0)
    Capacity(both, None, with_shocks)
    for name, gen in without._gens.items():
        assert with_shocks._gens[name].bit_generator.state == gen.bit_generator.state, name


def test_a_planning_fork_follows_the_real_schedule():
    model = RecourseModel("recession", "threshold", ticks=70, agents=False, k_shocks=(0.2, 2.0, 2))
    model.run(38)
    model.decide()
    snap = model.snapshot()
    fork = RecourseModel.from_snapshot(
        snap, RolloutStreams(snap.config.seed, snap.tick, 0), WithoutFeedback(model.policy)
    )
    seen = []
    for _ in range(6):
        obs = fork.pending_observation() if fork._pending is not None else fork.decide()
        seen.append((obs.tick, obs.k_t, obs.m_t))
        fork.respond(fork.policy.recommend(obs, fork.streams.policy))
    assert seen == [(t, *model.mechanisms.capacity_at(t)) for t in range(38, 44)]
    assert {k for _, k, _ in seen[2:]} <= {5, 9}  # halved from tick 40 (a shock x2: 9)
    # and the real run sees the same
    model.respond(model.policy.recommend(model.pending_observation(), model.streams.policy))
    table_k = []
    for _ in range(5):
        obs = model.decide()
        table_k.append((obs.tick, obs.k_t, obs.m_t))
        model.respond(model.policy.recommend(obs, model.streams.policy))
    assert table_k == seen[1:]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k_steps", ((40, 0.5), (30, 1.0))),  # ticks not increasing
        ("k_steps", ((-1, 0.5),)),
        ("m_steps", ((10, -0.5),)),
        ("m_steps", ((10, float("nan")),)),
        ("k_season", (1.5, 10.0, 0.0)),  # amplitude > 1 would make k negative
        ("k_season", (0.5, 0.0, 0.0)),
        ("m_season", (0.5, 10.0)),
        ("k_shocks", (1.5, 0.5, 3)),
        ("m_shocks", (0.1, 0.5, 2.5)),  # duration not an integer
        ("m_shocks", (0.1, 0.5, 0)),
    ],
)
def test_bad_schedules_are_refused_in_one_line(field, value):
    with pytest.raises(ConfigError) as info:
        ScenarioConfig(**{field: value})
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{field} = ") and "allowed: " in text


def test_bad_schedule_on_the_cli_exits_2_in_one_line(tmp_path):
    out = tmp_path / "x"
    result = CliRunner().invoke(
        app, ["run", "--ticks", "3", "--set", "k_steps=[[40, 0.5], [30, 1.0]]", "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: k_steps = "), result.output
    assert not out.exists()


def test_a_schedule_set_on_the_cli_reaches_the_tick_table(tmp_path):
    out = tmp_path / "x"
    result = CliRunner().invoke(
        app, ["run", "--ticks", "6", "--set", "k_steps=[[3, 2.0]]", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    ticks = pd.read_parquet(out / "ticks.parquet")
    np.testing.assert_array_equal(ticks["k"], [9, 9, 9, 18, 18, 18])


@pytest.mark.parametrize("policy", ["threshold", "last-threshold:margin=0.05+exact-linear"])
def test_policies_keep_the_contract_in_the_recession(policy):
    world = get_scenario("recession").replace(k_steps=((2, 0.5), (5, 1.0)))
    report = check_policy(policy, scenarios=[world])
    assert not report.broken, report
