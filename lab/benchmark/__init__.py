"""The dynamic recourse benchmark (docs/benchmark.md): a versioned protocol
(:mod:`.protocol`), the run of one entry beside the baselines and the margin fronts
(:mod:`.run`) and its report card with ``--verify`` (:mod:`.card`).

```python
from lab.benchmark import card, run_benchmark

outcome = run_benchmark("threshold-true", tier="quick")   # check, run (resumable), judge
card.write(outcome, "results/benchmark/threshold-true/quick")
```
"""

from lab.benchmark.protocol import TIERS, VERSION, VERSIONS, Protocol, protocol
from lab.benchmark.run import BenchmarkRefused, Outcome, run_benchmark

__all__ = [
    "TIERS",
    "VERSION",
    "VERSIONS",
    "BenchmarkRefused",
    "Outcome",
    "Protocol",
    "protocol",
    "run_benchmark",
]
