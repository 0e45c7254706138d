"""Provenance: strict JSON records, one versions(), and the results schema in every run summary."""

import json
import math

import numpy as np

from abm.model import RecourseModel
from abm.provenance import RESULTS_SCHEMA, json_safe, versions, write_json
from lab.results import write_run


def test_json_safe_writes_strict_json(tmp_path):
    record = {
        "a": np.float64("nan"),
        "b": np.inf,
        "c": -math.inf,
        "d": np.int64(3),
        "e": np.arange(2),
        "f": (1, 2.5),
    }
    path = write_json(tmp_path / "r.json", record)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    back = json.loads(text)
    assert back == {"a": None, "b": "inf", "c": "-inf", "d": 3, "e": [0, 1], "f": [1, 2.5]}
    assert json_safe(np.float32(0.5)) == 0.5 and type(json_safe(np.int32(2))) is int


def test_versions_names_python_and_the_packages_that_shape_results():
    v = versions(extra=("gymnasium", "no-such-package-xyz"))
    assert {"python", "recourse-abm", "numpy", "mesa", "gymnasium"} <= set(v)
    assert "no-such-package-xyz" not in v


def test_run_summary_carries_the_results_schema(tmp_path):
    model = RecourseModel("paper", "threshold", seed=0, ticks=5, agents=False).run()
    write_run(model, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["results_schema"] == RESULTS_SCHEMA >= 2
    assert summary["config"]["ticks"] == 5 and summary["versions"]["python"]
