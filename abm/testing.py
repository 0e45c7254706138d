"""A conformance check for recourse policies: :func:`check_policy`.

The analogue of gymnasium's ``check_env`` or scikit-learn's ``check_estimator``: it
runs a policy through small worlds (:data:`WORLDS`) tick by tick, looks at every
recommendation before the model does, and checks the policy contract of
:mod:`abm.interfaces`, one named rule at a time (:data:`RULES`). A broken rule raises
:class:`PolicyCheckError`, whose one-line message names the policy, the rule, the world,
the tick and, where there is one, the candidate::

    policy 'mine' breaks rule 'immutables' in world 'paper' at tick 3: candidate 17
    changed immutable feature 7 (0.41 -> 0.52)

Otherwise a :class:`CheckReport` lists the worlds the policy ran in and those it cannot
run in (its ``prepare`` refused them), and per world which rules passed, on how many
ticks or rows, and which were skipped and why. A rule that a policy is known to break can be ``allow``-ed with a
reason: it is still checked, and the report shows it broken with what was measured.

Each world is run with up to three fresh policy instances, each in its own model with
the same seed: A (every rule is checked on its advice), B (``determinism``: its advice
must equal A's bit for bit) and C (``fork-safe``: before each of its ticks a planning
fork (:mod:`abm.planning`) is rolled ``fork_ticks`` ahead; its advice must still equal
A's). A policy given as an object instead of a spec or a factory runs as A only.

Tolerances are the model's own (:mod:`abm.model`, :mod:`abm.record`,
:mod:`abm.mechanisms.budget`): 1e-9 for the [0, 1] box, for round-off changes and for
the budget, 1e-6 for a goal.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from threadpoolctl import threadpool_limits

from abm.advice import BOUND_TOL, CHANGE_TOL
from abm.config import ScenarioConfig
from abm.interfaces import HistoryWindow, Recommendation, RecourseObs, RecoursePolicy
from abm.mechanisms import registered
from abm.mechanisms.budget import BUDGET_TOL
from abm.record import GOAL_TOL
from abm.validation import ConfigError, problem, show

__all__ = [
    "DEFAULT_WORLDS",
    "RULES",
    "WORLDS",
    "CheckReport",
    "PolicyCheckError",
    "RuleResult",
    "CheckWorld",
    "check_policy",
]


def __getattr__(name: str) -> Any:
    if name == "World":  # deprecated since 0.9, removed in 0.10: abm.world.World is the world
        import warnings

        warnings.warn(
            "abm.testing.World is deprecated: use abm.testing.CheckWorld",
            DeprecationWarning,
            stacklevel=2,
        )
        return CheckWorld
    raise AttributeError(f"module 'abm.testing' has no attribute {name!r}")


#: Rule id -> what it requires; the ids are stable (error messages, ``skip``, ``allow``).
RULES: dict[str, str] = {
    "runs": "prepare, recommend and observe return without raising, and the model "
    "accepts every recommendation",
    "advice-shape": "recommend returns a Recommendation with goal (n,) and X_cf (n, z) "
    "of floats, masks advised/unreached/withheld (n,) bool and info columns (n,), "
    "n = obs.n_rejected",
    "bounds": "advised counterfactuals are finite and inside [0, 1] (tolerance 1e-9)",
    "immutables": "advice never changes an immutable feature (ctx.immutable; changes "
    "below 1e-9 are round-off the model discards)",
    "one-way": "advice never lowers an increase-only feature nor raises a decrease-only "
    "one (ctx.direction), and changes at most the policy's max_changes features",
    "onehot": "advice leaves every one-hot group one-hot (each indicator 0 or 1, exactly "
    "one 1) and makes only allowed switches (ctx.onehot)",
    "obs-unchanged": "recommend leaves every array of the observation (and of its "
    "history window and extra) and the decision model's weights as it found them",
    "determinism": "two fresh instances, prepared alike and called with generators in "
    "equal states, give bit-for-bit equal advice and draw alike",
    "honest-masks": "unreached and withheld rows are not advised, and every advised row "
    "changes some feature by 1e-9 or more",
    "goal-admissible": "an advised row's goal is finite, at least the threshold and "
    "strictly above the candidate's own score (SPEC §2)",
    "goal-reached": "an advised counterfactual reaches its goal under the decision "
    "model in force: M(x_cf) >= goal - 1e-6",
    "budget": "with a budget (obs.budget_left finite) the advised changes' L1 sizes sum "
    "to at most obs.budget_left + 1e-9",
    "model-in-force": "after a refit, advice aims under obs.decision_model: no tick's "
    "advice falls short under it while reaching every goal under an older model",
    "fork-safe": "planning forks (abm.planning.Simulator) rolled between decide and "
    "recommend leave the policy's advice bit for bit unchanged",
    "batch": "episodes run together as one batch (abm.batch.Batch) are each bit for bit "
    "the episode run alone: tick and candidate tables and summary",
}
#: the batch rule: this many episodes of this many ticks (at most the world's), seeds on
BATCH_EPISODES, BATCH_TICKS = 3, 5

# what a rule's ``checked`` counts
_UNITS = {
    "runs": "ticks",
    "obs-unchanged": "ticks",
    "determinism": "ticks",
    "budget": "ticks",
    "fork-safe": "ticks",
    "batch": "ticks",
    "advice-shape": "ticks",
    "honest-masks": "rejected rows",
}


@dataclass(frozen=True)
class CheckWorld:
    """A small world to check policies in: a scenario preset with ``overrides``."""

    scenario: str
    overrides: Mapping[str, Any]
    about: str

    def config(self, ticks: int, seed: int) -> ScenarioConfig:
        from abm.scenarios import resolve_scenario

        return resolve_scenario(self.scenario).replace(**self.overrides, ticks=ticks, seed=seed)


_TWO_GROUPS = {"group_share": (0.5, 0.5), "group_shift": ((-0.1,) * 5 + (0.0,) * 5, (0.0,) * 10)}

#: The worlds :func:`check_policy` knows by name: the paper's, one per world extension
#: that names one (:attr:`abm.mechanisms.Mechanism.check_world`), and two that combine
#: them. Every one but ``ei`` makes a feature immutable: feature 7, the one uniform-cost
#: advice moves first in the paper's world (9 in fair-scarf, whose causal graph points
#: into 7).
WORLDS: dict[str, CheckWorld] = {
    "paper": CheckWorld(
        "paper",
        {"immutable": (7,)},
        "the paper's world (App. D), 20 + 10 applicants a tick, k = 9, T = 1",
    ),
    **{
        w.name: CheckWorld(w.scenario, w.overrides, w.description)
        for w in (m.check_world for m in registered())
        if w is not None
    },
    "one-way": CheckWorld(
        "paper",
        {"immutable": (9,), "increase": (0, 1, 2), "decrease": (5, 7)},
        "the paper's world with one-way features: 0-2 may only rise, 5 and 7 (cheap "
        "to move up) only fall, 9 immutable",
    ),
    "onehot": CheckWorld(
        "paper",
        {
            "immutable": (0, 1),
            "onehot": ((0, 1), (2, 3, 4), (6, 8)),
            "switch_cost": (
                ((0.0, 0.5), (0.5, 0.0)),
                ((0.0, 0.2, 0.6), (0.3, 0.0, math.inf), (0.4, 0.4, 0.0)),
                ((0.0, 0.3), (0.3, 0.0)),
            ),
        },
        "the paper's world with three one-hot groups: 0-1 immutable, 2-4 (no switch from "
        "3 to 4) and 6, 8",
    ),
    "fair-scarf": CheckWorld(
        "fair-scarf",
        {"immutable": (9,)},
        "two groups, a causal graph, an episode budget of 20 (L1), outcomes after 1 tick",
    ),
    "ei": CheckWorld(
        "paper",
        {**_TWO_GROUPS, "decision_model": "ei"},
        "two groups and a decision model trained with the EI objective (for policy 'ei')",
    ),
}

#: The worlds checked unless ``scenarios`` says otherwise: the paper's, each extension's
#: default one, and fair-scarf.
DEFAULT_WORLDS: tuple[str, ...] = (
    "paper",
    *(w.name for w in (m.check_world for m in registered()) if w is not None and w.default),
    "one-way",
    "onehot",
    "fair-scarf",
)


class PolicyCheckError(AssertionError):
    """A policy breaks a rule of :data:`RULES`; the message is one line naming the
    policy, the rule, the world, the tick and (where there is one) the candidate."""

    def __init__(
        self,
        policy: str,
        rule: str,
        world: str,
        tick: int | None,
        detail: str,
        candidate: int | None = None,
    ) -> None:
        self.policy, self.rule, self.world = policy, rule, world
        self.tick, self.candidate, self.detail = tick, candidate, detail
        where = f"in world {world!r}" + ("" if tick is None else f" at tick {tick}")
        text = " ".join(f"policy {policy!r} breaks rule {rule!r} {where}: {detail}".split())
        super().__init__(text)


@dataclass(frozen=True)
class RuleResult:
    """One rule in one world: ``passed``, ``skipped`` (``detail`` says why) or ``broken``
    (only for an allowed rule: ``detail`` gives the first violation, the count and the
    worst measure). ``checked`` counts what it was checked on (ticks or advised rows)."""

    rule: str
    world: str
    status: Literal["passed", "skipped", "broken"]
    detail: str = ""
    checked: int = 0


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_policy` ran and found.

    ``worlds``: the worlds the policy ran in -> what each is (scenario, overrides, ticks,
    seed, the instances run); ``not_run``: worlds it cannot run in -> why (its
    ``prepare`` raised a ConfigError, e.g. "needs outcome_delay"); ``results``: one
    :class:`RuleResult` per rule and world run; ``allowed``: rule -> the reason given.
    """

    policy: str
    worlds: Mapping[str, str]
    not_run: Mapping[str, str]
    results: tuple[RuleResult, ...]
    allowed: Mapping[str, str] = field(default_factory=dict)

    def result(self, rule: str, world: str) -> RuleResult:
        for r in self.results:
            if r.rule == rule and r.world == world:
                return r
        raise KeyError(f"no result for rule {rule!r} in world {world!r}")

    def status(self, rule: str, world: str | None = None) -> str:
        """``broken`` if broken (and allowed) in a world, else ``passed`` if it passed in
        one, else ``skipped``; ``world`` narrows it to that world."""
        if rule not in RULES:
            raise KeyError(f"rule {rule!r} is not one of {', '.join(RULES)}")
        found = {r.status for r in self.results if r.rule == rule and world in (None, r.world)}
        for status in ("broken", "passed"):
            if status in found:
                return status
        return "skipped"

    @property
    def broken(self) -> tuple[RuleResult, ...]:
        """The allowed rules found broken, world by world."""
        return tuple(r for r in self.results if r.status == "broken")

    @property
    def stale_allowances(self) -> tuple[str, ...]:
        """Allowed rules that were not found broken anywhere: the allowance can go."""
        return tuple(rule for rule in self.allowed if self.status(rule) != "broken")

    def _cell(self, rule: str, world: str) -> str:
        r = self.result(rule, world)
        return r.status if r.status == "skipped" else f"{r.status} {r.checked}"

    def __str__(self) -> str:
        worlds = list(self.worlds)
        lines = [f"check_policy({self.policy!r}): {len(RULES)} rules in {len(worlds)} worlds"]
        lines += [f"  ran in {name}: {about}" for name, about in self.worlds.items()]
        lines += [f"  cannot run in {name}: {why}" for name, why in self.not_run.items()]
        width = max(map(len, RULES))
        cols = [max(len(w), 11) for w in worlds]
        lines.append(
            "  "
            + "rule".ljust(width)
            + "".join(f"  {w:<{c}}" for w, c in zip(worlds, cols, strict=True))
        )
        for rule in RULES:
            cells = "".join(
                f"  {self._cell(rule, w):<{c}}" for w, c in zip(worlds, cols, strict=True)
            )
            lines.append("  " + rule.ljust(width) + cells)
        for r in self.results:
            if r.status != "passed":
                lines.append(f"  {r.status} {r.rule} in {r.world}: {r.detail}")
        return "\n".join(lines)


def check_policy(
    policy: str | Callable[[], RecoursePolicy] | RecoursePolicy,
    *,
    scenarios: Iterable[str | ScenarioConfig] | None = None,
    ticks: int = 8,
    seed: int = 0,
    skip: Iterable[str] = (),
    allow: Mapping[str, str] | None = None,
    fork_ticks: int = 2,
    name: str | None = None,
) -> CheckReport:
    """Run ``policy`` through small worlds and check every rule of :data:`RULES`.

    Args:
        policy: a registry spec (``"last-threshold:margin=0.05+exact-linear"``), a
            zero-argument factory returning a fresh policy (a class works), or a policy
            object; an object is one instance, so ``determinism`` and ``fork-safe``
            (which need fresh ones) are skipped, and it is prepared again in each world.
        scenarios: names of :data:`WORLDS`, other scenario presets or ScenarioConfigs
            (``ticks`` and ``seed`` are set on each); default :data:`DEFAULT_WORLDS`.
            A world where the policy's ``prepare`` raises a ConfigError ("needs budget",
            "needs outcome_delay") or another ValueError (a trained artefact that does
            not fit the world) is listed in ``report.not_run``; none at all is a
            ConfigError.
        ticks: ticks per world. seed: the episode seed of every world.
        skip: rules not to check (reported as skipped).
        allow: rule -> reason, for rules the policy is known to break: still checked,
            reported ``broken`` with the first violation, the count and the worst
            measure, but not raised.
        fork_ticks: how far each planning fork of ``fork-safe`` rolls ahead.
        name: the policy's name in messages (default: the spec, or the class name).

    Returns the :class:`CheckReport`; raises :class:`PolicyCheckError` at the first
    violation of a rule that is not allowed.
    """
    allow = dict(allow or {})
    skip = tuple(skip)
    for label, rules in (("skip", skip), ("allow", tuple(allow))):
        unknown = [r for r in rules if r not in RULES or r == "runs"]
        if unknown:
            ids = ", ".join(r for r in RULES if r != "runs")
            raise ConfigError(problem(label, unknown[0], f"rule ids other than runs: {ids}"))
    if not (isinstance(ticks, int) and ticks >= 1):
        raise ConfigError(problem("ticks", ticks, "an integer >= 1"))
    if not (isinstance(fork_ticks, int) and fork_ticks >= 1):
        raise ConfigError(problem("fork_ticks", fork_ticks, "an integer >= 1"))
    make, label, fresh = _factory(policy)
    worlds = _worlds(scenarios, ticks, seed)
    name = name or label
    ran: dict[str, str] = {}
    not_run: dict[str, str] = {}
    results: list[RuleResult] = []
    for wname, config, about in worlds:
        run = _WorldRun(name, wname, config, make, fresh, skip, allow, fork_ticks)
        run.spec = policy if isinstance(policy, str) else None
        # one BLAS thread: the worlds are tiny, and a refit's L-BFGS is 5x slower with more
        with threadpool_limits(limits=1):
            why = run.run()
        if why is not None:
            not_run[wname] = why
            continue
        ran[wname] = f"{about}; {run.ticks_asked} ticks asked; instances {run.instances}"
        results += run.results()
    if not ran:
        reasons = "; ".join(f"{w}: {why}" for w, why in not_run.items())
        raise ConfigError(
            f"policy {name!r} can run in none of the worlds checked ({reasons}); pass "
            "scenarios= with a world it can run in"
        )
    return CheckReport(name, ran, not_run, tuple(results), allow)


# -- the pieces -----------------------------------------------------------------------------
def _factory(policy: Any) -> tuple[Callable[[], Any], str, bool]:
    """(make a policy, its name, whether ``make`` gives fresh instances)."""
    if isinstance(policy, str):
        from abm.registry import REGISTRY, make_policy

        REGISTRY.validate(policy)  # a bad spec is its own one-line error
        return (lambda: make_policy(policy)), policy, True
    if isinstance(policy, RecoursePolicy) and not isinstance(policy, type):
        return (lambda: policy), type(policy).__name__, False
    if callable(policy):
        label = getattr(policy, "__name__", "")
        if not label or label == "<lambda>":
            label = type(policy()).__name__
        return policy, label, True
    raise TypeError(
        f"policy must be a registry spec, a zero-argument factory or a policy, got {policy!r}"
    )


def _worlds(scenarios: Any, ticks: int, seed: int) -> list[tuple[str, ScenarioConfig, str]]:
    """(name, config, what it is) of every world to check in."""
    from abm.scenarios import resolve_scenario

    out = []
    for item in DEFAULT_WORLDS if scenarios is None else scenarios:
        if isinstance(item, ScenarioConfig):
            config, sets, about = item, {}, item.description
        elif item in WORLDS:
            world = WORLDS[item]
            config, sets, about = (
                resolve_scenario(world.scenario),
                dict(world.overrides),
                world.about,
            )
        else:
            config, sets = resolve_scenario(item), {}
            about = config.description
        sets.update(ticks=ticks, seed=seed)
        text = f"{config.name} with " + ", ".join(f"{k}={v!r}" for k, v in sets.items())
        name = item if isinstance(item, str) else config.name
        out.append((name, config.replace(**sets), text + (f" ({about})" if about else "")))
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names) or not names:
        raise ConfigError(problem("scenarios", names, "one or more worlds, each once"))
    return out


def _first_difference(a: Any, b: Any) -> tuple[int | None, str] | None:
    """(tick, what) of the first cell where two record tables differ (NaN equals NaN),
    or None."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return None, f"columns or rows differ ({a.shape} and {b.shape})"
    for column in a.columns:
        x, y = a[column].to_numpy(), b[column].to_numpy()
        if x.dtype != y.dtype:
            return None, f"column {column!r} is {x.dtype} and {y.dtype}"
        if x.dtype.kind == "f":
            same = (x == y) | (np.isnan(x) & np.isnan(y))
        else:
            same = x == y
        if not np.all(same):
            row = int(np.flatnonzero(~same)[0])
            tick = int(a["tick"].iloc[row]) if "tick" in a.columns else None
            return tick, f"column {column!r}, row {row}: {x[row]!r} and {y[row]!r}"
    return None


def _same(a: Any, b: Any) -> bool:
    """Bitwise equality of two arrays (NaN equals NaN, -0.0 differs from 0.0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _where(a: np.ndarray, b: np.ndarray) -> tuple[tuple[int, ...], str]:
    """(the first index where two arrays differ, a text with both values there)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return (), f"(shape {a.shape} {a.dtype} -> {b.shape} {b.dtype})"
    diff = a != b
    if a.dtype.kind == "f":
        diff &= ~(np.isnan(a) & np.isnan(b))
        diff |= np.signbit(a) != np.signbit(b)
    if not diff.any():
        return (), "(the bytes differ)"
    idx = tuple(int(i) for i in np.argwhere(diff)[0])
    at = idx[0] if len(idx) == 1 else idx
    return idx, f"at {at}: {show(a[idx].item())} -> {show(b[idx].item())}"


def _obs_state(obs: RecourseObs, ctx: Any) -> dict[str, Any]:
    """Copies of everything of ``obs`` a policy could change (building its history)."""
    state: dict[str, Any] = {}
    for f in dataclasses.fields(RecourseObs):
        value = getattr(obs, f.name)
        if isinstance(value, np.ndarray):
            state[f.name] = value.copy()
        elif f.name in ("tick", "threshold", "model_version", "budget_left"):
            state[f.name] = np.asarray(value).copy()
    state["extra keys"] = tuple(obs.extra)
    for key, value in obs.extra.items():
        state[f"extra[{key!r}]"] = np.array(value, copy=True)
    if obs.history_fn is not None:
        history = obs.history
        for f in dataclasses.fields(HistoryWindow):
            state[f"history.{f.name}"] = np.array(getattr(history, f.name), copy=True)
    for label, model in (
        ("decision_model", obs.decision_model),
        ("ctx.decision_model", ctx.decision_model),
    ):
        for part in ("weights", "intercept"):
            value = getattr(model, part, None)
            if value is not None:
                state[f"{label}.{part}"] = np.array(value, copy=True)
    return state


def _changed(before: dict[str, Any], obs: RecourseObs, ctx: Any) -> str | None:
    after = _obs_state(obs, ctx)
    if before["extra keys"] != after["extra keys"]:
        keys = f"{before['extra keys']} -> {after['extra keys']}"
        return f"recommend changed the keys of obs.extra: {keys}"
    for key, old in before.items():
        if key == "extra keys":
            continue
        new = after.get(key)
        if new is None or not _same(old, new):
            label = key if key.startswith("ctx.") else f"obs.{key}"
            where = "gone" if new is None else _where(old, new)[1]
            return f"recommend changed {label} ({where})"
    return None


def _difference(a: Recommendation, b: Recommendation) -> tuple[str, int | None] | None:
    """Where two recommendations differ: (what, the row or None); None if bit for bit equal."""
    if type(a) is not type(b):
        return f"a {type(a).__name__} and a {type(b).__name__}", None
    n = np.shape(a.goal)[0] if np.ndim(a.goal) else 0
    none = np.zeros(n, dtype=bool)
    pairs = [
        ("goal", a.goal, b.goal),
        ("X_cf", a.X_cf, b.X_cf),
        ("advised", a.advised_mask(), b.advised_mask()),
    ]
    for mask in ("unreached", "withheld"):
        x, y = getattr(a, mask), getattr(b, mask)
        pairs.append((mask, none if x is None else x, none if y is None else y))
    if set(a.info) != set(b.info):
        return f"info columns {sorted(a.info)} and {sorted(b.info)}", None
    pairs += [(f"info[{k!r}]", a.info[k], b.info[k]) for k in sorted(a.info)]
    for label, x, y in pairs:
        x, y = np.asarray(x), np.asarray(y)
        if not _same(x, y):
            idx, where = _where(x, y)
            row = idx[0] if idx and x.shape[:1] == (n,) else None
            return f"{label} differs {where}", row
    return None


class _Stop(Exception):
    """The model refused advice that broke an allowed rule: the world ends there."""


class _WorldRun:
    """One world: models A (checked), B (determinism), C (fork-safe), tick by tick."""

    def __init__(self, policy, world, config, make, fresh, skip, allow, fork_ticks) -> None:
        self.policy, self.world, self.config = policy, world, config
        self.make, self.fresh, self.skip, self.allow = make, fresh, skip, allow
        self.fork_ticks = fork_ticks
        self.checked = dict.fromkeys(RULES, 0)
        self.found: dict[str, list] = {}  # rule -> [first detail, count, worst]
        self.why_skipped: dict[str, str] = {}
        self.ticks_asked = 0
        self.models_seen: list[Any] = []
        self.stopped: str | None = None
        self.fork_error: tuple[int, str, Exception] | None = None
        self.instances = "A"

    # -- outcomes of a check ---------------------------------------------------------------
    def active(self, rule: str) -> bool:
        return rule not in self.skip and rule not in self.why_skipped

    def fail(
        self,
        rule: str,
        tick: int | None,
        detail: str,
        candidate: int | None = None,
        worst: float | None = None,
        count: int = 1,
    ) -> None:
        """Raise the rule's PolicyCheckError, or note it if the rule is allowed; nothing for
        a rule the caller skipped (a check shared by two rules, as goal-reached's with
        model-in-force's, runs for either)."""
        if rule in self.skip:
            return
        if candidate is not None:
            detail = f"candidate {candidate} {detail}"
        if rule not in self.allow:
            raise PolicyCheckError(self.policy, rule, self.world, tick, detail, candidate)
        seen = self.found.setdefault(rule, [f"at tick {tick}: {detail}", 0, None])
        seen[1] += count
        if worst is not None:
            seen[2] = worst if seen[2] is None else max(seen[2], worst)

    def results(self) -> list[RuleResult]:
        out = []
        for rule in RULES:
            if rule in self.skip:
                out.append(RuleResult(rule, self.world, "skipped", "skipped by the caller"))
            elif rule in self.found:
                first, count, worst = self.found[rule]
                unit = _UNITS.get(rule, "advised rows")
                text = f"{count} of {self.checked[rule]} {unit}"
                if worst is not None:
                    text += f", worst {worst:.3g}"
                text += f"; first {first}; allowed: {self.allow[rule]}"
                if self.stopped:
                    text += f" ({self.stopped})"
                out.append(RuleResult(rule, self.world, "broken", text, self.checked[rule]))
            elif rule in self.why_skipped:
                out.append(RuleResult(rule, self.world, "skipped", self.why_skipped[rule]))
            elif self.checked[rule] == 0:
                why = "the policy advised nobody in this world"
                if not self.ticks_asked:
                    why = "nobody was rejected: the policy was never asked"
                out.append(RuleResult(rule, self.world, "skipped", why))
            else:
                unit = _UNITS.get(rule, "advised rows")
                text = f"checked on {self.checked[rule]} {unit}"
                out.append(RuleResult(rule, self.world, "passed", text, self.checked[rule]))
        return out

    # -- the run --------------------------------------------------------------------------
    def build(self) -> tuple[Any, Any]:
        from abm.model import RecourseModel

        policy = self.make()
        model = RecourseModel(
            self.config, policy, agents=False, record_events=False, allow_mismatch=True
        )
        return model, policy

    def run(self) -> str | None:
        """Check the world; returns why the policy cannot run in it (else None)."""
        try:
            self.runs = {"A": self.build()}
        except ValueError as exc:  # a ConfigError, or an artefact that cannot serve here
            return " ".join(str(exc).split())
        except Exception as exc:
            raise PolicyCheckError(
                self.policy, "runs", self.world, None, f"prepare raised {type(exc).__name__}: {exc}"
            ) from exc
        if not self.config.immutable:
            self.why_skipped["immutables"] = "no immutable feature in this world"
        if not (self.config.increase or self.config.decrease) and (
            getattr(self.runs["A"][1], "max_changes", None) is None
        ):
            self.why_skipped["one-way"] = "no one-way feature here and no max_changes"
        if not self.config.onehot:
            self.why_skipped["onehot"] = "no one-hot group in this world"
        if self.config.budget is None:
            self.why_skipped["budget"] = "no budget in this world"
        if not self.config.retrain_every:
            self.why_skipped["model-in-force"] = "the decision model is never refitted here"
        if not self.fresh:
            why = "needs fresh instances: pass a registry spec or a zero-argument factory"
            self.why_skipped["determinism"] = self.why_skipped["fork-safe"] = why
            self.why_skipped["batch"] = why
        if self.active("determinism"):
            self.runs["B"] = self.build()
            self.instances += ", B"
        if self.active("fork-safe"):
            self.runs["C"] = self.build()
            self.instances += f", C (a fork of {self.fork_ticks} ticks before each tick)"
        try:
            for t in range(self.config.ticks):
                self.tick(t)
        except _Stop:
            pass
        if self.fork_error is not None and not self.found:
            t, detail, exc = self.fork_error
            raise PolicyCheckError(self.policy, "runs", self.world, t, detail) from exc
        if self.active("batch") and self.stopped is None:
            self.check_batch()
        return None

    def check_batch(self) -> None:
        """The batch rule: :data:`BATCH_EPISODES` episodes (seeds seed, seed + 1, ...) of
        :data:`BATCH_TICKS` ticks, alone and as one batch, compared bit for bit."""
        from abm.batch import Batch
        from abm.model import RecourseModel

        ticks = min(self.config.ticks, BATCH_TICKS)
        configs = [
            self.config.replace(ticks=ticks, seed=self.config.seed + i)
            for i in range(BATCH_EPISODES)
        ]

        def build(config: ScenarioConfig) -> Any:
            # a registry spec is given as such: a batch may then ask its episodes as one
            policy = self.make() if self.spec is None else self.spec
            return RecourseModel(config, policy, agents=False, allow_mismatch=True)

        alone = [self.call("an episode alone", None, lambda c=c: build(c).run()) for c in configs]
        together = [build(c) for c in configs]
        try:
            Batch.of(together).run()
        except PolicyCheckError:
            raise
        except Exception as exc:
            detail = f"the batch raised {type(exc).__name__}: {exc}"
            self.fail("batch", None, detail)
            return
        for i, (a, b) in enumerate(zip(alone, together, strict=True)):
            self.checked["batch"] += ticks
            for table in ("tick_table", "candidate_table"):
                where = _first_difference(getattr(a, table)(), getattr(b, table)())
                if where is not None:
                    self.fail("batch", where[0], f"episode {i}'s {table} differs: {where[1]}")
                    return
            if repr(a.summary()) != repr(b.summary()):
                self.fail("batch", None, f"episode {i}'s summary differs")
                return

    def call(self, what: str, t: int, fn: Callable, *args: Any) -> Any:
        try:
            return fn(*args)
        except (PolicyCheckError, _Stop):
            raise
        except Exception as exc:
            detail = f"{what} raised {type(exc).__name__}: {exc}"
            raise PolicyCheckError(self.policy, "runs", self.world, t, detail) from exc

    def tick(self, t: int) -> None:
        runs = self.runs
        seen = {
            k: self.call("decide (the policy's observe)", t, m.decide) for k, (m, _) in runs.items()
        }
        if seen["A"].n_rejected == 0:  # nobody to advise: the model does not ask the policy
            for m, _ in runs.values():
                m.respond(None)
            return
        self.ticks_asked += 1
        self.checked["runs"] += 1
        ma, pa = runs["A"]
        obs = seen["A"]
        before = _obs_state(obs, ma.context) if self.active("obs-unchanged") else None
        recs = {"A": self.call("recommend", t, pa.recommend, obs, ma.streams.policy)}
        if before is not None:
            self.checked["obs-unchanged"] += 1
            changed = _changed(before, obs, ma.context)
            if changed:
                self.fail("obs-unchanged", t, changed)
        self.check_advice(t, obs, recs["A"], ma.context)
        for key in ("B", "C"):
            if key == "C" and "C" in runs:
                self.fork(t)  # after A's advice passed: a fork's advice is not checked
            if key in runs:
                m, p = runs[key]
                recs[key] = self.call("recommend", t, p.recommend, seen[key], m.streams.policy)
        for key, rule in (("B", "determinism"), ("C", "fork-safe")):
            if key in runs:
                self.compare(t, rule, recs["A"], key, recs[key], obs.ids)
        for key, (m, _) in list(runs.items()):
            self.respond(t, m, recs[key])

    def respond(self, t: int, model: Any, rec: Any) -> None:
        try:
            model.respond(rec)
        except Exception as exc:
            detail = f"the model refused the advice: {type(exc).__name__}: {exc}"
            if self.found:  # an allowed rule broke first: the model cannot go on
                self.stopped = f"the world stopped at tick {t}: {detail}"
                raise _Stop from exc
            raise PolicyCheckError(self.policy, "runs", self.world, t, detail) from exc

    def fork(self, t: int) -> None:
        """Roll a planning fork of run C before its policy advises at tick ``t``.

        C is dropped if the fork cannot run: the policy runs forks itself (they cannot be
        nested), or it raised or gave advice the fork refused; the latter is the rule
        ``runs``'s, raised once A has run the world without breaking a rule (A, which is
        checked, names a broken rule better).
        """
        mc, _ = self.runs["C"]
        try:
            mc.simulator(self.fork_ticks, key=t)
        except Exception as exc:
            del self.runs["C"]
            if isinstance(exc, RuntimeError) and "cannot be nested" in str(exc):
                self.why_skipped["fork-safe"] = (
                    "the policy runs planning forks itself (forks cannot be nested), so "
                    "its own forks are part of every run"
                )
                return
            detail = (
                f"{type(exc).__name__}: {exc} (in a planning fork rolled "
                f"{self.fork_ticks} ticks on from tick {t})"
            )
            self.fork_error = (t, detail, exc)
            self.why_skipped["fork-safe"] = f"the forks stopped at tick {t}: {detail}"

    def compare(self, t: int, rule: str, rec: Any, key: str, other: Any, ids: np.ndarray) -> None:
        """``rule`` on run ``key``'s advice against A's; a run that parted is dropped."""
        if key not in self.runs:
            return
        self.checked[rule] += 1
        diff = _difference(rec, other)
        ga, gk = self.runs["A"][0].streams.policy, self.runs[key][0].streams.policy
        if diff is None and ga.bit_generator.state != gk.bit_generator.state:
            diff = "the advice is equal, but the policy drew differently from its generator", None
        if diff is None:
            return
        what, row = diff
        if rule == "determinism":
            detail = f"two fresh instances gave different advice: {what}"
        else:
            detail = f"a planning fork rolled before the tick changed the advice: {what}"
        if row is not None:
            detail = f"(row {row}): {detail}"
        self.fail(rule, t, detail, None if row is None else int(ids[row]))
        del self.runs[key]  # the runs have parted: compare no more
        if rule == "determinism" and "C" in self.runs:
            del self.runs["C"]
            self.why_skipped["fork-safe"] = f"determinism broke at tick {t}"

    # -- the rules on one recommendation ---------------------------------------------------
    def check_one_way(
        self,
        t: int,
        X: np.ndarray,
        X_cf: np.ndarray,
        residue: np.ndarray,
        rows: np.ndarray,
        ids: np.ndarray,
        ctx: Any,
    ) -> None:
        """The rule ``one-way`` on the advised ``rows``: directions, then the cap."""
        if not self.active("one-way"):
            return
        d = getattr(ctx, "direction", None)
        cap = getattr(self.runs["A"][1], "max_changes", None)
        if (d is None or not d.any()) and cap is None:
            return
        self.checked["one-way"] += rows.size
        moved = ~residue[rows]
        if d is not None and d.any():
            wrong = moved & (np.sign(X_cf[rows] - X[rows]) * d < 0)
            if wrong.any():
                i, j = np.argwhere(wrong)[0]
                r = rows[i]
                way = "only rise" if d[j] > 0 else "only fall"
                self.fail(
                    "one-way",
                    t,
                    f"moved feature {j}, which may {way}, from {X[r, j]:.6g} to {X_cf[r, j]:.6g}",
                    int(ids[r]),
                    count=int(wrong.any(axis=1).sum()),
                )
        if cap is not None:
            changed = moved.sum(axis=1)
            onehot = getattr(ctx, "onehot", None)
            for members in () if onehot is None else onehot.groups:
                # a switch is one change, though two indicators move
                changed -= np.maximum(moved[:, members].sum(axis=1) - 1, 0)
            over = changed > cap
            if over.any():
                i = int(np.flatnonzero(over)[0])
                self.fail(
                    "one-way",
                    t,
                    f"changed {int(changed[i])} features, more than max_changes = {cap}",
                    int(ids[rows[i]]),
                    count=int(over.sum()),
                )

    def check_advice(self, t: int, obs: RecourseObs, rec: Any, ctx: Any) -> None:
        """Every rule about one recommendation, in the order of :data:`RULES`."""
        n, z = obs.X.shape
        ids = obs.ids
        if not self.shape_ok(t, rec, n, z):
            return
        X = obs.X
        goal = np.asarray(rec.goal, dtype=float)
        X_cf = np.asarray(rec.X_cf, dtype=float)
        advised = np.asarray(rec.advised_mask(), dtype=bool)
        rows = np.flatnonzero(advised)

        # bounds: finite and inside [0, 1] where advised (the model replaces the others)
        sub = X_cf[rows]
        inside = np.isfinite(sub) & (sub >= -BOUND_TOL) & (sub <= 1 + BOUND_TOL)
        self.checked["bounds"] += rows.size
        if not inside.all():
            i, j = np.argwhere(~inside)[0]
            out = ~inside.all(axis=1)
            self.fail(
                "bounds",
                t,
                f"has counterfactual feature {j} = {show(float(sub[i, j]))}, outside [0, 1]",
                int(ids[rows[i]]),
                count=int(out.sum()),
            )
            rows = rows[~out]
        # the advice as the model takes it: round-off changes dropped, then clipped
        residue = np.abs(X_cf - X) < CHANGE_TOL
        X_seen = np.clip(np.where(residue, X, X_cf), 0.0, 1.0)

        imm = np.asarray(ctx.immutable, dtype=bool)
        if imm.any() and self.active("immutables"):
            self.checked["immutables"] += rows.size
            moved = ~residue[rows][:, imm]
            if moved.any():
                i, k = np.argwhere(moved)[0]
                j, r = int(np.flatnonzero(imm)[k]), rows[i]
                self.fail(
                    "immutables",
                    t,
                    f"changed immutable feature {j} ({X[r, j]:.6g} -> {X_cf[r, j]:.6g})",
                    int(ids[r]),
                    count=int(moved.any(axis=1).sum()),
                )

        self.check_one_way(t, X, X_cf, residue, rows, ids, ctx)
        onehot = getattr(ctx, "onehot", None)
        if onehot is not None and self.active("onehot") and rows.size:
            self.checked["onehot"] += rows.size
            problem = onehot.problem(X[rows], X_seen[rows])
            if problem is not None:
                i, why = problem
                self.fail("onehot", t, why, int(ids[rows[i]]))

        self.checked["honest-masks"] += n
        for mask_name in ("unreached", "withheld"):
            mask = getattr(rec, mask_name)
            if mask is not None:
                both = advised & np.asarray(mask, dtype=bool)
                if both.any():
                    r = int(np.flatnonzero(both)[0])
                    self.fail(
                        "honest-masks",
                        t,
                        f"is marked {mask_name} but advised",
                        int(ids[r]),
                        count=int(both.sum()),
                    )
        still = residue[rows].all(axis=1)
        if still.any():
            r = rows[np.flatnonzero(still)[0]]
            self.fail(
                "honest-masks",
                t,
                "is advised, but its counterfactual changes no feature by 1e-9 or more",
                int(ids[r]),
                count=int(still.sum()),
            )
            rows = rows[~still]  # the model demotes these: they cost nothing either

        # budget: what the model charges (specs/world-extensions.md §5)
        left = float(obs.budget_left)
        if math.isfinite(left) and self.active("budget"):
            self.checked["budget"] += 1
            spent = float(np.abs(X_seen[rows] - X[rows]).sum())
            if spent > left + BUDGET_TOL:
                self.fail(
                    "budget",
                    t,
                    f"advice costs {spent:.6g} (L1) with {left:.6g} of the budget left",
                    worst=spent - left,
                )

        # goals: admissible (SPEC §2), then reached under the model in force
        g, s, th = goal[rows], obs.scores[rows], float(obs.threshold)
        self.checked["goal-admissible"] += rows.size
        bad = ~(np.isfinite(g) & (g >= th) & (g > s))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            if not np.isfinite(g[i]):
                why = f"has goal {show(float(g[i]))}"
            elif not g[i] >= th:
                why = f"has goal {g[i]:.9g} below the threshold {th:.9g}"
            else:
                why = f"has goal {g[i]:.9g}, not above its own score {s[i]:.9g}"
            self.fail("goal-admissible", t, why, int(ids[rows[i]]), count=int(bad.sum()))
            rows, g = rows[~bad], g[~bad]
        model = ctx.decision_model if obs.decision_model is None else obs.decision_model
        if not any(model is m for m in self.models_seen):
            self.models_seen.append(model)
        if not rows.size:
            return
        Xs = X_seen[rows]
        reached = model.score(Xs)
        short = reached < g - GOAL_TOL
        refitted = model is not ctx.decision_model
        self.checked["goal-reached"] += rows.size
        if refitted and self.active("model-in-force"):
            self.checked["model-in-force"] += rows.size
        if short.any():
            i = int(np.flatnonzero(short)[0])
            worst = float(np.max(g[short] - reached[short]))
            text = (
                f"reaches M(x_cf) = {reached[i]:.9g} under the model in force "
                f"(version {obs.model_version}), short of its goal {g[i]:.9g}"
            )
            older = [m for m in [ctx.decision_model, *self.models_seen] if m is not model]
            stale = any((m.score(Xs) >= g - GOAL_TOL).all() for m in older)
            if refitted and stale and self.active("model-in-force"):
                text += ", while every goal of the tick is reached under an older model"
                self.fail("model-in-force", t, text, int(ids[rows[i]]), worst, int(short.sum()))
            else:
                self.fail("goal-reached", t, text, int(ids[rows[i]]), worst, int(short.sum()))

    def shape_ok(self, t: int, rec: Any, n: int, z: int) -> bool:
        self.checked["advice-shape"] += 1
        problems = []
        if not isinstance(rec, Recommendation):
            problems.append(f"recommend returned {type(rec).__name__}, not a Recommendation")
        else:
            goal, X_cf = np.asarray(rec.goal), np.asarray(rec.X_cf)
            if goal.shape != (n,) or goal.dtype.kind not in "fiu":
                problems.append(f"goal has shape {goal.shape} ({goal.dtype}), not ({n},) floats")
            if X_cf.shape != (n, z) or X_cf.dtype.kind not in "fiu":
                problems.append(
                    f"X_cf has shape {X_cf.shape} ({X_cf.dtype}), not ({n}, {z}) floats"
                )
            for mask_name in ("advised", "unreached", "withheld"):
                mask = getattr(rec, mask_name)
                if mask is not None and (np.shape(mask) != (n,) or np.asarray(mask).dtype != bool):
                    m = np.asarray(mask)
                    problems.append(f"{mask_name} has shape {m.shape} ({m.dtype}), not ({n},) bool")
            for key, value in rec.info.items():
                if np.shape(value) != (n,):
                    problems.append(f"info[{key!r}] has shape {np.shape(value)}, not ({n},)")
        if problems:
            self.fail("advice-shape", t, problems[0] + f" for {n} rejected")
        return not problems
