"""A study's report as one self-contained HTML page.

The page is a single file a person can open, mail or commit: plots are PNGs embedded as
``data:`` URIs and the styles are inline, so it references nothing outside itself. It
shows, in order: what the study is (name, description, experiment, base scenario, grid),
the run status (completed, errors, missing), the summary table (mean ± 95 % CI over seeds
per policy and sweep point), the plots, the per-policy comparison, and the study file and
provenance (results schema, git commit, package versions, invocations).
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any

import numpy as np

from abm.mechanisms import FIGURES
from abm.provenance import RESULTS_SCHEMA, now
from lab.study.analysis import POLICY_FIGURE, StudyReport, build_report, summarize
from lab.study.stats import world_interval

HTML_NAME = "report.html"
# error messages listed in full; the rest are counted
MAX_ERRORS_SHOWN = 20

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 72em; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.25em; margin-top: 1.8em;
border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
p.lead { color: #444; margin-top: 0; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
.status td { font-weight: 600; } .err { color: #b00020; } .warn { color: #8a5a00; }
.figs { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
figure { margin: 0.6em 0; max-width: 100%; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; max-width: 36em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.15em 1em; }
dt { font-weight: 600; } dd { margin: 0; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: Any) -> str:
    """A table cell: numbers to 4 significant digits, NaN as n/a."""
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.4g}"
    return _e(value)


def _mean_ci(mean: float, ci: float) -> str:
    if mean != mean:
        return "n/a"
    return f"{mean:.3g}" if ci != ci else f"{mean:.3g} ± {ci:.2g}"


def _table(header: list[str], rows: list[list[str]], left: int = 0, cls: str = "") -> str:
    """An HTML table of already escaped cells; the first ``left`` columns align left."""

    def cell(tag: str, i: int, text: str) -> str:
        return f"<{tag}{' class=l' if i < left else ''}>{text}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return f"<table{f' class={cls}' if cls else ''}><tr>{head}</tr>{body}</table>"


def _summary(rep: StudyReport) -> str:
    """Mean ± CI per policy and sweep point (a [[zip]] group shown by its first field)."""
    leads = {a[0] for a in rep.manifest["axes"]}
    keys = [c for c in rep.table.columns if c == "policy" or c in leads]
    header = [_e(k) for k in [*keys, "n"]] + [_e(m) for m in rep.metrics]
    rows = [
        [_num(r[k]) for k in keys]
        + [str(int(r["n"]))]
        + [_mean_ci(r[m], r[f"{m}_ci"]) for m in rep.metrics]
        for _, r in rep.table.iterrows()
    ]
    return _table(header, rows, left=1 if "policy" in keys else 0)


def _policies(rep: StudyReport) -> str:
    header = ["policy", "runs", *(_e(m) for m in rep.metrics)]
    rows = [
        [_e(r["policy"]), str(int(r["n"]))] + [_mean_ci(r[m], r[f"{m}_ci"]) for m in rep.metrics]
        for _, r in rep.policies.iterrows()
    ]
    return _table(header, rows, left=1)


def _card(rep: StudyReport) -> str:
    """The outcome card (abm/card.py) per policy (and preset, when a study sweeps them) over
    all the group's runs, every figure defined in some run: mean ± 95 % CI over seeds, or
    with several worlds mean [95 % interval] with worlds as a random effect
    (:func:`lab.study.stats.world_interval`) and the number of worlds it rests on."""
    ok = rep.runs[rep.runs["status"] == "ok"] if "status" in rep.runs else rep.runs
    figures = [f for f in FIGURES if f.name in ok and ok[f.name].notna().any()]
    by = [b for b in ("scenario", "policy") if b in ok]
    if ok.empty or not figures or not by:
        return ""
    n_worlds = ok["world_seed"].nunique() if "world_seed" in ok else 1
    groups, columns = [], []
    for key, g in ok.groupby(by, sort=False):
        groups.append(" · ".join(str(k) for k in (key if isinstance(key, tuple) else (key,))))
        if n_worlds > 1:
            worlds = [w for _, w in g.groupby("world_seed")]
            width = max(len(w) for w in worlds)
            cells = {}
            for f in figures:
                v = np.full((len(worlds), width), np.nan)
                for i, w in enumerate(worlds):
                    v[i, : len(w)] = w[f.name].to_numpy(float)
                cells[f.name] = _interval(world_interval(v))
        else:
            row = summarize(g, [], [f.name for f in figures]).iloc[0]
            cells = {f.name: _mean_ci(row[f.name], row[f"{f.name}_ci"]) for f in figures}
        columns.append(cells)
    header = ["figure", *(_e(g) for g in groups)]
    rows = [[_e(f.label)] + [c[f.name] for c in columns] for f in figures]
    how = (
        f"mean [95 % interval] over {n_worlds} worlds (worlds as a random effect: "
        "Hall-corrected t on the world means)"
        if n_worlds > 1
        else "mean ± 95 % CI over runs (one world)"
    )
    return (
        f"<h2>Outcome card: {how}</h2><p>The same figures for every policy "
        "(docs/outcome-card.md); the figures of mechanisms that are off in every run are "
        "left out.</p>" + _table(header, rows, left=1)
    )


def _interval(iv: tuple[float, float, float, int]) -> str:
    """mean [lo, hi] (n worlds) of :func:`lab.study.stats.world_interval`; the worlds are
    those where the figure is defined, so they can be fewer than the study's."""
    mean, lo, hi, n = iv
    if mean != mean:
        return "n/a"
    worlds = f"({n} world{'' if n == 1 else 's'})"
    return f"{mean:.3g} {worlds}" if lo != lo else f"{mean:.3g} [{lo:.3g}, {hi:.3g}] {worlds}"


def _status(rep: StudyReport) -> str:
    s = rep.status
    parts = [
        _table(
            ["runs", "completed", "errors", "missing"],
            [
                [
                    str(s["total"]),
                    str(s["completed"]),
                    f"<span class=err>{s['errors']}</span>" if s["errors"] else "0",
                    f"<span class=warn>{s['missing']}</span>" if s["missing"] else "0",
                ]
            ],
            cls="status",
        ),
    ]
    if s["other"]:
        parts.append(
            f"<p>{s['other']} more result(s) from earlier versions of this study "
            "(added with <code>--force</code>) are left out.</p>"
        )
    if s["errors"]:
        failed = rep.runs[rep.runs["status"] != "ok"].drop_duplicates("run_id")
        keys = [c for c in ("policy", *rep.fields, "seed") if c in failed]
        rows = [
            [
                _e(r["run_id"]),
                *(_num(r[k]) for k in keys),
                f"<span class=err>{_e(r['error'])}</span>",
            ]
            for _, r in failed.head(MAX_ERRORS_SHOWN).iterrows()
        ]
        parts.append(_table(["run", *map(_e, keys), "error"], rows, left=len(keys) + 2))
        if len(failed) > MAX_ERRORS_SHOWN:
            parts.append(
                f"<p>... and {len(failed) - MAX_ERRORS_SHOWN} more (see the "
                "<code>error</code> and <code>traceback</code> columns of runs).</p>"
            )
    if s["missing"]:
        parts.append(
            "<p>Missing runs have not finished yet: rerun <code>recourse-abm study run"
            "</code> with the same file and <code>--out</code> to complete them.</p>"
        )
    return "\n".join(parts)


def _figures(figures: list[tuple[str, str, bytes]]) -> str:
    """PNG figures embedded as data: URIs, wrapping side by side."""
    out = []
    for name, caption, png in figures:
        data = base64.b64encode(png).decode("ascii")
        out.append(
            f'<figure><img alt="{_e(name)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )
    return f"<div class=figs>{''.join(out)}</div>"


def _grid(manifest: dict[str, Any]) -> str:
    """The sweep axes, one line each: fields and their values."""
    values: dict[str, list[Any]] = {}
    for r in manifest["runs"]:
        for f in manifest["axis_fields"]:
            values.setdefault(f, [])
            if r.get(f) not in values[f]:
                values[f].append(r.get(f))
    lines = []
    for axis in manifest["axes"]:
        vals = " | ".join(", ".join(map(str, values.get(f, []))) for f in axis)
        lines.append(f"<li><b>{_e(' + '.join(axis))}</b>: {_e(vals)}</li>")
    return f"<ul>{''.join(lines)}</ul>" if lines else "<p>No sweep: one point.</p>"


def _provenance(manifest: dict[str, Any]) -> str:
    git = manifest.get("git") or {}
    commit = git.get("commit") or "not a git checkout"
    if git.get("dirty"):
        commit += " (with local changes)"
    schema = manifest.get("results_schema")
    schema_text = "not recorded (an older study directory)" if schema is None else str(schema)
    if schema is not None and schema != RESULTS_SCHEMA:
        schema_text += f" (this code writes schema {RESULTS_SCHEMA})"
    items = [
        ("results schema", schema_text),
        ("git commit", commit),
        ("study file", manifest.get("study_file") or "built in Python"),
        ("spec hash", manifest.get("spec_hash", "")),
        ("created", manifest.get("created", "")),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items)
    vers = _table(
        ["package", "version"],
        [[_e(k), _e(v)] for k, v in manifest.get("versions", {}).items()],
        left=1,
    )
    inv_cols = ("started", "finished", "backend", "skipped", "completed", "errors", "seconds")
    invs = _table(
        list(inv_cols),
        [[_num(i.get(c, "")) for c in inv_cols] for i in manifest.get("invocations", [])],
        left=3,
    )
    return f"<dl>{dl}</dl>\n<h3>Package versions</h3>\n{vers}\n<h3>Invocations</h3>\n{invs}"


def render_html(rep: StudyReport) -> str:
    """The report page of ``rep`` as one HTML document (see the module docstring)."""
    m = rep.manifest
    base = m.get("base_scenario", {})
    s = rep.status
    what = (
        f"Experiment <b>{_e(m.get('experiment', 'episode'))}</b> on scenario "
        f"<b>{_e(base.get('name', '?'))}</b>, {_e(base.get('ticks', '?'))} ticks; "
        f"{s['total']} runs = {len(m['runs']) // max(len(m['seeds']), 1)} sweep point(s) × "
        f"{len(m['seeds'])} seed(s)."
    )
    fixed = m.get("policy")
    if fixed and "policy" not in m["axis_fields"]:
        what += f" Policy: <b>{_e(fixed)}</b>."
    if m.get("skipped_policies"):
        what += f" Not installed, skipped: {_e(', '.join(m['skipped_policies']))}."
    body = [f"<h1>Study report: {_e(m['name'])}</h1>"]
    if m.get("description"):
        body.append(f"<p class=lead>{_e(m['description'])}</p>")
    body += [
        f"<p>{what}</p>",
        _grid(m),
        f"<p>Report written {_e(now())} from <code>{_e(rep.out)}</code>. Each figure is a "
        "mean over seeds with a 95 % confidence interval (Student t); undefined (NaN) "
        "values and failed runs are left out.</p>",
        "<h2>Run status</h2>",
        _status(rep),
    ]
    if not rep.table.empty:
        body += ["<h2>Summary: mean ± 95 % CI over seeds</h2>", _summary(rep)]
        sweeps = [f for f in rep.figures if f[0] != POLICY_FIGURE]
        if sweeps:
            body += ["<h2>Plots</h2>", _figures(sweeps)]
        if len(rep.policies) > 1:
            body += [
                "<h2>Policies compared over all their runs</h2>",
                _policies(rep),
                _figures([f for f in rep.figures if f[0] == POLICY_FIGURE]),
            ]
        body.append(_card(rep))
    else:
        body.append("<p>No run has finished yet: no tables or plots.</p>")
    text = m.get("study_text")
    if text:
        body += ["<h2>Study file</h2>", f"<pre>{_e(text)}</pre>"]
    body += ["<h2>Provenance</h2>", _provenance(m)]
    return (
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
        f"<title>{_e(m['name'])}: study report</title>\n<style>{STYLE}</style>\n</head>\n"
        "<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def write_html(rep: StudyReport, path: str | Path | None = None) -> Path:
    """Write :func:`render_html` to ``path`` (default ``out/report.html``); returns the path."""
    path = Path(path) if path is not None else rep.out / HTML_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(rep), encoding="utf-8")
    return path


def html_report(
    out: str | Path, metrics: list[str] | None = None, path: str | Path | None = None
) -> Path:
    """Build the report of the study directory ``out`` and write it as one HTML file."""
    return write_html(build_report(out, metrics), path)


__all__ = ["HTML_NAME", "html_report", "render_html", "write_html"]
