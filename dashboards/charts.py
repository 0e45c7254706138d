"""The dashboard's charts as Vega-Lite specs plus per-frame data (pure functions).

A chart is a :class:`Chart`: a static spec (titles, encodings, colours; built once per
model) whose data sit in named datasets, and a function giving those datasets at tick t.
The browser embeds the spec once and then only swaps the data (:class:`~dashboards.widgets.
VegaView`), so a redraw costs Vega's dataflow, not a compile. Specs are plain dicts: building
an Altair chart costs 20-40 ms, a dict well under 1 ms.

Conventions a student can rely on: every axis says what it measures and in which unit;
counts have integer axes; ticks count from 0; outcomes have one colour everywhere
(:data:`~dashboards.data.OUTCOME_COLOURS`); series differ in colour and in dash; side by
side, the first policy is drawn solid and the second dashed, and legends name them.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dashboards import data
from dashboards.data import OUTCOME_COLOURS, Columns, Run
from dashboards.settings import DashboardModel

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
HEIGHT = 210
WINDOW = 20  # ticks shown by the applicant scatter
SMOOTH = 10  # ticks averaged by the improvement-or-gaming lines (a few implementers a tick)
SUBTITLE_CHARS = 68  # a subtitle line fits a half-width chart on a 1280-pixel screen
SHARE = "share (0 to 1)"
COUNT = "applicants (count)"
POLICY_DASH = [[1, 0], [7, 4]]  # first policy solid, second dashed
SERIES_DASH = [[1, 0], [7, 4], [2, 3], [10, 3, 2, 3], [4, 4], [1, 0]]
SERIES_WIDTH = [4.5, 3, 2, 1.5, 1.5, 1.5]
POLICY_COLOURS = ["#1f77b4", "#9467bd"]
# line legends show a stretch of the line itself: its colour, dash and width
LINE_LEGEND = {"symbolType": "stroke", "symbolSize": 500, "columns": 2}
GROUP_COLOURS = ["#1f77b4", "#e377c2", "#17becf", "#bcbd22", "#8c564b", "#9467bd"]
# a half-width chart on a 1280-pixel screen fits the measure and policy legends side by
# side while their longest labels have this many characters together; past it they stack
LEGENDS_SIDE_BY_SIDE_CHARS = 48


@dataclass(frozen=True)
class Chart:
    """One chart: ``name`` (an id, also the PNG's name), a static Vega-Lite ``spec`` and
    ``datasets(all_runs, t)`` -> {dataset name: columns} at tick t; ``keys`` names, per
    dataset, a column that identifies rows whose values never change (the browser then
    adds and removes rows instead of replacing them all)."""

    name: str
    spec: dict[str, Any]
    datasets: Callable[[list[Run], int], dict[str, Columns]]
    clickable: bool = False
    keys: dict[str, str] | None = None  # dataset -> a column naming rows that never change


def signals(t: int) -> dict[str, int]:
    """Vega signals every spec may use: the tick shown and the tick axis' upper end."""
    return {"tick": t, "tmax": max(t, 1)}


def _spec(name: str, title: str, subtitle: str, body: dict[str, Any]) -> dict[str, Any]:
    # a subtitle wider than the plot would shrink the plot (fit-x fits the title as well)
    lines = textwrap.wrap(subtitle, SUBTITLE_CHARS)
    return {
        "$schema": SCHEMA,
        "title": {"text": title, "subtitle": lines, "anchor": "start", "fontSize": 14,
                  "subtitleColor": "#555", "subtitleFontSize": 11},
        "width": "container",
        "height": HEIGHT,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "config": {"legend": {"orient": "bottom", "columns": 2, "labelLimit": 260,
                              "symbolStrokeWidth": 2, "titleFontSize": 11, "labelFontSize": 11},
                   "axis": {"titleFontSize": 12, "labelFontSize": 11}},
        "description": name,
        **body,
    }  # fmt: skip


def _tick_values(first: str, last: str) -> dict[str, str]:
    """Axis values: whole ticks from ``first`` to ``last`` (Vega expressions), about ten of
    them (Vega's own choice puts ticks at 0.5 once the axis is short)."""
    return {"expr": f"sequence({first}, ({last}) + 1, ceil((({last}) - ({first}) + 1) / 10))"}


def _tick_axis() -> dict[str, Any]:
    return {"field": "tick", "type": "quantitative", "title": "tick (round)",
            "axis": {"format": "d", "values": _tick_values("0", "tmax")},
            "scale": {"domain": [0, {"expr": "tmax"}], "nice": False}}  # fmt: skip


def _y(title: str, kind: str) -> dict[str, Any]:
    y: dict[str, Any] = {"field": "value", "type": "quantitative", "title": title}
    if kind == "share":
        y["scale"] = {"domain": [0, 1]}
    elif kind == "count":
        y["axis"] = {"format": "d", "tickMinStep": 1}
    return y


def line_spec(
    name: str,
    title: str,
    subtitle: str,
    y_title: str,
    styles: list[tuple[str, str]],
    policies: list[str],
    kind: str = "share",
    layers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Lines over ticks from dataset ``main`` (rows tick, series, policy, value).

    ``styles`` lists (series label, colour); ``kind`` is ``share`` (axis 0 to 1),
    ``count`` (integer axis) or ``value`` (from 0). One policy: series differ in colour and dash.
    Two: colour is the series, dash the policy (solid first, dashed second)."""
    labels = [label for label, _ in styles]
    # one series needs no legend: the title names it; beside a policy legend, one column
    legend = {**LINE_LEGEND, "columns": 1 if len(policies) > 1 else 2} if len(labels) > 1 else None
    colour = {"field": "series", "type": "nominal", "title": "measure",
              "scale": {"domain": labels, "range": [c for _, c in styles]},
              "sort": labels, "legend": legend}  # fmt: skip
    if len(policies) > 1:
        dash = {"field": "policy", "type": "nominal", "title": "policy",
                "scale": {"domain": policies, "range": POLICY_DASH},
                "legend": {**LINE_LEGEND, "columns": 1, "encode": {"symbols": {"update": {
                    "stroke": {"value": "#333"}, "strokeWidth": {"value": 2}}}}}}  # fmt: skip
    else:
        dash = {"field": "series", "type": "nominal", "title": "measure", "legend": legend,
                "scale": {"domain": labels, "range": SERIES_DASH[: len(labels)]}}  # fmt: skip
    # equal values are common (the threshold policy aims exactly at the threshold): wider
    # lines first, so that lines drawn over each other stay visible
    width = {"field": "series", "type": "nominal", "title": "measure", "sort": labels,
             "scale": {"domain": labels, "range": SERIES_WIDTH[: len(labels)]}, "legend": legend}  # fmt: skip
    line = {
        "data": {"name": "main"},
        "mark": {"type": "line", "point": {"size": 16, "filled": True}},
        "encoding": {
            "x": _tick_axis(),
            "y": _y(y_title, kind),
            "color": colour,
            "strokeDash": dash,
            "strokeWidth": width,
            "detail": {"field": "policy"},
            "tooltip": [{"field": "series", "title": "measure"}, {"field": "policy"},
                        {"field": "tick"}, {"field": "value", "format": ".3f"}],
        },
    }  # fmt: skip
    spec = _spec(name, title, subtitle, {"layer": [line, *(layers or [])]})
    if len(policies) > 1 and max(map(len, labels)) + max(map(len, policies)) > (
        LEGENDS_SIDE_BY_SIDE_CHARS
    ):
        # Vega's legend layout (Vega-Lite passes it through): the policy legend goes
        # under the measures instead of being cut off at the chart's right edge
        spec["config"]["legend"]["layout"] = {"bottom": {"direction": "vertical",
                                                         "anchor": "start"}}  # fmt: skip
    return spec


def _series_chart(
    name: str,
    title: str,
    subtitle: str,
    y_title: str,
    columns: dict[str, tuple[str, str]],
    policies: list[str],
    kind: str = "share",
) -> Chart:
    """A :func:`line_spec` chart of tick-table ``columns`` {column: (label, colour)}."""
    labels = {col: label for col, (label, _) in columns.items()}
    spec = line_spec(name, title, subtitle, y_title, list(columns.values()), policies, kind)
    return Chart(name, spec, lambda runs, t: {"main": data.series(runs, t, labels)})


# -- the core charts -------------------------------------------------------------------------
def rr_rf(policies: list[str]) -> Chart:
    return _series_chart(
        "reliability", "Does advice work?",
        "RR: of those who made every recommended change, the share accepted. "
        "RF: of the recently rejected, the share who made every change.",
        SHARE,
        {"rr": ("RR reliability", "#1f77b4"), "rf": ("RF feasibility", "#ff7f0e")},
        policies,
    )  # fmt: skip


def goals(policies: list[str]) -> Chart:
    return _series_chart(
        "goals", "Threshold and goal scores",
        "The threshold is the lowest accepted score; goals are what advice aimed for.",
        "score M(x) (0 to 1)",
        {"threshold": ("threshold", "#000000"), "mean_goal": ("goal given (mean)", "#9467bd"),
         "mean_cf_score": ("score after the changes (mean)", "#17becf")},
        policies,
    )  # fmt: skip


def pool(policies: list[str]) -> Chart:
    return _series_chart(
        "pool", "Who applies, and what happens to them",
        "Per tick: applicants, accepted, rejected (incl. dropped), dropped, and waiting "
        "to try again after the tick.",
        COUNT,
        {"n_applicants": ("applied", "#000000"),
         "n_accepted": ("accepted", OUTCOME_COLOURS["accepted"]),
         "n_rejected": ("rejected", OUTCOME_COLOURS["rejected"]),
         "n_dropped": ("dropped (gave up)", OUTCOME_COLOURS["dropped"]),
         "n_waiting": ("waiting", OUTCOME_COLOURS["waiting"])},
        policies, kind="count",
    )  # fmt: skip


def score_histogram(policy: str) -> Chart:
    """Tick t's applicants by score and decision; the threshold as a dashed rule."""
    decision = {"field": "decision", "type": "nominal", "title": "decision",
                "scale": {"domain": ["accepted", "rejected"],
                          "range": [OUTCOME_COLOURS["accepted"], OUTCOME_COLOURS["rejected"]]}}  # fmt: skip
    bars = {
        "data": {"name": "main"},
        "mark": {"type": "bar", "opacity": 0.9, "binSpacing": 1},
        "encoding": {
            "x": {"field": "lo", "type": "quantitative", "title": "score M(x) (0 to 1)",
                  "scale": {"domain": [0, 1]}},
            "x2": {"field": "hi"},
            "y": {"field": "y1", "type": "quantitative", "title": COUNT,
                  "axis": {"format": "d", "tickMinStep": 1}},
            "y2": {"field": "y0"},
            "color": decision,
            "tooltip": [{"field": "decision"}, {"field": "count", "title": "applicants"},
                        {"field": "lo", "title": "score from"}, {"field": "hi", "title": "to"}],
        },
    }  # fmt: skip
    rule = {
        "data": {"name": "threshold"},
        "mark": {"type": "rule", "color": "black", "strokeDash": [5, 3], "size": 2},
        "encoding": {"x": {"field": "threshold", "type": "quantitative"},
                     "tooltip": [{"field": "threshold", "format": ".3f"}]},
    }  # fmt: skip
    spec = _spec("scores", "Scores this tick",
                 f"Applicants of the tick shown ({policy}); dashed: the threshold.",
                 {"layer": [bars, rule]})  # fmt: skip
    spec["title"]["text"] = {"expr": "'Scores at tick ' + tick"}

    def datasets(runs: list[Run], t: int) -> dict[str, Columns]:
        threshold = data.threshold_at(runs[0], t)
        return {"main": data.score_bins(runs[0], t),
                "threshold": {"threshold": [] if threshold is None else [threshold]}}  # fmt: skip

    return Chart("scores", spec, datasets)


def applicant_scatter(policy: str) -> Chart:
    """Applications of the last :data:`WINDOW` ticks, coloured by outcome; click a point to
    follow that applicant."""
    outcome = {"field": "outcome", "type": "nominal", "title": "outcome",
               "scale": {"domain": ["accepted", "rejected", "dropped"],
                         "range": [OUTCOME_COLOURS[k] for k in ("accepted", "rejected", "dropped")]}}  # fmt: skip
    x_scale = {"domain": [{"expr": f"max(0, tick - {WINDOW - 1}) - 0.5"}, {"expr": "tick + 0.5"}],
               "nice": False, "zero": False}  # fmt: skip
    points = {
        "data": {"name": "main"},
        "mark": {"type": "circle", "size": 34, "opacity": 0.8, "cursor": "pointer"},
        "encoding": {
            "x": {"field": "x", "type": "quantitative", "title": "tick (round)", "scale": x_scale,
                  "axis": {"format": "d",
                           "values": _tick_values(f"max(0, tick - {WINDOW - 1})", "tick")}},
            "y": {"field": "score", "type": "quantitative", "title": "score M(x) (0 to 1)",
                  "scale": {"domain": [0, 1]}},
            "color": outcome,
            "tooltip": [{"field": "id", "title": "applicant"}, {"field": "tick"},
                        {"field": "score", "format": ".3f"}, {"field": "outcome"}],
        },
    }  # fmt: skip
    line = {
        "data": {"name": "threshold"},
        "mark": {"type": "line", "color": "black", "strokeDash": [5, 3], "clip": True},
        "encoding": {"x": {"field": "tick", "type": "quantitative", "scale": x_scale},
                     "y": {"field": "threshold", "type": "quantitative"}},
    }  # fmt: skip
    spec = _spec("applicants", "Every application, by tick",
                 f"Last {WINDOW} ticks ({policy}); dashed: the threshold. "
                 "Click a point to follow that applicant.", {"layer": [points, line]})  # fmt: skip

    def datasets(runs: list[Run], t: int) -> dict[str, Columns]:
        return {"main": data.applications(runs[0], t, WINDOW),
                "threshold": data.thresholds(runs[0], t, WINDOW)}  # fmt: skip

    return Chart("applicants", spec, datasets, clickable=True, keys={"main": "key"})


def _bars_by_policy(
    name: str,
    title: str,
    subtitle: str,
    y_title: str,
    kinds: list[str],
    policies: list[str],
    kind_field: str,
    tooltip: list[dict[str, Any]],
) -> dict[str, Any]:
    """Stacked bars per feature from dataset ``main``: colour names the policy (bars side
    by side), opacity the part of the stack (``kinds``, first solid)."""
    enc: dict[str, Any] = {
        "x": {"field": "feature", "type": "nominal", "title": "feature",
              "sort": None, "axis": {"labelAngle": 0}},
        "y": {"field": "value", "type": "quantitative", "title": y_title, "stack": True},
        "color": {"field": "policy", "type": "nominal", "title": "policy",
                  "scale": {"domain": policies, "range": POLICY_COLOURS[: len(policies)]}},
        "opacity": {"field": kind_field, "type": "nominal", "title": None,
                    "scale": {"domain": kinds, "range": [1.0, 0.4]}, "sort": kinds},
        "order": {"field": "order", "type": "quantitative"},
        "tooltip": tooltip,
    }  # fmt: skip
    if len(policies) > 1:
        enc["xOffset"] = {"field": "policy", "type": "nominal", "sort": policies}
    return _spec(name, title, subtitle,
                 {"data": {"name": "main"}, "mark": {"type": "bar"}, "encoding": enc,
                  "transform": [{"calculate": f"indexof({kinds!r}, datum.{kind_field})",
                                 "as": "order"}]})  # fmt: skip


def effort(policies: list[str], model: DashboardModel) -> Chart:
    kinds = ["spent", "planned, failed"]
    spec = _bars_by_policy(
        "effort", "Effort per feature so far",
        "Σ |change| × difficulty: solid for changes made, faded for changes tried that failed.",
        "effort (Σ |Δx| · d)", kinds, policies, "effort",
        [{"field": "feature"}, {"field": "policy"}, {"field": "effort"},
         {"field": "value", "format": ".3f", "title": "effort"}, {"field": "difficulty"},
         {"field": "asked", "title": "times advised"}],
    )  # fmt: skip
    difficulty = model.difficulty
    return Chart("effort", spec, lambda runs, t: {"main": data.effort(runs, t, difficulty)})


# -- the world extensions: a chart only while its mechanism is on -----------------------------
def true_outcomes(policies: list[str]) -> Chart:
    return _series_chart(
        "true-outcomes", "True outcomes (hidden from the model)",
        "Does advice make people truly better, or only better-scored? p* is the true "
        "chance of a good outcome.",
        SHARE,
        {"improvement_rate": ("advice that truly qualifies", "#2ca02c"),
         "tp_rate": ("revealed outcomes that were good", "#1f77b4"),
         "mean_p_true_accepted": ("p* of the accepted (mean)", "#9467bd")},
        policies,
    )  # fmt: skip


def improvement_gaming(policies: list[str]) -> Chart:
    """Of those who reapplied having done all the advice: the share who truly qualify
    (``impl_improvement_rate``) and, of the accepted among them, the share who do not
    (``gaming_rate``); each the mean of the last :data:`SMOOTH` ticks, since a tick has
    only a handful of such applicants (improvement-bandits §5)."""
    columns = {"impl_improvement_rate": ("did the advice, truly qualify", "#2ca02c"),
               "gaming_rate": ("accepted without qualifying (gaming)", "#d62728")}  # fmt: skip
    spec = line_spec(
        "improvement-gaming", "Improvement or gaming?",
        "Of those who did all the advice: the share whose true chance p* is at least 0.5, "
        "and of the accepted among them, the share below it. "
        f"Mean of the last {SMOOTH} ticks.",
        SHARE, list(columns.values()), policies,
    )  # fmt: skip
    spec["layer"][0]["encoding"]["tooltip"].append(
        {"field": "tick_value", "title": "this tick alone", "format": ".3f"}
    )
    labels = {col: label for col, (label, _) in columns.items()}
    return Chart("improvement-gaming", spec,
                 lambda runs, t: {"main": data.smoothed_series(runs, t, labels, SMOOTH)})  # fmt: skip


def validity(policies: list[str]) -> Chart:
    columns = {"validity": "advice still valid"}
    rules = {
        "data": {"name": "refits"},
        "mark": {"type": "rule", "color": "#555", "strokeDash": [2, 2]},
        "encoding": {"x": {"field": "tick", "type": "quantitative"},
                     "tooltip": [{"field": "tick", "title": "refit at tick"},
                                 {"field": "version", "title": "model version"}]},
    }  # fmt: skip
    labels = {
        "data": {"name": "refits"},
        "mark": {"type": "text", "align": "right", "dx": -3, "fontSize": 10, "color": "#555"},
        "encoding": {"x": {"field": "tick", "type": "quantitative"}, "y": {"value": 8},
                     "text": {"field": "label"}},
    }  # fmt: skip
    spec = line_spec(
        "validity", "Retraining: is outstanding advice still valid?",
        "Share of waiting advised applicants whose goal still meets the refitted model. "
        "Dotted lines: the model was refitted.",
        SHARE, [("advice still valid", "#1f77b4")], policies, "share", [rules, labels],
    )  # fmt: skip

    def datasets(runs: list[Run], t: int) -> dict[str, Columns]:
        refits = data.refit_ticks(runs[0], t)
        refits["label"] = [f"refit (v{v})" for v in refits["version"]]
        return {"main": data.series(runs, t, columns), "refits": refits}

    return Chart("validity", spec, datasets)


def group_rates(policies: list[str], n_groups: int) -> Chart:
    columns = {f"accept_rate_g{g}": (f"group {g}: accepted", GROUP_COLOURS[g % 6])
               for g in range(n_groups)}  # fmt: skip
    columns["dp_gap"] = ("gap between groups (DP)", "#000000")
    return _series_chart(
        "groups", "Groups: who gets accepted?",
        "Share of each group's applicants accepted per tick, and the largest gap "
        "between groups (demographic parity gap).",
        SHARE, columns, policies,
    )  # fmt: skip


def group_distance(policies: list[str]) -> Chart:
    return _series_chart(
        "group-distance", "Groups: how far apart are they?",
        "Wasserstein distance W1 between the groups' true features in the pool after the tick.",
        "W1 distance (feature units)",
        {"w_dist": ("distance between groups", "#e377c2")}, policies, kind="value",
    )  # fmt: skip


def causal(policies: list[str], z: int) -> Chart:
    kinds = ["made", "caused by the graph"]
    spec = _bars_by_policy(
        "causal", "Causal graph: changes made and changes caused",
        "Σ |change| per feature so far: solid what applicants changed, faded what the "
        "causal graph moved in turn.",
        "total change (Σ |Δx|)", kinds, policies, "change",
        [{"field": "feature"}, {"field": "policy"}, {"field": "change"},
         {"field": "value", "format": ".3f", "title": "Σ |Δx|"}],
    )  # fmt: skip
    return Chart("causal", spec, lambda runs, t: {"main": data.causal_changes(runs, t, z)})


def budget(policies: list[str]) -> Chart:
    return _series_chart(
        "budget", "Budget for advice",
        "Advice costs its total feature change (L1); spent per tick and what is left.",
        "budget (Σ |Δx|)",
        {"budget_spent": ("spent", "#d62728"), "budget_left": ("left", "#2ca02c")},
        policies, kind="value",
    )  # fmt: skip


def charts(model: DashboardModel) -> list[Chart]:
    """The charts of this model: the core six, then one or two per world extension on."""
    s = model.settings
    policies = [s.policy, s.compare] if s.compare else [s.policy]
    out = [rr_rf(policies), score_histogram(s.policy), goals(policies),
           applicant_scatter(s.policy), pool(policies), effort(policies, model)]  # fmt: skip
    return out + extension_charts(model, policies)


def extension_charts(model: DashboardModel, policies: list[str]) -> list[Chart]:
    """Charts of the world extensions switched on (none for the paper's setting)."""
    on = model.config.mechanisms
    out = []
    if "outcomes" in on:
        out += [true_outcomes(policies), improvement_gaming(policies)]
    if "retraining" in on:
        out.append(validity(policies))
    if "groups" in on:
        out += [group_rates(policies, model.config.n_groups), group_distance(policies)]
    if "causal" in on:
        out.append(causal(policies, model.config.n_features))
    if "budget" in on:
        out.append(budget(policies))
    return out


def payload(
    chart: Chart, all_runs: list[Run], t: int, frame: int, epoch: int = 0
) -> dict[str, Any]:
    """What the browser gets for one frame of ``chart``; ``epoch`` names the model (keyed
    rows of one model are never compared with another's)."""
    out = {"frame": frame, "epoch": epoch, "data": chart.datasets(all_runs, t),
           "signals": signals(t)}  # fmt: skip
    if chart.keys:
        out["keys"] = chart.keys
    return out


def to_json(obj: Any) -> str:
    """Compact JSON text; NaN is refused (the browser's JSON has none)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def applicant_chart(history: Columns, cid: int) -> dict[str, Any]:
    """One applicant's score per application against that tick's threshold (dataset
    ``main``: the columns of :func:`~dashboards.data.applicant_history`)."""
    outcome = {"field": "outcome", "type": "nominal", "title": "outcome",
               "scale": {"domain": ["accepted", "rejected", "dropped"],
                         "range": [OUTCOME_COLOURS[k] for k in ("accepted", "rejected", "dropped")]}}  # fmt: skip
    ticks = history.get("tick") or [0]
    lo, hi = min(ticks), max(ticks)
    step = max(1, (hi - lo) // 10 + 1)
    x = {"field": "tick", "type": "quantitative", "title": "tick (round)",
         "axis": {"format": "d", "values": list(range(lo, hi + 1, step))},
         "scale": {"domain": [lo - 0.5, hi + 0.5], "nice": False, "zero": False}}  # fmt: skip
    layers = [
        {"mark": {"type": "line", "color": "black", "strokeDash": [5, 3], "point": False},
         "encoding": {"x": x, "y": {"field": "threshold", "type": "quantitative",
                                    "title": "score M(x) (0 to 1)", "scale": {"domain": [0, 1]}}}},
        {"mark": {"type": "line", "color": "#1f77b4"},
         "encoding": {"x": x, "y": {"field": "score", "type": "quantitative"}}},
        {"mark": {"type": "point", "filled": True, "size": 70},
         "encoding": {"x": x, "y": {"field": "score", "type": "quantitative"}, "color": outcome,
                      "tooltip": [{"field": "tick"}, {"field": "score"},
                                  {"field": "threshold"}, {"field": "outcome"}]}},
        {"mark": {"type": "point", "shape": "triangle-up", "size": 60, "color": "#17becf",
                  "filled": True},
         "encoding": {"x": x, "y": {"field": "achieved", "type": "quantitative"},
                      "tooltip": [{"field": "tick"}, {"field": "achieved",
                                                      "title": "score after the changes"}]}},
    ]  # fmt: skip
    spec = _spec(f"applicant-{cid}", f"Applicant {cid}: score per application",
                 "Dots: score when applying (outcome colour); dashed: that tick's threshold; "
                 "triangles: score after the changes made.", {"layer": layers})  # fmt: skip
    spec["height"] = 160
    spec["data"] = {"name": "main"}
    return spec
