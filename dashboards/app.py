"""The recourse-abm dashboard: ``solara run dashboards/app.py`` (or ``recourse-abm dashboard``).

Built on Mesa's SolaraViz, which supplies the page frame and the play / step / reset
controls (Mesa's ModelController; Reset rebuilds the model from ``model_params``). This
module adds the scenario sidebar (Mesa ``Slider`` / ``UserInputs``, validated like the
CLI), classroom demonstrations, the charts, the agent view and the side-by-side mode.

All views are drawn by one component that subscribes once to Mesa's ``update_counter``:
every subscriber costs Solara a separate render pass per step, so one subscriber keeps a
step at N₀ = 1,000 well under 200 ms (see ``dashboards/benchmark.py``).

Every browser session builds its own model inside :func:`Page`; nothing model-related
lives at module level.
"""

from __future__ import annotations

import os
from typing import Any

# reacton's opt-in tree walk that skips unchanged subtrees (read when a session's render
# context is created, so setting it here covers every session): ~40% faster steps
os.environ.setdefault("REACTON_FAST", "1")

import solara  # noqa: E402
from mesa.visualization import Slider, SolaraViz  # noqa: E402
from mesa.visualization.solara_viz import UserInputs  # noqa: E402
from mesa.visualization.utils import update_counter  # noqa: E402

from abm.registry import REGISTRY  # noqa: E402
from abm.validation import ConfigError  # noqa: E402
from dashboards import charts  # noqa: E402
from dashboards.demos import available_demos  # noqa: E402
from dashboards.settings import (  # noqa: E402
    SLIDERS,
    TEXT_FIELDS,
    DashboardModel,
    Settings,
    check_policy,
    current_candidates,
    dashboard_presets,
)

FREE = "free exploration"
OFF = "off"
PLAY_INTERVAL_MS = 150

# SolaraViz's "Model Parameters" card stays empty (the Scenario card edits the model and
# Reset reads the settings from model_params): hide a card whose only content is empty
CSS = """
.v-card:has(> .v-card__text > .v-sheet:only-child:empty) { display: none; }
.rabm-chart { width: 100%; min-height: 250px; }
"""

TABLE_HEADERS = [
    {"text": "id", "value": "id"},
    {"text": "app. #", "value": "application"},
    {"text": "score", "value": "score"},
    {"text": "status", "value": "status"},
    {"text": "goal g", "value": "goal"},
    {"text": "M(x_cf)", "value": "cf_score"},
    {"text": "advice Δx", "value": "advice", "sortable": False},
    {"text": "outcome", "value": "outcome"},
]


def chart(spec: dict[str, Any]):
    """A Vega-Lite chart element (Solara's VegaLite widget, as solara.FigureAltair uses)."""
    with solara.Div(classes=["rabm-chart"]) as div:
        solara.widgets.VegaLite.element(spec=spec, listen_to_click=False, listen_to_hover=False)
    return div


def candidate_table(model: DashboardModel) -> None:
    df = current_candidates(model)
    items = df.astype(object).where(df.notna(), None).to_dict("records")
    tick = model.tick - 1 if model.tick else "–"
    solara.Markdown(f"**applicants at tick {tick}** ({len(items)}) — click a column header to sort")
    solara.v.DataTable(
        headers=TABLE_HEADERS,
        items=items,
        item_key="id",
        dense=True,
        items_per_page=10,
        footer_props={"items-per-page-options": [10, 50, -1]},
        class_="rabm-table",
    )


def status_text(model: DashboardModel) -> str:
    s = model.settings
    compare = f" vs **{s.compare}**" if s.compare else ""
    done = "" if model.running else " · episode finished (Reset starts again)"
    return (
        f"**tick {model.tick} of {model.config.ticks}** · scenario **{s.preset}** · "
        f"policy **{s.policy}**{compare} · seed {model.config.seed}{done}"
    )


@solara.component
def Views(model: DashboardModel):
    """Status line, charts, side-by-side comparison and the candidate table."""
    update_counter.get()  # the one subscriber: redraw after every Step / Play tick / Reset
    with solara.Div(classes=["rabm-status"], style={"padding": "0 12px"}):
        solara.Markdown(status_text(model))
    with solara.ColumnsResponsive(12, large=6):
        chart(charts.rr_rf(model))
        chart(charts.score_histogram(model))
        chart(charts.threshold_goals(model))
        chart(charts.agent_scatter(model))
        chart(charts.pool(model))
        chart(charts.effort_chart(model))
    with solara.ColumnsResponsive(12, large=[6, 6]):
        if model.twin is None:
            solara.Info(
                "Side by side: choose a second policy under 'compare with' in the sidebar. "
                "Both run on the same seed, so they see identical arrivals."
            )
        else:
            chart(charts.comparison_chart(model))
        with solara.Column():
            candidate_table(model)


@solara.component
def ScenarioInputs(draft: Settings, on_change, policies: list[str]):
    """Mesa UserInputs whose values follow ``draft`` (specs are rebuilt on every render)."""
    specs: dict = {
        "preset": {"type": "Select", "label": "scenario preset", "value": draft.preset,
                   "values": dashboard_presets()},
        "policy": {"type": "Select", "label": "policy", "value": draft.policy, "values": policies},
        "compare": {"type": "Select", "label": "compare with (same seed)",
                    "value": draft.compare or OFF, "values": [OFF, *policies]},
    }  # fmt: skip
    for name, (label, _, _) in SLIDERS.items():
        lo, hi = draft.slider_range(name)
        value = getattr(draft, name)
        specs[name] = Slider(f"{label} = {value}", value=value, min=lo, max=hi, step=1, dtype=int)
    for name, label in TEXT_FIELDS.items():
        specs[name] = {"type": "InputText", "label": label, "value": getattr(draft, name)}
    UserInputs(specs, on_change=on_change)


@solara.component
def SidebarCards(draft, error, demos, policies, on_input, on_demo):
    demo = demos.get(draft.demo)
    with solara.Sidebar():
        with solara.Card("Demonstrations"):
            solara.Select(
                label="classroom demonstration",
                value=demo.title if demo else FREE,
                values=[FREE, *(d.title for d in demos.values())],
                on_value=on_demo,
            )
            if demo is not None:
                solara.Markdown(demo.explanation)
        with solara.Card("Scenario"):
            solara.Text("Changing a setting restarts the run at tick 0.")
            if error:
                solara.Error(f"Not applied: {error}", classes=["rabm-error"])
            ScenarioInputs(draft, on_input, policies)


@solara.component
def Deeper(children=[]):  # noqa: B006 (solara's children convention)
    # the sidebar orders content by component depth: one level below SolaraViz puts the
    # scenario cards after Mesa's Controls card
    return solara.Div(children=children)


@solara.component
def Page():
    demos = available_demos()
    policies = list(REGISTRY.describe("policy"))
    initial = solara.use_memo(Settings.from_preset, [])
    draft = solara.use_reactive(initial)  # what the inputs show (may be invalid)
    valid = solara.use_reactive(initial)  # what the model was built from
    error = solara.use_reactive(None)
    generation = solara.use_reactive(0)
    # built once per browser session: no model is shared between sessions
    first_model = solara.use_memo(lambda: DashboardModel(initial), [])
    model = solara.use_reactive(first_model)

    def apply(new: Settings) -> None:
        draft.set(new)
        try:
            check_policy(new.policy)
            built = DashboardModel(new)
        except (ConfigError, ValueError) as exc:
            error.set(str(exc))  # the CLI's message; the current model keeps running
            return
        error.set(None)
        valid.set(new)
        model.set(built)
        generation.set(generation.value + 1)

    def on_input(name: str, value) -> None:
        d = draft.value
        if name == "preset":
            apply(Settings.from_preset(value, policy=d.policy, compare=d.compare))
        elif name == "compare":
            apply(d.replace(compare="" if value == OFF else value))
        else:
            apply(d.replace(**{name: value}))

    def on_demo(title: str) -> None:
        chosen = [d for d in demos.values() if d.title == title]
        apply(Settings.from_demo(chosen[0]) if chosen else Settings.from_preset(draft.value.preset))

    solara.Style(CSS)
    with solara.Column(gap="0px"):
        # keyed on the settings generation: new settings give fresh controls (stopped, tick 0)
        SolaraViz(
            model,
            components=[],
            model_params={"settings": valid.value},  # Mesa's Reset rebuilds from these
            name="recourse-abm",
            play_interval=PLAY_INTERVAL_MS,
        ).key(f"viz-{generation.value}")
        with Deeper():
            with Deeper():
                SidebarCards(draft.value, error.value, demos, policies, on_input, on_demo)
        Views(model.value)
