"""The cross-CPU contract for golden results (docs/architecture.md, "Results that travel").

Run on another CPU, or under other kernel choices, a golden case must give:

* every discrete value identical: integer, boolean and text columns (who is accepted, who
  drops out, which changes are asked and which succeed, each exit), the row count, the
  column names and dtypes, and where a float is NaN (who is advised, which metric is
  defined);
* every float within ``|got - ref| <= ATOL + rtol * |ref|``: ``RTOL_64`` for float64,
  ``RTOL_32`` (two float32 units in the last place: rounding a float64 that moved in its
  last digits to float32 may cross one rounding boundary) for float32; infinities equal.

On one machine with the same package versions results are bitwise equal; the fingerprints
in golden.json say whether they were (:attr:`Verdict.bitwise`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from abm.provenance import FLOAT_ATOL, FLOAT_RTOL

RTOL_64 = FLOAT_RTOL
RTOL_32 = 2.0**-22
ATOL = FLOAT_ATOL


@dataclass(frozen=True)
class Difference:
    """One column (or summary field) that breaks the contract, at its first row."""

    where: str  # "candidates.accepted", "summary.rr", "candidates" (shape), ...
    row: int | None
    expected: Any
    got: Any
    n_rows: int = 1  # how many rows of the column break it
    context: str = ""  # e.g. "tick 7, cid 12"
    discrete: bool = True
    abs_diff: float = float("nan")
    rel_diff: float = float("nan")
    tick: int | None = None  # the tick of the first row, where the table has one

    def __str__(self) -> str:
        at = (
            ""
            if self.row is None
            else f" row {self.row}" + (f" ({self.context})" if self.context else "")
        )
        size = (
            "" if self.discrete else f", |diff| {self.abs_diff:.3g}, relative {self.rel_diff:.3g}"
        )
        more = f" ({self.n_rows} rows differ)" if self.n_rows > 1 else ""
        return f"{self.where}{at}: got {self.got!r}, reference {self.expected!r}{size}{more}"


@dataclass
class Verdict:
    """What comparing one case found; ``ok`` when the contract holds."""

    differences: list[Difference] = field(default_factory=list)
    bitwise: bool = False
    worst_rel: float = 0.0  # largest relative float difference that stayed within tolerance
    worst_where: str = ""

    @property
    def ok(self) -> bool:
        return not self.differences

    def message(self, case: str) -> str:
        # the earliest tick first, discrete outcomes before the floats they move
        ordered = sorted(
            self.differences,
            key=lambda d: (
                d.tick is None and d.row is not None,
                d.tick or 0,
                not d.discrete,
                d.row or 0,
                d.where,
            ),
        )
        lines = [f"golden case {case}: {len(ordered)} breaks of the cross-CPU contract"]
        lines += [f"  {d}" for d in ordered[:12]]
        if len(ordered) > 12:
            lines.append(f"  ... and {len(ordered) - 12} more")
        return "\n".join(lines)

    def note(self, where: str, rel: float) -> None:
        if rel > self.worst_rel:
            self.worst_rel, self.worst_where = rel, where


def _context(df: pd.DataFrame, row: int) -> str:
    parts = [f"{c} {df[c].iloc[row]}" for c in ("tick", "cid", "episode", "step") if c in df]
    return ", ".join(parts)


def compare_frames(
    name: str,
    ref: pd.DataFrame,
    got: pd.DataFrame,
    verdict: Verdict,
    tol: tuple[float, float] = (RTOL_64, ATOL),
) -> None:
    """Add to ``verdict`` every column of ``got`` that breaks the contract against ``ref``;
    ``tol`` = (rtol, atol) replaces (RTOL_64, ATOL) for a stated exception (float32
    columns keep at least RTOL_32)."""
    if list(got.columns) != list(ref.columns):
        verdict.differences.append(
            Difference(f"{name} columns", None, list(ref.columns), list(got.columns))
        )
        return
    if len(got) != len(ref):
        verdict.differences.append(Difference(f"{name} rows", None, len(ref), len(got)))
    n = min(len(got), len(ref))
    for col in ref.columns:
        where = f"{name}.{col}"
        a, b = got[col].to_numpy()[:n], ref[col].to_numpy()[:n]
        if got[col].dtype != ref[col].dtype:
            verdict.differences.append(
                Difference(f"{where} dtype", None, str(ref[col].dtype), str(got[col].dtype))
            )
            continue
        if b.dtype.kind == "f":
            diff = _float_difference(where, a, b, verdict, tol)
        else:
            bad = np.asarray(a != b, dtype=bool)
            diff = _first(where, bad, a, b, discrete=True)
        if diff is not None:
            row = diff.row
            tick = int(ref["tick"].iloc[row]) if "tick" in ref and row is not None else None
            verdict.differences.append(_with_context(diff, _context(ref, row), tick))


def _float_difference(
    where: str, a: np.ndarray, b: np.ndarray, verdict: Verdict, tol: tuple[float, float]
):
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if (nan_a != nan_b).any():  # defined here, undefined there: a discrete change
        return _first(where, nan_a != nan_b, a, b, discrete=True)
    fin = np.isfinite(b) & np.isfinite(a)
    inf_bad = ~fin & ~nan_b & (a != b)
    if inf_bad.any():
        return _first(where, inf_bad, a, b, discrete=True)
    rtol, atol = tol
    if b.dtype == np.float32:
        rtol = max(rtol, RTOL_32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    err = np.where(fin, np.abs(a64 - b64), 0.0)
    scale = np.abs(b64)
    bad = err > atol + rtol * scale
    rel = np.divide(err, scale, out=np.where(err > 0, np.inf, 0.0), where=scale > 0)
    if not bad.any():
        if err.size and err.max() > 0:
            verdict.note(where, float(np.max(np.where(err > atol, rel, 0.0))))
        return None
    d = _first(where, bad, a, b, discrete=False)
    return Difference(
        d.where,
        d.row,
        d.expected,
        d.got,
        d.n_rows,
        discrete=False,
        abs_diff=float(err[d.row]),
        rel_diff=float(rel[d.row]),
    )


def _first(where: str, bad: np.ndarray, a: np.ndarray, b: np.ndarray, discrete: bool):
    if not bad.any():
        return None
    row = int(bad.argmax())
    return Difference(where, row, _plain(b[row]), _plain(a[row]), int(bad.sum()), discrete=discrete)


def _with_context(d: Difference, context: str, tick: int | None) -> Difference:
    return Difference(
        d.where,
        d.row,
        d.expected,
        d.got,
        d.n_rows,
        context,
        d.discrete,
        d.abs_diff,
        d.rel_diff,
        tick,
    )


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def compare_summary(
    ref: dict[str, Any],
    got: dict[str, Any],
    verdict: Verdict,
    tol: tuple[float, float] = (RTOL_64, ATOL),
) -> None:
    """Summaries as stored in golden.json: non-finite floats as their repr ("nan")."""
    for key in sorted(set(ref) | set(got)):
        a, b = got.get(key, "<missing>"), ref.get(key, "<missing>")
        where = f"summary.{key}"
        if isinstance(a, float) and isinstance(b, float):
            err = abs(a - b)
            rtol, atol = tol
            if err > atol + rtol * abs(b):
                rel = err / abs(b) if b else float("inf")
                verdict.differences.append(
                    Difference(where, None, b, a, discrete=False, abs_diff=err, rel_diff=rel)
                )
            elif err > atol:
                verdict.note(where, err / abs(b))
        elif a != b or type(a) is not type(b):
            verdict.differences.append(Difference(where, None, b, a))
