"""The dynamic benchmark (issue 50): a versioned protocol, one command, a card that verifies."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from abm.registry import REGISTRY
from abm.validation import ConfigError
from lab.benchmark import card
from lab.benchmark.protocol import (
    PAST,
    RECIPE_FIELDS,
    RUN_FIELDS,
    TIERS,
    VERSION,
    VERSIONS,
    Protocol,
    past,
    protocol,
    same_runs,
)
from lab.benchmark.run import (
    BenchmarkRefused,
    not_run_presets,
    run_benchmark,
    run_benchmarks,
    store_of,
    studies,
)
from lab.cli import app
from policies.composite import CompositePolicy
from policies.goals import LastThreshold
from policies.recommenders import ExactLinear

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_each_tier_is_the_one_its_version_pins():
    """A changed fixed element (presets, worlds, baselines, margins, figures, bounds,
    corrections, check_policy's rules) changes the digest: give the protocol a new version
    and pin its digests in lab.benchmark.protocol.VERSIONS."""
    for tier in TIERS:
        assert protocol(tier).digest() == VERSIONS[VERSION][tier], tier
    full = protocol("full")
    for change in ({"worlds": 19}, {"margins": full.margins[:-1]}, {"check_rules": ()}):
        assert full.model_copy(update=change).digest() != full.digest()


def test_each_earlier_version_is_the_one_its_digest_pins_and_runs_the_same_runs():
    """PAST says what each earlier version fixed otherwise; rebuilt from it, every tier has
    the digest its version pinned, and only the entry check differs from today's, so its
    runs (and run ids) are today's: its cards can be judged again without a run."""
    assert set(VERSIONS) == {VERSION, *PAST}
    for version in PAST:
        for tier in TIERS:
            old, now = past(version, tier), protocol(tier)
            assert old.digest() == VERSIONS[version][tier], (version, tier)
            assert same_runs(old, now) and old.digest() != now.digest()
            # no learned entry had a recipe before version 3, and no φ entry before 4: none
            # of their cards carries over; a hybrid's card of version 3 does
            for kind, fields in RECIPE_FIELDS.items():
                since = 3 if kind == "hybrid" else 4
                carried = int(version.rsplit("/", 1)[1]) >= since
                assert same_runs(old, now, fields) == carried, (version, tier, kind)
            assert (old.training is None) == (
                version in ("dynamic-recourse/1", "dynamic-recourse/2")
            )
            rest = now.presets[1:]  # the first preset's study is enough to compare ids
            assert [r.run_id for r in studies("threshold", old, rest)[0].runs()] == [
                r.run_id for r in studies("threshold", now, rest)[0].runs()
            ]
    full = protocol("full")
    for field in RUN_FIELDS:  # any run field set otherwise: other runs
        quick = getattr(protocol("quick"), field)
        if quick != getattr(full, field):
            assert not same_runs(full, full.model_copy(update={field: quick}))
    assert not same_runs(full, full.model_copy(update={"worlds": 19}))
    assert same_runs(full, full.model_copy(update={"check_rules": ()}))
    with pytest.raises(ValueError, match="version = 'dynamic-recourse/0'"):
        past("dynamic-recourse/0")


def test_the_tiers_hold_what_the_protocol_says():
    full, quick = protocol("full"), protocol("quick")
    assert full.worlds >= 20 and full.verdicts and quick.verdicts
    assert "lending" in full.presets and "lending" not in quick.presets
    assert not protocol("smoke").verdicts
    baselines = full.baseline_policies()
    assert baselines[:2] == ["none", "threshold"] and len(baselines) == 2 + 3 * len(full.margins)
    with pytest.raises(ValueError, match="tier = 'fast'"):
        protocol("fast")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    outcome = run_benchmark("threshold-true", tier="smoke", store=store, workers=1, log=str)
    paths = card.write(outcome, tmp_path_factory.mktemp("card"))
    return outcome, paths, store


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_a_smoke_card_holds_the_runs_and_verifies(smoke):
    outcome, paths, store = smoke
    doc = json.loads(paths["json"].read_text())
    proto = protocol("smoke")
    assert doc["protocol"] == {"version": VERSION, "tier": "smoke", "digest": proto.digest()}
    assert doc["policy"]["spec"] == "threshold-true" and "recourse-abm" in doc["policy"]["versions"]
    n_policies = 1 + len(proto.baseline_policies())
    assert len(doc["runs"]["entry"]) == proto.worlds * proto.episodes
    assert doc["runs"]["baselines"]["n"] == (n_policies - 1) * proto.worlds * proto.episodes
    assert {r["run_id"] for r in doc["runs"]["entry"]} == set(
        outcome.runs.loc[outcome.runs["policy"] == "threshold-true", "run_id"]
    )
    assert len(doc["sample"][0]["ticks"]["n_accepted"]) == proto.ticks
    said = card.verify(paths["json"], store=store, log=str)
    assert "bit for bit (same machine)" in said[-1]
    assert "<h1>threshold-true</h1>" in paths["html"].read_text()


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_entries_run_together_get_the_cards_they_get_alone(smoke):
    """run_benchmarks reads the baselines once for several entries; each card is the one
    its entry gets alone: the same runs, tables and checks."""
    import pandas as pd

    alone, _, store = smoke
    together = run_benchmarks(
        ["threshold-true", "threshold"], tier="smoke", store=store, workers=1, log=str
    )
    assert [o.policy for o in together] == ["threshold-true", "threshold"]
    first = together[0]
    for name in ("card", "fronts", "ticks"):
        pd.testing.assert_frame_equal(getattr(first, name), getattr(alone, name))
    key = ["preset", "policy", "world_seed", "seed"]
    pd.testing.assert_frame_equal(
        first.runs.sort_values(key).reset_index(drop=True),
        alone.runs.sort_values(key).reset_index(drop=True),
    )
    assert set(together[1].runs["policy"]) == set(protocol("smoke").baseline_policies())


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_the_baselines_run_once_for_every_entry(smoke):
    _, _, store = smoke
    seen = []
    run_benchmark(
        "threshold",
        tier="smoke",
        store=store,
        workers=1,
        check=False,
        log=str,
        progress=lambda done, total: seen.append((done, total)),
    )
    # threshold is a baseline: every one of its runs was made for the first entry
    assert seen[0][0] == seen[0][1] == len(studies("threshold", protocol("smoke"))[0].runs())


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_runs_of_another_store_are_shared_by_id(smoke, tmp_path):
    from lab.benchmark.run import share_runs

    _, _, store = smoke
    proto = protocol("smoke")
    n = share_runs([store_of(store, proto)], tmp_path, proto)
    assert n == len(proto.baseline_policies()) * proto.worlds * proto.episodes
    assert share_runs([store_of(store, proto)], tmp_path, proto) == 0  # once only
    seen = []
    outcome = run_benchmark(
        "threshold-true",
        tier="smoke",
        store=tmp_path,
        workers=1,
        check=False,
        log=str,
        progress=lambda done, total: seen.append((done, total)),
    )
    entry_runs = proto.worlds * proto.episodes
    assert seen[0] == (seen[0][1] - entry_runs, seen[0][1])  # only the entry ran
    assert outcome.fronts["vs_front"].tolist() == smoke[0].fronts["vs_front"].tolist()


@pytest.mark.slow
@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d["card"][1].__setitem__("mean", d["card"][1]["mean"] + 0.01), "card row"),
        (
            lambda d: d["runs"]["entry"][0].__setitem__("rf", d["runs"]["entry"][0]["rf"] + 1e-6),
            "from its runs",
        ),
        (lambda d: d["sample"][0]["ticks"]["n_accepted"].__setitem__(3, 99), "diverged at tick 3"),
        (lambda d: d.__setitem__("not_run", {"paper": "edited"}), "not_run = "),
    ],
)
def test_verify_catches_an_edited_figure(smoke, tmp_path, edit, match):
    _, paths, store = smoke
    doc = json.loads(paths["json"].read_text())
    edit(doc)
    edited = tmp_path / "card.json"
    edited.write_text(json.dumps(doc))
    with pytest.raises(card.Mismatch, match=match):
        card.verify(edited, store=store, log=str)


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_a_card_verifies_from_the_shipped_baselines_without_the_store(smoke, tmp_path):
    """A fresh clone has no store: the baselines' per-run figures come from one shipped file,
    bit for bit the store's, and an edited figure there is caught like one on the card."""
    import pyarrow.parquet as pq

    _, paths, store = smoke
    shipped = card.export_baselines(store, tmp_path / "baselines.parquet", tier="smoke")
    empty = tmp_path / "empty"
    said = card.verify(paths["json"], store=empty, baselines=shipped, log=str)
    assert said[0].startswith("tables:")
    with pytest.raises(card.CardError, match="nor in"):
        card.verify(paths["json"], store=empty, baselines=tmp_path / "missing.parquet", log=str)
    table = pq.read_table(shipped)
    frame = table.to_pandas()
    row = frame.index[(frame["policy"] == "none")][0]
    frame.loc[row, "rf"] += 1e-9
    edited = tmp_path / "edited.parquet"
    pq.write_table(pa_table(frame).replace_schema_metadata(table.schema.metadata), edited)
    with pytest.raises(card.Mismatch, match="card row"):
        card.verify(paths["json"], store=empty, baselines=edited, log=str)
    with pytest.raises(card.CardError, match="holds 0 of the"):
        card.export_baselines(empty, tmp_path / "none.parquet", tier="smoke")


@pytest.mark.slow  # builds the full tier's 12,480 run ids per card: about 5 s each
def test_the_shipped_cards_follow_from_their_runs_and_the_shipped_baselines(tmp_path):
    """What a fresh clone can check: each shipped card's tables, from its own runs and the
    shipped baselines' (results/benchmark/baselines-full.parquet), with no store."""
    shipped = ROOT / card.BASELINES
    table = card.read_baselines(shipped)
    full = protocol("full")
    assert len(table) == len(full.baseline_policies()) * len(full.presets) * full.worlds * 2
    for path in sorted((ROOT / "results" / "benchmark" / "cards").glob("*-full.json")):
        said = card.verify(path, store=tmp_path, baselines=shipped, reruns=0, log=str)
        assert said[-1].startswith("tables:"), path.name
        # a learned entry's predictors ship beside the cards: checked byte for byte first
        learned = "learned" in card.read(path)
        assert len(said) == 1 + learned and said[0].startswith("artefacts:") == learned


def pa_table(frame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)


def _as_version(doc: dict, version: str) -> dict:
    """``doc`` stamped as a card of ``version`` (what that version made of the same runs)."""
    tier = doc["protocol"]["tier"]
    stamped = json.loads(json.dumps(doc))
    stamped["protocol"] = {"version": version, "tier": tier, "digest": VERSIONS[version][tier]}
    return stamped


@pytest.mark.slow  # a smoke benchmark: about 5 s, then its check again
def test_a_card_of_an_earlier_version_is_judged_again_from_its_runs(smoke, tmp_path):
    """A card of dynamic-recourse/1 (same runs) carried over: runs, sample, tables and the
    machine that made the runs kept, check_policy's report under today's rules, and the
    result verifies; an edited figure or a version with other runs is refused."""
    _, paths, store = smoke
    doc = json.loads(paths["json"].read_text())
    old = _as_version(doc, "dynamic-recourse/1")
    with pytest.raises(card.CardError, match="dynamic-recourse/1"):
        card.check_version(old)
    outcome, made = card.rejudge(old, store=store)
    assert made["protocol"]["version"] == "dynamic-recourse/1"
    assert "batch" in outcome.check and outcome.protocol == protocol("smoke")
    out = card.write(outcome, tmp_path / "again", made)
    again = json.loads(out["json"].read_text())
    for key in ("runs", "sample", "card", "fronts", "machine", "created", "not_run"):
        assert again[key] == doc[key], key
    assert again["protocol"] == doc["protocol"]
    assert again["judged_again"]["runs_of"] == old["protocol"]
    said = card.verify(out["json"], store=store, log=str)
    assert said[0].startswith("tables:") and "bit for bit" in said[-1]
    path = tmp_path / "v1" / "card.json"
    path.parent.mkdir()
    path.write_text(json.dumps(old))
    result = runner.invoke(app, ["benchmark", "--rejudge", str(path), "--store", str(store)])
    assert result.exit_code == 0, result.output
    carried = card.read(tmp_path / "v1" / VERSION.replace("/", "-") / "card.json")
    assert carried["card"] == doc["card"] and "dynamic-recourse/1 ->" in result.output
    edited = json.loads(json.dumps(old))
    edited["runs"]["entry"][0]["rf"] += 0.25
    with pytest.raises(card.Mismatch, match="card row"):
        card.rejudge(edited, check="(not run)", store=store)
    with pytest.raises(card.CardError, match="not a version"):
        card.rejudge(_as_version(doc, VERSION) | {"protocol": {"version": "x/0"}}, store=store)


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_baselines_of_an_earlier_version_are_carried_over_row_for_row(smoke, tmp_path):
    import pyarrow.parquet as pq

    _, _, store = smoke
    path = card.export_baselines(store, tmp_path / "b.parquet", tier="smoke")
    arrow = pq.read_table(path)
    meta = json.loads(arrow.schema.metadata[b"recourse-abm"])
    earlier = {
        **meta,
        "version": "dynamic-recourse/1",
        "digest": VERSIONS["dynamic-recourse/1"]["smoke"],
    }
    stamp = {b"recourse-abm": json.dumps(earlier).encode()}
    pq.write_table(arrow.replace_schema_metadata(stamp), tmp_path / "old.parquet")
    with pytest.raises(card.CardError, match="dynamic-recourse/1"):
        card.read_baselines(tmp_path / "old.parquet")
    carried = card.carry_baselines(tmp_path / "old.parquet", tmp_path / "new.parquet")
    assert card.read_baselines(carried).equals(card.read_baselines(path))
    bad = {**earlier, "digest": "0" * 16}
    pq.write_table(
        arrow.replace_schema_metadata({b"recourse-abm": json.dumps(bad).encode()}),
        tmp_path / "bad.parquet",
    )
    with pytest.raises(card.CardError, match="digest"):
        card.carry_baselines(tmp_path / "bad.parquet", tmp_path / "x.parquet")


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_a_card_of_another_version_is_refused(smoke, tmp_path):
    _, paths, store = smoke
    doc = json.loads(paths["json"].read_text())
    doc["protocol"]["version"] = "dynamic-recourse/0"
    other = tmp_path / "card.json"
    other.write_text(json.dumps(doc))
    with pytest.raises(card.CardError, match="protocol = 'dynamic-recourse/0' is not allowed"):
        card.read(other)
    doc["protocol"].update(version=VERSION, digest="0" * 16)  # same name, other content
    other.write_text(json.dumps(doc))
    with pytest.raises(card.CardError, match="digest"):
        card.read(other)
    result = runner.invoke(app, ["benchmark", "--verify", str(other), "--store", str(store)])
    assert result.exit_code == 2 and "digest" in result.output


class _ChangesImmutable:
    """Threshold advice that also moves feature 7, immutable in the check's paper world."""

    def __init__(self):
        self.inner = CompositePolicy(LastThreshold(), ExactLinear())

    def prepare(self, ctx):
        self.inner.prepare(ctx)

    def recommend(self, obs, rng):
        rec = self.inner.recommend(obs, rng)
        X_cf = rec.X_cf.copy()
        X_cf[:, 7] = np.minimum(obs.X[:, 7] + 0.01, 1.0)
        return dataclasses.replace(rec, X_cf=X_cf)

    def observe(self, feedback):
        self.inner.observe(feedback)


@pytest.fixture
def bad_policy():
    REGISTRY.policy("test-changes-immutable", _ChangesImmutable, "moves an immutable feature")
    yield "test-changes-immutable"
    REGISTRY.remove("policy", "test-changes-immutable")


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_a_policy_that_fails_check_policy_is_refused_with_its_report(bad_policy, tmp_path):
    with pytest.raises(BenchmarkRefused, match="immutables"):
        run_benchmark(bad_policy, tier="smoke", store=tmp_path, workers=1, log=str)
    assert not store_of(tmp_path, protocol("smoke")).exists()  # refused before any run
    out = tmp_path / "card"
    args = ["benchmark", bad_policy, "--tier", "smoke", "--store", str(tmp_path), "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "refused" in result.output and "immutables" in result.output
    # a break the entrant states is checked, reported and allowed
    allowed = run_benchmark(
        bad_policy,
        tier="smoke",
        store=tmp_path,
        workers=1,
        log=str,
        allow={"immutables": "a test"},
    )
    assert allowed.allowed == {"immutables": "a test"} and "broken immutables" in allowed.check


@pytest.mark.parametrize(
    "args, said",
    [
        (["no-such-policy"], "policy = 'no-such-policy' is not registered"),
        (["threshold", "--param", "margin"], "--param = 'margin'"),
        (["threshold", "--tier", "fast"], "fast"),
        ([], "policy is missing"),
        (["threshold", "--baselines", "nowhere.parquet"], "baselines = 'nowhere.parquet' is not"),
        (["threshold", "--baselines", "README.md"], "README.md"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, said, tmp_path):
    result = runner.invoke(app, ["benchmark", *args, "--store", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output


def test_an_entry_is_not_run_where_its_world_is_missing():
    """Like check_policy, a preset whose world the entry cannot be prepared in (no outcome
    delay for an improvement bandit) is left out and named; none at all is a refusal."""
    two = protocol("smoke").model_copy(update={"presets": ("paper", "improvement")})
    skip = not_run_presets("improve-linucb", two)
    assert list(skip) == ["paper"] and "needs outcome_delay" in skip["paper"]
    assert [s.base.name for s in studies("improve-linucb", two, skip)] == ["improvement"]
    assert not_run_presets("threshold", two) == {}
    with pytest.raises(BenchmarkRefused, match="can run in none of the protocol's presets"):
        not_run_presets("improve-linucb", protocol("smoke"))
    result = runner.invoke(app, ["benchmark", "improve-linucb", "--tier", "smoke"])
    assert result.exit_code == 2 and "can run in none" in result.output


def test_every_built_in_policy_has_a_card_or_a_reason():
    """The leaderboard accounts for every registered policy: a card spec, or a line of
    NOT_ENTERED saying why not (docs/leaderboard.md lists them)."""
    from fnmatch import fnmatch

    from lab.benchmark.leaderboard import BUILT_IN, NOT_ENTERED, not_entered

    entered = {spec for tier in BUILT_IN.values() for spec in tier.values()}
    patterns = [n for names in NOT_ENTERED for n in names.split(", ")]
    plugins = set(REGISTRY.plugins)
    for name in REGISTRY.entries("policy"):
        if name in plugins:
            continue
        assert name in entered or any(fnmatch(name, p) for p in patterns), name
    for spec in entered:
        REGISTRY.validate(spec)
    assert "- `threshold-rbr`: at its defaults" in not_entered()
    assert "hybrid-dice" not in not_entered() and "hybrid-dice" in BUILT_IN["full"]


@pytest.mark.slow  # builds the full tier's 12,480 runs
def test_the_protocol_names_only_registered_policies_and_presets():
    full = protocol("full")
    for spec in full.baseline_policies():
        REGISTRY.validate(spec)
    assert isinstance(full, Protocol) and all(s.n_runs for s in studies("threshold", full))


@pytest.mark.slow
def test_a_plugin_enters_the_benchmark_with_one_command(tmp_path):
    """The example plug-in, installed beside the package, gets a card from one command."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "examples" / "plugin", src)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--target", str(site), str(src)], check=True)
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    out = tmp_path / "card"
    command = [sys.executable, "-m", "lab", "benchmark", "recent-max", "--tier", "smoke"]
    command += ["--store", str(tmp_path / "store"), "--out", str(out), "--workers", "1"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((out / "card.json").read_text())
    assert doc["policy"]["versions"].get("recourse-abm-recent-max") == "0.1.0"
    verify = [sys.executable, "-m", "lab", "benchmark", "--verify", str(out / "card.json")]
    verify += ["--store", str(tmp_path / "store")]
    done = subprocess.run(verify, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "verified" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow  # a subprocess that reads every card
def test_the_protocol_table_of_the_guide_is_the_code_s():
    script = ROOT / "scripts" / "benchmark_doc.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # a smoke benchmark: about 5 s
def test_the_leaderboard_has_a_row_per_card_and_refuses_other_versions(smoke, tmp_path):
    from lab.benchmark import leaderboard

    _, paths, _ = smoke
    doc = json.loads(paths["json"].read_text())
    cards = tmp_path / "cards"
    cards.mkdir()
    (cards / "threshold-true-smoke.json").write_text(json.dumps(doc))
    page = leaderboard.markdown(cards)
    assert "### smoke tier (1 card;" in page and "| `threshold-true` |" in page
    assert "### full tier" not in page  # tiers are never mixed, and none is made up
    row = next(line for line in page.splitlines() if line.startswith("| `threshold-true`"))
    assert row.count("|") == 3 + len(protocol("smoke").presets)
    skipped = dict(doc, not_run={"paper": "needs outcome_delay (1..10000)"})
    (cards / "threshold-true-smoke.json").write_text(json.dumps(skipped))
    row = next(
        line for line in leaderboard.markdown(cards).splitlines() if "threshold-true" in line
    )
    assert row.endswith("| not run |")
    other = dict(doc, protocol={**doc["protocol"], "version": "dynamic-recourse/0"})
    (cards / "other.json").write_text(json.dumps(other))
    with pytest.raises(card.CardError, match="dynamic-recourse/0"):
        leaderboard.markdown(cards)
    old = dict(doc, results_schema=doc["results_schema"] - 1)
    (cards / "other.json").write_text(json.dumps(old))
    with pytest.raises(card.CardError, match="results schema"):
        leaderboard.markdown(cards)


@pytest.mark.slow  # a smoke benchmark's entry again: about 5 s
def test_an_entry_judged_on_the_shipped_baselines_gets_the_card_of_the_store(smoke, tmp_path):
    """``baselines``: only the entry runs, the baselines' figures come from the shipped
    file (matched by run id, every one required), and the tables are those the store gives."""
    outcome, paths, store = smoke
    shipped = card.export_baselines(store, tmp_path / "b.parquet", tier="smoke")
    table = card.read_baselines(shipped)
    alone = run_benchmark(
        "threshold-true", tier="smoke", store=tmp_path / "s", workers=1, log=str, baselines=table
    )
    mine = store_of(tmp_path / "s", alone.protocol) / "paper" / "runs"
    assert len(list(mine.glob("*.json"))) == len(alone.runs[alone.runs.policy == "threshold-true"])
    for name in ("card", "fronts"):
        a, b = getattr(alone, name), getattr(outcome, name)
        assert a.equals(b), name
    said = card.verify(paths["json"], store=tmp_path / "s", baselines=shipped, log=str)
    assert "bit for bit" in said[-1]
    with pytest.raises(ConfigError, match="baselines hold 11 of the 12 baseline runs of paper"):
        run_benchmark(
            "threshold-true", tier="smoke", store=tmp_path / "s", log=str, baselines=table[1:]
        )


def test_the_estimate_paces_a_refitting_world_over_a_whole_period(tmp_path, monkeypatch):
    """A world that refits every R ticks is timed over R + 1 ticks after the first (a refit
    and the forks that cross it cost more than the ticks between: the lookahead's full tier
    was estimated at 3.6 min and took 14), the others over the default 5; each preset's
    entry and ``threshold`` once, every run to do counted at its cost."""
    from abm.scenarios import PRESETS
    from lab.benchmark import run

    paced = {}

    def cost(task, ticks, n):
        paced[(task["config"]["name"], task["policy"])] = (ticks, n)
        return 1.0

    monkeypatch.setattr(run, "_run_cost", cost)
    proto = protocol("quick")
    total = run.estimate_seconds("lookahead", proto, tmp_path)
    assert total == sum(len(s.runs()) for s in run.studies("lookahead", proto))
    assert {p for p, _ in paced} == set(proto.presets)
    for (preset, policy), (ticks, n) in paced.items():
        assert policy in ("lookahead", "threshold") and n == PRESETS[preset].ticks == 100
        assert ticks == (PRESETS[preset].retrain_every + 1 if preset == "retraining" else 5)
