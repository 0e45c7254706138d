"""Study specification: an experiment, a base scenario, parameter sweeps, seeds and metrics.

A study is a grid: every combination of the sweep axes, times every seed. An axis is one
scenario field, ``policy``, ``scenario`` (presets by name: each point starts from that
preset, with ``[set]`` applied) or a parameter of the experiment, with a list or a range
of values; a ``[[zip]]`` group is one axis whose fields advance together (``n_initial``
and ``m`` of equal length, or the pairs of ``scenario`` and ``policy`` to run). Every run has a stable id derived from everything that
determines its result (the scenario's content, policy, seed, experiment and its
parameters, the results schema; see :func:`run_id`), so results can be resumed and merged
in any order, and a changed input gets a new id. The experiments are those of
:mod:`lab.study.experiments` (default ``episode``: one simulation run).

TOML layout (all keys but ``scenario`` optional)::

    name = "beta-sweep"
    experiment = "episode"           # or recommender-bench, safear-population, pareto-eval
    scenario = "paper-T5"            # preset name or a scenario .toml (relative to this file)
    policy = "threshold"             # fixed policy (or sweep it below)
    seeds = 10                       # 0..9; or "0-9", "3,7", a list [3, 7], {start = 0, stop = 9}
    world_seeds = 5                  # every seed in each of worlds 0..4 (a random effect)
    ticks = 50
    metrics = ["rr", "rf", "gini"]   # tick columns to keep (episode; default: all)
    report_metrics = ["rr", "rf"]    # shown by `study report` (default: rr, rf, gini,
                                     # mean_cost among the columns, else the first two)

    [set]                            # fixed scenario fields and experiment parameters
    k = 5

    [sweep]                          # grid axes
    beta = {start = 0.01, stop = 0.1, num = 4}
    policy = {registered = ["threshold", "threshold-ustun", "none"]}

    [[zip]]                          # fields swept together (lists of equal length)
    n_initial = [10, 100]
    m = [10, 100]

The file's structure is a frozen pydantic model (:class:`StudyFile`); every error is one
line naming the key, the value and what is allowed (:class:`abm.validation.ConfigError`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import pickle
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from abm.config import ScenarioConfig, field_names
from abm.mechanisms import tick_columns
from abm.provenance import RESULTS_SCHEMA
from abm.record import TICK_COLUMNS
from abm.registry import REGISTRY
from abm.scenarios import PRESETS, resolve_scenario
from abm.validation import ConfigError, interval, one_line, problem, show
from lab.study.experiments import EXPERIMENTS, SUMMARY_COLUMNS, Experiment

# every registered experiment, so a study file may name any of them
ExperimentName = Literal[tuple(EXPERIMENTS)]  # type: ignore[valid-type]
TOP_KEYS = (
    "name",
    "description",
    "experiment",
    "scenario",
    "policy",
    "seeds",
    "world_seeds",
    "ticks",
    "metrics",
    "report_metrics",
    "set",
    "sweep",
    "zip",
)
# per-tick columns a study may keep; ``tick`` is always kept. The world extensions' columns
# (and a policy's own policy_* columns) may be kept too, when named (NaN in runs without them)
METRIC_COLUMNS = tuple(c for c in TICK_COLUMNS if c != "tick")
# every extension on, with the most groups (16): the union of the extensions' columns
EXTENSION_METRICS = tuple(
    tick_columns(
        ScenarioConfig(
            outcome_delay=1,
            retrain_every=1,
            budget=1.0,
            group_share=(1 / 16,) * 16,
            k_steps=((0, 1.0),),
        )
    )
)
_POLICY_METRIC = re.compile(r"policy_[A-Za-z0-9_]+")
# wall-clock columns of an episode study's runs table: the only ones that differ between
# repeats (other experiments add their own, e.g. seconds_per_recommendation)
TIMING_COLUMNS = ("elapsed_s", "setup_s", "run_s", "finished_at")
# fields a sweep may not name: the seed has its own key, name/description are labels
_NOT_SWEPT = {
    "seed": "use the top-level `seeds` key",
    "name": "it is a label",
    "description": "it is a label",
}
MAX_RUNS = 1_000_000
MAX_SEED = 2**63 - 1
FROZEN = ConfigDict(extra="forbid", frozen=True)
Number = StrictInt | float


def _finite(value: float) -> float:
    if not isinstance(value, int) and not math.isfinite(value):  # ints are (10**400 too)
        raise ValueError(f"a finite number is required, got {value!r}")
    return value


class Range(BaseModel):
    """``{start, stop, step}`` (arithmetic) or ``{start, stop, num[, log]}`` (evenly or
    geometrically spaced), both ends included."""

    model_config = FROZEN
    start: Number
    stop: Number
    step: Number | None = Field(None, gt=0)
    num: StrictInt | None = Field(None, ge=1, le=MAX_RUNS)
    log: StrictBool = False

    _finite_ends = field_validator("start", "stop", "step")(
        lambda v: v if v is None else _finite(v)
    )

    @model_validator(mode="after")
    def _consistent(self) -> Range:
        if self.stop < self.start:
            raise ValueError(f"range stop ({self.stop}) must be >= start ({self.start})")
        if (self.step is None) == (self.num is None):
            raise ValueError("a range needs exactly one of `step` or `num`")
        if self.log and self.num is None:
            raise ValueError("log = true needs `num`, not `step`")
        if self.log and self.start <= 0:
            raise ValueError(f"a log range needs start > 0, got {self.start}")
        return self

    def count(self) -> int:
        """How many values :meth:`values` gives, without listing them."""
        if self.step is None:
            return self.num or 1
        try:
            span = (self.stop - self.start) / self.step
        except OverflowError:  # integers past a float's range
            span = math.inf
        if math.isfinite(span):
            return int(math.floor(span + 1e-9)) + 1
        # 1e308 wide or a step of 1e-320: the float overflows, the fraction does not
        return int((Fraction(self.stop) - Fraction(self.start)) // Fraction(self.step)) + 1

    def values(self) -> list[Any]:
        start, stop = self.start, self.stop
        if self.step is not None:
            n = self.count()
            if n > MAX_RUNS:
                raise ValueError(f"range has {n:,} values; at most {MAX_RUNS:,}")
            if all(isinstance(v, int) for v in (start, stop, self.step)):
                return [start + i * self.step for i in range(n)]
            return [_tidy(start + i * self.step) for i in range(n)]
        num = self.num or 1
        if num == 1:
            return [start]
        if self.log:
            ratio = (stop / start) ** (1 / (num - 1))
            return [_tidy(start * ratio**i) for i in range(num)]
        return [_tidy(start + (stop - start) * i / (num - 1)) for i in range(num)]


class Registered(BaseModel):
    """``{registered = [...]}``: the listed policies that this installation registers."""

    model_config = FROZEN
    registered: list[StrictStr] = Field(min_length=1)


def _tidy(x: float) -> float:
    # 0.1 + 2 * 0.1 should read 0.3 in tables and hash like the literal 0.3
    return float(f"{x:.12g}")


SEEDS_ALLOWED = (
    "a count N (seeds 0..N-1), 'A-B', 'A,B,C', a list of integers or "
    f"{{start, stop[, step]}}, seeds in [0, {MAX_SEED}]"
)


def parse_seeds(raw: Any, name: str = "seeds") -> tuple[int, ...]:
    """The one seed syntax of studies and the CLI: ``10`` or ``"10"`` (seeds 0..9),
    ``"5-9"`` (5..9), ``"1,4,7"``, a list ``[1, 4, 7]`` or ``{start, stop[, step]}``.

    Seeds are distinct integers in [0, 2^63 - 1]; the order given is kept.
    """

    def bad(detail: str = "") -> ConfigError:
        return ConfigError(problem(name, raw, SEEDS_ALLOWED) + (f" ({detail})" if detail else ""))

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if isinstance(raw, str):
        text = raw.replace(" ", "")
        if re.fullmatch(r"\d+", text):
            raw_seeds: Any = int(text)
        elif m := re.fullmatch(r"(\d+)-(\d+)", text):
            lo, hi = int(m[1]), int(m[2])
            if hi < lo:
                raise bad(f"{hi} < {lo}")
            raw_seeds = list(range(lo, hi + 1)) if hi - lo < MAX_RUNS else None
        elif re.fullmatch(r"\d+(,\d+)+,?", text):
            raw_seeds = [int(s) for s in text.split(",") if s]
        else:
            raise bad()
    else:
        raw_seeds = raw
    if is_int(raw_seeds):
        if not 1 <= raw_seeds <= MAX_RUNS:
            raise bad(f"a count must be in [1, {MAX_RUNS}]")
        return tuple(range(raw_seeds))
    if isinstance(raw_seeds, dict):
        try:
            seeds = Range.model_validate({"step": 1, **raw_seeds}).values()
        except ValidationError as exc:
            raise ConfigError(one_line(exc, name)) from None
    elif isinstance(raw_seeds, list | tuple):
        seeds = list(raw_seeds)
    else:
        raise bad()
    if not seeds:
        raise bad("the list is empty")
    for s in seeds:
        if not is_int(s) or not 0 <= s <= MAX_SEED:
            raise bad(f"{s!r} is not an integer in range")
    if len(set(seeds)) != len(seeds):
        raise bad("a seed is listed more than once")
    return tuple(seeds)


def paired_seeds(seed: int, episodes: int) -> tuple[int, ...]:
    """Seeds ``seed .. seed + episodes - 1``: episode i of every policy uses seed + i."""
    if not (isinstance(episodes, int) and 1 <= episodes <= 100_000):
        raise ConfigError(problem("episodes", episodes, "an integer in [1, 100000]"))
    if not (isinstance(seed, int) and 0 <= seed <= MAX_SEED - episodes):
        raise ConfigError(problem("seed", seed, "an integer in [0, 2^63 - 1 - episodes]"))
    return tuple(range(seed, seed + episodes))


class StudyFile(BaseModel):
    """The keys of a study file (structure and types; meaning is checked by :class:`Study`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    name: StrictStr = Field("study", min_length=1)
    description: StrictStr = ""
    experiment: ExperimentName = "episode"
    scenario: StrictStr | ScenarioConfig
    policy: StrictStr | None = None
    seeds: StrictInt | StrictStr | list[Any] | dict[str, Any] = Field(1, validate_default=True)
    # worlds as a random effect: the same as sweeping world_seed, in the seed syntax
    world_seeds: StrictInt | StrictStr | list[Any] | dict[str, Any] | None = None
    ticks: StrictInt | None = None
    metrics: list[StrictStr] | StrictStr | None = None
    report_metrics: list[StrictStr] | StrictStr | None = None
    set: dict[str, Any] = {}
    sweep: dict[str, Any] = {}
    zip: list[dict[str, Any]] | dict[str, Any] = []

    @field_validator("scenario")
    @classmethod
    def _scenario_named(cls, v: Any) -> Any:
        if isinstance(v, str) and not v:
            raise ValueError("a preset name or a path to a .toml file is required")
        return v

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: Any) -> tuple[int, ...]:
        try:
            return parse_seeds(v)
        except ConfigError as exc:
            raise ValueError(str(exc).removeprefix("seeds = ")) from None

    @field_validator("metrics", "report_metrics")
    @classmethod
    def _names(cls, v: Any) -> Any:
        names = [v] if isinstance(v, str) else v
        if names is not None and not names:
            raise ValueError("a non-empty list of names is required")
        return names


@dataclass(frozen=True)
class Axis:
    """One sweep axis: ``fields`` advance together through ``values`` (one tuple per step)."""

    fields: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class RunSpec:
    """One run: its stable id, policy, seed, swept values, full configuration and the
    experiment's parameters."""

    run_id: str
    policy: str
    seed: int
    params: dict[str, Any]
    config: dict[str, Any]
    experiment: str = "episode"
    settings: dict[str, Any] = field(default_factory=dict)

    def task(self, metrics: tuple[str, ...]) -> dict[str, Any]:
        """The picklable job a worker runs (:func:`lab.study.experiments.execute_run`)."""
        return {
            "run_id": self.run_id,
            "experiment": self.experiment,
            "policy": self.policy,
            "config": self.config,
            "params": self.settings,
            "metrics": list(metrics),
        }


@dataclass(frozen=True)
class Study:
    """A validated study. Build with :meth:`from_toml`, :meth:`from_dict` or :meth:`build`."""

    name: str
    base: ScenarioConfig
    policy: str
    axes: tuple[Axis, ...]
    seeds: tuple[int, ...]
    metrics: tuple[str, ...]
    report_metrics: tuple[str, ...]
    description: str = ""
    spec: dict[str, Any] = field(default_factory=dict, compare=False)
    source: str | None = field(default=None, compare=False)
    source_text: str | None = field(default=None, compare=False)
    skipped_policies: tuple[str, ...] = ()
    experiment: str = "episode"
    settings: dict[str, Any] = field(default_factory=dict)  # fixed experiment parameters
    # the scenario fields of [set] (and ticks): applied again to each preset of a
    # `scenario` axis
    fixed: dict[str, Any] = field(default_factory=dict)

    # -- construction ---------------------------------------------------------------
    @classmethod
    def from_toml(cls, path: str | Path) -> Study:
        """Load and validate a study file; errors name the file and the offending key."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"study file not found: {path}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"study file {path} is not UTF-8 text (byte {exc.start}: "
                f"{exc.reason}); TOML files are UTF-8"
            ) from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"study file {path} is not valid TOML: {exc}") from None
        data.setdefault("name", path.stem)
        try:
            return cls.from_dict(data, base_dir=path.parent, source=str(path), source_text=text)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None

    @classmethod
    def build(cls, scenario: str | ScenarioConfig = "paper", **keys: Any) -> Study:
        """Python API: the same keys as the TOML file, e.g.
        ``Study.build("paper", sweep={"k": [3, 9]}, seeds=5, ticks=50)``."""
        keys["scenario"] = scenario
        # TOML cannot say `set`, Python can: accept `overrides` as its alias
        if "overrides" in keys:
            keys["set"] = keys.pop("overrides")
        return cls.from_dict(keys)

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        base_dir: str | Path | None = None,
        source: str | None = None,
        source_text: str | None = None,
    ) -> Study:
        """Validate a study mapping (the TOML layout of the module docstring)."""
        try:
            spec = StudyFile.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(one_line(exc, allowed_fields=TOP_KEYS)) from None
        experiment = EXPERIMENTS[spec.experiment]
        # counted before any axis is listed: a grid of 10^12 runs is refused at once
        _check_run_count(_count_runs(spec))
        base, settings, seen, fixed = _fixed(spec, experiment, base_dir)
        skipped: list[str] = []
        axes = _axes(spec, experiment, seen, skipped)
        policy = _fixed_policy(spec, experiment, seen)
        metrics, report = _metric_names(spec, experiment)
        _check_run_count(math.prod(len(a.values) for a in axes) * len(spec.seeds))
        study = cls(
            name=spec.name,
            base=base,
            policy=policy,
            axes=tuple(axes),
            seeds=spec.seeds,
            metrics=metrics,
            report_metrics=report,
            description=spec.description,
            spec=_canonical(dict(data)),
            source=source,
            source_text=source_text,
            skipped_policies=tuple(dict.fromkeys(skipped)),
            experiment=spec.experiment,
            settings=settings,
            fixed=fixed,
        )
        runs = study.runs()  # validates every grid point (scenario and experiment parameters)
        if "ticks" in study.axis_fields:  # else every point of a scenario runs its ticks
            _check_same_ticks(runs)
        return study

    # -- the grid -------------------------------------------------------------------
    @property
    def axis_fields(self) -> tuple[str, ...]:
        """The swept fields in axis order (``policy`` included when swept)."""
        return tuple(f for a in self.axes for f in a.fields)

    @property
    def experiment_takes_policy(self) -> bool:
        return EXPERIMENTS[self.experiment].policy

    @property
    def n_runs(self) -> int:
        return math.prod(len(a.values) for a in self.axes) * len(self.seeds)

    @property
    def spec_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.spec, sort_keys=True).encode()).hexdigest()[:16]

    def points(self) -> list[dict[str, Any]]:
        """Every sweep point as {field: value} (grid order, seeds excluded)."""
        out = []
        for combo in itertools.product(*(a.values for a in self.axes)):
            point: dict[str, Any] = {}
            for axis, values in zip(self.axes, combo, strict=True):
                point.update(zip(axis.fields, values, strict=True))
            out.append(point)
        return out

    def runs(self) -> list[RunSpec]:
        """Every run (sweep point × seed), each with its stable id; validates each point."""
        experiment = EXPERIMENTS[self.experiment]
        param_names = set(experiment.params.model_fields)
        # a policy axis repeats each world's configuration once per policy: validate each
        # (scenario, changes, seed) once (a benchmark's 12,480 runs: 25 s -> a few)
        # each seed's (configuration, the part of its run id that is the configuration)
        configs: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
        out = []
        for point in self.points():
            policy = point.get("policy", self.policy)
            changes = {
                k: v
                for k, v in point.items()
                if k not in ("policy", "scenario") and k not in param_names
            }
            where = ", ".join(f"{k}={show(v)}" for k, v in point.items())
            key = repr((point.get("scenario"), sorted(changes.items())))
            try:
                if key not in configs:
                    base = self.base
                    if "scenario" in point:  # a preset of the scenario axis, with [set] applied
                        base = resolve_scenario(point["scenario"]).replace(**self.fixed)
                    config = base.replace(**changes)
                    each = (config.replace(seed=seed).to_dict() for seed in self.seeds)
                    configs[key] = [(cfg, _id_config(cfg)) for cfg in each]
                settings = _settings(
                    experiment,
                    {**self.settings, **{k: v for k, v in point.items() if k in param_names}},
                    "",
                )
            except ConfigError as exc:
                raise ConfigError(f"sweep point {where}: {exc}") from None
            for seed, (cfg, ided) in zip(self.seeds, configs[key], strict=True):
                # each run owns its configuration (plain data: a pickle round trip is
                # deepcopy's copy, four times faster)
                cfg = pickle.loads(pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL))
                rid = _run_id_of(ided, policy, self.experiment, settings)
                out.append(RunSpec(rid, policy, seed, dict(point), cfg, self.experiment, settings))
        return out


def run_id(
    config: dict[str, Any],
    policy: str,
    experiment: str = "episode",
    params: dict[str, Any] | None = None,
) -> str:
    """16 hex digits of SHA-256 over everything that determines a run's result: the full
    configuration (its content, not the file it came from: its seed, and a data file's
    sha256 under ``data``), the policy spec, the experiment's name and parameters, and
    :data:`abm.provenance.RESULTS_SCHEMA` (a change that alters results changes every id).

    Labels (name, description) are left out: they do not change results; so is the git
    commit (most commits change no result).
    """
    return _run_id_of(_id_config(config), policy, experiment, params)


def _id_config(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a run id's key that is the configuration (:func:`run_id`): labels left
    out, data by content, integers of float fields as floats. One configuration's runs of
    many policies share it (:meth:`Study.runs`)."""
    config = {k: v for k, v in config.items() if k not in ("name", "description")}
    if isinstance(config.get("data"), dict):
        config["data"] = _data_content(config["data"])
    return {k: _as_field_type(k, v) for k, v in config.items()}


def _run_id_of(
    config: dict[str, Any], policy: str, experiment: str, params: dict[str, Any] | None
) -> str:
    """:func:`run_id` of the configuration's :func:`_id_config`."""
    key: dict[str, Any] = {
        "config": config,
        "policy": policy,
        "experiment": experiment,
        "params": params or {},
        "results_schema": RESULTS_SCHEMA,
    }
    text = json.dumps(key, sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _data_content(data: dict[str, Any]) -> dict[str, Any]:
    """``[data]`` without the paths its sha256 stands for (the table's and the model's): a
    path relative to the scenario file is read as an absolute one, so it names the checkout,
    not the content, and the same run would get another id in another folder."""
    out = dict(data)
    if out.get("sha256") is not None:
        out.pop("path", None)
    model = out.get("model")
    if isinstance(model, dict) and model.get("sha256") is not None:
        out["model"] = {k: v for k, v in model.items() if k != "path"}
    return out


# -- validation helpers ------------------------------------------------------------
def _check_same_ticks(runs: list[RunSpec]) -> None:
    """Refuse policies compared over different tick counts (issue 48): where the points
    differ only in policy (and ticks), every policy must run the same ticks. A slow policy
    gets fewer seeds (a study of its own), never shorter runs."""
    ticks: dict[str, dict[str, set[int]]] = {}
    for r in runs:
        rest = {k: v for k, v in r.params.items() if k not in ("policy", "ticks")}
        key = json.dumps(rest, sort_keys=True, default=str)
        ticks.setdefault(key, {}).setdefault(r.policy, set()).add(r.config["ticks"])
    for key, by_policy in ticks.items():
        if len({frozenset(t) for t in by_policy.values()}) > 1:
            where = ", ".join(f"{k}={show(v)}" for k, v in json.loads(key).items())
            runs_of = "; ".join(
                f"{p}: {', '.join(map(str, sorted(t)))}" for p, t in by_policy.items()
            )
            raise ConfigError(
                f"policies run different tick counts{f' at {where}' if where else ''} "
                f"({runs_of}); a comparison runs every policy for the same ticks: give a slow "
                "policy fewer seeds, in a study of its own, instead"
            )


def _check_run_count(n_runs: int) -> None:
    if n_runs > MAX_RUNS:
        digits = len(str(n_runs))
        shown = f"{n_runs:,}" if digits <= 18 else f"more than 10^{digits - 1}"
        raise ConfigError(f"the study has {shown} runs; at most {MAX_RUNS:,} are allowed")


def _count_runs(spec: StudyFile) -> int:
    """The grid's size from the axes' lengths (a ``[[zip]]`` group counts once), before
    any value is listed or checked; an axis too malformed to count counts 1 (listing it
    then reports the problem)."""
    n = len(spec.seeds)
    if spec.world_seeds is not None:
        try:
            n *= len(parse_seeds(spec.world_seeds, "world_seeds"))
        except ConfigError:
            pass
    for key, raw in spec.sweep.items():
        n *= _axis_length(key, raw)
    for group in [spec.zip] if isinstance(spec.zip, dict) else spec.zip:
        lengths = {_axis_length(key, raw) for key, raw in group.items()}
        n *= lengths.pop() if len(lengths) == 1 else 1
    return n


def _axis_length(key: str, raw: Any) -> int:
    """How many values ``raw`` (a list, a range table or a ``registered`` selection)
    gives, without listing them; 1 when it is not one of those."""
    if isinstance(raw, list):
        return max(len(raw), 1)
    if not isinstance(raw, dict):
        return 1
    if "registered" in raw:
        names = raw["registered"]
        if key != "policy" or not isinstance(names, list):
            return 1
        registry = REGISTRY.entries("policy")
        found = sum(isinstance(n, str) and n.partition(":")[0] in registry for n in names)
        return max(found, 1)
    try:
        return Range.model_validate(raw).count()
    except (ValidationError, ValueError, ArithmeticError):
        return 1


def _fixed(spec: StudyFile, experiment: Experiment, base_dir: str | Path | None):
    """(base scenario with [set] applied, fixed experiment parameters, the names set)."""
    base = _base_scenario(spec.scenario, base_dir)
    fixed = dict(spec.set)
    if spec.ticks is not None:
        if "ticks" in fixed:
            raise ConfigError("give `ticks` either at the top level or under [set], not both")
        fixed["ticks"] = spec.ticks
    for key in fixed:
        if key in _NOT_SWEPT:
            raise ConfigError(f"set.{key} is not allowed: {_NOT_SWEPT[key]}")
    params = {k: v for k, v in fixed.items() if k in experiment.params.model_fields}
    changes = {k: v for k, v in fixed.items() if k not in params}
    try:
        base = base.replace(**changes)
    except ConfigError as exc:
        raise ConfigError(f"[set]: {exc}") from None
    return base, _settings(experiment, params, "set"), set(fixed), changes


def _settings(experiment: Experiment, params: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The experiment's parameters validated and in their canonical types."""
    try:
        return experiment.params.model_validate(params).model_dump(mode="json")
    except ValidationError as exc:
        raise ConfigError(one_line(exc, prefix)) from None


def _axes(spec: StudyFile, experiment: Experiment, seen: set[str], skipped: list[str]):
    zips = [spec.zip] if isinstance(spec.zip, dict) else list(spec.zip)
    axes: list[Axis] = []
    if spec.world_seeds is not None:
        worlds = parse_seeds(spec.world_seeds, "world_seeds")
        _check_axis_field("world_seed", "world_seeds", seen, experiment)
        axes.append(Axis(("world_seed",), tuple((w,) for w in worlds)))
    for key, raw in spec.sweep.items():
        _check_axis_field(key, f"sweep.{key}", seen, experiment)
        values = _axis_values(key, raw, f"sweep.{key}", skipped)
        axes.append(Axis((key,), tuple((v,) for v in values)))
    for i, group in enumerate(zips):
        if not group:
            raise ConfigError(f"zip[{i}] is empty: name at least one field")
        columns = []
        for key, raw in group.items():
            _check_axis_field(key, f"zip[{i}].{key}", seen, experiment)
            if isinstance(raw, dict) and "registered" in raw:
                raise ConfigError(f"zip[{i}].{key}: `registered` selections belong under [sweep]")
            # a column may repeat a value; the zipped points may not
            columns.append(_axis_values(key, raw, f"zip[{i}].{key}", skipped, unique=False))
        if len({len(c) for c in columns}) != 1:
            sizes = ", ".join(f"{k}: {len(c)}" for k, c in zip(group, columns, strict=True))
            raise ConfigError(f"zip[{i}]: lists must have equal lengths, got {sizes}")
        rows = list(zip(*columns, strict=True))
        _no_repeats([list(r) for r in rows], f"zip[{i}]")
        axes.append(Axis(tuple(group), tuple(rows)))
    return axes


def _fixed_policy(spec: StudyFile, experiment: Experiment, seen: set[str]) -> str:
    if not experiment.policy:
        if spec.policy is not None:
            raise ConfigError(f"policy: experiment {experiment.name!r} takes no policy")
        return ""
    if "policy" in seen:
        if spec.policy is not None:
            raise ConfigError("give `policy` either at the top level or as a sweep axis, not both")
        return ""
    policy = spec.policy if spec.policy is not None else "threshold"
    _check_policy(policy, "policy")
    return policy


def _metric_names(spec: StudyFile, experiment: Experiment):
    """(kept tick columns, report metrics) with the experiment's defaults."""
    if experiment.keeps_ticks:
        allowed = METRIC_COLUMNS + EXTENSION_METRICS
        named = [m for m in spec.metrics or () if _POLICY_METRIC.fullmatch(m)]
        metrics = _metrics(spec.metrics or list(METRIC_COLUMNS), "metrics", allowed + tuple(named))
    elif spec.metrics is not None:
        raise ConfigError(
            f"metrics: experiment {experiment.name!r} keeps no tick columns; "
            "choose report columns with report_metrics"
        )
    else:
        metrics = ()
    columns = tuple(dict.fromkeys(experiment.columns + metrics))
    default = [m for m in ("rr", "rf", "gini", "mean_cost") if m in (metrics or columns)]
    report = _metrics(
        spec.report_metrics or default or list(columns[:2]), "report_metrics", columns
    )
    return metrics, report


def _base_scenario(value: Any, base_dir: str | Path | None) -> ScenarioConfig:
    if isinstance(value, ScenarioConfig):
        return value
    if value.endswith(".toml") and base_dir is not None and not Path(value).is_absolute():
        value = str(Path(base_dir) / value)
    try:
        return resolve_scenario(value)
    except ConfigError as exc:
        raise ConfigError(f"scenario: {exc}") from None


def _check_axis_field(key: str, where: str, seen: set[str], experiment: Experiment) -> None:
    params = tuple(experiment.params.model_fields)
    if key in _NOT_SWEPT:
        raise ConfigError(f"{where}: {key} cannot be swept: {_NOT_SWEPT[key]}")
    if key == "policy" and not experiment.policy:
        raise ConfigError(f"{where}: experiment {experiment.name!r} takes no policy")
    if key not in ("policy", "scenario") and key not in field_names() and key not in params:
        allowed = (
            ["policy"] * experiment.policy
            + ["scenario"]
            + list(params)
            + [f for f in field_names() if f not in _NOT_SWEPT]
        )
        raise ConfigError(
            f"{where}: unknown scenario field {key!r}; allowed: " + ", ".join(allowed)
        )
    if key in seen:
        raise ConfigError(f"{where}: {key} is set or swept twice")
    seen.add(key)


def _check_policy(spec: str, where: str) -> None:
    try:
        REGISTRY.validate(spec)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _axis_values(
    key: str, raw: Any, where: str, skipped: list[str], unique: bool = True
) -> list[Any]:
    if isinstance(raw, dict) and "registered" in raw:
        if key != "policy":
            raise ConfigError(f"{where}: `registered` selects policies; use it for policy only")
        try:
            names = Registered.model_validate(raw).registered
        except ValidationError as exc:
            raise ConfigError(one_line(exc, where, allowed_fields=("registered",))) from None
        registry = REGISTRY.entries("policy")
        values = [n for n in names if n.partition(":")[0] in registry]
        skipped.extend(n for n in names if n not in values)
        if not values:
            raise ConfigError(
                f"{where}: none of {names} is registered; available: {', '.join(sorted(registry))}"
            )
    elif isinstance(raw, dict):
        try:
            values = Range.model_validate(raw).values()
        except ValidationError as exc:
            raise ConfigError(
                one_line(exc, where, allowed_fields=tuple(Range.model_fields))
            ) from None
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    elif isinstance(raw, list):
        values = list(raw)
    else:
        raise ConfigError(
            problem(
                where,
                raw,
                "a list or a range table such as "
                "{start = 1, stop = 9, step = 2} (fixed values go under [set])",
            )
        )
    if not values:
        raise ConfigError(f"{where} is empty: list at least one value")
    for i, v in enumerate(values):
        _int64(v, f"{where}[{i}]")
    if unique:
        _no_repeats(values, where)
    if key == "policy":
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise ConfigError(problem(f"{where}[{i}]", v, "a policy name"))
            _check_policy(v, f"{where}[{i}]")
    elif key == "scenario":
        for i, v in enumerate(values):
            if not (isinstance(v, str) and v in PRESETS):
                raise ConfigError(problem(f"{where}[{i}]", v, f"a preset ({', '.join(PRESETS)})"))
    else:
        values = [_as_field_type(key, v) for v in values]
    return values


_INT64 = (-(2**63), 2**63 - 1)


def _int64(value: Any, where: str) -> None:
    """An integer axis value (or one inside a list value) outside int64 is refused at plan
    time: its results column is int64, so it would fail only after runs were written."""
    if isinstance(value, list | tuple):
        for j, v in enumerate(value):
            _int64(v, f"{where}[{j}]")
    elif isinstance(value, int) and not isinstance(value, bool):
        if not _INT64[0] <= value <= _INT64[1]:
            allowed = interval(*_INT64, integer=True) + " (results are stored as int64)"
            raise ConfigError(problem(where, value, allowed))


def _no_repeats(values: list[Any], where: str) -> None:
    counts = Counter(json.dumps(v, sort_keys=True) for v in values)
    dupes = sorted(k for k, c in counts.items() if c > 1)
    if dupes:
        raise ConfigError(f"{where} lists {', '.join(dupes)} more than once")


_DEFAULTS = ScenarioConfig()


def _as_field_type(key: str, value: Any) -> Any:
    """Integers given for float fields become floats (one column type, one run id)."""
    default = getattr(_DEFAULTS, key, None)
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(default, tuple) and isinstance(value, list | tuple) and default:
        if all(isinstance(d, float) for d in default):
            return [
                float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value
            ]
    return value


def _metrics(raw: list[str], where: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    bad = [m for m in raw if m not in allowed]
    if bad:
        raise ConfigError(
            f"{where}: unknown metric(s) {', '.join(map(str, bad))}; allowed: {', '.join(allowed)}"
        )
    return tuple(dict.fromkeys(raw))


def _canonical(data: dict[str, Any]) -> dict[str, Any]:
    """The study mapping as plain JSON data (ScenarioConfig bases become dicts)."""
    out = {}
    for key, value in data.items():
        if isinstance(value, ScenarioConfig):
            value = value.to_dict()
        out[key] = value
    return json.loads(json.dumps(out, sort_keys=True, default=str))


__all__ = [
    "MAX_RUNS",
    "METRIC_COLUMNS",
    "SUMMARY_COLUMNS",
    "TIMING_COLUMNS",
    "TOP_KEYS",
    "Axis",
    "Range",
    "RunSpec",
    "Study",
    "StudyFile",
    "paired_seeds",
    "parse_seeds",
    "run_id",
]
