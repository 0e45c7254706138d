"""The dashboard's charts as Vega-Lite specs plus per-frame data (pure functions).

A chart is a :class:`Chart`: a static spec (titles, encodings, colours; built once per
model) whose data sit in named datasets, and a function giving those datasets at tick t.
The browser embeds the spec once and then only swaps the data (:class:`~dashboards.widgets.
VegaView`), so a redraw costs Vega's dataflow, not a compile. Specs are plain dicts: building
an Altair chart costs 20-40 ms, a dict well under 1 ms.

Conventions a student can rely on: every axis says what it measures and in which unit;
counts have integer axes; ticks count from 0. One colour language, from one palette
(:mod:`dashboards.palette`, whose names the docs use): outcomes have their colours
(:data:`~dashboards.data.OUTCOME_COLOURS`) and no other mark uses them; every policy has
its own colour and dash, keyed by its name (:func:`~dashboards.data.policy_styles`). The
one rule for dashes (:data:`~dashboards.palette.DASH_RULE`): the colour names the policy
and the dash what the colour does not, the measure where a chart has several, the policy
where the colour names the outcome (Who applies). Legends name what colour and dash mean.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dashboards import data, palette
from dashboards.data import OUTCOME_COLOURS, REFERENCE, Columns, Run, policy_styles
from dashboards.settings import DashboardModel

SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
HEIGHT = 210
WINDOW = 20  # ticks shown by the applicant scatter

SUBTITLE_CHARS = 68  # a subtitle line fits a half-width chart on a 1280-pixel screen
SHARE = "share (0 to 1)"
COUNT = "applicants (count)"
SERIES_DASH = palette.MEASURE_DASHES
SERIES_WIDTH = [4.5, 3, 2, 1.5, 1.5, 1.5]
MEASURE_STROKE = palette.hex_of(palette.NEUTRAL)  # a measure's legend swatch: its dash alone
N_CORE = 6  # the charts every model has, before those of the world extensions
PER_TICK = 100  # applications drawn per tick in "Every application" (all the accepted)
# line legends show a stretch of the line itself: its colour, dash and width
LINE_LEGEND = {"symbolType": "stroke", "symbolSize": 500, "columns": 2}
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
        "title": {
            "text": title,
            "subtitle": lines,
            "anchor": "start",
            "fontSize": 14,
            "subtitleColor": "#555",
            "subtitleFontSize": 11,
        },
        "width": "container",
        "height": HEIGHT,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "config": {
            "legend": {
                "orient": "bottom",
                "columns": 2,
                "labelLimit": 260,
                "symbolStrokeWidth": 2,
                "titleFontSize": 11,
                "labelFontSize": 11,
            },
            "axis": {"titleFontSize": 12, "labelFontSize": 11},
        },
        "description": name,
        **body,
    }


def _tick_values(first: str, last: str) -> dict[str, str]:
    """Axis values: whole ticks from ``first`` to ``last`` (Vega expressions), about ten of
    them (Vega's own choice puts ticks at 0.5 once the axis is short)."""
    return {"expr": f"sequence({first}, ({last}) + 1, ceil((({last}) - ({first}) + 1) / 10))"}


def _tick_axis() -> dict[str, Any]:
    return {
        "field": "tick",
        "type": "quantitative",
        "title": "tick (round)",
        "axis": {"format": "d", "values": _tick_values("0", "tmax")},
        "scale": {"domain": [0, {"expr": "tmax"}], "nice": False},
    }


def _count_axis(scale: str = "y") -> dict[str, Any]:
    """An axis of whole numbers: 0 to the top of ``scale``'s domain in steps of 1, 2 or 5
    times a power of ten, at most about six of them (Vega's ``tickMinStep`` still puts ticks at 0.5 on a domain [0, 2])."""
    top = f"floor(domain('{scale}')[1])"
    raw = f"max(1, ceil({top} / 6))"
    power = f"pow(10, floor(log({raw}) / LN10))"
    f = f"({raw} / {power})"
    step = f"({power} * ({f} <= 1 ? 1 : {f} <= 2 ? 2 : {f} <= 5 ? 5 : 10))"
    return {"format": "d", "values": {"expr": f"sequence(0, {top} + 1, {step})"}}


def _y(title: str, kind: str) -> dict[str, Any]:
    y: dict[str, Any] = {"field": "value", "type": "quantitative", "title": title}
    if kind == "share":
        y["scale"] = {"domain": [0, 1]}
    elif kind == "count":
        y["axis"] = _count_axis()
    return y


def _pick(values: list[Any], domain: list[str]) -> str:
    """A Vega expression: ``values[i]`` for the legend entry ``domain[i]``."""
    return f"{json.dumps(values)}[indexof({json.dumps(domain)}, datum.value)]"


def line_spec(
    name: str,
    title: str,
    subtitle: str,
    y_title: str,
    measures: list[str],
    policies: list[str],
    kind: str = "share",
    layers: list[dict[str, Any]] | None = None,
    outcome_colours: list[str] | None = None,
) -> dict[str, Any]:
    """Lines over ticks from dataset ``main`` (rows tick, series, policy, value).

    ``measures`` are the series labels; ``kind`` is ``share`` (axis 0 to 1), ``count``
    (integer axis) or ``value`` (from 0). The colour is the policy's (:func:`policy_styles`)
    and the dash the measure's, or the policy's own where the chart has one measure. With
    ``outcome_colours`` (one per measure: lines of outcomes) the colour is the outcome and
    the dash the policy's."""
    styles = policy_styles(policies)
    colours = [styles[p][0] for p in policies]
    dashes = [styles[p][1] for p in policies]
    several = len(policies) > 1
    measure_legend = {**LINE_LEGEND, "columns": 1 if several else 2} if len(measures) > 1 else None
    policy_legend = {**LINE_LEGEND, "columns": 1} if several else None
    by_measure = {"field": "series", "type": "nominal", "title": "measure", "sort": measures}
    by_policy = {"field": "policy", "type": "nominal", "title": "policy", "sort": policies}
    if outcome_colours is not None:
        colour = {
            **by_measure,
            "legend": measure_legend,
            "scale": {"domain": measures, "range": outcome_colours},
        }
        legend = None
        if policy_legend:  # each policy's swatch: its dash in its own colour
            legend = {
                **policy_legend,
                "encode": {
                    "symbols": {
                        "update": {
                            "stroke": {"signal": _pick(colours, policies)},
                            "strokeWidth": {"value": 2},
                        }
                    }
                },
            }
        dash = {**by_policy, "legend": legend, "scale": {"domain": policies, "range": dashes}}
    else:
        colour = {
            **by_policy,
            "legend": policy_legend,
            "scale": {"domain": policies, "range": colours},
        }
        if len(measures) == 1:
            dash = {
                **by_policy,
                "legend": policy_legend,
                "scale": {"domain": policies, "range": dashes},
            }
        else:
            legend = None
            if measure_legend:
                legend = {
                    **measure_legend,
                    "encode": {"symbols": {"update": {"stroke": {"value": MEASURE_STROKE}}}},
                }
            dash = {
                **by_measure,
                "legend": legend,
                "scale": {"domain": measures, "range": SERIES_DASH[: len(measures)]},
            }
    encoding: dict[str, Any] = {
        "x": _tick_axis(),
        "y": _y(y_title, kind),
        "color": colour,
        "strokeDash": dash,
        "detail": {"field": "policy"},
        "tooltip": [
            {"field": "series", "title": "measure"},
            {"field": "policy"},
            {"field": "tick"},
            {"field": "value", "format": ".3f"},
        ],
    }
    if len(measures) > 1:
        # equal values are common (the threshold policy aims exactly at the threshold):
        # wider lines first, so that lines drawn over each other stay visible
        encoding["strokeWidth"] = {
            **by_measure,
            "legend": None,
            "scale": {"domain": measures, "range": SERIES_WIDTH[: len(measures)]},
        }
    line = {
        "data": {"name": "main"},
        "mark": {"type": "line", "point": {"size": 16, "filled": True}},
        "encoding": encoding,
    }
    spec = _spec(name, title, subtitle, {"layer": [line, *(layers or [])]})
    if (
        several
        and len(measures) > 1
        and max(map(len, measures)) + max(map(len, policies)) > (LEGENDS_SIDE_BY_SIDE_CHARS)
    ):
        # Vega's legend layout (Vega-Lite passes it through): the policy legend goes
        # under the measures instead of being cut off at the chart's right edge
        spec["config"]["legend"]["layout"] = {
            "bottom": {"direction": "vertical", "anchor": "start"}
        }
    return spec


def _series_chart(
    name: str,
    title: str,
    subtitle: str,
    y_title: str,
    columns: dict[str, str],
    policies: list[str],
    kind: str = "share",
    outcome_colours: list[str] | None = None,
) -> Chart:
    """A :func:`line_spec` chart of tick-table ``columns`` {column: label}."""
    spec = line_spec(
        name,
        title,
        subtitle,
        y_title,
        list(columns.values()),
        policies,
        kind,
        outcome_colours=outcome_colours,
    )
    return Chart(name, spec, lambda runs, t: {"main": data.series(runs, t, columns)})


# -- the core charts -------------------------------------------------------------------------
def rr_rf(policies: list[str]) -> Chart:
    return _series_chart(
        "reliability",
        "Does advice work?",
        "RR: of those who made every recommended change, the share accepted. "
        "RF: of the recently rejected, the share who made every change.",
        SHARE,
        {"rr": "RR reliability", "rf": "RF feasibility"},
        policies,
    )


def goals(policies: list[str]) -> Chart:
    return _series_chart(
        "goals",
        "Threshold and goal scores",
        "The threshold is the lowest accepted score; goals are what advice aimed for.",
        "score M(x) (0 to 1)",
        {
            "threshold": "threshold",
            "mean_goal": "goal given (mean)",
            "mean_cf_score": "score after the changes (mean)",
        },
        policies,
    )


POOL_COLUMNS = {
    "n_applicants": ("applied", REFERENCE),
    "n_accepted": ("accepted", OUTCOME_COLOURS["accepted"]),
    "n_rejected": ("rejected", OUTCOME_COLOURS["rejected"]),
    "n_dropped": ("dropped (gave up)", OUTCOME_COLOURS["dropped"]),
    "n_waiting": ("waiting", OUTCOME_COLOURS["waiting"]),
}


POOL_MANY = ("n_dropped", "n_waiting")  # what "Who applies" keeps beside 3 or 4 policies
POOL_MANY_FROM = 3  # from this many policies side by side


def pool(policies: list[str]) -> Chart:
    """Applicants per tick by outcome: the colour is the outcome, the dash the policy.
    Beside :data:`POOL_MANY_FROM` or more policies only :data:`POOL_MANY` are drawn (five
    outcomes times four policies made 20 lines; the places k bound "accepted" alike)."""
    columns = POOL_COLUMNS
    subtitle = (
        "Per tick: applicants, accepted, rejected (incl. dropped), dropped, and waiting "
        "to try again after the tick."
    )
    if len(policies) >= POOL_MANY_FROM:
        columns = {col: POOL_COLUMNS[col] for col in POOL_MANY}
        subtitle = (
            "Per tick: those who gave up, and those waiting to try again after the tick "
            "(with this many policies the other outcomes are left out: see the CSV)."
        )
    return _series_chart(
        "pool",
        "Who applies, and what happens to them",
        subtitle,
        COUNT,
        {col: label for col, (label, _) in columns.items()},
        policies,
        kind="count",
        outcome_colours=[c for _, c in columns.values()],
    )


def _decision_scale() -> dict[str, Any]:
    return {
        "field": "decision",
        "type": "nominal",
        "title": "decision",
        "scale": {
            "domain": ["accepted", "rejected"],
            "range": [OUTCOME_COLOURS["accepted"], OUTCOME_COLOURS["rejected"]],
        },
    }


def score_histogram(policy: str) -> Chart:
    """Tick t's applicants by score and decision, in bins with an edge at the threshold
    (a bar never mixes scores below it with scores at or above it), a mark per applicant
    under the bars, and the threshold as a dashed rule."""
    bars = {
        "data": {"name": "main"},
        "mark": {"type": "bar", "opacity": 0.9, "binSpacing": 1},
        "encoding": {
            "x": {
                "field": "lo",
                "type": "quantitative",
                "title": "score M(x) (0 to 1)",
                "scale": {"domain": [0, 1]},
            },
            "x2": {"field": "hi"},
            "y": {
                "field": "y1",
                "type": "quantitative",
                "title": COUNT,
                "axis": _count_axis(),
            },
            "y2": {"field": "y0"},
            "color": _decision_scale(),
            "tooltip": [
                {"field": "decision"},
                {"field": "count", "title": "applicants"},
                {"field": "lo", "title": "score from", "format": ".3f"},
                {"field": "hi", "title": "to", "format": ".3f"},
            ],
        },
    }
    each = {
        "data": {"name": "each"},
        "mark": {"type": "tick", "thickness": 2, "size": 10, "opacity": 0.8},
        "encoding": {
            "x": {"field": "score", "type": "quantitative"},
            "y": {"value": HEIGHT + 6},
            "color": {**_decision_scale(), "legend": None},
            "tooltip": [{"field": "score", "format": ".4f"}, {"field": "decision"}],
        },
    }
    rule = {
        "data": {"name": "threshold"},
        "mark": {"type": "rule", "color": REFERENCE, "strokeDash": [5, 3], "size": 2},
        "encoding": {
            "x": {"field": "threshold", "type": "quantitative"},
            "tooltip": [{"field": "threshold", "format": ".4f"}],
        },
    }
    spec = _spec(
        "scores",
        "Scores this tick",
        f"Applicants of the tick shown ({policy}); dashed: the threshold, an edge of "
        "the bars. Each applicant is a mark under the axis.",
        {"layer": [bars, rule, each]},
    )
    spec["title"]["text"] = {
        "expr": "tick < 0 ? 'Scores (no tick run yet)' : 'Scores at tick ' + tick"
    }

    def datasets(runs: list[Run], t: int) -> dict[str, Columns]:
        threshold = data.threshold_at(runs[0], t)
        return {
            "main": data.score_bins(runs[0], t),
            "each": data.scores(runs[0], t),
            "threshold": {"threshold": [] if threshold is None else [threshold]},
        }

    return Chart("scores", spec, datasets)


def applicant_scatter(policy: str) -> Chart:
    """Applications of the last :data:`WINDOW` ticks, coloured by outcome, the accepted
    on top; at most :data:`PER_TICK` a tick (every accepted one), with a note saying so;
    click a point to follow that applicant."""
    outcome = {
        "field": "outcome",
        "type": "nominal",
        "title": "outcome",
        "scale": {
            "domain": ["accepted", "rejected", "dropped"],
            "range": [OUTCOME_COLOURS[k] for k in ("accepted", "rejected", "dropped")],
        },
    }
    x_scale = {
        "domain": [{"expr": f"max(0, tick - {WINDOW - 1}) - 0.5"}, {"expr": "tick + 0.5"}],
        "nice": False,
        "zero": False,
    }
    points = {
        "data": {"name": "main"},
        "mark": {"type": "circle", "size": 34, "opacity": 0.8, "cursor": "pointer"},
        "encoding": {
            "x": {
                "field": "x",
                "type": "quantitative",
                "title": "tick (round)",
                "scale": x_scale,
                "axis": {
                    "format": "d",
                    "values": _tick_values(f"max(0, tick - {WINDOW - 1})", "tick"),
                },
            },
            "y": {
                "field": "score",
                "type": "quantitative",
                "title": "score M(x) (0 to 1)",
                "scale": {"domain": [0, 1]},
            },
            "color": outcome,
            "order": {"field": "z", "type": "quantitative"},
            "tooltip": [
                {"field": "id", "title": "applicant"},
                {"field": "tick"},
                {"field": "score", "format": ".3f"},
                {"field": "outcome"},
            ],
        },
    }
    line = {
        "data": {"name": "threshold"},
        "mark": {"type": "line", "color": REFERENCE, "strokeDash": [5, 3], "clip": True},
        "encoding": {
            "x": {"field": "tick", "type": "quantitative", "scale": x_scale},
            "y": {"field": "threshold", "type": "quantitative"},
        },
    }
    note = {
        "data": {"name": "note"},
        "mark": {
            "type": "text",
            "align": "left",
            "baseline": "top",
            "fontSize": 10,
            "color": "#555",
            "x": 4,
            "y": 4,
        },
        "encoding": {"text": {"field": "text"}},
    }
    spec = _spec(
        "applicants",
        "Every application, by tick",
        f"Last {WINDOW} ticks ({policy}); dashed: the threshold; accepted drawn on "
        "top. Click a point to follow that applicant.",
        {"layer": [points, line, note]},
    )

    def datasets(runs: list[Run], t: int) -> dict[str, Columns]:
        return {
            "main": data.applications(runs[0], t, WINDOW, PER_TICK),
            "threshold": data.thresholds(runs[0], t, WINDOW),
            "note": data.application_note(runs[0], t, WINDOW, PER_TICK),
        }

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
    by side), opacity the part of the stack (``kinds``, first solid); both legends show
    squares like the bars (the parts' in the policy's colour, or grey side by side)."""
    styles = policy_styles(policies)
    swatch = styles[policies[0]][0] if len(policies) == 1 else MEASURE_STROKE
    square = {"symbolType": "square", "symbolSize": 150, "symbolStrokeWidth": 0}
    enc: dict[str, Any] = {
        "x": {
            "field": "feature",
            "type": "nominal",
            "title": "feature",
            "sort": None,
            "axis": {"labelAngle": 0},
        },
        "y": {"field": "value", "type": "quantitative", "title": y_title, "stack": True},
        "color": {
            "field": "policy",
            "type": "nominal",
            "title": "policy",
            "scale": {"domain": policies, "range": [styles[p][0] for p in policies]},
            "legend": {**square, "columns": 1} if len(policies) > 1 else None,
        },
        "opacity": {
            "field": kind_field,
            "type": "nominal",
            "title": None,
            "scale": {"domain": kinds, "range": [1.0, 0.4]},
            "sort": kinds,
            "legend": {
                **square,
                "symbolFillColor": swatch,
                "encode": {
                    "symbols": {
                        "update": {
                            "fill": {"value": swatch},
                            "opacity": {"signal": _pick([1.0, 0.4], kinds)},
                        }
                    }
                },
            },
        },
        "order": {"field": "order", "type": "quantitative"},
        "tooltip": tooltip,
    }
    if len(policies) > 1:
        enc["xOffset"] = {"field": "policy", "type": "nominal", "sort": policies}
    return _spec(
        name,
        title,
        subtitle,
        {
            "data": {"name": "main"},
            "mark": {"type": "bar"},
            "encoding": enc,
            "transform": [{"calculate": f"indexof({kinds!r}, datum.{kind_field})", "as": "order"}],
        },
    )


def effort(policies: list[str], model: DashboardModel) -> Chart:
    kinds = ["spent", "planned, failed"]
    spec = _bars_by_policy(
        "effort",
        "Effort per feature so far",
        "Σ |change| × difficulty: solid for changes made, faded for changes tried that failed.",
        "effort (Σ |Δx| · d)",
        kinds,
        policies,
        "effort",
        [
            {"field": "feature"},
            {"field": "policy"},
            {"field": "effort"},
            {"field": "value", "format": ".3f", "title": "effort"},
            {"field": "difficulty"},
            {"field": "asked", "title": "times advised"},
        ],
    )
    difficulty = model.difficulty
    return Chart("effort", spec, lambda runs, t: {"main": data.effort(runs, t, difficulty)})


# -- the world extensions: a chart only while its mechanism is on -----------------------------
def true_outcomes(policies: list[str]) -> Chart:
    return _series_chart(
        "true-outcomes",
        "True outcomes (hidden from the model)",
        "Per tick. p* is the true chance of a good outcome; the model never sees it.",
        SHARE,
        {
            "improvement_rate": "advice that truly qualifies",
            "tp_rate": "revealed outcomes that were good",
            "mean_p_true_accepted": "p* of the accepted (mean)",
        },
        policies,
    )


# outcome-card figures over the run so far: label -> (numerator, denominator, card name)
TRUE_GAIN = {
    "true gain Δh* per advice carried out": ("true_gain_sum", "n_implemented", "true_gain")
}
QUALIFIED = {
    "acceptances that truly qualify": ("n_qualified_accepted", "n_accepted", "qualified_rate"),
    "advised change on proxies (non-causal)": (
        "noncausal_change",
        "advised_change",
        "noncausal_share",
    ),
}


def true_gain(policies: list[str]) -> Chart:
    """The outcome card's true gain (``true_gain``) as it stood after each tick."""
    spec = line_spec(
        "true-gain",
        "Does advice make people better? (outcome card)",
        "Mean gain in the true qualification h*(x) of advice carried out in full, over the "
        "run so far. No advice (none): no line.",
        "gain in h*(x) (so far)",
        list(TRUE_GAIN),
        policies,
        "value",
    )
    return Chart(
        "true-gain", spec, lambda runs, t: {"main": data.running_share(runs, t, TRUE_GAIN)}
    )


def qualified(policies: list[str]) -> Chart:
    """The outcome card's ``qualified_rate`` and ``noncausal_share`` after each tick."""
    spec = line_spec(
        "qualified",
        "Who is accepted, and what was advised (outcome card)",
        "Over the run so far: the share of acceptances with h*(x) ≥ 1/2 (compare with "
        "none, no advice), and the share of advised change on proxy features.",
        SHARE,
        list(QUALIFIED),
        policies,
    )
    return Chart(
        "qualified", spec, lambda runs, t: {"main": data.running_share(runs, t, QUALIFIED)}
    )


def validity(policies: list[str]) -> Chart:
    # the card's two scales (abm/card.py): the threshold of the tick the advice was
    # issued, the same for every policy, and the goal the policy set itself
    columns = {"valid_threshold": "clears its issue threshold", "validity": "reaches its own goal"}
    rules = {
        "data": {"name": "refits"},
        "mark": {"type": "rule", "color": "#555", "strokeDash": [2, 2]},
        "encoding": {
            "x": {"field": "tick", "type": "quantitative"},
            "tooltip": [
                {"field": "tick", "title": "refit at tick"},
                {"field": "version", "title": "model version"},
            ],
        },
    }
    labels = {
        "data": {"name": "refits"},
        "mark": {"type": "text", "align": "right", "dx": -3, "fontSize": 10, "color": "#555"},
        "encoding": {
            "x": {"field": "tick", "type": "quantitative"},
            "y": {"value": 8},
            "text": {"field": "label"},
        },
    }
    spec = line_spec(
        "validity",
        "Retraining: is outstanding advice still valid?",
        "Share of waiting advised applicants whose advice, scored by the model in force, "
        "still clears the threshold of the tick it was given (one scale for every policy), "
        "and still reaches the goal its policy set. Dotted lines: the model was refitted.",
        SHARE,
        list(columns.values()),
        policies,
        "share",
        [rules, labels],
    )

    def datasets(runs: list[Run], t: int) -> dict[str, Columns]:
        refits = data.refit_ticks(runs[0], t)
        refits["label"] = [f"refit (v{v})" for v in refits["version"]]
        return {"main": data.series(runs, t, columns), "refits": refits}

    return Chart("validity", spec, datasets)


def group_rates(policies: list[str], n_groups: int) -> Chart:
    columns = {f"accept_rate_g{g}": f"group {g}: accepted" for g in range(n_groups)}
    columns["dp_gap"] = "gap between groups (DP)"
    return _series_chart(
        "groups",
        "Groups: who gets accepted?",
        "Share of each group's applicants accepted per tick, and the largest gap "
        "between groups (demographic parity gap).",
        SHARE,
        columns,
        policies,
    )


def group_distance(policies: list[str]) -> Chart:
    return _series_chart(
        "group-distance",
        "Groups: how far apart are they?",
        "Wasserstein distance W1 between the groups' true features in the pool after the tick.",
        "W1 distance (feature units)",
        {"w_dist": "distance between groups"},
        policies,
        kind="value",
    )


def causal(policies: list[str], z: int) -> Chart:
    kinds = ["made", "caused by the graph"]
    spec = _bars_by_policy(
        "causal",
        "Causal graph: changes made and changes caused",
        "Σ |change| per feature so far: solid what applicants changed, faded what the "
        "causal graph moved in turn.",
        "total change (Σ |Δx|)",
        kinds,
        policies,
        "change",
        [
            {"field": "feature"},
            {"field": "policy"},
            {"field": "change"},
            {"field": "value", "format": ".3f", "title": "Σ |Δx|"},
        ],
    )
    return Chart("causal", spec, lambda runs, t: {"main": data.causal_changes(runs, t, z)})


def budget(policies: list[str]) -> Chart:
    return _series_chart(
        "budget",
        "Budget for advice",
        "Advice costs its total feature change (L1); spent per tick and what is left.",
        "budget (Σ |Δx|)",
        {"budget_spent": "spent", "budget_left": "left"},
        policies,
        kind="value",
    )


def charts(
    model: DashboardModel, whose: int = 0, only: tuple[str, ...] | None = None
) -> list[Chart]:
    """The charts of this model: the core six, then those of the world extensions on
    (only those named in ``only``, when given: a lesson's own). The score histogram and
    the scatter show the applicants of policy number ``whose`` (0: the first)."""
    policies = model.settings.policies
    mine = policies[whose]
    out = [
        rr_rf(policies),
        score_histogram(mine),
        goals(policies),
        applicant_scatter(mine),
        pool(policies),
        effort(policies, model),
    ]
    assert len(out) == N_CORE
    extensions = extension_charts(model, policies)
    if only is not None:
        extensions = [c for c in extensions if c.name in only]
    return out + extensions


def extension_charts(model: DashboardModel, policies: list[str]) -> list[Chart]:
    """Charts of the world extensions switched on (none for the paper's setting)."""
    on = model.config.mechanisms
    out = []
    if "outcomes" in on:
        out += [true_gain(policies), qualified(policies), true_outcomes(policies)]
    if "retraining" in on:
        out.append(validity(policies))
    if "groups" in on:
        out += [group_rates(policies, model.config.n_groups), group_distance(policies)]
    if "causal" in on:
        out.append(causal(policies, model.config.n_features))
    if "budget" in on:
        out.append(budget(policies))
    if model.config.capacity_on:  # a schedule of k and m (abm.mechanisms.capacity)
        out.append(capacity(policies))
    return out


def capacity(policies: list[str]) -> Chart:
    """k_t and m_t of a capacity schedule, with the accepted, per tick."""
    return _series_chart(
        "capacity",
        "Places and newcomers per tick",
        "Per tick: the places open (k), the newcomers who arrive (m) and the applicants "
        "accepted. A schedule changes k and m over time.",
        "per tick (count)",
        {"k": "places k", "m": "newcomers m", "n_accepted": "accepted"},
        policies,
        kind="count",
    )


def payload(
    chart: Chart, all_runs: list[Run], t: int, frame: int, epoch: int = 0
) -> dict[str, Any]:
    """What the browser gets for one frame of ``chart``; ``epoch`` names the model (keyed
    rows of one model are never compared with another's)."""
    out = {
        "frame": frame,
        "epoch": epoch,
        "data": chart.datasets(all_runs, t),
        "signals": signals(t),
    }
    if chart.keys:
        out["keys"] = chart.keys
    return out


def to_json(obj: Any) -> str:
    """Compact JSON text; NaN is refused (the browser's JSON has none)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def applicant_chart(history: Columns, cid: int, colour: str) -> dict[str, Any]:
    """One applicant's score per application against that tick's threshold (dataset
    ``main``: the columns of :func:`~dashboards.data.applicant_history`), the line in
    the colour of the policy whose run it is."""
    outcome = {
        "field": "outcome",
        "type": "nominal",
        "title": "outcome",
        "scale": {
            "domain": ["accepted", "rejected", "dropped"],
            "range": [OUTCOME_COLOURS[k] for k in ("accepted", "rejected", "dropped")],
        },
    }
    ticks = history.get("tick") or [0]
    lo, hi = min(ticks), max(ticks)
    step = max(1, (hi - lo) // 10 + 1)
    x = {
        "field": "tick",
        "type": "quantitative",
        "title": "tick (round)",
        "axis": {"format": "d", "values": list(range(lo, hi + 1, step))},
        "scale": {"domain": [lo - 0.5, hi + 0.5], "nice": False, "zero": False},
    }
    layers = [
        {
            "mark": {"type": "line", "color": REFERENCE, "strokeDash": [5, 3], "point": False},
            "encoding": {
                "x": x,
                "y": {
                    "field": "threshold",
                    "type": "quantitative",
                    "title": "score M(x) (0 to 1)",
                    "scale": {"domain": [0, 1]},
                },
            },
        },
        {
            "mark": {"type": "line", "color": colour},
            "encoding": {"x": x, "y": {"field": "score", "type": "quantitative"}},
        },
        {
            "mark": {"type": "point", "filled": True, "size": 70},
            "encoding": {
                "x": x,
                "y": {"field": "score", "type": "quantitative"},
                "color": outcome,
                "tooltip": [
                    {"field": "tick"},
                    {"field": "score"},
                    {"field": "threshold"},
                    {"field": "outcome"},
                ],
            },
        },
        {
            "mark": {
                "type": "point",
                "shape": "triangle-up",
                "size": 60,
                "color": REFERENCE,
                "filled": False,
            },
            "encoding": {
                "x": x,
                "y": {"field": "achieved", "type": "quantitative"},
                "tooltip": [
                    {"field": "tick"},
                    {"field": "achieved", "title": "score after the changes"},
                ],
            },
        },
    ]
    spec = _spec(
        f"applicant-{cid}",
        f"Applicant {cid}: score per application",
        "Dots: score when applying (outcome colour); dashed: that tick's threshold; "
        "open triangles: score after the changes made.",
        {"layer": layers},
    )
    spec["height"] = 160
    spec["data"] = {"name": "main"}
    return spec


def forecast_chart(colour: str) -> dict[str, Any]:
    """The forecast of one applicant (datasets of :func:`dashboards.forecast.chart_data`):
    the share of futures accepted within h ticks, following the advice (solid) and not
    (dashed), in the colour of the policy whose run it is; a band per arm from its 10 %
    to its 90 % quantile with the median as a rule (a bound past the horizon at its end)."""
    from dashboards.forecast import ARMS, HORIZON

    arm = {
        "field": "arm",
        "type": "nominal",
        "title": None,
        "sort": list(ARMS),
        "scale": {"domain": list(ARMS), "range": [[1, 0], [8, 4]]},
        "legend": {
            **LINE_LEGEND,
            "columns": 1,
            "orient": "bottom",
            "encode": {"symbols": {"update": {"stroke": {"value": colour}}}},
        },
    }
    x = {
        "field": "ahead",
        "type": "quantitative",
        "title": "ticks from now",
        "scale": {"domain": [0, HORIZON + 0.5], "nice": False},
        "axis": {"format": "d", "values": list(range(0, HORIZON + 1, 2))},
    }
    band = {
        "data": {"name": "band"},
        "mark": {"type": "rect", "opacity": 0.12, "color": colour},
        "encoding": {
            "x": {**x, "field": "lo"},
            "x2": {"field": "hi"},
            "y": {"value": 0},
            "y2": {"value": HEIGHT - 60},
            "tooltip": [
                {"field": "arm"},
                {"field": "lo", "title": "10 %"},
                {"field": "median"},
                {"field": "hi", "title": "90 %"},
            ],
        },
    }
    median = {
        "data": {"name": "band"},
        "mark": {"type": "rule", "color": colour, "size": 2},
        "encoding": {
            "x": {**x, "field": "median"},
            # the same legend as the lines': Vega-Lite merges equal legends into one and
            # drops both when they differ (the forecast had none)
            "strokeDash": arm,
            "y": {"value": 0},
            "y2": {"value": HEIGHT - 60},
        },
    }
    lines = {
        "data": {"name": "main"},
        "mark": {"type": "line", "interpolate": "step-after", "color": colour, "strokeWidth": 2.5},
        "encoding": {
            "x": x,
            "strokeDash": arm,
            "y": {
                "field": "share",
                "type": "quantitative",
                "scale": {"domain": [0, 1]},
                "title": "share of futures accepted by then",
            },
            "tooltip": [
                {"field": "arm"},
                {"field": "ahead", "title": "within ticks"},
                {"field": "share", "format": ".0%"},
            ],
        },
    }
    spec = _spec(
        "forecast",
        "When will I be accepted?",
        "Share of futures in which the applicant is accepted within so many ticks. "
        "Shaded: from the 10 % to the 90 % quantile; rule: the median.",
        {"layer": [band, median, lines]},
    )
    spec["height"] = HEIGHT - 60
    return spec
