"""Writing a run's results: per-tick table, candidate table, summary and plot."""

from __future__ import annotations

import json
import math
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from abm.app.plots import plot_metrics

VERSIONED = ("recourse-abm", "mesa", "numpy", "scipy", "scikit-learn", "pandas", "torch")


def versions() -> dict[str, str]:
    """Versions of Python and the packages that shape results."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(_json_safe(data), indent=2) + "\n")


def write_run(model, out: str | Path) -> dict[str, Any]:
    """Write ticks.parquet, candidates.parquet, summary.json and metrics.png under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ticks = model.tick_table()
    ticks.to_parquet(out / "ticks.parquet", index=False)
    if model.record_events:
        model.candidate_table().to_parquet(out / "candidates.parquet", index=False)
    summary = model.summary()
    summary["versions"] = versions()
    summary["config"] = model.config.to_dict()
    write_json(out / "summary.json", summary)
    plot_metrics(
        ticks,
        out / "metrics.png",
        title=f"{model.config.name} · {model.policy_name} · seed {model.config.seed}",
    )
    return summary
