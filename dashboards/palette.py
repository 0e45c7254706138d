"""The dashboard's one palette: every colour and dash a chart draws, each under the name
the page's words use for it (docs/teaching.md, docs/dashboard.md, the demonstrations).

The charts read their colours and dashes from here (through :mod:`dashboards.data`; a
dash drawn as a literal is named by its shape, :func:`dash_name`), the docs' colour
sentences are generated from here (``scripts/palette_doc.py``), and
``tests/test_dashboard_words.py`` fails when a page names a colour or dash the charts do
not draw. Policy colours differ from each other and from the fixed colours drawn beside them
by at least :data:`MIN_DELTA_E` in CIEDE2000 (:func:`delta_e`).
"""

from __future__ import annotations

import math

# name -> sRGB hex. The names are the words the page uses; a colour is never named
# otherwise. Policy colours differ by at least MIN_DELTA_E (CIEDE2000) from each other and
# from the outcome colours, black and dark grey, so that any four shown together stay
# apart; blue (threshold) and the bandit's pink differ by about 50.
COLOURS: dict[str, str] = {
    # outcomes
    "green": "#2ca02c",
    "red": "#d62728",
    "grey": "#7f7f7f",
    "orange": "#ff7f0e",
    # reference lines and neutral marks
    "black": "#000000",
    "dark grey": "#555555",
    # policies (dashboards.data.STYLE_ORDER: threshold first, safear sixth)
    "blue": "#1f77b4",
    "purple": "#9a0eea",
    "brown": "#653700",
    "pink": "#ff028d",
    "teal": "#029386",
    "gold": "#c9a100",
    "navy": "#00035b",
    "lavender": "#c79fef",
}

# outcome -> colour name: these colours mean that outcome and nothing else
OUTCOMES: dict[str, str] = {
    "accepted": "green",
    "rejected": "red",
    "dropped": "grey",
    "waiting": "orange",
}
# the policies' colours, in the order they are handed out (dashboards.data.STYLE_ORDER)
POLICY_COLOURS: list[str] = ["blue", "purple", "brown", "pink", "teal", "gold", "navy", "lavender"]
# the threshold in the charts of one tick and the agent view, and "applied" in Who applies
REFERENCE = "black"
# a measure's legend swatch (its dash, in no policy's colour) and the refit rules
NEUTRAL = "dark grey"

# name -> Vega strokeDash (dash length, gap, ...): the canonical pattern of each dash word
DASHES: dict[str, list[int]] = {
    "solid": [1, 0],
    "dashed": [8, 4],
    "dotted": [2, 3],
    "dash-dot": [10, 3, 2, 3],
}
# a policy's own dash (where the dash names the policy), in the order handed out
POLICY_DASHES: list[str] = ["solid", "dashed", "dotted", "dash-dot"]
# the strokeDash of a chart's first, second, ... measure (where the dash names the measure):
# wide to narrow with SERIES_WIDTH in dashboards.charts; past the fourth they repeat in kind
MEASURE_DASHES: list[list[int]] = [[1, 0], [7, 4], [2, 3], [10, 3, 2, 3], [4, 4], [1, 0]]
# the threshold drawn over one tick's applicants (scores, last 20 ticks, agent view)
THRESHOLD_DASH: list[int] = [5, 3]

MIN_DELTA_E = 20.0

# The one rule for dashes, as the page states it (docs/dashboard.md, docs/teaching.md and
# the note above side-by-side charts): what dashboards.charts.line_spec draws.
DASH_RULE = (
    "A line's colour names its policy; its dash names what the colour does not: the "
    "measure, where a chart draws several (in **Does advice work?** RR is solid and RF "
    "dashed, for every policy), and the policy in **Who applies, and what happens to "
    "them**, where the colour names the outcome. In a chart of one measure the dash "
    "repeats the policy."
)


def style_words(colour: str, dash: list[int]) -> str:
    """A policy's style in the page's words: its colour, and its dash where that shows
    (the note above side-by-side charts: "blue, solid in Who applies")."""
    return f"{name_of(colour)}, {dash_name(dash)} in Who applies"


def reference_words() -> str:
    """What the fixed colours other than the outcomes' mark, in the page's words."""
    return (
        f"{REFERENCE.capitalize()} is the threshold, {dash_name(THRESHOLD_DASH)}, over one "
        "tick's applicants (**Scores**, **Every application**, the agent view), and the line "
        f"*applied* in **Who applies**; {NEUTRAL} is a measure's dash in a legend and "
        "the model's refits (dotted)."
    )


def hex_of(name: str) -> str:
    """The hex code of a palette colour."""
    return COLOURS[name]


def dash_of(name: str) -> list[int]:
    """The Vega strokeDash of a named dash."""
    return list(DASHES[name])


def name_of(hex_code: str) -> str:
    """The palette name of a hex code (KeyError if the palette has none)."""
    for name, code in COLOURS.items():
        if code.lower() == hex_code.lower():
            return name
    raise KeyError(hex_code)


def dash_name(pattern: list[int] | tuple[int, ...]) -> str:
    """The word for a Vega strokeDash, by its shape: no gap is solid, dash and gap
    alternating with the other is dash-dot, short dashes are dotted, longer ones dashed."""
    pattern = list(pattern)
    if not pattern or (len(pattern) == 2 and pattern[1] == 0):
        return "solid"
    if len(pattern) == 4:
        return "dash-dot"
    return "dotted" if pattern[0] <= 3 else "dashed"


def lab(hex_code: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65 white) of an sRGB hex colour."""
    h = hex_code.lstrip("#")
    rgb = [int(h[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    r, g, b = lin
    # sRGB -> XYZ (IEC 61966-2-1, Lindbloom's digits), normalised by the D65 white
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def ciede2000(lab1: tuple[float, float, float], lab2: tuple[float, float, float]) -> float:
    """CIEDE2000 colour difference of two L*a*b* colours (kL = kC = kH = 1), as in Sharma,
    Wu & Dalal (2005), "The CIEDE2000 colour-difference formula: implementation notes"."""
    l1, a1, b1 = lab1
    l2, a2, b2 = lab2
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar**7 / (c_bar**7 + 25**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)

    def hue(b: float, ap: float) -> float:
        return 0.0 if b == 0 and ap == 0 else math.degrees(math.atan2(b, ap)) % 360

    h1p, h2p = hue(b1, a1p), hue(b2, a2p)
    dl = l2 - l1
    dc = c2p - c1p
    if c1p * c2p == 0:
        dh = 0.0
    else:
        dh = h2p - h1p
        if dh > 180:
            dh -= 360
        elif dh < -180:
            dh += 360
    d_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    l_bar = (l1 + l2) / 2
    cp_bar = (c1p + c2p) / 2
    if c1p * c2p == 0:
        hp_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hp_bar = (h1p + h2p) / 2
    elif h1p + h2p < 360:
        hp_bar = (h1p + h2p + 360) / 2
    else:
        hp_bar = (h1p + h2p - 360) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(hp_bar - 30))
        + 0.24 * math.cos(math.radians(2 * hp_bar))
        + 0.32 * math.cos(math.radians(3 * hp_bar + 6))
        - 0.20 * math.cos(math.radians(4 * hp_bar - 63))
    )
    d_theta = 30 * math.exp(-(((hp_bar - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(cp_bar**7 / (cp_bar**7 + 25**7))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    s_c = 1 + 0.045 * cp_bar
    s_h = 1 + 0.015 * cp_bar * t
    r_t = -math.sin(math.radians(2 * d_theta)) * r_c
    return math.sqrt(
        (dl / s_l) ** 2 + (dc / s_c) ** 2 + (d_h / s_h) ** 2 + r_t * (dc / s_c) * (d_h / s_h)
    )


def delta_e(name1: str, name2: str) -> float:
    """CIEDE2000 difference of two palette colours."""
    return ciede2000(lab(COLOURS[name1]), lab(COLOURS[name2]))
