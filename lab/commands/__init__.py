"""Subcommands of ``recourse-abm`` beyond ``run``/``scenarios``/``policies``.

Each module here defines ``register(app: typer.Typer) -> None``; :mod:`lab.cli` calls
it for every module, so a feature adds its commands without touching the core CLI.

Conventions: a command is a top-level function (callable from Python, where bad input
raises :class:`~abm.validation.ConfigError`); ``register`` adds it with
``app.command()(fn)``. Numeric and choice options use typer's own ``min=``/``max=`` and
``Enum`` choices. The CLI's command group reports every user-facing error (typer's,
pydantic's, ``ConfigError``, other ``ValueError``) as one line ``error: ...`` with exit
status 2, so a command needs no error handling of its own; ``friendly_errors`` does the
same for a function used outside that group.

Helpers live in :mod:`lab.terminal` (``console``, ``err_console``, ``progress_bar``,
``fmt``, ``fail``, ``friendly_errors``; ``parse_overrides`` is in :mod:`abm.config`): import
them at module level from there, not from :mod:`lab.cli` (which re-exports them, but
loads every command module, so importing it from one would be circular).
"""
