"""The data behind each view, at any tick of the run so far (live or replayed).

Every function reads the record only (Mesa's DataCollector columns and the candidate
table, of the policy and of its side-by-side twins), so scrubbing back to tick t shows
exactly what the page showed live at t. Ticks count from 0, as in the tables and the CSV
exports: after n steps the newest tick is n - 1.

Views get *columns*: a dict of equally long JSON-ready lists (NaN -> None), which the
browser turns into rows (much cheaper to encode than one dict per row); :func:`rows`
does the same here.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from abm.model import RecourseModel
from dashboards import palette
from dashboards.settings import DashboardModel

Columns = dict[str, list[Any]]

# The dashboard's colour language, from the one palette (dashboards/palette.py): one set of
# colours for outcomes (these colours mean nothing else anywhere), another for policies (a
# policy keeps its colour on every page and in every chart); black is a reference line.
OUTCOME_COLOURS = {outcome: palette.hex_of(name) for outcome, name in palette.OUTCOMES.items()}
POLICY_COLOURS = [palette.hex_of(name) for name in palette.POLICY_COLOURS]
POLICY_DASHES = [palette.dash_of(name) for name in palette.POLICY_DASHES]
# the policies of the lessons first, so that they keep the same style in every lesson
STYLE_ORDER = [
    "threshold",
    "threshold-true",
    "none",
    "improve-linucb:advice=segment",
    "scarf",
    "safear",
    "threshold-estimated",
    "lookahead",
]
REFERENCE = palette.hex_of(palette.REFERENCE)


def policy_styles(policies: list[str]) -> dict[str, tuple[str, list[int]]]:
    """Policy -> (colour, dash), keyed by the policy's name: a policy gets the same style
    whichever others are shown with it, unless two of those shown would share one (the
    later then takes the next free colour and dash)."""
    taken_c: set[int] = set()
    taken_d: set[int] = set()
    out = {}
    for p in policies:
        n_c, n_d = len(POLICY_COLOURS), len(POLICY_DASHES)
        c = STYLE_ORDER.index(p) if p in STYLE_ORDER else zlib.crc32(p.encode()) % n_c
        while c in taken_c:
            c = (c + 1) % n_c
        d = c % n_d
        while d in taken_d and len(taken_d) < n_d:
            d = (d + 1) % n_d
        taken_c.add(c)
        taken_d.add(d)
        out[p] = (POLICY_COLOURS[c], POLICY_DASHES[d])
    return out


TIE_TOL = 1e-9  # scores closer than this to the threshold are drawn at it
NO_ADVICE = "no advice"
GAVE_UP = "gave up"
# extension columns the table and the agent view show, with their headers
EXTRA_COLUMNS = {
    "group": "group",
    "p_true": "true chance p*",
    "budget_cost": "advice cost",
    "model_version": "model version",
}


def json_list(a: Any, digits: int | None = None) -> list[Any]:
    """An array as a JSON-ready list: floats rounded to ``digits`` (if given), NaN and
    infinities as None."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        if digits is not None:
            a = a.round(digits)
        bad = ~np.isfinite(a)
        if bad.any():
            out = a.astype(object)
            out[bad] = None
            return out.tolist()
    return a.tolist()


def rows(columns: Columns) -> list[dict[str, Any]]:
    """Columns -> one dict per row."""
    names = list(columns)
    return [dict(zip(names, r, strict=True)) for r in zip(*columns.values(), strict=True)]


def n_rows(columns: Columns) -> int:
    return len(next(iter(columns.values()))) if columns else 0


class Run:
    """One policy's record after ``model.tick`` ticks: its tick columns (Mesa's
    DataCollector, row i = tick i) and its application columns (rows in tick order)."""

    def __init__(self, policy: str, model: RecourseModel) -> None:
        self.policy = policy
        self.n_ticks = model.tick
        self._vars = model.datacollector.model_vars
        table = model.candidate_table()
        self.events = {c: table[c].to_numpy() for c in table.columns}
        self._tick = self.events.get("tick", np.zeros(0, dtype=np.int64))

    def has(self, column: str) -> bool:
        """Whether the tick record has ``column``."""
        return column in self._vars

    def ticks(self, column: str, t: int, first: int = 0) -> np.ndarray:
        """(t - first + 1,) tick column of ticks first..t."""
        last = min(t, self.n_ticks - 1)
        if last < first:
            return np.zeros(0)
        return np.asarray(self._vars[column][first : last + 1], dtype=float)

    def apps(self, first: int, last: int) -> dict[str, np.ndarray]:
        """Application columns of ticks first..last (inclusive)."""
        lo = int(np.searchsorted(self._tick, first, side="left"))
        hi = int(np.searchsorted(self._tick, last, side="right"))
        return {c: a[lo:hi] for c, a in self.events.items()} if hi > lo else {}


def runs(model: DashboardModel) -> list[Run]:
    """The policy's run, then its twins' (side by side); built once per tick."""

    def build() -> list[Run]:
        return [Run(p, m) for p, m in zip(model.settings.policies, model.models(), strict=True)]

    return model.per_tick("runs", build)


def outcomes(apps: dict[str, np.ndarray]) -> np.ndarray:
    """(rows,) outcome of each application: accepted, dropped (rejected and gave up) or
    rejected (and waiting to try again)."""
    if not apps:
        return np.zeros(0, dtype=object)
    out = np.full(apps["cid"].shape[0], "rejected", dtype=object)
    out[apps["dropped"].astype(bool)] = "dropped"
    out[apps["accepted"].astype(bool)] = "accepted"
    return out


# -- time series ---------------------------------------------------------------------------
def series(all_runs: list[Run], t: int, columns: dict[str, str]) -> Columns:
    """Tick columns over ticks 0..t in long form {tick, series, policy, value}:
    ``columns`` maps a record column to its label; columns a run lacks are skipped."""
    parts: dict[str, list[np.ndarray]] = {"tick": [], "series": [], "policy": [], "value": []}
    for run in all_runs:
        for col, label in columns.items():
            if not run.has(col):
                continue
            values = run.ticks(col, t)
            n = values.shape[0]
            parts["tick"].append(np.arange(n))
            parts["series"].append(np.full(n, label, dtype=object))
            parts["policy"].append(np.full(n, run.policy, dtype=object))
            parts["value"].append(values)
    if not parts["tick"]:
        return {k: [] for k in parts}
    return {k: json_list(np.concatenate(v), 6 if k == "value" else None) for k, v in parts.items()}


def running_share(all_runs: list[Run], t: int, figures: dict[str, tuple[str, str, str]]) -> Columns:
    """Outcome-card figures of the run so far, at every tick 0..t: ``figures`` maps a
    label to (numerator column, denominator column, card name); the value at tick i is
    Σ numerator / Σ denominator over ticks 0..i, as the card computes it after i + 1
    ticks (None where the denominator is still 0). {tick, series, policy, value}."""
    out: Columns = {"tick": [], "series": [], "policy": [], "value": []}
    for run in all_runs:
        for label, (num, den, _) in figures.items():
            if not (run.has(num) and run.has(den)):
                continue
            top, bottom = np.cumsum(run.ticks(num, t)), np.cumsum(run.ticks(den, t))
            with np.errstate(invalid="ignore", divide="ignore"):
                value = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)
            n = value.shape[0]
            out["tick"] += list(range(n))
            out["series"] += [label] * n
            out["policy"] += [run.policy] * n
            out["value"] += json_list(value, 6)
    return out


def refit_ticks(run: Run, t: int) -> Columns:
    """Ticks 1..t at whose start the decision model was refitted (``model_version``
    rose): {tick, version}."""
    if not run.has("model_version"):
        return {"tick": [], "version": []}
    version = run.ticks("model_version", t).astype(np.int64)
    at = np.flatnonzero(np.diff(version) > 0) + 1
    return {"tick": at.tolist(), "version": version[at].tolist()}


# -- one tick --------------------------------------------------------------------------------
def threshold_at(run: Run, t: int) -> float | None:
    """The acceptance threshold of tick t (None before the first tick)."""
    values = run.ticks("threshold", t, first=t) if t >= 0 else np.zeros(0)
    return json_list(values)[0] if values.shape[0] else None


def bin_edges(threshold: float | None, width: float = 0.05) -> np.ndarray:
    """Edges of equal bins of ``width`` covering [0, 1], one of them at ``threshold`` (the
    end bins are cut at 0 and 1), so that no bar mixes scores below the threshold with
    scores at or above it."""
    if threshold is None or not np.isfinite(threshold):
        return np.linspace(0.0, 1.0, int(round(1 / width)) + 1)
    below = int(np.ceil(threshold / width - 1e-9))
    above = int(np.ceil((1.0 - threshold) / width - 1e-9))
    # threshold + width * 0 is the threshold itself, to the last bit
    edges = threshold + width * np.arange(-below, above + 1)
    inner = edges[(edges > 0.0) & (edges < 1.0)]
    return np.concatenate([[0.0], inner, [1.0]])


def score_bins(run: Run, t: int) -> Columns:
    """Scores of tick t's applicants in bins of width 0.05 with an edge at the tick's
    threshold (:func:`bin_edges`), split by decision and stacked (accepted below): {lo,
    hi, count, decision, y0, y1} for non-empty parts, the bar of a part spanning y0..y1.
    A score at the threshold falls in the bin that starts there."""
    apps = run.apps(t, t)
    threshold = threshold_at(run, t)
    edges = bin_edges(threshold)
    bins = edges.shape[0] - 1
    score = apps["score"].astype(float) if apps else np.zeros(0)
    if threshold is not None:
        # a score off the threshold by round-off only is at it (Demo 1's tie: one
        # reapplicant 5e-16 below the other, both at the old threshold to 15 digits)
        score = np.where(np.abs(score - threshold) < TIE_TOL, threshold, score)
    accepted = apps["accepted"].astype(bool) if apps else np.zeros(0, dtype=bool)
    out: Columns = {"lo": [], "hi": [], "count": [], "decision": [], "y0": [], "y1": []}
    base = np.zeros(bins, dtype=np.int64)
    for label, mask in (("accepted", accepted), ("rejected", ~accepted)):
        idx = np.clip(np.searchsorted(edges, score[mask], side="right") - 1, 0, bins - 1)
        counts = np.bincount(idx, minlength=bins)
        keep = counts > 0
        out["lo"] += json_list(edges[:-1][keep], 6)
        out["hi"] += json_list(edges[1:][keep], 6)
        out["count"] += counts[keep].tolist()
        out["decision"] += [label] * int(keep.sum())
        out["y0"] += base[keep].tolist()
        out["y1"] += (base + counts)[keep].tolist()
        base = base + counts
    return out


def scores(run: Run, t: int) -> Columns:
    """Every applicant of tick t: {score, decision} (for a mark per applicant)."""
    apps = run.apps(t, t)
    if not apps:
        return {"score": [], "decision": []}
    accepted = apps["accepted"].astype(bool)
    return {
        "score": json_list(apps["score"].astype(float), 6),
        "decision": np.where(accepted, "accepted", "rejected").tolist(),
    }


def jitter(ids: np.ndarray, width: float = 0.5) -> np.ndarray:
    """(n,) sideways offsets in [-width/2, width/2), fixed per candidate id, so that one
    tick's points spread out the same way on every redraw."""
    return ((ids.astype(np.int64) * 0.6180339887) % 1.0 - 0.5) * width


def drawn_rows(tick: np.ndarray, accepted: np.ndarray, per_tick: int) -> np.ndarray:
    """Row indices to draw of applications in tick order: every accepted one, and of the
    others of each tick at most ``per_tick`` minus the accepted, evenly spread over the
    tick's rows (the same rows on every redraw: a tick's rows never change)."""
    keep = []
    starts = np.flatnonzero(np.r_[True, tick[1:] != tick[:-1]])
    for lo, hi in zip(starts, np.r_[starts[1:], tick.shape[0]], strict=True):
        rows = np.arange(lo, hi)
        acc = accepted[lo:hi]
        others = rows[~acc]
        room = max(per_tick - int(acc.sum()), 0)
        if others.shape[0] > room:
            others = (
                others[np.linspace(0, others.shape[0] - 1, room).round().astype(int)]
                if room
                else others[:0]
            )
        keep.append(np.sort(np.concatenate([rows[acc], others])))
    return np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64)


def applications(run: Run, t: int, window: int = 20, per_tick: int = 100) -> Columns:
    """Applications of ticks t-window+1..t as scatter points {x (tick plus a fixed
    jitter), tick, score, outcome, z (1 for the accepted, drawn on top), id, key ("tick/id":
    one application)}; per tick every accepted one and at most ``per_tick`` in all
    (:func:`drawn_rows`)."""
    apps = run.apps(t - window + 1, t)
    if not apps:
        return {"x": [], "tick": [], "score": [], "outcome": [], "z": [], "id": [], "key": []}
    rows = drawn_rows(apps["tick"].astype(np.int64), apps["accepted"].astype(bool), per_tick)
    apps = {c: a[rows] for c, a in apps.items()}
    ids = apps["cid"].astype(np.int64)
    tick = apps["tick"].astype(np.int64)
    outcome = outcomes(apps)
    return {
        "x": json_list(tick + jitter(ids), 4),
        "tick": tick.tolist(),
        "score": json_list(apps["score"].astype(float), 4),
        "outcome": outcome.tolist(),
        "z": (outcome == "accepted").astype(int).tolist(),
        "id": ids.tolist(),
        "key": [f"{a}/{b}" for a, b in zip(tick.tolist(), ids.tolist(), strict=True)],
    }


def application_note(run: Run, t: int, window: int = 20, per_tick: int = 100) -> Columns:
    """{text: [...]}: how many of the window's applications :func:`applications` draws,
    when it leaves some out (else no row)."""
    apps = run.apps(t - window + 1, t)
    if not apps:
        return {"text": []}
    n = apps["tick"].shape[0]
    drawn = drawn_rows(apps["tick"].astype(np.int64), apps["accepted"].astype(bool), per_tick)
    if drawn.shape[0] == n:
        return {"text": []}
    return {"text": [f"drawn: {drawn.shape[0]:,} of {n:,} (every accepted one)"]}


def thresholds(run: Run, t: int, window: int = 20) -> Columns:
    """The threshold of ticks t-window+1..t: {tick, threshold}."""
    first = max(t - window + 1, 0)
    values = run.ticks("threshold", t, first)
    return {"tick": list(range(first, first + values.shape[0])), "threshold": json_list(values, 6)}


def feature_effort(apps: dict[str, np.ndarray], difficulty: np.ndarray) -> dict[str, np.ndarray]:
    """Per feature (z of them): effort spent on changes made (Σ|dx| d where done), effort
    planned on changes that failed, and how often the feature was part of the advice:
    {spent (z,), failed (z,), asked (z,)}."""
    z = difficulty.shape[0]
    spent, failed, asked = np.zeros(z), np.zeros(z), np.zeros(z, dtype=np.int64)
    if apps:
        for i in range(z):
            dx = np.abs(apps[f"dx_{i}"].astype(float))
            ok = apps[f"ok_{i}"]
            spent[i] = float(np.add.reduce(dx[ok == 1])) * difficulty[i]
            failed[i] = float(np.add.reduce(dx[ok == 0])) * difficulty[i]
            asked[i] = int(np.count_nonzero(ok != -1))
    return {"spent": spent, "failed": failed, "asked": asked}


def effort(all_runs: list[Run], t: int, difficulty: np.ndarray) -> Columns:
    """Effort per feature over ticks 0..t, per policy: {feature, policy, effort ("spent"
    or "planned, failed"), value, difficulty, asked}."""
    z = difficulty.shape[0]
    out: Columns = {k: [] for k in ("feature", "policy", "effort", "value", "difficulty", "asked")}
    for run in all_runs:
        eff = feature_effort(run.apps(0, t), difficulty)
        for kind, label in (("spent", "spent"), ("failed", "planned, failed")):
            out["feature"] += [f"x{i}" for i in range(z)]
            out["policy"] += [run.policy] * z
            out["effort"] += [label] * z
            out["value"] += json_list(eff[kind], 6)
            out["difficulty"] += json_list(difficulty)
            out["asked"] += eff["asked"].tolist()
    return out


def causal_changes(all_runs: list[Run], t: int, z: int) -> Columns:
    """Feature change over ticks 0..t, per policy and feature: made by the applicants
    (Σ|dx| of changes done) and caused through the causal graph (Σ|dprop|):
    {feature, policy, change, value}."""
    out: Columns = {"feature": [], "policy": [], "change": [], "value": []}
    for run in all_runs:
        apps = run.apps(0, t)
        for i in range(z):
            made = caused = 0.0
            if apps:
                dx = np.abs(apps[f"dx_{i}"].astype(float))
                made = float(np.add.reduce(dx[apps[f"ok_{i}"] == 1]))
                if f"dprop_{i}" in apps:
                    caused = float(np.nansum(np.abs(apps[f"dprop_{i}"].astype(float))))
            for change, value in (("made", made), ("caused by the graph", caused)):
                out["feature"].append(f"x{i}")
                out["policy"].append(run.policy)
                out["change"].append(change)
                out["value"].append(round(value, 6))
    return out


# -- the applicant table and the agent view --------------------------------------------------
def change_text(dx: float) -> str:
    """A recommended change for people: two decimals, or every digit up to the first
    significant one when it is smaller (an applicant tied at the threshold is nudged by
    10⁻⁶: "+0.000001", never "+0.00")."""
    if abs(dx) >= 0.005:
        return f"{dx:+.2f}"
    return ("+" if dx >= 0 else "-") + np.format_float_positional(
        abs(dx), precision=1, unique=False, fractional=False, trim="-"
    )


def _advice(apps: dict[str, np.ndarray], z: int, outcome: np.ndarray) -> tuple[list, list]:
    """Per application: the advice as text ("x1 +0.12  x7 -0.05") and what came of it
    (all done / failed: x3 / gave up / no advice / — for the accepted)."""
    n = outcome.shape[0]
    if n == 0:
        return [], []
    dx = np.column_stack([apps[f"dx_{i}"].astype(float) for i in range(z)])
    ok = np.column_stack([apps[f"ok_{i}"] for i in range(z)])
    asked_any = (ok != -1).any(axis=1)
    advice = ["—"] * n
    result = np.where(outcome == "accepted", "—", NO_ADVICE).astype(object)
    result[outcome == "dropped"] = GAVE_UP
    for row in np.flatnonzero(asked_any):  # only the advised need text
        asked = np.flatnonzero(ok[row] != -1)
        advice[row] = "  ".join(f"x{i} {change_text(dx[row, i])}" for i in asked)
        if outcome[row] == "rejected":
            bad = asked[ok[row, asked] == 0]
            result[row] = (
                "all done" if bad.size == 0 else "failed: " + " ".join(f"x{i}" for i in bad)
            )
    return advice, result.tolist()


def _extra(apps: dict[str, np.ndarray], cols: Columns) -> None:
    for col in EXTRA_COLUMNS:
        if col in apps:
            cols[col] = json_list(apps[col], 3 if apps[col].dtype.kind == "f" else None)


def applicant_rows(run: Run, t: int, z: int) -> Columns:
    """Tick t's applicants, best score first: {id, attempt, score, outcome, goal, advice,
    result, achieved} plus the extension columns the run has (:data:`EXTRA_COLUMNS`)."""
    apps = run.apps(t, t)
    if not apps:
        return {}
    order = np.argsort(-apps["score"].astype(float), kind="stable")
    apps = {c: a[order] for c, a in apps.items()}
    outcome = outcomes(apps)
    advice, result = _advice(apps, z, outcome)
    cols: Columns = {
        "id": apps["cid"].tolist(),
        "attempt": apps["application"].tolist(),
        "score": json_list(apps["score"], 3),
        "outcome": outcome.tolist(),
        "goal": json_list(apps["goal"], 3),
        "advice": advice,
        "result": result,
        "achieved": json_list(apps["cf_score"], 3),
    }
    _extra(apps, cols)
    return cols


def applicant_history(run: Run, cid: int, t: int, z: int) -> Columns:
    """Every application of candidate ``cid`` up to tick t, oldest first: {tick, attempt,
    score, threshold, outcome, goal, advice, result, achieved} plus the extension columns
    and (causal graph) the changes the graph caused, as text."""
    apps = run.apps(0, t)
    if not apps:
        return {}
    mine = apps["cid"] == cid
    if not mine.any():
        return {}
    apps = {c: a[mine] for c, a in apps.items()}
    outcome = outcomes(apps)
    advice, result = _advice(apps, z, outcome)
    ticks = apps["tick"].astype(np.int64)
    threshold = run.ticks("threshold", t)[ticks]
    cols: Columns = {
        "tick": ticks.tolist(),
        "attempt": apps["application"].tolist(),
        "score": json_list(apps["score"], 3),
        "threshold": json_list(threshold, 3),
        "outcome": outcome.tolist(),
        "goal": json_list(apps["goal"], 3),
        "advice": advice,
        "result": result,
        "achieved": json_list(apps["cf_score"], 3),
    }
    _extra(apps, cols)
    if "dprop_0" in apps:
        dprop = np.nan_to_num(np.column_stack([apps[f"dprop_{i}"].astype(float) for i in range(z)]))
        cols["caused"] = [
            "  ".join(f"x{i} {change_text(d[i])}" for i in np.flatnonzero(np.abs(d) > 1e-12)) or "—"
            for d in dprop
        ]
    return cols


def applicant_exists(run: Run, cid: int, t: int) -> bool:
    """Whether ``cid`` applied at some tick 0..t."""
    apps = run.apps(0, t)
    return bool(apps) and bool(np.any(apps["cid"] == cid))


def card_rows(model: DashboardModel) -> list[dict[str, str]]:
    """The outcome card (abm/card.py) of the run so far, one row per figure defined for at
    least one policy: {"figure": label, <policy>: value, ...}; the same figures as
    ``recourse-abm run`` and the studies. Empty before the first tick."""
    if model.tick == 0:
        return []
    cards = [
        (p, m.outcome_card()) for p, m in zip(model.settings.policies, model.models(), strict=True)
    ]
    rows = []
    for name, label, _, _ in cards[0][1].rows():
        values = [c.values.get(name, float("nan")) for _, c in cards]
        if all(v != v for v in values):
            continue
        row = {"figure": label}
        row.update(
            {p: "–" if v != v else f"{v:.3g}" for (p, _), v in zip(cards, values, strict=True)}
        )
        rows.append(row)
    return rows
