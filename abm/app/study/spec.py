"""Study specification: a base scenario, parameter sweeps, seeds, ticks and metrics.

A study is a grid: every combination of the sweep axes, times every seed. An axis is one
scenario field (or ``policy``) with a list or a range of values; a ``[[zip]]`` group is
one axis whose fields advance together (``n_initial`` and ``m`` of equal length, say).
Every run has a stable id derived from its full configuration and policy, so results can
be resumed and merged in any order.

TOML layout (all keys but ``scenario`` optional)::

    name = "beta-sweep"
    scenario = "paper-T5"            # preset name or a scenario .toml (relative to this file)
    policy = "threshold"             # fixed policy (or sweep it below)
    seeds = 10                       # 0..9; or a list [3, 7]; or {start = 0, stop = 9}
    ticks = 50
    metrics = ["rr", "rf", "gini"]   # tick columns to keep (default: all)
    report_metrics = ["rr", "rf"]    # shown by `study report` (default: rr, rf, gini,
                                     # mean_cost among the metrics, else the first four)

    [set]                            # fixed scenario overrides
    k = 5

    [sweep]                          # grid axes
    beta = {start = 0.01, stop = 0.1, num = 4}
    policy = {registered = ["threshold", "threshold-ustun", "none"]}

    [[zip]]                          # fields swept together (lists of equal length)
    n_initial = [10, 100]
    m = [10, 100]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abm.config import FIELD_NAMES, ConfigError, ScenarioConfig
from abm.model import TICK_COLUMNS
from abm.registry import REGISTRY
from abm.scenarios import resolve_scenario

TOP_KEYS = ("name", "description", "scenario", "policy", "seeds", "ticks", "metrics",
            "report_metrics", "set", "sweep", "zip")  # fmt: skip
# per-tick columns a study may keep; ``tick`` is always kept
METRIC_COLUMNS = tuple(c for c in TICK_COLUMNS if c != "tick")
# per-run figures besides the kept metrics: the episode summary and wall times (seconds:
# elapsed_s in all, setup_s building the model, run_s running the ticks)
SUMMARY_COLUMNS = ("rr", "rf", "gini", "mean_cost", "n_accepted", "n_dropped", "n_reapplied",
                   "n_succ", "wasted_effort", "effort", "mean_time_to_accept", "elapsed_s",
                   "setup_s", "run_s")  # fmt: skip
# wall-clock columns of the runs table: the only ones that differ between repeats
TIMING_COLUMNS = ("elapsed_s", "setup_s", "run_s")
# fields a sweep may not name: the seed has its own key, name/description are labels
_NOT_SWEPT = {"seed": "use the top-level `seeds` key", "name": "it is a label",
              "description": "it is a label"}  # fmt: skip
MAX_RUNS = 1_000_000


@dataclass(frozen=True)
class Axis:
    """One sweep axis: ``fields`` advance together through ``values`` (one tuple per step)."""

    fields: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class RunSpec:
    """One run: its stable id, policy, episode seed, swept values and full configuration."""

    run_id: str
    policy: str
    seed: int
    params: dict[str, Any]
    config: dict[str, Any]

    def task(self, metrics: tuple[str, ...]) -> dict[str, Any]:
        """The picklable job handed to a worker (see :func:`abm.app.study.runner.execute_run`)."""
        return {"run_id": self.run_id, "policy": self.policy, "config": self.config,
                "metrics": list(metrics)}  # fmt: skip


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

    # -- construction ---------------------------------------------------------------
    @classmethod
    def from_toml(cls, path: str | Path) -> Study:
        """Load and validate a study file; errors name the file and the offending key."""
        path = Path(path)
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise ConfigError(f"study file not found: {path}") from None
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
        data = dict(data)
        unknown = sorted(set(data) - set(TOP_KEYS))
        if unknown:
            raise ConfigError(
                f"unknown study key(s): {', '.join(unknown)}; allowed: {', '.join(TOP_KEYS)}"
            )
        if "scenario" not in data:
            raise ConfigError("study needs a `scenario` (a preset name or a scenario .toml)")
        base = _base_scenario(data["scenario"], base_dir)
        fixed = _table(data.get("set", {}), "set")
        if "ticks" in data:
            if "ticks" in fixed:
                raise ConfigError("give `ticks` either at the top level or under [set], not both")
            fixed["ticks"] = data["ticks"]
        for key in fixed:
            if key in _NOT_SWEPT:
                raise ConfigError(f"set.{key} is not allowed: {_NOT_SWEPT[key]}")
        try:
            base = base.replace(**fixed)
        except ConfigError as exc:
            raise ConfigError(f"[set]: {exc}") from None

        sweep = _table(data.get("sweep", {}), "sweep")
        zips = data.get("zip", [])
        if isinstance(zips, dict):
            zips = [zips]
        if not isinstance(zips, list) or not all(isinstance(z, dict) for z in zips):
            raise ConfigError("zip must be a table or an array of tables ([[zip]])")
        skipped: list[str] = []
        axes: list[Axis] = []
        seen: set[str] = set(fixed)
        for key, raw in sweep.items():
            _check_axis_field(key, f"sweep.{key}", seen)
            values = _axis_values(key, raw, f"sweep.{key}", REGISTRY.entries("policy"), skipped)
            axes.append(Axis((key,), tuple((v,) for v in values)))
        for i, group in enumerate(zips):
            if not group:
                raise ConfigError(f"zip[{i}] is empty: name at least one field")
            columns = []
            for key, raw in group.items():
                _check_axis_field(key, f"zip[{i}].{key}", seen)
                if isinstance(raw, dict) and "registered" in raw:
                    raise ConfigError(
                        f"zip[{i}].{key}: `registered` selections belong under [sweep]"
                    )
                columns.append(
                    _axis_values(key, raw, f"zip[{i}].{key}", REGISTRY.entries("policy"), skipped)
                )
            lengths = {len(c) for c in columns}
            if len(lengths) != 1:
                sizes = ", ".join(f"{k}: {len(c)}" for k, c in zip(group, columns, strict=True))
                raise ConfigError(f"zip[{i}]: lists must have equal lengths, got {sizes}")
            axes.append(Axis(tuple(group), tuple(zip(*columns, strict=True))))

        policy = data.get("policy", "threshold")
        if "policy" in seen:
            if "policy" in data:
                raise ConfigError(
                    "give `policy` either at the top level or as a sweep axis, not both"
                )
        else:
            if not isinstance(policy, str):
                raise ConfigError(
                    f"policy must be a policy name (sweep it under [sweep] to try several), got {policy!r}"
                )
            _check_policy(policy, "policy")

        seeds = _seeds(data.get("seeds", 1))
        metrics = _metrics(data.get("metrics", list(METRIC_COLUMNS)), "metrics", METRIC_COLUMNS)
        report_default = [m for m in metrics if m in ("rr", "rf", "gini", "mean_cost")] or list(
            metrics[:4]
        )
        report = _metrics(data.get("report_metrics", report_default), "report_metrics",
                          tuple(dict.fromkeys(SUMMARY_COLUMNS + metrics)))  # fmt: skip
        name = data.get("name", "study")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"name must be a non-empty string, got {name!r}")
        description = data.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"description must be a string, got {description!r}")
        n_runs = math.prod(len(a.values) for a in axes) * len(seeds)
        if n_runs > MAX_RUNS:
            raise ConfigError(f"the study has {n_runs:,} runs; at most {MAX_RUNS:,} are allowed")
        study = cls(
            name=name,
            base=base,
            policy="" if "policy" in seen else policy,
            axes=tuple(axes),
            seeds=seeds,
            metrics=metrics,
            report_metrics=report,
            description=description,
            spec=_canonical(data),
            source=source,
            source_text=source_text,
            skipped_policies=tuple(dict.fromkeys(skipped)),
        )
        study.runs()  # validates every grid point with ScenarioConfig
        return study

    # -- the grid -------------------------------------------------------------------
    @property
    def axis_fields(self) -> tuple[str, ...]:
        """The swept fields in axis order (``policy`` included when swept)."""
        return tuple(f for a in self.axes for f in a.fields)

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
        """Every run (sweep point × seed), each with its stable id; validates each config."""
        out = []
        for point in self.points():
            policy = point.get("policy", self.policy)
            changes = {k: v for k, v in point.items() if k != "policy"}
            try:
                config = self.base.replace(**changes)
            except ConfigError as exc:
                where = ", ".join(f"{k}={v!r}" for k, v in point.items())
                raise ConfigError(f"sweep point {where}: {exc}") from None
            for seed in self.seeds:
                cfg = config.replace(seed=seed).to_dict()
                out.append(RunSpec(run_id(cfg, policy), policy, seed, dict(point), cfg))
        return out


def run_id(config: dict[str, Any], policy: str) -> str:
    """16 hex digits of SHA-256 over the full configuration and the policy.

    Labels (name, description) are left out: they do not change results.
    """
    key = {k: _as_field_type(k, v) for k, v in config.items() if k not in ("name", "description")}
    text = json.dumps({"config": key, "policy": policy}, sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- validation helpers ------------------------------------------------------------
def _base_scenario(value: Any, base_dir: str | Path | None) -> ScenarioConfig:
    if isinstance(value, ScenarioConfig):
        return value
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"scenario must be a preset name or a path to a .toml file, got {value!r}"
        )
    if value.endswith(".toml") and base_dir is not None and not Path(value).is_absolute():
        value = str(Path(base_dir) / value)
    try:
        return resolve_scenario(value)
    except ConfigError as exc:
        raise ConfigError(f"scenario: {exc}") from None


def _table(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"[{name}] must be a table of field = value, got {value!r}")
    return dict(value)


def _check_axis_field(key: str, where: str, seen: set[str]) -> None:
    if key in _NOT_SWEPT:
        raise ConfigError(f"{where}: {key} cannot be swept: {_NOT_SWEPT[key]}")
    if key != "policy" and key not in FIELD_NAMES:
        raise ConfigError(f"{where}: unknown scenario field {key!r}; allowed: policy, "
                          + ", ".join(f for f in FIELD_NAMES if f not in _NOT_SWEPT))  # fmt: skip
    if key in seen:
        raise ConfigError(f"{where}: {key} is set or swept twice")
    seen.add(key)


def _check_policy(spec: str, where: str) -> None:
    try:
        REGISTRY.make_policy(spec)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _axis_values(key: str, raw: Any, where: str, registry: dict, skipped: list[str]) -> list[Any]:
    if isinstance(raw, dict) and "registered" in raw:
        if key != "policy":
            raise ConfigError(f"{where}: `registered` selects policies; use it for policy only")
        if set(raw) != {"registered"}:
            raise ConfigError(f"{where}: a registered selection takes only the key `registered`")
        names = raw["registered"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"{where}.registered must be a non-empty list of policy names")
        values = [n for n in names if n.partition(":")[0] in registry]
        skipped.extend(n for n in names if n not in values)
        if not values:
            raise ConfigError(
                f"{where}: none of {names} is registered; available: {', '.join(sorted(registry))}"
            )
    elif isinstance(raw, dict):
        values = _range(raw, where)
    elif isinstance(raw, list):
        values = list(raw)
    else:
        raise ConfigError(f"{where} must be a list or a range table such as "
                          f"{{start = 1, stop = 9, step = 2}}, got {raw!r} (fixed values go under [set])")  # fmt: skip
    if not values:
        raise ConfigError(f"{where} is empty: list at least one value")
    keys = [json.dumps(v, sort_keys=True) for v in values]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise ConfigError(f"{where} lists {', '.join(dupes)} more than once")
    if key == "policy":
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise ConfigError(f"{where}[{i}] must be a policy name, got {v!r}")
            _check_policy(v, f"{where}[{i}]")
    else:
        values = [_as_field_type(key, v) for v in values]
    return values


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


def _range(raw: dict[str, Any], where: str) -> list[Any]:
    allowed = {"start", "stop", "step", "num", "log"}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown range key(s) {', '.join(unknown)}; a range has "
                          "start, stop and either step or num (log = true for a geometric one)")  # fmt: skip
    for key in ("start", "stop"):
        v = raw.get(key)
        if not (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)):
            raise ConfigError(f"{where}: range needs a finite number `{key}`, got {v!r}")
    start, stop = raw["start"], raw["stop"]
    if stop < start:
        raise ConfigError(f"{where}: range stop ({stop}) must be >= start ({start})")
    if ("step" in raw) == ("num" in raw):
        raise ConfigError(f"{where}: a range needs exactly one of `step` or `num`")
    log = raw.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(f"{where}: log must be true or false, got {log!r}")
    if "step" in raw:
        step = raw["step"]
        if log:
            raise ConfigError(f"{where}: log = true needs `num`, not `step`")
        if not (
            isinstance(step, int | float)
            and not isinstance(step, bool)
            and step > 0
            and math.isfinite(step)
        ):
            raise ConfigError(f"{where}: range step must be a positive number, got {step!r}")
        n = int(math.floor((stop - start) / step + 1e-9)) + 1
        if n > MAX_RUNS:
            raise ConfigError(f"{where}: range has {n:,} values; at most {MAX_RUNS:,}")
        if all(isinstance(v, int) for v in (start, stop, step)):
            return [start + i * step for i in range(n)]
        return [_tidy(start + i * step) for i in range(n)]
    num = raw["num"]
    if not (isinstance(num, int) and not isinstance(num, bool) and 1 <= num <= MAX_RUNS):
        raise ConfigError(f"{where}: range num must be an integer in [1, {MAX_RUNS}], got {num!r}")
    if num == 1:
        return [start]
    if log:
        if start <= 0:
            raise ConfigError(f"{where}: a log range needs start > 0, got {start}")
        ratio = (stop / start) ** (1 / (num - 1))
        return [_tidy(start * ratio**i) for i in range(num)]
    return [_tidy(start + (stop - start) * i / (num - 1)) for i in range(num)]


def _tidy(x: float) -> float:
    # 0.1 + 2 * 0.1 should read 0.3 in tables and hash like the literal 0.3
    return float(f"{x:.12g}")


def _seeds(raw: Any) -> tuple[int, ...]:
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if is_int(raw):
        if raw < 1:
            raise ConfigError(f"seeds must be a positive count, a list or a range, got {raw}")
        seeds = list(range(raw))
    elif isinstance(raw, list):
        seeds = raw
    elif isinstance(raw, dict):
        raw = dict(raw)
        raw.setdefault("step", 1)
        seeds = _range(raw, "seeds")
    else:
        raise ConfigError(
            f"seeds must be a count, a list of integers or {{start, stop}}, got {raw!r}"
        )
    if not seeds:
        raise ConfigError("seeds is empty: list at least one seed")
    for s in seeds:
        if not is_int(s) or not 0 <= s < 2**63:
            raise ConfigError(f"seeds must be integers in [0, 2^63 - 1], got {s!r}")
    if len(set(seeds)) != len(seeds):
        raise ConfigError("seeds lists a seed more than once")
    return tuple(seeds)


def _metrics(raw: Any, where: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list | tuple) or not raw:
        raise ConfigError(f"{where} must be a non-empty list of names")
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
