"""Run an entry through the protocol and judge it (``recourse-abm benchmark POLICY``).

For each preset of the protocol one study runs the entry, ``none``, ``threshold`` and
every margin of each front on the same worlds (``world_seed``) and paired episodes
(``seed``). Runs go to a shared store keyed by protocol version and package version
(run ids carry the results schema), so the baselines run once for every entry and an
interrupted benchmark resumes. An entry that cannot run in a preset's world (its
``prepare`` raises a ConfigError: "needs outcome_delay", "needs budget") is not run there,
the rule :func:`abm.testing.check_policy` follows; its card names those presets and why,
and it is judged in the others. The entry is then judged on the protocol's statistics:

* the card: each figure's mean over worlds with its interval, and the paired difference
  to ``none`` and ``threshold``; the family is every such contrast of the report, BH;
* the fronts: RF at equal RR and RR at equal RF against each constant-margin front,
  world by world (:func:`lab.study.front.front_rows`); the family is every front row,
  Holm; "beats", "matches", "trails" or "inconclusive".
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from abm import __version__
from abm.scenarios import PRESETS
from abm.validation import ConfigError
from lab.benchmark import learned
from lab.benchmark.learned import DEFAULT_ARTEFACTS, as_entry, probe, seed_means, variants
from lab.benchmark.protocol import Protocol, protocol
from lab.study import Study, collect
from lab.study.analysis import figures_on, paired_rows, policy_cells
from lab.study.front import add_front_verdicts, episode_arrays, front_rows
from lab.study.stats import add_verdicts

#: where runs are kept between benchmarks (a folder per protocol version and package version)
DEFAULT_STORE = Path("results/benchmark/store")
#: the tick columns every run keeps: RR and RF, and the discrete outcomes --verify compares
KEPT = ("rr", "rf", "n_accepted", "n_rejected", "n_dropped", "n_succ", "n_reapplied")
#: the baselines each card figure of the entry is paired with (column key -> policy)
PAIRED = {"none": "none", "threshold": "threshold"}


class BenchmarkRefused(ValueError):
    """The entry fails :func:`abm.testing.check_policy`; the message is its report."""


@dataclass
class Outcome:
    """What one benchmark produced: the protocol, the entry, every run and the tables."""

    protocol: Protocol
    policy: str
    runs: pd.DataFrame  # one row per run: preset, policy, world_seed, seed, run_id, figures
    card: pd.DataFrame  # one row per (preset, policy, figure), with verdicts
    fronts: pd.DataFrame  # two rows per (preset, front), with verdicts
    check: str  # check_policy's report
    ticks: pd.DataFrame  # the entry's kept tick columns (KEPT), one row per run and tick
    allowed: dict[str, str]  # check_policy rules the entry states it breaks -> why
    not_run: dict[str, str]  # presets whose world the entry cannot run in -> why
    # a learned entry's (lab.benchmark.learned): where its predictors are kept, each one
    # trained (preset, training seed, path, weights hash) and each seed's front rows
    artefacts: str = DEFAULT_ARTEFACTS.as_posix()
    trained: list[dict[str, Any]] = field(default_factory=list)
    seed_fronts: pd.DataFrame = field(default_factory=pd.DataFrame)


def store_of(root: str | Path, proto: Protocol) -> Path:
    """The store of ``proto``'s version under ``root``, for this package's version."""
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", proto.version)
    return Path(root) / slug / __version__


def not_run_presets(policy: str, proto: Protocol) -> dict[str, str]:
    """The protocol's presets whose world ``policy`` cannot run in -> why (building the
    episode, which prepares the policy, raises a ConfigError there); :class:`BenchmarkRefused`
    if that is every preset."""
    from abm.model import RecourseModel

    out, runs_as = {}, probe(policy)  # a learned entry: before anything is trained
    for preset in proto.presets:
        try:
            RecourseModel(preset, runs_as, seed=0, ticks=1, agents=False, **dict(proto.settings))
        except ConfigError as exc:
            out[preset] = str(exc).splitlines()[0]
    if len(out) == len(proto.presets):
        why = "; ".join(f"{p}: {w}" for p, w in out.items())
        raise BenchmarkRefused(f"{policy} can run in none of the protocol's presets ({why})")
    return out


def studies(
    policy: str | Sequence[str],
    proto: Protocol,
    skip: Iterable[str] = (),
    artefacts: str | Path = DEFAULT_ARTEFACTS,
) -> list[Study]:
    """One study per preset (those in ``skip`` left out): the entry (or entries; a learned
    one as its training seeds' predictors under ``artefacts``), the baselines and the
    fronts' margins."""
    entries = [policy] if isinstance(policy, str) else list(policy)
    left_out = set(skip)
    return [
        protocol_study(
            proto,
            f"benchmark-{preset}",
            f"{proto.version} ({proto.tier}): {', '.join(entries)} in {preset}",
            preset,
            list(
                dict.fromkeys(
                    [
                        *(v for e in entries for v in variants(e, proto, preset, artefacts)),
                        *proto.baseline_policies(),
                    ]
                )
            ),
        )
        for preset in proto.presets
        if preset not in left_out
    ]


def entry_specs(
    policy: str,
    proto: Protocol,
    skip: Iterable[str] = (),
    artefacts: str | Path = DEFAULT_ARTEFACTS,
) -> dict[str, int]:
    """Every spec ``policy``'s runs are made with, in the presets not in ``skip`` -> its
    training seed (-1: not a learned entry)."""
    left_out = set(skip)
    return {
        spec: seed
        for preset in proto.presets
        if preset not in left_out
        for spec, seed in variants(policy, proto, preset, artefacts).items()
    }


def protocol_study(
    proto: Protocol,
    name: str,
    description: str,
    scenario: str,
    policies: Sequence[str],
    seeds: Sequence[int] | None = None,
    world_seeds: Sequence[int] | None = None,
) -> Study:
    """One study of ``policies`` in ``scenario`` (a preset or a scenario file) on the
    protocol's fixed elements: its seeds and world seeds (unless given), its ticks, its
    settings and the tick columns every run keeps (:data:`KEPT`)."""
    data: dict[str, Any] = {
        "name": name,
        "description": description,
        "scenario": scenario,
        "seeds": list(proto.seeds if seeds is None else seeds),
        "world_seeds": list(proto.world_seeds if world_seeds is None else world_seeds),
        "sweep": {"policy": list(policies)},
        "metrics": list(KEPT),
        "set": dict(proto.settings),
    }
    if proto.ticks is not None:
        data["ticks"] = proto.ticks
    return Study.from_dict(data)


def check_entry(policy: str, proto: Protocol, allow: dict[str, str] | None = None) -> str:
    """Run :func:`abm.testing.check_policy` in the protocol's worlds, with the rules the
    entry states it breaks (``allow``: rule -> reason, on its card); its report, or
    :class:`BenchmarkRefused` with it."""
    from abm.testing import RULES, PolicyCheckError, check_policy

    # the protocol's own rules: one added to check_policy since is not the entry's to pass
    later = tuple(r for r in RULES if r not in proto.check_rules and r not in (allow or {}))
    try:
        report = check_policy(policy, scenarios=proto.check_worlds, allow=allow, skip=later)
    except PolicyCheckError as exc:
        raise BenchmarkRefused(f"{policy} fails check_policy: {exc}") from None
    # a card is shipped: an artefact of this project named from its root, not this machine's
    return str(report).replace(f"{Path(__file__).resolve().parents[2].as_posix()}/", "")


def preset_store(root: str | Path, proto: Protocol, preset: str) -> Path:
    """The store of one preset's study: a folder each, so a study's checks and loads read
    its own runs only (a shared store of every preset is read whole by each)."""
    return store_of(root, proto) / preset


def share_runs(
    sources: Iterable[str | Path],
    store: str | Path,
    proto: Protocol,
    policy: str = "none",
    skip: Iterable[str] = (),
) -> int:
    """Copy into the benchmark's store the finished runs of other stores that are runs of
    ``proto`` for ``policy`` and the baselines (run ids name a run's whole content, results
    schema included, so an equal id is the same run): the five-families study's fronts,
    say. ``sources``: study folders (with ``runs/``), or folders of them. A copied part is
    checked against its seal when its study next runs (a bad one is run again). ``skip``:
    presets left out. Returns how many runs were copied."""
    roots = []
    for source in map(Path, sources):
        candidates = [source] if (source / "runs").is_dir() else sorted(source.glob("*/"))
        roots += [r for r in candidates if (r / "runs").is_dir()]
    copied = 0
    for study in studies(policy, proto, skip):
        folder = preset_store(store, proto, study.base.name)
        for part in ("runs", "ticks"):
            (folder / part).mkdir(parents=True, exist_ok=True)
        for rid in sorted(r.run_id for r in study.runs()):
            if (folder / "runs" / f"{rid}.json").exists():
                continue
            for root in roots:
                seal = root / "runs" / f"{rid}.json"
                if not seal.is_file() or json.loads(seal.read_text()).get("status") != "ok":
                    continue
                # the parts first, the seal last: a copy cut short is an unsealed run
                for name in (f"ticks/{rid}.parquet", f"runs/{rid}.parquet", f"runs/{rid}.json"):
                    if (root / name).is_file():
                        shutil.copyfile(root / name, folder / name)
                copied += 1
                break
    return copied


def _run_cost(task: dict[str, Any], ticks: int, n: int) -> float:
    """Seconds the study runner should take for ``task`` (a run of ``n`` ticks): two short
    copies of it, of 1 and ``1 + ticks`` ticks, give the cost of a run's setup and first
    tick (the policy's preparation, the card) and the pace of later ticks. A first copy,
    untimed, pays what a worker pays once (imports, compiled kernels, cached fits): timing
    the first ticks of a fresh process had SafeAR's estimate 10 times its measured time."""
    from lab.study.experiments import execute_run

    def seconds(k: int) -> float:
        result = execute_run({**task, "config": {**task["config"], "ticks": k}})
        if result["status"] != "ok":
            raise BenchmarkRefused(f"{task['policy']}: its run fails: {result['error']}")
        return result["elapsed_s"]

    seconds(2)
    first = seconds(1)
    per_tick = max(seconds(1 + ticks) - first, 0.0) / ticks
    return first + (n - 1) * per_tick


def estimate_seconds(
    policy: str,
    proto: Protocol,
    store: Path,
    ticks: int = 5,
    skip: Iterable[str] = (),
    artefacts: str | Path = DEFAULT_ARTEFACTS,
    entry_only: bool = False,
) -> float:
    """Seconds the benchmark should take here with one worker: each preset's entry and the
    baseline runs not yet in ``store``, each at :func:`_run_cost` of the preset's first run
    of the entry (a learned one's stand-in before training, :func:`learned.probe`) or of
    ``threshold``, and a learned entry's predictors not yet trained
    (:func:`learned.training_seconds`): a rough guide, said before a long run. ``ticks``:
    the ticks paced after the first (at least a refit period where the preset refits);
    ``store``: the root the runs are kept under; ``skip``: presets left out;
    ``entry_only``: the baselines' runs come from a file (``run_benchmarks(baselines=...)``),
    none is run."""
    from lab.study import finished_runs

    total = 0.0
    for study in studies(policy, proto, skip, artefacts):
        preset = study.base.name
        folder = preset_store(store, proto, preset)
        done = finished_runs(folder, include_errors=False) if folder.exists() else set()
        runs = study.runs()
        mine = variants(policy, proto, preset, artefacts)
        todo = [r for r in runs if r.run_id not in done and (r.policy in mine or not entry_only)]
        total += learned.training_seconds(policy, proto, preset, artefacts)
        if not todo:
            continue
        n = proto.ticks or PRESETS[preset].ticks
        if learned.plan(policy) is None:
            entry = next(r for r in runs if r.policy in mine)
        else:  # its artefacts may not be trained yet: its recommender stands in
            entry = protocol_study(proto, "estimate", "", preset, [probe(policy)]).runs()[0]
        first = {"entry": entry, "threshold": next(r for r in runs if r.policy == "threshold")}
        # a refit every R ticks costs more than the ticks between (its fit and shifts, and a
        # planner's forks that cross it): the pace is timed over one whole period
        pace = max(1, min(max(ticks, study.base.retrain_every + 1), n - 1))
        timed = {
            r.run_id: _run_cost(r.task(study.metrics), pace, n)
            for r in {r.run_id: r for r in first.values()}.values()
        }
        cost = {k: timed[r.run_id] for k, r in first.items()}
        for r in todo:
            total += cost["entry" if r.policy in mine else "threshold"]
    return total


def run_benchmark(
    policy: str,
    *,
    tier: str = "full",
    store: str | Path = DEFAULT_STORE,
    workers: int = 2,
    scheduler: Any | None = None,
    check: bool = True,
    allow: dict[str, str] | None = None,
    share: Iterable[str | Path] = (),
    not_run: dict[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
    artefacts: str | Path = DEFAULT_ARTEFACTS,
    baselines: pd.DataFrame | None = None,
) -> Outcome:
    """Check ``policy`` (a registry spec), run the protocol's ``tier`` (resumable) and judge
    it; :class:`BenchmarkRefused` if it fails ``check_policy``. ``share``: stores whose
    runs of the baselines are copied in first (:func:`share_runs`); ``not_run``:
    :func:`not_run_presets`, if already known; ``artefacts``: where a learned entry's
    predictors are trained and kept (:mod:`lab.benchmark.learned`); ``baselines``: see
    :func:`run_benchmarks`."""
    (outcome,) = run_benchmarks(
        [policy],
        tier=tier,
        store=store,
        workers=workers,
        scheduler=scheduler,
        check=check,
        allow={policy: allow or {}},
        share=share,
        not_run=None if not_run is None else {policy: not_run},
        progress=progress,
        log=log,
        artefacts=artefacts,
        baselines=baselines,
    )
    return outcome


def run_benchmarks(
    policies: Sequence[str],
    *,
    tier: str = "full",
    store: str | Path = DEFAULT_STORE,
    workers: int = 2,
    scheduler: Any | None = None,
    check: bool = True,
    allow: dict[str, dict[str, str]] | None = None,
    share: Iterable[str | Path] = (),
    not_run: dict[str, dict[str, str]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
    artefacts: str | Path = DEFAULT_ARTEFACTS,
    baselines: pd.DataFrame | None = None,
) -> list[Outcome]:
    """:func:`run_benchmark` for several entries in one pass: one study per preset runs
    them all beside the baselines, whose runs are read once (the built-in leaderboard,
    ``scripts/leaderboard_cards.py``); each entry is judged on its own with the baselines,
    as if run alone (the same runs, ids and tables). ``allow``, ``not_run``: per entry.
    A learned entry (:mod:`lab.benchmark.learned`) is first trained by the protocol's
    recipe in each preset it runs in, its predictors kept under ``artefacts``.
    ``baselines``: the baselines' per-run figures, as the shipped file holds them
    (:func:`lab.benchmark.card.read_baselines`; every baseline run of the tier must be
    there, matched by run id): only the entries run, none of the baselines."""
    from abm.registry import REGISTRY

    proto = protocol(tier)  # type: ignore[arg-type]
    entries = list(dict.fromkeys(policies))
    for policy in entries:
        try:
            REGISTRY.validate(policy)
        except ValueError as exc:
            raise ConfigError(str(exc).splitlines()[0]) from None
    allow, known = allow or {}, not_run or {}
    reports = {
        p: check_entry(p, proto, allow.get(p)) if check else "check_policy not run" for p in entries
    }
    skips = {p: known[p] if p in known else not_run_presets(p, proto) for p in entries}
    for policy, skip in skips.items():
        for preset, why in skip.items():
            log(f"{policy} in {preset}: not run ({why})")
    if share:
        n = sum(share_runs(share, store, proto, p, skips[p]) for p in entries)
        log(f"{n} runs shared from other stores")
    trained: dict[str, list[dict[str, Any]]] = {}
    for policy in entries:
        if learned.plan(policy) is not None and proto.training is not None:
            here = [q for q in proto.presets if q not in skips[policy]]
            learned.train(policy, proto, here, artefacts, workers=workers, log=log)
            trained[policy] = learned.provenance(policy, proto, here, artefacts)
    named = {p: entry_specs(p, proto, skips[p], artefacts) for p in entries}
    shipped = baselines
    frames, tick_frames = [], []
    for preset in proto.presets:
        here = [p for p in entries if preset not in skips[p]]
        if not here:
            continue
        (study,) = studies(here, proto, [q for q in proto.presets if q != preset], artefacts)
        from_file = None
        if shipped is not None:  # the entries' runs only; the baselines' from the file
            mine = [v for p in here for v in variants(p, proto, preset, artefacts)]
            wanted = set(proto.baseline_policies()) - set(mine)
            ids = [r.run_id for r in study.runs() if r.policy in wanted]
            from_file = shipped[shipped["run_id"].isin(ids)]
            if len(from_file) != len(ids):
                raise ConfigError(
                    f"baselines hold {len(from_file)} of the {len(ids)} baseline runs of "
                    f"{preset} in {proto.version} {proto.tier}"
                )
            study = protocol_study(proto, study.base.name, study.description, preset, mine)
        log(f"{preset}: {study.n_runs} runs")
        ticks, runs = collect(
            study,
            preset_store(store, proto, preset),
            workers=workers,
            scheduler=scheduler,
            progress=progress,
        )
        failed = runs[runs["status"] != "ok"]
        if len(failed):
            first = failed.iloc[0]
            raise RuntimeError(f"{first['policy']} failed in {preset}: {first['error']}")
        if from_file is not None:  # each policy's runs by world and episode, as a study's
            order = from_file.sort_values(["world_seed", "seed"], kind="stable")
            runs = pd.concat([runs, order.drop(columns="preset")], ignore_index=True)
        for p in here:  # a learned entry's seeds' runs, under its name
            if p in trained:
                runs = as_entry(runs, p, named[p])
        frames.append(runs.assign(preset=preset))
        mine = set(runs.loc[runs["policy"].isin(here), "run_id"])
        tick_frames.append(ticks[ticks["run_id"].isin(mine)])
    every = pd.concat(frames, ignore_index=True)
    ticks_all = pd.concat(tick_frames, ignore_index=True)
    baselines = proto.baseline_policies()
    outcomes = []
    for policy in entries:
        mine = every["policy"].isin([policy, *baselines]) & ~every["preset"].isin(skips[policy])
        runs = entry_order(every[mine], policy, proto)
        card, fronts = judge(runs, policy, proto)
        ids = set(runs.loc[runs["policy"] == policy, "run_id"])
        ticks = ticks_all[ticks_all["run_id"].isin(ids)].reset_index(drop=True)
        outcomes.append(
            Outcome(
                proto,
                policy,
                runs,
                card,
                fronts,
                reports[policy],
                ticks,
                dict(allow.get(policy, {})),
                skips[policy],
                *(
                    (Path(artefacts).as_posix(), trained[policy], seed_fronts(runs, policy, proto))
                    if policy in trained
                    else ()
                ),
            )
        )
    return outcomes


def seed_fronts(runs: pd.DataFrame, policy: str, proto: Protocol) -> pd.DataFrame:
    """A learned entry's front rows judged for each training seed alone (each its own
    family), with a ``training_seed`` column: whether the verdict of the seeds' mean holds
    seed by seed (docs/benchmark.md)."""
    frames = []
    for seed in sorted(s for s in runs["training_seed"].unique() if s >= 0):
        own = runs[(runs["policy"] != policy) | (runs["training_seed"] == seed)]
        _, fronts = judge(own.assign(training_seed=-1), policy, proto)
        frames.append(fronts.assign(training_seed=seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def entry_order(runs: pd.DataFrame, policy: str, proto: Protocol) -> pd.DataFrame:
    """``runs`` (of ``policy`` and the baselines) in the order the entry's own studies give:
    by preset, then the entry and the baselines in protocol order (a stable sort keeps the
    order within each), indexed from 0."""
    rank = {p: i for i, p in enumerate(dict.fromkeys([policy, *proto.baseline_policies()]))}
    order = {p: i for i, p in enumerate(proto.presets)}
    runs = runs.assign(_rank=runs["policy"].map(rank), _preset=runs["preset"].map(order))
    runs = runs.sort_values(["_preset", "_rank"], kind="stable")
    return runs.drop(columns=["_rank", "_preset"]).reset_index(drop=True)


def judge(
    runs: pd.DataFrame, policy: str, proto: Protocol, figures: tuple[str, ...] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The card (the entry and the baselines, each figure with its interval and the
    entry's paired differences) and the front rows, each one corrected family.
    ``figures``: those the worlds define (default: the protocol's, on each preset)."""
    runs = seed_means(runs, policy)  # a learned entry's value in a run: its seeds' mean
    card_rows, front = [], []
    fronts = proto.front_policies()
    defined = figures
    for preset, part in runs.groupby("preset", sort=False):
        if defined is None:
            figures = tuple(f for f in figures_on(proto.figures, preset) if f in part)
        else:
            figures = tuple(f for f in defined if f in part)
        shown = part[part["policy"].isin([policy, *proto.baselines])]
        cells = policy_cells(shown, figures)
        # only the entry's contrasts are on the card (and form the family): the baselines'
        # rows keep their own figures, not their differences to each other
        for r in paired_rows(cells, figures, PAIRED, head={"preset": preset}):
            mine = r["policy"] == policy
            card_rows.append(r if mine else {k: v for k, v in r.items() if k[:3] != "vs_"})
        worlds = sorted(part["world_seed"].unique())
        rr, rf = episode_arrays(part, worlds, [policy])
        for name, grid in fronts.items():
            if not set(grid) <= set(part["policy"]):
                continue  # a front that cannot run here (a model exact-linear cannot serve)
            g_rr, g_rf = episode_arrays(part, worlds, grid)
            front += front_rows(
                {policy: (rr[:, 0], rf[:, 0])}, g_rr, g_rf, front=name, head={"preset": preset}
            )
    card = pd.DataFrame(card_rows)
    entry = card["policy"] == policy
    judged = add_verdicts(card[entry], list(PAIRED), method=proto.card_correction)
    card = pd.concat([judged, card[~entry]], ignore_index=True)
    if not front:
        return card, pd.DataFrame()
    return card, add_front_verdicts(pd.DataFrame(front), method=proto.front_correction)


def minutes(seconds: float) -> str:
    """``seconds`` as a short duration for the terminal."""
    if not math.isfinite(seconds):
        return "unknown"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"
