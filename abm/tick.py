"""What one tick hands from stage to stage: the decision, the advice and its outcome.

The model fills them (abm/model.py); the recorder (abm/record.py) and the mechanisms
(abm/mechanisms/) read them. Shapes: a applicants (reapplicants first), n rejected,
s stayers (rejected who did not drop out), e changed entries, z features.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from abm.interfaces import Feedback, RecourseObs
from abm.population import Population


class Decision:
    """Tick ``t`` up to the selection: ``applicants`` (a rows, the ``n_ret`` reapplicants
    first), their ``scores`` and ``accepted`` flags (a,), the rows ``rej`` (n,) of the
    rejected, the ``threshold``, the size of the RF window (eq. 3), and (set by ``decide``)
    the observation handed out. ``states`` holds each mechanism's state of this tick, in
    the order of the model's mechanisms; ``p_true`` is h*(x) (a,) of the applicants where a
    mechanism needs it."""

    __slots__ = (
        "t",
        "threshold",
        "_applicants",
        "scores",
        "accepted",
        "_rej",
        "n_ret",
        "n_window",
        "obs",
        "states",
        "p_true",
    )

    def __init__(
        self,
        t: int,
        threshold: float,
        applicants: Population | tuple[Population, int, int],
        scores: np.ndarray,
        accepted: np.ndarray,
        n_ret: int,
        n_window: int,
    ) -> None:
        self.t, self.threshold, self._applicants = t, threshold, applicants
        self.scores, self.accepted, self.n_ret, self.n_window = scores, accepted, n_ret, n_window
        self._rej: np.ndarray | None = None
        self.obs: RecourseObs | None = None
        self.states: tuple[Any, ...] = ()
        self.p_true: np.ndarray | None = None

    @property
    def applicants(self) -> Population:
        """The applicants (a rows): a batch hands out (its flat rows, lo, hi), made into
        views of this episode's rows only when read (most ticks of a study never do)."""
        got = self._applicants
        if type(got) is tuple:
            flat, lo, hi = got
            got = self._applicants = flat.rows(lo, hi)
        return got

    @property
    def rej(self) -> np.ndarray:
        """Rows (n,) of the rejected among the applicants, found when first read."""
        if self._rej is None:
            self._rej = (~self.accepted).nonzero()[0]
        return self._rej

    def copy(self) -> Decision:
        """A copy whose mechanism states are its own (a fork responds into it); arrays are
        shared."""
        other = object.__new__(Decision)
        # every slot by name: a fork copies one decision a rollout, 44 a lookahead tick
        other.t, other.threshold, other._applicants = self.t, self.threshold, self._applicants
        other.scores, other.accepted, other._rej = self.scores, self.accepted, self._rej
        other.n_ret, other.n_window, other.obs = self.n_ret, self.n_window, self.obs
        other.p_true = self.p_true
        other.states = tuple(copy.copy(s) for s in self.states) if self.states else ()
        return other

    def rejected_X(self) -> np.ndarray:
        """Features seen of the rejected (n, z): the observation's, or taken anew where
        none was built (a batch asked a row-wise policy, abm.batch)."""
        if self.obs is not None:
            return self.obs.X
        return self.applicants.X_obs.take(self.rej, axis=0)

    def success_counts(self) -> tuple[int, int]:
        """(|I^succ|, |I^succ and accepted|): reapplicants who did everything asked."""
        returned = slice(0, self.n_ret)
        succ = self.applicants.advised[returned] & self.applicants.implemented[returned]
        return int(np.count_nonzero(succ)), int(np.count_nonzero(succ & self.accepted[returned]))


class Advice:
    """Validated advice to the rejected: goal (n,), features seen X (n, z), X_cf (n, z),
    advised (n,), the policy's info columns, and (n_unreached, n_withheld, n_no_change)
    among the unadvised. ``scores`` caches (M(x_cf) (n,) NaN where unadvised, M(x_cf) of
    the advised (a,)) under the model in force; ``cost`` the record's eq. 18 (n,)."""

    __slots__ = (
        "goal",
        "X",
        "X_cf",
        "advised",
        "info",
        "all_advised",
        "counts",
        "scores",
        "cost",
    )

    def __init__(self, goal, X, X_cf, advised, info, all_advised, counts) -> None:
        self.goal, self.X, self.X_cf, self.advised, self.info = goal, X, X_cf, advised, info
        self.all_advised = all_advised
        self.counts = counts
        self.scores: tuple[np.ndarray, np.ndarray] | None = None
        self.cost: np.ndarray | None = None  # eq. 18 (n,) under the true d, once recorded

    def cf_scores(self, scorer: Any) -> tuple[np.ndarray, np.ndarray]:
        """(M(x_cf) (n,) with NaN where unadvised, M(x_cf) of the advised (a,)) under
        ``scorer``, the model in force: computed once a tick (the record, the mechanisms
        and the score reuse of implementation all read it)."""
        if self.scores is None:
            if self.all_advised:  # the advised are the rejected: one array serves both
                cf_scores = cf_adv = scorer.score(self.X_cf)
            else:
                cf_scores = np.full(self.advised.shape[0], np.nan)
                cf_adv = scorer.score(self.X_cf[self.advised])
                cf_scores[self.advised] = cf_adv
            self.scores = (cf_scores, cf_adv)
        return self.scores


class Outcome:
    """Implementation draws of the stayers: changed entries (``rows``, ``cols``) (e,), their
    success ``ok`` (e,), realised ``effort`` (s,), whether each stayer did everything asked
    (s,), their features before and after (``X_before``, ``X_after``, (s, z)), and
    ``dprop`` (s, z): changes that followed down the causal graph, if any."""

    __slots__ = ("rows", "cols", "ok", "effort", "implemented", "X_before", "X_after", "dprop")

    def __init__(self, rows, cols, ok, effort, implemented, X_before, X_after, dprop=None):
        self.rows, self.cols, self.ok = rows, cols, ok
        self.effort, self.implemented, self.dprop = effort, implemented, dprop
        self.X_before, self.X_after = X_before, X_after


def reapplicant_feedback(t: int, returning: Population, extra: dict[str, Any]):
    """What a policy may learn at tick ``t`` from the reapplicants (``returning``), as a
    function of their decisions (r,) giving a :class:`Feedback`, or None when there is
    nothing to learn. Captured before their new features overwrite what was seen at the
    last application; ``extra`` holds the mechanisms' fields (outcomes revealed now)."""
    adv = returning.advised
    n_adv = np.count_nonzero(adv)
    if n_adv == 0 and not extra:
        return None
    if n_adv == adv.shape[0] and not extra:  # stored arrays are never written in place
        ids, before, cf, after = returning.ids, returning.X_obs, returning.X_cf, returning.X
        return lambda accepted: Feedback(t, ids, before, cf, after, accepted)
    ids, before = returning.ids[adv], returning.X_obs[adv]
    cf, after = returning.X_cf[adv], returning.X[adv]
    return lambda accepted: Feedback(t, ids, before, cf, after, accepted[adv], **extra)
