"""lab.study.front: a policy against the constant-margin front, world by world."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lab.reproduce import pareto
from lab.study.front import (
    MARGINS,
    add_front_verdicts,
    episode_arrays,
    front_distances,
    front_rf_at,
    front_rows,
    front_rr_at,
    margin_grids,
    margin_policies,
    read_off,
)
from lab.study.stats import world_interval

GRID_RR = np.linspace(0.8, 1.0, 12)


def line(rr: np.ndarray) -> np.ndarray:
    """The synthetic front: RF falls from 0.5 at RR 0.8 to 0.2 at RR 1, slope -1.5."""
    return 0.2 + 1.5 * (1.0 - rr)


def study(worlds: int, offset: float, at_rr: float = 0.9, noise: float = 0.0, seed: int = 0):
    """A margin grid on the line, shifted up by a world effect, and a policy at RR
    ``at_rr`` whose RF is ``offset`` above its world's front: (rr, rf) (W, E) of the
    policy and (grid_rr, grid_rf) (W, 12, E), 6 episodes."""
    rng = np.random.default_rng(seed)
    world = rng.normal(0.0, 0.1, (worlds, 1, 1))
    g_rr = np.broadcast_to(GRID_RR[None, :, None], (worlds, 12, 6)).copy()
    g_rf = line(g_rr) + world + rng.normal(0.0, noise, g_rr.shape)
    rr = np.full((worlds, 6), at_rr)
    rf = line(rr) + world[:, :, 0] + offset + rng.normal(0.0, noise, rr.shape)
    return (rr, rf), (g_rr, g_rf)


def test_the_front_is_read_at_either_coordinate_without_extrapolating():
    rr = np.array([0.9, 1.0, 0.8, np.nan, 0.85])
    rf = np.array([0.5, 0.3, 0.4, 0.9, 0.45])  # (0.8, 0.4), (0.85, 0.45) are dominated
    assert front_rf_at(rr, rf, 0.95) == pytest.approx(0.4)
    assert front_rr_at(rr, rf, 0.4) == pytest.approx(0.95)
    assert front_rf_at(rr, rf, 0.9) == 0.5 and front_rr_at(rr, rf, 0.3) == 1.0
    # outside the span: NaN, where read_off (Table 3) falls back to the nearest point
    assert math.isnan(front_rf_at(rr, rf, 0.85)) and math.isnan(front_rr_at(rr, rf, 0.6))
    assert read_off(rr, rf, 0.85) == (0.5, 0.9)
    assert math.isnan(front_rf_at(np.array([np.nan]), np.array([np.nan]), 0.9))


def test_pareto_reads_the_front_through_this_module():
    assert pareto.read_off is read_off and pareto.MARGINS is MARGINS
    assert pareto.episode_arrays is episode_arrays


def test_distances_on_a_straight_front_are_known():
    (rr, rf), (g_rr, g_rf) = study(4, offset=0.03)
    d = front_distances(rr, rf, g_rr, g_rf)
    assert d.rf_at_equal_rr == pytest.approx([0.03] * 4)
    assert d.rr_at_equal_rf == pytest.approx([0.02] * 4)  # 0.03 / slope 1.5
    assert d.rf_note.tolist() == [""] * 4 and d.rr_note.tolist() == [""] * 4


def test_outside_the_front_is_said_not_extrapolated():
    (rr, rf), (g_rr, g_rf) = study(4, offset=0.0)
    rr[0] = 0.75  # below the lowest margin's RR in world 0
    rf[0] = line(0.75) + (rf[0] - line(0.9))  # on the line's extension
    rf[1] = 0.9  # above every margin's RF in world 1 (its RR stays inside)
    rf[2, 0] = np.nan  # one undefined episode: the world's mean is over the others
    d = front_distances(rr, rf, g_rr, g_rf)
    assert d.rf_note.tolist() == ["below", "", "", ""]
    # world 0 lies on the line's extension: its RF is above the front's range too
    assert d.rr_note.tolist() == ["above", "above", "", ""]
    assert np.isnan(d.rf_at_equal_rr[0]) and np.isnan(d.rr_at_equal_rf[1])
    assert d.rf_at_equal_rr[1:] == pytest.approx([0.9 - line(0.9) - (g_rf[1, 0, 0] - 0.5), 0, 0])
    (row_rf, row_rr) = front_rows({"p": (rr, rf)}, g_rr, g_rf)
    assert (row_rf["outside_below"], row_rf["vs_front_worlds"]) == (1, 3)
    assert (row_rr["outside_above"], row_rr["vs_front_worlds"]) == (2, 2)
    # a world without a defined policy episode
    rr[3] = np.nan
    assert front_distances(rr, rf, g_rr, g_rf).rf_note[3] == "undefined"
    with pytest.raises(ValueError, match="share their worlds"):
        front_distances(rr[:2], rf[:2], g_rr, g_rf)


def test_the_policy_is_its_mean_point_not_each_episode():
    # a front that bends down (concave): episodes at RR 0.85 and 0.95 with RF 0.5 average
    # to (0.9, 0.5), on the front; read episode by episode they would seem 0.075 above it
    g_rr = np.array([[[0.8] * 2, [0.9] * 2, [1.0] * 2]])
    g_rf = np.array([[[0.6] * 2, [0.5] * 2, [0.1] * 2]])
    rr, rf = np.array([[0.85, 0.95]]), np.array([[0.5, 0.5]])
    assert front_distances(rr, rf, g_rr, g_rf).rf_at_equal_rr == pytest.approx([0.0])
    per_episode = [0.5 - front_rf_at(g_rr[0, :, 0], g_rf[0, :, 0], r) for r in rr[0]]
    assert np.mean(per_episode) == pytest.approx(0.075)


def test_verdicts_beat_trail_match_and_need_ten_worlds():
    policies, grid = {}, None
    for name, offset in (("above", 0.03), ("below", -0.03), ("on", 0.0)):
        (rr, rf), grid = study(12, offset, noise=0.01, seed=3)
        policies[name] = (rr, rf)
    rows = pd.DataFrame(front_rows(policies, *grid, front="margin-estimated", head={"s": 1}))
    assert len(rows) == 6 and set(rows["front"]) == {"margin-estimated"}
    out = add_front_verdicts(rows).set_index(["policy", "figure"])["vs_front_verdict"]
    assert (
        out[("above", "rf_at_equal_rr")] == "beats" and out[("above", "rr_at_equal_rf")] == "beats"
    )
    assert out[("below", "rf_at_equal_rr")] == "trails"
    assert out[("on", "rf_at_equal_rr")] == "matches" and out[("on", "rr_at_equal_rf")] == "matches"
    # the interval is the world interval of the per-world distances
    first = rows.iloc[0]
    d = front_distances(*policies["above"], *grid).rf_at_equal_rr
    assert (first["vs_front"], first["vs_front_lo"], first["vs_front_hi"]) == pytest.approx(
        world_interval(d[:, None])[:3]
    )
    assert first["rr"] == pytest.approx(0.9) and first["s"] == 1
    few = study(5, 0.03, noise=0.01, seed=4)
    rows = add_front_verdicts(pd.DataFrame(front_rows({"p": few[0]}, *few[1])))
    assert rows["vs_front_verdict"].tolist() == ["inconclusive (5 worlds)"] * 2


def test_margin_grids_name_registered_policies_as_the_pareto_study_does():
    from abm.registry import REGISTRY

    grids = margin_grids()
    assert list(grids) == ["margin-exact-linear", "margin-estimated", "margin-true"]
    assert (
        grids["margin-estimated"][4] == "last-threshold:margin=0.05+exact-linear:weights=estimated"
    )
    for policies in grids.values():
        assert len(policies) == len(MARGINS) == 12
        for p in policies:
            REGISTRY.validate(p)
    cfg = pareto.StudyConfig.of(margin_recommenders=("estimated", "phi"))
    jobs = [j[-1] for j in pareto.margin_jobs(cfg, Path("phi-dir"))]
    with_phi = margin_grids(phi="phi-dir")
    assert jobs == with_phi["margin-estimated"] + with_phi["margin-phi"]
    assert margin_policies("exact-linear", (0.0, 0.1)) == [
        "last-threshold:margin=0+exact-linear",
        "last-threshold:margin=0.1+exact-linear",
    ]


def test_episode_arrays_pair_worlds_policies_and_seeds():
    runs = pd.DataFrame(
        [
            {"world_seed": w, "policy": p, "seed": s, "rr": w + s / 10, "rf": -w}
            for w in (1, 0)
            for p in ("b", "a")
            for s in (2, 1, 0)
        ]
    )
    rr, rf = episode_arrays(runs, [0, 1], ["a", "b"])
    assert rr.shape == (2, 2, 3) and rr[1, 0].tolist() == [1.0, 1.1, 1.2]
    assert rf[:, :, 0].tolist() == [[0, 0], [-1, -1]]
