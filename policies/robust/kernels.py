"""Compiled inner loop of ROAR (:func:`policies.robust.solvers.roar`), with Numba.

A ROAR step is a dozen elementwise operations on a tick's few live rows (2.7 on average
in a ``paper`` episode, 10 features), so in NumPy its cost is the calls' overhead, about
20 µs a step for some 20,000 steps an episode. Here a block of steps runs as one compiled
loop over rows and features.

Every operation is the one NumPy performs, in the same order, so the iterates are the same
bits: IEEE products, quotients and square roots are exact-rounded in both; sums over the
features follow NumPy's pairwise order (:func:`_pairwise`); ``np.sign``, ``np.maximum``
and ``np.minimum`` keep their rules for zero and NaN; σ is SciPy's ``1 / (1 + exp(−x))``
with the C library's ``exp``. tests/test_robust_kernels.py checks the loop against the
NumPy loop bit for bit on random instances of every adversary.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from abm.kernels import block_sum as _block_sum

#: adversaries of the block loop: none (α = 0), L∞ and L1 (spec §4.4)
NONE, LINF, L1 = 0, 1, 2
_BLOCK = 128  # NumPy's PW_BLOCKSIZE: longer sums are split in halves


@njit(cache=True)
def _pairwise(a, start, n):  # pragma: no cover - compiled
    """Σ a[start : start + n] as NumPy reduces a contiguous float64 run: 0.0 plus the
    pairwise sum (blocks of at most 128, longer runs split in halves, a multiple of 8
    first). The leading 0.0 turns a sum of −0.0 into +0.0, as NumPy does.

    The halving is walked with an explicit stack: Numba's cache does not load a
    recursive function reliably (a crash on the second process, Numba 0.68)."""
    if n <= _BLOCK:
        return 0.0 + _block_sum(a, start, n)
    # post-order walk of the halving tree: (start, n, state) frames; values on a stack
    fs, fn, fstate = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)
    vals = np.empty(64)
    top, nv = 0, 0
    fs[0], fn[0], fstate[0] = start, n, 0
    while top >= 0:
        s0, n0 = fs[top], fn[top]
        if n0 <= _BLOCK:
            vals[nv] = _block_sum(a, s0, n0)
            nv += 1
            top -= 1
            continue
        half = n0 // 2
        half -= half % 8
        if fstate[top] == 0:  # left half first
            fstate[top] = 1
            top += 1
            fs[top], fn[top], fstate[top] = s0, half, 0
        elif fstate[top] == 1:  # then the right half
            fstate[top] = 2
            top += 1
            fs[top], fn[top], fstate[top] = s0 + half, n0 - half, 0
        else:  # both done: left + right
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
            top -= 1
    return 0.0 + vals[0]


@njit(cache=True)
def pairwise_rows(P, out):  # pragma: no cover - compiled
    """out (m,) = Σ_j P[i, j] for P (m, z) C-contiguous, as ``np.add.reduce(P, axis=1)``."""
    for i in range(P.shape[0]):
        out[i] = _pairwise(P[i], 0, P.shape[1])


@njit(cache=True)
def _shifted(w, x, alpha, nonneg):  # pragma: no cover - compiled
    """w − α·sgn(x) with sgn 0 := +1 (+1 throughout when every lower bound is >= 0)."""
    if not nonneg and x < 0:
        return w - alpha * -1.0
    return w - alpha * 1.0


@njit(cache=True)
def roar_block(
    Xh, NSh, X0, W, B, lo, hi, free, masked, mode, nonneg, alpha, lam, lr, eps, b1, b2, C1, C2, MV
):  # pragma: no cover - compiled
    """Run k = len(C1) Adam steps of ROAR from Xh[0] (m, z), in place.

    Writes the points Xh[1..k] (k + 1, m, z) and −s at each step's start NSh (k, m), with
    s = θ_adv(x)·x̃ the worst logit; MV (2, m, z) holds Adam's first and second moments
    and is updated. X0, W, lo, hi (m, z) and B (m,) are the live rows' start, weights,
    bounds and intercepts; ``free`` (z,) is 0.0 on immutable features (used iff
    ``masked``); C1, C2 (k,) are 1 − b1ᵗ and 1 − b2ᵗ for each step's t. ``mode`` is
    NONE, LINF or L1; ``nonneg`` says every lower bound is >= 0 (so sgn(x) = +1).
    """
    k = C1.shape[0]
    m, z = X0.shape
    c1b, c2b = 1 - b1, 1 - b2
    wa = np.empty(z)
    prod = np.empty(z)
    for j in range(k):
        X, out = Xh[j], Xh[j + 1]
        c1, c2 = C1[j], C2[j]
        for i in range(m):
            x = X[i]
            # the worst model at x (sgn 0 := +1), as solvers._roar_worst builds it
            if mode == NONE:
                for f in range(z):
                    wa[f] = W[i, f]
                nb = -B[i]
            elif mode == LINF:
                for f in range(z):
                    wa[f] = _shifted(W[i, f], x[f], alpha, nonneg)
                nb = -(B[i] - alpha * 1.0)
            else:  # L1: the largest of |x_1|, ..., |x_z|, 1 (np.argmax: the first, NaN first)
                top, best, nan = z, -1.0, False
                for f in range(z):
                    a = abs(x[f])
                    if a != a:
                        top, nan = f, True
                        break
                    if a > best:
                        best, top = a, f
                if not nan and not best >= 1.0:  # the intercept's 1 loses ties
                    top = z
                for f in range(z):
                    # W − 0 off the top feature in the NumPy code: the same bits as W
                    wa[f] = _shifted(W[i, f], x[f], alpha, nonneg) if f == top else W[i, f]
                nb = (alpha * 1.0 if top == z else 0.0) - B[i]
            for f in range(z):
                prod[f] = wa[f] * x[f]
            ns = nb - _pairwise(prod, 0, z)
            NSh[j, i] = ns
            e = 1.0 / (1.0 + math.exp(-ns))
            for f in range(z):
                moved = x[f] - X0[i, f]
                if moved > 0:
                    sg = 1.0
                elif moved < 0:
                    sg = -1.0
                elif moved == 0:
                    sg = 0.0
                else:
                    sg = moved
                g = lam * sg - e * wa[f]
                if masked:
                    g = g * free[f]
                mf = MV[0, i, f] * b1 + c1b * g
                vf = MV[1, i, f] * b2 + (c2b * g) * g
                MV[0, i, f] = mf
                MV[1, i, f] = vf
                num = lr * (mf / c1)
                den = math.sqrt(vf / c2) + eps
                y = x[f] - num / den
                # np.maximum / np.minimum: NaN wins, a tie gives the bound
                if not (y > lo[i, f] or y != y):
                    y = lo[i, f]
                if not (y < hi[i, f] or y != y):
                    y = hi[i, f]
                out[i, f] = y
