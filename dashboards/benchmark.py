"""Time the dashboard: the server alone, or the whole path through a real browser.

    python dashboards/benchmark.py [--n-initial 1000] [--steps 30] [--compare none ...]
    python dashboards/benchmark.py --browser [--n-initial 1000] [--steps 30] [--play 10]
        [--compare threshold-true --compare none --compare threshold-estimated]

``--compare`` (up to three times) adds policies side by side on the same seed.

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
import time
import urllib.request
import warnings
from pathlib import Path

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


def summary(name: str, ms: list[float]) -> str:
    s = sorted(ms)
    return (
        f"{name}: median {statistics.median(s):.0f} ms, p90 {s[int(0.9 * (len(s) - 1))]:.0f} ms, "
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
                before = max(page.evaluate(DRAWN_JS))
                step.click()
                page.wait_for_function(
                    f"(b) => ({DRAWN_JS})().every(f => f > b)", arg=before, polling="raf"
                )
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
    args = parser.parse_args()
    if len(args.compare) > 3:
        parser.error(f"--compare given {len(args.compare)} times; allowed: at most 3")
    if args.browser:
        browser(args.n_initial, args.steps, args.play, args.speed, args.compare)
    else:
        server(args.n_initial, args.steps, args.compare)


if __name__ == "__main__":
    main()
