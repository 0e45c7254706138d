"""Dashboard logic without a browser: settings validation, demos, data behind the views,
and the Solara page rendered in-process (Step, errors, sessions)."""

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("solara")

from abm import RecourseModel  # noqa: E402
from abm.validation import ConfigError  # noqa: E402
from dashboards import charts  # noqa: E402
from dashboards.demos import DEMOS, available_demos  # noqa: E402
from dashboards.settings import (  # noqa: E402
    DashboardModel,
    Settings,
    application_status,
    current_candidates,
    dashboard_presets,
    feature_effort,
)


def test_settings_follow_the_preset_and_resolve_to_its_config():
    s = Settings.from_preset("motivating-example")
    assert (s.k, s.m, s.n_initial, s.seed, s.beta) == (2, 2, 4, 4, "inf")
    config = s.resolve()
    assert config == RecourseModel("motivating-example", "threshold").config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"beta": "-1"}, "beta = -1 is not allowed; allowed: a number in (0, inf]"),
        ({"beta": "abc"}, "beta = 'abc' is not allowed; allowed: a number in (0, inf]"),
        (
            {"difficulty": "0.5, 0.5"},
            "difficulty = (0.5, 0.5) is not allowed; allowed: one number in (0, 1] per feature "
            "(n_features = 10 of them)",
        ),
        (
            {"difficulty": "2, 0.15, 0.85, 0.78, 0.25, 0.18, 0.29, 0.83, 0.91, 0.10"},
            "difficulty = (2.0, 0.15,",
        ),
        ({"n_initial": 0, "m": 0}, "n_initial + m = 0 is not allowed; allowed: at least 1"),
    ],
)
def test_bad_settings_raise_the_cli_message(changes, message):
    with pytest.raises(ConfigError, match=None) as info:
        Settings.from_preset("paper", **changes).resolve()
    assert message in str(info.value)


def test_demos_check_the_registry_at_run_time():
    names = {d.name for d in DEMOS}
    assert {"threshold-trap", "harder-features", "longer-validity", "risk-averse-advice"} <= names
    without = available_demos({"threshold": "", "threshold-true": "", "none": ""})
    assert "risk-averse-advice" not in without and "threshold-trap" in without
    with_safear = available_demos({"threshold": "", "threshold-true": "", "safear": ""})
    assert "risk-averse-advice" in with_safear
    for demo in available_demos().values():  # every listed demo builds a model
        DashboardModel(Settings.from_demo(demo)).step()


def test_threshold_trap_demo_shows_the_trap():
    demo = available_demos()["threshold-trap"]
    model = DashboardModel(Settings.from_demo(demo))
    model.step()
    old_threshold = model.last_tick.threshold
    model.step()
    lt = model.last_tick
    back = lt.reapplied
    # both reapplicants reached the old threshold, and not both were accepted
    assert back.sum() == 2 and np.all(lt.scores[back] >= old_threshold - 1e-9)
    assert not lt.accepted[back].all()


def test_twin_runs_the_same_arrivals():
    model = DashboardModel(Settings.from_preset("paper", compare="none", n_initial=50))
    for _ in range(5):
        model.step()
    a, b = model.ticks(), model.twin.tick_table()
    assert len(a) == len(b) == 5
    assert a["n_new"].tolist() == b["n_new"].tolist()
    # tick 0 has only entrants: identical people, identical scores and threshold
    assert a["threshold"].iloc[0] == b["threshold"].iloc[0]
    assert "threshold" in model.settings.policy and model.twin.policy_name == "none"


def test_views_data_are_consistent_with_the_model():
    model = DashboardModel(Settings.from_preset("paper", n_initial=200))
    for _ in range(3):
        model.step()
    ev = model.events()
    status = application_status(ev)
    assert set(status) <= {"accepted", "implemented", "failed", "no advice", "dropped"}
    assert (status == "accepted").sum() == ev["accepted"].sum() == 3 * model.config.k
    table = current_candidates(model)
    assert len(table) == len(model.last_tick.ids)
    assert table["score"].is_monotonic_decreasing
    assert (table["status"] == "accepted").sum() == model.config.k
    eff = feature_effort(ev, model.difficulty)
    # effort spent over all features equals the model's own effort record
    assert eff["spent"].sum() == pytest.approx(model.ticks()["effort"].sum())


def test_feature_effort_known_answer():
    import pandas as pd

    ev = pd.DataFrame({"dx_0": [0.2, -0.1, 0.3], "dx_1": [0.0, 0.5, 0.0],
                       "ok_0": [1, 0, -2], "ok_1": [-1, 1, -1]})  # fmt: skip
    eff = feature_effort(ev, np.array([0.5, 0.1]))
    assert eff["spent"].tolist() == pytest.approx([0.1, 0.05])
    assert eff["failed"].tolist() == pytest.approx([0.05, 0.0])
    assert eff["asked"].tolist() == [3, 1]


def test_chart_specs_are_json_with_the_model_data():
    model = DashboardModel(Settings.from_preset("paper", compare="threshold-true"))
    for _ in range(4):
        model.step()
    specs = {name: f(model) for name, f in charts.VIEWS.items()}
    specs["compare"] = charts.comparison_chart(model)
    for spec in specs.values():
        json.dumps(spec, allow_nan=False)  # NaN would break the browser's JSON
        assert spec["$schema"].endswith("v5.json")
    rr = [v["value"] for v in specs["rr_rf"]["data"]["values"] if v["measure"] == "rr"]
    expected = model.ticks()["rr"].tolist()
    assert [None if np.isnan(x) else x for x in expected] == rr
    hist = specs["scores"]["data"]["values"]
    assert sum(v["count"] for v in hist) == len(model.last_tick.ids)
    assert (
        specs["scores"]["layer"][1]["data"]["values"][0]["threshold"] == model.last_tick.threshold
    )
    assert {v["policy"] for v in specs["compare"]["data"]["values"]} == {
        "threshold",
        "threshold-true",
    }


def test_large_presets_are_left_to_the_cli():
    assert "large" not in dashboard_presets() and "paper" in dashboard_presets()


# -- the page, rendered in-process with Solara's test tooling ----------------------------
@pytest.fixture
def page():
    import ipyvuetify as v
    import solara

    from dashboards import app

    warnings.filterwarnings("ignore", message=".*use_state.*early return")
    box, rc = solara.render(solara.AppLayout(children=[app.Page()]), handle_error=False)
    yield rc, v
    rc.close()


def _text(rc, v):
    return " ".join(str(w.children) for w in rc.find(v.Alert).widgets)


@pytest.mark.slow
def test_page_steps_and_shows_errors(page):
    rc, v = page
    step = rc.find(v.Btn, children=["Step"]).widget
    step.click()
    step.click()
    beta = [w for w in rc.find(v.TextField).widgets if "β" in str(w.label)][0]
    beta.v_model = "-1"
    beta.fire_event("keyup.enter", None)  # solara.InputText applies on Enter / focus out
    assert "beta = -1 is not allowed; allowed: a number in (0, inf]" in _text(rc, v)
    # the model kept running: Step still works
    rc.find(v.Btn, children=["Step"]).widget.click()


def test_tiny_changes_are_shown_with_their_size_not_as_zero():
    from dashboards.settings import _change

    assert _change(0.1234) == "+0.12" and _change(-0.5) == "-0.50"
    assert _change(1e-6) == "+1.0e-06"  # a nudge above a tied threshold is not "+0.00"
