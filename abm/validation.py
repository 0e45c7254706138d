"""One style for bad input: a one-line message naming the field, the value and what is allowed.

Every user-facing check (scenario fields, study specs, training and policy parameters)
raises :class:`ConfigError` with a message built here, whether the check is a pydantic
model's or our own, so the CLI, the dashboard and the Python API report alike::

    k = 0 is not allowed; allowed: an integer in [1, 10000000]

Pydantic models describe a field's allowed values once, in the field itself (bounds,
``Literal`` choices, or ``json_schema_extra={"allowed": ...}`` for compound fields), and
:func:`one_line` reads that description back when the model is passed as ``model``; our own
validators raise :func:`not_allowed` with the text.
"""

from __future__ import annotations

import ipaddress
import math
import numbers
from typing import Any, Literal, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

NOT_ALLOWED = "not_allowed"  # pydantic error type of our own validators (see not_allowed)
_MAX_SHOWN = 72  # characters of a value shown in a message (a list of 10,000 floats is not)
_INT64_MAX = 2**63 - 1


class ConfigError(ValueError):
    """Bad input; the message names the field, its value and the allowed range."""


# -- the message --------------------------------------------------------------------------
def show(value: Any) -> str:
    """``repr(value)`` on one line; a long one keeps both ends (a path's file name, a
    list's last entries) around `` ... ``."""
    text = " ".join(repr(value).split())
    if len(text) <= _MAX_SHOWN:
        return text
    half = (_MAX_SHOWN - 5) // 2
    return f"{text[:half]} ... {text[-half:]}"


def problem(field: str, value: Any, allowed: str, verb: str = "is not allowed") -> str:
    """``field = value is not allowed; allowed: ...`` on one line (``value`` shown by repr)."""
    return f"{field} = {show(value)} {verb}; allowed: {allowed}"


def number_text(x: float) -> str:
    """A bound as a reader writes it: ``inf``, ``0.05``, ``2**63 - 1``."""
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == _INT64_MAX:
        return "2**63 - 1"
    return f"{x:g}" if isinstance(x, float) else str(x)


def interval(
    low: float | None = None,
    high: float | None = None,
    *,
    integer: bool = False,
    low_open: bool = False,
    high_open: bool = False,
    inf_allowed: bool = True,
) -> str:
    """``an integer in [1, 10]``, ``an integer >= 0``, ``a number in (0, inf]``.

    A missing bound is infinite; ``inf_allowed`` says whether that infinity is a value.
    """
    if integer:
        if low is None and high is None:
            return "an integer"
        if high is None or high == math.inf:
            return f"an integer >= {number_text(low)}"
        if low is None:
            return f"an integer <= {number_text(high)}"
        return f"an integer in [{number_text(low)}, {number_text(high)}]"
    lo = "-inf" if low is None else number_text(low)
    hi = "inf" if high is None else number_text(high)
    lb = "(" if low_open or (low is None and not inf_allowed) else "["
    hb = ")" if high_open or (high is None and not inf_allowed) else "]"
    return f"a number in {lb}{lo}, {hi}{hb}"


# -- our own validators -------------------------------------------------------------------
_UNSET = object()


def not_allowed(allowed: str, *, field: str | None = None, value: Any = _UNSET) -> Exception:
    """The error our pydantic validators raise; :func:`one_line` formats it.

    ``field``/``value`` name the culprit when the check is a model validator (whose
    location is the whole model); a field validator may leave them out.
    """
    ctx: dict[str, Any] = {"allowed": allowed}
    if field is not None:
        ctx["field"] = field
    if value is not _UNSET:
        ctx["value"] = value
    return PydanticCustomError(NOT_ALLOWED, "allowed: {allowed}", ctx)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)


def require_int(name: str, value: Any, low: int, high: float = math.inf) -> int:
    """``value`` as an int, or a :class:`ConfigError` naming ``name`` and [low, high]."""
    if not _is_int(value) or not low <= value <= high:
        raise ConfigError(problem(name, value, interval(low, high, integer=True)))
    return int(value)


def require_number(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a float, or a :class:`ConfigError` naming ``name`` and its interval."""
    ok = (
        _is_number(value)
        and (value > low if low_open else value >= low)
        and (value < high if high_open else value <= high)
    )
    if not ok:
        text = interval(low, high, low_open=low_open, high_open=high_open)
        raise ConfigError(problem(name, value, text))
    return float(value)


# -- pydantic errors ----------------------------------------------------------------------
_BOUNDS = {
    annotated_types.Ge: "ge",
    annotated_types.Gt: "gt",
    annotated_types.Le: "le",
    annotated_types.Lt: "lt",
}


def field_allowed(info: FieldInfo) -> str | None:
    """What a model field accepts, from its declaration (None when nothing is declared)."""
    extra = info.json_schema_extra
    if isinstance(extra, dict) and "allowed" in extra:
        return str(extra["allowed"])
    kind = info.annotation
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(str(c) for c in get_args(kind))
    if kind is bool:
        return "true or false"
    bounds: dict[str, Any] = {}
    inf_allowed = True
    for meta in info.metadata:
        for cls, key in _BOUNDS.items():
            if isinstance(meta, cls):
                bounds[key] = getattr(meta, key)
        if getattr(meta, "allow_inf_nan", None) is False:
            inf_allowed = False
        if isinstance(meta, annotated_types.MinLen) and kind is str and meta.min_length > 0:
            return "a non-empty string"
    if kind is str:
        return "a string"
    if kind in (int, float):
        return interval(
            bounds.get("ge", bounds.get("gt")),
            bounds.get("le", bounds.get("lt")),
            integer=kind is int,
            low_open="gt" in bounds,
            high_open="lt" in bounds,
            inf_allowed=inf_allowed,
        )
    return None


def _allowed(err: dict[str, Any]) -> str:
    """What is allowed, from the error alone (when the model's field says nothing)."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {
            "greater_than": ">",
            "greater_than_equal": ">=",
            "less_than": "<",
            "less_than_equal": "<=",
        }[kind]
        return f"a number {op} {number_text(next(iter(ctx.values())))}"
    if kind == "literal_error":
        return f"one of {ctx.get('expected', '')}".replace("'", "").replace(" or ", ", ")
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "an integer"
    if kind in ("float_parsing", "float_type"):
        return "a number"
    if kind == "finite_number":
        return "a finite number"
    if kind in ("bool_parsing", "bool_type"):
        return "true or false"
    if kind in ("string_type", "string_too_short"):
        return "a non-empty string" if kind == "string_too_short" else "a string"
    if kind in ("too_short", "too_long"):
        return f"{ctx.get('min_length', 0)} to {ctx.get('max_length', 'any')} items"
    return err["msg"]


def _field(loc: tuple[Any, ...], prefix: str) -> str:
    parts: list[str] = [prefix] if prefix else []
    for item in loc:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
        elif not str(item).startswith(("function-", "tagged-union", "list[", "tuple[")):
            parts.append(str(item))
    return ".".join(parts) or "value"


def one_line(
    exc: ValidationError,
    prefix: str = "",
    allowed_fields: Any = None,
    model: type[BaseModel] | None = None,
) -> str:
    """The first problem of a pydantic error as one line: field, value, allowed range.

    ``allowed_fields`` lists the valid names for an unknown-field error (default: the
    fields of ``model``); ``model`` lets a field's own declaration say what is allowed, so
    a wrong type and a value out of range give the same full range.
    """
    errors = exc.errors(include_url=False)
    err = errors[0]
    loc = tuple(err["loc"])
    ctx = err.get("ctx") or {}
    field = _field(loc, prefix)
    value = err.get("input")
    fields = model.model_fields if model is not None else {}
    if err["type"] == "extra_forbidden":
        names = allowed_fields if allowed_fields is not None else list(fields)
        listed = ", ".join(names) if names else "see the documentation"
        return problem(field, value, listed, verb="is not a known field")
    if err["type"] == "missing":
        allowed = field_allowed(fields[loc[0]]) if loc and loc[0] in fields else None
        return f"{field} is required" + (f"; allowed: {allowed}" if allowed else "")
    if err["type"] == NOT_ALLOWED:
        if "field" in ctx:
            field = _field((*loc, ctx["field"]), prefix)
        line = problem(field, ctx.get("value", value), ctx["allowed"])
    elif err["type"] == "value_error":
        # a validator's own sentence already says what is allowed (and, from a model
        # validator with no location, which field it is about)
        text = str(ctx.get("error", err["msg"]))
        return text if field == "value" else f"{field}: {text}"
    else:
        declared = field_allowed(fields[loc[0]]) if loc and loc[0] in fields else None
        line = problem(field, value, declared or _allowed(err))
    more = len(errors) - 1
    return line + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def config_error(
    exc: ValidationError,
    prefix: str = "",
    allowed_fields: Any = None,
    model: type[BaseModel] | None = None,
) -> ConfigError:
    """:func:`one_line` wrapped as a :class:`ConfigError`."""
    return ConfigError(one_line(exc, prefix, allowed_fields, model))


def message(exc: BaseException) -> str:
    """Any bad-input exception as one line (a pydantic error through :func:`one_line`)."""
    if isinstance(exc, ValidationError):
        return one_line(exc)
    if isinstance(exc, FileNotFoundError) and exc.filename is not None:
        return f"file = {str(exc.filename)!r} does not exist"
    return " ".join(str(exc).split()) or type(exc).__name__


class MissingExtra(ConfigError):
    """An optional dependency is not installed; the message names the extra to install."""


def optional_import(module: str, extra: str, purpose: str) -> Any:
    """Import ``module`` or raise :class:`MissingExtra` naming the extra that provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or module.split(".")[0] != exc.name.split(".")[0]:
            raise  # something inside the module is missing: a real error, not an extra
        raise MissingExtra(
            f"{purpose} needs {module.split('.')[0]}, which is not installed; "
            f"install the {extra!r} extra: pip install 'recourse-abm[{extra}]'"
        ) from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` serves this computer only (localhost, 127.0.0.0/8, ::1): the
    dashboard's command and its server decide the same way whether to guard a page."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
