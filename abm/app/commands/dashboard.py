"""``recourse-abm dashboard``: serve the interactive Solara dashboard (dashboards/app.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from abm.validation import ConfigError


def app_path() -> Path:
    """Location of the dashboard's Solara app (found, not imported: the dashboard sits above
    the application layer)."""
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


def dashboard(
    host: Annotated[str, typer.Option(help="address to serve on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port to serve on")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="open a browser tab")
    ] = True,
    production: Annotated[bool, typer.Option(help="production mode (no auto-reload)")] = True,
) -> None:
    """Explore the simulation in the browser (Solara + Mesa SolaraViz); Ctrl-C stops it."""
    if importlib.util.find_spec("solara") is None:
        raise ConfigError(
            "the dashboard needs solara: pip install 'solara' 'ipyvuetify<2' 'ipyvue<2'"
        )
    env = {**os.environ, "REACTON_FAST": os.environ.get("REACTON_FAST", "1")}
    typer.echo(f"serving the dashboard on http://{host}:{port}/ (Ctrl-C stops it)")
    try:
        raise typer.Exit(
            subprocess.call(solara_command(host, port, open_browser, production), env=env)
        )
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def register(app: typer.Typer) -> None:
    app.command()(dashboard)
