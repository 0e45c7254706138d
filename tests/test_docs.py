"""Documentation that stays true: every Python block of the README and the site runs, every
TOML block parses, the generated tables match the code, every registered policy and preset is
documented, the site builds with ``mkdocs build --strict`` and the tutorial notebook runs."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
GENERATED = DOCS / "reference" / "tables.md"
#: pages whose blocks another test runs, with what it checks of their output
RUN_ELSEWHERE = {
    "docs/writing-a-policy.md": "tests/test_check_policy.py::test_the_guide_code_runs",
}
# a block is skipped when the last non-blank line before it is `<!-- not run: REASON -->`
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->")


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path) -> list[tuple[str, str, str | None]]:
    """(language, code, reason not run or None) of each fenced block of ``page``."""
    out, before, fence = [], "", None
    for line in page.read_text().splitlines(keepends=True):
        if fence is None:
            if line.startswith("```"):
                marker = _NOT_RUN.search(before)
                fence = (line[3:].strip(), [], marker.group(1).strip() if marker else None)
            elif line.strip():
                before = line
        elif line.rstrip() == "```":
            out.append((fence[0], "".join(fence[1]), fence[2]))
            fence, before = None, ""
        else:
            fence[1].append(line)
    return out


def test_blocks_are_found_and_a_marker_skips_one(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "x\n\n```python\nprint(1)\n```\n\n<!-- not run: a signature -->\n\n```python\nf(x) -> y\n"
        "```\n\n```toml\na = 1\n```\n"
    )
    assert blocks(page) == [
        ("python", "print(1)\n", None),
        ("python", "f(x) -> y\n", "a signature"),
        ("toml", "a = 1\n", None),
    ]


#: pages whose blocks take seconds (worker processes): the slow tier runs them
SLOW_PAGES = {"docs/studies.md"}


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=[pytest.mark.slow] if _name(p) in SLOW_PAGES else []) for p in PAGES],
    ids=_name,
)
def test_every_code_block_runs(page, tmp_path, monkeypatch):
    """A page's Python blocks run in order in one namespace (a reader goes top to bottom),
    in a scratch directory so nothing they write lands in the repository."""
    found = blocks(page)
    python = [(code, reason) for lang, code, reason in found if lang == "python"]
    for lang, code, _ in found:
        if lang == "toml":
            tomllib.loads(code)
    for _, reason in python:
        if reason is not None:
            assert len(reason) > 3, f"{_name(page)}: say why a block is not run"
    runnable = [code for code, reason in python if reason is None]
    if not runnable:
        return
    if _name(page) in RUN_ELSEWHERE:
        return  # run by the test named there
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs"}
    with contextlib.redirect_stdout(io.StringIO()):
        for code in runnable:
            # as a reader's script runs it: without this module's __future__ imports
            exec(compile(code, _name(page), "exec", dont_inherit=True), namespace)


def test_the_readme_links_to_files_that_exist():
    """The README's relative links (GitHub renders them; the site does not show the README)."""
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert len(targets) > 20
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert not missing, missing


def test_the_pages_run_elsewhere_are_run_there():
    for page, test in RUN_ELSEWHERE.items():
        file, name = test.split("::")
        assert f"def {name}(" in (ROOT / file).read_text()
        assert page in (ROOT / file).read_text()


@pytest.mark.slow  # over 5 s on 2 cores (the fast tier keeps under 5 s a test)
def test_generated_tables_match_the_code():
    script = ROOT / "scripts" / "reference_doc.py"
    res = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert res.returncode == 0, res.stdout + res.stderr


def undocumented(names, pages) -> list[str]:
    """The names that no page mentions as code (in backticks)."""
    text = "\n".join(p.read_text() for p in pages)
    return [n for n in names if not re.search(rf"`{re.escape(n)}(`|[:+ ])", text)]


def test_every_policy_and_preset_is_documented():
    """A registered policy or preset needs a description and a hand-written page naming it
    (the generated tables do not count)."""
    from abm.registry import Registry
    from abm.scenarios import available_scenarios

    pages = [p for p in PAGES if p != GENERATED]
    policies = Registry().describe("policy")
    presets = available_scenarios()
    assert "german-credit" in presets  # setup.sh --dev installs its data: all 14 are checked
    for kind, described in (("policy", policies), ("preset", presets)):
        assert not [n for n, d in described.items() if not d.strip()], (
            f"a {kind} lacks a description"
        )
        missing = undocumented(described, pages)
        assert not missing, f"{kind}s on no page of README.md or docs/: {missing}"


def test_undocumented_finds_a_name_no_page_mentions(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("`threshold` and `roar-l1:alpha=0.1` and threshold-true in prose\n")
    assert undocumented(["threshold", "roar-l1", "threshold-true"], [page]) == ["threshold-true"]


@pytest.mark.slow  # over 5 s on 2 cores (the fast tier keeps under 5 s a test)
def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: a broken link or anchor, a page missing from the nav's
    files, a bad API reference or a failing plugin fails the build."""
    site = tmp_path / "site"
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    api = (site / "reference" / "api" / "index.html").read_text()
    for name in (
        "RecourseModel",
        "RecoursePolicy",
        "Recommendation",
        "Registry",
        "check_policy",
        "run_study",
    ):
        assert name in api, name
    assert "recourse-abm study run" in (site / "reference" / "cli" / "index.html").read_text()
    assert (site / "tutorial" / "first-study" / "index.html").exists()
    assert (site / "_repo" / "results" / "pareto-T1-b005.png").exists()


@pytest.mark.slow
def test_the_tutorial_notebook_runs():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(DOCS / "tutorial" / "first-study.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "40 runs" in outputs and "over 20 pairs" in outputs
    assert any("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
