"""Policy visualisation: the most probable rollouts of one or more policies.

One horizontal trace per distinct outcome (sequence of states and actions);
its length is the total cost and its thickness the outcome's estimated
probability (SafeAR Figs. 2-4). Failed attempts (state unchanged) are dashed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from policies.safear.mdp import GOAL_ACTION, RecourseMDP
from policies.safear.risk import rollout
from policies.safear.solvers import Policy


def finish_figure(fig, path=None, title: str | None = None):
    """Title, tight layout and (when ``path`` is given) save ``fig`` as PNG; returns it."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    return fig


def top_outcomes(
    mdp: RecourseMDP,
    policy: Policy,
    start: int,
    *,
    rng: np.random.Generator,
    n_rollouts: int = 2000,
    top_k: int = 6,
) -> list[dict]:
    """The ``top_k`` most frequent rollouts from ``start``.

    Each entry: ``prob`` (frequency), ``cost`` (total), ``steps``: list of
    ``(action_name, step_cost, succeeded)``, ``goal`` (reached a goal).
    """
    ro = rollout(mdp, policy, [start], n_rollouts, rng=rng, record=True)
    states, acts = ro.states[0], ro.actions[0]
    keys = [tuple(map(int, np.concatenate([states[i], acts[i]]))) for i in range(n_rollouts)]
    counts = Counter(keys)
    H = policy.horizon
    out = []
    for key, cnt in counts.most_common(top_k):
        st, ac = key[: H + 1], key[H + 1 :]
        steps = []
        for h, a in enumerate(ac):
            if a == GOAL_ACTION:
                break
            nxt, _, co = mdp.outcomes(st[h], a)
            c = float(co[list(nxt).index(st[h + 1])])
            steps.append((mdp.action_names[a], c, st[h + 1] != st[h]))
        out.append(
            {
                "prob": cnt / n_rollouts,
                "cost": sum(s[1] for s in steps),
                "steps": steps,
                "goal": bool(mdp.goal[st[-1]]),
            }
        )
    return out


def _draw_trace(ax, o: dict, y: float, colour: Mapping, xmax: float) -> None:
    """One outcome of :func:`top_outcomes` as a horizontal trace at height ``y``: a segment per
    step (length its cost, thickness the outcome's probability, dashed if it failed), then a
    marker for the end state (green o: goal, red X: not)."""
    x = 0.0
    lw = 1.0 + 14.0 * o["prob"]
    for a, c, ok in o["steps"]:
        ax.plot(
            [x, x + c],
            [y, y],
            color=colour[a],
            lw=lw,
            solid_capstyle="butt",
            linestyle="-" if ok else (0, (2, 1)),
        )
        if c > 0.08 * xmax:
            ax.text(
                x + c / 2,
                y + 0.28,
                a if ok else "x",
                ha="center",
                va="bottom",
                fontsize=7,
                color="black" if ok else "red",
            )
        x += c
    ax.plot(
        [x],
        [y],
        marker="o" if o["goal"] else "X",
        color="green" if o["goal"] else "red",
        ms=8,
        zorder=3,
    )
    ax.text(x + 0.02 * xmax, y, f"p={o['prob']:.3f}  cost={o['cost']:.2f}", va="center", fontsize=8)


def plot_policy_rollouts(
    mdp: RecourseMDP,
    policies: Policy | Mapping[str, Policy],
    start: int,
    path=None,
    *,
    rng: np.random.Generator,
    n_rollouts: int = 2000,
    top_k: int = 6,
    title: str | None = None,
):
    """Draw the most probable rollouts of each policy (one panel per policy); save PNG to ``path`` if given.

    Returns the :class:`matplotlib.figure.Figure` (no pyplot state is touched).
    """
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    if isinstance(policies, Policy):
        policies = {f"beta={policies.beta:g}": policies}
    names = list(policies)
    data = {
        n: top_outcomes(mdp, policies[n], start, rng=rng, n_rollouts=n_rollouts, top_k=top_k)
        for n in names
    }
    xmax = max((o["cost"] for outs in data.values() for o in outs), default=1.0)
    cmap = colormaps["tab10"]
    colour = {a: cmap(i % 10) for i, a in enumerate(mdp.action_names)}
    fig = Figure(figsize=(10, 1.2 + 0.55 * top_k * len(names)))
    axes = fig.subplots(len(names), 1, squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        for rank, o in enumerate(data[name]):
            _draw_trace(ax, o, -rank, colour, xmax)
        ax.set_ylim(-top_k + 0.4, 0.9)
        ax.set_xlim(0, xmax * 1.3 + 1e-9)
        ax.set_yticks([])
        ax.set_title(name, fontsize=10, loc="left")
        ax.spines[["left", "top", "right"]].set_visible(False)
    axes[-1, 0].set_xlabel(
        "total cost (trace length); thickness = probability; dashed, red x = failed attempt"
    )
    return finish_figure(fig, path, title)
