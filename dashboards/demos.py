"""Classroom demonstrations: a preset, a few overrides, a policy and a short explanation.

Each :class:`Demo` is one lesson step in the dashboard's sidebar. To add one, append a
``Demo`` to :data:`DEMOS`; a demo whose policies are not registered (an optional policy
family that is not installed) is left out of :func:`available_demos` at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from abm.registry import available_policies, parse_spec


@dataclass(frozen=True)
class Demo:
    """One demonstration.

    Attributes:
        name: short identifier (used in the URL-free sidebar select and in tests).
        title: what the select shows.
        preset: scenario preset the demo starts from (``recourse-abm scenarios``).
        policy: the policy shown first (a registry name, or a spec with parameters such
            as ``improve-linucb:advice=segment``).
        compare: up to three more policies run side by side on the same seed.
        charts: the world-extension charts the lesson is about (None: every one that is on).
        overrides: scenario fields changed from the preset (dashboard fields only:
            k, m, n_initial, validity, ticks, seed, beta, difficulty).
        explanation: markdown shown next to the controls: what to do and what to look for.
    """

    name: str
    title: str
    preset: str
    policy: str
    explanation: str
    compare: tuple[str, ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    charts: tuple[str, ...] | None = None

    @property
    def required_policies(self) -> tuple[str, ...]:
        """The registry names the demo's policies build on (a spec's parameters dropped)."""
        return tuple(part.name for p in (self.policy, *self.compare) for part in parse_spec(p))


DEMOS: tuple[Demo, ...] = (
    Demo(
        name="threshold-trap",
        title="1 · The threshold trap",
        preset="motivating-example",
        policy="threshold",
        explanation=(
            "Four applicants compete for **k = 2** places (the paper's Figure 1). The two "
            "rejected are told to reach this round's threshold, and every change succeeds "
            "(β = ∞).\n\n"
            "Press **Step** twice. At tick 1 both reapply exactly *at* the old threshold, yet "
            "one is rejected again: a newcomer scored higher and took a place, so only one "
            "of the two fits (the tie is broken at random). Advice that was right when given "
            "was not enough when used. Click that applicant in the table to see their "
            "history.\n\n"
            "*Ask:* who is to blame? What should the advice have said?"
        ),
    ),
    Demo(
        name="harder-features",
        title="2 · Harder features",
        preset="paper-hard",
        policy="threshold",
        compare=("threshold-true",),
        explanation=(
            "Changes succeed with probability 1 − exp(−β a / dᵢ): a small **β** and a large "
            "difficulty **dᵢ** make a change likely to fail. Here β = 0.01.\n\n"
            "Standard advice (uniform costs, blue) runs side by side with advice that knows "
            "the true difficulties (*threshold-true*, purple), on the same applicants. Watch "
            "**Effort per feature so far**: where does effort go, and how much is tried but "
            "fails? Then make the easy features 1, 5 and 9 hard in the *difficulty* box and "
            "step again."
        ),
    ),
    Demo(
        name="longer-validity",
        title="3 · Longer validity T",
        preset="paper-T5",
        policy="threshold",
        explanation=(
            "Advice now stays valid for **T = 5** ticks: candidates may take their time and "
            "reapply when ready, but the threshold keeps moving meanwhile.\n\n"
            "Watch **Who applies, and what happens to them**: more wait, so more compete each "
            "tick. Does RR fall when the advice gets older? Move the *T* slider (it runs from "
            "1 to 20), press **Reset** and step again."
        ),
    ),
    Demo(
        name="risk-averse-advice",
        title="4 · Risk-averse advice",
        preset="paper-hard",
        policy="safear",
        compare=("threshold",),
        explanation=(
            "SafeAR plans recourse that accounts for the *risk* that a change fails, not "
            "only its expected cost. Compare SafeAR (gold) with standard threshold advice "
            "(blue) on the same applicants (same seed).\n\n"
            "Look at **Does advice work?** and **Effort per feature so far**: is safer advice "
            "more reliable, and what does it cost?"
        ),
    ),
    Demo(
        name="fairness-between-groups",
        title="5 · Fairness between groups",
        preset="groups",
        policy="threshold",
        explanation=(
            "Two equal groups apply; group 0 starts 0.1 lower on features 0-4. The model never "
            "sees the group.\n\n"
            "Press **Play**. Watch **Groups: who gets accepted?**: does the gap between the "
            "groups close when the rejected follow the advice, or stay? **Groups: how far "
            "apart are they?** measures how different the waiting groups look.\n\n"
            "*Ask:* is equal advice fair advice?"
        ),
    ),
    Demo(
        name="improvement-vs-gaming",
        title="6 · Improvement or gaming?",
        preset="improvement",
        policy="threshold",
        compare=("improve-linucb:advice=segment", "none"),
        explanation=(
            "Here the model can be fooled: features x8 and x9 are proxies. The model "
            "rewards them, but they never change the true qualification h*(x) of an "
            "applicant. Three policies on the same applicants: threshold advice, a bandit "
            "that learns from true outcomes which changes truly help "
            "(*improve-linucb*), and no advice at all (*none*).\n\n"
            "Type 39 beside **Run to tick** and press it; the figures hold from then on. "
            "Point at **Does advice make people better?**: the true gain of advice carried "
            "out stays at 0 for threshold advice and is above 0 for the bandit. Then "
            "at **Who is accepted, and what was advised**: all of threshold's advised change "
            "is on proxies (dashed line at 1), about half of the bandit's; and the share of "
            "acceptances that truly qualify (solid lines) is no higher with threshold advice "
            "than with no advice, higher with the bandit's. "
            "Last, RR in **Does advice work?**: is the advice that makes people better "
            "the more reliable?\n\n"
            "*Ask:* is advice that gets people accepted good advice?"
        ),
    ),
    Demo(
        name="fairness-aware-advice",
        title="7 · Fairness-aware advice",
        preset="fair-scarf",
        policy="threshold",
        compare=("scarf",),
        charts=("groups", "group-distance", "budget"),
        explanation=(
            "Two groups, group 0 starting behind, a causal graph between the features and a "
            "budget of 20 for all the advice of the episode. Threshold advice treats "
            "everyone alike; *scarf* plans changes over several rounds, aimed at bringing "
            "the groups together, within the budget.\n\n"
            "Scarf's generator for this demonstration ships trained, so it starts at once "
            "(with another seed it trains first, 10-20 s, its progress on the status line). "
            "Type 29 beside **Run to tick** and press it. Point at **Groups: who gets accepted?**: the dotted gap lines of "
            "the two policies run close together: in this world fairness-aware advice does not "
            "close the gap faster. **Groups: how far apart are they?**: the distance falls "
            "slowly under both. **Budget for advice**: both pace the budget over the episode. "
            "Last, RR in **Does advice work?**: scarf's advice is rarely enough to be "
            "accepted.\n\n"
            "*Ask:* should advice treat everyone alike, or help those who start behind? Who "
            "pays for it?"
        ),
    ),
    Demo(
        name="recession",
        title="8 · A recession",
        preset="recession",
        policy="threshold",
        charts=("capacity",),
        overrides={"ticks": 80},
        explanation=(
            "The paper's world, but from tick 40 to tick 59 only **5 places** a tick are "
            'open instead of 9, while 10 newcomers keep arriving. Advice says "reach this '
            "tick's threshold\": the score that won a place when the advice was given.\n\n"
            "Type 39 beside **Run to tick** and press it: **Places and newcomers per tick** is "
            "still flat. In **Threshold and goal scores** the threshold, steady near 0.26 for "
            "ten ticks, has just stepped up to 0.36 at tick 39: that is the goal the advice of "
            "tick 39 gives. Ask what that advice is worth. Step to tick 40: the places drop "
            "to 5 and the threshold jumps to 0.53 at tick 40; all 5 of those advised at tick "
            "39 who did everything asked were rejected (RR in **Does advice work?** is 0 at "
            "tick 40). Step once more: RR is 1.0 at tick 41, for the 2 who carried out the "
            "advice of tick 40, given at the peak. Run to tick 55: the threshold keeps "
            "climbing (0.65 at tick 50, 0.78 at tick 55) and **Who applies** shows the queue "
            "of those waiting to try again growing (11 at tick 39, 25 at tick 52). Run on "
            "past tick 60: the places return, the threshold falls, and those advised during "
            "the recession now get in easily (RR 1.0 at tick 60).\n\n"
            "*Ask:* was the advice given at tick 39 wrong? Who could have known, and what "
            "should it have said? Then choose the preset *paper* with the same seed and "
            "compare."
        ),
    ),
)


def available_demos(policies: dict[str, str] | None = None) -> dict[str, Demo]:
    """Demo name -> demo, for demos whose policies are registered now."""
    if policies is None:
        policies = available_policies()
    return {d.name: d for d in DEMOS if all(p in policies for p in d.required_policies)}
