"""Every shipped result is current (issue 48, item 9): no file under results/ names the
machine that wrote it, and every result the documentation quotes (a table generated from
it, a figure embedded, a file named) was written under the current results schema,
:data:`abm.provenance.RESULTS_SCHEMA`, or waits for its rerun in :data:`AWAITING_RERUN`.

A page quotes a result when a block of it is generated from the result (:data:`GENERATED`)
or when it names the result's file (a picture embedded, a link, a path in backticks); a
folder named is not a quote. A result records its schema in a ``results_schema`` column
(CSV) or key (JSON), or as
"results schema N" in its text (Markdown, HTML); one that records none (a picture, an older
table) counts as stale. When ``RESULTS_SCHEMA`` is bumped, every quoted result not yet
rerun becomes stale: list it in :data:`AWAITING_RERUN`, and take it off when its rerun
lands (a folder key covers every file in it).
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path

from abm.provenance import RESULTS_SCHEMA

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# text files a result may be written as (the rest are pictures, Parquet, weights)
TEXT = (".md", ".csv", ".json", ".jsonl", ".html", ".toml", ".txt")
# the paths of the machine that wrote a file: a shipped result must not need them
ABSOLUTE = re.compile(r"(?<![\w.])/(?:work|home|root|tmp|Users)/|\b[A-Za-z]:\\")
_BLOCK = re.compile(r"<!-- ([a-z][a-z0-9:-]*) -->")
_PATH = re.compile(r"results/[A-Za-z0-9_./-]*[A-Za-z0-9_-]")
_SCHEMA_TEXT = re.compile(r"results schema (\d+)", re.I)

#: generated blocks written from the code, not from a result (scripts/reference_doc.py,
#: card_table.py, readme_columns.py)
FROM_CODE = {
    "presets",
    "policies",
    "tick-columns",
    "candidate-columns",
    "fields",
    "one-way",
    "benchmark-tiers",
    "not-entered",
    "palette",
    "episode-summary",
    "figures",
    "columns:ticks",
    "columns:candidates",
}
#: every generated block written from a shipped result: (page, block) -> its source
GENERATED = {
    ("docs/capacity-goal.md", "capacity-tables"): "results/capacity-goal/table.csv",
    ("docs/capacity-goal.md", "capacity-phases"): "results/capacity-goal/phases.csv",
    ("docs/constrained-goal.md", "constrained-training"): "results/constrained-goal/training.csv",
    (
        "docs/constrained-goal.md",
        "constrained-paper-table",
    ): "results/constrained-goal/paper/table.csv",
    (
        "docs/constrained-goal.md",
        "constrained-paper-reach",
    ): "results/constrained-goal/paper/reach.csv",
    ("docs/constrained-goal.md", "constrained-recession-table"): (
        "results/constrained-goal/recession/table.csv"
    ),
    ("docs/constrained-goal.md", "constrained-recession-reach"): (
        "results/constrained-goal/recession/reach.csv"
    ),
    (
        "docs/constrained-goal.md",
        "constrained-paper-tried",
    ): "results/constrained-goal/paper/tried.csv",
    ("docs/constrained-goal.md", "constrained-recession-tried"): (
        "results/constrained-goal/recession/tried.csv"
    ),
    ("docs/endogenous-shift.md", "shift-tables"): "results/endogenous-shift/table.csv",
    ("docs/endogenous-shift.md", "shift-ablation"): "results/endogenous-shift/ablation.csv",
    ("docs/five-families.md", "goals"): "results/five-families/leaderboard.csv",
    ("docs/five-families.md", "generators"): "results/five-families/leaderboard.csv",
    ("docs/robust.md", "robust-alpha"): "results/robust-alpha/table.csv",
    # every card there (the leaderboard refuses a card of another schema itself)
    ("docs/leaderboard.md", "leaderboard"): "results/benchmark/cards/",
    ("docs/own-data.md", "whatif-german"): "results/whatif/german-credit/whatif.json",
    ("docs/own-data.md", "whatif-german-onehot"): "results/whatif/german-onehot/whatif.json",
}
#: results that record no schema themselves -> the file the same call wrote that does
RECORDED_IN = {
    "results/exploration/dhat_error.png": "results/exploration/summary.md",
    "results/five-families/leaderboard.csv": "results/five-families/report.html",
    "results/five-families/fronts.csv": "results/five-families/report.html",
    "results/endogenous-shift/table.csv": "results/endogenous-shift/report.html",
    "results/endogenous-shift/shift-vs-cost.png": "results/endogenous-shift/report.html",
    "results/endogenous-shift/paired.png": "results/endogenous-shift/report.html",
    "results/endogenous-shift/ablation.png": "results/endogenous-shift/ablation.csv",
    "results/capacity-goal/fronts.png": "results/capacity-goal/table.csv",
    "results/improvement/mer_vs_round.png": "results/improvement/table.csv",
    "results/improvement/noise_sweep.png": "results/improvement/table.csv",
    "results/capacity-goal/ticks.png": "results/capacity-goal/table.csv",
    "results/constrained-goal/paper/goals.png": "results/constrained-goal/paper/table.csv",
    "results/constrained-goal/learning.png": "results/constrained-goal/training.csv",
    "results/constrained-goal/paper/fronts.png": "results/constrained-goal/paper/table.csv",
    "results/constrained-goal/recession/goals.png": "results/constrained-goal/recession/table.csv",
    "results/constrained-goal/recession/fronts.png": (
        "results/constrained-goal/recession/table.csv"
    ),
    "results/sensible/sensible.md": "results/sensible/sensible.csv",
}
#: quoted results awaiting their rerun under issue 48: path (a folder/ covers every file in
#: it) -> why it is quoted anyway. Schema N is the one in force when the file was written.
AWAITING_RERUN = {
    # at the current schema: listed so that the bump does not fail before their reruns land
    # older schemas, each the substance of its page
}


def awaiting_rerun(path: str) -> bool:
    """Whether the shipped result ``path`` (relative to the root) waits for its rerun: a
    test that regenerates a page from it then checks the page says so instead."""
    return any(
        path == key or (key.endswith("/") and path.startswith(key)) for key in AWAITING_RERUN
    )


def shipped_results() -> list[Path]:
    """The files under results/ the repository ships (git's list; without git, every file
    outside the run stores)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "results"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        return [
            p
            for p in (ROOT / "results").rglob("*")
            if p.is_file() and not any(part.startswith("store") for part in p.parts)
        ]


def absolute_paths(text: str) -> list[str]:
    """The absolute machine paths in ``text`` (each with what follows up to a blank)."""
    return [text[m.start() :].split()[0] for m in ABSOLUTE.finditer(text)]


def recorded_schema(path: Path) -> set[int | None]:
    """The results schemas ``path`` records: its ``results_schema`` column (CSV; None for a
    row that records none) or key (JSON), or "results schema N" in its text; empty when it
    records none; a Parquet file of the benchmark's its ``recourse-abm`` metadata."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
        schema = json.loads(meta.get(b"recourse-abm", b"{}")).get("results_schema")
        return set() if schema is None else {int(schema)}
    if path.suffix not in TEXT:
        return set()
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        if rows and "results_schema" in rows[0]:
            return {int(float(r["results_schema"])) if r["results_schema"] else None for r in rows}
        return set()
    if path.suffix == ".json":
        data = json.loads(text)
        schema = data.get("results_schema") if isinstance(data, dict) else None
        return set() if schema is None else {int(schema)}
    return {int(n) for n in _SCHEMA_TEXT.findall(text)}


def schema_of(rel: str) -> set[int | None]:
    """The schemas of the shipped result ``rel``, read where its writer records them (none
    for a result not written yet)."""
    path = ROOT / RECORDED_IN.get(rel, rel)
    if path.is_dir():  # a folder of results (the benchmark's cards): each file's
        return set().union(*(recorded_schema(f) for f in sorted(path.glob("*.json"))))
    return recorded_schema(path) if path.is_file() else set()


def doc_blocks() -> set[tuple[str, str]]:
    """(page, block) of every generated block of the docs and the README."""
    return {
        (p.relative_to(ROOT).as_posix(), m) for p in PAGES for m in _BLOCK.findall(p.read_text())
    }


def quoted() -> dict[str, set[str]]:
    """Shipped result -> the pages that quote it: the sources of generated blocks, and the
    files under results/ a page embeds, links or names (folders named are not quotes)."""
    out: dict[str, set[str]] = {}
    for (page, _), source in GENERATED.items():
        if source.endswith("/") and not any((ROOT / source).glob("*.json")):
            continue  # a folder of results with none in it yet quotes nothing
        out.setdefault(source, set()).add(page)
    for page in PAGES:
        for rel in set(_PATH.findall(page.read_text())):
            if (ROOT / rel).is_file():
                out.setdefault(rel, set()).add(page.relative_to(ROOT).as_posix())
    return out


def awaiting(rel: str, allow: dict[str, str]) -> bool:
    return any(rel == key or (key.endswith("/") and rel.startswith(key)) for key in allow)


def stale(schema: int = RESULTS_SCHEMA, allow: dict[str, str] | None = None) -> list[str]:
    """One line per quoted result whose schema is not ``schema`` and that ``allow`` (default
    :data:`AWAITING_RERUN`) does not list: its path, what it records, the pages."""
    allow = AWAITING_RERUN if allow is None else allow
    out = []
    for rel, pages in sorted(quoted().items()):
        if awaiting(rel, allow):
            continue
        found = schema_of(rel)
        if found != {schema}:
            shown = sorted("none" if s is None else str(s) for s in found)
            what = f"schema {', '.join(shown)}" if found else "no schema"
            out.append(f"{rel} ({what}; quoted by {', '.join(sorted(pages))})")
    return out


# -- no machine paths -------------------------------------------------------------------
def test_no_shipped_result_holds_an_absolute_machine_path():
    found = {}
    # the reports kept beside the docs are results too (docs/studies/*.html)
    for path in [*shipped_results(), *sorted((ROOT / "docs").rglob("*.html"))]:
        if path.suffix in TEXT and path.is_file():
            hits = absolute_paths(path.read_text(encoding="utf-8", errors="replace"))
            if hits:
                found[path.relative_to(ROOT).as_posix()] = hits[:3]
    assert not found, f"absolute paths (write them from the repository root): {found}"


def test_absolute_paths_are_found_and_repository_paths_are_not():
    text = (
        "see /work/main/results/x.csv, /home/ann/r, C:\\Users\\r and /tmp/q; "
        "not results/pareto/T1-b005, ../results/a.png, 1/2 or https://example.org/tmp/a"
    )
    assert absolute_paths(text) == [
        "/work/main/results/x.csv,",
        "/home/ann/r,",
        "C:\\Users\\r",
        "/tmp/q;",
    ]
    assert absolute_paths("results/sensible/sensible.md and docs/rl.md") == []


# -- quoted results are current -----------------------------------------------------------
def test_every_generated_block_names_its_source():
    blocks = doc_blocks()
    from_results = {(page, name) for page, name in blocks if name not in FROM_CODE}
    assert from_results == set(GENERATED), "list each block and its source in GENERATED"
    assert {name for _, name in blocks} >= FROM_CODE
    for source in GENERATED.values():
        # a source new with its rerun (e.g. the leaderboard's fronts) may not exist yet
        exists = (ROOT / source).is_dir() if source.endswith("/") else (ROOT / source).is_file()
        assert exists or awaiting(source, AWAITING_RERUN), source
    for source, record in RECORDED_IN.items():
        assert (ROOT / source).is_file() and (ROOT / record).is_file(), record


def test_recorded_schema_is_read_from_a_column_a_key_or_the_text(tmp_path):
    cases = {
        "a.csv": ("method,results_schema\nx,3\ny,4\n", {3, 4}),
        "b.csv": ("method,rr\nx,0.5\n", set()),
        "i.csv": ("method,results_schema\nx,9\ny,\n", {9, None}),  # y: an older row
        "c.json": (json.dumps({"results_schema": 9, "rr": 0.5}), {9}),
        "d.json": ("[1, 2]", set()),
        "e.md": ("Written by `make` (results schema 9).\n", {9}),
        "f.html": ("<p>Results schema 8; written today.</p>", {8}),
        "g.md": ("no schema here\n", set()),
        "h.png": ("results schema 9", set()),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        assert recorded_schema(tmp_path / name) == expected, name


def test_every_quoted_result_is_current_or_awaiting_its_rerun():
    found = stale()
    assert not found, (
        f"quoted results not of results schema {RESULTS_SCHEMA}: rerun them, stop quoting "
        "them, or list them in AWAITING_RERUN with the reason: " + "; ".join(found)
    )


def test_the_check_lists_every_quote_not_of_the_schema_asked_and_not_awaiting():
    assert len(stale(schema=-1, allow={})) == len(quoted())
    board = "results/five-families/leaderboard.csv"
    (schema,) = schema_of(board)  # its report, written by the same call, records it
    assert not any(line.startswith(board) for line in stale(schema, allow={}))
    line = f"{board} (schema {schema}; quoted by docs/five-families.md)"
    assert line in stale(schema + 1, allow={})
    assert line not in stale(schema + 1, allow={"results/five-families/": "its rerun"})
    assert line in stale(schema + 1, allow={"results/five-families/report.html": "only that"})


def test_the_allow_list_names_quoted_results_and_says_why():
    quotes = quoted()
    for key, reason in AWAITING_RERUN.items():
        assert any(awaiting(rel, {key: reason}) for rel in quotes), f"{key} is quoted nowhere"
        assert len(reason) > 20, key
        # a result new with its rerun is named by a generated block before it exists
        new = any(awaiting(source, {key: reason}) for source in GENERATED.values())
        assert (ROOT / key).exists() or new, key
