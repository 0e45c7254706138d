"""What the dashboard's sidebar edits, and the model it builds from it.

:class:`Settings` holds the raw inputs (numbers from sliders, text from input boxes).
:meth:`Settings.resolve` turns them into a validated :class:`ScenarioConfig` through the
same path as ``recourse-abm run --set KEY=VALUE`` (TOML values, ``ScenarioConfig``
validation), so a bad value gives the CLI's message naming the field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from abm.config import ScenarioConfig, parse_overrides
from abm.model import RecourseModel
from abm.registry import make_policy
from abm.scenarios import PRESETS, get_scenario
from abm.validation import ConfigError

# presets bigger than this per tick are left to the CLI: the agent view would be unreadable
MAX_DASHBOARD_POOL = 5_000

# slider ranges (widened when a preset's own value lies outside)
SLIDERS: dict[str, tuple[str, int, int]] = {
    "k": ("places per tick k", 1, 100),
    "m": ("entrants per tick m", 0, 200),
    "n_initial": ("initial applicants N₀", 0, 2_000),
    "validity": ("validity T (ticks)", 1, 20),
    "ticks": ("episode length (ticks)", 1, 300),
    "seed": ("seed", 0, 99),
}
TEXT_FIELDS: dict[str, str] = {
    "beta": "β (global ease of change; inf = always succeeds)",
    "difficulty": "difficulty d per feature (comma-separated, each in (0, 1])",
}


def dashboard_presets() -> list[str]:
    """Presets small enough to watch tick by tick."""
    return [n for n, c in PRESETS.items() if max(c.n_initial, c.m) <= MAX_DASHBOARD_POOL]


def _fmt_number(x: float) -> str:
    return "inf" if x == float("inf") else f"{x:g}"


def _toml_value(key: str, text: str) -> Any:
    """Read ``text`` as ``--set key=text`` would (a TOML value; otherwise the raw text)."""

    text = text.strip()
    if key == "difficulty" and not text.startswith("["):
        text = f"[{text}]"  # "0.8, 0.2" is friendlier to type than a TOML list
    return parse_overrides([f"{key}={text}"])[key]


@dataclass(frozen=True)
class Settings:
    """The sidebar's inputs. Text fields keep what was typed, valid or not."""

    preset: str = "paper"
    policy: str = "threshold"
    compare: str = ""  # a second policy on the same seed; "" = off
    k: int = 9
    m: int = 10
    n_initial: int = 20
    validity: int = 1
    ticks: int = 100
    seed: int = 0
    beta: str = "0.05"
    difficulty: str = ""
    demo: str = ""  # the demonstration these settings came from, if any

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
        for key in ("beta",):
            if key in changes and not isinstance(changes[key], str):
                changes[key] = _fmt_number(changes[key])
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

    def resolve(self) -> ScenarioConfig:
        """The validated scenario; raises :class:`ConfigError` naming the bad field."""
        base = get_scenario(self.preset)
        overrides = {
            name: getattr(self, name)
            for name in ("k", "m", "n_initial", "validity", "ticks", "seed")
        }
        overrides["beta"] = _toml_value("beta", self.beta)
        overrides["difficulty"] = _toml_value("difficulty", self.difficulty)
        return base.replace(**overrides)

    def slider_range(self, name: str) -> tuple[int, int]:
        _, lo, hi = SLIDERS[name]
        value = getattr(self, name)
        return min(lo, value), max(hi, value)


def check_policy(name: str, field: str = "policy") -> None:
    """Raise ValueError unless ``name`` builds a policy (registry name or composite)."""
    try:
        make_policy(name)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None


class DashboardModel(RecourseModel):
    """A :class:`RecourseModel` built from :class:`Settings`, with an optional twin.

    The twin runs ``settings.compare`` on the same scenario and seed in lockstep, so both
    policies see identical arrivals (paired comparison). Candidate handles are off (the
    agent view reads the per-application table); events are on.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        settings = Settings() if settings is None else settings
        config = settings.resolve()
        if settings.compare:
            check_policy(settings.compare, "compare")
        super().__init__(config, settings.policy, agents=False, record_events=True)
        self.settings = settings
        self.twin = (
            RecourseModel(config, settings.compare, agents=False, record_events=False)
            if settings.compare
            else None
        )
        self._table_tick = -1
        self._table = self._ticks = pd.DataFrame()

    def step(self) -> None:
        if not self.running:  # the play loop may ask once more after the last tick
            return
        super().step()
        if self.twin is not None:
            self.twin.step()

    def events(self) -> pd.DataFrame:
        """The per-application table, cached per tick (several views read it)."""
        self._refresh()
        return self._table

    def ticks(self) -> pd.DataFrame:
        """The tick table (Mesa DataCollector data), cached per tick."""
        self._refresh()
        return self._ticks

    def _refresh(self) -> None:
        if self._table_tick != self.tick:
            self._table = self.candidate_table()
            self._ticks = self.tick_table()
            self._table_tick = self.tick


# -- data behind the views -------------------------------------------------------------
STATUS_ORDER = ("accepted", "implemented", "failed", "no advice", "dropped")


def application_status(events: pd.DataFrame) -> np.ndarray:
    """(rows,) status of each application: accepted, implemented (did every recommended
    change), failed (a change failed), no advice, or dropped (gave up)."""
    status = np.full(len(events), "failed", dtype=object)
    if events.empty:
        return status
    advised = np.isfinite(events["goal"].to_numpy(dtype=float))
    status[~advised] = "no advice"
    status[events["implemented"].to_numpy(dtype=bool)] = "implemented"
    status[events["dropped"].to_numpy(dtype=bool)] = "dropped"
    status[events["accepted"].to_numpy(dtype=bool)] = "accepted"
    return status


def feature_effort(events: pd.DataFrame, difficulty: np.ndarray) -> pd.DataFrame:
    """Per feature: effort spent on changes made (Σ|dx| d where done), effort planned on
    changes that failed, and how often the feature was part of the advice.

    Returns a frame with columns feature, difficulty, spent, failed, asked (z rows).
    """
    z = difficulty.shape[0]
    spent, failed, asked = np.zeros(z), np.zeros(z), np.zeros(z, dtype=np.int64)
    if not events.empty:
        for i in range(z):
            dx = np.abs(events[f"dx_{i}"].to_numpy(dtype=float))
            ok = events[f"ok_{i}"].to_numpy()
            spent[i] = float(np.add.reduce(dx[ok == 1])) * difficulty[i]
            failed[i] = float(np.add.reduce(dx[ok == 0])) * difficulty[i]
            asked[i] = int(np.count_nonzero(ok != -1))
    return pd.DataFrame(
        {
            "feature": [f"x{i}" for i in range(z)],
            "difficulty": difficulty,
            "spent": spent,
            "failed": failed,
            "asked": asked,
        }
    )


def current_candidates(model: DashboardModel) -> pd.DataFrame:
    """The applicants of the last tick: id, application number, score, status, goal,
    achieved goal score, recommendation and outcome (one row each, best score first)."""
    ev = model.events()
    if ev.empty:
        return pd.DataFrame(
            columns=[
                "id",
                "application",
                "score",
                "status",
                "goal",
                "cf_score",
                "advice",
                "outcome",
            ]
        )
    ev = ev[ev["tick"].to_numpy() == model.tick - 1]
    z = model.config.n_features
    dx = np.column_stack([ev[f"dx_{i}"].to_numpy(dtype=float) for i in range(z)])
    ok = np.column_stack([ev[f"ok_{i}"].to_numpy() for i in range(z)])
    status = application_status(ev)
    advice, outcome = [], []
    for row in range(len(ev)):
        changed = np.flatnonzero(ok[row] != -1)
        advice.append(" ".join(f"x{i}{_change(dx[row, i])}" for i in changed) or "—")
        if status[row] == "dropped":
            outcome.append("gave up")
        elif changed.size == 0:
            outcome.append("—")
        else:
            bad = changed[ok[row, changed] == 0]
            outcome.append(
                "all done" if bad.size == 0 else "failed: " + " ".join(f"x{i}" for i in bad)
            )
    out = pd.DataFrame(
        {
            "id": ev["cid"].to_numpy(),
            "application": ev["application"].to_numpy(),
            "score": ev["score"].to_numpy(dtype=float).round(4),
            "status": status,
            "goal": ev["goal"].to_numpy(dtype=float).round(4),
            "cf_score": ev["cf_score"].to_numpy(dtype=float).round(4),
            "advice": advice,
            "outcome": outcome,
        }
    )
    return out.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)


def recent_applications(
    model: DashboardModel, window: int = 20, limit: int = 3_000
) -> pd.DataFrame:
    """Applications of the last ``window`` ticks (tick, score, status, id), at most ``limit``
    rows (the most recent)."""
    ev = model.events()
    if ev.empty:
        return pd.DataFrame(columns=["tick", "score", "status", "id"])
    ev = ev[ev["tick"].to_numpy() >= model.tick - window]
    ev = ev.iloc[-limit:]
    return pd.DataFrame(
        {
            "tick": ev["tick"].to_numpy(),
            "score": ev["score"].to_numpy(dtype=float),
            "status": application_status(ev),
            "id": ev["cid"].to_numpy(),
        }
    )


def comparison_table(model: DashboardModel) -> pd.DataFrame:
    """Long table tick, policy, metric (RR or RF), value for the model and its twin."""
    frames = []
    pairs = ((model.settings.policy, model.ticks()), (model.settings.compare, model.twin))
    for name, t in pairs:
        if t is None:
            continue
        if not isinstance(t, pd.DataFrame):
            t = t.tick_table()
        for metric in ("rr", "rf"):
            frames.append(
                pd.DataFrame(
                    {
                        "tick": t["tick"].to_numpy(dtype=int),
                        "policy": name,
                        "metric": metric.upper(),
                        "value": t[metric].to_numpy(dtype=float),
                    }
                )
            )
    if not frames:
        return pd.DataFrame(columns=["tick", "policy", "metric", "value"])
    return pd.concat(frames, ignore_index=True)


__all__ = [
    "ConfigError",
    "DashboardModel",
    "Settings",
    "application_status",
    "comparison_table",
    "current_candidates",
    "dashboard_presets",
    "feature_effort",
    "recent_applications",
]


def _change(dx: float) -> str:
    """A recommended change as text: two decimals, or two significant digits when it is too
    small for them (a candidate tied at the threshold is nudged by ``GOAL_GAP``-sized steps)."""
    return f"{dx:+.2f}" if abs(dx) >= 0.005 else f"{dx:+.1e}"
