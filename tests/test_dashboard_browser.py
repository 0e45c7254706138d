"""The dashboard in a real browser: `solara run dashboards/app.py --production` on a free
localhost port, driven by Python playwright with Debian's headless chromium.

Setup: scripts/setup-browser.sh (chromium, playwright, Solara's front-end assets).
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a served app in headless chromium: ~50 s

CHROMIUM = os.environ.get("RABM_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip

if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
    pytest.skip(
        f"chromium not found at {CHROMIUM}: run scripts/setup-browser.sh", allow_module_level=True
    )
playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed: run scripts/setup-browser.sh"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    cdn = Path(sys.prefix) / "share" / "solara" / "cdn" / "@widgetti"
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "-m", "solara", "run", str(ROOT / "dashboards" / "app.py"),
           "--host", "127.0.0.1", "--port", str(port), "--no-open", "--production"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"solara exited with {proc.returncode}: {proc.stdout.read().decode()[-2000:]}"
                )
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("solara did not answer within 60 s")
                time.sleep(0.3)
        if not cdn.exists():
            pytest.fail(
                f"Solara's front-end assets are missing ({cdn}): run scripts/setup-browser.sh"
            )
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def open_page(browser, url):
    page = browser.new_context(viewport={"width": 1400, "height": 1800}).new_page()
    # generous upper bounds: CI shares 2 cores with the rest of the parallel suite
    page.set_default_timeout(90_000)
    page.goto(url)
    # the page builds over a websocket after load: wait for Mesa's Step button
    page.get_by_role("button", name="Step", exact=True).wait_for(timeout=60_000)
    page.get_by_text(re.compile(r"tick 0 of \d+")).wait_for()
    return page


def status(page) -> str:
    return page.locator(".rabm-status").inner_text()


def step(page, expect_tick: int) -> None:
    page.get_by_role("button", name="Step", exact=True).click()
    page.get_by_text(re.compile(rf"tick {expect_tick} of \d+")).wait_for()


def field(page, label: str):
    return page.locator(".v-input", has=page.locator("label", has_text=label))


def choose(page, label: str, option: str) -> None:
    field(page, label).locator(".v-select__slot").click()
    menu = page.locator(
        ".menuable__content__active .v-list-item",
        has_text=re.compile(rf"^\s*{re.escape(option)}\s*$"),
    )
    menu.click()


def test_page_loads_with_charts_and_controls(server, browser):
    page = open_page(browser, server)
    assert "scenario paper" in status(page) and "policy threshold" in status(page)
    for name in ("Reset", "Step"):
        assert page.get_by_role("button", name=name, exact=True).is_visible()
    # six Vega charts drawn (canvas or svg), plus the comparison hint and the table
    page.wait_for_function(
        "document.querySelectorAll('.rabm-chart canvas, .rabm-chart svg').length >= 6"
    )
    assert page.get_by_text("Side by side").is_visible()
    assert page.locator(".rabm-table").count() == 1
    page.context.close()


def test_change_policy_then_step_updates_tick_and_charts(server, browser):
    page = open_page(browser, server)
    choose(page, "policy", "none")
    page.get_by_text(re.compile(r"policy none")).wait_for()
    chart = page.locator(".rabm-chart").nth(1)  # the score histogram
    page.wait_for_function(
        "document.querySelectorAll('.rabm-chart canvas, .rabm-chart svg').length >= 6"
    )
    before = chart.screenshot()
    step(page, 1)
    page.wait_for_timeout(500)  # let Vega redraw
    assert chart.screenshot() != before
    step(page, 2)
    assert "policy none" in status(page)
    # the agent table lists this tick's applicants, with the no-advice status
    rows = page.locator(".rabm-table tbody tr")
    assert rows.count() >= 1
    assert page.locator(".rabm-table").get_by_text("no advice").count() >= 1
    page.context.close()


def test_bad_parameter_shows_the_error_and_keeps_running(server, browser):
    page = open_page(browser, server)
    beta = field(page, "β").locator("input")
    beta.fill("-1")
    beta.press("Enter")
    error = page.locator(".rabm-error")
    error.wait_for()
    assert "beta = -1 is not allowed; allowed: a number in (0, inf]" in error.inner_text()
    step(page, 1)  # the page did not crash: the previous model still steps
    beta.fill("0.02")
    beta.press("Enter")
    page.get_by_text(re.compile(r"tick 0 of")).wait_for()
    # the valid value clears the message (a separate re-render, so wait for it)
    page.locator(".rabm-error").wait_for(state="detached")
    page.context.close()


def test_two_sessions_do_not_share_a_model(server, browser):
    a = open_page(browser, server)
    b = open_page(browser, server)
    step(a, 1)
    step(a, 2)
    b.reload()
    b.get_by_role("button", name="Step", exact=True).wait_for(timeout=60_000)
    assert status(b).startswith("tick 0 of")
    step(b, 1)
    assert status(a).startswith("tick 2 of")
    a.context.close()
    b.context.close()
