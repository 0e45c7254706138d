"""Train Table 3's T = 1, β = 0.05 predictors again with training seeds 1 and 2 (issue 48,
item 6): rl (φ inside) and the hybrids' shared exact-linear μ on the Pareto study's grid,
16 at a time, into OUT/predictors/<stem>-seed<S> (run on a machine with many cores).

    python scripts/device_train_pareto_seeds.py OUT [WORKERS]
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import sys
from pathlib import Path

SHIPPED = Path("results") / "pareto" / "T1-b005"


def _one(job: tuple[str, str, float, float, int]) -> str:
    from abm.mlp import torch_threads
    from lab.reproduce.pareto import StudyConfig
    from lab.training import PREDICTOR_SAC, train_predictor

    pdir, rec, alpha, tau, seed = job
    cfg = StudyConfig.of(setting="T1-b005")
    with torch_threads(1):
        train_predictor(
            pdir,
            "paper",
            alpha=alpha,
            tau=tau,
            recommender=rec,
            seed=seed,
            steps=cfg.predictor_steps,
            sac=PREDICTOR_SAC,
            resume=True,
            **cfg.overrides,
        )
    return pdir


def main(out: str, workers: int = 16) -> None:
    from lab.reproduce.pareto import StudyConfig

    grid = StudyConfig.of(setting="T1-b005").grid
    trainings = (("rl", f"rl:path={SHIPPED / 'recommender'}"), ("hybrid", "exact-linear"))
    jobs = [
        (str(Path(out) / "predictors" / f"{stem}-a{a:g}-t{t:g}-seed{s}"), rec, a, t, s)
        for stem, rec in trainings
        for a, t in grid
        for s in (1, 2)
    ]
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        for done in pool.map(_one, jobs):
            print(done, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
