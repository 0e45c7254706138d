"""MkDocs hooks (mkdocs.yml ``hooks:``): pages link to files outside ``docs/`` by their path
in the repository, so the links work on GitHub; on the site the shipped results' pictures and
HTML reports are copied under ``_repo/`` and the links point there, and a link to any other
file outside ``docs/`` (a results table, CHANGELOG.md, a source file) becomes its path."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
#: shipped files the site serves beside its pages (pictures and self-contained reports)
SERVED = ("results/**/*.png", "results/**/*.html")
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_config(config):
    # mkdocs-typer2 runs `typer MODULE utils docs`: the typer of this environment, also when
    # mkdocs is started as .venv/bin/mkdocs without the environment on PATH
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    return config


def on_files(files: Files, config) -> Files:
    for pattern in SERVED:
        for path in sorted(ROOT.glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            files.append(File.generated(config, f"_repo/{rel}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    docs = Path(config["docs_dir"]).resolve()
    here = (docs / page.file.src_uri).parent

    def rewrite(m: re.Match) -> str:
        bang, text, target, anchor = m.group(1), m.group(2), m.group(3), m.group(4) or ""
        if "://" in target or target.startswith(("/", "mailto:")):
            return m.group(0)
        path = (here / target).resolve()
        if path.is_relative_to(docs) or not path.is_relative_to(ROOT):
            return m.group(0)
        rel = path.relative_to(ROOT).as_posix()
        if files.get_file_from_path(f"_repo/{rel}") is not None:
            url = os.path.relpath(docs / "_repo" / rel, here).replace(os.sep, "/")
            return f"{bang}[{text}]({url}{anchor})"
        if bang:  # a picture the site does not serve: left as is, so --strict reports it
            return m.group(0)
        return (
            text
            if text.strip("`") == rel or text.strip("`").rstrip("/") in rel
            else (f"{text} (`{rel}`)")
        )

    return _LINK.sub(rewrite, markdown)
