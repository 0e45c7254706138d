"""``recourse-abm whatif -s my.toml``: on one's own world, which recourse policies reach a
target RR, with which RF and at what cost (issue 53, item 4).

The benchmark's protocol (:mod:`lab.benchmark`) on one world instead of its presets: the
baselines (``none``, ``threshold``, the constant-margin fronts) and the chosen policies run
on the same worlds and paired episodes, resumable in a store; each figure is a mean over
worlds with the protocol's interval, each policy's paired differences to ``none`` and
``threshold`` one BH family, its distances to the fronts one Holm family.

A world is a world seed in a synthetic scenario (its decision model and population), and
an episode seed in a ``[data]`` scenario, whose world seed changes nothing where the
classifier is deterministic: there the worlds differ by their arrivals, resampled from
the table with each seed.

A policy *reaches* the target when the lower end of its RR interval is at or above it,
*may reach* it when only its mean is, and *falls short* otherwise. Among those that reach
it the report names the one with the best RF and the one with the cheapest advice
(``cost_recommended``), each with its interval: a ranking by means, which the paired
verdicts beside them qualify.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from abm import __version__
from abm.config import ScenarioConfig
from abm.provenance import RESULTS_SCHEMA
from abm.validation import ConfigError, problem
from lab.benchmark.protocol import Protocol, protocol
from lab.benchmark.run import judge, protocol_study
from lab.study.analysis import figures_on

#: the quick list: the protocol's baselines come on top (none, threshold, the fronts)
QUICK_POLICIES = (
    "none",
    "threshold",
    "robust-l1",
    "roar-l1",
    "safear",
    "threshold-wachter",
    "threshold-claproar",
    "threshold-gravitational",
)
#: the figures of the short table (terminal, Markdown): RR, RF, the advice's cost
HEADLINE = ("rr", "rf", "cost_recommended")
#: what the summary table shows of each policy, in order
SHOWN = ("rr", "rf", "cost_recommended", "cost_incurred", "accept_rate")
GAPS = ("accept_gap", "rr_gap", "rf_gap")
DEFAULT_STORE = Path("results/whatif/store")
KIND = "recourse-abm what-if report"


@dataclass
class WhatIf:
    """What one what-if run produced."""

    scenario: str
    config: ScenarioConfig
    target_rr: float
    protocol: Protocol
    policies: list[str]  # the policies judged (the baselines not among them)
    runs: pd.DataFrame  # one row per run: policy, world_seed (the world), seed, run_id, figures
    table: pd.DataFrame  # one row per policy judged: figures with intervals, reach, verdicts
    fronts: pd.DataFrame  # two rows per (policy, front), with verdicts
    margins: pd.DataFrame  # per front, its smallest margin that reaches the target (if any)
    not_run: dict[str, str]  # policies the world cannot run -> why
    seconds: float

    def best(self, figure: str, higher: bool) -> str | None:
        """The policy that reaches the target with the best mean ``figure``."""
        ok = self.table[self.table["reach"] == "reaches"].dropna(subset=[figure])
        if ok.empty:
            return None
        return str(ok.sort_values(figure, ascending=not higher, kind="stable").iloc[0]["policy"])


def scenario_config(scenario: str | Path) -> ScenarioConfig:
    """A preset name or a scenario file, as every command reads it."""
    from abm.scenarios import resolve_scenario

    return resolve_scenario(str(scenario))


def runnable(config: ScenarioConfig, policies: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(``policies`` the world runs, the others -> the one-line reason): building an
    episode prepares the policy, which refuses a world it cannot serve."""
    from abm.model import RecourseModel

    ok, why = [], {}
    for policy in policies:
        try:
            RecourseModel(config.replace(ticks=1), policy, agents=False)
        except ConfigError as exc:
            why[policy] = str(exc).splitlines()[0]
        else:
            ok.append(policy)
    return ok, why


def study_of(scenario: str, config: ScenarioConfig, policies: list[str], proto: Protocol):
    """The one study: every policy on the protocol's worlds (world seeds, or episode seeds
    in a [data] world) and episodes."""
    description = f"what if ({proto.version}, {proto.tier}): {scenario}"
    if config.data is None:
        return protocol_study(proto, "whatif", description, scenario, policies)
    seeds = range(proto.worlds * proto.episodes)
    return protocol_study(proto, "whatif", description, scenario, policies, seeds, [0])


def reach(lo: float, mean: float, target: float) -> str:
    """Whether an RR interval [lo, ...] with ``mean`` reaches ``target``."""
    if not math.isfinite(mean):
        return "undefined"
    if lo >= target:
        return "reaches"
    return "may reach" if mean >= target else "falls short"


def check_target(target_rr: float) -> float:
    """``target_rr`` as a float, or the one-line error."""
    ok = isinstance(target_rr, int | float) and not isinstance(target_rr, bool)
    if not (ok and 0.0 < target_rr <= 1.0):
        raise ConfigError(problem("--target-rr", target_rr, "a number in (0, 1]"))
    return float(target_rr)


def check_policies(policies: Sequence[str]) -> list[str]:
    """``policies`` without repeats, each a valid registry spec, or the one-line error."""
    from abm.registry import REGISTRY

    wanted = list(dict.fromkeys(policies))
    for spec in wanted:
        try:
            REGISTRY.validate(spec)
        except ValueError as exc:
            raise ConfigError(str(exc).splitlines()[0]) from None
    return wanted


def run_whatif(
    scenario: str | Path,
    *,
    policies: Sequence[str] | None = None,
    target_rr: float = 0.9,
    tier: str = "quick",
    store: str | Path = DEFAULT_STORE,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
) -> WhatIf:
    """Run the what-if study on ``scenario`` (resumable in ``store``) and judge it."""
    from lab.study import collect

    target = check_target(target_rr)
    proto = protocol(tier)  # type: ignore[arg-type]
    wanted = check_policies(QUICK_POLICIES if policies is None else policies)
    config = scenario_config(scenario)
    baselines = proto.baseline_policies()
    every, not_run = runnable(config, list(dict.fromkeys([*wanted, *baselines])))
    for policy, why in not_run.items():
        log(f"{policy}: not run ({why})")
    if "threshold" not in every or "none" not in every:
        raise ConfigError(
            f"the baselines none and threshold cannot both run on {scenario}: "
            + "; ".join(f"{p}: {w}" for p, w in not_run.items() if p in ("none", "threshold"))
        )
    started = time.perf_counter()
    study = study_of(str(scenario), config, every, proto)
    log(f"{study.n_runs} runs")
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", Path(str(scenario)).stem)
    folder = Path(store) / re.sub(r"[^A-Za-z0-9.]+", "-", proto.version) / __version__ / slug
    _, runs = collect(study, folder, workers=workers, progress=progress)
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        first = failed.iloc[0]
        raise RuntimeError(f"{first['policy']} failed: {first['error']}")
    if config.data is not None:  # the episodes are the worlds (their arrivals differ)
        runs = runs.assign(world_seed=runs["seed"], seed=0)
    runs = runs.assign(preset=slug)
    figures = figures_on(proto.figures, config)
    judged = [p for p in wanted if p in every and p not in proto.baselines]
    rows, fronts = [], []
    for policy in [*(p for p in proto.baselines if p in every), *judged]:
        part = runs[runs["policy"].isin([policy, *baselines])]
        card, front = judge(part, policy, proto, figures)
        rows.append(_row(card[card["policy"] == policy], policy, target))
        if policy not in proto.baselines and len(front):
            fronts.append(front.assign(policy=policy))
    table = pd.DataFrame(rows)
    front_table = pd.concat(fronts, ignore_index=True) if fronts else pd.DataFrame()
    return WhatIf(
        str(scenario),
        config,
        target,
        proto,
        judged,
        runs,
        table,
        front_table,
        front_margins(runs, proto, target),
        not_run,
        time.perf_counter() - started,
    )


def front_margins(runs: pd.DataFrame, proto: Protocol, target: float) -> pd.DataFrame:
    """Per front, its first margin (the grid ascends) whose RR interval reaches ``target``:
    the constant-margin answer, with its RR and RF intervals over worlds."""
    from lab.study.analysis import policy_cells
    from lab.study.stats import world_interval

    out = []
    for name, grid in proto.front_policies().items():
        if not set(grid) <= set(runs["policy"]):
            continue
        cells = policy_cells(runs[runs["policy"].isin(grid)], ("rr", "rf"))
        for margin, spec in zip(proto.margins, grid, strict=True):
            rr, rf = (world_interval(cells[spec][f]) for f in ("rr", "rf"))
            if reach(rr[1], rr[0], target) == "reaches":
                out.append(
                    {"front": name, "margin": margin, "policy": spec}
                    | {f"rr{k}": v for k, v in zip(("", "_lo", "_hi"), rr[:3], strict=True)}
                    | {f"rf{k}": v for k, v in zip(("", "_lo", "_hi"), rf[:3], strict=True)}
                )
                break
    return pd.DataFrame(out)


def _row(card: pd.DataFrame, policy: str, target: float) -> dict[str, Any]:
    """One policy's line: each figure's mean and interval, the paired verdicts against
    threshold, and whether RR reaches the target."""
    out: dict[str, Any] = {"policy": policy}
    by = card.set_index("figure")
    for f in (*SHOWN, *GAPS):
        if f not in by.index:
            continue
        r = by.loc[f]
        out[f], out[f"{f}_lo"], out[f"{f}_hi"] = (float(r[k]) for k in ("mean", "lo", "hi"))
        if "vs_threshold_verdict" in r and isinstance(r["vs_threshold_verdict"], str):
            out[f"{f}_vs_threshold"] = r["vs_threshold_verdict"]
        out["worlds"] = int(r["worlds"])
    out["reach"] = reach(out.get("rr_lo", math.nan), out.get("rr", math.nan), target)
    return out


# -- the report ---------------------------------------------------------------------------------
def to_json(result: WhatIf) -> dict[str, Any]:
    """The report as plain data: versions, the scenario, the protocol, the seeds, the run
    ids, the table and the front verdicts."""
    proto = result.protocol

    def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
        if frame.empty:
            return []
        return json.loads(frame.to_json(orient="records"))

    return {
        "kind": KIND,
        "recourse_abm": __version__,
        "results_schema": RESULTS_SCHEMA,
        "protocol": proto.version,
        "tier": proto.tier,
        "scenario": result.scenario,
        "config": portable(result.config.to_dict()),
        "target_rr": result.target_rr,
        "worlds": sorted(int(w) for w in result.runs["world_seed"].unique()),
        "worlds_are": "episode seeds" if result.config.data is not None else "world seeds",
        "policies": result.policies,
        "not_run": result.not_run,
        "best_rf": result.best("rf", higher=True),
        "cheapest": result.best("cost_recommended", higher=False),
        "table": records(result.table),
        "fronts": records(result.fronts),
        "front_margins": records(result.margins),
        "run_ids": sorted(result.runs["run_id"]),
        # each run's headline figures, for a rerun to compare (world_seed: the world)
        "runs": records(result.runs[["run_id", "policy", "world_seed", "rr", "rf"]]),
        "summary": summary_lines(result),
        "seconds": round(result.seconds, 1),
    }


def portable(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with its data and model file paths relative to the working directory
    where they lie under it (as the scenario is named), so a report names no machine's
    folders; run ids are hashed from the config as the run had it."""
    data = config.get("data")
    if not data:
        return config

    def relative(path: str) -> str:
        try:
            return str(Path(path).relative_to(Path.cwd()))
        except ValueError:  # elsewhere, or a package: path
            return path

    data = {**data, "path": relative(data["path"])}
    if data.get("model"):
        data["model"] = {**data["model"], "path": relative(data["model"]["path"])}
    return {**config, "data": data}


def summary_lines(result: WhatIf) -> list[str]:
    """The answer in a few sentences."""
    t = result.table.set_index("policy")
    target = result.target_rr
    reaching = list(t.index[t["reach"] == "reaches"])
    lines = [
        f"{result.scenario}: {len(result.table)} policies on {t['worlds'].max()} worlds "
        f"({result.protocol.version}, {result.protocol.tier} tier); target RR {target:g}."
    ]
    maybe = list(t.index[t["reach"] == "may reach"])
    if maybe:
        lines.append(
            "Their mean reaches it, their interval not yet (more worlds would tell): "
            + ", ".join(maybe)
            + "."
        )
    for _, m in result.margins.iterrows():
        lines.append(
            f"The front {m['front']} reaches it from margin {m['margin']:g}: RR {m['rr']:.3f} "
            f"[{m['rr_lo']:.3f}, {m['rr_hi']:.3f}], RF {m['rf']:.3f} "
            f"[{m['rf_lo']:.3f}, {m['rf_hi']:.3f}] ({m['policy']})."
        )
    if not reaching:
        lines.append("No policy tried reaches the target RR with confidence.")
        return lines
    lines.append("Reach it (the RR interval at or above the target): " + ", ".join(reaching) + ".")
    for name, figure, word in (
        (result.best("rf", True), "rf", "the best RF"),
        (result.best("cost_recommended", False), "cost_recommended", "the cheapest advice"),
    ):
        if name is not None:
            r = t.loc[name]
            lines.append(
                f"Of those, {name} has {word}: {figure} {r[figure]:.3f} "
                f"[{r[f'{figure}_lo']:.3f}, {r[f'{figure}_hi']:.3f}]"
                + (
                    f", {r[f'{figure}_vs_threshold']} than threshold"
                    if isinstance(r.get(f"{figure}_vs_threshold"), str) and name != "threshold"
                    else ""
                )
                + "."
            )
    return lines


def cell(row: pd.Series, f: str, verdict: bool = True) -> str:
    """Figure ``f`` of a table row: mean [interval], and its verdict against threshold."""
    if f not in row or not isinstance(row[f], float) or math.isnan(row[f]):
        return "–"
    text = f"{row[f]:.3f} [{row[f + '_lo']:.3f}, {row[f + '_hi']:.3f}]"
    word = row.get(f"{f}_vs_threshold")
    return text + (f" ({word})" if verdict and isinstance(word, str) and word else "")


def _chart(result: WhatIf) -> bytes:
    from matplotlib.figure import Figure

    from lab.study.analysis import png_bytes

    runs = result.runs
    means = runs.groupby(["policy", "world_seed"])[["rr", "rf"]].mean().groupby("policy").mean()
    fig = Figure(figsize=(5.6, 4.0))
    ax = fig.subplots()
    for i, (name, grid) in enumerate(result.protocol.front_policies().items()):
        pts = means.loc[[p for p in grid if p in means.index]].sort_values("rr")
        if len(pts):
            ax.plot(pts["rf"], pts["rr"], "-o", ms=3, lw=1, color=f"C{i}", label=f"front: {name}")
    for j, name in enumerate(result.table["policy"]):
        if name in means.index:
            ax.plot(*means.loc[name, ["rf", "rr"]], "s*^Dvp<>"[j % 8], ms=7, label=name)
    ax.axhline(result.target_rr, color="0.4", lw=0.8, ls="--", label="target RR")
    ax.set_xlabel("RF (mean over worlds)", fontsize=8)
    ax.set_ylabel("RR (mean over worlds)", fontsize=8)
    ax.set_title(f"{Path(result.scenario).name}: RR against RF", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return png_bytes(fig)


def page(result: WhatIf) -> str:
    """The report as one self-contained HTML page."""
    from lab.study.page import STYLE

    proto = result.protocol
    head = (
        f"<h1>What if: {html.escape(result.scenario)}</h1><p class='lead'>"
        + " ".join(html.escape(line) for line in summary_lines(result))
        + f"</p><p>{html.escape(proto.version)}, {html.escape(proto.tier)} tier; worlds are "
        + (
            "episode seeds (arrivals resampled)"
            if result.config.data is not None
            else "world seeds"
        )
        + f"; intervals: {html.escape(proto.interval)}; verdicts against threshold corrected "
        f"together per policy (BH), against the fronts (Holm); 'level' needs TOST within the "
        f"figure's bound. recourse-abm {__version__}, results schema {RESULTS_SCHEMA}.</p>"
    )
    cols = [f for f in (*SHOWN, *GAPS) if f in result.table]
    rows = "".join(
        "<tr>"
        + f"<td>{html.escape(str(r['policy']))}</td><td>{html.escape(str(r['reach']))}</td>"
        + "".join(f"<td>{html.escape(cell(r, f))}</td>" for f in cols)
        + "</tr>"
        for _, r in result.table.iterrows()
    )
    table = (
        "<table><tr><th>policy</th><th>target RR</th>"
        + "".join(f"<th>{html.escape(f)}</th>" for f in cols)
        + f"</tr>{rows}</table>"
    )
    chart = base64.b64encode(_chart(result)).decode()
    body = [head, table, f"<img alt='RR against RF' src='data:image/png;base64,{chart}'>"]
    if not result.fronts.empty:
        body.append("<h2>Against the constant-margin fronts</h2><table>")
        body.append("<tr><th>policy</th><th>front</th><th>figure</th><th>difference</th></tr>")
        for _, r in result.fronts.iterrows():
            d = r["vs_front"]
            text = "–" if d != d else f"{d:+.3f} [{r['vs_front_lo']:+.3f}, {r['vs_front_hi']:+.3f}]"
            body.append(
                f"<tr><td>{html.escape(r['policy'])}</td><td>{html.escape(r['front'])}</td>"
                f"<td>{html.escape(r['figure'])}</td><td>{html.escape(text)} "
                f"{html.escape(str(r['vs_front_verdict']))}</td></tr>"
            )
        body.append("</table>")
    if result.not_run:
        body.append("<h2>Not run</h2><ul>")
        body += [f"<li>{html.escape(p)}: {html.escape(w)}</li>" for p, w in result.not_run.items()]
        body.append("</ul>")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>What if: "
        f"{html.escape(result.scenario)}</title><style>{STYLE}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )


def markdown(doc: dict[str, Any]) -> str:
    """A report's JSON (:func:`to_json`) as Markdown: its summary and its table."""
    first, *rest = doc["summary"]
    lines = [first, "", *(f"- {line}" for line in rest), ""]
    lines += [
        "| policy | target RR | RR | RF | cost of advice | vs threshold (RR, RF, cost) |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc["table"]:
        row = pd.Series(r)
        words = [str(r.get(f"{f}_vs_threshold") or "–").split(" (")[0] for f in HEADLINE]
        cells = " | ".join(cell(row, f, verdict=False) for f in HEADLINE)
        lines.append(f"| `{r['policy']}` | {r['reach']} | {cells} | {', '.join(words)} |")
    return "\n".join(lines)


def write(result: WhatIf, out: str | Path) -> dict[str, Path]:
    """``whatif.json`` and ``whatif.html`` in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "whatif.json", "html": out / "whatif.html"}
    paths["json"].write_text(json.dumps(to_json(result), indent=1, sort_keys=True) + "\n")
    paths["html"].write_text(page(result))
    return paths
