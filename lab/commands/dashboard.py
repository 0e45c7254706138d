"""``recourse-abm dashboard``: serve the interactive Solara dashboard (dashboards/app.py)."""

from __future__ import annotations

import errno
import importlib.util
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from abm.validation import ConfigError, problem
from lab.processes import die_with_parent


def app_path() -> Path:
    """Location of the dashboard's Solara app (found, not imported: the dashboard and the
    command line are independent front ends, neither imports the other)."""
    spec = importlib.util.find_spec("dashboards")
    if spec is None or spec.origin is None:
        raise ConfigError("the dashboards package is not installed next to abm")
    return Path(spec.origin).resolve().parent / "app.py"


def solara_command(host: str, port: int, open_browser: bool, production: bool) -> list[str]:
    """The ``solara run`` command line for the dashboard."""
    cmd = [
        sys.executable,
        "-m",
        "solara",
        "run",
        str(app_path()),
        "--host",
        host,
        "--port",
        str(port),
    ]
    cmd.append("--open" if open_browser else "--no-open")
    if production:
        cmd.append("--production")
    return cmd


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


def dashboard(
    host: Annotated[str, typer.Option(help=HOST_HELP)] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="open a browser tab")
    ] = True,
    production: Annotated[bool, typer.Option(help="production mode (no auto-reload)")] = True,
) -> None:
    """Explore the simulation in the browser (a Solara page); Ctrl-C stops it.

    Each tab runs its own simulation here; the page loads nothing from the internet.
    """
    check_host(host)
    check_listen(host, port)
    if importlib.util.find_spec("solara") is None:
        raise ConfigError(
            "the dashboard needs solara: pip install 'solara' 'ipyvuetify<2' 'ipyvue<2'"
        )
    env = {
        **os.environ,
        "REACTON_FAST": os.environ.get("REACTON_FAST", "1"),
        "SOLARA_THEME_SHOW_BANNER": "False",
    }
    typer.echo(f"serving the dashboard on http://{host}:{port}/ (Ctrl-C stops it)")
    if host not in ("127.0.0.1", "localhost", "::1"):
        typer.echo(
            f"listening on {host}: anyone who can reach this computer on port {port} can use "
            "the dashboard (there is no login)"
        )
    # the server dies with this process: on SIGKILL by the kernel (die_with_parent), on
    # SIGTERM by the handler below, which stops it before exiting
    server = subprocess.Popen(
        solara_command(host, port, open_browser, production), env=env, preexec_fn=die_with_parent
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
