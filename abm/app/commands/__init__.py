"""Subcommands of ``recourse-abm`` beyond ``run``/``scenarios``/``policies``.

Each module here defines ``register(app: typer.Typer) -> None``; :mod:`abm.app.cli` calls
it for every module, so a feature adds its commands without touching the core CLI.
Helpers a command may need: ``abm.app.cli.friendly_errors`` (one-line errors, exit 2),
``abm.app.cli.progress_bar``, ``abm.app.cli.console``, ``abm.app.cli.parse_overrides``.
"""
