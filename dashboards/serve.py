"""Serve the dashboard to a class: Solara's server behind a small guard.

``recourse-abm dashboard`` runs ``python -m dashboards.serve``; this module wraps Solara's
Starlette app (the same one ``solara run`` serves) in :class:`Guard`, an ASGI middleware
that

- asks for a token (Jupyter style): a visit with ``?token=…`` sets an HttpOnly cookie and
  comes back without the token in the address; anything without the cookie, page or
  websocket, is refused with one line (403);
- counts open pages (the kernel websockets) and refuses a page over the limit (503);
- closes a page whose browser sent nothing for the idle time, and frees its kernel;
- refuses the server statistics (``/resourcez``) when serving the network;
- serves ``/_solara/cdn/`` from the installed offline assets only, so that the server
  never fetches from the internet (404 for what is not installed).

The guard itself imports nothing of Solara, so it is tested with a fake app. The token
comes in the environment (:data:`TOKEN_ENV`), never on the command line, where every user
of the computer could read it.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import html
import os
import sys
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any

from abm.validation import is_loopback

TOKEN_ENV = "RABM_DASHBOARD_TOKEN"
OPEN_ENV = "RABM_DASHBOARD_OPEN"  # the address the teacher's browser opens (it has the token)
KERNEL_SOCKET = "/jupyter/api/kernels/"  # Solara's kernel channel: one open socket per page
ASSET_PREFIXES = ("/static/", "/_solara/", "/jupyter/")  # what a page loads, not a page
CDN_PREFIX = "/_solara/cdn/"
STATISTICS = ("/resourcez", "/_solara/api/evict")
SESSION_COOKIES = ("solara-session-id", "solara-session-id-lax")
IDLE_CLOSE_CODE = 4000  # a websocket close code of the application range

NEED_TOKEN = "This dashboard needs the link with its token: ask your teacher for that link."
FULL = "The dashboard is full ({n} pages are open): close a tab, or ask your teacher."
PRIVATE = "Server statistics are shown only on the computer that serves the dashboard."
NOT_OFFLINE = "Not installed with the dashboard's offline assets."
EXPIRED = "This page was closed after {minutes} idle minutes: reload it to start again."

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def cookie_value(token: str) -> str:
    """What the cookie holds: derived from the token, so the cookie is not the token."""
    return hmac.new(token.encode(), b"rabm-dashboard-cookie", hashlib.sha256).hexdigest()


def same(a: str, b: str) -> bool:
    """Constant-time text comparison (any characters)."""
    return hmac.compare_digest(a.encode("utf-8", "replace"), b.encode("utf-8", "replace"))


def cookies_of(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except CookieError:
                continue  # a malformed cookie header is as good as none
            out.update({k: m.value for k, m in jar.items()})
    return out


def message_page(status: int, line: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """A refusal: status, headers and a small HTML page with one line."""
    body = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'><title>recourse-abm</title>"
        f"</head><body><p>{html.escape(line)}</p></body></html>\n"
    ).encode()
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    return status, headers, body


class Guard:
    """ASGI middleware in front of Solara's app (see the module docstring).

    ``token`` None: no token asked. ``max_pages`` None: no page limit. ``idle_s`` None:
    pages are never closed for idleness. ``private``: refuse :data:`STATISTICS`.
    ``cdn_dir``: the offline assets (when it exists, nothing else is served under
    ``/_solara/cdn/``). ``on_idle(kernel_id, page_id)``: frees an idle page's kernel
    (runs on a worker thread).
    """

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        *,
        token: str | None = None,
        max_pages: int | None = None,
        idle_s: float | None = None,
        private: bool = False,
        cdn_dir: Path | None = None,
        on_idle: Callable[[str, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.token = token or None
        self.cookie = cookie_value(token) if token else ""
        self.max_pages = max_pages
        self.idle_s = idle_s
        self.private = private
        self.cdn_dir = Path(cdn_dir) if cdn_dir is not None else None
        self.on_idle = on_idle
        self.clock = clock
        self.open: dict[object, str] = {}  # one entry per open kernel socket: its session
        self.expired: set[str] = set()  # kernels closed for idleness (their reconnects fail)

    # -- the checks ----------------------------------------------------------------------
    def cookie_name(self, scope: Scope) -> str:
        # cookies do not tell ports apart: two dashboards on one computer keep two cookies
        server = scope.get("server") or ("", 0)
        return f"rabm-dashboard-{server[1]}"

    def has_cookie(self, scope: Scope) -> bool:
        return same(cookies_of(scope).get(self.cookie_name(scope), ""), self.cookie)

    @staticmethod
    def query(scope: Scope) -> list[tuple[str, str]]:
        text = scope.get("query_string", b"").decode("latin-1")
        return urllib.parse.parse_qsl(text, keep_blank_values=True)

    def session(self, scope: Scope) -> str:
        cookies = cookies_of(scope)
        return next((cookies[n] for n in SESSION_COOKIES if cookies.get(n)), "")

    def local_asset(self, rel: str) -> bool:
        """Whether the offline assets hold ``rel`` (where Solara's cdn proxy looks)."""
        assert self.cdn_dir is not None
        store = rel if "/" in rel else rel + "/__main.js"
        root = os.path.normpath(self.cdn_dir)
        full = os.path.normpath(os.path.join(root, store))
        return full.startswith(root + os.sep) and os.path.isfile(full)

    @staticmethod
    def is_page(scope: Scope) -> bool:
        path = scope["path"]
        return (
            scope["type"] == "http"
            and scope.get("method", "GET") in ("GET", "HEAD")
            and not path.startswith(ASSET_PREFIXES)
            and path not in ("/readyz", "/resourcez", "/favicon.ico")
        )

    # -- ASGI ------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan
            return
        path = scope["path"]
        if self.private and path.startswith(STATISTICS):
            return await self.refuse(scope, send, 403, PRIVATE)
        if self.token and not self.has_cookie(scope):
            given = [v for k, v in self.query(scope) if k == "token"][-1:]
            if scope["type"] == "http" and given and same(given[0], self.token):
                return await self.let_in(scope, send)
            return await self.refuse(scope, send, 403, NEED_TOKEN)
        if path.startswith(CDN_PREFIX) and self.cdn_dir is not None and self.cdn_dir.is_dir():
            if not self.local_asset(path[len(CDN_PREFIX) :]):
                return await self.refuse(scope, send, 404, NOT_OFFLINE)
        full = self.max_pages is not None and len(self.open) >= self.max_pages
        if full and self.is_page(scope) and self.session(scope) not in self.open.values():
            # a reload arrives while its old page is still open: that browser may come back
            return await self.refuse(scope, send, 503, FULL.format(n=self.max_pages))
        if scope["type"] == "websocket" and path.startswith(KERNEL_SOCKET):
            kernel_id = path[len(KERNEL_SOCKET) :].split("/")[0]
            if kernel_id in self.expired:
                minutes = round((self.idle_s or 0) / 60)
                return await self.refuse(scope, send, 403, EXPIRED.format(minutes=minutes))
            if full:
                return await self.refuse(scope, send, 503, FULL.format(n=self.max_pages))
            return await self.kernel_socket(scope, receive, send, kernel_id)
        await self.app(scope, receive, send)

    async def refuse(self, scope: Scope, send: Send, status: int, line: str) -> None:
        if scope["type"] == "websocket":
            # closed before it is accepted: the browser's handshake fails with 403
            await send({"type": "websocket.close", "code": 1008, "reason": line[:120]})
            return
        status, headers, body = message_page(status, line)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def let_in(self, scope: Scope, send: Send) -> None:
        """The right token: set the cookie and come back without the token in the address
        (the page reads its address: a token there would be an unknown setting)."""
        rest = [(k, v) for k, v in self.query(scope) if k != "token"]
        location = scope.get("root_path", "") + scope["path"]
        if rest:
            location += "?" + urllib.parse.urlencode(rest)
        cookie = f"{self.cookie_name(scope)}={self.cookie}; Path=/; HttpOnly; SameSite=Lax"
        headers = [
            (b"location", location.encode("latin-1", "replace")),
            (b"set-cookie", cookie.encode()),
            (b"cache-control", b"no-store"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def kernel_socket(self, scope: Scope, receive: Receive, send: Send, kernel_id: str):
        """Solara's kernel channel, counted while open and closed when idle."""
        import anyio

        key = object()
        self.open[key] = self.session(scope)  # counted from the request on, so no race
        last = self.clock()
        idle = False

        async def watched_receive() -> Message:
            nonlocal last, idle
            while not idle:
                if self.idle_s is None:
                    return await receive()
                remaining = self.idle_s - (self.clock() - last)
                if remaining > 0:
                    with anyio.move_on_after(remaining):
                        message = await receive()
                        if message["type"] == "websocket.receive":
                            last = self.clock()
                        return message
                    continue
                idle = True
                try:
                    await send({"type": "websocket.close", "code": IDLE_CLOSE_CODE})
                except Exception:  # the browser left meanwhile
                    pass
            return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}

        async def quiet_send(message: Message) -> None:
            if not idle:  # after the idle close the app's late messages go nowhere
                await send(message)

        try:
            await self.app(scope, watched_receive, quiet_send)
        finally:
            del self.open[key]
            if idle:
                self.expired.add(kernel_id)
                page_id = dict(self.query(scope)).get("session_id", "")
                if self.on_idle is not None:
                    await anyio.to_thread.run_sync(self.on_idle, kernel_id, page_id)


def close_page(kernel_id: str, page_id: str) -> None:
    """Free the kernel of an idle page (as when its tab is closed)."""
    from solara.server import kernel_context

    context = kernel_context.contexts.get(kernel_id)
    if context is not None:
        context.page_close(page_id)


def cdn_directory() -> Path:
    """Where scripts/setup-browser.sh installs Solara's front-end assets."""
    return Path(sys.prefix) / "share" / "solara" / "cdn"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m dashboards.serve", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--dev", action="store_true", help="Solara's development mode")
    p.add_argument("--max-pages", type=int, default=None)
    p.add_argument("--idle-minutes", type=float, default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Serve the dashboard; the token comes from :data:`TOKEN_ENV` (empty: none)."""
    args = parse_args(argv)
    token = os.environ.pop(TOKEN_ENV, "") or None
    open_url = os.environ.pop(OPEN_ENV, "")
    # Solara reads these when imported, so they are set first
    os.environ["SOLARA_APP"] = str(Path(__file__).resolve().parent / "app.py")
    os.environ["SOLARA_MODE"] = "development" if args.dev else "production"
    os.environ.setdefault("REACTON_FAST", "1")
    os.environ["SOLARA_THEME_SHOW_BANNER"] = "False"
    os.environ["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "False"  # no request leaves the server
    os.environ["SERVER_NAME"] = args.host
    os.environ["SERVER_PORT"] = str(args.port)
    if args.idle_minutes:
        # a page whose socket dropped (a phone put away) keeps its kernel only this long
        os.environ["SOLARA_KERNEL_CULL_TIMEOUT"] = f"{int(args.idle_minutes * 60)}s"
    import uvicorn
    from solara.server.starlette import app as solara_app

    guarded = Guard(
        solara_app,
        token=token,
        max_pages=args.max_pages,
        idle_s=args.idle_minutes * 60 if args.idle_minutes else None,
        private=not is_loopback(args.host),
        cdn_dir=cdn_directory(),
        on_idle=close_page,
    )
    config = uvicorn.Config(
        guarded, host=args.host, port=args.port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    if open_url:

        def open_when_ready() -> None:
            import webbrowser

            while not server.started and not server.should_exit:
                time.sleep(0.1)
            if server.started:
                webbrowser.open(open_url)

        threading.Thread(target=open_when_ready, daemon=True).start()
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn stops on Ctrl-C, then raises it again
        pass


if __name__ == "__main__":
    main()
