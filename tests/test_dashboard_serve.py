"""The dashboard served to a class, in a real browser: ``recourse-abm dashboard --host
0.0.0.0 --token … --max-pages 2`` on a free port, reached at 127.0.0.1 only, driven by
Python playwright with Debian's headless chromium (setup: scripts/setup-browser.sh).

The token (refused without it, the page with it, a reload and a shared link after the
cookie), the page limit, the private statistics, and no path of the server in the page.
The guard's details are tested without a browser in test_dashboard_guard.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

# chromium, playwright and their settings as the other browser tests have them (this
# module is skipped the same way where they are missing)
from test_dashboard_browser import ARGS, CHROMIUM, TIMEOUT_MS, playwright_api

from dashboards.serve import cookie_value

pytestmark = pytest.mark.slow  # a served app in headless chromium

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "lesson-token-0123"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def fetch(url: str, cookie: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(address at 127.0.0.1, the command's output so far as a callable)."""
    log_path = tmp_path_factory.mktemp("serve") / "dashboard.log"
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "lab",
        "dashboard",
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--no-open",
        "--token",
        TOKEN,
        "--max-pages",
        "2",
    ]
    # the printed address given, so that nothing probes a network address (no packet is
    # sent by the probe, but tests touch loopback only); tests/test_dashboard_guard.py
    # checks the probe with a fake
    env = {**os.environ, "RABM_DASHBOARD_ADDRESS": "127.0.0.1"}
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}/"
    with serving(proc, base, log_path.read_text):
        yield base, port, log_path.read_text


@contextlib.contextmanager
def serving(proc: subprocess.Popen, base: str, output=lambda: "") -> Iterator[None]:
    """Wait until the server ``proc`` answers at ``base`` (any answer, a refusal too, means
    it is up), then hold it; stopped on leaving."""
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited with {proc.returncode}: {output()}")
            try:
                fetch(base + "readyz")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the server did not answer within 120 s")
                time.sleep(0.3)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def rendered(page) -> None:
    """Wait until the page has built over its websocket (its title and Step button)."""
    page.get_by_role("button", name="Step", exact=True).wait_for()
    page.locator(".rabm-title").wait_for(state="attached")


def test_the_command_prints_the_token_address_and_plain_http(server):
    _, port, output = server
    text = output()
    assert re.search(rf"serving the dashboard on http://\S+:{port}/\?token={TOKEN} ", text), text
    assert "http://0.0.0.0" not in text and "plain HTTP (not encrypted)" in text
    assert "at most 2 open pages" in text


def test_without_the_token_the_page_is_refused(server):
    base, _, _ = server
    status, body = fetch(base)
    assert status == 403 and "ask your teacher for that link" in body
    assert fetch(base + "?token=not-the-token")[0] == 403


def test_statistics_are_not_public(server):
    base, port, _ = server
    cookie = f"rabm-dashboard-{port}={cookie_value(TOKEN)}"
    status, body = fetch(base + "resourcez", cookie)
    assert status == 403 and "Server statistics" in body and "websockets" not in body


def test_the_token_opens_the_page_and_the_cookie_keeps_it_open(server, browser):
    base, _, output = server
    ctx = browser.new_context(viewport={"width": 1400, "height": 1800})
    try:
        page = ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        response = page.goto(base + f"?token={TOKEN}")
        assert response.status == 200 and "token=" not in page.url
        rendered(page)
        assert page.title() == "recourse-abm" or "recourse-abm" in page.content()
        # a reload and a shared link (no token) work in the browser that has the cookie
        page.reload()
        rendered(page)
        shared = ctx.new_page()
        shared.set_default_timeout(TIMEOUT_MS)
        # a preset whose policy menu greys out trained policies, with the reason why
        assert shared.goto(base + "?preset=paper-hard").status == 200
        rendered(shared)
        deadline = time.monotonic() + 150  # the server checks every preset's policies first
        while True:
            shared.locator(".rabm-select-policy").click()
            shared.wait_for_timeout(1000)
            if "not on this preset" in shared.content():
                break
            assert time.monotonic() < deadline, "the policy menu never said why"
            shared.reload()
            rendered(shared)
        html = page.content() + shared.content()
        for where in {str(ROOT), sys.prefix, os.path.realpath(sys.prefix), str(Path.home())}:
            assert where not in html, where
        assert re.search(r"not on this preset: [^<]*rl-a10-t1", html)  # named, not located
        shared.close()
    finally:
        ctx.close()
    assert "Could not load URL" not in output()  # no request left for a CDN


def test_a_page_over_the_limit_is_refused(server, browser):
    base, _, _ = server
    contexts = []
    try:
        for _ in range(2):
            ctx = browser.new_context(viewport={"width": 1200, "height": 900})
            contexts.append(ctx)
            page = ctx.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            deadline = time.monotonic() + 30
            # the pages of the test before close their sockets as their contexts close
            while (response := page.goto(base + f"?token={TOKEN}")).status == 503:
                assert time.monotonic() < deadline, "earlier pages stayed open"
                page.wait_for_timeout(500)
            rendered(page)
        ctx = browser.new_context()
        contexts.append(ctx)
        third = ctx.new_page()
        response = third.goto(base + f"?token={TOKEN}")
        assert response.status == 503
        assert "The dashboard is full (2 pages are open)" in third.content()
        assert "Traceback" not in third.content()
        # a page closes, and a place is free again
        contexts[0].close()
        deadline = time.monotonic() + 30
        while (response := third.goto(base)).status == 503:
            assert time.monotonic() < deadline, "a closed page still counts"
            third.wait_for_timeout(500)
        rendered(third)
    finally:
        for ctx in contexts:
            ctx.close()


@pytest.fixture(scope="module")
def idle_server():
    """``python -m dashboards.serve`` on loopback: one page at most, closed after 6 idle
    seconds (the command's --idle-minutes takes whole minutes; the server takes any)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "dashboards.serve", "--port", str(port)]
    cmd += ["--max-pages", "1", "--idle-minutes", "0.1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/"
    with serving(proc, base):
        yield base


def test_an_idle_page_is_closed_and_frees_its_place(idle_server, browser):
    """A page left alone loses its connection after the idle time, and its place in the
    page limit goes to the next student; a page in use is not closed meanwhile."""
    base = idle_server
    first, second = browser.new_context(), browser.new_context()
    try:
        page = first.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        closed = []
        page.on("websocket", lambda ws: ws.on("close", lambda _: closed.append(time.monotonic())))
        page.goto(base)
        rendered(page)
        # in use: a Step every 2 s for 8 s, longer than the idle time, keeps it open
        step = page.get_by_role("button", name="Step", exact=True)
        for _ in range(4):
            step.click()
            last_use = time.monotonic()
            page.wait_for_timeout(2000)
        assert not closed, "a page in use was closed"
        other = second.new_page()
        assert other.goto(base).status == 503  # the one place is taken
        deadline = time.monotonic() + 60
        while not closed:
            assert time.monotonic() < deadline, "the idle page stayed connected"
            page.wait_for_timeout(250)
        assert closed[0] - last_use >= 5.5  # not before its idle time (6 s)
        while (response := other.goto(base)).status == 503:
            assert time.monotonic() < deadline, "the idle page still counts"
            other.wait_for_timeout(500)
        assert response.status == 200
        rendered(other)
    finally:
        first.close()
        second.close()
