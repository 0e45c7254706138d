"""Dashboard logic without a browser: settings and their server-side checks, demos, the
data behind every view (live and replayed), chart specs, export, the CLI command, and
the Solara page rendered in-process (Step, Reset, demos, bad input)."""

import copy
import csv
import io
import json
import re
import threading
import time
import warnings

import numpy as np
import pytest

pytest.importorskip("solara")

from abm import RecourseModel  # noqa: E402
from abm.validation import ConfigError  # noqa: E402
from dashboards import charts, data  # noqa: E402
from dashboards.demos import DEMOS, available_demos  # noqa: E402
from dashboards.settings import (  # noqa: E402
    PREPARING,
    SLIDERS,
    DashboardModel,
    Settings,
    base_name,
    dashboard_policies,
    dashboard_presets,
    policy_description,
    preparing_text,
)

EXTENSION_PRESETS = {
    "improvement": ["true-gain", "qualified", "true-outcomes"],
    "retraining": ["validity"],
    "groups": ["groups", "group-distance"],
    "causal": ["causal"],
    "budget": ["budget"],
}


def stepped(settings: Settings, n: int) -> DashboardModel:
    model = DashboardModel(settings)
    for _ in range(n):
        model.step()
    return model


# -- settings -------------------------------------------------------------------------------
def test_settings_follow_the_preset_and_resolve_to_its_config():
    s = Settings.from_preset("motivating-example")
    assert (s.k, s.m, s.n_initial, s.seed, s.beta) == (2, 2, 4, 4, "inf")
    assert s.resolve() == RecourseModel("motivating-example", "threshold").config


def test_default_settings_build_the_paper_model():
    # Reset used to rebuild from Settings(), whose empty difficulty was no configuration
    assert Settings() == Settings.from_preset("paper")
    assert DashboardModel().config == RecourseModel("paper", "threshold").config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"beta": "-1"}, "beta = -1 is not allowed; allowed: a number in (0, inf]"),
        ({"beta": "abc"}, "beta = 'abc' is not allowed; allowed: a number in (0, inf]"),
        ({"beta": "  "}, "beta = '' is not allowed; allowed: a value (the box is empty)"),
        (
            {"difficulty": "0.5, 0.5"},
            "difficulty = (0.5, 0.5) is not allowed; allowed: one number in (0, 1] per feature "
            "(n_features = 10 of them)",
        ),
        ({"n_initial": 0, "m": 0}, "n_initial + m = 0 is not allowed; allowed: at least 1"),
    ],
)
def test_bad_settings_raise_the_cli_message(changes, message):
    with pytest.raises(ConfigError) as info:
        Settings.from_preset("paper", **changes).resolve()
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("preset", "no-such", "preset = 'no-such' is not allowed; allowed: one of paper"),
        ("preset", "large", "preset = 'large' is not allowed"),  # too big to watch
        ("preset", ["paper"], "preset = ['paper'] is not allowed"),
        ("policy", "nope", "policy = 'nope' is not allowed; allowed: one of"),
        ("compare", 3, "compare = 3 is not allowed; allowed: one of off,"),
        ("seed", 10**9, "seed = 1000000000 is not allowed; allowed: an integer in [0, 99]"),
        ("seed", -1, "seed = -1 is not allowed; allowed: an integer in [0, 99]"),
        ("seed", "abc", "seed = 'abc' is not allowed; allowed: an integer in [0, 99]"),
        ("k", True, "k = True is not allowed; allowed: an integer in [1, 100]"),
        ("k", 2.5, "k = 2.5 is not allowed; allowed: an integer in [1, 100]"),
        ("n_initial", float("nan"), "n_initial = nan is not allowed"),
        ("beta", 5, "beta = 5 is not allowed; allowed: text of at most 400 characters"),
        ("difficulty", "1," * 300, "difficulty = '1,1,1,"),
        ("rho", 0.5, "input = 'rho' is not allowed; allowed: one of preset, policy"),
        (
            "compare",
            "threshold",
            "compare = 'threshold' is not allowed; allowed: a policy not shown",
        ),
        ("compare_2", "none", "compare_2 = 'none' is not allowed; allowed: off (choose compare"),
    ],
)
def test_every_input_is_checked_on_the_server(name, value, message):
    with pytest.raises(ConfigError) as info:
        Settings().with_input(name, value)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_good_inputs_apply_and_a_preset_keeps_the_policies():
    s = Settings().with_input("policy", "none").with_input("compare", "threshold-true")
    s = s.with_input("preset", "paper-T5")
    assert (s.preset, s.policy, s.compare, s.validity) == (
        "paper-T5",
        "none",
        ("threshold-true",),
        5,
    )
    assert s.with_input("compare", "off").compare == ()
    assert s.with_input("seed", 7.0).seed == 7  # JSON numbers may arrive as floats
    lo, hi = Settings.from_preset("motivating-example").slider_range("ticks")
    assert (lo, hi) == (1, 300)


def test_slider_ranges_cover_every_dashboard_preset():
    for preset in dashboard_presets():
        s = Settings.from_preset(preset)
        for name in SLIDERS:
            lo, hi = s.slider_range(name)
            assert lo <= getattr(s, name) <= hi


# -- the CLI command --------------------------------------------------------------------------
def test_cli_command_names_only_what_differs_from_the_preset():
    s = Settings.from_preset("paper", k=3, beta="inf", compare="none")
    lines = s.cli_text().splitlines()
    assert lines[0] == (
        "recourse-abm run --scenario paper --policy threshold --seed 0 --ticks 100 "
        "--set k=3 --set beta=inf --out results/dashboard-paper-threshold-seed0"
    )
    assert "--policy none" in lines[1]
    assert "--set" not in Settings.from_preset("groups").cli_text()


@pytest.mark.slow
def test_cli_command_reproduces_the_dashboard_run(tmp_path):
    import shlex
    import subprocess
    import sys

    import pandas as pd

    s = Settings.from_preset(
        "paper-T5", k=4, n_initial=30, ticks=6, seed=3, beta="0.2", difficulty="0.5, " * 9 + "0.25"
    )
    args = shlex.split(s.cli_text())
    assert args[:2] == ["recourse-abm", "run"]
    out = tmp_path / "run"
    args[args.index("--out") + 1] = str(out)
    cmd = [sys.executable, "-m", "lab", *args[1:]]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    model = stepped(s, 6)
    cli = pd.read_parquet(out / "ticks.parquet")
    pd.testing.assert_frame_equal(cli.reset_index(drop=True), model.tick_table(), check_dtype=False)


# -- demos -----------------------------------------------------------------------------------
def test_demos_check_the_registry_at_run_time():
    names = {d.name for d in DEMOS}
    assert {
        "threshold-trap",
        "harder-features",
        "longer-validity",
        "risk-averse-advice",
        "fairness-between-groups",
    } <= names
    without = available_demos({"threshold": "", "threshold-true": "", "none": ""})
    assert "risk-averse-advice" not in without and "threshold-trap" in without
    with_safear = available_demos({"threshold": "", "threshold-true": "", "safear": ""})
    assert "risk-averse-advice" in with_safear
    for demo in available_demos().values():  # every listed demo builds and steps
        if any(base_name(p) in PREPARING for p in demo.required_policies):
            continue  # trains for seconds: test_fair_scarf_side_by_side builds and steps it
        stepped(Settings.from_demo(demo), 1)
    # a spec with parameters needs its registry name only
    assert "improvement-vs-gaming" in available_demos(
        {"threshold": "", "improve-linucb": "", "none": ""}
    )
    assert "improvement-vs-gaming" not in available_demos({"threshold": ""})


def test_threshold_trap_demo_shows_the_trap():
    model = stepped(Settings.from_demo(available_demos()["threshold-trap"]), 1)
    old_threshold = model.tick_state.threshold
    model.step()
    lt = model.tick_state
    back = lt.reapplied
    # both reapplicants reached the old threshold, and not both were accepted
    assert back.sum() == 2 and np.all(lt.scores[back] >= old_threshold - 1e-9)
    assert not lt.accepted[back].all()
    # the table of tick 1 shows the reapplicant that was turned away, as "rejected"
    cols = data.applicant_rows(data.runs(model)[0], 1, model.config.n_features)
    second = [o for o, a in zip(cols["outcome"], cols["attempt"], strict=True) if a == 2]
    assert sorted(second) == ["accepted", "rejected"]


# -- the model and its twin ----------------------------------------------------------------------
def test_twin_runs_the_same_arrivals_and_records_its_events():
    model = stepped(Settings.from_preset("paper", compare="none", n_initial=50), 5)
    a, b = model.tick_table(), model.twin.tick_table()
    assert len(a) == len(b) == 5
    assert a["n_new"].tolist() == b["n_new"].tolist()
    assert a["threshold"].iloc[0] == b["threshold"].iloc[0]
    # the effort chart of the second policy reads its events (it used to record none)
    assert len(model.twin.candidate_table()) == b["n_applicants"].sum()
    # recording events does not change the second policy's run
    plain = RecourseModel(model.config, "none", agents=False, record_events=False)
    for _ in range(5):
        plain.step()
    assert plain.tick_table().equals(b)


def test_step_after_the_last_tick_changes_nothing():
    model = stepped(Settings.from_demo(available_demos()["threshold-trap"]), 3)
    assert not model.running
    model.step()
    assert model.tick == 3


# -- the data behind the views -------------------------------------------------------------------
def test_views_data_are_consistent_with_the_model():
    model = stepped(Settings.from_preset("paper", n_initial=200), 3)
    run = data.runs(model)[0]
    z = model.config.n_features
    table = data.applicant_rows(run, 2, z)
    assert data.n_rows(table) == len(model.tick_state.ids)
    assert table["score"] == sorted(table["score"], reverse=True)
    assert table["outcome"].count("accepted") == model.config.k
    assert set(table["outcome"]) <= {"accepted", "rejected", "dropped"}
    assert "rejected" in table["outcome"]
    bins = data.score_bins(run, 2)
    assert sum(bins["count"]) == len(model.tick_state.ids)
    # stacked: a bin's rejected part starts where its accepted part ends
    for lo, y0, d in zip(bins["lo"], bins["y0"], bins["decision"], strict=True):
        if d == "rejected" and y0 > 0:
            i = [
                j
                for j, (l2, d2) in enumerate(zip(bins["lo"], bins["decision"], strict=True))
                if l2 == lo and d2 == "accepted"
            ][0]
            assert bins["y1"][i] == y0
    eff = data.feature_effort(run.apps(0, 2), model.difficulty)
    assert eff["spent"].sum() == pytest.approx(model.tick_table()["effort"].sum())
    assert data.threshold_at(run, 2) == pytest.approx(model.tick_state.threshold)
    assert data.threshold_at(run, -1) is None


def test_feature_effort_known_answer():
    apps = {
        "dx_0": np.array([0.2, -0.1, 0.3]),
        "dx_1": np.array([0.0, 0.5, 0.0]),
        "ok_0": np.array([1, 0, -2]),
        "ok_1": np.array([-1, 1, -1]),
    }
    eff = data.feature_effort(apps, np.array([0.5, 0.1]))
    assert eff["spent"].tolist() == pytest.approx([0.1, 0.05])
    assert eff["failed"].tolist() == pytest.approx([0.05, 0.0])
    assert eff["asked"].tolist() == [3, 1]


def test_series_known_answer_and_nan_as_null():
    model = stepped(Settings.from_preset("paper", compare="none"), 4)
    cols = data.series(data.runs(model), 2, {"rr": "RR", "n_accepted": "accepted"})
    assert cols["tick"] == [0, 1, 2] * 4
    assert cols["policy"] == ["threshold"] * 6 + ["none"] * 6
    assert cols["series"][:6] == ["RR"] * 3 + ["accepted"] * 3
    rr = model.tick_table()["rr"].to_numpy()[:3]
    assert cols["value"][:3] == [None if np.isnan(x) else pytest.approx(x) for x in rr]
    assert cols["value"][3:6] == [9, 9, 9]
    json.dumps(cols, allow_nan=False)


def test_scatter_jitter_stays_within_its_tick():
    model = stepped(Settings.from_preset("paper", n_initial=300), 3)
    cols = data.applications(data.runs(model)[0], 2, window=20, per_tick=10**6)
    x, tick = np.array(cols["x"]), np.array(cols["tick"])
    assert np.all(np.abs(x - tick) <= 0.25) and x.min() >= -0.25
    assert data.n_rows(cols) == len(model.candidate_table())
    ids = np.array(cols["id"])
    assert np.allclose(x - tick, data.jitter(ids), atol=1e-4)  # fixed per applicant


def test_change_text_never_shows_a_tiny_change_as_zero():
    assert data.change_text(0.1234) == "+0.12" and data.change_text(-0.5) == "-0.50"
    assert data.change_text(1e-6) == "+0.000001"
    assert data.change_text(-2.3e-5) == "-0.00002"
    model = stepped(Settings.from_preset("paper"), 3)  # applicants tied at the threshold
    advice = data.applicant_rows(data.runs(model)[0], 2, 10)["advice"]
    assert any("+0.000001" in a for a in advice)
    assert not any(re.search(r"[+-]0\.00(?!\d)", a) for a in advice)


def test_applicant_history_follows_one_candidate():
    model = stepped(Settings.from_preset("paper"), 8)
    run = data.runs(model)[0]
    ev = model.candidate_table()
    cid = int(ev["cid"].value_counts().idxmax())  # someone who applied several times
    hist = data.applicant_history(run, cid, 7, 10)
    assert hist["tick"] == ev.loc[ev["cid"] == cid, "tick"].tolist()
    assert hist["attempt"] == list(range(1, len(hist["tick"]) + 1))
    thresholds = model.tick_table()["threshold"].to_numpy()
    assert hist["threshold"] == [round(float(thresholds[t]), 3) for t in hist["tick"]]
    assert data.applicant_exists(run, cid, 7) and not data.applicant_exists(run, 10**6, 7)
    assert data.applicant_history(run, cid, hist["tick"][0] - 1, 10) == {}


def test_replayed_views_equal_the_live_views():
    # what the page shows for tick t is the same live and when scrubbed back later
    model = DashboardModel(Settings.from_preset("groups", compare="threshold-true"))
    live = {}
    for _ in range(6):
        model.step()
        t = model.tick - 1
        runs = data.runs(model)
        live[t] = {c.name: c.datasets(runs, t) for c in charts.charts(model)}
        live[t]["table"] = data.applicant_rows(runs[0], t, model.config.n_features)
    for _ in range(4):
        model.step()
    runs = data.runs(model)
    for t, views in live.items():
        later = {c.name: c.datasets(runs, t) for c in charts.charts(model)}
        later["table"] = data.applicant_rows(runs[0], t, model.config.n_features)
        assert later == views


def test_causal_changes_count_what_the_graph_moved():
    model = stepped(Settings.from_preset("causal"), 10)
    cols = data.causal_changes(data.runs(model), 9, 10)
    caused = {
        f: v
        for f, c, v in zip(cols["feature"], cols["change"], cols["value"], strict=True)
        if c == "caused by the graph"
    }
    # the chain 7 -> 4 -> 1: only 4 and 1 have parents
    assert caused["x4"] > 0 and caused["x1"] > 0
    assert all(v == 0 for f, v in caused.items() if f not in ("x4", "x1"))


def test_refits_are_where_the_model_version_rises():
    model = stepped(Settings.from_preset("retraining"), 25)
    refits = data.refit_ticks(data.runs(model)[0], 24)
    assert refits == {"tick": [10, 20], "version": [1, 2]}


# -- chart specs ---------------------------------------------------------------------------------
def _texts(obj) -> list[str]:
    """Every string in a spec."""
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _texts(v)]
    if isinstance(obj, list):
        return [t for v in obj for t in _texts(v)]
    return [obj] if isinstance(obj, str) else []


def _encodings(spec):
    layers = spec.get("layer", [spec])
    return [layer["encoding"] for layer in layers if "encoding" in layer]


def test_chart_specs_are_json_and_readable():
    model = stepped(Settings.from_preset("paper", compare="threshold-true"), 4)
    runs = data.runs(model)
    for chart in charts.charts(model):
        json.dumps(chart.spec, allow_nan=False)
        json.loads(charts.to_json(charts.payload(chart, runs, 3, 1)))  # no NaN in the data
        assert chart.spec["$schema"].endswith("v5.json")
        for enc in _encodings(chart.spec):
            for channel in ("x", "y"):
                if "title" in enc.get(channel, {}):
                    assert enc[channel]["title"], (chart.name, channel)
        # plain words: no tick-table column name reaches a label
        labels = [t for t in _texts(chart.spec) if not t.startswith("http")]
        for raw in ("n_new", "n_waiting", "mean_cf_score", "mean_goal", "accept_rate"):
            assert not any(raw in t for t in labels), (chart.name, raw)


def test_count_axes_are_integers():
    model = stepped(Settings.from_preset("paper"), 2)
    by_name = {c.name: c.spec for c in charts.charts(model)}
    for name, channel in (
        ("pool", "y"),
        ("scores", "y"),
        ("reliability", "x"),
        ("applicants", "x"),
    ):
        enc = _encodings(by_name[name])[0][channel]
        assert enc["axis"]["format"] == "d", name


FOUR = ("threshold-true", "none", "threshold-estimated")


def _colour_uses(spec) -> list[tuple[str, str, str]]:
    """(channel field, domain value, colour) of every colour scale and fixed mark colour."""
    out = []
    for layer in spec.get("layer", [spec]):
        mark = layer.get("mark", {})
        if isinstance(mark, dict) and "color" in mark:
            out.append(("mark", "", mark["color"]))
        enc = layer.get("encoding", {})
        colour = enc.get("color")
        if isinstance(colour, dict) and "scale" in colour:
            for value, c in zip(colour["scale"]["domain"], colour["scale"]["range"], strict=True):
                out.append((colour["field"], value, c))
    return out


def test_four_policies_side_by_side_in_every_chart_with_their_own_colour_and_dash():
    model = stepped(Settings.from_preset("groups", compare=FOUR), 3)
    policies = model.settings.policies
    assert len(model.twins) == 3 and len(set(policies)) == 4
    styles = data.policy_styles(policies)
    assert len({c for c, _ in styles.values()}) == 4
    assert len({tuple(d) for _, d in styles.values()}) == 4
    runs = data.runs(model)
    for chart in charts.charts(model):
        if chart.name in ("scores", "applicants"):
            continue  # one policy's applicants (the "applicants of" choice); tested below
        cols = chart.datasets(runs, 2)["main"]
        assert set(cols["policy"]) == set(policies), chart.name
        channels = [
            enc[ch]
            for enc in _encodings(chart.spec)
            for ch in enc
            if isinstance(enc[ch], dict)
            and enc[ch].get("field") == "policy"
            and ch in ("color", "strokeDash")
        ]
        assert channels and all(c["title"] == "policy" for c in channels), chart.name
        for c in channels:  # each policy its own style, whatever its position
            kind = 0 if c is channels[0] and "color" in str(c) else None
            rng = dict(zip(c["scale"]["domain"], c["scale"]["range"], strict=True))
            assert set(rng) == set(policies), chart.name
            del kind
    # a policy keeps its style whatever it is shown with, and in whichever position
    alone = data.policy_styles(["threshold-true", "threshold"])
    assert alone["threshold"] == styles["threshold"]
    assert alone["threshold-true"] == styles["threshold-true"]
    # the applicant views show the policy asked for
    whose = charts.charts(model, whose=2)
    assert "(none)" in " ".join(_texts(next(c for c in whose if c.name == "scores").spec))
    # the table, CSV and card have every policy
    from dashboards.app import csv_bytes

    rows = list(csv.DictReader(io.StringIO(csv_bytes(model, "ticks").decode())))
    assert [r["policy"] for r in rows] == [p for p in policies for _ in range(3)]
    assert set(data.card_rows(model)[0]) == {"figure", *policies}
    assert len(model.settings.cli_text().splitlines()) == 4


def test_one_colour_language():
    """Outcome colours mean outcomes only; policy colours are none of them; a chart over
    ticks with several measures tells them apart by dash, not colour."""
    model = stepped(Settings.from_preset("fair-scarf", policy="threshold", compare=FOUR), 2)
    outcome = set(data.OUTCOME_COLOURS.values())
    assert not outcome & set(data.POLICY_COLOURS)
    for chart in charts.charts(model):
        for field, value, colour in _colour_uses(chart.spec):
            if colour in outcome:  # an outcome colour names that outcome, nothing else
                assert field in ("series", "decision", "outcome"), (chart.name, field, value)
                assert value.startswith(
                    next(k for k, c in data.OUTCOME_COLOURS.items() if c == colour)
                ), (chart.name, value)
            elif field == "policy":
                assert colour == data.policy_styles(model.settings.policies)[value][0]
            else:  # otherwise only the reference black and neutral greys
                assert colour in (data.REFERENCE, "#555", charts.MEASURE_STROKE), (
                    chart.name,
                    colour,
                )
    rr = {c.name: c.spec for c in charts.charts(model)}["reliability"]
    enc = _encodings(rr)[0]
    assert enc["color"]["field"] == "policy" and enc["strokeDash"]["field"] == "series"
    # the effort legend's swatches are squares like its bars, in the bar's colour alone
    one = stepped(Settings.from_preset("paper"), 1)
    effort = {c.name: c.spec for c in charts.charts(one)}["effort"]
    legend = _encodings(effort)[0]["opacity"]["legend"]
    assert legend["symbolType"] == "square"
    assert legend["symbolFillColor"] == data.policy_styles(["threshold"])["threshold"][0]


def test_bins_have_an_edge_at_the_threshold_so_the_demo_1_tie_shows():
    model = stepped(Settings.from_demo(available_demos()["threshold-trap"]), 2)
    run = data.runs(model)[0]
    threshold = data.threshold_at(run, 1)
    bins = data.score_bins(run, 1)
    threshold = round(threshold, 6)  # as sent to the browser
    assert threshold in bins["lo"]  # a bar starts exactly at the threshold
    at = [i for i, lo in enumerate(bins["lo"]) if lo == threshold]
    # the two second attempts tied at the threshold: one accepted, one rejected, in the
    # bar that starts there; no bar mixes scores below the threshold with those above
    assert sorted(bins["decision"][i] for i in at) == ["accepted", "rejected"]
    each = data.scores(run, 1)
    for lo, hi, d in zip(bins["lo"], bins["hi"], bins["decision"], strict=True):
        assert hi <= threshold or lo >= threshold
        assert d in each["decision"]
    assert len(each["score"]) == sum(bins["count"])
    title = {c.name: c.spec for c in charts.charts(model)}["scores"]["title"]["text"]["expr"]
    assert "no tick run yet" in title and "tick < 0" in title


def test_scatter_keeps_every_tick_and_every_accepted_one_on_top():
    model = stepped(Settings.from_preset("paper", n_initial=1000), 3)
    run = data.runs(model)[0]
    cols = data.applications(run, 2, window=20, per_tick=100)
    table = model.candidate_table()
    ticks = np.array(cols["tick"])
    for t in range(3):  # tick 0 is drawn too (the newest 2,000 used to crowd it out)
        n_acc = int(table.loc[table["tick"] == t, "accepted"].sum())
        mine = ticks == t
        assert 0 < mine.sum() <= max(100, n_acc)
        assert (
            sum(o == "accepted" for o, m in zip(cols["outcome"], mine, strict=True) if m) == n_acc
        )
    assert cols["z"] == [int(o == "accepted") for o in cols["outcome"]]
    assert data.application_note(run, 2)["text"][0].startswith(f"drawn: {len(ticks):,} of")
    spec = {c.name: c.spec for c in charts.charts(model)}["applicants"]
    assert _encodings(spec)[0]["order"]["field"] == "z"
    # few applicants: every one drawn, no note
    small = stepped(Settings.from_preset("paper"), 2)
    assert data.application_note(data.runs(small)[0], 1) == {"text": []}


@pytest.mark.parametrize("preset", [*EXTENSION_PRESETS, "paper"])
def test_extension_charts_only_while_their_mechanism_is_on(preset):
    model = stepped(Settings.from_preset(preset), 3)
    names = [c.name for c in charts.extension_charts(model, [model.settings.policy])]
    assert names == EXTENSION_PRESETS.get(preset, [])
    runs = data.runs(model)
    for chart in charts.extension_charts(model, ["threshold"]):
        main = chart.datasets(runs, 2)["main"]
        assert data.n_rows(main) > 0
        if "series" in main:  # per-tick metrics: one row per tick and series
            assert set(main["tick"]) == {0, 1, 2}


def test_group_chart_has_a_line_per_group():
    model = stepped(Settings.from_preset("groups"), 3)
    chart = {c.name: c for c in charts.charts(model)}["groups"]
    series = set(chart.datasets(data.runs(model), 2)["main"]["series"])
    assert series == {"group 0: accepted", "group 1: accepted", "gap between groups (DP)"}


# -- side by side: improvement (issue 19.5) and fair-scarf (issue 21.5) ------------------------
BANDIT = "improve-linucb:advice=segment"


def _line(rows: list[dict], policy: str, label: str, key: str = "value") -> np.ndarray:
    """One policy's line of one series, in tick order, None as NaN."""
    line = sorted(
        (r for r in rows if r["policy"] == policy and r["series"] == label), key=lambda r: r["tick"]
    )
    return np.array([np.nan if r[key] is None else r[key] for r in line], dtype=float)


def test_policy_selects_offer_the_learning_bandit():
    policies = dashboard_policies()
    assert policies.index(BANDIT) == policies.index("improve-linucb") + 1
    assert "segment advice" in policy_description(BANDIT)
    assert policy_description("threshold").startswith("standard practice")
    # plain words for every policy offered: no research shorthand
    for spec in policies:
        note = policy_description(spec)
        assert note, spec
        assert not re.search(r"G-RSVI|beta_risk|ARLIM|LinUCB|path=DIR|eq\.|Alg\.", note), spec
    s = Settings.from_preset("improvement").with_input("compare", BANDIT)
    assert s.compare == (BANDIT,)
    twin_cmd = s.cli_text().splitlines()[1]
    assert f"--policy {BANDIT} " in twin_cmd  # the CLI reads the same spec
    assert twin_cmd.endswith(
        "--out results/dashboard-improvement-improve-linucb-advice-segment-seed0"
    )
    from dashboards.app import file_stem

    assert (
        file_stem(s) == "recourse-abm_improvement_threshold_vs_improve-linucb-advice-segment_seed0"
    )


def test_running_share_known_answer():
    model = stepped(Settings.from_preset("improvement"), 6)
    run = data.runs(model)[0]
    cols = data.running_share([run], 5, {"q": ("n_qualified_accepted", "n_accepted", "")})
    table = model.tick_table()
    expected = table["n_qualified_accepted"].cumsum() / table["n_accepted"].cumsum()
    np.testing.assert_allclose(cols["value"], expected.to_numpy(), atol=1e-6)
    assert cols["tick"] == list(range(6)) and set(cols["series"]) == {"q"}


@pytest.fixture(scope="module")
def improvement_run() -> DashboardModel:
    model = DashboardModel(Settings.from_demo(available_demos()["improvement-vs-gaming"]))
    for _ in range(40):
        model.step()
    return model


def test_improvement_demo_draws_the_outcome_cards_figures_against_none(improvement_run):
    model = improvement_run
    assert (model.settings.preset, model.settings.policy, model.settings.compare) == (
        "improvement",
        "threshold",
        (BANDIT, "none"),
    )
    runs = data.runs(model)
    by_name = {c.name: c for c in charts.charts(model)}
    gain = data.rows(by_name["true-gain"].datasets(runs, 39)["main"])
    share = data.rows(by_name["qualified"].datasets(runs, 39)["main"])
    # each line ends at the outcome card's figure of the run so far, for every policy
    for policy, m in zip(model.settings.policies, model.models(), strict=True):
        card = m.outcome_card().values
        for rows, figures in ((gain, charts.TRUE_GAIN), (share, charts.QUALIFIED)):
            for label, (_, _, name) in figures.items():
                line = _line(rows, policy, label)
                assert line.shape == (40,)
                last = line[-1]
                if card[name] != card[name]:  # none gives no advice: no value at all
                    assert np.isnan(line).all(), (policy, name)
                else:
                    assert last == pytest.approx(card[name], abs=1e-6), (policy, name)
        # replay: tick 25 shows the card as it stood after 26 ticks
        early = data.rows(by_name["true-gain"].datasets(runs, 25)["main"])
        assert early == [r for r in gain if r["tick"] <= 25]

    # what the lesson points at (seed 0, after 40 ticks): threshold advice asks only for
    # proxies and gains nothing; the bandit's advice gains, and more of its acceptances
    # truly qualify than without advice
    def end(rows, policy, label):
        return _line(rows, policy, label)[-1]

    gain_label = next(iter(charts.TRUE_GAIN))
    qual, proxy = list(charts.QUALIFIED)
    assert end(gain, "threshold", gain_label) == 0 and end(gain, BANDIT, gain_label) > 0
    assert end(share, "threshold", proxy) == 1 and end(share, BANDIT, proxy) < 0.6
    assert end(share, BANDIT, qual) > end(share, "none", qual)


@pytest.fixture(scope="module")
def fair_run() -> DashboardModel:
    # the demo as the sidebar builds it: scarf trains its generator here (15-20 s)
    model = DashboardModel(Settings.from_demo(available_demos()["fairness-aware-advice"]))
    for _ in range(8):
        model.step()
    return model


@pytest.mark.slow  # trains the scarf generator (~15 s)
def test_fair_scarf_side_by_side_has_per_group_lines(fair_run):
    model = fair_run
    assert (model.settings.preset, model.settings.policy, model.settings.compare) == (
        "fair-scarf",
        "threshold",
        ("scarf",),
    )
    runs = data.runs(model)
    by_name = {c.name: c for c in charts.charts(model)}
    tables = {"threshold": model.tick_table(), "scarf": model.twin.tick_table()}
    for name, columns in (
        (
            "groups",
            {
                "accept_rate_g0": "group 0: accepted",
                "accept_rate_g1": "group 1: accepted",
                "dp_gap": "gap between groups (DP)",
            },
        ),
        ("group-distance", {"w_dist": "distance between groups"}),
        ("budget", {"budget_spent": "spent", "budget_left": "left"}),
    ):
        rows = data.rows(by_name[name].datasets(runs, 7)["main"])
        assert {r["policy"] for r in rows} == set(tables), name
        assert {r["series"] for r in rows} == set(columns.values()), name
        for policy, table in tables.items():
            for col, label in columns.items():
                expected = table[col].to_numpy(dtype=float)
                np.testing.assert_allclose(_line(rows, policy, label), expected, atol=1e-6)
    # both pace the episode's budget: no tick spends more than an even share of what is left
    ticks, budget = model.settings.ticks, 20.0
    for table in tables.values():
        before = np.concatenate([[budget], table["budget_left"].to_numpy()[:-1]])
        share = before / np.maximum(ticks - np.arange(len(table)), 1)
        assert (table["budget_spent"].to_numpy() <= share + 1e-9).all()
        assert table["budget_spent"].iloc[-1] > 0
    assert preparing_text(model.settings) == "preparing scarf (training its generator)…"
    assert preparing_text(Settings.from_preset("paper")) == "preparing the run…"


def _settled(session, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while (session.building or session.preparing.value is not None) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.02)
    assert not session.building and session.preparing.value is None


def test_a_slow_build_shows_preparing_and_the_newest_choice_wins(monkeypatch):
    import solara

    from dashboards import app

    training = threading.Event()

    class SlowModel(DashboardModel):
        """Seed 1 trains until released; seed 2 is refused."""

        def __init__(self, settings: Settings) -> None:
            if settings.seed == 1:
                assert training.wait(60)
            if settings.seed == 2:
                raise ConfigError("seed = 2 is not allowed; allowed: anything else")
            super().__init__(settings)

    monkeypatch.setattr(app, "DashboardModel", SlowModel)
    monkeypatch.setattr(app, "QUICK_BUILD_S", 0.05)
    session = app.Session(solara.reactive)
    first = session.model.value
    try:
        session.build(Settings.from_preset("paper", seed=1))
        assert session.preparing.value == "preparing the run…"
        session.step()
        session.play()
        session.reset()
        # Step, Play and Reset wait for the new model: the old one did not move
        assert session.model.value is first and first.tick == 0 and not session.playing.value
        assert session.draft.value.seed == 1  # the sidebar shows the new choice already
        session.build(Settings.from_preset("paper", seed=3))  # changed again meanwhile
        training.set()
        _settled(session)
        assert session.model.value.settings.seed == 3  # seed 1 was superseded: never shown
        assert session.error.value is None
        session.step()
        assert session.model.value.tick == 1
        # a refused build: the message, and the current run goes on
        session.build(Settings.from_preset("paper", seed=2))
        _settled(session)
        assert session.error.value.startswith("seed = 2 is not allowed")
        assert session.model.value.settings.seed == 3 and session.model.value.tick == 1
    finally:
        training.set()
        _settled(session)


# -- export --------------------------------------------------------------------------------
def test_publishes_from_two_threads_each_draw_a_frame():
    """The play loop's thread publishes beside the page's handlers: each publish is a new
    frame, so the state the last one saw is drawn (two bumps read from one value would
    set it once, and a run to a tick already shown could stay undrawn)."""
    import solara

    from dashboards import app

    session = app.Session(solara.reactive)
    _settled(session)
    sent = session.gate.sent

    def slow_sent(frame: int) -> None:  # a thread switch between reading and setting
        time.sleep(0.05)
        sent(frame)

    session.gate.sent = slow_sent
    before = session.frame.value
    threads = [threading.Thread(target=session.publish) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert session.frame.value == before + 2


def test_csv_export_has_every_tick_of_both_policies():
    from dashboards.app import csv_bytes

    model = stepped(Settings.from_preset("paper", compare="none"), 4)
    rows = list(csv.DictReader(io.StringIO(csv_bytes(model, "ticks").decode())))
    assert [r["policy"] for r in rows] == ["threshold"] * 4 + ["none"] * 4
    assert [int(r["tick"]) for r in rows] == [0, 1, 2, 3] * 2
    cand = list(csv.DictReader(io.StringIO(csv_bytes(model, "candidates").decode())))
    assert len(cand) == len(model.candidate_table()) + len(model.twin.candidate_table())


# -- the command -------------------------------------------------------------------------------
def test_dashboard_command_serves_on_the_given_host():
    from lab.commands.dashboard import check_host, serve_command

    cmd = serve_command("0.0.0.0", 9000, production=True, max_pages=None, idle_minutes=None)
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0" and cmd[cmd.index("--port") + 1] == "9000"
    for bad in ("", "a b", "http://x/"):
        with pytest.raises(ConfigError, match="--host = "):
            check_host(bad)


# -- the page, rendered in-process with Solara's test tooling ----------------------------------
@pytest.fixture
def page():
    import ipyvuetify as v
    import solara

    from dashboards import app

    warnings.filterwarnings("ignore", message=".*use_state.*early return")
    box, rc = solara.render(solara.AppLayout(children=[app.Page()]), handle_error=False)
    yield rc, v
    rc.close()


def _alerts(rc, v) -> str:
    return " ".join(str(w.children) for w in rc.find(v.Alert).widgets)


def _button(rc, v, label):
    return rc.find(v.Btn, children=[label]).widget


def _status(rc) -> str:
    import solara.widgets

    texts = [w.unsafe_innerHTML or "" for w in rc.find(solara.widgets.HTML).widgets]
    return " ".join(t for t in texts if "ticks run" in t or "no tick run" in t)


def _select(rc, v, label):
    return [w for w in rc.find(v.Select).widgets if w.label == label][0]


@pytest.mark.slow
def test_page_steps_resets_and_shows_errors(page):
    rc, v = page
    _button(rc, v, "Step").click()
    _button(rc, v, "Step").click()
    assert "2 of 100 ticks run" in _status(rc)
    beta = [w for w in rc.find(v.TextField).widgets if "β" in str(w.label)][0]
    beta.v_model = "-1"
    beta.fire_event("keyup.enter", None)  # solara.InputText applies on Enter / focus out
    assert "beta = -1 is not allowed; allowed: a number in (0, inf]" in _alerts(rc, v)
    _button(rc, v, "Step").click()  # the model kept running
    assert "3 of 100 ticks run" in _status(rc)
    beta.v_model = "0.5"
    beta.fire_event("keyup.enter", None)
    assert "not allowed" not in _alerts(rc, v)
    # every slider changed, then Reset: the page rebuilds from the valid settings
    for w in rc.find(v.Slider).widgets:
        if "rabm-slider" in (w.class_ or ""):
            w.fire_event("change", int(w.max))
    _button(rc, v, "Reset").click()
    assert "no tick run yet (0 of 300)" in _status(rc)
    _button(rc, v, "Step").click()
    assert "1 of 300 ticks run" in _status(rc)


@pytest.mark.slow
def _until(check, timeout_s: float = 60.0) -> None:
    """Wait for ``check()`` (a demonstration is built in the background: its first build
    imports and prepares its policies, a second or two on a loaded machine)."""
    deadline = time.monotonic() + timeout_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert check()


def test_page_switching_demos_after_a_finished_run_enables_step(page):
    rc, v = page
    demo = _select(rc, v, "classroom demonstration")
    demo.v_model = "1 · The threshold trap"
    _until(lambda: "motivating-example" in _status(rc) and not _button(rc, v, "Step").disabled)
    for _ in range(3):
        _button(rc, v, "Step").click()
    assert _button(rc, v, "Step").disabled and "run finished" in _status(rc)
    demo.v_model = "2 · Harder features"
    _until(lambda: "paper-hard" in _status(rc) and not _button(rc, v, "Step").disabled)
    assert not _button(rc, v, "Step").disabled and not _button(rc, v, "Play").disabled
    _button(rc, v, "Step").click()
    assert "1 of 100 ticks run" in _status(rc) and "vs <strong>threshold-true</strong>" in _status(
        rc
    )


@pytest.mark.slow
def test_page_refuses_crafted_values(page):
    rc, v = page
    _select(rc, v, "scenario preset").v_model = "no-such-preset"
    assert "preset = 'no-such-preset' is not allowed" in _alerts(rc, v)
    _select(rc, v, "classroom demonstration").v_model = "7 · nope"
    assert "demonstration = '7 · nope' is not allowed" in _alerts(rc, v)
    seed = [w for w in rc.find(v.Slider).widgets if "seed" in str(w.label)][0]
    seed.fire_event("change", 10**9)
    assert "seed = 1000000000 is not allowed; allowed: an integer in [0, 99]" in _alerts(rc, v)
    _button(rc, v, "Step").click()
    assert "1 of 100 ticks run" in _status(rc)  # still the old, valid run
    assert set(dashboard_policies()) >= {"threshold", "none"}


def test_the_outcome_card_shows_both_policies_and_only_the_figures_that_apply():
    model = stepped(Settings.from_preset("groups", compare="none"), 6)
    rows = data.card_rows(model)
    first = next(r for r in rows if r["figure"].startswith("recourse feasibility"))
    assert set(first) == {"figure", "threshold", "none"}
    assert first["none"] == "0"
    labels = {r["figure"] for r in rows}
    assert any("demographic-parity" in f for f in labels)  # groups on
    assert not any("h*(x)" in f for f in labels)  # outcomes off: left out
    card = model.outcome_card().values
    assert first["threshold"] == f"{card['rf']:.3g}"
    assert data.card_rows(stepped(Settings.from_preset("paper"), 0)) == []


# -- the page address (issue 36.2) ------------------------------------------------------------
def test_the_address_round_trips_settings_demo_ticks_and_tick_shown():
    from dashboards.settings import from_query, to_query

    demos = available_demos()
    cases = [
        (Settings.from_preset("paper", k=5, beta="0.2", compare=("none", "threshold-true")), 7, 3),
        (Settings.from_demo(demos["threshold-trap"]), 2, None),
        (
            Settings.from_demo(demos["harder-features"]).with_input(
                "difficulty", "0.5, " * 9 + "0.3"
            ),
            4,
            0,
        ),
        (Settings.from_preset("groups"), 0, None),
    ]
    for settings, run, shown in cases:
        query = to_query(settings, run, shown)
        assert from_query(query, demos) == (settings, run, shown, []), query
    assert to_query(Settings.from_demo(demos["threshold-trap"]), 2) == "demo=threshold-trap&run=2"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("k=abc", "k = 'abc' is not allowed; allowed: an integer in [1, 100]"),
        ("seed=100", "seed = '100' is not allowed; allowed: an integer in [0, 99]"),
        ("policy=../etc", "policy = '../etc' is not allowed"),
        ("demo=nope", "demo = 'nope' is not allowed; allowed: one of threshold-trap"),
        ("run=500", "run = '500' is not allowed; allowed: an integer in [0, 100]"),
        ("run=3&shown=3", "shown = '3' is not allowed; allowed: an integer in [0, 2]"),
        ("colour=red", "address = 'colour' is not allowed; allowed: one of demo, preset"),
        ("compare=none&compare=none", "compare_2 = 'none' is not allowed"),
    ],
)
def test_a_bad_address_names_the_field_and_the_rest_applies(query, message):
    from dashboards.settings import from_query

    settings, run, shown, problems = from_query(query + "&m=3", available_demos())
    assert len(problems) == 1 and problems[0].startswith(message), problems
    assert "\n" not in problems[0] and settings.m == 3  # the good part applied


def test_a_session_opened_on_an_address_rebuilds_the_same_run():
    import solara

    from dashboards import app

    live = stepped(Settings.from_preset("paper", compare="none", seed=4), 6)
    query = app.to_query(live.settings, live.tick, 2)
    session = app.Session(solara.reactive, query)
    _settled(session)
    m = session.model.value
    assert m.settings == live.settings and m.tick == 6 and session.replay.value == 2
    assert m.tick_table().equals(live.tick_table())  # same seed, same numbers
    assert m.twin.tick_table().equals(live.twin.tick_table())
    assert session.address() == query and session.error.value is None
    bad = app.Session(solara.reactive, "k=abc&run=2")
    _settled(bad)
    assert bad.error.value.startswith("address: k = 'abc' is not allowed")
    assert bad.model.value.tick == 2  # the rest of the address applied


# -- menus offer what the preset can run (issue 36.4) -------------------------------------------
def test_policy_support_matches_what_builds():
    from dashboards.settings import SLOW_POLICY_NEEDS, policy_support

    support = policy_support("paper")
    assert support["threshold"] == "" and support["none"] == ""
    assert "outcome_delay" in support["improve-linucb"]
    assert "budget" in support["scarf"] and "'ei'" in support["ei"]
    assert policy_support("improvement")["improve-linucb:advice=segment"] == ""
    assert policy_support("fair-scarf")["scarf"] == ""
    # every refusal is what building the model says (the slow trainers: their first check)
    for spec, why in support.items():
        if why and spec not in SLOW_POLICY_NEEDS:
            with pytest.raises(Exception, match=re.escape(why[:40])):
                DashboardModel(Settings.from_preset("paper", policy=spec))
    for preset in ("paper", "budget"):
        for spec in ("scarf", "scarf-mlp"):
            refused = bool(policy_support(preset)[spec])
            assert refused == (get_scenario_budget(preset) is None)
        # FACE is checked without building its graph: both presets have 10,000 rows
        assert policy_support(preset)["threshold-face"] == ""
    assert set(SLOW_POLICY_NEEDS) == {"scarf", "scarf-mlp", "threshold-face"}


def get_scenario_budget(preset: str):
    from abm.scenarios import get_scenario

    return get_scenario(preset).budget


def test_a_preset_change_leaves_out_what_it_cannot_run_and_menus_follow_the_model():
    import solara

    from dashboards import app

    session = app.Session(solara.reactive)
    session.guarded(session.input, "preset", "improvement")
    _settled(session)
    session.guarded(session.input, "policy", BANDIT)
    session.guarded(session.input, "compare", "none")
    _settled(session)
    assert session.model.value.settings.policies == [BANDIT, "none"]
    session.guarded(session.input, "preset", "paper")  # the bandit cannot run there
    _settled(session)
    m = session.model.value
    assert (m.settings.preset, m.settings.policies) == ("paper", ["threshold", "none"])
    assert session.draft.value == m.settings and BANDIT in session.notice.value
    assert session.error.value is None
    # a policy the preset cannot run is refused with why, and the inputs keep what runs
    session.guarded(session.input, "compare_2", "scarf")
    assert session.error.value.startswith(
        "compare_2 = 'scarf' is not allowed; allowed: a "
        "policy that runs on paper (this one needs a budget"
    )
    assert session.draft.value == m.settings and session.model.value is m


# -- the forecast of the agent view (issue 36.8) ------------------------------------------------
def _direct_future(model, cid: int, follow: bool, key: int) -> int | None:
    """Future ``key`` simulated directly: the model's state with the applicant's row set
    by hand, stepped HORIZON whole ticks; accepted = gone from the pool without dropping."""
    import dataclasses

    from abm.planning import RolloutStreams, WithoutFeedback
    from abm.population import Population
    from dashboards.forecast import HORIZON

    snap = model.snapshot()
    pop = snap.population
    data_ = {k: v.copy() for k, v in pop.data.items()}
    row = int(np.flatnonzero(pop.ids == cid)[0])
    x = pop.X_cf[row] if follow else pop.X_obs[row]
    data_["X"][row] = x
    data_["implemented"][row] = follow
    data_["score_now"][row] = model.scorer.score(x[None, :])[0]
    snap = dataclasses.replace(snap, population=Population(data_, pop.n_features))
    policy = WithoutFeedback(copy.deepcopy(model.policy, {id(model): model}))
    fork = RecourseModel.from_snapshot(
        snap, RolloutStreams(model.config.seed, model.tick, key), policy
    )
    for ahead in range(1, HORIZON + 1):
        fork.step()
        if not np.any(fork.pool.waiting.ids == cid):
            dropped = any(np.any(p.ids == cid) for _, p in fork.pool.dropped)
            return None if dropped else ahead
    return None


def test_forecast_equals_a_direct_simulation_of_the_same_futures():
    import math

    from dashboards import forecast

    model = stepped(Settings.from_preset("paper", seed=2), 8)
    pop = model.population
    cids = [int(c) for c in pop.ids[pop.advised][:3]]
    assert cids
    for cid in cids:
        begin = forecast.start(model, cid)
        results = {arm: [] for arm in forecast.ARMS}
        forecast.run(begin, range(40), results, lambda: None, threading.Event())
        direct = {
            forecast.ARMS[0]: [_direct_future(model, cid, True, k) for k in range(40)],
            forecast.ARMS[1]: [_direct_future(model, cid, False, k) for k in range(40)],
        }
        assert results == direct, cid
        for arm in forecast.ARMS:  # the figures shown, by hand
            a = np.array([math.inf if t is None else t for t in direct[arm]])
            s = forecast.summary(direct[arm])
            assert s["never"] == pytest.approx(np.mean(np.isinf(a)))
            assert s["median"] == np.sort(a)[math.ceil(0.5 * len(a)) - 1]
            assert s["p10"] == np.sort(a)[math.ceil(0.1 * len(a)) - 1]
            assert s["p90"] == np.sort(a)[math.ceil(0.9 * len(a)) - 1]
    # the real run was not touched by any of it
    again = stepped(Settings.from_preset("paper", seed=2), 8)
    model.step()
    again.step()
    assert model.tick_table().equals(again.tick_table())
    assert "not waiting" in forecast.start(model, 10**6)
    assert forecast.start(stepped(Settings.from_preset("paper"), 0), 0) == "no tick run yet"


@pytest.mark.parametrize(("preset", "policy"), [("lending", "threshold"), ("paper", "robust-l1")])
def test_forecast_futures_in_one_batch_are_each_future_alone(preset, policy):
    """futures() advances every fork as one batch (extensions on; a policy that answers
    each fork alone): each future is what future() gives it alone."""
    from dashboards import forecast

    model = stepped(Settings.from_preset(preset, seed=1, policy=policy), 6)
    pop = model.population
    cid = int(pop.ids[pop.advised][0])
    begin = forecast.start(model, cid)
    alone = {arm: [forecast.future(begin, arm, k) for k in range(12)] for arm in forecast.ARMS}
    assert forecast.futures(begin, range(12)) == alone
    assert any(t is not None for t in alone[forecast.ARMS[0]])  # futures end apart


def test_forecast_at_paper_scale_takes_at_most_5_s():
    from dashboards import forecast

    model = stepped(Settings.from_preset("paper"), 10)
    pop = model.population
    worst = 0.0
    for cid in pop.ids[pop.advised][:4]:
        t0 = time.perf_counter()
        begin = forecast.start(model, int(cid))
        results = {arm: [] for arm in forecast.ARMS}
        forecast.run(
            begin, range(forecast.DEFAULT_FUTURES), results, lambda: None, threading.Event()
        )
        worst = max(worst, time.perf_counter() - t0)
        assert all(len(v) == forecast.DEFAULT_FUTURES for v in results.values())
    assert worst < 5.0, worst


def test_demo_7_shows_only_the_charts_its_lesson_is_about():
    demo = available_demos()["fairness-aware-advice"]
    model = stepped(Settings.from_preset("fair-scarf"), 2)  # threshold alone: no training
    every = [c.name for c in charts.charts(model)]
    assert {"true-gain", "qualified", "causal"} <= set(every)  # on in this world
    shown = [c.name for c in charts.charts(model, 0, demo.charts)]
    assert shown[-3:] == ["groups", "group-distance", "budget"]
    assert not {"true-gain", "qualified", "true-outcomes", "causal"} & set(shown)
    assert "reliability" in shown  # the core charts stay


def test_recession_demo_shows_places_halving_and_the_threshold_climbing():
    demo = available_demos()["recession"]
    model = stepped(Settings.from_demo(demo), 62)
    assert (model.settings.preset, model.settings.policy) == ("recession", "threshold")
    shown = [c.name for c in charts.charts(model, 0, demo.charts)]
    assert shown[-1] == "capacity" and "reliability" in shown
    # the chart draws the tick table's k_t and m_t
    runs = data.runs(model)
    rows = data.rows(charts.capacity(model.settings.policies).datasets(runs, 61)["main"])
    places = {r["tick"]: r["value"] for r in rows if r["series"] == "places k"}
    assert [places[t] for t in (39, 40, 59, 60)] == [9, 5, 5, 9]
    table = model.models()[0].tick_table()
    assert (table["n_accepted"][40:60] <= 5).all() and (table["m"] == 10).all()
    # what the lesson points at (seed 0): advice of tick 39 carried out in full and
    # rejected at tick 40; the threshold climbs and the queue grows in the recession;
    # advice given in the recession works when the places return
    assert table["n_succ"][40] > 0 and table["rr"][40] == 0.0
    assert table["threshold"][40:60].min() > table["threshold"][30:39].max()
    assert table["n_waiting"][50:55].mean() > table["n_waiting"][30:40].mean()
    assert table["rr"][60] == 1.0


def test_the_outcome_card_moves_on_once_a_second_while_playing(monkeypatch):
    """Play draws every frame but recomputes the card (half a frame's server time) at most
    every CARD_PLAY_S; paused, the card is always the newest frame."""
    import solara

    from dashboards import app

    now = [100.0]
    monkeypatch.setattr(app.time, "monotonic", lambda: now[0])
    session = app.Session(solara.reactive)
    assert session.card_frame() == session.frame.value  # paused: the newest
    session.playing.set(True)
    session.frame.set(session.frame.value + 1)
    shown = session.card_frame()  # the card last moved long ago: it moves on at once
    assert shown == session.frame.value
    for _ in range(5):  # five frames within a second: the card stays
        session.frame.set(session.frame.value + 1)
        now[0] += 0.15
        assert session.card_frame() == shown
    now[0] += app.CARD_PLAY_S
    assert session.card_frame() == session.frame.value  # a second on: the newest
    session.frame.set(session.frame.value + 1)
    assert session.card_frame() == session.frame.value - 1
    session.playing.set(False)
    assert session.card_frame() == session.frame.value  # Play stopped: the newest at once
