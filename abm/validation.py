"""One style for bad input: a one-line message naming the field, the value and what is allowed.

Every user-facing check (scenario fields, study specs, training and policy parameters)
raises :class:`ConfigError` with a message built here, whether the check is a pydantic
model's or our own, so the CLI, the dashboard and the Python API report alike.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError


class ConfigError(ValueError):
    """Bad input; the message names the field, its value and the allowed range."""


def _bound(value: Any) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}" if isinstance(value, float) else str(value)


def problem(field: str, value: Any, allowed: str) -> str:
    """``field = value is not allowed; allowed: ...`` on one line."""
    return f"{field} = {value!r} is not allowed; allowed: {allowed}"


def _allowed(err: dict[str, Any]) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
              "less_than_equal": "<="}[kind]  # fmt: skip
        limit = next(iter(ctx.values()))
        return f"a number {op} {_bound(limit)}"
    if kind == "literal_error":
        return f"one of {ctx.get('expected', '')}".replace("'", "")
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "an integer"
    if kind in ("float_parsing", "float_type", "finite_number"):
        return "a number"
    if kind in ("bool_parsing", "bool_type"):
        return "true or false"
    if kind in ("too_short", "too_long"):
        return f"{ctx.get('min_length', 0)} to {ctx.get('max_length', 'any')} items"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return err["msg"]


def _field(loc: tuple[Any, ...], prefix: str) -> str:
    parts: list[str] = [prefix] if prefix else []
    for item in loc:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
        elif not str(item).startswith(("function-", "tagged-union", "list[", "tuple[")):
            parts.append(str(item))
    return ".".join(parts) or "value"


def one_line(exc: ValidationError, prefix: str = "", allowed_fields: Any = None) -> str:
    """The first problem of a pydantic error as one line: field, value, allowed range.

    ``allowed_fields`` lists the valid names for an unknown-field error.
    """
    err = exc.errors(include_url=False)[0]
    field = _field(tuple(err["loc"]), prefix)
    value = err.get("input")
    if err["type"] == "extra_forbidden":
        names = ", ".join(allowed_fields) if allowed_fields else "see the documentation"
        return f"unknown field {field}; allowed: {names}"
    if err["type"] == "missing":
        return f"{field} is required"
    if err["type"] == "value_error":
        # our own validators already say what is allowed
        return f"{field}: {err.get('ctx', {}).get('error', err['msg'])}"
    more = len(exc.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return problem(field, value, _allowed(err)) + tail


def config_error(exc: ValidationError, prefix: str = "", allowed_fields: Any = None) -> ConfigError:
    """:func:`one_line` wrapped as a :class:`ConfigError`."""
    return ConfigError(one_line(exc, prefix, allowed_fields))
