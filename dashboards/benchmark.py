"""Time the dashboard: the server alone, or the whole path through a real browser.

    python dashboards/benchmark.py [--n-initial 1000] [--steps 30] [--compare none ...]
    python dashboards/benchmark.py --browser [--n-initial 1000] [--steps 30] [--play 10]
        [--compare threshold-true --compare none --compare threshold-estimated]
    python dashboards/benchmark.py --demo-start [DEMO ...] [--demo-repeats 3]
        [--demo-cache shipped|off]

``--compare`` (up to three times) adds policies side by side on the same seed.

Demo start (``--demo-start``): each demo (none named: all) is chosen in a fresh process on
a new page's session, as a just-started server does, and timed until its model is ready;
before a fresh install's first use only the shipped trained states exist, so each process
gets an empty user cache (``--demo-cache off``: no stored state at all, every preparation
runs in full). Two figures: with the check of which policies the preset runs done when
the demo is chosen (a server that has just started), and done before (a server checks
every preset on a thread at start).

Server (default): renders the page in-process with Solara's test tooling (no browser),
sets N₀ through the sidebar slider, clicks Step and times each click: the model tick, the
data behind every view and Solara's render pass.

Browser (``--browser``): serves the app with ``solara run --production`` and drives
headless chromium (Debian's, as the browser tests; ``RABM_CHROMIUM`` overrides the path)
with playwright. Redraw after Step is the time from the click to the moment the last
chart has drawn the new tick, both taken by the page's own clock (each chart logs when it
drew a frame). Play is pressed for ``--play`` seconds: ticks/s is the rate at which the
model advanced; frames/s how often the charts were redrawn (frames are skipped, never
queued, when drawing cannot keep up).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path
from typing import Any

APP = Path(__file__).resolve().parent / "app.py"
SPEED_CHOICES = (2, 10, 20)  # the ticks/s of dashboards.app.SPEEDS
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--no-first-run",
]
# a widget's own event, as using it sends (the slider's "change" on release, a select's "input")
SET_SLIDER_JS = """([name, value]) => {
    let vm = document.querySelector('.rabm-slider-' + name).__vue__;
    while (vm && !(vm.$listeners && vm.$listeners.change)) vm = vm.$children[0];
    vm.$emit('change', value);
    return true;
}"""
EMIT_JS = """(el, [event, value]) => {
    let vm = el.__vue__;
    while (vm && !(vm.$listeners && vm.$listeners[event])) vm = vm.$children[0];
    vm.$emit(event, value);
    return true;
}"""
DRAWN_JS = """() => Array.from(document.querySelectorAll('.rabm-chart[data-chart]'))
    .filter(e => !e.closest('.rabm-agent')).map(e => Number(e.dataset.drawn ?? -1))"""


def step_and_wait(page: Any, step: Any) -> int:
    """Click ``step`` and wait until every chart has drawn a newer frame; returns the
    newest frame drawn before the click."""
    before = max(page.evaluate(DRAWN_JS))
    step.click()
    page.wait_for_function(f"(b) => ({DRAWN_JS})().every(f => f > b)", arg=before, polling="raf")
    return before


def summary(name: str, ms: list[float]) -> str:
    s = sorted(ms)
    p90 = statistics.quantiles(s, n=10, method="inclusive")[-1] if len(s) > 1 else s[0]
    return (
        f"{name}: median {statistics.median(s):.0f} ms, p90 {p90:.0f} ms, "
        f"min {s[0]:.0f} ms, max {s[-1]:.0f} ms over {len(s)} steps"
    )


def server(n_initial: int, steps: int, compare: list[str]) -> None:
    warnings.filterwarnings("ignore")
    import ipyvuetify as v
    import solara

    from dashboards import app

    _, rc = solara.render(solara.AppLayout(children=[app.Page()]), handle_error=False)
    slider = [w for w in rc.find(v.Slider).widgets if "N₀" in str(w.label)][0]
    slider.fire_event("change", n_initial)

    def built() -> None:
        while rc.find(v.Btn, children=["Step"]).widget.disabled:  # a slow build: "preparing"
            time.sleep(0.05)

    built()
    for name, spec in zip(app.COMPARE_INPUTS, compare, strict=False):
        select = [
            w
            for w in rc.find(v.Select).widgets
            if f"rabm-select-{name}" in (w.class_ or "").split()
        ]
        select[0].v_model = spec
        built()
    times = []
    for _ in range(steps):
        button = rc.find(v.Btn, children=["Step"]).widget
        t0 = time.perf_counter()
        button.click()
        times.append(1000 * (time.perf_counter() - t0))
    print(
        f"N0={n_initial}, {1 + len(compare)} policies, server only (step + data + render, "
        "no browser)"
    )
    print(summary("step", times))
    rc.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve() -> tuple[subprocess.Popen, str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [
        sys.executable,
        "-m",
        "solara",
        "run",
        str(APP),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-open",
        "--production",
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "REACTON_FAST": "1"},
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("the dashboard did not start") from None
            time.sleep(0.3)


def browser(n_initial: int, steps: int, play_s: float, play_rate: int, compare: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("RABM_CHROMIUM", "/usr/bin/chromium")
    proc, url = _serve()
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
            page = b.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(120_000)
            page.goto(url)
            step = page.get_by_role("button", name="Step", exact=True)
            step.wait_for()
            # the longest episode, so that Play does not reach its end
            page.evaluate(SET_SLIDER_JS, ["ticks", 300])
            page.get_by_text("episode length (ticks) = 300").wait_for()
            page.evaluate(SET_SLIDER_JS, ["n_initial", n_initial])
            page.get_by_text(f"N₀ = {n_initial}").wait_for()
            names = ("compare", "compare_2", "compare_3")  # dashboards.app.COMPARE_INPUTS
            for name, spec in zip(names, compare, strict=False):
                page.locator(f".rabm-select-{name}").evaluate(EMIT_JS, ["input", spec])
                page.locator(".rabm-status").get_by_text(spec).wait_for()
            page.wait_for_function(f"({DRAWN_JS})().length >= 6")
            page.wait_for_timeout(1000)
            page.evaluate(
                "document.addEventListener('click', () => { "
                "window.rabmClick = performance.now(); }, true)"
            )
            redraw, first, draw = [], [], {}
            for n in range(1, steps + 1):
                before = step_and_wait(page, step)
                frame = page.evaluate(
                    "(b) => window.rabmDrawn.filter(d => d.frame > b && !['applicant', 'forecast'].includes(d.chart))"
                    ".map(d => ({chart: d.chart, arrived: d.arrived - window.rabmClick, "
                    "drawn: d.t - window.rabmClick}))",
                    before,
                )
                redraw.append(max(d["drawn"] for d in frame))
                first.append(min(d["arrived"] for d in frame))
                for d in frame:
                    draw.setdefault(d["chart"], []).append(d["drawn"] - d["arrived"])
                page.get_by_text(re.compile(rf"\b{n} of \d+ ticks run")).wait_for()
            print(f"N0={n_initial}, {1 + len(compare)} policies, headless chromium ({chromium})")
            print(summary("redraw after Step (click to last chart drawn)", redraw))
            print(summary("  click to the first chart's new data (server, network)", first))
            print(
                "  drawing per chart (median ms): "
                + ", ".join(f"{c} {statistics.median(ms):.0f}" for c, ms in draw.items())
            )
            if play_s > 0:
                from dashboards.app import SPEEDS

                speed = [label for label, rate in SPEEDS.items() if rate == play_rate][0]
                page.locator(".rabm-controls .v-select").evaluate(EMIT_JS, ["input", speed])
                page.wait_for_timeout(500)
                page.evaluate("window.rabmDrawn = []")
                page.get_by_role("button", name="Play", exact=True).click()
                page.wait_for_timeout(int(play_s * 1000))
                page.get_by_role("button", name="Pause", exact=True).click()
                page.get_by_role("button", name="Play", exact=True).wait_for()
                log = page.evaluate("window.rabmDrawn.filter(d => d.chart === 'reliability')")
                first, last = log[0], log[-1]
                seconds = (last["t"] - first["t"]) / 1000
                ticks = last["tick"] - first["tick"]
                print(
                    f"Play at '{speed}': {ticks / seconds:.1f} ticks/s, "
                    f"{(len(log) - 1) / seconds:.1f} frames/s drawn ({ticks} ticks, "
                    f"{len(log)} frames in {seconds:.1f} s)"
                )
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def demo_start_once(name: str, checked: bool = False) -> dict[str, float]:
    """In this (fresh) process: seconds to import the app, and from choosing demo ``name``
    on a new page's session to its model being ready (Step enabled), as the server does;
    ``checked``: after the preset's policies were checked, as a server does at start."""
    t0 = time.perf_counter()
    import solara

    from dashboards import app

    imported = time.perf_counter() - t0
    session = app.Session(solara.reactive)
    title = session.demos[name].title
    if checked:
        app.policy_support(session.demos[name].preset)
    t1 = time.perf_counter()
    session.guarded(session.demo, title)
    while session.building:
        time.sleep(0.01)
    ready = time.perf_counter() - t1
    if session.error.value or session.model.value.settings.demo != name:
        raise SystemExit(f"demo {name} did not start: {session.error.value}")
    return {"import_s": imported, "start_s": ready}


def demo_start(names: list[str], repeats: int, cache: str) -> None:
    """Demo start time: each demo chosen in a fresh process, ``repeats`` times.

    ``cache="shipped"`` gives each process an empty user cache (RABM_CACHE_DIR), so only
    the states shipped in the package serve, as after a fresh install; ``"off"`` turns
    every stored state off, so slow preparations run in full."""
    import json
    import tempfile

    from dashboards.demos import DEMOS

    names = names or [d.name for d in DEMOS]
    code = "import json, sys; from dashboards.benchmark import demo_start_once; "
    code += "print(json.dumps(demo_start_once(sys.argv[1], sys.argv[2] == 'at start')))"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"demo start, {os.cpu_count()} CPUs, load average {load}, stored states: {cache}")
    for name in names:
        rows: dict[str, list[dict[str, float]]] = {"on demand": [], "at start": []}
        for _ in range(repeats):
            for when, found in rows.items():
                with tempfile.TemporaryDirectory(prefix="rabm-cache-") as empty:
                    env = {**os.environ, "RABM_CACHE_DIR": empty if cache == "shipped" else "off"}
                    out = subprocess.run(
                        [sys.executable, "-c", code, name, when],
                        env=env,
                        capture_output=True,
                        text=True,
                        check=True,
                        cwd=APP.parents[1],
                    )
                found.append(json.loads(out.stdout.strip().splitlines()[-1]))
        for when, found in rows.items():
            start = [r["start_s"] for r in found]
            print(
                f"{name}, policies checked {when}: start median {statistics.median(start):.2f} s,"
                f" min {min(start):.2f} s, max {max(start):.2f} s over {len(found)} fresh "
                f"processes (app import before it: median "
                f"{statistics.median(r['import_s'] for r in found):.2f} s)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-initial", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--browser", action="store_true", help="time the browser path")
    parser.add_argument("--play", type=float, default=10.0, help="seconds of Play (browser)")
    parser.add_argument(
        "--speed", type=int, default=10, choices=SPEED_CHOICES, help="Play speed, ticks/s (browser)"
    )
    parser.add_argument(
        "--compare", action="append", default=[], help="a policy side by side (up to three times)"
    )
    parser.add_argument(
        "--demo-start",
        nargs="*",
        metavar="DEMO",
        help="time choosing these demos (none named: all) in fresh processes",
    )
    parser.add_argument("--demo-repeats", type=int, default=3, help="fresh processes per demo")
    parser.add_argument(
        "--demo-cache", choices=("shipped", "off"), default="shipped", help="stored states used"
    )
    parser.add_argument(
        "--class-load",
        nargs=2,
        type=int,
        metavar=("PAGES", "PLAYING"),
        help="PAGES open on the class server, PLAYING of them playing: a page's redraw after Step",
    )
    parser.add_argument(
        "--class-server",
        type=int,
        metavar="PLAYING",
        help="the server alone: PLAYING pages playing in-process, a page's Step timed",
    )
    parser.add_argument(
        "--others-nice",
        type=int,
        default=0,
        metavar="N",
        help="class load: the other pages' chromium at this lower priority, 0 to 19",
    )
    args = parser.parse_args()
    if args.class_server is not None:
        class_server(args.class_server, args.steps)
        return
    if args.class_load:
        if not 0 <= args.others_nice <= 19:
            parser.error(f"--others-nice is {args.others_nice}; allowed: 0 to 19")
        class_load(*args.class_load, args.steps, args.others_nice)
        return
    if args.demo_start is not None:
        demo_start(args.demo_start, args.demo_repeats, args.demo_cache)
        return
    if len(args.compare) > 3:
        parser.error(f"--compare given {len(args.compare)} times; allowed: at most 3")
    if args.browser:
        browser(args.n_initial, args.steps, args.play, args.speed, args.compare)
    else:
        server(args.n_initial, args.steps, args.compare)


def class_server(playing: int, steps: int) -> None:
    """The server's side of a class, without browsers: ``playing`` pages play at the
    default speed in this process, each frame taken as drawn at once (a student's device
    that never holds Play back, the most a page can ask of the server), and one more
    page's Step is timed from click to the end of the server's render. The browsers'
    drawing is left out: add the measured page's own redraw (``--browser``) to it."""
    warnings.filterwarnings("ignore")
    import ipyvuetify as v
    import solara

    from dashboards import app

    app.FrameGate.ready = lambda self: True  # every frame drawn at once
    published = [0]
    publish = app.Session.publish

    def counted(self: Any) -> None:
        published[0] += 1
        publish(self)

    app.Session.publish = counted

    def button(rc: Any, name: str) -> Any:
        found = rc.find(v.Btn, children=[name])
        return found.widget if found.widgets else None

    pages = []
    for i in range(playing + 1):
        _, rc = solara.render(solara.AppLayout(children=[app.Page()]), handle_error=False)
        if i < playing:
            ticks = [w for w in rc.find(v.Slider).widgets if "episode length" in str(w.label)]
            ticks[0].fire_event("change", 300)  # Play then lasts 30 s
        pages.append(rc)
    players, rc = pages[:playing], pages[-1]
    for q in players:
        button(q, "Play").click()
    times = []
    cpu0, wall0, frames0 = time.process_time(), time.monotonic(), published[0]
    for _ in range(steps):
        for q in players:  # a page at the end of its episode starts again
            if button(q, "Pause") is None:
                button(q, "Reset").click()
                button(q, "Play").click()
        time.sleep(0.5)  # a student's pace: the players run meanwhile
        step = button(rc, "Step")
        t0 = time.perf_counter()
        step.click()
        times.append(1000 * (time.perf_counter() - t0))
    wall = time.monotonic() - wall0
    cpu = time.process_time() - cpu0
    rate = (published[0] - frames0 - steps) / wall / max(playing, 1)
    for q in players:
        pause = button(q, "Pause")
        if pause is not None:
            pause.click()
    print(
        f"{playing} pages playing at the default speed and settings, every frame drawn at "
        f"once ({rate:.1f} frames/s each), in this process; {os.cpu_count()} CPUs; server "
        f"CPU {cpu / wall:.2f} cores (one Python process)"
    )
    print(summary("a page's Step, click to the server's render done", times))
    for q in pages:
        q.close()


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds used so far by process ``pid`` (with its threads) and by the computer."""
    import psutil

    t, all_ = psutil.Process(pid).cpu_times(), psutil.cpu_times()
    busy = (
        all_.user + all_.nice + all_.system + getattr(all_, "irq", 0) + getattr(all_, "softirq", 0)
    )
    return t.user + t.system, busy


def class_load(pages: int, playing: int, steps: int, others_nice: int = 0) -> None:
    """A class on one laptop: ``pages`` pages open on the server that ``recourse-abm
    dashboard`` runs (dashboards/serve.py), ``playing`` of them playing at the default
    speed with the default settings (the episode lengthened so that Play lasts), and one
    more page's redraw after Step, click to last chart drawn, as ``--browser`` times it.

    The measured page has a headless chromium of its own; the other pages share a second
    one. In a class each student's device draws its own page, so where those browsers share
    this computer's cores the figure is pessimistic: ``others_nice`` (0 to 19) runs the
    second chromium at that lower priority, standing in for the students' devices while
    its pages still load the server (frames/s says how much they asked of it).
    """
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("RABM_CHROMIUM", "/usr/bin/chromium")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "REACTON_FAST": "1"}
    env.pop("RABM_DASHBOARD_TOKEN", None)
    cmd = [sys.executable, "-m", "dashboards.serve", "--port", str(port), "--max-pages", str(pages)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=APP.parents[1],
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url + "readyz", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("the dashboard did not start") from None
            time.sleep(0.3)
    with tempfile.TemporaryDirectory() as tmp:
        others_exe = chromium
        if others_nice:
            others_exe = os.path.join(tmp, "chromium-niced")
            with open(others_exe, "w") as f:
                f.write(f'#!/bin/sh\nexec nice -n {others_nice} {chromium} "$@"\n')
            os.chmod(others_exe, 0o755)
        try:
            with sync_playwright() as p:
                _class_load(p, url, proc, pages, playing, steps, chromium, others_exe, others_nice)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _open(browser: Any, url: str, n: int) -> list[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 1400})
    context.set_default_timeout(300_000)
    opened = []
    for _ in range(n):
        page = context.new_page()
        page.goto(url)
        page.get_by_role("button", name="Step", exact=True).wait_for()
        opened.append(page)
    return opened


def _frames(pages: list[Any]) -> list[int]:
    """The newest frame each page has drawn."""
    return [max(q.evaluate(DRAWN_JS), default=-1) for q in pages]


def _class_load(
    p: Any,
    url: str,
    proc: subprocess.Popen,
    pages: int,
    playing: int,
    steps: int,
    chromium: str,
    others_exe: str,
    others_nice: int,
) -> None:
    mine = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
    others_browser = p.chromium.launch(
        executable_path=others_exe, headless=True, args=CHROMIUM_ARGS
    )
    t0 = time.monotonic()
    others = _open(others_browser, url, pages - 1)
    page = _open(mine, url, 1)[0]
    print(f"{pages} pages open in {time.monotonic() - t0:.0f} s")
    players = others[:playing]
    for q in players:
        q.evaluate(SET_SLIDER_JS, ["ticks", 300])  # Play then lasts 30 s or more
        q.get_by_text("episode length (ticks) = 300").wait_for()
        q.get_by_role("button", name="Play", exact=True).click()
    step = page.get_by_role("button", name="Step", exact=True)
    page.wait_for_function(f"({DRAWN_JS})().length >= 6")
    page.evaluate(
        "document.addEventListener('click', () => { window.rabmClick = performance.now(); }, true)"
    )
    redraw, playing_now, frames = [], [], 0
    cpu0, wall0 = _cpu_seconds(proc.pid), time.monotonic()
    for _ in range(steps):
        # a page that reached the end of its episode starts again: they keep playing
        before_frames = _frames(players)
        for q in players:
            if not q.get_by_role("button", name="Pause", exact=True).count():
                q.get_by_role("button", name="Reset", exact=True).click()
                q.get_by_role("button", name="Play", exact=True).click()
        playing_now.append(
            sum(q.get_by_role("button", name="Pause", exact=True).count() for q in players)
        )
        before = step_and_wait(page, step)
        drawn = page.evaluate(
            "(b) => window.rabmDrawn.filter(d => d.frame > b && "
            "!['applicant', 'forecast'].includes(d.chart)).map(d => d.t - window.rabmClick)",
            before,
        )
        redraw.append(max(drawn))
        frames += sum(max(b - a, 0) for a, b in zip(before_frames, _frames(players), strict=True))
    wall = time.monotonic() - wall0
    server_cpu, everything = (b - a for a, b in zip(cpu0, _cpu_seconds(proc.pid), strict=True))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    where = f"at nice {others_nice}" if others_nice else "at the same priority"
    print(
        f"{pages} open pages, {playing} playing at the default speed (at least "
        f"{min(playing_now)} playing at each Step, {frames / wall / playing:.1f} frames/s "
        f"each), default settings; {os.cpu_count()} CPUs, load average {load}; the other "
        f"pages' headless chromium on the same computer, {where}"
    )
    print(summary("a page's redraw after Step (click to last chart drawn)", redraw))
    print(
        f"CPU while measured ({wall:.0f} s): server {server_cpu / wall:.2f} cores, "
        f"the whole computer {everything / wall:.2f} of {os.cpu_count()} cores"
    )
    mine.close()
    others_browser.close()


if __name__ == "__main__":
    main()
