"""Subcommands of ``recourse-abm`` beyond ``run``/``scenarios``/``policies``.

Each module here defines ``register(app: typer.Typer) -> None``; :mod:`abm.cli` calls
it for every module, so a feature adds its commands without touching the core CLI.
Helpers a command may need: ``abm.cli.friendly_errors`` (one-line errors, exit 2),
``abm.cli.progress_bar``, ``abm.cli.console``, ``abm.cli.parse_overrides``.
"""
