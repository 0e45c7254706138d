"""Compiled parts of a batch's tick, with Numba (imported when a batch first needs one).

A batch's tick does a few dozen small array operations per stage over its flat rows, and
at tens of episodes their cost is the calls' own. Where a stage is a plain loop over each
episode's rows, it is compiled here as one loop over all of them, with the bits NumPy
gives: comparisons, counts and order statistics are exact, and each episode's rows are
read as its own call reads them. tests/test_speed_paths.py checks every kernel against
the NumPy path episode by episode.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def block_sum(a, start, n):  # pragma: no cover - compiled
    """Σ a[start : start + n] for n <= 128, in NumPy's order: below 8 terms one after
    another from 0.0, else eight running sums over strides of 8, combined as
    ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the rest in turn (ROAR's
    kernels and :func:`linear_rows`)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i = 8
    while i < n - n % 8:
        j = start + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@njit(cache=True)
def rows_of(counts):  # pragma: no cover - compiled
    """The flat rows of ``counts`` (B,), their sum; a negative count is an error."""
    total = 0
    for c in counts:
        if c < 0:
            raise ValueError("counts: a negative count of rows")
        total += c
    return total


@njit(cache=True)
def check_rows(counts, n):  # pragma: no cover - compiled
    """Refuse ``counts`` that do not add up to the ``n`` flat rows (a compiled loop reads
    no bounds of its own)."""
    if rows_of(counts) != n:
        raise ValueError("counts: the episodes' rows do not add up to the flat rows")


@njit(cache=True)
def select_rows(scores, counts, ks, tie):  # pragma: no cover - compiled
    """Top-k of each episode's flat ``scores`` (``counts`` (B,) rows each, ``ks`` (B,)
    places; :func:`abm.selection.select_top_k` alone), up to the draws.

    Returns (accepted (n,) bool, thresholds (B,), tied (n,) bool, n_tied (B,), need (B,),
    drawn (B,) bool): the threshold is the k-th highest score (the lowest where everyone
    is admitted, NaN with no rows); rows above it plus ``tie`` are admitted, and those
    within ``tie`` of it too unless there are more of them than places left: such an
    episode is ``drawn``, its ``n_tied`` rows at the threshold are ``tied`` and ``need``
    of them are still to be chosen (by the episode's own draw, which the caller makes)."""
    B = counts.shape[0]
    n = scores.shape[0]
    check_rows(counts, n)
    accepted = np.zeros(n, dtype=np.bool_)
    tied = np.zeros(n, dtype=np.bool_)
    thresholds = np.full(B, np.nan)
    n_tied = np.zeros(B, dtype=np.int64)
    need = np.zeros(B, dtype=np.int64)
    drawn = np.zeros(B, dtype=np.bool_)
    lo = 0
    for b in range(B):
        c, k = counts[b], ks[b]
        hi = lo + c
        if c == 0:
            lo = hi
            continue
        ordered = np.sort(scores[lo:hi])
        if c <= k:  # everyone is admitted; the threshold is the least
            thresholds[b] = ordered[0]
            for i in range(lo, hi):
                accepted[i] = True
            lo = hi
            continue
        th = ordered[c - k]
        thresholds[b] = th
        upper, lower = th + tie, th - tie
        n_above = 0
        n_at = 0
        for i in range(lo, hi):
            s = scores[i]
            if s > upper:
                accepted[i] = True
                n_above += 1
            elif s >= lower:
                n_at += 1
        left = k - n_above
        if left == n_at:  # every row at the threshold is admitted
            for i in range(lo, hi):
                s = scores[i]
                if s >= lower and not s > upper:
                    accepted[i] = True
        else:
            drawn[b] = True
            need[b] = left
            n_tied[b] = n_at
            for i in range(lo, hi):
                s = scores[i]
                if s >= lower and not s > upper:
                    tied[i] = True
        lo = hi
    return accepted, thresholds, tied, n_tied, need, drawn


@njit(cache=True)
def count_rows(mask, counts):  # pragma: no cover - compiled
    """(B,) int64: the True values of ``mask`` (n,) in each episode's ``counts`` rows."""
    B = counts.shape[0]
    check_rows(counts, mask.shape[0])
    out = np.zeros(B, dtype=np.int64)
    lo = 0
    for b in range(B):
        hi = lo + counts[b]
        n = 0
        for i in range(lo, hi):
            if mask[i]:
                n += 1
        out[b] = n
        lo = hi
    return out


@njit(cache=True)
def tape_short(lent, used, counts, length):  # pragma: no cover - compiled
    """The episodes (int64) whose block of a tape cannot give their next ``counts``
    draws (not lent yet, or fewer than ``counts[b]`` left of ``length``), and the largest
    count."""
    B = counts.shape[0]
    short = np.empty(B, dtype=np.int64)
    n, top = 0, 0
    for b in range(B):
        c = counts[b]
        if c > top:
            top = c
        if not lent[b] or used[b] + c > length:
            short[n] = b
            n += 1
    return short[:n], top


@njit(cache=True)
def tape_take(block, used, counts):  # pragma: no cover - compiled
    """(counts.sum(),) the next ``counts[b]`` draws of each episode's row of ``block``
    (B, L) from ``used[b]`` on, episode after episode; ``used`` is advanced in place."""
    B = counts.shape[0]
    out = np.empty(rows_of(counts))
    at = 0
    for b in range(B):
        u, c = used[b], counts[b]
        for j in range(c):
            out[at + j] = block[b, u + j]
        at += c
        used[b] = u + c
    return out


@njit(cache=True)
def linear_rows(X, w, intercept):  # pragma: no cover - compiled
    """w . x + b of every row of X (n, z), z <= 128, with the bits of
    ``np.add.reduce(X * w, axis=1) + b``: each row's products summed in NumPy's pairwise
    order (:func:`block_sum`), from +0.0."""
    n, z = X.shape
    out = np.empty(n)
    p = np.empty(max(z, 1))
    for i in range(n):
        for j in range(z):
            p[j] = X[i, j] * w[j]
        out[i] = (block_sum(p, 0, z) + 0.0) + intercept
    return out


@njit(cache=True)
def layout_rows(counts):  # pragma: no cover - compiled
    """(each row's episode (n,), each episode's first row (B,)), int64, for ``counts``
    (B,) rows each: ``arange(B).repeat(counts)`` and ``cumsum(counts) - counts``."""
    B = counts.shape[0]
    episode = np.empty(rows_of(counts), dtype=np.int64)
    starts = np.empty(B, dtype=np.int64)
    at = 0
    for b in range(B):
        starts[b] = at
        for j in range(counts[b]):
            episode[at + j] = b
        at += counts[b]
    return episode, starts


_WORD = np.uint64(0xFFFFFFFF)
_HALF = np.uint64(16)


@njit(cache=True)
def seed_rows(pools, words, mix, gen):  # pragma: no cover - compiled
    """(K, 4) uint64: PCG64's seed words of K SeedSequences whose pools (4, K) uint32 (or
    (4, 1), one for all) have read their first words, after mixing in each key's later
    ``words`` (K, n) uint32 (``mix`` the hash constants of those 4 n steps and after,
    ``gen`` those of generate_state's 8): :func:`abm.rng.seed_states`' NumPy hash, one
    loop. Arithmetic is on uint64 masked to 32 bits, so no product overflows."""
    K, n = words.shape
    one = pools.shape[1] == 1
    out = np.empty((K, 4), dtype=np.uint64)
    pool = np.empty(4, dtype=np.uint64)
    left, right = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
    for k in range(K):
        for i in range(4):
            pool[i] = np.uint64(pools[i, 0 if one else k])
        for j in range(n):
            w = np.uint64(words[k, j])
            for i in range(4):
                h = ((w ^ np.uint64(mix[4 * j + i])) * np.uint64(mix[4 * j + i + 1])) & _WORD
                h ^= h >> _HALF
                p = ((left * pool[i]) - (right * h)) & _WORD
                pool[i] = p ^ (p >> _HALF)
        for i in range(4):  # two hashed words of the pool each, the lower one first
            lo = ((pool[(2 * i) % 4] ^ np.uint64(gen[2 * i])) * np.uint64(gen[2 * i + 1])) & _WORD
            lo ^= lo >> _HALF
            hi = pool[(2 * i + 1) % 4] ^ np.uint64(gen[2 * i + 1])
            hi = (hi * np.uint64(gen[2 * i + 2])) & _WORD
            hi ^= hi >> _HALF
            out[k, i] = lo | (hi << np.uint64(32))
    return out
