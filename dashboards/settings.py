"""What the dashboard's sidebar edits, the model it builds from it, the CLI command
that reproduces that model, and the page address that brings the same view back.

:class:`Settings` holds the raw inputs (numbers from sliders, text from input boxes).
:meth:`Settings.with_input` checks one input as it arrives from the browser: the server
enforces the widgets' limits itself, so a crafted client gets the same one-line
:class:`ConfigError` as a bad value typed into a box. :meth:`Settings.resolve` turns the
inputs into a validated :class:`ScenarioConfig` through the path of
``recourse-abm run --set KEY=VALUE`` (TOML values, ``ScenarioConfig`` validation).
:func:`to_query` and :func:`from_query` write the settings, the ticks run and the tick
shown into the page address and read them back through the same checks.
:func:`policy_support` says which policies a preset can run, and why not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import numbers
import os
import re
import shlex
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from abm.config import ScenarioConfig, parse_overrides
from abm.model import RecourseModel
from abm.registry import REGISTRY, make_policy, parse_spec
from abm.scenarios import PRESETS, get_scenario
from abm.validation import ConfigError, interval, problem


def server_limit(name: str, most: int) -> int:
    """A limit that ``recourse-abm dashboard --max-n0/--max-policies`` sets for every page of
    its server, read from the environment variable ``name``: ``most`` when unset, never more."""
    text = os.environ.get(name, "")
    if not text:
        return most
    value = int(text) if text.strip().isdigit() else 0
    if not 1 <= value <= most:
        raise ConfigError(problem(name, text, interval(1, most, integer=True)))
    return value


# presets bigger than this per tick are left to the CLI: the agent view would be unreadable
MAX_DASHBOARD_POOL = 5_000
MAX_TEXT = 400  # characters of a text box the server reads (a difficulty list needs ~60)
OFF = "off"  # the "compare with" choice that runs no second policy
# side by side on one seed: the policy and up to three more (fewer if the server says so)
MAX_POLICIES = server_limit("RABM_DASHBOARD_MAX_POLICIES", 4)
# the inputs naming the second, third and fourth policy (slots of Settings.compare)
COMPARE_INPUTS = ("compare", "compare_2", "compare_3")

# slider label and range (widened when the preset's own value lies outside)
SLIDERS: dict[str, tuple[str, int, int]] = {
    "k": ("places per tick k", 1, 100),
    "m": ("newcomers per tick m", 0, 200),
    "n_initial": ("initial applicants N₀", 0, server_limit("RABM_DASHBOARD_MAX_N0", 2_000)),
    "validity": ("advice stays valid T (ticks)", 1, 20),
    "ticks": ("episode length (ticks)", 1, 300),
    "seed": ("seed", 0, 99),
}
TEXT_FIELDS: dict[str, str] = {
    "beta": "β: ease of change (inf = every change succeeds)",
    "difficulty": "difficulty dᵢ per feature x0, x1, … (each in (0, 1])",
}
_SCENARIO_FIELDS = ("k", "m", "n_initial", "validity", "ticks", "seed", "beta", "difficulty")
# policy specs with parameters that the selects offer next to the registry names, with what
# the sidebar says about them: the bandits learn nothing in the population world with
# their default advice (docs/improvement.md), so the dashboard offers the variant that does
POLICY_VARIANTS: dict[str, str] = {
    "improve-linucb:advice=segment": (
        "learns from true outcomes which changes truly help (a bandit); segment advice: "
        "change only as far as the goal needs"
    ),
    "improve-proto:advice=segment": (
        "the cheapest change towards a typical accepted applicant, learns nothing; segment "
        "advice: change only as far as the goal needs"
    ),
}
# what each policy advises, in the words of a lesson (the registry's descriptions are for
# researchers: "G-RSVI per candidate, beta_risk from the candidate"); a policy missing here
# shows the registry's description
PLAIN_NOTES: dict[str, str] = {
    "threshold": "standard practice: reach this round's threshold by the cheapest change, "
    "every feature counted as equally hard",
    "threshold-true": "like threshold, but knowing how hard each feature truly is to change",
    "threshold-estimated": "like threshold, learning from the applicants' attempts how hard "
    "each feature is",
    "threshold-explore": "like threshold-estimated, sometimes advising rarely tried features "
    "to learn about them",
    "threshold-dice": "reach the threshold with advice from DiCE (several diverse options)",
    "threshold-ustun": "reach the threshold with the fewest features changed (Ustun's "
    "actionable recourse)",
    "threshold-wachter": "reach the threshold with the nearest change found by gradient "
    "steps (Wachter)",
    "none": "no advice at all (the control): the rejected simply try again",
    "lookahead": "a privileged reference: simulates the coming rounds to set a goal that "
    "will still be enough",
    "safear": "risk-averse advice: prefers changes that are likely to succeed, not only cheap",
    "ei": "no advice; the model itself is trained to give both groups an equal chance to improve",
    "scarf": "fairness-aware advice planned over several rounds, to bring two groups closer, "
    "within a budget",
    "scarf-mlp": "like scarf, without memory of earlier rounds (a comparison)",
    "improve-linucb": "learns from true outcomes which changes truly help (a bandit)",
    "improve-proto": "advises the cheapest change towards a typical accepted applicant; "
    "learns nothing",
    "improve-bwo": "learns from true outcomes which changes truly help (a tree model)",
    "robust-l1": "advice that stays enough if the model changes a little (robust recourse)",
    "robust-l2": "advice that stays enough if the model changes a little (robust recourse)",
    "robust-linf": "advice that stays enough if the model changes a little (robust recourse)",
    "roar-l1": "advice that stays enough if the model changes a little (ROAR)",
    "roar-linf": "advice that stays enough if the model changes a little (ROAR)",
    "rl": "learned goal and learned advice (the paper's method, trained in advance)",
    "rl-constrained": "a learned goal that keeps 95 % of followed advice paying, "
    "learned advice (trained in advance)",
    "rl-recommender": "this round's threshold as goal, advice from a trained network",
}
# what a policy does while the model is built, for those that take seconds to prepare
PREPARING: dict[str, str] = {
    "scarf": "training its generator",
    "scarf-mlp": "training its generator",
}
_PAPER = get_scenario("paper")
_SERIALS = itertools.count()
# why a preset cannot run a policy that trains for seconds when prepared, without training
# it: (what the preset needs, the check); the real refusal is the policy's own first check
SLOW_POLICY_NEEDS: dict[str, tuple[str, Callable[[ScenarioConfig], bool]]] = {
    "scarf": ("needs a budget for advice (budget)", lambda c: c.budget is not None),
    "scarf-mlp": ("needs a budget for advice (budget)", lambda c: c.budget is not None),
    # FACE builds its density graph over the training data when prepared (3 s at 10,000 rows)
    "threshold-face": (
        "needs at most 20,000 training rows (n_train)",
        lambda c: c.n_train <= 20_000,
    ),
}
REASON_CHARS = 90  # a refusal as the policy menus show it


def dashboard_presets() -> list[str]:
    """Presets small enough to watch tick by tick."""
    return [n for n, c in PRESETS.items() if max(c.n_initial, c.m) <= MAX_DASHBOARD_POOL]


def base_name(spec: str) -> str:
    """The registry name a single-part policy spec builds on (``"a:k=v"`` -> ``"a"``);
    a composite ``GOAL+RECOMMENDER`` is returned whole."""
    parts = parse_spec(spec)
    return parts[0].name if len(parts) == 1 else spec


def dashboard_policies() -> list[str]:
    """What the policy selects offer: the registered names, each followed by its
    :data:`POLICY_VARIANTS` (a variant of an unregistered policy is left out)."""
    out = []
    for name in REGISTRY.describe("policy"):
        out.append(name)
        out += [v for v in POLICY_VARIANTS if base_name(v) == name]
    return out


def policy_description(spec: str) -> str:
    """One line on what ``spec`` advises, in plain words (:data:`PLAIN_NOTES`, the
    variant's, or else the registry's description)."""
    if spec in POLICY_VARIANTS:
        return POLICY_VARIANTS[spec]
    name = base_name(spec)
    if name.startswith("hybrid-"):
        return (
            f"learned goal with {name.removeprefix('hybrid-')} advice (the paper's "
            "hybrid, trained in advance)"
        )
    return PLAIN_NOTES.get(name) or REGISTRY.describe("policy").get(name, "")


_support_lock = threading.Lock()
_support: dict[str, dict[str, str]] = {}


def policy_support(preset: str) -> dict[str, str]:
    """Policy spec -> "" if preset ``preset`` (with its own settings) can run it, else why
    not, in one line. Each policy is prepared as the model would prepare it, except the
    :data:`SLOW_POLICY_NEEDS` (checked without training). Computed once per preset and
    process (the first call for a preset takes up to a few seconds)."""
    with _support_lock:
        if preset in _support:
            return _support[preset]
    config = get_scenario(preset)
    host = RecourseModel(config, "none", agents=False, record_events=False)
    out = {}
    for spec in dashboard_policies():
        slow = SLOW_POLICY_NEEDS.get(base_name(spec))
        if slow is not None:
            out[spec] = "" if slow[1](config) else slow[0]
            continue
        try:
            make_policy(spec).prepare(host.context)
            out[spec] = ""
        except Exception as exc:  # any refusal is a reason to show, not a crash
            text = without_paths(" ".join(str(exc).split())) or type(exc).__name__
            out[spec] = text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"
    with _support_lock:
        _support[preset] = out
    return out


# an absolute path of two parts or more, not inside a word ("ticks/s" is not one)
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~/-])(?:/[^\s/:;,'\"()\[\]<>]+){2,}/?")


def without_paths(text: str) -> str:
    """``text`` with every absolute path replaced by its last part (what is missing or
    wrong, e.g. ``rl-a10-t1`` or ``manifest.json``): a page shown to a class does not tell
    where the server keeps its files."""
    return _ABSOLUTE_PATH.sub(lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def known_support(preset: str) -> dict[str, str] | None:
    """:func:`policy_support` of ``preset`` if it is computed already, else None."""
    with _support_lock:
        return _support.get(preset)


def fit_to_preset(settings: Settings) -> tuple[Settings, list[str]]:
    """``settings`` with every policy its preset cannot run replaced (the first by
    ``threshold``, the others left out), and what was replaced, as sentences."""
    support = policy_support(settings.preset)
    notes = [
        f"{p} does not run on {settings.preset} ({support[p]})"
        for p in settings.policies
        if support.get(p)
    ]
    if not notes:
        return settings, []
    policy = settings.policy if not support.get(settings.policy) else "threshold"
    compare = tuple(p for p in settings.compare if not support.get(p) and p != policy)
    return settings.replace(policy=policy, compare=compare, demo=""), notes


def preparing_text(settings: Settings) -> str:
    """What the page says while the model of ``settings`` is being built, e.g.
    ``"preparing scarf (training its generator)…"``."""
    names = settings.policies
    slow = [f"{p} ({PREPARING[base_name(p)]})" for p in names if base_name(p) in PREPARING]
    return "preparing " + (" and ".join(slow) if slow else "the run") + "…"


def preparing_status(settings: Settings, progress: str | None = None, title: str = "") -> str:
    """The status line while the model of ``settings`` (demonstration ``title``, if one)
    is being built: what is prepared and ``progress``, what the build is doing (see
    :func:`build_progress`). Worded unlike the run's own line ("scenario …", "… vs …"),
    which appears once the run is ready."""
    names = " and ".join(f"**{p}**" for p in settings.policies)
    what = f"**{settings.preset}** with {names}, seed {settings.seed}"
    if title:
        what = f"**{title}** ({what})"
    doing = f" · {progress}" if progress else ""
    return f"preparing {what}{doing} · until it is ready the charts show the previous run"


PROGRESS_EVERY_S = 0.3  # progress reported at most this often: each report redraws a line


@contextlib.contextmanager
def build_progress(report: Callable[[str | None], None]) -> Iterator[None]:
    """Within the block (this thread), each policy training reports its progress as one
    line, e.g. ``"training scarf's generator: epoch 40 of 150 (27 %)"``, to ``report``;
    leaving it reports None."""
    from policies.fairness.population import training_progress

    last = -math.inf

    def epoch(name: str, done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done == total or now - last >= PROGRESS_EVERY_S:
            last = now
            share = round(100 * done / max(total, 1))
            report(f"training {name}'s generator: epoch {done} of {total} ({share} %)")

    try:
        with training_progress(epoch):
            yield
    finally:
        report(None)  # nothing in progress any more


def path_safe(spec: str) -> str:
    """A policy spec as part of a file or folder name (``:``, ``=`` and ``,`` become ``-``)."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", spec)


def _fmt_number(x: float) -> str:
    return "inf" if x == math.inf else f"{x:g}"


def _toml_value(key: str, text: str) -> Any:
    """Read ``text`` as ``--set key=text`` would (a TOML value; otherwise the raw text)."""
    text = text.strip()
    if not text:
        raise ConfigError(problem(key, text, "a value (the box is empty)"))
    if key == "difficulty" and not text.startswith("["):
        text = f"[{text}]"  # "0.8, 0.2" is friendlier to type than a TOML list
    return parse_overrides([f"{key}={text}"])[key]


def _one_of(field: str, value: Any, choices: list[str]) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(problem(field, value, "one of " + ", ".join(choices)))


@dataclass(frozen=True)
class Settings:
    """The sidebar's inputs. Text fields keep what was typed, valid or not."""

    preset: str = "paper"
    policy: str = "threshold"
    compare: tuple[str, ...] = ()  # up to three more policies on the same seed
    k: int = _PAPER.k
    m: int = _PAPER.m
    n_initial: int = _PAPER.n_initial
    validity: int = _PAPER.validity
    ticks: int = _PAPER.ticks
    seed: int = _PAPER.seed
    beta: str = _fmt_number(_PAPER.beta)
    difficulty: str = ", ".join(_fmt_number(d) for d in _PAPER.difficulty)
    demo: str = ""  # the demonstration these settings came from, if any

    def __post_init__(self) -> None:
        if isinstance(self.compare, str):  # one policy given as text ("" for none)
            object.__setattr__(self, "compare", (self.compare,) if self.compare else ())

    @property
    def policies(self) -> list[str]:
        """Every policy shown: the policy, then the ones compared with it."""
        return [self.policy, *self.compare]

    @classmethod
    def from_preset(cls, preset: str = "paper", **changes: Any) -> Settings:
        """The preset's own values, then ``changes`` (scenario fields or settings fields)."""
        c = get_scenario(preset)
        base = cls(
            preset=preset,
            k=c.k,
            m=c.m,
            n_initial=c.n_initial,
            validity=c.validity,
            ticks=c.ticks,
            seed=c.seed,
            beta=_fmt_number(c.beta),
            difficulty=", ".join(_fmt_number(d) for d in c.difficulty),
        )
        if "beta" in changes and not isinstance(changes["beta"], str):
            changes["beta"] = _fmt_number(changes["beta"])
        if "difficulty" in changes and not isinstance(changes["difficulty"], str):
            changes["difficulty"] = ", ".join(_fmt_number(d) for d in changes["difficulty"])
        return dataclasses.replace(base, **changes)

    @classmethod
    def from_demo(cls, demo) -> Settings:
        """Settings of a :class:`dashboards.demos.Demo`."""
        return cls.from_preset(
            demo.preset, policy=demo.policy, compare=demo.compare, demo=demo.name, **demo.overrides
        )

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def slider_range(self, name: str) -> tuple[int, int]:
        """(low, high) of a slider: its fixed range, widened to the preset's own value."""
        _, lo, hi = SLIDERS[name]
        own = getattr(get_scenario(self.preset), name)
        return min(lo, own), max(hi, own)

    def with_input(self, name: str, value: Any) -> Settings:
        """These settings with one sidebar input applied (preset, policy, compare, a slider
        or a text box). Raises :class:`ConfigError` for a value no widget offers: a name
        outside the lists, a slider value outside its range or not an integer, text too
        long. Text is checked for syntax only when the model is built (:meth:`resolve`)."""
        if name == "preset":
            _one_of("preset", value, dashboard_presets())
            return Settings.from_preset(value, policy=self.policy, compare=self.compare)
        if name == "policy":
            _one_of("policy", value, dashboard_policies())
            return self.replace(
                policy=value, compare=tuple(p for p in self.compare if p != value), demo=""
            )
        if name in COMPARE_INPUTS:
            _one_of(name, value, [OFF, *dashboard_policies()])
            slot = COMPARE_INPUTS.index(name)
            if value != OFF and slot + 1 >= MAX_POLICIES:
                limit = f"off (this server shows at most {MAX_POLICIES} policies per page)"
                raise ConfigError(problem(name, value, limit))
            compare = list(self.compare)
            if value == OFF:
                del compare[slot : slot + 1]
            else:
                others = [p for i, p in enumerate(self.policies) if i != slot + 1]
                if value in others:
                    raise ConfigError(problem(name, value, "a policy not shown yet (it is)"))
                if slot > len(compare):
                    raise ConfigError(
                        problem(name, value, f"off (choose {COMPARE_INPUTS[slot - 1]} first)")
                    )
                compare[slot : slot + 1] = [value]
            # the lesson goes on with one more (or one fewer) policy beside it
            return self.replace(compare=tuple(compare))
        if name in SLIDERS:
            lo, hi = self.slider_range(name)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if not (ok and math.isfinite(value) and value == int(value) and lo <= value <= hi):
                raise ConfigError(problem(name, value, interval(lo, hi, integer=True)))
            return self.replace(**{name: int(value)})
        if name in TEXT_FIELDS:
            if not isinstance(value, str) or len(value) > MAX_TEXT:
                raise ConfigError(problem(name, value, f"text of at most {MAX_TEXT} characters"))
            return self.replace(**{name: value})
        raise ConfigError(
            problem(
                "input",
                name,
                "one of preset, policy, " + ", ".join([*COMPARE_INPUTS, *_SCENARIO_FIELDS]),
            )
        )

    def resolve(self) -> ScenarioConfig:
        """The validated scenario; raises :class:`ConfigError` naming the bad field."""
        base = get_scenario(self.preset)
        overrides: dict[str, Any] = {name: getattr(self, name) for name in SLIDERS}
        overrides["beta"] = _toml_value("beta", self.beta)
        overrides["difficulty"] = _toml_value("difficulty", self.difficulty)
        return base.replace(**overrides)

    def cli_args(self, policy: str | None = None) -> list[str]:
        """``recourse-abm run`` arguments that reproduce this run (``policy`` instead of
        :attr:`policy` for the side-by-side twin): the preset, the policy, the seed, the
        episode length, and ``--set`` for every other field that differs from the preset."""
        config = self.resolve()
        base = get_scenario(self.preset)
        policy = self.policy if policy is None else policy
        args = [
            "recourse-abm",
            "run",
            "--scenario",
            self.preset,
            "--policy",
            policy,
            "--seed",
            str(config.seed),
            "--ticks",
            str(config.ticks),
        ]
        for name in ("k", "m", "n_initial", "validity", "beta", "difficulty"):
            value = getattr(config, name)
            if value != getattr(base, name):
                args += ["--set", f"{name}={_toml_text(value)}"]
        out = f"results/dashboard-{self.preset}-{path_safe(policy)}-seed{config.seed}"
        return [*args, "--out", out]

    def cli_text(self) -> str:
        """The shell command(s) that reproduce the current run, one line per policy."""
        return "\n".join(shlex.join(self.cli_args(p)) for p in self.policies)


# -- the page address ------------------------------------------------------------------------
QUERY_KEYS = ("demo", "preset", "policy", "compare", *_SCENARIO_FIELDS, "run", "shown", "until")


def to_query(
    settings: Settings, run: int = 0, shown: int | None = None, until: int | None = None
) -> str:
    """The page address's query for ``settings`` after ``run`` ticks, showing tick ``shown``
    (None: the newest), with ``until`` in the "run to tick" box: the demonstration or the
    preset, then only what differs from it."""
    if settings.demo:
        from dashboards.demos import DEMOS  # demos import this module

        base = Settings.from_demo(next(d for d in DEMOS if d.name == settings.demo))
        pairs = [("demo", settings.demo)]
    else:
        base = Settings.from_preset(settings.preset)
        pairs = [("preset", settings.preset)]
    if settings.preset != base.preset:
        pairs.append(("preset", settings.preset))
    if settings.policy != base.policy or not settings.demo:
        pairs.append(("policy", settings.policy))
    if settings.compare != base.compare:
        pairs += [("compare", p) for p in settings.compare] or [("compare", OFF)]
    pairs += [
        (name, str(getattr(settings, name)))
        for name in _SCENARIO_FIELDS
        if getattr(settings, name) != getattr(base, name)
    ]
    if run:
        pairs.append(("run", str(run)))
    if shown is not None and shown != run - 1:
        pairs.append(("shown", str(shown)))
    if until is not None:
        pairs.append(("until", str(until)))
    return urllib.parse.urlencode(pairs, safe=":+,=")


def until_from_query(query: str, ticks: int) -> tuple[int | None, list[str]]:
    """The "run to tick" box's tick a page address holds (None: none), and its problem
    (one line) when it is not a tick of a run of ``ticks`` ticks."""
    texts = [v for k, v in urllib.parse.parse_qsl(query or "") if k == "until"][-1:]
    try:
        return (_query_int("until", texts[0], 0, ticks - 1) if texts else None), []
    except ConfigError as exc:
        return None, [str(exc)]


def _query_int(name: str, text: str, lo: int, hi: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        raise ConfigError(problem(name, text, interval(lo, hi, integer=True)))
    return value


def from_query(query: str, demos: dict) -> tuple[Settings, int, int | None, list[str]]:
    """(settings, ticks to run, tick to show or None, problems) from a page address's
    query, every value through the sidebar's checks; a bad value is left out and named
    in ``problems`` (one line each), the rest applies."""
    params = urllib.parse.parse_qsl(query or "", keep_blank_values=True)
    problems: list[str] = []
    values: dict[str, list[str]] = {}
    for key, value in params:
        if key not in QUERY_KEYS:
            problems.append(problem("address", key, "one of " + ", ".join(QUERY_KEYS)))
            continue
        values.setdefault(key, []).append(value)

    def attempt(apply: Callable[[], Any]) -> None:
        try:
            apply()
        except ConfigError as exc:
            problems.append(str(exc))

    settings = Settings.from_preset()
    demo = values.get("demo", [""])[-1]
    if demo:
        if demo in demos:
            settings = Settings.from_demo(demos[demo])
        else:
            problems.append(problem("demo", demo, "one of " + ", ".join(demos)))
    state = {"s": settings}

    def put(name: str, value: Any) -> None:
        state["s"] = state["s"].with_input(name, value)

    for preset in values.get("preset", [])[-1:]:
        if preset != state["s"].preset:
            attempt(lambda preset=preset: put("preset", preset))
    for policy in values.get("policy", [])[-1:]:
        attempt(lambda policy=policy: put("policy", policy))
    if "compare" in values:
        compare = [p for p in values["compare"] if p != OFF]
        if len(compare) >= MAX_POLICIES:
            problems.append(
                problem("compare", ",".join(compare), f"at most {MAX_POLICIES - 1} policies")
            )
            compare = compare[: MAX_POLICIES - 1]
        state["s"] = state["s"].replace(compare=())
        for i, p in enumerate(compare):
            attempt(lambda i=i, p=p: put(COMPARE_INPUTS[i], p))
    for name in SLIDERS:
        for text in values.get(name, [])[-1:]:
            lo, hi = state["s"].slider_range(name)
            attempt(
                lambda name=name, text=text, lo=lo, hi=hi: put(name, _query_int(name, text, lo, hi))
            )
    for name in TEXT_FIELDS:
        for text in values.get(name, [])[-1:]:
            attempt(lambda name=name, text=text: put(name, text))
    settings = state["s"]
    if demo in demos and settings.demo == "" and "policy" not in values and "compare" not in values:
        settings = settings.replace(demo=demo)
    run, shown = 0, None
    for text in values.get("run", [])[-1:]:
        attempt(lambda text=text: state.update(run=_query_int("run", text, 0, settings.ticks)))
    run = state.get("run", 0)
    for text in values.get("shown", [])[-1:]:
        attempt(lambda text=text: state.update(shown=_query_int("shown", text, 0, max(run - 1, 0))))
    shown = state.get("shown")
    return settings, run, shown, problems


def _toml_text(value: Any) -> str:
    """A scenario value as ``--set`` reads it back (TOML: ``inf``, ``[0.5, 0.2]``)."""
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_text(v) for v in value) + "]"
    if isinstance(value, float):
        return "inf" if value == math.inf else repr(value)
    return str(value)


def check_policy(name: str, field: str = "policy") -> None:
    """Raise :class:`ConfigError` unless ``name`` builds a policy (registry name or
    composite); the message names ``field``."""
    try:
        make_policy(name)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("policy = ", f"{field} = ", 1)) from None


class DashboardModel(RecourseModel):
    """A :class:`RecourseModel` built from :class:`Settings`, with up to three twins.

    Each twin runs one of ``settings.compare`` on the same scenario and seed in lockstep,
    so every policy sees identical arrivals (a paired comparison). All record their
    per-application events (the agent view, the effort chart and replay read them); Mesa
    agent handles are off (the views read the recorded tables).
    """

    def __init__(self, settings: Settings | None = None) -> None:
        settings = Settings.from_preset() if settings is None else settings
        config = settings.resolve()
        check_policy(settings.policy)
        if len(settings.compare) >= MAX_POLICIES or len(set(settings.policies)) < len(
            settings.policies
        ):
            raise ConfigError(
                problem(
                    "compare",
                    ",".join(settings.compare),
                    f"at most {MAX_POLICIES - 1} other policies, each once",
                )
            )
        for name, spec in zip(COMPARE_INPUTS, settings.compare, strict=False):
            check_policy(spec, name)
        super().__init__(config, settings.policy, agents=False, record_events=True)
        self.settings = settings
        self.serial = next(_SERIALS)  # tells the browser's charts that the model is new
        self.twins = [
            RecourseModel(config, spec, agents=False, record_events=True)
            for spec in settings.compare
        ]
        self._cache: tuple[int, dict[str, Any]] = (-1, {})

    @property
    def twin(self) -> RecourseModel | None:
        """The first twin (None without one)."""
        return self.twins[0] if self.twins else None

    def models(self) -> list[RecourseModel]:
        """The model of each policy, in the order of ``settings.policies``."""
        return [self, *self.twins]

    def step(self) -> None:
        if not self.running:  # a late Play tick after the last one does nothing
            return
        super().step()
        for twin in self.twins:
            twin.step()

    def per_tick(self, key: str, build: Callable[[], Any]) -> Any:
        """``build()``, computed once per tick (every view reads the same record)."""
        tick, cache = self._cache
        if tick != self.tick:
            cache = {}
            self._cache = (self.tick, cache)
        if key not in cache:
            cache[key] = build()
        return cache[key]


__all__ = [
    "COMPARE_INPUTS",
    "MAX_POLICIES",
    "OFF",
    "POLICY_VARIANTS",
    "PREPARING",
    "SLIDERS",
    "TEXT_FIELDS",
    "ConfigError",
    "DashboardModel",
    "Settings",
    "base_name",
    "check_policy",
    "dashboard_policies",
    "dashboard_presets",
    "fit_to_preset",
    "known_support",
    "from_query",
    "path_safe",
    "policy_support",
    "policy_description",
    "preparing_text",
    "preparing_status",
    "build_progress",
    "to_query",
    "without_paths",
    "until_from_query",
]
