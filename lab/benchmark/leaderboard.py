"""The leaderboard: one row per report card, generated from the shipped cards.

Cards are read from a folder (``results/benchmark/cards/*.json``), each checked to be of
this package's protocol version (:func:`lab.benchmark.card.read`: another version, or a
digest that is not its version's, is refused). Tiers are never mixed: each tier gets its
own tables. For each front, a table with one row per card and one column per preset:
the entry's RF minus the front's at equal RR, its interval, its verdict (bold when it
survives the card's Holm family) and the number of worlds where the distance is defined;
"not run" where the entry cannot run in the preset's world (its card says why).
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

#: card name -> registry spec, for each tier: the built-in entries of the shipped
#: leaderboard (``scripts/leaderboard_cards.py`` makes their cards)
BUILT_IN: dict[str, dict[str, str]] = {
    "full": {
        "threshold": "threshold",
        "threshold-estimated": "threshold-estimated",
        "threshold-explore": "threshold-explore",
        "threshold-true": "threshold-true",
        "margin-0.05-estimated": "last-threshold:margin=0.05+exact-linear:weights=estimated",
        "safear": "safear",
        "robust-l1": "robust-l1",
        "robust-l2": "robust-l2",
        "robust-linf": "robust-linf",
        "roar-l1": "roar-l1",
        "roar-linf": "roar-linf",
        "improve-linucb": "improve-linucb",
        "scarf-mlp": "scarf-mlp",
        "threshold-claproar": "threshold-claproar",
        "threshold-gravitational": "threshold-gravitational",
        "threshold-probe": "threshold-probe",
        "threshold-face": "threshold-face",
        "threshold-ustun": "threshold-ustun",
        "threshold-wachter": "threshold-wachter",
        # dice-ml's random method (on arrays: policies.baselines.dice_arrays)
        "threshold-dice": "threshold-dice",
        "improve-proto": "improve-proto",
        "improve-bwo": "improve-bwo",
        "scarf": "scarf",
        # privileged (it simulates the true model): an upper reference, not a method
        "lookahead": "lookahead",
        # learned: μ trained by the protocol's recipe in each preset (lab.benchmark.learned),
        # beside its baseline recommender
        "hybrid-exact-linear": "hybrid-exact-linear",
        "hybrid-ustun": "hybrid-ustun",
        "hybrid-wachter": "hybrid-wachter",
        "hybrid-dice": "hybrid-dice",
        # learned: φ trained by the recipe in each preset, the last threshold as its goal
        "rl-recommender": "rl-recommender",
        # learned: φ, then μ (eq. 16 at 10:1) with that φ inside
        "rl": "rl",
        # learned: φ, then μ with φ inside and its RR target (eq. 17)
        "rl-constrained": "rl-constrained",
    },
    # RBR as the five-families study runs it (50 samples, 20 inner steps): about 30 s a run,
    # about 20 minutes of 2 cores. The full tier would take 2-3x as long.
    "quick": {
        "rbr-50": "last-threshold+rbr:num_samples=50,inner_iter=20",
    },
}

#: built-in policies without a card, and why (docs/leaderboard.md says so)
NOT_ENTERED: dict[str, str] = {
    "none": "a baseline of every card",
    "ei": "is a world of its own (decision_model = 'ei'), in no preset of the protocol",
    "threshold-rbr": (
        "at its defaults about 10,000 s of one core for its 70 runs of the quick tier here "
        "(the command's estimate, 117-182 s a run); entered as `rbr-50` in the quick tier "
        "instead (the five-families study's 50 samples and 20 inner steps)"
    ),
}


def not_entered() -> str:
    """The built-in policies without a card, and why, as a Markdown list."""
    lines = []
    for names, why in NOT_ENTERED.items():
        ticked = ", ".join(f"`{n}`" for n in names.split(", "))
        lines.append(f"- {ticked}: {why}")
    return "\n".join(lines) + "\n"


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
        # the row's name: the file's (NAME-TIER.json), the spec where it is named otherwise
        stem = path.stem.removesuffix(f"-{doc['protocol']['tier']}")
        doc["_name"] = stem if stem and stem != path.stem else doc["policy"]["spec"]
        out.append(doc)
    return out


def _cell(row: dict[str, Any] | None, seeds: list[str] | None = None) -> str:
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
    alike = ""
    if seeds:  # a learned entry: in how many training seeds the mean's verdict holds
        same = sum(s.split(" (")[0] == verdict for s in seeds)
        alike = f"; {same} of {len(seeds)} seeds alike"
    return f"{text} ({n} world{'s' * (n != 1)}{alike})"


#: the tables of each tier after RR and RF: (front, figure, what the cell is)
TABLES = (
    *(
        (front, "rf_at_equal_rr", f"RF − the front of {t} at equal RR")
        for front, t in FRONT_TITLES.items()
    ),
    ("margin-estimated", "rr_at_equal_rf", "RR − the front of learned costs at equal RF"),
)


def _means(doc: dict[str, Any], preset: str) -> str:
    if preset in doc.get("not_run", {}):
        return "not run"
    got = {
        r["figure"]: r["mean"]
        for r in doc["card"]
        if r["preset"] == preset and r["policy"] == doc["policy"]["spec"]
    }
    if "rr" not in got or "rf" not in got:
        return "–"
    return f"{got['rr']:.3f} / {got['rf']:.3f}"


def markdown(folder: str | Path) -> str:
    """The leaderboard of the cards under ``folder`` as Markdown (docs/leaderboard.md): per
    tier, the entries' RR / RF, then one table per front distance of :data:`TABLES`."""
    docs = cards(folder)
    if not docs:
        return f"No {VERSION} card is shipped yet."
    out = []
    for tier in TIERS:
        mine = sorted((d for d in docs if d["protocol"]["tier"] == tier), key=lambda d: d["_name"])
        if not mine:
            continue
        proto = protocol(tier)
        out.append(
            f"### {tier} tier ({len(mine)} card{'s' * (len(mine) != 1)}; {proto.worlds} worlds "
            f"x {proto.episodes} episode{'s' * (proto.episodes != 1)}, digest "
            f"`{proto.digest()}`)"
        )
        head = "| entry | recourse-abm | " + " | ".join(f"`{p}`" for p in proto.presets) + " |"
        rule = "|---|---|" + "---|" * len(proto.presets)
        out += ["", "RR / RF (means over worlds):", "", head, rule]
        for doc in mine:
            cells = [_means(doc, p) for p in proto.presets]
            out.append(_row(doc, cells))
        named = [d for d in mine if d["_name"] != d["policy"]["spec"]]
        if named:
            out.append("")
            out += [f"`{d['_name']}` is `{d['policy']['spec']}`." for d in named]
        for d in (d for d in mine if "learned" in d):
            t = d["learned"]["training"]
            out += [
                "",
                f"`{d['_name']}` is learned: trained by the protocol in each preset, "
                f"{len(t['seeds'])} training seeds x {_recipe(t)} in worlds "
                f"{t['worlds'][0]}–{t['worlds'][-1]}; each figure is the mean over its seeds "
                "(docs/benchmark.md).",
            ]
        fronts = dict(proto.fronts)
        for front, figure, title in TABLES:
            if front not in fronts:
                continue
            out += ["", f"{title}:", "", head, rule]
            for doc in mine:
                rows = {
                    r["preset"]: r
                    for r in doc["fronts"]
                    if r["front"] == front and r["figure"] == figure
                }
                seeds: dict[str, list[str]] = {}
                for r in doc.get("learned", {}).get("seed_fronts", []):
                    if r["front"] == front and r["figure"] == figure:
                        seeds.setdefault(r["preset"], []).append(r.get("vs_front_verdict") or "")
                skipped = doc.get("not_run", {})
                cells = [
                    "not run" if p in skipped else _cell(rows.get(p), seeds.get(p))
                    for p in proto.presets
                ]
                out.append(_row(doc, cells))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _recipe(t: dict[str, Any]) -> str:
    """What a learned card's recipe trains (the fields its runs depend on): φ's episodes,
    then μ's ticks at α:τ (or at its own RR target, ``rl-constrained``)."""
    parts = []
    if "phi_episodes" in t:
        parts.append(f"φ of {t['phi_episodes']:,} episodes")
    if "steps" in t:
        judged = f" at α:τ = {t['alpha']:g}:{t['tau']:g}" if "alpha" in t else ""
        parts.append(f"μ of {t['steps']:,} ticks{judged}")
    return ", then ".join(parts)


def _row(doc: dict[str, Any], cells: list[str]) -> str:
    version = doc["package"]["recourse-abm"]
    return f"| `{doc['_name']}` | {version} | " + " | ".join(cells) + " |"
