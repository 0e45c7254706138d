"""Run an entry through the protocol and judge it (``recourse-abm benchmark POLICY``).

For each preset of the protocol one study runs the entry, ``none``, ``threshold`` and
every margin of each front on the same worlds (``world_seed``) and paired episodes
(``seed``). Runs go to a shared store keyed by protocol version and package version
(run ids carry the results schema), so the baselines run once for every entry and an
interrupted benchmark resumes. The entry is then judged on the protocol's statistics:

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
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from abm import __version__
from abm.scenarios import PRESETS
from abm.validation import ConfigError
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


def store_of(root: str | Path, proto: Protocol) -> Path:
    """The store of ``proto``'s version under ``root``, for this package's version."""
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", proto.version)
    return Path(root) / slug / __version__


def studies(policy: str, proto: Protocol) -> list[Study]:
    """One study per preset: the entry, the baselines and the fronts' margins."""
    policies = list(dict.fromkeys([policy, *proto.baseline_policies()]))
    out = []
    for preset in proto.presets:
        data: dict[str, Any] = {
            "name": f"benchmark-{preset}",
            "description": f"{proto.version} ({proto.tier}): {policy} in {preset}",
            "scenario": preset,
            "seeds": list(proto.seeds),
            "world_seeds": list(proto.world_seeds),
            "sweep": {"policy": policies},
            "metrics": list(KEPT),
            "set": dict(proto.settings),
        }
        if proto.ticks is not None:
            data["ticks"] = proto.ticks
        out.append(Study.from_dict(data))
    return out


def check_entry(policy: str, proto: Protocol, allow: dict[str, str] | None = None) -> str:
    """Run :func:`abm.testing.check_policy` in the protocol's worlds, with the rules the
    entry states it breaks (``allow``: rule -> reason, on its card); its report, or
    :class:`BenchmarkRefused` with it."""
    from abm.testing import PolicyCheckError, check_policy

    try:
        report = check_policy(policy, scenarios=proto.check_worlds, allow=allow)
    except PolicyCheckError as exc:
        raise BenchmarkRefused(f"{policy} fails check_policy: {exc}") from None
    return str(report)


def preset_store(root: str | Path, proto: Protocol, preset: str) -> Path:
    """The store of one preset's study: a folder each, so a study's checks and loads read
    its own runs only (a shared store of every preset is read whole by each)."""
    return store_of(root, proto) / preset


def share_runs(
    sources: Iterable[str | Path], store: str | Path, proto: Protocol, policy: str = "none"
) -> int:
    """Copy into the benchmark's store the finished runs of other stores that are runs of
    ``proto`` for ``policy`` and the baselines (run ids name a run's whole content, results
    schema included, so an equal id is the same run): the five-families study's fronts,
    say. ``sources``: study folders (with ``runs/``), or folders of them. A copied part is
    checked against its seal when its study next runs (a bad one is run again). Returns
    how many runs were copied."""
    roots = []
    for source in map(Path, sources):
        candidates = [source] if (source / "runs").is_dir() else sorted(source.glob("*/"))
        roots += [r for r in candidates if (r / "runs").is_dir()]
    copied = 0
    for study in studies(policy, proto):
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


def estimate_seconds(policy: str, proto: Protocol, store: Path, ticks: int = 5) -> float:
    """Seconds the benchmark should take here with one worker: each preset's entry and the
    baseline runs not yet in ``store``, at the cost per tick of ``ticks`` ticks of the
    entry and of ``threshold`` in world 0 (a rough guide, said before a long run).
    ``store``: the root the runs are kept under."""
    from abm.model import RecourseModel
    from lab.study import finished_runs

    total = 0.0
    for study in studies(policy, proto):
        preset = study.base.name
        folder = preset_store(store, proto, preset)
        done = finished_runs(folder, include_errors=False) if folder.exists() else set()
        todo = [r for r in study.runs() if r.run_id not in done]
        n = proto.ticks or PRESETS[preset].ticks
        per_tick = {}
        for name in dict.fromkeys((policy, "threshold")):
            model = RecourseModel(preset, name, seed=0, ticks=ticks, agents=False)
            start = time.perf_counter()
            model.run()
            per_tick[name] = (time.perf_counter() - start) / ticks
        for r in todo:
            total += n * per_tick[policy if r.policy == policy else "threshold"]
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
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = print,
) -> Outcome:
    """Check ``policy`` (a registry spec), run the protocol's ``tier`` (resumable) and judge
    it; :class:`BenchmarkRefused` if it fails ``check_policy``. ``share``: stores whose
    runs of the baselines are copied in first (:func:`share_runs`)."""
    from abm.registry import REGISTRY

    proto = protocol(tier)  # type: ignore[arg-type]
    try:
        REGISTRY.validate(policy)
    except ValueError as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    report = check_entry(policy, proto, allow) if check else "check_policy not run"
    if share:
        log(f"{share_runs(share, store, proto, policy)} runs shared from other stores")
    frames, tick_frames = [], []
    for study in studies(policy, proto):
        log(f"{study.base.name}: {study.n_runs} runs")
        ticks, runs = collect(
            study,
            preset_store(store, proto, study.base.name),
            workers=workers,
            scheduler=scheduler,
            progress=progress,
        )
        failed = runs[runs["status"] != "ok"]
        if len(failed):
            first = failed.iloc[0]
            raise RuntimeError(f"{first['policy']} failed in {study.base.name}: {first['error']}")
        frames.append(runs.assign(preset=study.base.name))
        mine = set(runs.loc[runs["policy"] == policy, "run_id"])
        tick_frames.append(ticks[ticks["run_id"].isin(mine)])
    runs = pd.concat(frames, ignore_index=True)
    card, fronts = judge(runs, policy, proto)
    ticks = pd.concat(tick_frames, ignore_index=True)
    return Outcome(proto, policy, runs, card, fronts, report, ticks, dict(allow or {}))


def judge(runs: pd.DataFrame, policy: str, proto: Protocol) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The card (the entry and the baselines, each figure with its interval and the
    entry's paired differences) and the front rows, each one corrected family."""
    card_rows, front = [], []
    fronts = proto.front_policies()
    for preset, part in runs.groupby("preset", sort=False):
        figures = tuple(f for f in figures_on(proto.figures, preset) if f in part)
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
            g_rr, g_rf = episode_arrays(part, worlds, grid)
            front += front_rows(
                {policy: (rr[:, 0], rf[:, 0])}, g_rr, g_rf, front=name, head={"preset": preset}
            )
    card = pd.DataFrame(card_rows)
    entry = card["policy"] == policy
    judged = add_verdicts(card[entry], list(PAIRED), method=proto.card_correction)
    card = pd.concat([judged, card[~entry]], ignore_index=True)
    return card, add_front_verdicts(pd.DataFrame(front), method=proto.front_correction)


def minutes(seconds: float) -> str:
    """``seconds`` as a short duration for the terminal."""
    if not math.isfinite(seconds):
        return "unknown"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"
