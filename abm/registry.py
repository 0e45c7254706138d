"""The registry of recourse policies and their parts (goal selectors, recommenders).

A policy is named directly (``threshold``, ``none``, ...) or as a composite
``GOAL+RECOMMENDER`` whose parts may carry parameters after a colon:
``last-threshold:margin=0.02+exact-linear:weights=estimated``. :func:`parse_spec`
splits such a text; :meth:`Registry.make_policy` validates every parameter against the
factory's typed signature (a pydantic model with ``extra="forbid"``), so a misspelled
key or a mistyped number is an error naming the policy and the parameter.

Policy families live outside the core and register through the entry-point group
``recourse_abm.policies``: each entry point names a function ``register(registry)``.
The core never names a policy package; another installed package adds policies the
same way (``examples/plugin``). Loading the registry imports the families' light
modules only: heavy libraries (torch, dice-ml, data sets) load when a policy is built.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from abm.interfaces import RecoursePolicy
from abm.validation import ConfigError, one_line

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
    """A registered factory with its typed parameters."""

    name: str
    kind: Kind
    factory: Callable[..., Any]
    description: str
    params: type[BaseModel]
    open_params: bool  # the factory forwards unknown keywords to a part it builds

    def build(self, params: dict[str, Any]) -> Any:
        """Validate ``params`` (texts or values) and call the factory."""
        label = f"{_KIND_LABEL[self.kind]} {self.name!r}"
        known = set(self.params.model_fields)
        typed_in = {k: v for k, v in params.items() if k in known}
        rest = {k: v for k, v in params.items() if k not in known}
        if rest and not self.open_params:
            key = sorted(rest)[0]
            allowed = ", ".join(sorted(known)) or "no parameters"
            raise PolicySpecError(f"{label} has no parameter {key!r}; allowed: {allowed}")
        try:
            typed = self.params.model_validate(typed_in)
        except ValidationError as exc:
            raise PolicySpecError(f"{label}: {one_line(exc)}") from None
        values = {k: getattr(typed, k) for k in typed_in}
        return self.factory(**values, **rest)


def params_model(name: str, factory: Callable[..., Any]) -> tuple[type[BaseModel], bool]:
    """A frozen pydantic model of ``factory``'s keyword parameters, and whether it takes **kwargs.

    Annotations become the field types (so ``"0.05"`` validates as a float and ``"x"``
    does not); parameters without a default are required.
    """
    target = factory.__init__ if inspect.isclass(factory) else factory
    signature = inspect.signature(target)
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # an annotation that cannot be resolved is treated as untyped
        hints = {}
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
        annotation = hints.get(pname, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[pname] = (annotation, default)
    config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    model = create_model(f"{name}-params", __config__=config, **fields)
    return model, open_params


class Registry:
    """Named factories of policies, goal selectors and recommenders.

    ``policy``/``goal``/``recommender`` add entries; ``make_policy`` builds from a spec.
    Entry points of :data:`ENTRY_POINT_GROUP` are loaded on first use.
    """

    def __init__(self, *, load_plugins: bool = True) -> None:
        self._entries: dict[Kind, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self._load_plugins = load_plugins
        self._loaded = not load_plugins
        self.plugins: dict[str, str] = {}  # entry-point name -> its module:function
        self._combine: Callable[[Any, Any], RecoursePolicy] | None = None

    # -- adding ------------------------------------------------------------------------
    def add(self, kind: Kind, name: str, factory: Callable[..., Any], description: str) -> None:
        if name in self._entries[kind]:
            raise ValueError(f"{_KIND_LABEL[kind]} {name!r} is registered twice")
        model, open_params = params_model(name, factory)
        self._entries[kind][name] = Entry(name, kind, factory, description, model, open_params)

    def policy(self, name: str, factory: Callable[..., RecoursePolicy], description: str) -> None:
        self.add("policy", name, factory, description)

    def goal(self, name: str, factory: Callable[..., Any], description: str) -> None:
        self.add("goal", name, factory, description)

    def recommender(self, name: str, factory: Callable[..., Any], description: str) -> None:
        self.add("recommender", name, factory, description)

    def combiner(self, combine: Callable[[Any, Any], RecoursePolicy]) -> None:
        """How ``GOAL+RECOMMENDER`` specs become a policy: ``combine(goal, recommender)``."""
        self._combine = combine

    def composite(
        self, goal: str, recommender: str, **defaults: Any
    ) -> Callable[..., RecoursePolicy]:
        """A policy factory for ``goal + recommender``; its keywords (over ``defaults``) go
        to the recommender and are validated there."""

        def factory(**params: Any) -> RecoursePolicy:
            if self._combine is None:
                raise PolicySpecError("no family registered a way to combine parts")
            return self._combine(
                self.make("goal", goal),
                self.make("recommender", recommender, **{**defaults, **params}),
            )

        return factory

    # -- reading -----------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            ep.load()(self)
            self.plugins[ep.name] = ep.value

    def entries(self, kind: Kind) -> dict[str, Entry]:
        self._ensure_loaded()
        return dict(sorted(self._entries[kind].items()))

    def get(self, kind: Kind, name: str) -> Entry:
        table = self.entries(kind)
        if name not in table:
            raise PolicySpecError(
                f"{_KIND_LABEL[kind]} = {name!r} is not registered; allowed: {', '.join(table)}"
            )
        return table[name]

    def describe(self, kind: Kind = "policy") -> dict[str, str]:
        """Name -> one-line description."""
        return {name: e.description for name, e in self.entries(kind).items()}

    def __contains__(self, name: str) -> bool:
        return name in self.entries("policy")

    # -- building ----------------------------------------------------------------------
    def make(self, kind: Kind, part: Part | str, **params: Any) -> Any:
        """Build one part: ``part`` is a :class:`Part` or ``NAME[:k=v,...]``."""
        if isinstance(part, str):
            parsed = parse_spec(part)
            if len(parsed) != 1:
                raise PolicySpecError(f"{_KIND_LABEL[kind]} {part!r} must be a single name")
            part = parsed[0]
        return self.get(kind, part.name).build({**part.params, **params})

    def make_policy(self, spec: str, **params: Any) -> RecoursePolicy:
        """A policy from a registry name or ``GOAL+RECOMMENDER``; ``params`` go to the
        policy (or, for a composite, to the recommender)."""
        parts = parse_spec(spec)
        if len(parts) == 1:
            return self.make("policy", parts[0], **params)
        if self._combine is None:
            raise PolicySpecError("no family registered a way to combine a goal and a recommender")
        goal = self.make("goal", parts[0])
        recommender = self.make("recommender", parts[1], **params)
        return self._combine(goal, recommender)

    def validate(self, spec: str) -> str:
        """Check that ``spec`` names registered parts with valid parameters; returns it.

        Only names and parameter types are checked here; nothing is built.
        """
        parts = parse_spec(spec)
        kinds: tuple[Kind, ...] = ("policy",) if len(parts) == 1 else ("goal", "recommender")
        for kind, part in zip(kinds, parts, strict=True):
            entry = self.get(kind, part.name)
            unknown = set(part.params) - set(entry.params.model_fields)
            if unknown and not entry.open_params:
                allowed = ", ".join(sorted(entry.params.model_fields)) or "no parameters"
                raise PolicySpecError(
                    f"{_KIND_LABEL[kind]} {part.name!r} has no parameter {sorted(unknown)[0]!r}; "
                    f"allowed: {allowed}"
                )
            typed = {k: v for k, v in part.params.items() if k in entry.params.model_fields}
            try:
                entry.params.model_validate(typed)
            except ValidationError as exc:
                raise PolicySpecError(
                    f"{_KIND_LABEL[kind]} {part.name!r}: {one_line(exc)}"
                ) from None
        return spec


REGISTRY = Registry()
"""The registry every command, the model and the dashboard use."""


def make_policy(spec: str, **params: Any) -> RecoursePolicy:
    """Build a policy from :data:`REGISTRY` (see :meth:`Registry.make_policy`)."""
    return REGISTRY.make_policy(spec, **params)


def available_policies() -> dict[str, str]:
    """Policy name -> one-line description."""
    return REGISTRY.describe("policy")
