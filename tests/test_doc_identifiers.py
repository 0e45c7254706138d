"""The names the pages quote exist (issue 54, item 7): every dotted Python name of the
project (``abm.…``, ``policies.…``, ``lab.…``, ``dashboards.…``), every repository path and
every module-level constant (``CHANGE_TOL``) that README.md or a page of docs/ quotes in
backticks outside code blocks. Code blocks are run by tests/test_docs.py."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_TICKED = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_FENCED = re.compile(r"```.*?```", re.S)
_DOTTED = re.compile(r"^(?:abm|policies|lab|dashboards)(?:\.[A-Za-z_]\w*)+(?:\(\))?$")
_CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
#: a file name, not a Python name: ``policies.png`` is a chart a study writes
_FILE_SUFFIX = re.compile(r"\.(?:png|csv|md|py|toml|json|jsonl|html|parquet|txt|sh|yml|yaml)$")
#: the top level of the repository: a quoted path starts with one of these
_TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} | {".ci"}
#: quoted on purpose though not in the repository: what the README's commands write, and
#: environment variables of other programs
EXTERNAL = {
    "results/default/",
    "results/whatif/store",
    "ONEDNN_MAX_CPU_ISA",
    "MKL_ENABLE_INSTRUCTIONS",
    "NPY_DISABLE_CPU_FEATURES",
    "TORCH_INDEX_URL",
}


def quoted(page: Path) -> list[str]:
    """The backticked spans of ``page`` outside fenced code blocks."""
    return [m.group(1).strip() for m in _TICKED.finditer(_FENCED.sub("", page.read_text()))]


def resolves(name: str) -> bool:
    """Whether the dotted ``name`` is a module, or an attribute reached from one."""
    parts = name.removesuffix("()").split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def is_path(span: str) -> bool:
    """A repository path: no spaces, starting at the top level (``abm/card.py``,
    ``results/five-families/``), no placeholder (``*``, ``{…}``, ``<…>``, ``SETTING``)."""
    if " " in span or any(c in span for c in "*{}<>…") or re.search(r"[A-Z]{4,}", span):
        return False
    return "/" in span and span.split("/")[0] in _TOP


def in_repository(path: str) -> bool:
    """Whether ``path`` is a file git keeps (tracked, or new and not ignored), or a folder
    holding one: CI runs on a clean clone, where what a command wrote here is absent."""
    path = path.split("::")[0].split("#")[0].rstrip("/")
    if not (ROOT / ".git").exists():
        return (ROOT / path).exists()
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return bool(listed.stdout.strip())


def constants() -> set[str]:
    """Module-level UPPER_CASE names assigned anywhere in the project's Python."""
    names: set[str] = set()
    for top in ("abm", "policies", "lab", "dashboards", "scripts", "tests", "benchmarks"):
        for path in (ROOT / top).rglob("*.py"):
            names.update(
                re.findall(r"^(_?[A-Z][A-Z0-9_]*)\s*(?::[^=\n]*)?=", path.read_text(), re.M)
            )
    return names


@pytest.fixture(scope="module")
def defined() -> set[str]:
    return constants()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_name_and_path_exists(page, defined):
    missing = []
    for span in quoted(page):
        if span in EXTERNAL:
            continue
        if _DOTTED.match(span) and not _FILE_SUFFIX.search(span):
            ok = resolves(span)
        elif is_path(span):
            ok = in_repository(span)
        elif _CONSTANT.match(span):
            ok = span in defined
        else:
            continue
        if not ok:
            missing.append(span)
    assert not missing, f"{page.relative_to(ROOT)} quotes what does not exist: {missing}"


def test_the_check_finds_what_is_missing(tmp_path, defined):
    page = tmp_path / "page.md"
    page.write_text(
        "`abm.card.CORE` and `abm.card.NO_SUCH` and `abm/card.py` and `abm/nope.py`;\n"
        "`CHANGE_TOL` and `_CHANGE_TOL`, `policies.png` and `results/SETTING/x.csv`.\n"
        "```\n`abm.not_checked_in_code`\n```\n"
    )
    spans = quoted(page)
    assert "abm.not_checked_in_code" not in spans
    assert resolves("abm.card.CORE") and not resolves("abm.card.NO_SUCH")
    assert is_path("abm/nope.py") and not in_repository("abm/nope.py")
    assert in_repository("abm/card.py") and in_repository("results/")
    assert not is_path("results/SETTING/x.csv")  # a placeholder
    assert "CHANGE_TOL" in defined and "_CHANGE_TOL" not in defined
    assert _FILE_SUFFIX.search("policies.png")
