"""The leaderboard: one row per report card, generated from the shipped cards.

Cards are read from a folder (``results/benchmark/cards/*.json``), each checked to be of
this package's protocol version (:func:`lab.benchmark.card.read`: another version, or a
digest that is not its version's, is refused). Tiers are never mixed: each tier gets its
own tables. For each front, a table with one row per card and one column per preset:
the entry's RF minus the front's at equal RR, its interval, its verdict (bold when it
survives the card's Holm family) and the number of worlds where the distance is defined.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from abm.provenance import RESULTS_SCHEMA
from lab.benchmark.card import CardError, read
from lab.benchmark.protocol import TIERS, VERSION, protocol

#: the shipped cards the docs' leaderboard is generated from
CARDS = Path("results/benchmark/cards")

FRONT_TITLES = {
    "margin-exact-linear": "uniform costs",
    "margin-estimated": "learned costs (estimated d)",
    "margin-true": "true costs (true d, privileged)",
}
_SURVIVES = ("beats", "trails", "matches")


def cards(folder: str | Path) -> list[dict[str, Any]]:
    """Every card under ``folder`` (``*.json``, sorted by name), each read and checked: of
    this protocol version (:func:`lab.benchmark.card.read`) and of the current results
    schema (an older card is rerun, not shown beside new ones)."""
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        doc = read(path)
        if doc.get("results_schema") != RESULTS_SCHEMA:
            raise CardError(
                f"card = {path.name!r} is of results schema {doc.get('results_schema')}, "
                f"not {RESULTS_SCHEMA}: rerun `recourse-abm benchmark {doc['policy']['spec']}`"
            )
        out.append(doc)
    return out


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "–"
    d = row.get("vs_front")
    verdict = row.get("vs_front_verdict") or ""
    if d is None:
        return verdict or "–"
    lo, hi = row.get("vs_front_lo"), row.get("vs_front_hi")
    text = f"{d:+.3f}" + ("" if lo is None or hi is None else f" [{lo:+.3f}, {hi:+.3f}]")
    n = int(row.get("vs_front_worlds") or 0)
    verdict = verdict.split(" (")[0]  # "inconclusive (4 worlds)": the count follows anyway
    text = f"**{text}** {verdict}" if verdict in _SURVIVES else f"{text} {verdict}"
    return f"{text} ({n} world{'s' * (n != 1)})"


def markdown(folder: str | Path) -> str:
    """The leaderboard of the cards under ``folder`` as Markdown (docs/leaderboard.md)."""
    docs = cards(folder)
    if not docs:
        return f"No {VERSION} card is shipped yet."
    out = []
    for tier in TIERS:
        mine = [d for d in docs if d["protocol"]["tier"] == tier]
        if not mine:
            continue
        proto = protocol(tier)
        out.append(
            f"### {tier} tier ({len(mine)} card{'s' * (len(mine) != 1)}; {proto.worlds} worlds "
            f"x {proto.episodes} episodes, digest `{proto.digest()}`)"
        )
        for front, _ in proto.fronts:
            out += ["", f"RF − the front of {FRONT_TITLES.get(front, front)} at equal RR:", ""]
            out.append(
                "| entry | recourse-abm | " + " | ".join(f"`{p}`" for p in proto.presets) + " |"
            )
            out.append("|---|---|" + "---|" * len(proto.presets))
            for doc in sorted(mine, key=lambda d: d["policy"]["spec"]):
                rows = {
                    r["preset"]: r
                    for r in doc["fronts"]
                    if r["front"] == front and r["figure"] == "rf_at_equal_rr"
                }
                cells = [_cell(rows.get(p)) for p in proto.presets]
                version = doc["package"]["recourse-abm"]
                out.append(f"| `{doc['policy']['spec']}` | {version} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
