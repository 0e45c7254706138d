"""The benchmark's report card: one JSON document and one HTML page per entry and tier.

The JSON holds the protocol (version, tier, digest), the package's and the entry's
versions, the results schema, the machine's fingerprint, every run id with its world and
seed, the entry's per-run figures, the judged tables and, for a sample of the entry's
runs, the discrete outcomes of every tick. :func:`verify` recomputes the tables from the
per-run figures (an edited figure is caught), then reruns the sample: on a machine with
the same fingerprint every figure must agree bit for bit; elsewhere floats within
:data:`abm.provenance.FLOAT_RTOL` / :data:`~abm.provenance.FLOAT_ATOL` and every discrete
outcome exactly, and a run that diverged names its first differing tick.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abm import __version__
from abm.provenance import (
    FLOAT_ATOL,
    FLOAT_RTOL,
    RESULTS_SCHEMA,
    json_safe,
    now,
    versions,
    write_json,
)
from lab.benchmark.learned import DEFAULT_ARTEFACTS
from lab.benchmark.learned import plan as learned_plan
from lab.benchmark.protocol import VERSION, VERSIONS, Protocol, past, protocol, same_runs
from lab.benchmark.run import (
    KEPT,
    Outcome,
    check_entry,
    entry_order,
    entry_specs,
    judge,
    not_run_presets,
    seed_fronts,
    studies,
)

KIND = "recourse-abm benchmark card"
#: runs of the entry each card keeps tick by tick for --verify (one per preset)
SAMPLE_PER_PRESET = 1
#: the per-run columns a card keeps for the entry
RUN_COLUMNS = ("preset", "policy", "world_seed", "seed", "run_id")
#: the full tier's baseline runs, shipped (:func:`export_baselines`): --verify reads them
#: where the store is not (the quick tier's runs are among them)
BASELINES = Path("results/benchmark/baselines-full.parquet")


class CardError(ValueError):
    """A card that cannot be read or is of another protocol version."""


class Mismatch(CardError):
    """A card whose figures do not follow from its runs, or whose runs rerun otherwise."""


# -- identity ---------------------------------------------------------------------------
def machine() -> dict[str, str]:
    """What decides a float's last bits here: CPU, its vector extensions, the OS, Python,
    NumPy and its BLAS; ``fingerprint`` is their hash."""
    cpu, flags = "", ""
    try:
        text = Path("/proc/cpuinfo").read_text()
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not cpu:  # the first core's
                cpu = value.strip()
            if key.strip() == "flags" and not flags:
                have = set(value.split())
                flags = " ".join(
                    f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f") if f in have
                )
    except OSError:
        pass
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        blas = "unknown"
    out = {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cpu_flags": flags,
        "arch": platform.machine(),
        "os": platform.system(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": str(blas),
    }
    out["fingerprint"] = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:16]
    return out


def policy_versions(spec: str) -> dict[str, str]:
    """Distribution -> version of every package that registers a part of ``spec`` (this
    package for built-in parts; a plug-in's own distribution otherwise)."""
    from abm.registry import KINDS, REGISTRY, Composite, parse_spec

    owners = metadata.packages_distributions()
    out: dict[str, str] = {}

    def owner(kind: str, name: str) -> None:
        entry = REGISTRY.entries(kind).get(name)  # type: ignore[arg-type]
        if entry is None:
            return
        if isinstance(entry.factory, Composite):  # GOAL+RECOMMENDER under one name
            owner("goal", entry.factory.goal)
            owner("recommender", entry.factory.recommender)
            return
        top = entry.factory.__module__.split(".")[0]
        for dist in owners.get(top, ["recourse-abm"]):
            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                out[dist] = __version__

    for part in parse_spec(spec):
        for kind in KINDS:
            if part.name in REGISTRY.entries(kind):
                owner(kind, part.name)
                break
    return out


# -- writing ----------------------------------------------------------------------------
def _table(frame: pd.DataFrame) -> list[dict[str, Any]]:
    # Python's float repr round-trips every bit (pandas' JSON writer keeps 15 decimals)
    return json_safe(frame.to_dict(orient="records"))


def build(outcome: Outcome, made: dict[str, Any] | None = None) -> dict[str, Any]:
    """The card's JSON document (plain data). ``made``: for a card judged again
    (:func:`rejudge`), where and when its runs were made (``versions``, ``machine``,
    ``created`` and ``protocol`` of the card they come from); the card keeps those, since
    --verify reruns the runs against them, and says when and where it was judged again."""
    proto, policy, runs = outcome.protocol, outcome.policy, outcome.runs
    figures = [f for f in proto.figures if f in runs]
    mine = runs[runs["policy"] == policy]
    # a learned entry's runs are one per training seed (lab.benchmark.learned)
    columns = [*RUN_COLUMNS, *(["training_seed"] if outcome.trained else [])]
    mine = mine.sort_values(["preset", "world_seed", "seed", *columns[len(RUN_COLUMNS) :]])
    sample = mine.groupby("preset", sort=False).head(SAMPLE_PER_PRESET)
    ticks = _sample_ticks(outcome, sample)
    here = {"versions": versions(), "machine": machine(), "created": now()}
    origin = {k: made[k] for k in here} if made is not None else here
    judged = {} if made is None else {"judged_again": {**here, "runs_of": made["protocol"]}}
    trained = (
        {
            "learned": {
                "artefacts": outcome.artefacts,
                # the recipe's fields this entry's runs depend on (RECIPE_FIELDS)
                "training": _recipe_of(policy, proto),
                "trained": outcome.trained,
                "seed_fronts": _table(outcome.seed_fronts),
            }
        }
        if outcome.trained
        else {}
    )
    return {
        "kind": KIND,
        "protocol": {"version": proto.version, "tier": proto.tier, "digest": proto.digest()},
        "policy": {"spec": policy, "versions": policy_versions(policy)},
        "package": {"recourse-abm": __version__},
        "versions": origin["versions"],
        "results_schema": RESULTS_SCHEMA,
        "machine": origin["machine"],
        "created": origin["created"],
        **judged,
        "check_policy": outcome.check,
        "allowed_breaks": outcome.allowed,
        "not_run": outcome.not_run,
        **trained,
        "runs": {
            "entry": _table(mine[[*columns, *figures]]),
            # the baselines' ids follow from the protocol and the package's version: their
            # count and digest (the entry's are listed above)
            "baselines": _id_digest(runs.loc[runs["policy"] != policy, "run_id"]),
        },
        "sample": [
            {**{k: row[k] for k in RUN_COLUMNS}, "ticks": ticks[row["run_id"]]}
            for _, row in sample.iterrows()
        ],
        "card": _table(outcome.card),
        "fronts": _table(outcome.fronts),
    }


def _id_digest(ids: Any) -> dict[str, Any]:
    """The count and SHA-256 (16 hex digits) of a set of run ids, sorted."""
    ordered = sorted(set(ids))
    text = "\n".join(ordered).encode()
    return {"n": len(ordered), "sha256": hashlib.sha256(text).hexdigest()[:16]}


def _sample_ticks(outcome: Outcome, sample: pd.DataFrame) -> dict[str, dict[str, list]]:
    """Run id -> tick column -> values, for the sampled runs (from the store's tables)."""
    out, by_id = {}, None
    for _, row in sample.iterrows():
        part = outcome.ticks[outcome.ticks["run_id"] == row["run_id"]].sort_values("tick")
        if all(c in part for c in KEPT):
            out[row["run_id"]] = {c: part[c].tolist() for c in ("tick", *KEPT)}
        else:  # a run shared from a store that kept fewer columns: made again, here
            entry = (outcome.policy, outcome.protocol, outcome.not_run, outcome.artefacts)
            by_id = by_id or _plan(*entry)[1]
            out[row["run_id"]] = _rerun(by_id, row)[1]
    return out


def write(outcome: Outcome, out: str | Path, made: dict[str, Any] | None = None) -> dict[str, Path]:
    """``card.json`` and ``card.html`` under ``out``; returns their paths (``made``: see
    :func:`build`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = build(outcome, made)
    # compact: a full card holds about 10,000 figures
    paths = {"json": write_json(out / "card.json", doc, indent=None), "html": out / "card.html"}
    paths["html"].write_text(page(doc, outcome))
    return paths


def load(path: str | Path) -> dict[str, Any]:
    """A card's JSON document, of any protocol version (:class:`CardError` if it is none)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CardError(f"card = {str(path)!r} cannot be read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise CardError(f"card = {str(path)!r} is not a {KIND}")
    return doc


def read(path: str | Path) -> dict[str, Any]:
    """A card's JSON document, checked to be a card of the package's protocol version
    (:class:`CardError` otherwise)."""
    doc = load(path)
    check_version(doc)
    return doc


def check_version(doc: dict[str, Any], version: str = VERSION) -> None:
    """Refuse a card of another protocol version, or whose digest is not its version's."""
    got = doc.get("protocol", {})
    if got.get("version") != version:
        raise CardError(
            f"protocol = {got.get('version')!r} is not allowed: this leaderboard is {version}"
        )
    known = VERSIONS.get(version, {}).get(got.get("tier"))
    if known != got.get("digest"):
        raise CardError(
            f"protocol digest = {got.get('digest')!r} is not {version} {got.get('tier')}'s "
            f"({known})"
        )


def _recipe_of(policy: str, proto: Protocol) -> dict[str, Any] | None:
    """The protocol's recipe as far as the learned entry ``policy`` depends on it."""
    made = learned_plan(policy)
    if proto.training is None or made is None:
        return None
    recipe = proto.training.model_dump(mode="json")
    return {k: v for k, v in recipe.items() if k in made.fields}


# -- judging again ------------------------------------------------------------------------
def _earlier(got: dict[str, Any], what: str, learned: tuple[str, ...] = ()) -> Protocol:
    """The protocol of an earlier version named by ``got`` (version, tier, digest) whose
    runs are the current version's (:func:`lab.benchmark.protocol.same_runs`; ``learned``:
    the recipe's fields a learned entry's runs depend on), checked against its pinned
    digest; :class:`CardError` otherwise."""
    version, tier = got.get("version"), got.get("tier")
    try:
        old = past(version, tier)
    except (ValueError, TypeError):
        raise CardError(
            f"{what}: protocol = {version!r} is not a version this package knows"
        ) from None
    if got.get("digest") != VERSIONS[version][tier]:  # past() gives it (tests/test_benchmark.py)
        raise CardError(f"{what}: protocol digest = {got.get('digest')!r} is not {version}'s")
    if not same_runs(old, protocol(tier), learned):
        raise CardError(f"{what}: {version} {tier} runs other runs than {VERSION}'s")
    return old


def carry_baselines(path: str | Path = BASELINES, out: str | Path | None = None) -> Path:
    """Shipped baselines (:func:`export_baselines`) of an earlier version that runs the same
    runs, stamped with the current version (``out``, default: in place): every row as it
    was, its run ids checked against the digest the file names."""
    import pyarrow.parquet as pq

    arrow = pq.read_table(path)
    meta = json.loads((arrow.schema.metadata or {}).get(b"recourse-abm", b"{}"))
    if meta.get("results_schema") != RESULTS_SCHEMA:
        raise CardError(
            f"baselines = {str(path)!r} are of results schema {meta.get('results_schema')}"
        )
    if meta.get("version") != VERSION:
        _earlier(meta, f"baselines = {str(path)!r}")
    if _id_digest(arrow.column("run_id").to_pylist()) != meta.get("runs"):
        raise Mismatch(f"baselines = {str(path)!r}: its runs are not the ones it names")
    proto = protocol(meta["tier"])
    meta = {**meta, "version": proto.version, "digest": proto.digest()}
    stamped = {**(arrow.schema.metadata or {}), b"recourse-abm": json.dumps(meta).encode()}
    out = Path(path if out is None else out)
    pq.write_table(arrow.replace_schema_metadata(stamped), out, compression="zstd")
    return out


def rejudge(
    doc: dict[str, Any],
    *,
    check: str | None = None,
    store: str | Path | None = None,
    baselines: str | Path | None = None,
) -> tuple[Outcome, dict[str, Any]]:
    """A card of an earlier version whose runs are the current version's, judged under the
    current one from the runs it holds (no run is made again): the entry's runs and sampled
    ticks as they were, the baselines' from ``store`` or else the shipped file
    (``baselines``, of the current version: :func:`carry_baselines`; as :func:`verify`
    reads them), the tables judged again, and ``check_policy`` under the current version's
    rules (``check``: its report, if already made). Returns the outcome and where its runs were made, for :func:`write`.
    The tables must come out as the card's (:class:`Mismatch` otherwise): only how an
    entry is checked may differ between such versions."""
    policy = doc["policy"]["spec"]
    made = learned_plan(policy)
    old = _earlier(doc.get("protocol", {}), "card", made.fields if made else ())
    proto = protocol(old.tier)
    not_run = dict(doc.get("not_run", {}))
    root = _artefacts(doc)
    plan, by_id = _plan(policy, proto, not_run, root)
    entry = pd.DataFrame(doc["runs"]["entry"])
    unknown = set(entry["run_id"]) - set(by_id)
    if unknown:
        raise CardError(f"card: run {sorted(unknown)[0]} is not a run of {proto.version}")
    others = _baseline_figures(doc, proto, plan, by_id, store, baselines)
    runs = pd.concat([entry, others], ignore_index=True).astype({"world_seed": int, "seed": int})
    # the order run_benchmarks gives, each policy's runs by world and episode as a study's
    runs = entry_order(runs.sort_values(["world_seed", "seed"], kind="stable"), policy, proto)
    card, fronts = judge(runs, policy, proto)
    for name, table in (("card", card), ("fronts", fronts)):
        _compare_tables(name, pd.DataFrame(doc[name]), table)
    allowed = dict(doc.get("allowed_breaks", {}))
    report = check_entry(policy, proto, allowed) if check is None else check
    ticks = pd.DataFrame(
        [
            {"run_id": s["run_id"], **dict(zip(s["ticks"], values, strict=True))}
            for s in doc["sample"]
            for values in zip(*s["ticks"].values(), strict=True)
        ]
    )
    made = {k: doc[k] for k in ("versions", "machine", "created", "protocol")}
    # a card judged again before: its runs are still those of the version that made them
    made["protocol"] = doc.get("judged_again", {}).get("runs_of", made["protocol"])
    learned = (
        (root, doc["learned"]["trained"], seed_fronts(runs, policy, proto))
        if "learned" in doc
        else ()
    )
    outcome = Outcome(proto, policy, runs, card, fronts, report, ticks, allowed, not_run, *learned)
    return outcome, made


# -- verifying ----------------------------------------------------------------------------
def _plan(
    policy: str, proto: Protocol, skip: Any = (), artefacts: str | Path = DEFAULT_ARTEFACTS
) -> tuple[list[Any], dict[str, Any]]:
    """The protocol's studies for ``policy`` (presets in ``skip`` left out; a learned entry's
    predictors under ``artefacts``) and their runs by id (built once: a full tier has
    12,480 runs, each hashed for its id)."""
    plan = studies(policy, proto, skip, artefacts)
    return plan, {r.run_id: r for study in plan for r in study.runs()}


def _artefacts(doc: dict[str, Any]) -> str | Path:
    """Where a learned entry's card says its predictors are (the default for any other)."""
    return doc.get("learned", {}).get("artefacts", DEFAULT_ARTEFACTS)


def _check_artefacts(doc: dict[str, Any]) -> str | None:
    """A learned entry's predictors, each the bytes its card's runs used (:class:`Mismatch`
    otherwise); a line saying so, or None for an entry not learned."""
    if "learned" not in doc:
        return None
    trained = doc["learned"]["trained"]
    for row in trained:
        path = Path(row["path"]) / "manifest.json"
        if not path.is_file():
            raise CardError(
                f"artefact = {row['path']!r} ({row['preset']}, training seed "
                f"{row['training_seed']}) is not here: the card's runs load it"
            )
        got = json.loads(path.read_text()).get("weights_sha256")
        if got != row["weights_sha256"]:
            raise Mismatch(
                f"artefact = {row['path']!r}: weights {str(got)[:16]}, not the "
                f"{row['weights_sha256'][:16]} the card's runs used"
            )
    return f"artefacts: the {len(trained)} the card's runs used, byte for byte"


def _rerun(by_id: dict[str, Any], row: Any) -> tuple[dict[str, float], dict[str, list]]:
    """Run ``row``'s run (by its id in ``by_id``, :func:`_plan`) again in this process: its
    figures and kept ticks."""
    from lab.study.experiments import execute_run

    spec = by_id.get(row["run_id"])
    if spec is None:
        raise CardError(
            f"run {row['run_id']} ({row['preset']}, world {row['world_seed']}, seed "
            f"{row['seed']}) is not a run of this package's protocol: was it made by another "
            "version of recourse-abm or of the entry?"
        )
    result = execute_run(spec.task(KEPT))
    if result["status"] != "ok":
        raise CardError(f"run {row['run_id']} failed: {result['error']}")
    figures = dict(result["rows"][0])
    ticks = result["ticks"]
    return figures, {c: ticks[c].tolist() for c in ("tick", *KEPT) if c in ticks}


def _same(a: Any, b: Any, exact: bool) -> bool:
    if a is None or b is None:  # NaN is written as null
        return (a is None or a != a) and (b is None or b != b)
    if isinstance(a, float) or isinstance(b, float):
        if exact:
            return float(a) == float(b)
        return math.isclose(float(a), float(b), rel_tol=FLOAT_RTOL, abs_tol=FLOAT_ATOL)
    return a == b


def verify(
    path: str | Path,
    *,
    store: str | Path | None = None,
    baselines: str | Path | None = None,
    reruns: int | None = None,
    log: Any = print,
) -> list[str]:
    """Check a card: its tables from its own runs (the baselines' from ``store``, default
    :data:`lab.benchmark.run.DEFAULT_STORE`, else from the shipped ``baselines``, default
    :data:`BASELINES`), then its sampled runs rerun here (the first ``reruns`` of them;
    None: all). Returns what was checked (one line each); :class:`CardError` names the
    first problem."""
    doc = read(path)
    proto = protocol(doc["protocol"]["tier"])
    policy = doc["policy"]["spec"]
    said: list[str] = []
    entry = pd.DataFrame(doc["runs"]["entry"])
    # 0. the presets it was not run in are those whose world it cannot run in, here too
    not_run = not_run_presets(policy, proto)
    if not_run != doc.get("not_run", {}):
        raise Mismatch(
            f"not_run = {doc.get('not_run', {})!r} on the card; here the entry cannot run in "
            f"{not_run or 'no preset'}"
        )
    plan, by_id = _plan(policy, proto, not_run, _artefacts(doc))
    checked = _check_artefacts(doc)
    if checked:
        said.append(checked)
    # 1. the tables follow from the runs: an edited figure shows here
    others = _baseline_figures(doc, proto, plan, by_id, store, baselines)
    runs = pd.concat([entry, others], ignore_index=True)
    card, fronts = judge(runs.astype({"world_seed": int, "seed": int}), policy, proto)
    for name, table in (("card", card), ("fronts", fronts)):
        _compare_tables(name, pd.DataFrame(doc[name]), table)
    said.append(
        f"tables: the card's {len(doc['card'])} rows and {len(doc['fronts'])} front rows follow from its runs"
    )
    # 2. a sample of the entry's runs, again
    exact = doc["machine"]["fingerprint"] == machine()["fingerprint"]
    how = (
        "bit for bit (same machine)"
        if exact
        else f"floats within rtol {FLOAT_RTOL:g} (another machine)"
    )
    for row in doc["sample"][:reruns]:
        figures, ticks = _rerun(by_id, row)
        _compare_ticks(row, ticks, exact)
        stored = entry[entry["run_id"] == row["run_id"]].iloc[0]
        for f, v in stored.items():
            if f in RUN_COLUMNS or f not in figures:
                continue
            if not _same(None if v != v else v, figures[f], exact):
                raise Mismatch(
                    f"run {row['run_id']} ({row['preset']}): {f} = {v!r} on the card, "
                    f"{figures[f]!r} rerun here ({how})"
                )
        said.append(f"run {row['run_id']} ({row['preset']}, world {row['world_seed']}): {how}")
    for line in said:
        log(line)
    return said


def _baseline_figures(
    doc: dict[str, Any],
    proto: Protocol,
    plan: list[Any],
    by_id: dict[str, Any],
    store: str | Path | None,
    shipped: str | Path | None = None,
) -> pd.DataFrame:
    """The baselines' per-run figures: from the store the card was made with (the card
    keeps their ids only), else from the shipped file (:func:`export_baselines`);
    ``plan``, ``by_id``: :func:`_plan`."""
    from lab.benchmark.run import DEFAULT_STORE, preset_store, store_of
    from lab.study import load_runs_of

    policy = doc["policy"]["spec"]
    mine = entry_specs(policy, proto, doc.get("not_run", {}), _artefacts(doc))
    ids = {rid for rid, r in by_id.items() if r.policy not in mine}
    if _id_digest(ids) != doc["runs"]["baselines"]:
        raise Mismatch(
            f"the card's baseline runs ({doc['runs']['baselines']}) are not those of "
            f"{proto.version} {proto.tier} under recourse-abm {__version__} ({_id_digest(ids)})"
        )
    root = DEFAULT_STORE if store is None else store
    frames = []
    for study in plan:
        folder = preset_store(root, proto, study.base.name)
        if folder.is_dir():
            _, runs = load_runs_of(study, folder)
            frames.append(runs[runs["run_id"].isin(ids)].assign(preset=study.base.name))
    got = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if len(got) == len(ids):
        return got
    path = Path(BASELINES if shipped is None else shipped)
    if path.is_file():
        table = read_baselines(path)
        got = table[table["run_id"].isin(ids)]
        if len(got) == len(ids):
            return got
    raise CardError(
        f"the baselines' runs are not all in {store_of(root, proto)} nor in {path} "
        f"({len(got)} of {len(ids)}): run `recourse-abm benchmark threshold --tier "
        f"{proto.tier}` to make them"
    )


def export_baselines(store: str | Path, out: str | Path = BASELINES, tier: str = "full") -> Path:
    """Write the per-run figures of every baseline run of ``tier`` in ``store`` to one
    Parquet file (``out``), so a card verifies where the store is not (a fresh clone): one
    row per run, the card's run columns and figures; the protocol version, results schema,
    package version and the runs' id digest in its metadata. Every run must be there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lab.benchmark.run import preset_store
    from lab.study import load_runs_of

    proto = protocol(tier)  # type: ignore[arg-type]
    frames = []
    for study in studies("none", proto):
        folder = preset_store(store, proto, study.base.name)
        want = {r.run_id for r in study.runs()}
        _, runs = load_runs_of(study, folder) if folder.is_dir() else (None, pd.DataFrame())
        have = runs[runs["run_id"].isin(want)] if len(runs) else runs
        if len(have) != len(want):
            raise CardError(
                f"{folder} holds {len(have)} of the {len(want)} baseline runs of "
                f"{study.base.name}: run `recourse-abm benchmark threshold --tier {tier}` first"
            )
        figures = [f for f in proto.figures if f in have]
        frames.append(have.assign(preset=study.base.name)[[*RUN_COLUMNS, *figures]])
    table = pd.concat(frames, ignore_index=True).sort_values(["preset", "policy", "run_id"])
    meta = {
        "version": proto.version,
        "tier": proto.tier,
        "digest": proto.digest(),
        "results_schema": RESULTS_SCHEMA,
        "recourse-abm": __version__,
        "runs": _id_digest(table["run_id"]),
    }
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    meta_bytes = {**(arrow.schema.metadata or {}), b"recourse-abm": json.dumps(meta).encode()}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow.replace_schema_metadata(meta_bytes), out, compression="zstd")
    return out


def read_baselines(path: str | Path) -> pd.DataFrame:
    """A file of :func:`export_baselines`, checked: this package's protocol version and
    results schema, and runs whose ids are the ones it names (:class:`CardError`)."""
    import pyarrow.parquet as pq

    arrow = pq.read_table(path)
    meta = json.loads((arrow.schema.metadata or {}).get(b"recourse-abm", b"{}"))
    if meta.get("version") != VERSION or meta.get("results_schema") != RESULTS_SCHEMA:
        raise CardError(
            f"baselines = {str(path)!r} are of {meta.get('version')} (results schema "
            f"{meta.get('results_schema')}), not {VERSION} ({RESULTS_SCHEMA})"
        )
    table = arrow.to_pandas()
    if _id_digest(table["run_id"]) != meta.get("runs"):
        raise Mismatch(f"baselines = {str(path)!r}: its runs are not the ones it names")
    return table


def _compare_tables(name: str, card: pd.DataFrame, again: pd.DataFrame) -> None:
    keys = [k for k in ("preset", "policy", "figure", "front") if k in card.columns]
    a = card.set_index(keys).sort_index()
    b = again.set_index(keys).sort_index()
    missing = ~a.index.isin(b.index)
    if missing.any():
        raise Mismatch(f"{name} row {a.index[missing][0]}: on the card, not from its runs")
    b = b.loc[a.index]  # row for row (a column's values as Python objects, not cell by cell)
    for col in a.columns:
        if col not in b.columns:
            continue
        for idx, x, y in zip(a.index, a[col].tolist(), b[col].tolist(), strict=True):
            x = None if isinstance(x, float) and x != x else x
            y = None if isinstance(y, float) and y != y else y
            if not _same(x, y, exact=False):
                raise Mismatch(f"{name} row {idx}: {col} = {x!r} on the card, {y!r} from its runs")


def _compare_ticks(row: dict[str, Any], ticks: dict[str, list], exact: bool) -> None:
    stored = row["ticks"]
    n = min(len(stored.get("tick", [])), len(ticks.get("tick", [])))
    for t in range(n):
        for col in KEPT:
            a, b = stored[col][t], ticks[col][t]
            discrete = col.startswith("n_")
            if not _same(a, b, exact or discrete):
                raise Mismatch(
                    f"run {row['run_id']} ({row['preset']}, world {row['world_seed']}, seed "
                    f"{row['seed']}) diverged at tick {stored['tick'][t]}: {col} = {a!r} on the "
                    f"card, {b!r} here" + ("" if discrete else " (beyond the float tolerance)")
                )
    if len(stored.get("tick", [])) != len(ticks.get("tick", [])):
        raise Mismatch(
            f"run {row['run_id']}: {len(stored['tick'])} ticks on the card, {len(ticks['tick'])} here"
        )


# -- the page ---------------------------------------------------------------------------
def page(doc: dict[str, Any], outcome: Outcome) -> str:
    """The card as one self-contained HTML page."""
    from lab.study.page import STYLE

    proto, policy = outcome.protocol, outcome.policy
    tier = {
        "full": "full tier (the leaderboard's)",
        "quick": "quick tier: fewer worlds and presets than the leaderboard's; not comparable with full cards",
        "smoke": "smoke tier: checks that the pipes hold; no verdicts",
    }[proto.tier]
    head = (
        f"<h1>{html.escape(policy)}</h1><p class='lead'>{html.escape(proto.version)}, "
        f"{html.escape(tier)}. {len(proto.presets)} presets x {proto.worlds} worlds x "
        f"{proto.episodes} paired episodes; intervals: {html.escape(proto.interval)}, with the "
        f"number of worlds; card contrasts corrected together ({proto.card_correction.upper()}), "
        f"front contrasts together ({proto.front_correction.title()}); 'level' and 'matches' "
        f"need TOST within the figure's bound. recourse-abm {__version__}, results schema "
        f"{RESULTS_SCHEMA}, machine {doc['machine']['fingerprint']}, {doc['created']}.</p>"
    )
    body = [head]
    made = learned_plan(outcome.policy)
    if outcome.trained and proto.training is not None and made is not None:
        t = proto.training
        seeds, worlds = ", ".join(map(str, t.seeds)), ", ".join(map(str, t.worlds))
        what = []
        if made.phi:
            what.append(f"one recommender φ per training seed ({seeds}), {t.phi_episodes} episodes")
        if made.mu:
            goal = (
                f"for RR ≥ {made.target:g}"
                if made.kind == "rl-constrained"
                else f"at α:τ = {t.alpha:g}:{t.tau:g}"
            )
            what.append(
                f"{'then' if made.phi else 'one'} predictor μ per training seed"
                f"{'' if made.phi else f' ({seeds})'}, {t.steps} ticks {goal}"
                + (" with that φ inside" if made.phi else "")
            )
        body.append(
            f"<p>A learned entry, trained by the protocol: in each preset, {', '.join(what)}, "
            f"its episodes in worlds {worlds} (none an evaluation world). A run's figures "
            f"are the mean over the training seeds' runs; under each front table, each "
            f"seed's own verdicts.</p>"
        )
    for preset in proto.presets:
        body.append(f"<h2>{html.escape(preset)}</h2>")
        if preset in outcome.not_run:
            why = html.escape(outcome.not_run[preset])
            body.append(f"<p>Not run: the entry cannot run in this world ({why}).</p>")
            continue
        body.append(_front_html(outcome.fronts, preset))
        if len(outcome.seed_fronts):
            body.append(_front_html(outcome.seed_fronts, preset, by_seed=True))
        chart = _chart(outcome, preset)
        if chart:
            b64 = base64.b64encode(chart).decode()
            body.append(f"<img alt='RR against RF' src='data:image/png;base64,{b64}'>")
        body.append(_card_html(outcome.card, preset, policy, proto))
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(policy)}: "
        f"{html.escape(proto.version)}</title><style>{STYLE}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )


def _interval(mean: float, lo: float, hi: float, n: Any) -> str:
    if mean != mean:
        return "n/a"
    return f"{mean:.3g} [{lo:.3g}, {hi:.3g}] ({int(n)} worlds)"


def _diff(row: pd.Series, key: str) -> str:
    m = row.get(f"vs_{key}", math.nan)
    if m != m:
        return ""
    text = f"{m:+.3g} [{row[f'vs_{key}_lo']:+.3g}, {row[f'vs_{key}_hi']:+.3g}]"
    verdict = str(row.get(f"vs_{key}_verdict", ""))
    strong = verdict in (
        "better",
        "worse",
        "higher",
        "lower",
        "level",
        "beats",
        "trails",
        "matches",
    )
    return f"<b>{text}</b> {verdict}" if strong else f"{text} <span class='muted'>{verdict}</span>"


def _front_html(fronts: pd.DataFrame, preset: str, by_seed: bool = False) -> str:
    """The front rows of ``preset``; ``by_seed``: a learned entry's, one row per front and
    training seed (:func:`lab.benchmark.run.seed_fronts`)."""
    part = fronts[fronts["preset"] == preset]
    keys = ["front", "training_seed"] if by_seed else ["front"]
    rows = []
    for key, g in part.groupby(keys, sort=False):
        cells = g.set_index("figure")
        tds = "".join(
            f"<td>{_diff(cells.loc[f], 'front')}</td>" for f in ("rf_at_equal_rr", "rr_at_equal_rf")
        )
        name, *seed = key
        heads = f"<td class='l'>{html.escape(name)}</td>" + "".join(f"<td>{k}</td>" for k in seed)
        rows.append(f"<tr>{heads}{tds}</tr>")
    title = "" if by_seed else "<h3>against the constant-margin fronts</h3>"
    seed = "<th>training seed</th>" if by_seed else ""
    return (
        f"{title}<table><tr><th class='l'>front</th>{seed}"
        "<th>RF − front at equal RR</th><th>RR − front at equal RF</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _card_html(card: pd.DataFrame, preset: str, policy: str, proto: Protocol) -> str:
    from abm.mechanisms import FIGURES

    labels = {f.name: f.label for f in FIGURES}
    part = card[card["preset"] == preset]
    cols = [policy, *[b for b in proto.baselines if b != policy]]
    rows = []
    for figure in dict.fromkeys(part["figure"]):
        cells = part[part["figure"] == figure].set_index("policy")
        tds = [
            f"<td>{_interval(*cells.loc[p, ['mean', 'lo', 'hi', 'worlds']])}</td>"
            if p in cells.index
            else "<td></td>"
            for p in cols
        ]
        entry = cells.loc[policy]
        tds += [f"<td>{_diff(entry, k)}</td>" for k in ("none", "threshold")]
        rows.append(
            f"<tr><td class='l'>{html.escape(labels.get(figure, figure))}</td>{''.join(tds)}</tr>"
        )
    heads = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    return (
        f"<h3>outcome card</h3><table><tr><th class='l'>figure</th>{heads}"
        "<th>entry − none</th><th>entry − threshold</th></tr>" + "".join(rows) + "</table>"
    )


def _chart(outcome: Outcome, preset: str) -> bytes | None:
    from matplotlib.figure import Figure

    from lab.study.analysis import png_bytes

    runs = outcome.runs[outcome.runs["preset"] == preset]
    means = runs.groupby(["policy", "world_seed"])[["rr", "rf"]].mean().groupby("policy").mean()
    fig = Figure(figsize=(5.2, 3.8))
    ax = fig.subplots()
    for i, (name, grid) in enumerate(outcome.protocol.front_policies().items()):
        pts = means.loc[[p for p in grid if p in means.index]].sort_values("rr")
        ax.plot(pts["rf"], pts["rr"], "-o", ms=3, lw=1, color=f"C{i}", label=f"front: {name}")
    for j, name in enumerate((outcome.policy, *outcome.protocol.baselines)):
        if name in means.index:
            ax.plot(
                *means.loc[name, ["rf", "rr"]],
                "s*^"[j % 3],
                ms=8,
                color="k" if j == 0 else f"C{j + 3}",
                label=name,
            )
    ax.set_xlabel("RF (mean over worlds)", fontsize=8)
    ax.set_ylabel("RR (mean over worlds)", fontsize=8)
    ax.set_title(f"{preset}: the entry against the fronts", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return png_bytes(fig)
