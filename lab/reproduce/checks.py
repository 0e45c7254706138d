"""The pass/fail criteria a paper reproduction reports (``checks.csv``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import pandas as pd


@dataclass(frozen=True)
class Check:
    """One criterion of a reproduction: what, our value, the target, and whether it holds."""

    name: str
    value: float
    target: str
    ok: bool


def checks_frame(items: list[Check]) -> pd.DataFrame:
    """One row per check (columns name, value, target, ok), also when there is none."""
    return pd.DataFrame([asdict(c) for c in items], columns=[f.name for f in fields(Check)])
