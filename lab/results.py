"""Writing a run's results: per-tick table, candidate table, summary and plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from abm.provenance import RESULTS_SCHEMA, git_info, versions, write_json
from lab.plots import plot_extensions, plot_metrics

__all__ = ["versions", "write_json", "write_run"]


def artefacts_used(policy: Any) -> list[dict[str, Any]]:
    """Provenance records of the trained artefacts a policy (or its parts) loaded."""
    found: list[dict[str, Any]] = []
    for part in (policy, getattr(policy, "goal", None), getattr(policy, "recommender", None)):
        describe = getattr(part, "provenance", None)
        if callable(describe):
            found += [r for r in describe() if r not in found]
    return found


def write_run(model, out: str | Path) -> dict[str, Any]:
    """Write ticks.parquet, candidates.parquet, summary.json and metrics.png (and, with a
    world extension on, extensions.png) under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ticks = model.tick_table()
    ticks.to_parquet(out / "ticks.parquet", index=False)
    if model.record_events:
        model.candidate_table().to_parquet(out / "candidates.parquet", index=False)
    summary = model.summary()
    card = model.outcome_card()
    summary["card"] = card.values
    summary["card_reasons"] = card.reasons
    summary["results_schema"] = RESULTS_SCHEMA
    summary["policy_spec"] = model.policy_name
    summary["artefacts"] = artefacts_used(model.policy)
    summary["git"] = git_info()
    summary["versions"] = versions()
    summary["config"] = model.config.to_dict()
    write_json(out / "summary.json", summary)
    plot_metrics(
        ticks,
        out / "metrics.png",
        title=f"{model.config.name} · {model.policy_name} · seed {model.config.seed}",
    )
    if model.config.mechanisms:
        plot_extensions(
            ticks,
            out / "extensions.png",
            title=f"{model.config.name} · {model.policy_name} · seed {model.config.seed}",
        )
    return summary
