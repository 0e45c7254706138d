"""The golden cases: scenario, policy, seed and overrides whose tables must never drift.

A case's tables are fingerprinted by :func:`fingerprint` (SHA-256 of a canonical CSV
whose floats are written with ``repr``, so equal fingerprints mean bitwise-equal
values). ``generate.py`` writes ``golden.json``; ``tests/test_golden.py`` recomputes.
Regenerate only with a CHANGELOG line saying which figures changed and why.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from typing import Any

import pandas as pd

_CHEAP = ("none", "threshold", "threshold-true", "threshold-estimated")
_SCENARIOS = ("paper", "paper-T5", "paper-hard", "paper-T5-hard", "motivating-example")

CASES: list[dict[str, Any]] = [
    {"scenario": s, "policy": p, "seed": seed}
    for s in _SCENARIOS
    for p in _CHEAP
    for seed in (0, 1)
]
CASES += [
    {"scenario": "paper", "policy": "last-threshold:margin=0.05+exact-linear:weights=estimated", "seed": 3},
    {"scenario": "paper", "policy": "safear", "seed": 0, "ticks": 30, "risk_aversion": [0.0, 2.0], "slow": True},
    {"scenario": "paper-T5", "policy": "safear:beta_risk=1", "seed": 2, "ticks": 20},
    {"scenario": "paper", "policy": "threshold-ustun", "seed": 0, "ticks": 15, "slow": True},
    {"scenario": "paper", "policy": "threshold-wachter", "seed": 0, "ticks": 15, "slow": True},
    {"scenario": "paper", "policy": "none", "seed": 0, "ticks": 30, "decision_model": "mlp", "slow": True},
    {"scenario": "paper", "policy": "threshold-wachter", "seed": 1, "ticks": 10, "decision_model": "mlp", "slow": True},
    {"scenario": "paper", "policy": "rl", "seed": 0, "ticks": 20},
    {"scenario": "paper", "policy": "rl-recommender", "seed": 0, "ticks": 20},
    {"scenario": "paper", "policy": "hybrid-exact-linear", "seed": 1, "ticks": 20},
    {"scenario": "paper-T5", "policy": "lookahead", "seed": 0, "ticks": 8},
    {"scenario": "large", "policy": "threshold", "seed": 0, "ticks": 4,
     "n_initial": 3000, "m": 3000, "k": 2700},
    {"scenario": "paper", "policy": "threshold-dice", "seed": 0, "ticks": 2, "needs": "dice_ml", "slow": True},
]  # fmt: skip


_TAGS = ("needs", "slow")  # test tags, not parameters of the case


def case_id(case: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items() if k not in _TAGS)


def fingerprint(df: pd.DataFrame) -> str:
    """SHA-256 of ``df`` as CSV with exact float text (repr) and its dtypes."""
    buf = io.StringIO()
    buf.write(",".join(f"{c}:{t}" for c, t in df.dtypes.astype(str).items()) + "\n")
    df.to_csv(buf, index=False, float_format=None)
    return hashlib.sha256(buf.getvalue().encode()).hexdigest()


def json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "item"):
        return json_safe(value.item())
    return value


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """Summary and table fingerprints of one case (imports the model lazily)."""
    from abm import RecourseModel

    kwargs = {k: v for k, v in case.items() if k not in ("scenario", "policy", "seed", *_TAGS)}
    model = RecourseModel(
        case["scenario"], case["policy"], seed=case["seed"], agents=False, **kwargs
    )
    model.run()
    summary = json_safe(model.summary())
    summary.pop("policy", None)  # the display name may change with the registry; results may not
    return {
        "summary": summary,
        "ticks": fingerprint(model.tick_table()),
        "candidates": fingerprint(model.candidate_table()),
    }


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"
