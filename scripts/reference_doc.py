"""Write the generated tables of docs/reference/tables.md from the code: the presets, the
registered policies and their parts, the tick and candidate columns, the episode summary's
figures with the CLI's labels, and the scenario fields with their defaults and allowed values;
and docs/own-data.md's table of the policies that keep one-way features and one-hot groups.

    python scripts/reference_doc.py            # rewrite the blocks
    python scripts/reference_doc.py --check    # exit 1 if a block is stale (tests/test_docs.py)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from lab.docblocks import fill_block

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference" / "tables.md"
OWN_DATA = DOC.parents[1] / "own-data.md"
COMMAND = "python scripts/reference_doc.py"


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def presets() -> str:
    from abm.scenarios import PRESETS

    rows = ["| preset | mechanisms on | description |", "|---|---|---|"]
    for name, cfg in PRESETS.items():
        mechanisms = ", ".join(sorted(cfg.mechanisms)) or "–"
        rows.append(f"| `{name}` | {mechanisms} | {_cell(cfg.description)} |")
    return "\n".join(rows)


def parts() -> str:
    from abm.registry import KINDS, Registry

    registry = Registry()
    label = {"policy": "policy", "goal": "goal selector", "recommender": "recommender"}
    rows = ["| name | kind | parameters | description |", "|---|---|---|---|"]
    for kind in KINDS:
        for name, entry in registry.entries(kind).items():
            params = ", ".join(f"`{p}`" for p in registry.allowed_params(entry)) or "–"
            rows.append(f"| `{name}` | {label[kind]} | {params} | {_cell(entry.description)} |")
    return "\n".join(rows)


def one_way() -> str:
    """Each registered policy: whether it keeps one-way features and one-hot groups (its
    declarations) and whether it takes max_changes."""
    from abm.advice import keeps_one_way, keeps_onehot
    from abm.registry import Registry
    from abm.validation import ConfigError

    registry = Registry()
    rows = [
        "| policy | keeps one-way features | keeps one-hot groups | `max_changes` |",
        "|---|---|---|---|",
    ]
    for name, entry in registry.entries("policy").items():
        policy = registry.make_policy(name)
        keeps = "yes" if keeps_one_way(policy) else "no: refused"
        groups = "yes" if keeps_onehot(policy) else "no: refused"
        cap = "–"
        if "max_changes" in registry.allowed_params(entry):
            try:  # a default may exclude it (threshold-explore: exploring fills freely)
                registry.make_policy(f"{name}:max_changes=1")
                cap = "yes"
            except ConfigError:
                pass
        rows.append(f"| `{name}` | {keeps} | {groups} | {cap} |")
    return "\n".join(rows)


def _columns(table) -> list[str]:
    names: list[str] = []
    for col in table.columns:
        name = re.sub(r"_\d+$", "_i", col)  # one entry per per-feature family
        if name not in names:
            names.append(name)
    return names


def columns() -> dict[str, str]:
    from abm.model import RecourseModel

    plain = RecourseModel("paper", "threshold", seed=0, ticks=2, agents=False).run()
    every = RecourseModel("lending", "threshold", seed=0, ticks=2, agents=False).run()
    out = {}
    for name, method in (("ticks", "tick_table"), ("candidates", "candidate_table")):
        base = _columns(getattr(plain, method)())
        extra = [c for c in _columns(getattr(every, method)()) if c not in base]
        out[name] = (
            "every run: " + ", ".join(f"`{c}`" for c in base) + "\n\n"
            "with the world mechanisms on (`lending`): "
            + (", ".join(f"`{c}`" for c in extra) or "none")
        )
    return out


def summary() -> str:
    from abm.mechanisms import episode_figures, registered

    owner = {f.column: m.name for m in registered() for f in m.episode}
    how = {"sum": "episode total", "mean": "mean over defined ticks", "last": "last tick"}
    rows = ["| key | from | how | CLI label |", "|---|---|---|---|"]
    for f in episode_figures():
        label = _cell(f.label) if f.label else "(not shown)"
        made = how.get(f.how, "computed by the extension")
        rows.append(f"| `{f.column}` | {owner.get(f.column, 'every run')} | {made} | {label} |")
    return "\n".join(rows)


def fields() -> str:
    from abm.config import ScenarioConfig
    from abm.validation import field_allowed

    rows = ["| field | default | allowed |", "|---|---|---|"]
    for name, info in ScenarioConfig.fields().items():
        default = info.get_default(call_default_factory=True)
        allowed = field_allowed(info) or "–"
        rows.append(f"| `{name}` | `{_cell(default)}` | {_cell(allowed)} |")
    return "\n".join(rows)


def blocks() -> dict[str, str]:
    cols = columns()
    return {
        "presets": presets(),
        "policies": parts(),
        "tick-columns": cols["ticks"],
        "candidate-columns": cols["candidates"],
        "episode-summary": summary(),
        "fields": fields(),
    }


def main() -> int:
    check = "--check" in sys.argv[1:]
    status = 0
    for name, body in blocks().items():
        status |= fill_block(DOC, name, body, check=check, command=COMMAND)
    status |= fill_block(OWN_DATA, "one-way", one_way(), check=check, command=COMMAND)
    return status


if __name__ == "__main__":
    sys.exit(main())
