"""The registry of recourse policies and their parts (goal selectors, recommenders).

A policy is named directly (``threshold``, ``none``, ...) or as a composite
``GOAL+RECOMMENDER`` whose parts may carry parameters after a colon:
``last-threshold:margin=0.02+exact-linear:weights=estimated``. :func:`parse_spec`
splits such a text; :meth:`Registry.make_policy` validates every parameter against the
factory's typed signature (a pydantic model with ``extra="forbid"``, built by
:func:`params_model` from the annotations: ``Literal`` choices, ``Annotated`` bounds), so
a misspelled key, a mistyped number or one out of range is a one-line error naming the
policy, the parameter and what is allowed. A factory that builds another part (a
composite's recommender) declares ``forward`` and the keywords it does not take are
typed against that part.

Policy families live outside the core and register through the entry-point group
``recourse_abm.policies``: each entry point names a function ``register(registry)``.
The core never names a policy package; another installed package adds policies the
same way (``examples/plugin``). Loading the registry imports the families' light
modules only: heavy libraries (torch, dice-ml, data sets) load when a policy is built.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

import annotated_types as at
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo

from abm.interfaces import RecoursePolicy
from abm.validation import ConfigError, one_line, problem

ENTRY_POINT_GROUP = "recourse_abm.policies"

Kind = Literal["policy", "goal", "recommender"]
KINDS: tuple[Kind, ...] = ("policy", "goal", "recommender")
_KIND_LABEL = {"policy": "policy", "goal": "goal selector", "recommender": "recommender"}


class PolicySpecError(ConfigError):
    """A policy spec names an unknown part or gives it parameters it does not take."""


@dataclass(frozen=True)
class Part:
    """One part of a policy spec: a registry name and its parameters as written (texts)."""

    name: str
    params: dict[str, str]

    def __str__(self) -> str:
        if not self.params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in self.params.items())


def parse_spec(spec: str) -> tuple[Part, ...]:
    """``NAME[:k=v,...]`` -> one part; ``GOAL[:...]+RECOMMENDER[:...]`` -> two parts.

    Values stay texts here; :meth:`Registry.make` types them against the factory.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise PolicySpecError(
            f"policy = {spec!r} is not allowed; allowed: a registry name or GOAL+RECOMMENDER"
        )
    pieces = spec.split("+")
    if len(pieces) > 2:
        raise PolicySpecError(
            f"policy = {spec!r} has {len(pieces)} parts; allowed: NAME or GOAL+RECOMMENDER"
        )
    parts = []
    for piece in pieces:
        name, _, rest = piece.partition(":")
        params: dict[str, str] = {}
        for item in filter(None, (s.strip() for s in rest.split(","))):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise PolicySpecError(
                    f"policy parameter {item!r} in {spec!r} must look like key=value"
                )
            if key.strip() in params:
                raise PolicySpecError(
                    f"policy parameter {key.strip()!r} is given twice in {spec!r}"
                )
            params[key.strip()] = value.strip()
        if not name.strip():
            raise PolicySpecError(f"policy = {spec!r} has an empty name")
        parts.append(Part(name.strip(), params))
    return tuple(parts)


@dataclass(frozen=True)
class Entry:
    """A registered factory with its typed parameters.

    ``forward`` names the part (kind, name) that receives the keywords this factory does
    not take itself (a composite's recommender, say); they are typed against that part.
    """

    name: str
    kind: Kind
    factory: Callable[..., Any]
    description: str
    params: type[BaseModel]
    open_params: bool  # the factory takes **kwargs
    forward: tuple[Kind, str] | None = None

    @property
    def label(self) -> str:
        return f"{_KIND_LABEL[self.kind]} {self.name!r}"


def params_model(name: str, factory: Callable[..., Any]) -> tuple[type[BaseModel], bool]:
    """A frozen pydantic model of ``factory``'s keyword parameters, and whether it takes **kwargs.

    Annotations (with ``Annotated`` bounds and ``Literal`` choices) become the field types,
    so ``"0.05"`` validates as a float and ``"x"`` does not; parameters without a default
    are required. Every named parameter must be annotated: an untyped one would let a
    text from a spec reach the constructor unchecked.
    """
    if inspect.isclass(factory):
        # a class without its own __init__ takes no parameters (not object's *args, **kwargs)
        target = factory.__init__ if factory.__init__ is not object.__init__ else None
        signature = inspect.signature(factory)
    elif inspect.isfunction(factory) or inspect.ismethod(factory):
        target, signature = factory, inspect.signature(factory)
    else:  # a callable object such as a Composite
        target, signature = type(factory).__call__, inspect.signature(factory)
    try:
        hints = typing.get_type_hints(target, include_extras=True) if target else {}
    except Exception as exc:
        raise TypeError(f"{name!r}: cannot resolve the parameter annotations ({exc})") from None
    fields: dict[str, Any] = {}
    open_params = False
    for pname, p in signature.parameters.items():
        if pname == "self":
            continue
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            open_params = True
            continue
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            continue
        if pname not in hints:
            raise TypeError(f"{name!r}: parameter {pname!r} needs a type annotation")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[pname] = (hints[pname], default)
    # numbers in specs are finite: "nan" or "inf" is an error, not a silent parameter
    config = ConfigDict(
        extra="forbid", frozen=True, arbitrary_types_allowed=True, allow_inf_nan=False
    )
    model = create_model(f"{name}-params", __config__=config, **fields)
    return model, open_params


def resolve_policy(policy: RecoursePolicy | str) -> RecoursePolicy:
    """A policy object from an object or a registry name (see ``policies``)."""
    if isinstance(policy, str):
        return make_policy(policy)
    if not isinstance(policy, RecoursePolicy):
        raise TypeError(f"policy must be a registry name or a RecoursePolicy, got {policy!r}")
    return policy


def not_bool(value: object) -> object:
    """A ``BeforeValidator`` for numbers: a truth value is refused (pydantic reads True as 1)."""
    if isinstance(value, bool):
        raise ValueError("a number, not a truth value")
    return value


def _problem(
    exc: ValidationError, fields: dict[str, FieldInfo], values: dict[str, Any], rules: bool
) -> str:
    """The one-line text of ``exc``'s first error on ``values`` typed by ``fields``: the
    field, its value and its declared range (``rules``: a declaration's own rule, an
    AfterValidator's message, where it has no range); else pydantic's line."""
    err = exc.errors(include_url=False)[0]
    name = str(err["loc"][0]) if err["loc"] else ""
    allowed = allowed_range(fields[name]) if name in fields else None
    if allowed is None and rules and err["type"] == "value_error" and name in values:
        allowed = str(err["msg"]).removeprefix("Value error, ")
    if allowed is None or err["type"] == "missing" or name not in values:
        return one_line(exc)
    return problem(name, values[name], allowed)


@functools.cache
def _adapter(kind: Any) -> tuple[TypeAdapter, FieldInfo]:
    return TypeAdapter(kind, config={"allow_inf_nan": False}), FieldInfo.from_annotation(kind)


def check_declared(kind: Any, value: Any, field: str, allowed: str | None = None) -> Any:
    """``value`` validated against the declaration ``kind`` (an ``Annotated`` type, the one
    the registry and :func:`checked` read), for code that takes the parameter outside a
    constructor (a solver, a trial); else a one-line :class:`ConfigError` naming ``field``,
    the value and ``allowed`` (default: the declared range)."""
    adapter, info = _adapter(kind)
    try:
        return adapter.validate_python(value)
    except ValidationError:
        text = allowed or allowed_range(info) or ""
        raise ConfigError(problem(field, value, text)) from None


def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a function or a constructor) with its annotated parameters checked at every
    call against the same declarations the registry types spec texts with
    (:func:`params_model`): one declaration per parameter, read by the registry, the CLI,
    the dashboard's menus and a direct call alike. A value outside its declaration is a
    one-line :class:`~abm.validation.ConfigError` naming it (prefixed by the call's
    ``name`` argument, or the object's ``name``); values are passed on unchanged."""
    signature = inspect.signature(fn)
    model: list[type[BaseModel]] = []  # built on first use: annotations may name later types

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not model:
            model.append(params_model(fn.__qualname__, fn)[0])
        given = signature.bind(*args, **kwargs).arguments
        values = {k: v for k, v in given.items() if k in model[0].model_fields}
        try:
            model[0].model_validate(values)
        except ValidationError as exc:
            # the call's name argument, else the object's name (a policy class's registry name)
            name_of = given.get("name", getattr(given.get("self"), "name", None))
            label = f"{name_of}: " if isinstance(name_of, str) else ""
            text = _problem(exc, model[0].model_fields, values, rules=True)
            raise ConfigError(f"{label}{text}") from None
        return fn(*args, **kwargs)

    return call


def _number(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def allowed_range(field: FieldInfo) -> str | None:
    """``an integer in [2, 8]``, ``a number in (-1, 1)``, ``a number >= 0``: the whole
    range of a numeric field (pydantic names only the bound that failed); None if the
    field is not a number. An optional number's None is its default (unset), which a
    spec text cannot write, so it is not mentioned."""
    annotation, metadata = field.annotation, list(field.metadata)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return None
        annotation = args[0]
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        for item in extra:
            metadata += item.metadata if isinstance(item, FieldInfo) else [item]
    if annotation not in (int, float):
        return None
    lo = hi = None  # (bracket, bound)
    for m in metadata:
        if isinstance(m, at.Gt | at.Ge):
            lo = ("(", m.gt) if isinstance(m, at.Gt) else ("[", m.ge)
        elif isinstance(m, at.Lt | at.Le):
            hi = (")", m.lt) if isinstance(m, at.Lt) else ("]", m.le)
    what = "an integer" if annotation is int else "a number"
    if lo and hi:
        what += f" in {lo[0]}{_number(lo[1])}, {_number(hi[1])}{hi[0]}"
    elif lo:
        what += f" {'>' if lo[0] == '(' else '>='} {_number(lo[1])}"
    elif hi:
        what += f" {'<' if hi[0] == ')' else '<='} {_number(hi[1])}"
    return what


class Composite:
    """A policy factory ``goal + recommender``: its keywords (over ``defaults``) go to the
    recommender, typed there (see :meth:`Registry.composite`)."""

    def __init__(self, registry: Registry, goal: str, recommender: str, defaults: dict) -> None:
        self.registry = registry
        self.goal, self.recommender, self.defaults = goal, recommender, defaults
        self.forward: tuple[Kind, str] = ("recommender", recommender)

    def __call__(self, **params: Any) -> RecoursePolicy:
        return self.registry.combine(
            self.registry.make("goal", self.goal),
            self.registry.make("recommender", self.recommender, **{**self.defaults, **params}),
        )


class Registry:
    """Named factories of policies, goal selectors and recommenders.

    ``policy``/``goal``/``recommender`` add entries; ``make_policy`` builds from a spec.
    Entry points of :data:`ENTRY_POINT_GROUP` are loaded on first use.
    """

    def __init__(self, *, load_plugins: bool = True) -> None:
        self._entries: dict[Kind, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self._loaded = not load_plugins
        self._plugins: dict[str, str] = {}
        self._combine: Callable[[Any, Any], RecoursePolicy] | None = None

    # -- adding ------------------------------------------------------------------------
    def add(
        self,
        kind: Kind,
        name: str,
        factory: Callable[..., Any],
        description: str,
        *,
        forward: tuple[Kind, str] | None = None,
    ) -> None:
        """Register ``factory`` under ``name``; its signature types the parameters.

        ``forward=(kind, name)``: keywords the factory does not name go to that part (the
        factory takes them as ``**params``); a :class:`Composite` forwards by itself.
        """
        if kind not in KINDS:
            raise ValueError(f"kind = {kind!r} is not allowed; allowed: {', '.join(KINDS)}")
        if name in self._entries[kind]:
            raise ValueError(f"{_KIND_LABEL[kind]} {name!r} is registered twice")
        if not name or any(c in name for c in "+:,= "):
            raise ValueError(
                f"{_KIND_LABEL[kind]} name = {name!r} is not allowed; "
                "allowed: a name without '+', ':', ',', '=' or spaces"
            )
        model, open_params = params_model(name, factory)
        forward = forward if forward is not None else getattr(factory, "forward", None)
        if forward is not None and not open_params:
            raise TypeError(
                f"{_KIND_LABEL[kind]} {name!r} forwards parameters but takes no **params"
            )
        self._entries[kind][name] = Entry(
            name, kind, factory, description, model, open_params, forward
        )

    def remove(self, kind: Kind, name: str) -> Entry:
        """Take ``name`` out of the registry (tests, a plugin replacing an entry); returns it."""
        self.get(kind, name)
        return self._entries[kind].pop(name)

    def policy(
        self,
        name: str,
        factory: Callable[..., RecoursePolicy],
        description: str,
        *,
        forward: tuple[Kind, str] | None = None,
    ) -> None:
        self.add("policy", name, factory, description, forward=forward)

    def goal(
        self,
        name: str,
        factory: Callable[..., Any],
        description: str,
        *,
        forward: tuple[Kind, str] | None = None,
    ) -> None:
        self.add("goal", name, factory, description, forward=forward)

    def recommender(
        self,
        name: str,
        factory: Callable[..., Any],
        description: str,
        *,
        forward: tuple[Kind, str] | None = None,
    ) -> None:
        self.add("recommender", name, factory, description, forward=forward)

    def combiner(self, combine: Callable[[Any, Any], RecoursePolicy]) -> None:
        """How ``GOAL+RECOMMENDER`` specs become a policy: ``combine(goal, recommender)``."""
        self._combine = combine

    def combine(self, goal: Any, recommender: Any) -> RecoursePolicy:
        """A policy from a built goal selector and recommender (the family's combiner)."""
        self._ensure_loaded()
        if self._combine is None:
            raise PolicySpecError("no family registered a way to combine a goal and a recommender")
        return self._combine(goal, recommender)

    def composite(self, goal: str, recommender: str, **defaults: Any) -> Composite:
        """A policy factory for ``goal + recommender``; its keywords (over ``defaults``) go
        to the recommender and are typed there. The parts may be registered later."""
        return Composite(self, goal, recommender, defaults)

    # -- reading -----------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            ep.load()(self)
            self._plugins[ep.name] = ep.value

    @property
    def plugins(self) -> dict[str, str]:
        """The entry points loaded: name -> ``module:function``."""
        self._ensure_loaded()
        return dict(self._plugins)

    def entries(self, kind: Kind) -> dict[str, Entry]:
        self._ensure_loaded()
        return dict(sorted(self._entries[kind].items()))

    def get(self, kind: Kind, name: str) -> Entry:
        self._ensure_loaded()
        entry = self._entries[kind].get(name)
        if entry is None:
            allowed = ", ".join(sorted(self._entries[kind])) or "none registered"
            raise PolicySpecError(
                f"{_KIND_LABEL[kind]} = {name!r} is not registered; allowed: {allowed}"
            )
        return entry

    def describe(self, kind: Kind = "policy") -> dict[str, str]:
        """Name -> one-line description."""
        return {name: e.description for name, e in self.entries(kind).items()}

    def allowed_params(self, entry: Entry) -> list[str]:
        """Every parameter ``entry`` accepts, its own and those it forwards."""
        names = set(entry.params.model_fields)
        if entry.forward is not None:
            names |= set(self.allowed_params(self.get(*entry.forward)))
        return sorted(names)

    def __contains__(self, name: str) -> bool:
        return name in self.entries("policy")

    # -- typing and building -----------------------------------------------------------
    def typed_params(self, entry: Entry, params: dict[str, Any], label: str = "") -> dict[str, Any]:
        """``params`` (texts or values) typed against ``entry`` and the part it forwards to.

        Raises :class:`PolicySpecError` naming the part (``label``, by default the entry)
        and the parameter: an unknown key, a mistyped value or one out of range.
        """
        label = label or entry.label
        fields = entry.params.model_fields
        own = {k: v for k, v in params.items() if k in fields}
        rest = {k: v for k, v in params.items() if k not in fields}
        if rest and entry.forward is not None:
            target = self.get(*entry.forward)
            unknown = sorted(set(rest) - set(self.allowed_params(target)))
            if unknown:
                allowed = ", ".join(self.allowed_params(entry))
                raise PolicySpecError(
                    f"{label} has no parameter {unknown[0]!r}; allowed: {allowed}"
                )
            rest = self.typed_params(target, rest, label)
        elif rest and not entry.open_params:
            allowed = ", ".join(sorted(fields)) or "no parameters"
            raise PolicySpecError(
                f"{label} has no parameter {sorted(rest)[0]!r}; allowed: {allowed}"
            )
        try:
            typed = entry.params.model_validate(own)
        except ValidationError as exc:
            text = _problem(exc, fields, own, rules=False)
            raise PolicySpecError(f"{label}: {text}") from None
        return {**{k: getattr(typed, k) for k in own}, **rest}

    def make(self, kind: Kind, part: Part | str, **params: Any) -> Any:
        """Build one part: ``part`` is a :class:`Part` or ``NAME[:k=v,...]``; ``params``
        (values) override the spec's."""
        if isinstance(part, str):
            parsed = parse_spec(part)
            if len(parsed) != 1:
                raise PolicySpecError(f"{_KIND_LABEL[kind]} {part!r} must be a single name")
            part = parsed[0]
        entry = self.get(kind, part.name)
        return entry.factory(**self.typed_params(entry, {**part.params, **params}))

    def make_policy(self, spec: str, **params: Any) -> RecoursePolicy:
        """A policy from a registry name or ``GOAL+RECOMMENDER``; ``params`` go to the
        policy (or, for a composite, to the recommender)."""
        parts = parse_spec(spec)
        if len(parts) == 1:
            return self.make("policy", parts[0], **params)
        return self.combine(
            self.make("goal", parts[0]), self.make("recommender", parts[1], **params)
        )

    def validate(self, spec: str) -> str:
        """Check that ``spec`` names registered parts with valid parameters; returns it.

        Names and parameter types and ranges are checked here; nothing is built (checks
        that need the scenario, such as a linear decision model, come at ``prepare``).
        """
        parts = parse_spec(spec)
        kinds: tuple[Kind, ...] = ("policy",) if len(parts) == 1 else ("goal", "recommender")
        for kind, part in zip(kinds, parts, strict=True):
            self.typed_params(self.get(kind, part.name), part.params)
        return spec


REGISTRY = Registry()
"""The registry every command, the model and the dashboard use."""


def make_policy(spec: str, **params: Any) -> RecoursePolicy:
    """Build a policy from :data:`REGISTRY` (see :meth:`Registry.make_policy`)."""
    return REGISTRY.make_policy(spec, **params)


def available_policies() -> dict[str, str]:
    """Policy name -> one-line description."""
    return REGISTRY.describe("policy")
