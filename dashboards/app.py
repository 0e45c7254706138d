"""The recourse-abm dashboard: ``recourse-abm dashboard`` (or ``solara run dashboards/app.py``).

A Solara page around a Mesa model (:class:`~dashboards.settings.DashboardModel`, a
``RecourseModel``): run controls (Reset, Play/Pause, Step, speed), classroom
demonstrations, the scenario sidebar, the charts (:mod:`dashboards.charts`), a replay
slider, the applicant table with an agent view, CSV/PNG export and the CLI command that
reproduces the run. The page draws its own controls rather than Mesa's SolaraViz frame:
that frame rebuilt the model from an invalid default on Reset, kept Step disabled after a
finished run when the model was swapped, and showed its internal settings to students.

Every input is checked on the server (:meth:`Settings.with_input` and the handlers
below): whatever a client sends, a bad value gives a one-line message on the page and the
current run goes on. Every browser session builds its own model inside :func:`Page`.

Play advances the model at the chosen rate from a worker thread and draws a frame only
when the browser has drawn the previous one (each chart reports the frame it drew): when
drawing is fast every tick is drawn, otherwise frames are skipped, never queued.

A new model is built on a worker thread too. Most build in well under a second and appear
as if built in the handler; a policy that trains when prepared (``scarf``: 15-20 s) shows
"preparing …" while the sidebar stays usable, and a newer choice supersedes it.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

# reacton's opt-in tree walk that skips unchanged subtrees (read when a session's render
# context is created, so setting it here covers every session)
os.environ.setdefault("REACTON_FAST", "1")

import pandas as pd  # noqa: E402
import solara  # noqa: E402
import solara.server.settings  # noqa: E402

from abm.validation import ConfigError, interval, problem  # noqa: E402
from dashboards import charts, data  # noqa: E402
from dashboards.demos import available_demos  # noqa: E402
from dashboards.settings import (  # noqa: E402
    OFF,
    SLIDERS,
    TEXT_FIELDS,
    DashboardModel,
    Settings,
    dashboard_policies,
    dashboard_presets,
    path_safe,
    policy_description,
    preparing_text,
)
from dashboards.widgets import ApplicantTable, CopyBox, VegaView  # noqa: E402

# Solara's "runs on Solara" badge sits over the page's bottom-right corner
solara.server.settings.theme.show_banner = False
solara.server.settings.theme.title = "recourse-abm"

log = logging.getLogger(__name__)
FREE = "free exploration"
SPEEDS = {"slow (2 ticks/s)": 2, "normal (10 ticks/s)": 10, "fast (20 ticks/s)": 20}
DEFAULT_SPEED = "normal (10 ticks/s)"
FRAME_TIMEOUT_S = 2.0  # Play stops waiting for a browser that has not drawn the last frame
PLAY_POLL_S = 0.02  # how often Play asks whether the browser has drawn the last frame
QUICK_BUILD_S = 1.0  # a build this fast is waited for; a slower one shows "preparing"

CSS = """
.rabm-chart { position: relative; width: 100%; min-height: 300px; }
.rabm-plot, .rabm-plot.vega-embed { width: 100%; display: block; }
.rabm-chart-tools { position: absolute; right: 0; top: 0; z-index: 2; }
.rabm-error { position: sticky; top: 0; z-index: 5; }
.rabm-cli { white-space: pre-wrap; word-break: break-all; background: #f5f5f5;
            padding: 8px; margin: 0 0 6px 0; font-size: 12px; }
.rabm-table td { white-space: normal; }
.rabm-advice { min-width: 170px; }
.rabm-table tbody tr { cursor: pointer; }
.rabm-explanation p { margin-bottom: 8px; }
.rabm-section { margin: 18px 0 4px 12px; }
.rabm-policy-note { font-size: 12px; color: #555; margin: -14px 0 10px 0; }
.rabm-preparing-card { position: sticky; top: 0; z-index: 4; }
.rabm-preparing { font-size: 15px; }
"""

TABLE_HEADERS = [
    {"text": "applicant", "value": "id"},
    {"text": "attempt", "value": "attempt"},
    {"text": "score", "value": "score"},
    {"text": "outcome", "value": "outcome"},
    {"text": "goal g", "value": "goal"},
    {
        "text": "advice (change per feature)",
        "value": "advice",
        "sortable": False,
        "cellClass": "rabm-advice",
    },
    {"text": "result of the advice", "value": "result"},
    {"text": "score after changes", "value": "achieved"},
]
HISTORY_HEADERS = [
    {"text": "tick", "value": "tick"},
    {"text": "attempt", "value": "attempt"},
    {"text": "score", "value": "score"},
    {"text": "threshold", "value": "threshold"},
    {"text": "outcome", "value": "outcome"},
    {"text": "goal g", "value": "goal"},
    {
        "text": "advice (change per feature)",
        "value": "advice",
        "sortable": False,
        "cellClass": "rabm-advice",
    },
    {"text": "what they did", "value": "result"},
    {"text": "score after changes", "value": "achieved"},
]


def _headers(base: list[dict], columns: data.Columns) -> list[dict]:
    """``base`` plus a header for each extension column present in ``columns``."""
    present = columns.keys()
    extra = [{"text": label, "value": col} for col, label in data.EXTRA_COLUMNS.items()
             if col in present]  # fmt: skip
    if "caused" in present:
        extra.append({"text": "caused by the graph", "value": "caused", "sortable": False})
    return base + extra


@functools.lru_cache(maxsize=256)
def _html(markdown_text: str) -> str:
    """Markdown as HTML, rendered here: Solara's Markdown component would fetch mermaid and
    KaTeX from the internet on every page."""
    import markdown

    return markdown.markdown(markdown_text)


class FrameGate:
    """Which frame each chart has drawn in the browser, so Play sends a new frame only
    once the last one is on screen (or after :data:`FRAME_TIMEOUT_S`)."""

    def __init__(self) -> None:
        self.charts: set[str] = set()
        self.drawn: dict[str, int] = {}
        self.frame = -1
        self.sent_at = 0.0

    def sent(self, frame: int) -> None:
        self.frame, self.sent_at = frame, time.monotonic()

    def ack(self, chart: str, frame: int) -> None:
        self.drawn[chart] = frame

    def ready(self) -> bool:
        if time.monotonic() - self.sent_at > FRAME_TIMEOUT_S:
            return True
        return all(self.drawn.get(c, -1) >= self.frame for c in self.charts)


def shown_tick(model: DashboardModel, replay: int | None) -> int:
    """The tick the views show: ``replay`` if set, else the newest (-1 before the first)."""
    return model.tick - 1 if replay is None else replay


def status_text(model: DashboardModel, t: int) -> str:
    s, c = model.settings, model.config
    compare = f" vs **{s.compare}**" if s.compare else ""
    if model.tick == 0:
        where = f"no tick run yet (0 of {c.ticks})"
    else:
        replay = " · **replaying**" if t != model.tick - 1 else ""
        where = f"**tick {t}** shown · {model.tick} of {c.ticks} ticks run{replay}"
    done = "" if model.running else " · run finished (Reset starts again)"
    return (f"{where} · scenario **{s.preset}** · policy **{s.policy}**{compare} · "
            f"seed {c.seed}{done}")  # fmt: skip


def csv_bytes(model: DashboardModel, which: str) -> bytes:
    """The tick table (``which="ticks"``) or candidate table (``"candidates"``) of the run
    so far as CSV, a ``policy`` column first (both policies when side by side)."""
    frames = []
    s = model.settings
    for policy, run in ((s.policy, model), (s.compare, model.twin)):
        if run is None:
            continue
        table = run.tick_table() if which == "ticks" else run.candidate_table()
        frames.append(table.assign(policy=policy)[["policy", *table.columns]])
    buf = io.StringIO()
    pd.concat(frames, ignore_index=True).to_csv(buf, index=False)
    return buf.getvalue().encode()


def file_stem(settings: Settings) -> str:
    vs = f"_vs_{path_safe(settings.compare)}" if settings.compare else ""
    return f"recourse-abm_{settings.preset}_{path_safe(settings.policy)}{vs}_seed{settings.seed}"


# -- one browser session ------------------------------------------------------------------------
class Session:
    """One browser tab's state (Solara reactive values) and every input handler.

    Components read only the values they show, so a new frame re-renders the views, not
    the sidebar. Each handler checks what the browser sent; a bad value sets :attr:`error`
    to a one-line message and changes nothing else.
    """

    def __init__(self, reactive: Callable[[Any], solara.Reactive]) -> None:
        self.demos = available_demos()
        initial = Settings.from_preset()
        self.draft = reactive(initial)  # what the inputs show (may be invalid)
        self.error = reactive(None)
        self.model = reactive(DashboardModel(initial))
        self.playing = reactive(False)
        self.frame = reactive(0)  # bumped whenever the views should redraw
        self.replay = reactive(None)  # a tick to show instead of the newest
        self.picked = reactive(None)  # the applicant in the agent view
        self.speed = reactive(DEFAULT_SPEED)
        self.preparing = reactive(None)  # what is being built, while it takes a while
        self.gate = FrameGate()
        self.lock = threading.Lock()  # the play thread and the handlers share the model
        # the builder thread and the handlers share these: the newest settings waiting to
        # be built (with the event set once they are dealt with) and whether it runs
        self._build_lock = threading.Lock()
        self._wanted: tuple[Settings, threading.Event] | None = None
        self._building = False

    @property
    def building(self) -> bool:
        """Whether a model is being built (or waits to be)."""
        with self._build_lock:
            return self._building

    def tick(self) -> int:
        """The tick the views show."""
        return shown_tick(self.model.value, self.replay.value)

    def publish(self) -> None:
        self.gate.sent(self.frame.value + 1)
        self.frame.set(self.frame.value + 1)

    def guarded(self, handler: Callable[..., None], *args: Any) -> None:
        """Run an input handler; bad input shows its one-line message, nothing raises."""
        try:
            handler(*args)
        except ConfigError as exc:
            self.error.set(str(exc))
        except Exception as exc:  # a bug must not take the lesson down
            log.exception("dashboard handler failed")
            self.error.set(f"could not apply that: {type(exc).__name__}: {exc}")

    def build(self, new: Settings) -> None:
        """A fresh model from ``new`` (stopped, tick 0), built on the builder thread.

        Waits up to :data:`QUICK_BUILD_S` for it; a slower build sets :attr:`preparing`
        and the page stays usable meanwhile. Only the newest settings asked for are
        built: one asked for while another builds replaces it. On ConfigError the old run
        goes on, with the message in :attr:`error`."""
        self.draft.set(new)
        done = threading.Event()
        with self._build_lock:
            self._wanted = (new, done)
            start, self._building = not self._building, True
        if start:
            threading.Thread(target=self._builder, name="rabm-build", daemon=True).start()
        if done.wait(QUICK_BUILD_S):
            return
        self.playing.set(False)  # Step and Play wait for the new model
        self.preparing.set(preparing_text(new))
        if not self.building:  # done between the wait and the line above: nothing to show
            self.preparing.set(None)

    def _builder(self) -> None:
        """Build the newest wanted settings until none is left (the builder thread)."""
        while True:
            with self._build_lock:
                wanted, self._wanted = self._wanted, None
                if wanted is None:
                    self._building = False
                    break
            new, done = wanted
            try:
                built, message = DashboardModel(new), None
            except ConfigError as exc:
                built, message = None, str(exc)
            except Exception as exc:  # a bug must not take the lesson down
                log.exception("dashboard build failed")
                built, message = None, f"could not apply that: {type(exc).__name__}: {exc}"
            with self._build_lock:
                superseded = self._wanted is not None
            if not superseded:
                self._show(built, message)
            done.set()
        self.preparing.set(None)

    def _show(self, built: DashboardModel | None, message: str | None) -> None:
        if built is None:
            self.error.set(message)
            return
        self.playing.set(False)
        with self.lock:
            self.model.set(built)
        self.error.set(None)
        self.replay.set(None)
        self.picked.set(None)
        self.publish()

    # each handler below is called through guarded()
    def input(self, name: str, value: Any) -> None:
        self.build(self.draft.value.with_input(name, value))

    def demo(self, title: Any) -> None:
        if title == FREE:
            self.build(Settings.from_preset(self.draft.value.preset))
            return
        chosen = [d for d in self.demos.values() if d.title == title]
        if not chosen:
            titles = ", ".join([FREE, *(d.title for d in self.demos.values())])
            raise ConfigError(problem("demonstration", title, "one of " + titles))
        self.build(Settings.from_demo(chosen[0]))

    def reset(self) -> None:
        if self.preparing.value is None:  # while preparing, the new settings are on their way
            self.build(self.model.value.settings)

    def step(self) -> None:
        m = self.model.value
        if self.playing.value or not m.running or self.preparing.value is not None:
            return  # the button is disabled then; a crafted click changes nothing
        with self.lock:
            m.step()
        self.replay.set(None)
        self.publish()

    def play(self) -> None:
        if self.preparing.value is not None:
            return
        if not self.model.value.running and not self.playing.value:
            return
        self.replay.set(None)
        self.playing.set(not self.playing.value)

    def set_speed(self, label: Any) -> None:
        if label not in SPEEDS:
            raise ConfigError(problem("play speed", label, "one of " + ", ".join(SPEEDS)))
        self.speed.set(label)

    def show_tick(self, value: Any) -> None:
        last = self.model.value.tick - 1
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= last
        if not ok or self.playing.value:
            allowed = interval(0, max(last, 0), integer=True) + " (a tick run so far, paused)"
            raise ConfigError(problem("tick shown", value, allowed))
        self.replay.set(None if value == last else value)
        self.publish()

    def pick(self, cid: Any) -> None:
        t = self.tick()
        ok = isinstance(cid, int) and not isinstance(cid, bool)
        if not ok or not data.applicant_exists(data.runs(self.model.value)[0], cid, t):
            raise ConfigError(
                problem("applicant", cid, f"the id of someone who applied by tick {t}")
            )
        self.picked.set(cid)

    def play_loop(self, cancel: threading.Event) -> None:
        """Step at the chosen rate; draw a frame whenever the browser is ready for one."""
        if not self.playing.value:
            return
        m, rate = self.model.value, SPEEDS[self.speed.value]
        start, done, shown = time.perf_counter(), 0, 0
        try:
            while not cancel.is_set() and self.playing.value and m.running:
                due = int((time.perf_counter() - start) * rate) + 1
                with self.lock:
                    while done < due and m.running:
                        m.step()
                        done += 1
                if shown < done and self.gate.ready():
                    shown = done
                    self.publish()
                # wake for the next tick, or sooner to catch the browser being ready
                wait = start + done / rate - time.perf_counter()
                cancel.wait(min(max(wait, 0.0), PLAY_POLL_S))
        except Exception as exc:
            log.exception("dashboard play loop failed")
            self.error.set(f"the run stopped: {type(exc).__name__}: {exc}")
        if self.model.value is m:
            self.playing.set(False)
            self.publish()  # the last tick is always drawn

    def handler(self, method: Callable[..., None]) -> Callable[..., None]:
        """``method`` as a widget callback, guarded."""
        return lambda *args: self.guarded(method, *args)


# -- components --------------------------------------------------------------------------------
@solara.component
def Html(text: str, classes: list[str] | None = None):
    return solara.HTML(tag="div", unsafe_innerHTML=_html(text), classes=classes or [])


@solara.component
def Controls(session: Session):
    """Reset, Play/Pause, Step and the play speed; runs the play loop."""
    m, playing = session.model.value, session.playing.value
    preparing = session.preparing.value is not None
    session.frame.value  # noqa: B018 (subscribe: a step may finish the run)
    solara.use_thread(session.play_loop, dependencies=[playing, m], intrusive_cancel=False)
    with solara.Card("Run", classes=["rabm-controls"]):
        with solara.Row(justify="space-between"):
            solara.Button("Reset", color="primary", on_click=session.handler(session.reset),
                          disabled=preparing)  # fmt: skip
            solara.Button("Pause" if playing else "Play", color="primary",
                          on_click=session.handler(session.play),
                          disabled=preparing or (not m.running and not playing))  # fmt: skip
            solara.Button("Step", color="primary", on_click=session.handler(session.step),
                          disabled=preparing or playing or not m.running)  # fmt: skip
        solara.Select("play speed", values=list(SPEEDS), value=session.speed.value,
                      on_value=session.handler(session.set_speed))  # fmt: skip


@solara.component
def IntSlider(name: str, label: str, value: int, lo: int, hi: int, on_input):
    """A slider that applies its value when released (one model rebuild, not one per
    pixel dragged)."""
    el = solara.v.Slider(v_model=value, min=lo, max=hi, step=1, label=f"{label} = {value}",
                         thumb_label=True, hide_details=True,
                         class_=f"rabm-slider rabm-slider-{name}")  # fmt: skip
    solara.v.use_event(el, "change", lambda *args: on_input(name, args[2]))
    return el


@solara.component
def Inputs(session: Session):
    """The demonstrations and the scenario: every input goes through :meth:`Session.input`."""
    d = session.draft.value
    on_input = session.handler(session.input)
    demo = session.demos.get(d.demo)
    with solara.Card("Demonstrations", classes=["rabm-demos"]):
        solara.Select("classroom demonstration", value=demo.title if demo else FREE,
                      values=[FREE, *(x.title for x in session.demos.values())],
                      on_value=session.handler(session.demo))  # fmt: skip
        if demo is not None:
            Html(demo.explanation, classes=["rabm-explanation"])
    policies = dashboard_policies()
    with solara.Card("Scenario", classes=["rabm-scenario"]):
        solara.Text("Changing a setting starts the run again at tick 0.")
        solara.Select("scenario preset", values=dashboard_presets(), value=d.preset,
                      on_value=lambda x: on_input("preset", x))  # fmt: skip
        solara.Select("policy", values=policies, value=d.policy,
                      on_value=lambda x: on_input("policy", x))  # fmt: skip
        PolicyNote(d.policy)
        solara.Select("compare with (same seed)", values=[OFF, *policies],
                      value=d.compare or OFF, on_value=lambda x: on_input("compare", x))  # fmt: skip
        if d.compare:
            PolicyNote(d.compare)
        for name, (label, _, _) in SLIDERS.items():
            lo, hi = d.slider_range(name)
            IntSlider(name, label, getattr(d, name), lo, hi, on_input).key(name)
        for name, label in TEXT_FIELDS.items():
            solara.InputText(label, value=getattr(d, name), continuous_update=False,
                             on_value=lambda text, name=name: on_input(name, text),
                             classes=[f"rabm-text-{name}"])  # fmt: skip


@solara.component
def PolicyNote(spec: str):
    """One line under a policy select: what the chosen policy advises."""
    text = solara.use_memo(lambda: policy_description(spec), [spec])
    if text:
        solara.Text(text, classes=["rabm-policy-note"])


@solara.component
def ErrorBanner(session: Session):
    if session.error.value:
        solara.Error(f"Not applied: {session.error.value}", classes=["rabm-error"])


@solara.component
def PreparingBanner(session: Session):
    """While a slow model builds: what it is doing, and that the page is still usable."""
    text = session.preparing.value
    if text is None:
        return
    with solara.Card(classes=["rabm-preparing-card"]):
        solara.v.ProgressLinear(indeterminate=True, color="primary")
        Html(f"**{text[0].upper()}{text[1:]}** This takes a few seconds, and again after "
             "Reset or a changed setting. Step and Play come back when it is ready; until "
             "then the charts show the previous run. The sidebar stays usable: the newest "
             "choice is built next.",
             classes=["rabm-preparing"])  # fmt: skip


@solara.component
def ChartView(chart: charts.Chart, payload: str, tick: int, gate: FrameGate, stem: str,
              on_pick=None):  # fmt: skip
    spec = solara.use_memo(lambda: charts.to_json(chart.spec), [chart])
    VegaView.element(
        spec=spec,
        payload=payload,
        name=chart.name,
        filename=f"{stem}_{chart.name}_tick{tick}.png",
        clickable=chart.clickable,
        on_drawn=lambda frame: gate.ack(chart.name, frame),
        on_pick=on_pick,
    )


@solara.component
def Views(session: Session):
    """Status, replay slider, charts, the applicant table and the agent view."""
    m, frame, playing = session.model.value, session.frame.value, session.playing.value
    t = session.tick()
    chart_list = solara.use_memo(lambda: charts.charts(m), [m])
    session.gate.charts = {c.name for c in chart_list}
    payloads = solara.use_memo(
        lambda: [
            charts.to_json(charts.payload(c, data.runs(m), t, frame, m.serial)) for c in chart_list
        ],
        [chart_list, t, frame],
    )
    Html(status_text(m, t), classes=["rabm-status"])
    if m.settings.compare:
        Html(f"Side by side on the same seed (identical arrivals): lines of "
             f"**{m.settings.policy}** are solid, of **{m.settings.compare}** dashed; "
             "bars are coloured by policy.", classes=["rabm-compare-note"])  # fmt: skip
    if m.tick > 0:
        with solara.Row(classes=["rabm-replay"], style={"align-items": "center"}):
            solara.SliderInt("tick shown (scrub back through the run)", value=t, min=0,
                             max=m.tick - 1, on_value=session.handler(session.show_tick),
                             disabled=playing)  # fmt: skip
            if session.replay.value is not None:
                solara.Button("back to the newest tick", text=True,
                              on_click=lambda: session.guarded(session.show_tick, m.tick - 1))  # fmt: skip
    stem = file_stem(m.settings)
    on_pick = session.handler(session.pick)
    n_core = len(chart_list) - len(charts.extension_charts(m, []))
    with solara.ColumnsResponsive(12, large=6):
        for c, p in zip(chart_list[:n_core], payloads, strict=False):
            ChartView(c, p, t, session.gate, stem, on_pick if c.clickable else None).key(c.name)
    if n_core < len(chart_list):
        names = ", ".join(sorted(m.config.mechanisms))
        with solara.Div(classes=["rabm-section", "rabm-extensions"]):
            solara.HTML(tag="h3", unsafe_innerHTML=f"World extensions on: {names}")
        with solara.ColumnsResponsive(12, large=6):
            for c, p in zip(chart_list[n_core:], payloads[n_core:], strict=True):
                ChartView(c, p, t, session.gate, stem).key(c.name)
    ApplicantsCard(m, t, frame, on_pick)
    AgentView(session)
    OutcomeCard(m, frame)


@solara.component
def OutcomeCard(model: DashboardModel, frame: int):
    """The outcome card of the run so far: the figures the command line and the studies
    report, for both policies side by side."""
    rows = solara.use_memo(lambda: data.card_rows(model), [model, frame])
    if not rows:
        return
    with solara.Card("Outcome card (the run so far)", classes=["rabm-card"]):
        solara.Text("The same figures for every policy (docs/outcome-card.md); figures of "
                    "mechanisms that are off are left out.")  # fmt: skip
        solara.DataFrame(pd.DataFrame(rows), items_per_page=40)


@solara.component
def ApplicantsCard(model: DashboardModel, t: int, frame: int, on_pick):
    z = model.config.n_features
    cols = solara.use_memo(lambda: data.applicant_rows(data.runs(model)[0], t, z),
                           [model, t, frame])  # fmt: skip
    items = solara.use_memo(lambda: charts.to_json({**cols, "key": cols.get("id", [])}), [cols])
    title = "Applicants" if t < 0 else f"Applicants at tick {t} ({data.n_rows(cols)})"
    with solara.Card(title, classes=["rabm-applicants"]):
        solara.Text("Click a row (or a point in 'Every application') to follow that applicant. "
                    "Click a column header to sort.")  # fmt: skip
        ApplicantTable.element(headers=_headers(TABLE_HEADERS, cols), rows=items,
                               colours=data.OUTCOME_COLOURS, sort_by="score", on_pick=on_pick)  # fmt: skip


@solara.component
def AgentView(session: Session):
    """One applicant's history up to the tick shown: every application with its score,
    threshold, goal, advice, what they did and the outcome."""
    cid = session.picked.value
    if cid is None:
        solara.Info("Agent view: click an applicant in the table or in the 'Every "
                    "application' chart to see their history.")  # fmt: skip
    else:
        AgentCard(session, cid)


@solara.component
def AgentCard(session: Session, cid: int):
    m, t, frame = session.model.value, session.tick(), session.frame.value
    z = m.config.n_features
    cols = solara.use_memo(lambda: data.applicant_history(data.runs(m)[0], cid, t, z),
                           [m, cid, t, frame])  # fmt: skip
    with solara.Card(f"Applicant {cid}", classes=["rabm-agent"]):
        if not cols:
            solara.Text(f"Applicant {cid} has not applied by tick {t}.")
        else:
            solara.Text(f"{len(cols['tick'])} application(s) up to tick {t}; first at tick "
                        f"{cols['tick'][0]}; last outcome: {cols['outcome'][-1]}.",
                        classes=["rabm-agent-summary"])  # fmt: skip
            spec = charts.to_json(charts.applicant_chart(cols, cid))
            payload = charts.to_json({"frame": frame, "data": {"main": cols}, "signals": {}})
            VegaView.element(spec=spec, payload=payload, name="applicant",
                             filename=f"applicant-{cid}.png")  # fmt: skip
            items = charts.to_json({**cols, "key": list(range(len(cols["tick"])))})
            ApplicantTable.element(headers=_headers(HISTORY_HEADERS, cols), rows=items,
                                   colours=data.OUTCOME_COLOURS, sort_by="tick", sort_desc=False)  # fmt: skip
        solara.Button("close", on_click=lambda: session.picked.set(None), text=True,
                      classes=["rabm-agent-close"])  # fmt: skip


@solara.component
def ExportCard(session: Session):
    m = session.model.value
    stem = file_stem(m.settings)
    with solara.Card("Export and reproduce", classes=["rabm-export"]):
        solara.Text("Tables of every tick run so far (a policy column first). Each chart has "
                    "its own PNG button, showing the tick on screen.")  # fmt: skip
        with solara.Row():
            solara.FileDownload(lambda: csv_bytes(m, "ticks"), filename=f"{stem}_ticks.csv",
                                label="tick table (CSV)", mime_type="text/csv")  # fmt: skip
            solara.FileDownload(lambda: csv_bytes(m, "candidates"),
                                filename=f"{stem}_candidates.csv",
                                label="candidate table (CSV)", mime_type="text/csv")  # fmt: skip
        solara.Text("The same run from the command line (same seed, same numbers):")
        CopyBox.element(text=solara.use_memo(m.settings.cli_text, [m]))


@solara.component
def Page():
    session = solara.use_memo(lambda: Session(solara.reactive), [])  # one per browser tab
    solara.Style(CSS)
    solara.Title("recourse-abm")
    with solara.Sidebar():
        Controls(session)
        Inputs(session)
    with solara.Column(gap="8px", style={"padding": "0 8px"}, classes=["rabm-main"]):
        ErrorBanner(session)
        PreparingBanner(session)
        Views(session)
        ExportCard(session)
