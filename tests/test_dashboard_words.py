"""The page's words against the code: every colour, dash and slider range named in
docs/teaching.md, docs/dashboard.md and the demonstrations' explanations is one the charts
draw; the palette keeps policy colours apart (CIEDE2000); the generated colour sentences
and the demos' quoted figures are current. Fast and without a browser, except the figures
(a run of each demo's settings: marked slow)."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from dashboards import charts, data, palette
from dashboards.demos import DEMOS, Demo
from dashboards.settings import MAX_POLICIES, SLIDERS

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "docs" / "teaching.md", ROOT / "docs" / "dashboard.md")
BANDIT = "improve-linucb:advice=segment"

# colour words a page might use; any of them that is not a palette name fails the test
COMMON_COLOURS = (
    "red green blue orange purple olive cyan pink brown grey gray black white yellow teal "
    "navy gold lavender magenta violet maroon burgundy turquoise beige lime indigo crimson "
    "scarlet amber tan khaki salmon aqua silver"
).split()
DASH_WORDS = ("dash-dot", "solid", "dashed", "dotted")

# who a colour or dash word may be about: regex -> subject (a policy, an outcome or a
# fixed mark). "the threshold" is the line; `threshold` and "threshold advice" the policy.
POLICIES = {
    r"`threshold`|\b[Ss]tandard (?:threshold )?advice|\bthreshold advice": "threshold",
    r"threshold-true": "threshold-true",
    r"SafeAR|\bsafear\b": "safear",
    r"\bscarf\b": "scarf",
    r"\bthe bandit\b|improve-linucb": BANDIT,
    r"`none`|\bno advice\b": "none",
    r"threshold-estimated": "threshold-estimated",
    r"\blookahead\b": "lookahead",
}
# a policy's name in bold, as the note above side-by-side charts writes it
POLICIES.update({re.escape(f"**{p}**"): p for p in data.STYLE_ORDER})
OUTCOMES = {rf"\b{o}\b": o for o in palette.OUTCOMES}
MARKS = {r"\b(?:the|tick's) threshold\b(?! advice)": "threshold line", r"\bapplied\b": "applied"}
# the measures the docs name by their dash: regex -> (chart, measure label or None: the
# chart's threshold or refit rule)
MEASURES = {
    r"\bRR\b": ("reliability", "RR reliability"),
    r"\bRF\b": ("reliability", "RF feasibility"),
    r"truly qualify": ("qualified", "acceptances that truly qualify"),
    r"proxies": ("qualified", "advised change on proxies (non-causal)"),
    r"\bgap\b": ("groups", "gap between groups (DP)"),
    r"refit": ("validity", None),
}


@dataclass(frozen=True)
class Text:
    where: str
    text: str
    policies: tuple[str, ...] | None  # a demo's policies (their styles), None: each alone


def _without_blocks(text: str) -> str:
    # generated blocks are checked by scripts/palette_doc.py --check
    # (blanked, not cut, so that line numbers still point into the file)
    return re.sub(
        r"<!-- (\S+) -->\n.*?<!-- /\1 -->", lambda m: "\n" * m[0].count("\n"), text, flags=re.S
    )


def _demo_of_row(row: str) -> Demo | None:
    m = re.search(r"\*\*Demo (\d+) ·", row)
    return next((d for d in DEMOS if d.title.startswith(f"{m[1]} ·")), None) if m else None


def _policies(demo: Demo | None) -> tuple[str, ...] | None:
    return (demo.policy, *demo.compare) if demo else None


def page_texts(docs: tuple[Path, ...] = DOCS, demos: tuple[Demo, ...] = DEMOS) -> list[Text]:
    """The texts a reader sees: the docs (a lesson table's row knows its demo) and each
    demonstration's explanation."""
    out = []
    for doc in docs:
        # a paragraph (its wrapped lines joined) or a table row, named by its first line
        first, lines = 1, []
        for i, line in enumerate([*_without_blocks(doc.read_text()).splitlines(), ""], 1):
            if line.strip() and not line.startswith("|"):
                first, lines = (i, []) if not lines else (first, lines)
                lines.append(line)
                continue
            if lines:
                out.append(Text(f"{doc.name}:{first}", " ".join(lines), None))
                lines = []
            if line.startswith("|"):
                out.append(Text(f"{doc.name}:{i}", line, _policies(_demo_of_row(line))))
    out += [Text(f"demo {d.name}", d.explanation, _policies(d)) for d in demos]
    return out


def _clauses(text: str) -> list[tuple[int, str]]:
    """(offset, clause): split at sentence ends, semicolons and table cells (a decimal
    point is not a sentence end)."""
    out, start = [], 0
    for m in re.finditer(r"(?<!\d)\.(?!\d)|[;|]|\n\n", text + "."):
        out.append((start, text[start : m.start()]))
        start = m.end()
    return out


def _subjects(clause: str, table: dict[str, str]) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), who) for rx, who in table.items() for m in re.finditer(rx, clause)]


def _nearest(clause: str, start: int, end: int, table: dict, before_only: bool) -> str | None:
    """The subject of ``table`` nearest to the word at [start, end) of ``clause``: before
    it (colours follow what they name), or on either side (dashes)."""
    best = None
    for s, e, who in _subjects(clause, table):
        if e <= start:
            gap = start - e
        elif s >= end and not before_only:
            gap = s - end
        else:
            continue
        if best is None or gap < best[0]:
            best = (gap, who)
    return best[1] if best else None


def _colour_of(who: str, policies: tuple[str, ...] | None) -> str:
    if who in palette.OUTCOMES:
        return palette.OUTCOMES[who]
    if who in ("threshold line", "applied"):
        return palette.REFERENCE
    styles = data.policy_styles(list(policies) if policies and who in policies else [who])
    return palette.name_of(styles[who][0])


def colour_problems(texts: list[Text]) -> list[str]:
    """Colour words that are not palette names, or that name the wrong colour for the
    policy, outcome or mark nearest before them in their clause."""
    words = sorted({*COMMON_COLOURS, *palette.COLOURS}, key=len, reverse=True)
    word_rx = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.I)
    table = {**POLICIES, **OUTCOMES, **MARKS}
    out = []
    for t in texts:
        for _, clause in _clauses(t.text):
            for m in word_rx.finditer(clause):
                word = m[1].lower()
                if re.match(r"(?:ed)? out\b", clause[m.end() :]):
                    continue  # "menus grey out": a verb, not a colour
                if word not in palette.COLOURS:
                    out.append(f"{t.where}: {word!r} is not a palette colour")
                    continue
                who = _nearest(clause, m.start(), m.end(), table, before_only=True)
                if who is None:
                    out.append(f"{t.where}: {word!r} names no policy, outcome or mark")
                elif (want := _colour_of(who, t.policies)) != word:
                    out.append(f"{t.where}: {who} is {want}, not {word}")
    return out


def _chart_dashes() -> dict[tuple[str, str | None], str]:
    """(chart, measure) -> the dash word of that line, read from the charts' specs; None
    as the measure: the chart's rule (the threshold, the refits)."""
    specs = {
        "reliability": charts.rr_rf(["threshold"]).spec,
        "qualified": charts.qualified(["threshold"]).spec,
        "groups": charts.group_rates(["threshold"], 2).spec,
        "validity": charts.validity(["threshold"]).spec,
        "scores": charts.score_histogram("threshold").spec,
    }
    out = {}
    for name, spec in specs.items():
        for layer in spec.get("layer", []):
            dash = layer.get("encoding", {}).get("strokeDash", {})
            if dash.get("field") == "series":
                for label, d in zip(dash["scale"]["domain"], dash["scale"]["range"], strict=True):
                    out[name, label] = palette.dash_name(d)
            mark = layer.get("mark", {})
            if isinstance(mark, dict) and mark.get("type") == "rule" and "strokeDash" in mark:
                out[name, None] = palette.dash_name(mark["strokeDash"])
    out["threshold line"] = out["scores", None]
    return out


def dash_problems(texts: list[Text]) -> list[str]:
    """Dash words that name a dash no chart draws for the measure or mark nearest them in
    their clause, or that give a policy a dash outside "Who applies" (the one rule: the
    dash names the measure; the policy only where the colour names the outcome). "Solid"
    followed by "faded" speaks of bars (opacity) and is left out."""
    drawn = _chart_dashes()
    table = {**MEASURES, **{k: v for k, v in MARKS.items() if v == "threshold line"}, **POLICIES}
    word_rx = re.compile(r"\b(" + "|".join(DASH_WORDS) + r")\b", re.I)
    out = []
    for t in texts:
        for at, clause in _clauses(t.text):
            for m in word_rx.finditer(clause):
                word = m[1].lower()
                if word == "solid" and "faded" in t.text[at + m.start() : at + m.end() + 80]:
                    continue  # bars: solid for one part, faded for the other
                who = _nearest(clause, m.start(), m.end(), table, before_only=False)
                if who is None:
                    out.append(f"{t.where}: {word!r} names no measure or line")
                elif isinstance(who, tuple):
                    key = who if who[1] is not None or who[0] != "validity" else ("validity", None)
                    if drawn.get(key) != word:
                        out.append(f"{t.where}: {who[1] or who[0]} is {drawn.get(key)}, not {word}")
                elif who == "threshold line":
                    if drawn[who] != word:
                        out.append(f"{t.where}: the threshold is {drawn[who]}, not {word}")
                elif "Who applies" not in clause:
                    out.append(
                        f"{t.where}: {word!r} for policy {who}: a policy's dash shows only in "
                        "Who applies; name its colour"
                    )
    return out


SLIDER_NAMES = {
    "validity": r"\*T\*|\bT\b",
    "n_initial": r"N₀",
    "seed": r"\bseed\b",
    "k": r"\*k\*",
    "m": r"\*m\*",
    "ticks": r"episode length",
}


def range_problems(texts: list[Text]) -> list[str]:
    """Ranges ("from A to B", "between A and B") written after a slider's name (within
    its clause) that are not the slider's own range."""
    rng = re.compile(r"\b(?:from|between)\s+(\d[\d,]*)\s+(?:to|and)\s+(\d[\d,]*)")
    out = []
    for t in texts:
        for _, clause in _clauses(t.text):
            for m in rng.finditer(clause):
                lo, hi = (int(g.replace(",", "")) for g in m.groups())
                named = [
                    (s.end(), name)
                    for name, rx in SLIDER_NAMES.items()
                    for s in re.finditer(rx, clause[: m.start()])
                ]
                if not named:
                    continue
                _, name = max(named)
                if (lo, hi) != SLIDERS[name][1:]:
                    out.append(f"{t.where}: {name} runs {SLIDERS[name][1:]}, not {(lo, hi)}")
    return out


def test_colour_dash_and_range_words_match_the_code():
    texts = page_texts()
    problems = colour_problems(texts) + dash_problems(texts) + range_problems(texts)
    assert not problems, "\n".join(problems)


# a setting a demo's words state: regex -> the Settings field it must equal
SETTING_WORDS = {
    r"\bk = (\d+)": "k",
    r"\bT = (\d+)": "validity",
    r"β = (∞|\d+(?:\.\d+)?)": "beta",
    r"`, (\d+) ticks\)": "ticks",
}


def test_settings_the_demos_state_are_their_settings():
    """k, T, β and the episode length written in an explanation or its lesson row are the
    demo's own (as the page builds it)."""
    from dashboards.settings import Settings

    rows = {
        d.name: [r for r in DOCS[0].read_text().splitlines() if _demo_of_row(r) is d] for d in DEMOS
    }
    problems, seen = [], 0
    for d in DEMOS:
        settings = Settings.from_demo(d)
        for text in (d.explanation, *rows[d.name]):
            for rx, field in SETTING_WORDS.items():
                for m in re.finditer(rx, text):
                    seen += 1
                    value = "inf" if m[1] == "∞" else m[1]
                    if str(getattr(settings, field)) != value:
                        problems.append(
                            f"{d.name}: {field} is {getattr(settings, field)}, not {m[0]}"
                        )
    assert seen >= 7 and not problems, problems  # k, β, T and ticks are all stated


def test_the_note_above_side_by_side_charts_follows_the_rule():
    """The note names each policy's colour, and its dash only for Who applies."""
    from dashboards.app import compare_note

    texts = [
        Text(f"note of {d.name}", compare_note([d.policy, *d.compare]), _policies(d))
        for d in DEMOS
        if d.compare
    ]
    problems = colour_problems(texts) + dash_problems(texts)
    assert not problems, "\n".join(problems)


def test_the_checks_catch_the_old_words():
    """The defects of issue 52, as the texts read before: each is caught."""
    old = [
        Text("demo 4", "Compare it (solid) with standard threshold advice (dashed)", None),
        Text("teaching", "Compare SafeAR's risk-aware advice (purple)", None),
        Text("demo 2", "Standard advice (uniform costs, solid lines) runs beside", None),
        Text("demo 3", "Move the *T* slider between 1 and 10.", None),
        Text("dashboard", "the bandit (cyan) and the rest in gray", None),
        Text("scores", "dotted: the threshold", None),
    ]
    found = colour_problems(old) + dash_problems(old) + range_problems(old)
    for where in ("demo 4", "teaching", "demo 2", "demo 3", "dashboard", "scores"):
        assert any(p.startswith(where) for p in found), (where, found)
    assert any("'gray' is not a palette colour" in p for p in found)
    # and the words that are right pass
    right = [
        Text("a", "SafeAR (gold) against threshold advice (blue)", None),
        Text("b", "dashed: the threshold; RR (solid) and RF (dashed)", None),
        Text("c", "Move the *T* slider (it runs from 1 to 20)", None),
        Text("d", "one accepted (green) and one rejected (red)", None),
    ]
    assert not colour_problems(right) + dash_problems(right) + range_problems(right)


def test_generated_colour_sentences_are_current():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "palette_doc.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# Sharma, Wu & Dalal (2005), table 1: L1 a1 b1, L2 a2 b2, ΔE00
SHARMA = """
50.0000 2.6772 -79.7751 50.0000 0.0000 -82.7485 2.0425
50.0000 3.1571 -77.2803 50.0000 0.0000 -82.7485 2.8615
50.0000 2.8361 -74.0200 50.0000 0.0000 -82.7485 3.4412
50.0000 -1.3802 -84.2814 50.0000 0.0000 -82.7485 1.0000
50.0000 -1.1848 -84.8006 50.0000 0.0000 -82.7485 1.0000
50.0000 -0.9009 -85.5211 50.0000 0.0000 -82.7485 1.0000
50.0000 0.0000 0.0000 50.0000 -1.0000 2.0000 2.3669
50.0000 -1.0000 2.0000 50.0000 0.0000 0.0000 2.3669
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0009 7.1792
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0010 7.1792
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0011 7.2195
50.0000 2.4900 -0.0010 50.0000 -2.4900 0.0012 7.2195
50.0000 -0.0010 2.4900 50.0000 0.0009 -2.4900 4.8045
50.0000 -0.0010 2.4900 50.0000 0.0010 -2.4900 4.8045
50.0000 -0.0010 2.4900 50.0000 0.0011 -2.4900 4.7461
50.0000 2.5000 0.0000 50.0000 0.0000 -2.5000 4.3065
50.0000 2.5000 0.0000 73.0000 25.0000 -18.0000 27.1492
50.0000 2.5000 0.0000 61.0000 -5.0000 29.0000 22.8977
50.0000 2.5000 0.0000 56.0000 -27.0000 -3.0000 31.9030
50.0000 2.5000 0.0000 58.0000 24.0000 15.0000 19.4535
50.0000 2.5000 0.0000 50.0000 3.1736 0.5854 1.0000
50.0000 2.5000 0.0000 50.0000 3.2972 0.0000 1.0000
50.0000 2.5000 0.0000 50.0000 1.8634 0.5757 1.0000
50.0000 2.5000 0.0000 50.0000 3.2592 0.3350 1.0000
60.2574 -34.0099 36.2677 60.4626 -34.1751 39.4387 1.2644
63.0109 -31.0961 -5.8663 62.8187 -29.7946 -4.0864 1.2630
61.2901 3.7196 -5.3901 61.4292 2.2480 -4.9620 1.8731
35.0831 -44.1164 3.7933 35.0232 -40.0716 1.5901 1.8645
22.7233 20.0904 -46.6940 23.0331 14.9730 -42.5619 2.0373
36.4612 47.8580 18.3852 36.2715 50.5065 21.2231 1.4146
90.8027 -2.0831 1.4410 91.1528 -1.6435 0.0447 1.4441
90.9257 -0.5406 -0.9208 88.6381 -0.8985 -0.7239 1.5381
6.7747 -0.2908 -2.4247 5.8714 -0.0985 -2.2286 0.6377
2.0776 0.0795 -1.1350 0.9033 -0.0636 -0.5514 0.9082
"""


def test_ciede2000_matches_the_published_pairs():
    rows = [list(map(float, r.split())) for r in SHARMA.strip().splitlines()]
    assert len(rows) == 34
    for r in rows:
        assert palette.ciede2000(r[0:3], r[3:6]) == pytest.approx(r[6], abs=1e-4), r
        assert palette.ciede2000(r[3:6], r[0:3]) == pytest.approx(r[6], abs=1e-4), r
    # sRGB -> L*a*b*: white, black and the primaries' lightness
    assert palette.lab("#ffffff") == pytest.approx((100, 0, 0), abs=0.01)
    assert palette.lab("#000000") == pytest.approx((0, 0, 0), abs=1e-9)
    assert palette.lab("#ff0000") == pytest.approx((53.24, 80.09, 67.20), abs=0.05)


def test_policy_colours_differ_from_each_other_and_the_fixed_colours():
    """Any MAX_POLICIES policies may share a page (a name not in STYLE_ORDER takes any
    free colour), so every pair must differ, and each from the outcome colours, black
    (the threshold, "applied") and dark grey, drawn on the same charts."""
    shown = palette.POLICY_COLOURS
    assert len(shown) >= MAX_POLICIES and len(set(shown)) == len(shown)
    fixed = [*palette.OUTCOMES.values(), palette.REFERENCE, palette.NEUTRAL]
    pairs = [*itertools.combinations(shown, 2), *itertools.product(shown, fixed)]
    close = [(a, b, round(palette.delta_e(a, b), 1)) for a, b in pairs]
    close = [c for c in close if c[2] < palette.MIN_DELTA_E]
    assert not close
    # the charts draw the palette: policies, outcomes, reference and measure swatches
    assert data.POLICY_COLOURS == [palette.hex_of(n) for n in shown]
    assert {palette.name_of(c) for c in data.OUTCOME_COLOURS.values()} == set(fixed[:4])
    assert palette.name_of(data.REFERENCE) == "black"
    assert palette.name_of(charts.MEASURE_STROKE) == palette.NEUTRAL
    styles = data.policy_styles(data.STYLE_ORDER[:MAX_POLICIES])
    assert len({c for c, _ in styles.values()}) == MAX_POLICIES


@pytest.mark.slow
def test_quoted_demo_figures_come_from_a_run():
    """scripts/demo_figures.py runs demos 6, 7 and 8 on their settings (seed 0) and checks
    that their explanations and lesson rows quote the run's figures (rounded as quoted)
    and no decimal figure or percentage besides."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo_figures.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
