"""A small neural-network decision model: an sklearn-style classifier trained with torch.

Training uses a private ``torch.Generator`` seeded from ``random_state`` and one thread
(restored afterwards), so the fitted weights depend on the seed alone. Scoring runs in
numpy with reductions whose order is fixed by the layer widths, so a row's score never
depends on the batch it is scored in (as for the linear model).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from abm.validation import ConfigError, optional_import, problem, require_int, require_number


@contextlib.contextmanager
def torch_threads(n: int = 1):
    """Run torch with ``n`` intra-op threads inside the block only."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _dense(X: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """X (n, i) @ W (i, o) + b, reduced along i in a fixed order: shape (n, o)."""
    return np.add.reduce(X[:, :, None] * W[None, :, :], axis=1) + b


class MLPClassifier(ClassifierMixin, BaseEstimator):
    """Binary classifier: ``hidden`` tanh layers, a sigmoid output, Adam on log-loss.

    ``predict_proba`` (n, 2); ``torch_score(X)`` gives P(label 1) as a differentiable
    torch function (float64) for gradient-based recourse such as Wachter's.
    """

    def __init__(
        self,
        hidden: tuple[int, ...] = (16,),
        epochs: int = 30,
        batch_size: int = 256,
        lr: float = 1e-2,
        random_state: int = 0,
    ) -> None:
        self.hidden = hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.random_state = random_state

    def _check_params(self) -> None:
        """sklearn's convention: parameters are checked when ``fit`` uses them."""
        if not isinstance(self.hidden, tuple | list) or not self.hidden:
            raise ConfigError(problem("hidden", self.hidden, "a non-empty tuple of layer widths"))
        for i, width in enumerate(self.hidden):
            require_int(f"hidden[{i}]", width, 1, 10_000)
        require_int("epochs", self.epochs, 1, 1_000_000)
        require_int("batch_size", self.batch_size, 1)
        require_number("lr", self.lr, 0.0, 10.0, low_open=True)
        require_int("random_state", self.random_state, 0, 2**63 - 1)

    def fit(self, X: np.ndarray, y: np.ndarray) -> MLPClassifier:
        """Train on X (n, z) and labels y (n,) of exactly two classes."""
        torch = optional_import("torch", "rl", "the mlp decision model")

        self._check_params()
        X = np.array(X, dtype=np.float64)  # a writable copy: torch shares its memory
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] != 2:
            raise ConfigError(problem("y", self.classes_.tolist(), "labels of exactly two classes"))
        target = (y == self.classes_[1]).astype(np.float64)
        gen = torch.Generator().manual_seed(int(self.random_state))
        with torch_threads(1):
            net = self._network(X.shape[1], gen)
            opt = torch.optim.Adam(net.parameters(), lr=self.lr)
            Xt, yt = torch.from_numpy(X), torch.from_numpy(target)
            loss_fn = torch.nn.BCEWithLogitsLoss()
            for _ in range(self.epochs):
                perm = torch.randperm(X.shape[0], generator=gen)
                for start in range(0, X.shape[0], self.batch_size):
                    idx = perm[start : start + self.batch_size]
                    opt.zero_grad()
                    loss_fn(net(Xt[idx]).squeeze(1), yt[idx]).backward()
                    opt.step()
        self.layers_ = [
            (m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy())
            for m in net
            if isinstance(m, torch.nn.Linear)
        ]
        self.n_features_in_ = X.shape[1]
        return self

    def _network(self, z: int, gen: Any):
        import torch

        sizes = [z, *self.hidden, 1]
        mods: list[Any] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            lin = torch.nn.Linear(a, b, dtype=torch.float64)
            bound = 1.0 / np.sqrt(a)
            with torch.no_grad():  # seeded init instead of torch's global generator
                lin.weight.uniform_(-bound, bound, generator=gen)
                lin.bias.uniform_(-bound, bound, generator=gen)
            mods.append(lin)
            if i < len(sizes) - 2:
                mods.append(torch.nn.Tanh())
        return torch.nn.Sequential(*mods)

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Logit of P(label 1), shape (n,)."""
        h = np.asarray(X, dtype=np.float64)
        for i, (W, b) in enumerate(self.layers_):
            h = _dense(h, W, b)
            if i < len(self.layers_) - 1:
                h = np.tanh(h)
        return h[:, 0]

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        p1 = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def torch_score(self, X: Any) -> Any:
        """P(label 1) of a float64 torch tensor X (n, z), differentiable, shape (n,)."""
        import torch

        h = X
        for i, (W, b) in enumerate(self.layers_):
            h = h @ torch.from_numpy(W) + torch.from_numpy(b)
            if i < len(self.layers_) - 1:
                h = torch.tanh(h)
        return torch.sigmoid(h[:, 0])
