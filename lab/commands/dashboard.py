"""``recourse-abm dashboard``: serve the interactive Solara dashboard (dashboards/app.py)."""

from __future__ import annotations

import errno
import importlib.util
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from abm.validation import ConfigError, is_loopback, problem
from lab.processes import die_with_parent


def app_path() -> Path:
    """Location of the dashboard's Solara app (found, not imported: the dashboard and the
    command line are independent front ends, neither imports the other)."""
    spec = importlib.util.find_spec("dashboards")
    if spec is None or spec.origin is None:
        raise ConfigError("the dashboards package is not installed next to abm")
    return Path(spec.origin).resolve().parent / "app.py"


def serve_command(
    host: str, port: int, production: bool, max_pages: int | None, idle_minutes: int | None
) -> list[str]:
    """The command line of the dashboard's server (dashboards/serve.py: Solara's server
    behind the token, the page limit and the idle close). The token is not in it: it
    travels in the environment, which other users of the computer cannot read."""
    app_path()  # the package must be there
    cmd = [sys.executable, "-m", "dashboards.serve", "--host", host, "--port", str(port)]
    if not production:
        cmd.append("--dev")
    if max_pages is not None:
        cmd += ["--max-pages", str(max_pages)]
    if idle_minutes is not None:
        cmd += ["--idle-minutes", str(idle_minutes)]
    return cmd


LAN_ENV = "RABM_DASHBOARD_ADDRESS"  # the address to print instead of the probed one


def udp_probe() -> str:
    """The address this computer would use to reach another network: a UDP socket is
    connected (which sends nothing) to a documentation address and asked for its end."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): never a real host
        return s.getsockname()[0]


def lan_address(host: str, probe=udp_probe, hostname=socket.gethostname) -> str:
    """The address students type for a server listening on ``host``: ``host`` itself,
    unless it means every interface (0.0.0.0, ::), then this computer's address on the
    network (``probe``), or its name when it has none."""
    if host not in ("0.0.0.0", "::", ""):
        return host
    if os.environ.get(LAN_ENV):  # the address to print, given (several networks; tests)
        return os.environ[LAN_ENV]
    try:
        address = probe()
    except OSError:
        address = ""
    if not address or address.startswith(("0.", "127.")):
        return hostname()
    return address


def page_url(host: str, port: int, token: str | None) -> str:
    """The address to open (with ``?token=`` when there is one)."""
    shown = f"[{host}]" if ":" in host else host
    query = "?" + urllib.parse.urlencode({"token": token}) if token else ""
    return f"http://{shown}:{port}/{query}"


TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~-]{8,200}")


def check_token(token: str) -> str:
    """``token`` if it can stand in an address as it is (8 to 200 URL-safe characters)."""
    if not TOKEN_CHARS.fullmatch(token):
        raise ConfigError(
            problem("--token", token, "8 to 200 characters among letters, digits and . _ ~ -")
        )
    return token


@dataclass(frozen=True)
class Limits:
    """What one server allows (None: no limit)."""

    max_pages: int | None
    max_n0: int | None
    max_policies: int | None
    idle_minutes: int | None

    def environment(self) -> dict[str, str]:
        """The page's own limits, as the dashboard reads them (dashboards/settings.py)."""
        out = {}
        if self.max_n0 is not None:
            out["RABM_DASHBOARD_MAX_N0"] = str(self.max_n0)
        if self.max_policies is not None:
            out["RABM_DASHBOARD_MAX_POLICIES"] = str(self.max_policies)
        return out

    def text(self) -> str:
        parts = []
        if self.max_pages is not None:
            parts.append(f"at most {self.max_pages} open pages")
        if self.max_n0 is not None:
            parts.append(f"N₀ at most {self.max_n0:,}")
        if self.max_policies is not None:
            parts.append(f"at most {self.max_policies} policies per page")
        if self.idle_minutes is not None:
            parts.append(f"pages idle for {self.idle_minutes} minutes are closed")
        return "; ".join(parts)


# off loopback, unless the teacher sets others: what keeps a 2-core laptop responsive
CLASS_LIMITS = Limits(max_pages=30, max_n0=2_000, max_policies=4, idle_minutes=30)


def limits_for(host: str, **given: int | None) -> Limits:
    """The limits given, and for a network server the :data:`CLASS_LIMITS` of the rest."""
    defaults = Limits(None, None, None, None) if is_loopback(host) else CLASS_LIMITS
    return Limits(
        **{
            k: given.get(k) if given.get(k) is not None else getattr(defaults, k)
            for k in ("max_pages", "max_n0", "max_policies", "idle_minutes")
        }
    )


HOST_HELP = (
    "address to listen on: 127.0.0.1 (default) serves this computer only; 0.0.0.0 serves "
    "every network interface, so anyone who can reach this computer (a classroom network) "
    "can open the dashboard and run simulations on it"
)


def check_host(host: str) -> str:
    """``host`` if it can be an address to listen on (a name or an IP, no spaces)."""
    if not host or any(c.isspace() for c in host) or "/" in host or len(host) > 253:
        raise ConfigError(
            problem("--host", host, "an IP address or host name, e.g. 127.0.0.1 or 0.0.0.0")
        )
    return host


def check_listen(host: str, port: int) -> None:
    """Refuse, before the server starts, a ``host`` that does not resolve or a ``port``
    already in use there (the server would print its own error and exit 3)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            problem(
                "--host",
                host,
                "an IP address or host name, e.g. 127.0.0.1 or 0.0.0.0",
                verb=f"cannot be resolved ({why})",
            )
        ) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(
                    problem("--port", port, f"a free port on {host}", verb="is in use")
                ) from None
            raise ConfigError(
                problem(
                    "--host",
                    host,
                    "an address of this computer",
                    verb=f"cannot be listened on ({exc.strerror})",
                )
            ) from None


LIMIT_HELP = "{what} (default: none on 127.0.0.1; {default} when serving the network)"


def dashboard(
    host: Annotated[str, typer.Option(help=HOST_HELP)] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="open a browser tab")
    ] = True,
    production: Annotated[bool, typer.Option(help="production mode (no auto-reload)")] = True,
    token: Annotated[
        str | None,
        typer.Option(
            help="the token students need (in the printed address); default when serving "
            "the network: a new random one"
        ),
    ] = None,
    no_token: Annotated[
        bool, typer.Option("--no-token", help="serve the network without a token (no login)")
    ] = False,
    max_pages: Annotated[
        int | None,
        typer.Option(min=1, max=1000, help=LIMIT_HELP.format(what="open pages", default=30)),
    ] = None,
    max_n0: Annotated[
        int | None,
        typer.Option(
            min=1, max=2_000, help=LIMIT_HELP.format(what="largest N₀ a page", default=2000)
        ),
    ] = None,
    max_policies: Annotated[
        int | None,
        typer.Option(min=1, max=4, help=LIMIT_HELP.format(what="policies per page", default=4)),
    ] = None,
    idle_minutes: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1440,
            help=LIMIT_HELP.format(what="minutes before an idle page is closed", default=30),
        ),
    ] = None,
) -> None:
    """Explore the simulation in the browser (a Solara page); Ctrl-C stops it.

    Each tab runs its own simulation here; the page loads nothing from the internet.
    Served to the network (--host 0.0.0.0), the page needs the printed address with its
    token, and the limits keep the computer responsive for a class.
    """
    check_host(host)
    if token is not None:
        check_token(token)
        if no_token:
            raise ConfigError(problem("--no-token", True, "either --token or --no-token"))
    check_listen(host, port)
    if importlib.util.find_spec("solara") is None:
        raise ConfigError(
            "the dashboard needs solara: pip install 'solara' 'ipyvuetify<2' 'ipyvue<2'"
        )
    local = is_loopback(host)
    if token is None and not local and not no_token:
        token = secrets.token_urlsafe(24)
    limits = limits_for(
        host,
        max_pages=max_pages,
        max_n0=max_n0,
        max_policies=max_policies,
        idle_minutes=idle_minutes,
    )
    url = page_url(lan_address(host), port, token)
    env = {
        **os.environ,
        **limits.environment(),
        "REACTON_FAST": os.environ.get("REACTON_FAST", "1"),
        "SOLARA_THEME_SHOW_BANNER": "False",
    }
    if token:
        env["RABM_DASHBOARD_TOKEN"] = token
    if open_browser:
        # every interface includes this computer's loopback, which a browser here opens
        here = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
        env["RABM_DASHBOARD_OPEN"] = page_url(here, port, token)
    typer.echo(f"serving the dashboard on {url} (Ctrl-C stops it)")
    if not local:
        typer.echo(
            "students open that address on the same network; the connection is plain HTTP "
            "(not encrypted): anyone on the network can read what is sent"
        )
        if token:
            typer.echo(
                "the first visit with the token sets a cookie: reloads and shared links then "
                "work in that browser"
            )
        else:
            typer.echo(
                f"warning: --no-token: anyone who can reach this computer on port {port} can "
                "use the dashboard (there is no login)",
                err=True,
            )
    if limits.text():
        typer.echo(f"limits: {limits.text()}")
    # the server dies with this process: on SIGKILL by the kernel (die_with_parent), on
    # SIGTERM by the handler below, which stops it before exiting
    server = subprocess.Popen(
        serve_command(host, port, production, limits.max_pages, limits.idle_minutes),
        env=env,
        preexec_fn=die_with_parent,
    )

    def stop(signum: int, frame: object) -> None:
        server.terminate()
        raise typer.Exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        raise typer.Exit(server.wait())
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()


def register(app: typer.Typer) -> None:
    app.command()(dashboard)
