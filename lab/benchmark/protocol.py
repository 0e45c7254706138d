"""The benchmark's protocol: what every entry is run and judged by, under one version.

A protocol fixes the presets, the worlds and paired episodes of each, the ticks, the
baselines (``none``, ``threshold`` and the constant-margin fronts), the figures of the
outcome card, the statistics (intervals, tests, bounds, corrections) and the rules of
:func:`abm.testing.check_policy` an entry must pass. Its :meth:`Protocol.digest` hashes
all of that; :data:`VERSIONS` pins the digest of each version, so changing a fixed
element without a new version fails ``tests/test_benchmark.py``. Results of different
versions are never mixed (:func:`lab.benchmark.card.check_version`).

Three tiers share a version: ``full`` (the leaderboard's), ``quick`` (at most 10 minutes
on 2 cores for a policy at most 10x ``threshold``: fewer worlds and presets, said on its
card) and ``smoke`` (CI's check that the pipes hold: no verdicts).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from abm.testing import DEFAULT_WORLDS, RULES
from lab.study.front import FRONT_BOUND, MARGIN_RECOMMENDERS, MARGINS, margin_policies
from lab.study.stats import ALPHA, BOUNDS, DIRECTIONS, MIN_WORLDS_FOR_VERDICT

#: the protocol this package runs
VERSION = "dynamic-recourse/4"
#: check_policy's rules and worlds added after this version was fixed (none: version 2
#: took in those that joined after version 1, see :data:`PAST`)
CHECKS_SINCE: frozenset[str] = frozenset()
Tier = Literal["full", "quick", "smoke"]
TIERS: tuple[Tier, ...] = ("full", "quick", "smoke")

#: every family's home world and the combined one (the five-families study's presets)
FULL_PRESETS = (
    "lending",
    "paper",
    "improvement",
    "retraining",
    "groups",
    "causal",
    "budget",
    "fair-scarf",
)
#: the quick tier leaves out `lending` (about 30x a single-mechanism world per episode)
QUICK_PRESETS = FULL_PRESETS[1:]
#: the card figures a report shows, in order (those of an extension that is off are left out)
FIGURES = (
    "rr",
    "rf",
    "accept_rate",
    "median_time_to_accept",
    "never_accepted_share",
    "accepted_new_share",
    "accepted_advised_share",
    "advice_paid",
    "paid_per_effort",
    "valid_at_reapply",
    "valid_vs_issued",
    "cost_recommended",
    "cost_incurred",
    "cvar95_effort",
    "unadvised_share",
    "h_accepted",
    "h_applicants",
    "true_gain",
    "qualified_rate",
    "valid_outstanding",
    "valid_after_refit",
    "accept_gap",
    "rr_gap",
    "rf_gap",
    "dp_gap",
    "budget_spent",
    "paid_per_budget",
)


class Training(BaseModel):
    """The recipe a learned entry is trained by before its runs (:mod:`lab.benchmark.learned`):
    in each preset, per training seed, a recommender φ (:func:`lab.training.train_recommender`,
    eq. 15) where the entry has one, then a predictor μ with the entry's recommender inside
    (:func:`lab.training.train_predictor`, eq. 16, or the constrained one for an RR target)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: training episodes rotate over these worlds, the five after the evaluation worlds: a
    #: card speaks of worlds μ never saw (world 1003 of `retraining` cannot be refitted
    #: at tick 80 in some episodes: its drifted data are all labelled 0)
    worlds: tuple[int, ...] = (20, 21, 22, 23, 24)
    #: three or more for verdicts (docs/benchmark.md: the seeds' mean is the entry's run)
    seeds: tuple[int, ...] = (0, 1, 2)
    #: durable-recourse-rl §5's budget for μ: 7,000 ticks
    steps: int = Field(7000, ge=1)
    #: eq. 16's weights, the paper's headline 10:1 (one point per entry; the fronts are the
    #: protocol's baselines, not μ's other weights)
    alpha: float = 10.0
    tau: float = 1.0
    #: φ's budget, App. D's 20,000 episodes (of at most 10 attempts), without warm-up; its
    #: episodes rotate over :attr:`worlds` too. None: a version without φ entries (3)
    phi_episodes: int | None = Field(20_000, ge=1)


#: the recipe's fields each kind of learned entry's runs depend on (lab.benchmark.learned)
RECIPE_FIELDS: dict[str, tuple[str, ...]] = {
    "hybrid": ("worlds", "seeds", "steps", "alpha", "tau"),
    "rl": ("worlds", "seeds", "steps", "alpha", "tau", "phi_episodes"),
    "rl-recommender": ("worlds", "seeds", "phi_episodes"),
    "rl-constrained": ("worlds", "seeds", "steps", "phi_episodes"),
}


class Protocol(BaseModel):
    """One tier of one protocol version: everything an entry is run and judged by."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = VERSION
    tier: Tier = "full"
    presets: tuple[str, ...] = FULL_PRESETS
    worlds: int = 20
    episodes: int = 2
    #: None: each preset's own ticks
    ticks: int | None = None
    #: scenario fields set in every run: the shift figures (MMD² and their permutations)
    #: are not on the card, and their draws come from streams of their own, so RR, RF and
    #: every card figure are the same bits without them (tests/test_five_families.py); off,
    #: the fronts are the runs of the five-families study's fronts, shared with it
    settings: tuple[tuple[str, int], ...] = (("shift_points", 0),)
    baselines: tuple[str, ...] = ("none", "threshold")
    #: front name -> recommender; each front is the margin grid of :attr:`margins`
    fronts: tuple[tuple[str, str], ...] = tuple(MARGIN_RECOMMENDERS.items())
    margins: tuple[float, ...] = MARGINS
    figures: tuple[str, ...] = FIGURES
    # statistics (lab.study.stats, lab.study.front): intervals on world means with Hall's
    # correction, t-tests and TOST on world means, one corrected family per table
    interval: str = "Hall-corrected t on world means"
    card_correction: str = "bh"
    front_correction: str = "holm"
    alpha: float = ALPHA
    min_worlds: int = MIN_WORLDS_FOR_VERDICT
    bounds: tuple[tuple[str, float], ...] = tuple(sorted(BOUNDS.items()))
    front_bound: float = FRONT_BOUND
    directions: tuple[tuple[str, bool], ...] = tuple(sorted(DIRECTIONS.items()))
    # the entry check: abm.testing.check_policy's rules in its default worlds, as they were
    # when this version was fixed (what joined them since waits for the next version)
    check_rules: tuple[str, ...] = tuple(r for r in RULES if r not in CHECKS_SINCE)
    check_worlds: tuple[str, ...] = tuple(w for w in DEFAULT_WORLDS if w not in CHECKS_SINCE)
    #: how learned entries are trained (None: a version that entered none)
    training: Training | None = Training()

    @model_validator(mode="after")
    def _held_out(self) -> Protocol:
        seen = self.training and set(self.training.worlds) & set(self.world_seeds)
        if seen:
            raise ValueError(f"training worlds {sorted(seen)} are evaluation worlds too")
        return self

    @property
    def world_seeds(self) -> tuple[int, ...]:
        return tuple(range(self.worlds))

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.episodes))

    @property
    def verdicts(self) -> bool:
        """Whether this tier has enough worlds for verdicts."""
        return self.worlds >= self.min_worlds

    def front_policies(self) -> dict[str, list[str]]:
        """Front name -> its margin-grid policy specs."""
        return {name: margin_policies(rec, self.margins) for name, rec in self.fronts}

    def baseline_policies(self) -> list[str]:
        """Every policy run beside an entry: the baselines, then each front's grid."""
        grid = [p for specs in self.front_policies().values() for p in specs]
        return list(dict.fromkeys([*self.baselines, *grid]))

    def digest(self) -> str:
        """16 hex digits of SHA-256 over every fixed element (the version's identity)."""
        fixed = self.model_dump(mode="json")
        if fixed["training"] is None:  # versions before the recipe hashed without it
            del fixed["training"]
        else:  # and each version before a recipe field without that field
            fixed["training"] = {k: v for k, v in fixed["training"].items() if v is not None}
        text = json.dumps(fixed, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def protocol(tier: Tier = "full") -> Protocol:
    """The current version's ``tier``."""
    if tier == "full":
        return Protocol()
    if tier == "quick":
        return Protocol(tier="quick", presets=QUICK_PRESETS, worlds=10, episodes=1)
    if tier == "smoke":
        return Protocol(
            tier="smoke",
            presets=("paper",),
            worlds=2,
            episodes=1,
            ticks=12,
            # one short training: the pipes, not a method (no verdicts in this tier)
            training=Training(worlds=(20,), seeds=(0,), steps=300, phi_episodes=30),
            fronts=(("margin-estimated", MARGIN_RECOMMENDERS["margin-estimated"]),),
            margins=(0.0, 0.05, 0.15, 0.3),
            check_worlds=("paper",),
        )
    raise ValueError(f"tier = {tier!r} is not allowed: one of {', '.join(TIERS)}")


#: version -> tier -> digest: a changed protocol needs a new version (and entry here)
VERSIONS: dict[str, dict[str, str]] = {
    "dynamic-recourse/1": {
        "full": "b54f014564f62e64",
        "quick": "d6e252438558b06d",
        "smoke": "fe42565f0c4460de",
    },
    "dynamic-recourse/2": {
        "full": "4b4c08fa44e0ba62",
        "quick": "d124ae2fb2c7b954",
        "smoke": "f1f4583980cfb9c4",
    },
    "dynamic-recourse/3": {
        "full": "30c6df56aa681f4b",
        "quick": "5f2ebe8090dd6157",
        "smoke": "fdefdbc3078c3cf8",
    },
    "dynamic-recourse/4": {
        "full": "179250c9d7685d60",
        "quick": "4033360939f362cf",
        "smoke": "15584d5cabc10d3c",
    },
}

#: the fields that make a protocol's runs: two versions equal in all of them run the same
#: runs (run ids name a run's whole content), and differ only in how an entry is judged
RUN_FIELDS = (
    "presets",
    "worlds",
    "episodes",
    "ticks",
    "settings",
    "baselines",
    "fronts",
    "margins",
)
#: earlier versions: what each fixed differently from the current one (:func:`past`); a
#: key that is a field of :class:`Training` changes the recipe of that version's tiers
PAST: dict[str, dict[str, Any]] = {
    # version 4 added φ to the recipe (learned entries: rl, rl-recommender, rl-constrained)
    "dynamic-recourse/3": {"phi_episodes": None},
    # version 3 added the training recipe (learned entries: hybrid-*)
    "dynamic-recourse/2": {"training": None},
    # version 2 added check_policy's rules "one-way" and "onehot" (issue 53) and "batch"
    # (issue 49), and the worlds "one-way" and "onehot" (the smoke tier checks in paper only)
    "dynamic-recourse/1": {
        "check_rules": (
            "runs",
            "advice-shape",
            "bounds",
            "immutables",
            "obs-unchanged",
            "determinism",
            "honest-masks",
            "goal-admissible",
            "goal-reached",
            "budget",
            "model-in-force",
            "fork-safe",
        ),
        "check_worlds": ("paper", "improvement", "retraining", "budget", "fair-scarf"),
        "training": None,
    },
}


def past(version: str, tier: Tier = "full") -> Protocol:
    """``tier`` of an earlier ``version`` (:data:`PAST`), as it was fixed: its digest is
    the one :data:`VERSIONS` pins (tests/test_benchmark.py)."""
    if version == VERSION:
        return protocol(tier)
    if version not in PAST:
        raise ValueError(f"version = {version!r} is not allowed: one of {', '.join(VERSIONS)}")
    changed = dict(PAST[version])
    if tier == "smoke":  # the smoke tier checks in the paper's world only, in every version
        changed.pop("check_worlds", None)
    now = protocol(tier)
    recipe = {k: changed.pop(k) for k in list(changed) if k in Training.model_fields}
    if recipe and changed.get("training", now.training) is not None:
        changed["training"] = now.training.model_copy(update=recipe)
    return now.model_copy(update={"version": version, **changed})


def same_runs(a: Protocol, b: Protocol, learned: tuple[str, ...] = ()) -> bool:
    """Whether protocols ``a`` and ``b`` run the same runs (:data:`RUN_FIELDS`): a card of
    one can be judged again under the other from the runs it holds
    (:func:`lab.benchmark.card.rejudge`). ``learned``: the recipe's fields a learned
    entry's runs also depend on (:data:`RECIPE_FIELDS`); both must have a recipe."""
    if a.tier != b.tier or any(getattr(a, f) != getattr(b, f) for f in RUN_FIELDS):
        return False
    if not learned:
        return True
    if a.training is None or b.training is None:
        return False
    return all(getattr(a.training, f) == getattr(b.training, f) for f in learned)


def describe() -> str:
    """The tiers of the current version as a Markdown table (docs/benchmark.md)."""
    rows = [
        "| tier | presets | worlds x episodes | ticks | fronts (margins) | verdicts | digest |",
        "|---|---|---|---|---|---|---|",
    ]
    for tier in TIERS:
        p = protocol(tier)
        fronts = ", ".join(name for name, _ in p.fronts)
        rows.append(
            f"| `{tier}` | {', '.join(f'`{s}`' for s in p.presets)} | {p.worlds} x {p.episodes} "
            f"| {p.ticks or 'the preset’s'} | {fronts} ({len(p.margins)}) "
            f"| {'yes' if p.verdicts else 'no'} | `{p.digest()}` |"
        )
    return "\n".join(rows)
