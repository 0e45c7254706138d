"""Serving the dashboard to a class, without a browser: the guard in front of Solara
(dashboards/serve.py) driven with a fake ASGI app, the command's address, token and
limits (lab/commands/dashboard.py), the page's own limits and the paths it never shows
(dashboards/settings.py). The browser tests are in test_dashboard_serve.py."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from abm.validation import ConfigError
from dashboards import serve
from dashboards import settings as dsettings
from lab.cli import app
from lab.commands import dashboard as command

TOKEN = "class-token-123"
PORT = 8765
COOKIE = f"rabm-dashboard-{PORT}={serve.cookie_value(TOKEN)}"


# -- driving the guard -----------------------------------------------------------------------
class FakeApp:
    """Answers HTTP with 200 "app"; accepts a websocket and reads it until it ends."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope, receive, send):
        self.calls.append(scope["path"])
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"app"})
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return


def scope_of(path, kind="http", query="", cookie=None):
    headers = [(b"cookie", cookie.encode())] if cookie else []
    scope = {
        "type": kind,
        "path": path,
        "query_string": query.encode(),
        "headers": headers,
        "server": ("127.0.0.1", PORT),
    }
    if kind == "http":
        scope["method"] = "GET"
    return scope


async def call(guard, scope):
    """The messages ``guard`` sends for one request (a websocket that the fake client
    leaves at once)."""
    sent = []
    incoming = [{"type": "websocket.connect"}, {"type": "websocket.disconnect", "code": 1000}]

    async def receive():
        return incoming.pop(0) if incoming else {"type": "websocket.disconnect", "code": 1000}

    async def send(message):
        sent.append(message)

    await guard(scope, receive, send)
    return sent


def status_of(sent):
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def body_of(sent):
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()


def header(sent, name):
    start = next(m for m in sent if m["type"] == "http.response.start")
    return dict(start["headers"]).get(name.encode(), b"").decode()


def run(coro):
    return asyncio.run(coro)


# -- the token -------------------------------------------------------------------------------
def test_without_the_token_a_page_is_refused_in_one_line():
    fake = FakeApp()
    sent = run(call(serve.Guard(fake, token=TOKEN), scope_of("/")))
    assert status_of(sent) == 403 and "ask your teacher" in body_of(sent)
    assert "Traceback" not in body_of(sent) and fake.calls == []
    sent = run(call(serve.Guard(fake, token=TOKEN), scope_of("/", query="token=wrong-token")))
    assert status_of(sent) == 403 and fake.calls == []


def test_the_token_sets_an_http_only_cookie_and_leaves_the_address():
    guard = serve.Guard(FakeApp(), token=TOKEN)
    sent = run(call(guard, scope_of("/", query=f"demo=1&token={TOKEN}")))
    assert status_of(sent) == 303
    assert header(sent, "location") == "/?demo=1"
    cookie = header(sent, "set-cookie")
    assert cookie.startswith(COOKIE + ";") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert TOKEN not in cookie  # the cookie is derived from the token, not the token


def test_the_cookie_lets_pages_assets_and_websockets_through():
    fake = FakeApp()
    guard = serve.Guard(fake, token=TOKEN)
    for path in ("/", "/static/main.js"):
        assert status_of(run(call(guard, scope_of(path, cookie=COOKIE)))) == 200
    sent = run(
        call(guard, scope_of("/jupyter/api/kernels/k1/channels", "websocket", cookie=COOKIE))
    )
    assert sent[0]["type"] == "websocket.accept"
    assert fake.calls == ["/", "/static/main.js", "/jupyter/api/kernels/k1/channels"]
    # another port's cookie (another dashboard on the same computer) does not count
    other = f"rabm-dashboard-9999={serve.cookie_value(TOKEN)}"
    assert status_of(run(call(guard, scope_of("/", cookie=other)))) == 403


def test_a_websocket_without_the_cookie_is_refused_before_it_opens():
    fake = FakeApp()
    path = "/jupyter/api/kernels/k1/channels"
    sent = run(call(serve.Guard(fake, token=TOKEN), scope_of(path, "websocket", query="token=x")))
    assert (
        sent == [{"type": "websocket.close", "code": 1008, "reason": serve.NEED_TOKEN[:120]}]
        and not fake.calls
    )


def test_no_token_serves_everyone():
    assert status_of(run(call(serve.Guard(FakeApp()), scope_of("/")))) == 200


# -- what is private, what is offline --------------------------------------------------------
def test_server_statistics_are_refused_when_serving_the_network():
    guard = serve.Guard(FakeApp(), token=TOKEN, private=True)
    for path in ("/resourcez", "/_solara/api/evict/k1"):
        sent = run(call(guard, scope_of(path, cookie=COOKIE)))
        assert status_of(sent) == 403 and "Server statistics" in body_of(sent)
    assert status_of(run(call(serve.Guard(FakeApp()), scope_of("/resourcez")))) == 200


def test_cdn_requests_are_served_from_the_offline_assets_only(tmp_path):
    (tmp_path / "requirejs@2.3.6").mkdir()
    (tmp_path / "requirejs@2.3.6" / "require.js").write_text("x")
    (tmp_path / "vega@5").mkdir()
    (tmp_path / "vega@5" / "__main.js").write_text("x")
    guard = serve.Guard(FakeApp(), cdn_dir=tmp_path)
    for rel, status in [
        ("requirejs@2.3.6/require.js", 200),
        ("vega@5", 200),  # a bare package name is its __main.js, as Solara stores it
        ("requirejs@2.3.6/missing.js", 404),
        ("../../../etc/passwd", 404),
    ]:
        sent = run(call(guard, scope_of(serve.CDN_PREFIX + rel)))
        assert status_of(sent) == status, rel
    # without offline assets Solara's proxy is left to do its work
    guard = serve.Guard(FakeApp(), cdn_dir=tmp_path / "absent")
    assert status_of(run(call(guard, scope_of(serve.CDN_PREFIX + "x@1/y.js")))) == 200


# -- open pages and idle pages ---------------------------------------------------------------
def test_a_page_over_the_limit_gets_one_line_503():
    async def scenario():
        fake = FakeApp()
        guard = serve.Guard(fake, max_pages=2)
        holds = []
        for i in (1, 2):
            session = f"solara-session-id=s{i}"
            path = f"/jupyter/api/kernels/k{i}/channels"
            queue: asyncio.Queue = asyncio.Queue()
            queue.put_nowait({"type": "websocket.connect"})

            async def send(message):
                pass

            task = asyncio.create_task(
                guard(scope_of(path, "websocket", cookie=session), queue.get, send)
            )
            holds.append((task, queue))
        await asyncio.sleep(0.05)
        assert len(guard.open) == 2
        sent = await call(guard, scope_of("/", cookie="solara-session-id=s3"))
        assert status_of(sent) == 503 and "full (2 pages are open)" in body_of(sent)
        # a reload of an open page comes while its old socket is still open
        assert status_of(await call(guard, scope_of("/", cookie="solara-session-id=s1"))) == 200
        # assets of open pages still load; a third socket is refused
        assert status_of(await call(guard, scope_of("/static/x.js"))) == 200
        sent = await call(guard, scope_of("/jupyter/api/kernels/k3/channels", "websocket"))
        assert sent[0]["type"] == "websocket.close" and "k3" not in "".join(fake.calls)
        task, queue = holds[0]
        queue.put_nowait({"type": "websocket.disconnect", "code": 1000})
        await task
        assert len(guard.open) == 1
        assert status_of(await call(guard, scope_of("/", cookie="solara-session-id=s3"))) == 200
        holds[1][1].put_nowait({"type": "websocket.disconnect", "code": 1000})
        await holds[1][0]

    run(scenario())


def test_an_idle_page_is_closed_its_kernel_freed_and_its_reconnect_refused():
    closed = []

    async def scenario():
        guard = serve.Guard(FakeApp(), idle_s=0.2, on_idle=lambda k, p: closed.append((k, p)))
        sent = []
        queue: asyncio.Queue = asyncio.Queue()
        queue.put_nowait({"type": "websocket.connect"})

        async def send(message):
            sent.append(message)

        path = "/jupyter/api/kernels/k1/channels"
        scope = scope_of(path, "websocket", query="session_id=p1")
        task = asyncio.create_task(guard(scope, queue.get, send))
        await asyncio.sleep(0.15)
        queue.put_nowait({"type": "websocket.receive", "text": "{}"})  # the student clicks
        await asyncio.sleep(0.15)
        assert not task.done()  # 0.3 s since it opened, 0.15 s since the click
        await asyncio.wait_for(task, 2)
        assert sent[-1] == {"type": "websocket.close", "code": serve.IDLE_CLOSE_CODE}
        assert guard.open == {} and "k1" in guard.expired
        again = await call(guard, scope_of(path, "websocket"))
        assert again[0]["type"] == "websocket.close" and "reload" in again[0]["reason"]

    run(scenario())
    assert closed == [("k1", "p1")]


# -- the command -----------------------------------------------------------------------------
def test_loopback_addresses():
    for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert command.is_loopback(host) and serve.is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "myhost"):
        assert not command.is_loopback(host) and not serve.is_loopback(host), host


def test_the_printed_address_is_the_lan_address(monkeypatch):
    def no_network():
        raise OSError("network is unreachable")

    monkeypatch.delenv(command.LAN_ENV, raising=False)

    assert command.lan_address("0.0.0.0", probe=lambda: "192.168.1.20") == "192.168.1.20"
    assert command.lan_address("::", probe=lambda: "10.0.0.7") == "10.0.0.7"
    assert command.lan_address("0.0.0.0", probe=no_network, hostname=lambda: "lab-pc") == "lab-pc"
    assert command.lan_address("0.0.0.0", probe=lambda: "127.0.1.1", hostname=lambda: "pc") == "pc"
    assert command.lan_address("192.168.1.9", probe=no_network) == "192.168.1.9"
    monkeypatch.setenv(command.LAN_ENV, "10.1.2.3")  # given: no probe at all
    assert command.lan_address("0.0.0.0", probe=no_network) == "10.1.2.3"
    assert (
        command.page_url("192.168.1.20", 8765, "a-b_c") == "http://192.168.1.20:8765/?token=a-b_c"
    )
    assert command.page_url("fe80::1", 80, None) == "http://[fe80::1]:80/"


def test_limits_apply_off_loopback_unless_set():
    assert command.limits_for("127.0.0.1") == command.Limits(None, None, None, None)
    assert command.limits_for("0.0.0.0") == command.CLASS_LIMITS
    assert command.limits_for("0.0.0.0", max_pages=2).max_pages == 2
    assert command.limits_for("127.0.0.1", max_n0=500).environment() == {
        "RABM_DASHBOARD_MAX_N0": "500"
    }
    assert "at most 30 open pages" in command.CLASS_LIMITS.text()


def test_the_server_command_carries_no_token():
    cmd = command.serve_command("0.0.0.0", 9000, True, max_pages=2, idle_minutes=5)
    assert cmd[1:3] == ["-m", "dashboards.serve"]
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0" and cmd[cmd.index("--port") + 1] == "9000"
    assert cmd[cmd.index("--max-pages") + 1] == "2" and "--dev" not in cmd
    assert not any("token" in part for part in cmd)
    assert "--dev" in command.serve_command("127.0.0.1", 9000, False, None, None)
    assert serve.parse_args(cmd[3:]).max_pages == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-pages", "0"], "--max-pages = 0 is not allowed; allowed: an integer in [1, 1000]"),
        (["--max-n0", "2001"], "--max-n0 = 2001 is not allowed; allowed: an integer in [1, 2000]"),
        (
            ["--max-policies", "5"],
            "--max-policies = 5 is not allowed; allowed: an integer in [1, 4]",
        ),
        (["--idle-minutes", "0"], "--idle-minutes = 0 is not allowed; allowed: an integer in [1, "),
        (["--token", "short"], "--token = 'short' is not allowed; allowed: 8 to 200 characters"),
        (["--token", "a token with spaces"], "--token = 'a token with spaces' is not allowed"),
        (["--token", "long-enough", "--no-token"], "allowed: either --token or --no-token"),
    ],
)
def test_bad_server_options_are_one_line_exit_2(args, message):
    result = CliRunner().invoke(app, ["dashboard", *args, "--no-open"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


# -- the page's own limits and paths ---------------------------------------------------------
def test_the_server_limits_are_read_from_the_environment(monkeypatch):
    monkeypatch.delenv("RABM_X", raising=False)
    assert dsettings.server_limit("RABM_X", 4) == 4
    monkeypatch.setenv("RABM_X", "2")
    assert dsettings.server_limit("RABM_X", 4) == 2
    for bad in ("5", "0", "two", "-1"):
        monkeypatch.setenv("RABM_X", bad)
        with pytest.raises(ConfigError, match=r"RABM_X = .* an integer in \[1, 4\]"):
            dsettings.server_limit("RABM_X", 4)


def test_a_page_refuses_more_than_the_server_allows(monkeypatch):
    monkeypatch.setitem(dsettings.SLIDERS, "n_initial", ("initial applicants N₀", 0, 500))
    monkeypatch.setattr(dsettings, "MAX_POLICIES", 2)
    s = dsettings.Settings.from_preset("paper")
    assert s.with_input("n_initial", 500).n_initial == 500
    with pytest.raises(ConfigError, match=r"n_initial = 501 is not allowed; .*\[0, 500\]"):
        s.with_input("n_initial", 501)
    s = s.with_input("compare", "none")
    with pytest.raises(ConfigError, match="compare_2 = 'safear' .* at most 2 policies per page"):
        s.with_input("compare_2", "safear")
    assert s.with_input("compare_2", dsettings.OFF).compare == ("none",)


def test_absolute_paths_become_their_last_part():
    scrub = dsettings.without_paths
    assert (
        scrub("/srv/x/results/pareto/T1/predictors/rl-a10-t1: obs_dim is 60")
        == "rl-a10-t1: obs_dim is 60"
    )
    assert scrub("recommender /home/t/.venv/share/rl/ was trained") == "recommender rl was trained"
    assert scrub("'/opt/a/manifest.json' is missing") == "'manifest.json' is missing"
    for kept in ("10 ticks/s", "1/2 of them", "N₀/k", "see docs/teaching.md"):
        assert scrub(kept) == kept


def test_policy_menu_reasons_name_what_is_missing_not_where(monkeypatch):
    def refuse(spec):
        raise FileNotFoundError(f"/work/somewhere/results/{spec}/manifest.json is missing")

    monkeypatch.setattr(dsettings, "dashboard_policies", lambda: ["threshold"])
    monkeypatch.setattr(dsettings, "make_policy", refuse)
    monkeypatch.setattr(dsettings, "_support", {})
    assert dsettings.policy_support("paper") == {"threshold": "manifest.json is missing"}
