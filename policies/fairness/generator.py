"""SCARF's intervention generators and their training through a differentiable surrogate
(specs/long-term-fairness.md §1).

Two generators of non-negative interventions on the improvable features I:

* ``lstm`` (SCARF): a one-to-many LSTM reads (x_0, s) at every step and emits
  δ_1..δ_T at once, shape (n, T, |I|); the budget is a hard projection of the whole plan,
  D <- D·min(1, B / ΣD).
* ``mlp`` (the memoryless ablation, ``noLSTM``): δ_t = f(x_t, s) from the state before
  step t's intervention, shape (n, |I|); each step is projected onto B / T.

Training runs full-batch Adam on the loss of §1,

    L = λ₁·mean_{i,t}(h(x̃_t) − 1)² + λ₂·Σ_t |E[φ | s=1] − E[φ | s=0]| + λ₃·Σ_t S_ε(P⁰_t, P¹_t),

with φ = sigmoid(logit / τ_φ) and S_ε the entropic transport cost between the groups'
feature clouds: the plan comes from POT's stabilised Sinkhorn on detached costs, and
the gradient flows through the costs only (the envelope theorem), so no backward pass
runs through the Sinkhorn iterations. Each step's clouds are subsampled (seeded) to
``sinkhorn_points`` rows per group to keep an epoch cheap.

The surrogate (:class:`Surrogate`) supplies the counterfactual x̃ = q(x, δ), the decision
model's logit and the transition; the static reproduction and the population policy each
build one. torch is imported inside the functions that use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import numpy as np
from pydantic import AfterValidator, BeforeValidator, Field

from abm.registry import check_declared, not_bool
from abm.validation import ConfigError, problem

KINDS = ("lstm", "mlp")


def _not_all_zero(lam: tuple[float, float, float]) -> tuple[float, float, float]:
    if not any(lam):
        raise ValueError(_LAMBDAS)
    return lam


#: the parameters' declarations (type and bounds, spec §1 and §5): the registry, the
#: population policy, the generator's settings and the static trials all check against these
Lambdas = Annotated[
    tuple[
        Annotated[float, Field(ge=0.0)],
        Annotated[float, Field(ge=0.0)],
        Annotated[float, Field(ge=0.0)],
    ],
    AfterValidator(_not_all_zero),
]
Horizon = Annotated[int, Field(ge=1, le=10_000)]
Budget = Annotated[float, BeforeValidator(not_bool), Field(ge=0.0, le=1e6)]
Hidden = Annotated[int, Field(ge=1, le=4096)]
Epochs = Annotated[int, Field(ge=0, le=1_000_000)]
Rate = Annotated[float, BeforeValidator(not_bool), Field(gt=0.0, le=100.0)]  # lr, tau, eps
SinkhornPoints = Annotated[int, Field(ge=2, le=1_000_000)]
SinkhornIters = Annotated[int, Field(ge=1, le=1_000_000)]
_LAMBDAS = "three numbers >= 0, not all 0"


@dataclass(frozen=True)
class TrainSettings:
    """Generator and training settings (spec §1 defaults, ours): ``lam`` (λ₁, λ₂, λ₃),
    ``hidden`` units, Adam ``lr``, full-batch ``epochs``, ``tau`` (τ_φ), Sinkhorn ``eps``
    and its ``sinkhorn_points`` per group, ``sinkhorn_iters``."""

    lam: tuple[float, float, float] = (1.0, 1.0, 1.0)
    hidden: int = 32
    lr: float = 0.02
    epochs: int = 150
    tau: float = 0.1
    eps: float = 0.1
    sinkhorn_points: int = 128
    sinkhorn_iters: int = 100

    def __post_init__(self) -> None:
        kinds = {
            "lam": Lambdas,
            "hidden": Hidden,
            "lr": Rate,
            "epochs": Epochs,
            "tau": Rate,
            "eps": Rate,
            "sinkhorn_points": SinkhornPoints,
            "sinkhorn_iters": SinkhornIters,
        }
        for name, kind in kinds.items():
            check_declared(kind, getattr(self, name), name, _LAMBDAS if kind is Lambdas else None)


def check_lambdas(lam: Sequence[float]) -> tuple[float, float, float]:
    """``lam`` checked against :data:`Lambdas`, as three floats."""
    return tuple(float(v) for v in check_declared(Lambdas, lam, "lam", _LAMBDAS))  # type: ignore[return-value]


def check_horizon(T: Any) -> int:
    """The horizon T checked against :data:`Horizon`."""
    return int(check_declared(Horizon, T, "horizon"))


def check_budget(budget: Any, field: str = "budget") -> float:
    """A budget checked against :data:`Budget`, as a float."""
    return float(check_declared(Budget, budget, field))


class Surrogate(Protocol):
    """The differentiable world a generator is trained through (torch tensors).

    Shapes: n rows, z features, k = |I| improvable features.
    """

    def counterfactual(self, X: Any, D: Any) -> Any:
        """x̃ = q(x, δ): X (n, z), D (n, k) -> (n, z)."""

    def logit(self, X: Any) -> Any:
        """The decision model's logit, centred on its decision threshold: (n, z) -> (n,)."""

    def transition(self, X: Any, soft: Any, t: int, noise: Any) -> Any:
        """x_{t+1} from x̃_t (n, z), soft decisions (n,) and the step's noise."""

    def noise(self, T: int, n: int, gen: Any) -> Any:
        """Noise for T transitions of n rows (None: a deterministic transition)."""


# the LSTM's zero initial state (h0, c0), read only, by (rows, hidden, dtype): inference
# makes it once per batch size instead of twice a call
_ZERO_STATE: dict[tuple[int, int, Any], tuple[Any, Any]] = {}


def build_net(kind: str, n_in: int, k: int, T: int, hidden: int, seed: int) -> Any:
    """A fresh generator: ``kind`` in :data:`KINDS`, input width ``n_in`` (features and
    the group), ``k`` outputs per step, horizon ``T``, seeded initial weights.

    ``net(inp)`` (training) and ``net.infer(inp)`` (inference, called once a tick by the
    population policy) run the same kernels in the same order, so they agree bit for bit;
    ``infer`` skips the modules' Python dispatch."""
    import torch
    from torch import nn

    if kind not in KINDS:
        raise ConfigError(problem("generator", kind, "'lstm' or 'mlp'"))
    linear, softplus = nn.functional.linear, nn.functional.softplus

    class LSTMGen(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(n_in, hidden, batch_first=True)
            self.head = nn.Linear(hidden, k)
            self.T = T

        def forward(self, inp):  # (n, n_in) -> (n, T, k)
            seq = inp[:, None, :].expand(-1, self.T, -1)
            out, _ = self.lstm(seq)
            return nn.functional.softplus(self.head(out))

        def infer(self, inp):  # forward's kernels, without the modules' Python dispatch
            # the weights go in as they are: they require grad, which makes the input and
            # head projections fold into one matrix product (detached ones would not, and
            # the bits would change); the zero state is made once per batch size
            key = (inp.shape[0], hidden, inp.dtype)
            state = _ZERO_STATE.get(key)
            if state is None:
                if len(_ZERO_STATE) >= 256:
                    _ZERO_STATE.clear()
                with torch.inference_mode(False):  # plain tensors: usable in any mode
                    state = _ZERO_STATE[key] = (
                        inp.new_zeros(1, *key[:2]),
                        inp.new_zeros(1, *key[:2]),
                    )
            out = torch.lstm(
                inp[:, None, :].expand(-1, self.T, -1),
                state,
                self.lstm._flat_weights,
                True,
                1,
                0.0,
                False,
                False,
                True,
            )[0]
            return softplus(linear(out, self.head.weight, self.head.bias))

    class MLPGen(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, k))

        def forward(self, inp):  # (n, n_in) -> (n, k)
            return nn.functional.softplus(self.net(inp))

        def infer(self, inp):  # forward's kernels, without the modules' Python dispatch
            first, _, last = self.net
            hid = torch.tanh(linear(inp, first.weight, first.bias))
            return softplus(linear(hid, last.weight, last.bias))

    # torch's init draws from its global generator: seed a fork of it, which is restored
    # on leaving (the caller's torch random state is left as it was)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LSTMGen() if kind == "lstm" else MLPGen()


def project(D: Any, budget: float) -> Any:
    """D·min(1, budget / ΣD): the hard budget projection of §1 (any shape, D >= 0)."""
    total = D.sum()
    scale = budget / total.clamp_min(1e-12)
    return D * scale.clamp(max=1.0)


def sinkhorn_cost(A: Any, B: Any, eps: float, iters: int) -> Any:
    """Entropic OT cost <P*, C> between the uniform clouds A (a, q) and B (b, q) with
    Euclidean ground cost C; P* from POT's stabilised Sinkhorn on C detached, so the
    gradient is that of the transport cost at the fixed plan (envelope theorem)."""
    import warnings

    import ot
    import torch

    C = torch.cdist(A, B)
    wa = np.full(A.shape[0], 1.0 / A.shape[0])
    wb = np.full(B.shape[0], 1.0 / B.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a capped iteration count may stop short: fine here
        # numpy's stabilised solver: the plan needs no gradient, and this is ~4x faster
        # than the torch backend at these sizes
        P = ot.sinkhorn(
            wa,
            wb,
            C.detach().numpy(),
            eps,
            method="sinkhorn_stabilized",
            numItermax=iters,
            stopThr=1e-6,
        )
    return (torch.as_tensor(P) * C).sum()


def _inputs(X: Any, s: Any) -> Any:
    import torch

    return torch.cat([X, s[:, None]], dim=1)


def rollout(
    net: Any,
    kind: str,
    sur: Surrogate,
    X0: Any,
    s: Any,
    T: int,
    budget_total: float,
    noise: Any = None,
) -> tuple[list[Any], list[Any], Any]:
    """Run the surrogate for T steps under the generator: (x̃_t list, logit_t list, plan
    D (n, T, k)). ``budget_total`` is B_g for the whole plan (the MLP gets B_g / T a step)."""
    import torch

    Xs, logits, plan = [], [], []
    D_all = None
    if kind == "lstm":
        D_all = project(net(_inputs(X0, s)), budget_total)
    X = X0
    for t in range(T):
        if D_all is not None:
            D = D_all[:, t, :]
        else:
            D = project(net(_inputs(X, s)), budget_total / T)
        Xt = sur.counterfactual(X, D)
        lg = sur.logit(Xt)
        Xs.append(Xt)
        logits.append(lg)
        plan.append(D)
        if t + 1 < T:
            X = sur.transition(
                Xt, torch.sigmoid(lg / TAU_TRANSITION), t, None if noise is None else noise[t]
            )
    return Xs, logits, torch.stack(plan, dim=1)


# the surrogate's transition follows soft decisions this sharp (logit units)
TAU_TRANSITION = 0.1


def train(
    kind: str,
    sur: Surrogate,
    X0: np.ndarray,
    s: np.ndarray,
    T: int,
    budget_total: float,
    settings: TrainSettings,
    seed: int,
    dist_cols: Sequence[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Any:
    """Train a ``kind`` generator through ``sur`` on the cohort X0 (n, z), groups s (n,)
    in {0, 1}; horizon T, plan budget B_g = ``budget_total``. ``dist_cols`` are the
    features of the Sinkhorn term (default all); ``progress(done, epochs)`` is called
    after each epoch. Returns the trained net (eval mode).

    torch runs on one thread with a generator seeded from ``seed``: same inputs, same
    weights.
    """
    import torch

    T = check_horizon(T)
    budget_total = check_budget(budget_total, "budget")
    lam1, lam2, lam3 = check_lambdas(settings.lam)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(int(seed))
        Xt0 = torch.as_tensor(X0, dtype=torch.float64)
        st = torch.as_tensor(s, dtype=torch.float64)
        k = sur.k
        net = build_net(kind, X0.shape[1] + 1, k, T, settings.hidden, int(seed)).double()
        opt = torch.optim.Adam(net.parameters(), lr=settings.lr)
        g0 = torch.as_tensor(np.flatnonzero(s == 0))
        g1 = torch.as_tensor(np.flatnonzero(s == 1))
        cols = torch.as_tensor(list(range(X0.shape[1]) if dist_cols is None else dist_cols))
        both = g0.numel() > 0 and g1.numel() > 0
        for epoch in range(settings.epochs):
            if progress is not None and epoch:
                progress(epoch, settings.epochs)
            opt.zero_grad()
            noise = sur.noise(T, X0.shape[0], gen)
            Xs, logits, _ = rollout(net, kind, sur, Xt0, st, T, budget_total, noise)
            loss = torch.zeros((), dtype=torch.float64)
            for Xt, lg in zip(Xs, logits, strict=True):
                loss = loss + lam1 * ((torch.sigmoid(lg) - 1.0) ** 2).mean() / T
                if not both:
                    continue
                phi = torch.sigmoid(lg / settings.tau)
                if lam2:
                    loss = loss + lam2 * (phi[g1].mean() - phi[g0].mean()).abs()
                if lam3:
                    a = _subsample(g0, settings.sinkhorn_points, gen)
                    b = _subsample(g1, settings.sinkhorn_points, gen)
                    A, B = Xt[a][:, cols], Xt[b][:, cols]
                    loss = loss + lam3 * sinkhorn_cost(A, B, settings.eps, settings.sinkhorn_iters)
            loss.backward()
            opt.step()
        if progress is not None:
            progress(settings.epochs, settings.epochs)
        net.eval()
        return net
    finally:
        torch.set_num_threads(threads)


def _subsample(idx: Any, m: int, gen: Any) -> Any:
    import torch

    if idx.numel() <= m:
        return idx
    return idx[torch.randperm(idx.numel(), generator=gen)[:m]]


def plan_lstm(net: Any, X0: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The LSTM's unprojected plan for rows X0 (n, z), groups s (n,): (n, T, k)."""
    return _infer(net, X0, s)


def step_mlp(net: Any, X: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The MLP's unprojected intervention for rows X (n, z), groups s (n,): (n, k)."""
    return _infer(net, X, s)


def _infer(net: Any, X: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The net's output for rows X (n, z) and groups s (n,), on one thread: elementwise
    kernels split across threads could round a chunk's tail differently, so one thread
    keeps the bits independent of the caller's setting (nothing is switched when the
    caller already runs one). Called once a tick: the input is built in numpy (the same
    values as concatenating tensors) and run under ``inference_mode``."""
    import torch

    n, z = X.shape
    inp = np.empty((n, z + 1))
    inp[:, :z] = X
    inp[:, z] = s
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            return net.infer(torch.from_numpy(inp)).numpy()
    finally:
        if threads != 1:
            torch.set_num_threads(threads)
