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
as if built in the handler; a policy that trains when prepared (``scarf`` on settings whose
generator is not stored: 10-20 s) shows "preparing …" while the sidebar stays usable, and a
newer choice supersedes it.

The page address holds the view (:func:`~dashboards.settings.to_query`: the settings or
demonstration, the ticks run, the tick shown): a reload, a shared link or Back rebuilds the
same run from its settings and seed and shows the same tick. The page draws its own frame
(:func:`Layout` replaces Solara's): a bar with the run controls that stays on top on any
screen, and a settings drawer that closes with its ✕, with Escape, or by a click beside it
on a narrow screen.
"""

from __future__ import annotations

import functools
import html
import io
import logging
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

# reacton's opt-in tree walk that skips unchanged subtrees (read when a session's render
# context is created, so setting it here covers every session)
os.environ.setdefault("REACTON_FAST", "1")

import pandas as pd  # noqa: E402
import solara  # noqa: E402
import solara.server.settings  # noqa: E402

from abm.validation import ConfigError, interval, problem  # noqa: E402
from dashboards import charts, data, forecast, palette  # noqa: E402
from dashboards.demos import available_demos  # noqa: E402
from dashboards.settings import (  # noqa: E402
    COMPARE_INPUTS,
    MAX_POLICIES,
    OFF,
    SLIDERS,
    TEXT_FIELDS,
    DashboardModel,
    Settings,
    build_progress,
    dashboard_policies,
    dashboard_presets,
    fit_to_preset,
    from_query,
    known_support,
    path_safe,
    policy_description,
    policy_support,
    preparing_status,
    preparing_text,
    to_query,
    until_from_query,
    without_paths,
)
from dashboards.widgets import Address, ApplicantTable, CopyBox, PageKeys, VegaView  # noqa: E402

# Solara's "runs on Solara" badge sits over the page's bottom-right corner
solara.server.settings.theme.show_banner = False
solara.server.settings.theme.title = "recourse-abm"
# Solara warns on every page request from an address other than "localhost" that its
# session cookie falls back to SameSite=Lax over plain http: that fallback is what a
# classroom network wants, and the warning filled the server log
warnings.filterwarnings("ignore", message="Cookies with samesite=none require https")


log = logging.getLogger(__name__)


def _warm_support() -> None:
    """Which policies each preset can run, computed once at start (the first takes a few
    seconds: it loads the trained policies' libraries), so the menus need not wait."""
    for preset in dashboard_presets():
        try:
            policy_support(preset)
        except Exception:  # a preset that fails here fails with its message when chosen
            log.exception("checking the policies of preset %s failed", preset)


_warming = threading.Lock()
_warm_started = False


def warm_support() -> None:
    """Start :func:`_warm_support` on a thread, once per server process (not where the
    page is rendered without a server, as in tests: a thread still loading libraries
    when the interpreter exits aborts it)."""
    global _warm_started
    if "solara.server.starlette" not in sys.modules:
        return
    with _warming:
        if _warm_started:
            return
        _warm_started = True
    threading.Thread(target=_warm_support, name="rabm-support", daemon=True).start()


FREE = "free exploration"
SPEEDS = {"slow (2 ticks/s)": 2, "normal (10 ticks/s)": 10, "fast (20 ticks/s)": 20}
DEFAULT_SPEED = "normal (10 ticks/s)"
FRAME_TIMEOUT_S = 2.0  # Play stops waiting for a browser that has not drawn the last frame
PLAY_POLL_S = 0.02  # how often Play asks whether the browser has drawn the last frame
# while Play runs the outcome card (half a frame's server time: a survival fit per policy)
# is recomputed at most this often; no one reads a table at 10 ticks/s, and a class of
# playing pages then leaves the server time to answer a click
CARD_PLAY_S = 1.0
DRAWER_BESIDE_PX = 960  # from this window width the drawer sits beside the page, open
QUICK_BUILD_S = 1.0  # a build this fast is waited for; a slower one shows "preparing"

CSS = """
.rabm-chart { position: relative; width: 100%; min-height: 300px; }
.rabm-bar.v-app-bar { z-index: 8 !important; }
.rabm-bar .v-btn.rabm-run { margin-left: 6px; min-width: 0 !important; padding: 0 10px !important; }
.rabm-bar .rabm-title { font-size: 17px; white-space: nowrap; overflow: hidden; }
.rabm-drawer { max-width: 100vw; }
.rabm-drawer.v-navigation-drawer--is-mobile { top: 48px !important; max-height: calc(100% - 48px) !important; }
.rabm-drawer-head { display: flex; align-items: center; justify-content: space-between;
                    padding: 4px 4px 0 12px; }
.rabm-drawer .v-card { margin: 8px; }
.rabm-slider-row { display: flex; align-items: center; gap: 8px; margin: 2px 0; }
.rabm-slider-row .v-input__slider { flex: 1 1 auto; min-width: 120px; }
.rabm-slider .v-input__slot, .rabm-replay .v-input__slot { flex-wrap: wrap; }
.rabm-slider .v-input__slot > .v-label, .rabm-replay .v-input__slot > .v-label {
    flex: 1 0 100%; margin-bottom: -4px; }
.rabm-slider-row .rabm-number { flex: 0 0 78px; max-width: 78px; }
.rabm-replay { flex-wrap: wrap; }
.rabm-replay .v-input { flex: 1 1 240px; min-width: 200px; }
.rabm-forecast-text { font-size: 13px; margin: 4px 0; }
.rabm-forecast-caption { font-size: 12px; color: #555; margin: 2px 0 6px 0; }
.rabm-small-table { border-collapse: collapse; font-size: 13px; margin: 4px 0; }
.rabm-small-table th { font-weight: 500; text-align: left; color: #555; font-size: 12px; }
.rabm-small-table th, .rabm-small-table td { padding: 2px 8px 2px 0; vertical-align: top; }
.rabm-forecast-summary { overflow-x: auto; max-width: 100%; }
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
.rabm-main .row { margin-left: -8px; margin-right: -8px; }
.rabm-card td, .rabm-card th, .rabm-card .text-truncate, .rabm-card .text-no-wrap {
    white-space: normal !important; overflow: visible !important; }
.rabm-card .v-data-table__wrapper { overflow-x: auto; }
.rabm-export-buttons { flex-wrap: wrap !important; }
.rabm-run-to { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; }
.rabm-run-to .rabm-number { flex: 0 0 84px; max-width: 84px; }
.rabm-run-to-note { font-size: 12px; color: #555; }
.rabm-lesson .v-expansion-panel-header { font-weight: 500; min-height: 40px; padding: 8px 16px; }
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
    extra = [
        {"text": label, "value": col} for col, label in data.EXTRA_COLUMNS.items() if col in present
    ]
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
    compare = " vs " + ", ".join(f"**{p}**" for p in s.compare) if s.compare else ""
    if model.tick == 0:
        where = f"no tick run yet (0 of {c.ticks})"
    else:
        replay = " · **replaying**" if t != model.tick - 1 else ""
        where = f"**tick {t}** shown · {model.tick} of {c.ticks} ticks run{replay}"
    done = "" if model.running else " · run finished (Reset starts again)"
    return (
        f"{where} · scenario **{s.preset}** · policy **{s.policy}**{compare} · seed {c.seed}{done}"
    )


def csv_bytes(model: DashboardModel, which: str) -> bytes:
    """The tick table (``which="ticks"``) or candidate table (``"candidates"``) of the run
    so far as CSV, a ``policy`` column first (every policy when side by side)."""
    frames = []
    for policy, run in zip(model.settings.policies, model.models(), strict=True):
        table = run.tick_table() if which == "ticks" else run.candidate_table()
        frames.append(table.assign(policy=policy)[["policy", *table.columns]])
    buf = io.StringIO()
    pd.concat(frames, ignore_index=True).to_csv(buf, index=False)
    return buf.getvalue().encode()


def table_html(headers: dict[str, str], rows: list[dict[str, str]]) -> str:
    """A small HTML table: ``headers`` {key: column title}, each row {key: text}."""
    head = "".join(f"<th>{html.escape(t)}</th>" for t in headers.values())
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(r[k])}</td>" for k in headers) + "</tr>" for r in rows
    )
    return f'<table class="rabm-small-table"><tr>{head}</tr>{body}</table>'


def file_stem(settings: Settings) -> str:
    vs = "".join(f"_vs_{path_safe(p)}" for p in settings.compare)
    return f"recourse-abm_{settings.preset}_{path_safe(settings.policy)}{vs}_seed{settings.seed}"


# -- one browser session ------------------------------------------------------------------------
class Session:
    """One browser tab's state (Solara reactive values) and every input handler.

    Components read only the values they show, so a new frame re-renders the views, not
    the sidebar. Each handler checks what the browser sent; a bad value sets :attr:`error`
    to a one-line message and changes nothing else. ``query`` is the page address's query
    the tab was opened with: its run is rebuilt (:meth:`restore`).
    """

    def __init__(self, reactive: Callable[[Any], solara.Reactive], query: str = "") -> None:
        self.demos = available_demos()
        initial = Settings.from_preset()
        self.draft = reactive(initial)  # what the inputs show (may be invalid)
        self.error = reactive(None)
        self.notice = reactive(None)  # what a preset change replaced, in a sentence
        self.model = reactive(DashboardModel(initial))
        self.playing = reactive(False)
        self.frame = reactive(0)  # bumped whenever the views should redraw
        self.replay = reactive(None)  # a tick to show instead of the newest
        self.picked = reactive(None)  # the applicant in the agent view
        self.whose = reactive(0)  # whose applicants the applicant views show (a policy's index)
        self.speed = reactive(DEFAULT_SPEED)
        self.preparing = reactive(None)  # what is being built, while it takes a while
        self.progress = reactive(None)  # how far that build is (a policy's training)
        self.drawer = reactive(None)  # the settings drawer open (None: as the screen suits)
        self.revision = reactive(0)  # bumped when a refused choice must leave the inputs
        self.restoring = reactive(False)  # the run of the address is being rebuilt
        self.until = reactive(None)  # the tick in the "run to tick" box (the address keeps it)
        self.stop_at = reactive(None)  # the tick the current Play stops at (run to tick)
        self.lesson_open = reactive(True)  # the demonstration's explanation unfolded
        self.gate = FrameGate()
        self._card = (0, -CARD_PLAY_S)  # the frame the outcome card shows, and when it was
        # the play thread, the handlers and the outcome card share the model; reentrant: a
        # model set under it renders the views, which read the model under it again
        self.lock = threading.RLock()
        self._publishing = threading.RLock()  # publish()'s
        # the builder thread and the handlers share these: the newest build waiting to be
        # done (with the event set once it is dealt with) and whether it runs
        self._build_lock = threading.Lock()
        self._wanted: tuple[Settings, int, int | None, threading.Event] | None = None
        self._building = False
        if query:
            self.restore(query)

    @property
    def building(self) -> bool:
        """Whether a model is being built (or waits to be)."""
        with self._build_lock:
            return self._building

    def tick(self) -> int:
        """The tick the views show."""
        return shown_tick(self.model.value, self.replay.value)

    def runs(self) -> list[data.Run]:
        """:func:`dashboards.data.runs` of the model, read under the lock: the play thread
        steps the model and the outcome card's thread reads its record meanwhile."""
        with self.lock:
            return data.runs(self.model.value)

    def address(self) -> str:
        """The page address's query for what is on screen."""
        m = self.model.value
        return to_query(m.settings, m.tick, self.replay.value, self.until.value)

    def publish(self) -> None:
        # one bump at a time: the play loop's thread publishes beside the page's handlers,
        # and two bumps read from one value would set it once, so the later state (a run
        # to a tick already shown, say) would never be drawn
        with self._publishing:
            frame = self.frame.value + 1
            self.gate.sent(frame)
            self.frame.set(frame)

    def card_frame(self) -> int:
        """The frame the outcome card shows: the newest, except while Play runs, when it
        moves on at most every :data:`CARD_PLAY_S` seconds (the last frame of a Play is
        drawn after it stops, so a paused page's card is always the newest)."""
        frame, at = self._card
        now = time.monotonic()
        if frame != self.frame.value and (not self.playing.value or now - at >= CARD_PLAY_S):
            self._card = (self.frame.value, now)
        return self._card[0]

    def guarded(self, handler: Callable[..., None], *args: Any) -> bool:
        """Run an input handler; bad input shows its one-line message, nothing raises.
        Returns whether the input was taken (False: refused here)."""
        try:
            handler(*args)
        except ConfigError as exc:
            self.error.set(str(exc))
            self.revision.set(self.revision.value + 1)
            return False
        except Exception as exc:  # a bug must not take the lesson down
            log.exception("dashboard handler failed")
            self.error.set(f"could not apply that: {type(exc).__name__}: {exc}")
            return False
        return True

    def restore(self, query: str) -> None:
        """Rebuild the run an address names: its settings, then its ticks, showing its
        tick; what the address gets wrong is named on the page and left out."""
        settings, run, shown, problems = from_query(query, self.demos)
        until, wrong = until_from_query(query, settings.ticks)
        problems += wrong
        self.until.set(until)
        if problems:
            self.error.set("address: " + "; ".join(problems))
        self.restoring.set(True)
        self.build(settings, run, shown, wait=False)

    def build(
        self, new: Settings, run: int = 0, shown: int | None = None, wait: bool = True
    ) -> None:
        """A fresh model from ``new``, stepped ``run`` ticks and showing tick ``shown``
        (None: the newest), built on the builder thread.

        Waits up to :data:`QUICK_BUILD_S` for it (not at all unless ``wait``); a slower
        build sets :attr:`preparing` and the page stays usable meanwhile. Only the newest
        build asked for is done: one asked for while another builds replaces it. On
        ConfigError the old run goes on, with the message in :attr:`error`."""
        self.draft.set(new)
        done = threading.Event()
        with self._build_lock:
            self._wanted = (new, run, shown, done)
            start, self._building = not self._building, True
        if start:
            threading.Thread(target=self._builder, name="rabm-build", daemon=True).start()
        if wait and done.wait(QUICK_BUILD_S):
            return
        self.playing.set(False)  # Step and Play wait for the new model
        text = preparing_text(new)
        if run:
            text = text[:-1] + f" and running its {run} ticks again…"
        self.preparing.set(text)
        if not self.building:  # done between the wait and the line above: nothing to show
            self.preparing.set(None)

    def _builder(self) -> None:
        """Do the newest wanted build until none is left (the builder thread)."""
        while True:
            with self._build_lock:
                wanted, self._wanted = self._wanted, None
                if wanted is None:
                    self._building = False
                    break
            new, run, shown, done = wanted
            notes: list[str] = []
            try:
                new, notes = fit_to_preset(new)
                with build_progress(self.progress.set):
                    built, message = DashboardModel(new), None
                for _ in range(run):
                    built.step()
            except ConfigError as exc:
                built, message = None, str(exc)
            except Exception as exc:  # a bug must not take the lesson down
                log.exception("dashboard build failed")
                built, message = None, f"could not apply that: {type(exc).__name__}: {exc}"
            with self._build_lock:
                superseded = self._wanted is not None
            if not superseded:
                self._show(built, message, shown, notes)
            done.set()
        self.preparing.set(None)
        self.restoring.set(False)

    def _show(
        self, built: DashboardModel | None, message: str | None, shown: int | None, notes: list[str]
    ) -> None:
        if built is None:
            self.error.set(message)
            # the inputs show what runs, not what was refused
            self.draft.set(self.model.value.settings)
            self.revision.set(self.revision.value + 1)
            return
        self.playing.set(False)
        with self.lock:
            self.model.set(built)
        self.draft.set(built.settings)
        if not self.restoring.value:
            self.error.set(None)
        self.notice.set("; ".join(notes) + ": left out." if notes else None)
        if notes:
            self.revision.set(self.revision.value + 1)
        self.replay.set(shown if shown is not None and shown < built.tick - 1 else None)
        self.picked.set(None)
        self.whose.set(0)
        self.publish()

    # each handler below is called through guarded()
    def input(self, name: str, value: Any) -> None:
        new = self.draft.value.with_input(name, value)
        support = known_support(new.preset)
        if name in ("policy", *COMPARE_INPUTS) and support and support.get(value):
            raise ConfigError(
                problem(
                    name, value, f"a policy that runs on {new.preset} (this one {support[value]})"
                )
            )
        self.build(new)

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
        self.stop_at.set(None)
        self.playing.set(not self.playing.value)

    def run_to(self, value: Any) -> None:
        """Play until tick ``value`` is the newest and stop there, whatever the speed (a
        tick already run is shown instead, as the replay slider would)."""
        m = self.model.value
        text = str(value).strip() if value is not None else ""
        try:
            tick: Any = int(text)
        except ValueError:
            tick = text
        ok = isinstance(tick, int) and 0 <= tick < m.config.ticks
        if not ok:
            raise ConfigError(
                problem("run to tick", value, interval(0, m.config.ticks - 1, integer=True))
            )
        if self.preparing.value is not None:
            return
        self.until.set(tick)
        if tick <= m.tick - 1:
            self.playing.set(False)
            self.stop_at.set(None)
            self.replay.set(None if tick == m.tick - 1 else tick)
            self.publish()
            return
        self.replay.set(None)
        self.stop_at.set(tick)
        self.playing.set(True)

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

    def set_whose(self, policy: Any) -> None:
        policies = self.model.value.settings.policies
        _check_choice("applicants of", policy, policies)
        self.whose.set(policies.index(policy))
        self.picked.set(None)

    def pick(self, cid: Any) -> None:
        t = self.tick()
        ok = isinstance(cid, int) and not isinstance(cid, bool)
        run = self.runs()[self.whose.value]
        if not ok or not data.applicant_exists(run, cid, t):
            raise ConfigError(
                problem("applicant", cid, f"the id of someone who applied by tick {t}")
            )
        self.picked.set(cid)

    def play_loop(self, cancel: threading.Event) -> None:
        """Step at the chosen rate; draw a frame whenever the browser is ready for one."""
        if not self.playing.value:
            return
        m, rate = self.model.value, SPEEDS[self.speed.value]
        stop = self.stop_at.value
        more = (lambda: m.running) if stop is None else (lambda: m.running and m.tick <= stop)
        start, done, shown = time.perf_counter(), 0, 0
        try:
            while not cancel.is_set() and self.playing.value and more():
                due = int((time.perf_counter() - start) * rate) + 1
                with self.lock:
                    while done < due and more():
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

    def handler(self, method: Callable[..., None]) -> Callable[..., bool]:
        """``method`` as a widget callback, guarded (returns whether it was taken)."""
        return lambda *args: self.guarded(method, *args)


def _check_choice(field: str, value: Any, choices: list[str]) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(problem(field, value, "one of " + ", ".join(choices)))


# -- the frame: a bar with the run controls, a drawer with the settings -------------------------
@solara.component
def Layout(children=[]):  # noqa: B006 (Solara's signature for a layout)
    """Solara's app frame, replaced: :func:`Page` draws its own bar and drawer."""
    return solara.Div(children=children)


@solara.component
def Html(text: str, classes: list[str] | None = None):
    return solara.HTML(tag="div", unsafe_innerHTML=_html(text), classes=classes or [])


@solara.component
def RunButtons(session: Session):
    """Reset, Play/Pause and Step in the bar (reachable on any screen); runs the play loop."""
    m, playing = session.model.value, session.playing.value
    preparing = session.preparing.value is not None
    session.frame.value  # noqa: B018 (subscribe: a step may finish the run)
    solara.use_thread(session.play_loop, dependencies=[playing, m], intrusive_cancel=False)
    with solara.Div(classes=["rabm-run-buttons"], style={"display": "flex"}) as row:
        solara.Button(
            "Reset",
            on_click=session.handler(session.reset),
            disabled=preparing,
            outlined=True,
            classes=["rabm-run"],
        )
        solara.Button(
            "Pause" if playing else "Play",
            on_click=session.handler(session.play),
            disabled=preparing or (not m.running and not playing),
            outlined=True,
            classes=["rabm-run"],
        )
        solara.Button(
            "Step",
            on_click=session.handler(session.step),
            outlined=True,
            disabled=preparing or playing or not m.running,
            classes=["rabm-run"],
        )
    return row


@solara.component
def Bar(session: Session):
    """The bar on top: ☰ (the settings drawer), the title, the run controls."""
    open_ = session.drawer.value
    with solara.v.AppBar(
        app=True, clipped_left=True, dense=True, dark=True, color="primary", class_="rabm-bar"
    ):
        menu = solara.v.AppBarNavIcon(class_="rabm-menu", attributes={"title": "settings"})
        solara.v.use_event(menu, "click", lambda *_: session.drawer.set(not open_))
        solara.v.ToolbarTitle(children=["recourse-abm"], class_="rabm-title d-none d-sm-flex")
        solara.v.Spacer()
        RunButtons(session)


@solara.component
def Drawer(session: Session):
    """The settings: the play speed, the demonstrations and the scenario. Closes with its
    ✕, with Escape (:class:`PageKeys`), or on a narrow screen by a click beside it."""
    with solara.v.NavigationDrawer(
        app=True,
        clipped=True,
        v_model=session.drawer.value,
        on_v_model=session.drawer.set,
        width=400,
        mobile_break_point=DRAWER_BESIDE_PX,
        class_="rabm-drawer",
    ):
        with solara.Div(classes=["rabm-drawer-head"]):
            solara.Text("Settings", style={"font-weight": "500"})
            solara.Button(
                icon_name="mdi-close",
                icon=True,
                classes=["rabm-drawer-close"],
                on_click=lambda: session.drawer.set(False),
            )
        with solara.Card("Run", classes=["rabm-controls"]):
            solara.Select(
                "play speed",
                values=list(SPEEDS),
                value=session.speed.value,
                on_value=session.handler(session.set_speed),
            )
        Inputs(session)


def use_value_in_force(value: Any, revision: int) -> Callable[[Any], None]:
    """After a refusal (``revision`` bumped), put the value in force back into the widgets
    that sent a value: the settings did not change, so no new render would, and the browser
    kept what was typed. Returns ``seen(widget)``, to call from the widget's events."""
    sent = solara.use_ref([])

    def revert() -> None:
        for widget in sent.current:
            want = str(value) if isinstance(widget.v_model, str) else value
            if widget.v_model != want:
                widget.v_model = want
        sent.current = []

    solara.use_effect(revert, [revision])

    def seen(widget: Any) -> None:
        if widget not in sent.current:
            sent.current.append(widget)

    return seen


@solara.component
def IntSlider(name: str, label: str, value: int, lo: int, hi: int, on_input, revision: int = 0):
    """A slider that applies its value when released (one model rebuild, not one per
    pixel dragged), with a box to type the number (N₀ = 1,000 on a 300-pixel slider)."""
    seen = use_value_in_force(value, revision)
    with solara.Div(classes=["rabm-slider-row"]) as row:
        el = solara.v.Slider(
            v_model=value,
            min=lo,
            max=hi,
            step=1,
            label=f"{label} = {value}",
            thumb_label=True,
            hide_details=True,
            class_=f"rabm-slider rabm-slider-{name}",
        )

        def released(widget: Any, _: Any, number: Any) -> None:
            seen(widget)
            on_input(name, number)

        solara.v.use_event(el, "change", released)
        box = solara.v.TextField(
            v_model=str(value),
            type="number",
            dense=True,
            hide_details=True,
            outlined=True,
            class_=f"rabm-number rabm-number-{name}",
            attributes={"aria-label": label, "min": lo, "max": hi},
        )

        def typed(widget: Any, *_: Any) -> None:
            seen(widget)
            text = str(widget.v_model if widget.v_model is not None else "").strip()
            try:
                number: Any = int(text)
            except ValueError:
                number = text  # refused with the field's message by Settings.with_input
            if number != value:  # Enter, then leaving the box: one rebuild
                on_input(name, number)

        solara.v.use_event(box, "keyup.enter", typed)
        solara.v.use_event(box, "blur", typed)
    return row


@solara.component
def TextBox(name: str, label: str, value: str, on_input, revision: int = 0):
    """A text input applied on Enter or on leaving it; a refused text leaves the box."""
    seen = use_value_in_force(value, revision)
    box = solara.v.TextField(
        v_model=value,
        label=label,
        dense=True,
        hide_details=True,
        class_=f"rabm-text rabm-text-{name}",
    )

    def typed(widget: Any, *_: Any) -> None:
        seen(widget)
        text = widget.v_model if widget.v_model is not None else ""
        if text != value:
            on_input(name, text)

    solara.v.use_event(box, "keyup.enter", typed)
    solara.v.use_event(box, "blur", typed)
    return box


def _policy_items(support: dict[str, str] | None, offer: list[str]) -> list[dict[str, Any]]:
    """Menu items: every policy; those the preset cannot run greyed out, with why."""
    items = []
    for p in offer:
        why = (support or {}).get(p, "")
        if why:
            items.append({"text": f"{p} — not on this preset: {why}", "value": p, "disabled": True})
        else:
            items.append({"text": p, "value": p})
    return items


@solara.component
def PolicySelect(label: str, value: str, items: list[dict[str, Any]], on_value, name: str):
    return solara.v.Select(
        label=label,
        v_model=value,
        items=items,
        on_v_model=on_value,
        class_=f"rabm-select-{name}",
        hide_details=True,
        menu_props={"maxWidth": 380},
    )


@solara.component
def Inputs(session: Session):
    """The demonstrations and the scenario: every input goes through :meth:`Session.input`."""
    d = session.draft.value
    revision = session.revision.value
    session.model.value  # noqa: B018 (subscribe: a build checks the preset's policies)
    on_input = session.handler(session.input)
    demo = session.demos.get(d.demo)
    with solara.Card("Demonstrations", classes=["rabm-demos"]):
        solara.Select(
            "classroom demonstration",
            value=demo.title if demo else FREE,
            values=[FREE, *(x.title for x in session.demos.values())],
            on_value=session.handler(session.demo),
        )
        if demo is not None:
            solara.Text(
                "What to do and what to look for: above the charts.",
                classes=["rabm-demo-where"],
            )
    support = known_support(d.preset)
    policies = dashboard_policies()
    with solara.Card("Scenario", classes=["rabm-scenario"]):
        solara.Text("Changing a setting starts the run again at tick 0.")
        solara.Select(
            "scenario preset",
            values=dashboard_presets(),
            value=d.preset,
            on_value=lambda x: on_input("preset", x),
        )
        if session.notice.value:
            solara.Info(without_paths(session.notice.value), dense=True, classes=["rabm-notice"])
        PolicySelect(
            "policy",
            d.policy,
            _policy_items(support, policies),
            lambda x: on_input("policy", x),
            "policy",
        ).key(f"policy-{revision}")
        PolicyNote(d.policy)
        labels = ["compare with (same seed)", "a third policy", "a fourth policy"]
        for i, name in enumerate(COMPARE_INPUTS[: min(len(d.compare) + 1, MAX_POLICIES - 1)]):
            value = d.compare[i] if i < len(d.compare) else OFF
            others = [p for p in policies if p not in d.policies or p == value]
            PolicySelect(
                labels[i],
                value,
                [{"text": OFF, "value": OFF}, *_policy_items(support, others)],
                lambda x, name=name: on_input(name, x),
                name,
            ).key(f"{name}-{revision}")
            if value != OFF:
                PolicyNote(value)
        for name, (label, _, _) in SLIDERS.items():
            lo, hi = d.slider_range(name)
            IntSlider(name, label, getattr(d, name), lo, hi, on_input, revision)
        for name, label in TEXT_FIELDS.items():
            TextBox(name, label, getattr(d, name), on_input, revision)


@solara.component
def Lesson(session: Session):
    """The demonstration's explanation above the charts, folded or unfolded by the reader:
    it stays in view while stepping (the drawer closes on a phone when Step is tapped)."""
    demo = session.demos.get(session.draft.value.demo)
    if demo is None:
        return
    with solara.v.ExpansionPanels(
        v_model=0 if session.lesson_open.value else None,
        on_v_model=lambda v: session.lesson_open.set(v == 0),
        class_="rabm-lesson",
    ):
        with solara.v.ExpansionPanel():
            solara.v.ExpansionPanelHeader(
                children=[f"Demonstration {demo.title}"], class_="rabm-lesson-head"
            )
            with solara.v.ExpansionPanelContent():
                Html(demo.explanation, classes=["rabm-explanation"])


@solara.component
def RunTo(session: Session):
    """ "Run to tick N": Play that stops exactly when tick N is the newest, at any speed."""
    m = session.model.value
    preparing = session.preparing.value is not None
    until = session.until.value
    held = "" if until is None else str(until)
    text, set_text = solara.use_state(held)
    # the box shows what is in force after a run to, a refusal or a restored address
    solara.use_effect(lambda: set_text(held), [held, session.revision.value])

    def go(*_: Any) -> None:
        session.guarded(session.run_to, text)

    with solara.Div(classes=["rabm-run-to"]) as row:
        solara.Button(
            "Run to tick",
            on_click=go,
            disabled=preparing,
            outlined=True,
            classes=["rabm-run-to-go"],
        )
        box = solara.v.TextField(
            v_model=text,
            on_v_model=set_text,
            type="number",
            dense=True,
            hide_details=True,
            outlined=True,
            class_="rabm-number rabm-run-to-tick",
            attributes={"aria-label": "run to tick", "min": 0, "max": m.config.ticks - 1},
        )
        solara.v.use_event(box, "keyup.enter", go)
        solara.Text(
            f"plays on and stops with that tick shown (0 to {m.config.ticks - 1})",
            classes=["rabm-run-to-note"],
        )
    return row


@solara.component
def PolicyNote(spec: str):
    """One line under a policy select: what the chosen policy advises, in plain words."""
    text = solara.use_memo(lambda: policy_description(spec), [spec])
    if text:
        solara.Text(text, classes=["rabm-policy-note"])


@solara.component
def ErrorBanner(session: Session):
    if session.error.value:
        # an exception's message may hold a path of the server: the class sees its last part
        text = without_paths(session.error.value)
        solara.Error(f"Not applied: {text}", classes=["rabm-error"])


@solara.component
def PreparingBanner(session: Session):
    """While a slow model builds: what it is doing, and that the page is still usable."""
    text = session.preparing.value
    if text is None:
        return
    with solara.Card(classes=["rabm-preparing-card"]):
        solara.v.ProgressLinear(indeterminate=True, color="primary")
        Html(
            f"**{text[0].upper()}{text[1:]}** This takes a few seconds, and again after "
            "Reset or a changed setting. Step and Play come back when it is ready; until "
            "then the charts show the previous run. The sidebar stays usable: the newest "
            "choice is built next.",
            classes=["rabm-preparing"],
        )


@solara.component
def ChartView(
    chart: charts.Chart, payload: str, tick: int, gate: FrameGate, stem: str, on_pick=None
):
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


def compare_note(policies: list[str]) -> str:
    """The line above the charts side by side: each policy with its colour (and its dash
    where the dash names the policy), then the page's one rule for dashes."""
    styles = data.policy_styles(policies)
    parts = [
        f'<span style="color:{styles[p][0]}">■</span> **{p}** ({palette.style_words(*styles[p])})'
        for p in policies
    ]
    return (
        "Side by side on the same seed (identical arrivals): "
        + ", ".join(parts)
        + ". "
        + palette.DASH_RULE
    )


@solara.component
def StatusLine(session: Session, m: DashboardModel, t: int):
    """The run on screen; while another is prepared, that one and how far it is."""
    if session.preparing.value is None:
        Html(status_text(m, t), classes=["rabm-status"])
        return
    new = session.draft.value
    demo = session.demos.get(new.demo)
    text = preparing_status(new, session.progress.value, demo.title if demo else "")
    Html(text, classes=["rabm-status", "rabm-status-preparing"])


@solara.component
def Views(session: Session):
    """Status, replay slider, charts, the applicant table and the agent view."""
    m, frame, playing = session.model.value, session.frame.value, session.playing.value
    whose = min(session.whose.value, len(m.settings.policies) - 1)
    t = session.tick()
    demo = session.demos.get(m.settings.demo)
    only = demo.charts if demo is not None else None
    chart_list = solara.use_memo(lambda: charts.charts(m, whose, only), [m, whose])
    session.gate.charts = {c.name for c in chart_list}
    runs = session.runs()
    mine = [runs[whose]]
    payloads = solara.use_memo(
        lambda: [
            charts.to_json(
                charts.payload(c, mine if c.name in APPLICANT_CHARTS else runs, t, frame, m.serial)
            )
            for c in chart_list
        ],
        [chart_list, t, frame],
    )
    StatusLine(session, m, t)
    RunTo(session)
    if m.settings.compare:
        Html(compare_note(m.settings.policies), classes=["rabm-compare-note"])
    if m.tick > 0:
        with solara.Row(classes=["rabm-replay"], style={"align-items": "center"}):
            solara.SliderInt(
                "tick shown (scrub back through the run)",
                value=t,
                min=0,
                max=m.tick - 1,
                on_value=session.handler(session.show_tick),
                disabled=playing,
            )
            if session.replay.value is not None:
                solara.Button(
                    "back to the newest tick",
                    text=True,
                    on_click=lambda: session.guarded(session.show_tick, m.tick - 1),
                )
    if m.settings.compare:
        solara.Select(
            "applicants of",
            values=m.settings.policies,
            value=m.settings.policies[whose],
            on_value=session.handler(session.set_whose),
            classes=["rabm-whose"],
            style={"max-width": "420px"},
        )
    stem = file_stem(m.settings)
    on_pick = session.handler(session.pick)
    n_core = charts.N_CORE
    with solara.ColumnsResponsive(12, large=6):
        for c, p in zip(chart_list[:n_core], payloads, strict=False):
            ChartView(c, p, t, session.gate, stem, on_pick if c.clickable else None).key(c.name)
    if n_core < len(chart_list):
        names = ", ".join(sorted(m.config.mechanisms))
        with solara.Div(classes=["rabm-section", "rabm-extensions"]):
            heading = f"World extensions on: {names}" if names else "World extensions"
            solara.HTML(tag="h3", unsafe_innerHTML=heading)
        with solara.ColumnsResponsive(12, large=6):
            for c, p in zip(chart_list[n_core:], payloads[n_core:], strict=True):
                ChartView(c, p, t, session.gate, stem).key(c.name)
    ApplicantsCard(m, runs[whose], whose, t, frame, on_pick)
    AgentView(session)
    OutcomeCard(m, session.card_frame(), session.lock)


APPLICANT_CHARTS = ("scores", "applicants")  # charts of one policy's applicants


@solara.component
def OutcomeCard(model: DashboardModel, frame: int, lock: threading.RLock):
    """The outcome card of the run so far: the figures the command line and the studies
    report, for every policy side by side."""

    def rows_now() -> list[dict[str, str]]:
        with lock:
            return data.card_rows(model)

    rows = solara.use_memo(rows_now, [model, frame])
    if not rows:
        return
    with solara.Card("Outcome card (the run so far)", classes=["rabm-card"]):
        solara.Text(
            "The same figures for every policy (docs/outcome-card.md); figures of "
            "mechanisms that are off are left out."
        )
        solara.DataFrame(pd.DataFrame(rows), items_per_page=40)


@solara.component
def ApplicantsCard(model: DashboardModel, run: data.Run, whose: int, t: int, frame: int, on_pick):
    z = model.config.n_features
    cols = solara.use_memo(lambda: data.applicant_rows(run, t, z), [model, whose, t, frame])
    items = solara.use_memo(lambda: charts.to_json({**cols, "key": cols.get("id", [])}), [cols])
    policy = model.settings.policies[whose]
    of = f" under {policy}" if model.settings.compare else ""
    title = "Applicants" if t < 0 else f"Applicants at tick {t}{of} ({data.n_rows(cols)})"
    with solara.Card(title, classes=["rabm-applicants"]):
        solara.Text(
            "Click a row (or a point in 'Every application') to follow that applicant. "
            "Click a column header to sort."
        )
        ApplicantTable.element(
            headers=_headers(TABLE_HEADERS, cols),
            rows=items,
            colours=data.OUTCOME_COLOURS,
            sort_by="score",
            on_pick=on_pick,
        )


@solara.component
def AgentView(session: Session):
    """One applicant's history up to the tick shown: every application with its score,
    threshold, goal, advice, what they did and the outcome; and their forecast."""
    cid = session.picked.value
    if cid is None:
        solara.Info(
            "Agent view: click an applicant in the table or in the 'Every "
            "application' chart to see their history."
        )
    else:
        AgentCard(session, cid)


@solara.component
def AgentCard(session: Session, cid: int):
    m, t, frame = session.model.value, session.tick(), session.frame.value
    whose = min(session.whose.value, len(m.settings.policies) - 1)
    policy = m.settings.policies[whose]
    z = m.config.n_features
    cols = solara.use_memo(
        lambda: data.applicant_history(session.runs()[whose], cid, t, z), [m, whose, cid, t, frame]
    )
    colour = data.policy_styles(m.settings.policies)[policy][0]
    with solara.Card(f"Applicant {cid}", classes=["rabm-agent"]):
        if not cols:
            solara.Text(f"Applicant {cid} has not applied by tick {t}.")
        else:
            under = f" under {policy}" if m.settings.compare else ""
            solara.Text(
                f"{len(cols['tick'])} application(s) up to tick {t}{under}; first at "
                f"tick {cols['tick'][0]}; last outcome: {cols['outcome'][-1]}.",
                classes=["rabm-agent-summary"],
            )
            spec = charts.to_json(charts.applicant_chart(cols, cid, colour))
            payload = charts.to_json({"frame": frame, "data": {"main": cols}, "signals": {}})
            VegaView.element(
                spec=spec, payload=payload, name="applicant", filename=f"applicant-{cid}.png"
            )
            items = charts.to_json({**cols, "key": list(range(len(cols["tick"])))})
            ApplicantTable.element(
                headers=_headers(HISTORY_HEADERS, cols),
                rows=items,
                colours=data.OUTCOME_COLOURS,
                sort_by="tick",
                sort_desc=False,
            )
            ForecastCard(session, cid, whose, colour)
        solara.Button(
            "close",
            on_click=lambda: session.picked.set(None),
            text=True,
            classes=["rabm-agent-close"],
        )


@solara.component
def ForecastCard(session: Session, cid: int, whose: int, colour: str):
    """ "If I follow this advice, when will I be accepted?": :mod:`dashboards.forecast`'s
    futures of the applicant from the newest tick, computed on a thread and drawn as they
    arrive; "more futures" adds :data:`~dashboards.forecast.MORE_FUTURES` each way."""
    m = session.model.value
    newest = session.replay.value is None and not session.playing.value
    wanted, set_wanted = solara.use_state(forecast.DEFAULT_FUTURES, key=f"{cid}")
    state, set_state = solara.use_state(None)
    model_for = m.models()[whose]
    spec = solara.use_memo(lambda: charts.to_json(charts.forecast_chart(colour)), [colour])

    def compute(cancel: threading.Event) -> None:
        if not newest:
            return
        with session.lock:
            begin = forecast.start(model_for, cid)
        if isinstance(begin, str):
            set_state({"why": begin})
            return
        results: dict[str, list] = {arm: [] for arm in forecast.ARMS}
        t0 = time.perf_counter()

        def publish() -> None:
            if not cancel.is_set():
                set_state(
                    {
                        "results": {k: list(v) for k, v in results.items()},
                        "wanted": wanted,
                        "seconds": time.perf_counter() - t0,
                    }
                )

        forecast.run(begin, range(wanted), results, publish, cancel)

    solara.use_thread(
        compute, dependencies=[m, m.tick, cid, whose, wanted, newest], intrusive_cancel=False
    )
    with solara.Card(
        "If I follow this advice, when will I be accepted?", classes=["rabm-forecast"]
    ):
        if not newest:
            solara.Text(
                "The forecast starts from the newest tick: press 'back to the newest "
                "tick' (and pause) to see it."
            )
            return
        if state is None:
            solara.v.ProgressLinear(indeterminate=True, class_="rabm-forecast-progress")
            return
        if "why" in state:
            solara.Text(f"No forecast: {state['why']}.", classes=["rabm-forecast-text"])
            return
        results = state["results"]
        done = len(results[forecast.ARMS[1]])
        total = state["wanted"]
        if done < total:
            solara.v.ProgressLinear(value=100 * done / total, class_="rabm-forecast-progress")
        solara.Text(forecast.CAPTION.format(h=forecast.HORIZON), classes=["rabm-forecast-caption"])
        solara.Text(
            f"{done} of {total} futures each way of applicant {cid}, from tick "
            f"{m.tick - 1}; tick 1 is the next one.",
            classes=["rabm-forecast-text"],
        )
        solara.HTML(
            tag="div",
            unsafe_innerHTML=table_html(forecast.SUMMARY_HEADERS, forecast.summary_rows(results)),
            classes=["rabm-forecast-summary"],
        )
        payload = charts.to_json(
            {"frame": done, "data": forecast.chart_data(results), "signals": {}}
        )
        VegaView.element(
            spec=spec, payload=payload, name="forecast", filename=f"forecast-{cid}.png"
        )
        if done >= total:
            solara.Button(
                f"{forecast.MORE_FUTURES} more futures each way",
                text=True,
                classes=["rabm-forecast-more"],
                on_click=lambda: set_wanted(wanted + forecast.MORE_FUTURES),
            )


@solara.component
def ExportCard(session: Session):
    m = session.model.value
    stem = file_stem(m.settings)
    with solara.Card("Export and reproduce", classes=["rabm-export"]):
        solara.Text(
            "Tables of every tick run so far (a policy column first). Each chart has "
            "its own PNG button, showing the tick on screen. The page address keeps "
            "this view: a reload or a shared link runs the same ticks again."
        )
        with solara.Row(classes=["rabm-export-buttons"]):
            solara.FileDownload(
                lambda: csv_bytes(m, "ticks"),
                filename=f"{stem}_ticks.csv",
                label="tick table (CSV)",
                mime_type="text/csv",
            )
            solara.FileDownload(
                lambda: csv_bytes(m, "candidates"),
                filename=f"{stem}_candidates.csv",
                label="candidate table (CSV)",
                mime_type="text/csv",
            )
        solara.Text("The same run from the command line (same seed, same numbers):")
        CopyBox.element(text=solara.use_memo(m.settings.cli_text, [m]))


@solara.component
def AddressBar(session: Session):
    """Keeps the page address on what is shown (not while the address's run is rebuilt)."""
    session.frame.value  # noqa: B018 (subscribe: every step and replay changes the view)
    session.replay.value  # noqa: B018
    if session.restoring.value:
        return
    Address.element(query=session.address())


@solara.component
def Page():
    router = solara.use_router()
    # one per browser tab; the address it was opened with names the run to rebuild
    session = solara.use_memo(lambda: Session(solara.reactive, router.search or ""), [])
    solara.use_effect(warm_support, [])
    solara.Style(CSS)
    solara.Title("recourse-abm")
    PageKeys.element(
        on_escape=lambda: session.drawer.set(False),
        on_width=lambda px: session.drawer.set(
            bool(isinstance(px, int | float) and px >= DRAWER_BESIDE_PX)
        ),
    )
    AddressBar(session)
    Bar(session)
    Drawer(session)
    with solara.v.Content():
        with solara.Column(gap="8px", style={"padding": "8px"}, classes=["rabm-main"]):
            ErrorBanner(session)
            PreparingBanner(session)
            Lesson(session)
            Views(session)
            ExportCard(session)
