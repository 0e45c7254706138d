"""SCARF's trained generators kept on disk (policies.fairness.store): a run with the
generator loaded equals a run that trains it, bit for bit; damaged or foreign files are
retrained, never trusted; the shipped states match the code; progress is reported."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pandas as pd
import pytest
from scripts_loader import load_script

from abm.model import RecourseModel
from abm.scenarios import resolve_scenario
from policies.fairness import population, store
from policies.fairness.generator import _infer

pytest.importorskip("torch")
pytest.importorskip("ot")

SPEC = {"lstm": "scarf:epochs=3,cohort=64", "mlp": "scarf-mlp:epochs=3,cohort=64"}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty user cache that keeps every training, and the trainings counted."""
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(population, "DISK_MIN_TRAIN_S", 0.0)
    trainings = []
    real = population.train

    def counted(*args, **kwargs):
        trainings.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(population, "train", counted)
    population.clear_generator_cache()
    yield tmp_path / "scarf", trainings
    population.clear_generator_cache()


def _run(spec: str) -> RecourseModel:
    population.clear_generator_cache()  # only the disk may serve
    cfg = resolve_scenario("fair-scarf").replace(ticks=10)
    return RecourseModel(cfg, spec, agents=False, record_events=False).run()


def _same_run(a: RecourseModel, b: RecourseModel) -> None:
    timing = [c for c in a.tick_table() if c.endswith("_s")]
    pd.testing.assert_frame_equal(
        a.tick_table().drop(columns=timing), b.tick_table().drop(columns=timing)
    )
    pd.testing.assert_frame_equal(a.candidate_table(), b.candidate_table())
    assert a.tick_table()["budget_spent"].sum() > 0  # advice was given


@pytest.mark.parametrize("kind", ["lstm", "mlp"])
def test_a_loaded_generator_gives_the_run_a_training_gives(cache, kind):
    folder, trainings = cache
    cold = _run(SPEC[kind])
    assert trainings == [kind]
    files = list(folder.glob("*.npz"))
    assert [f.name.split("-")[0] for f in files] == [kind]
    warm = _run(SPEC[kind])
    assert trainings == [kind]  # loaded, not trained
    _same_run(cold, warm)
    cold_net, warm_net = cold.policy.net, warm.policy.net
    assert warm_net is not cold_net
    for name, t in cold_net.state_dict().items():
        assert t.numpy().tobytes() == warm_net.state_dict()[name].numpy().tobytes(), name
    X = np.random.default_rng(3).random((7, 10))
    s = np.arange(7) % 2.0
    assert _infer(cold_net, X, s).tobytes() == _infer(warm_net, X, s).tobytes()


def _damage(path, how: str) -> None:
    if how == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif how == "garbage":
        path.write_bytes(b"not a zip file")
    else:  # a sound zip whose weights or record were changed
        with np.load(path, allow_pickle=False) as data:
            arrays = {n: data[n] for n in data.files}
        if how == "weights":
            first = next(n for n in arrays if n != store.META)
            arrays[first] = arrays[first] + 1e-12
        elif how == "key":
            record = json.loads(str(arrays[store.META][()]))
            record["key"] = "0" * 64
            arrays[store.META] = np.array(json.dumps(record))
        elif how == "pickle":
            arrays["extra"] = np.array([{"a": 1}], dtype=object)
        with open(path, "wb") as f:
            np.savez(f, **arrays)


@pytest.mark.parametrize("how", ["truncated", "garbage", "weights", "key", "pickle"])
def test_a_damaged_file_is_retrained_and_replaced(cache, how):
    folder, trainings = cache
    cold = _run(SPEC["mlp"])
    (path,) = folder.glob("*.npz")
    _damage(path, how)
    again = _run(SPEC["mlp"])
    assert trainings == ["mlp", "mlp"]  # the damaged file was not used
    _same_run(cold, again)
    assert store.load(path, "mlp", path.stem.split("-", 1)[1], _shape()) is not None
    assert [p.name for p in folder.iterdir()] == [path.name]  # no temporary file left


def _shape() -> dict[str, int]:
    return {"n_in": 11, "k": 4, "T": 10, "hidden": 32}


def test_off_trains_every_time_and_writes_nothing(cache, monkeypatch):
    folder, trainings = cache
    monkeypatch.setenv(store.CACHE_ENV, "off")
    assert store.user_cache_dir() is None and not store.enabled()
    _run(SPEC["mlp"])
    _run(SPEC["mlp"])
    assert trainings == ["mlp", "mlp"] and not folder.exists()


def test_a_quick_training_is_not_written(cache, monkeypatch):
    folder, trainings = cache
    monkeypatch.setattr(population, "DISK_MIN_TRAIN_S", 1e9)
    _run(SPEC["mlp"])
    assert trainings == ["mlp"] and not folder.exists()


def test_the_key_covers_the_versions_and_the_code(monkeypatch):
    import abm

    before = store.disk_key("inputs")
    assert store.disk_key("other inputs") != before != store.disk_key("inputs", "code")
    monkeypatch.setattr(abm, "__version__", "99.0")
    store.environment.cache_clear()
    try:
        assert store.disk_key("inputs") != before
    finally:
        monkeypatch.undo()
        store.environment.cache_clear()
    assert store.disk_key("inputs") == before
    here = store.user_key(before)
    assert here != before  # a user cache is this CPU's own, and its kernels'
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Sandybridge")
    assert store.user_key(before) != here
    assert {"torch", "pot", "numpy", "recourse-abm", "code", "arch"} <= set(
        json.loads(store.environment())
    )


def test_the_file_holds_plain_arrays_only(cache):
    folder, _ = cache
    _run(SPEC["lstm"])
    (path,) = folder.glob("*.npz")
    with zipfile.ZipFile(path) as z:
        names = sorted(z.namelist())
    assert names == sorted(
        [
            "__meta__.npy",
            "lstm.weight_ih_l0.npy",
            "lstm.weight_hh_l0.npy",
            "lstm.bias_ih_l0.npy",
            "lstm.bias_hh_l0.npy",
            "head.weight.npy",
            "head.bias.npy",
        ]
    )


def test_training_reports_its_epochs(cache):
    seen = []
    with population.training_progress(lambda *a: seen.append(a)):
        _run(SPEC["lstm"])
    assert seen == [("scarf", 1, 3), ("scarf", 2, 3), ("scarf", 3, 3)]
    _run(SPEC["lstm"])  # outside the block: nobody is told
    assert len(seen) == 3


def _rounds_as_the_reference() -> bool:
    """Whether the first golden case (tests/golden) is bitwise its reference here."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "golden"))
    from cases import CASES, bitwise, case_id, load_golden, run_case

    case = CASES[0]
    return bitwise(load_golden()[case_id(case)], *run_case(case))


def test_the_shipped_states_are_current_and_serve_demonstration_7():
    """scripts/scarf_states.py --check (keys, checksums, no stray file); and the dashboard's
    demonstrations that use scarf find theirs among them."""
    script = load_script("scarf_states")
    if script.foreign():  # another torch or CPU architecture: they miss, as they should
        pytest.skip(script.foreign())
    found = script.problems()
    if found and not _rounds_as_the_reference():
        # the training inputs' digest (the file names) is of their bits, which such a CPU
        # rounds otherwise (within the golden tolerance): the shipped states miss there
        pytest.skip(
            "this CPU rounds otherwise than the machine that wrote the golden reference "
            f"and the shipped states (a golden case is not bitwise here): {found[0]}"
        )
    assert found == []
    from abm.registry import make_policy
    from dashboards.demos import DEMOS
    from dashboards.settings import Settings

    shipped = {p.name for p in store.SHIPPED_DIR.glob("*.npz")}
    used = 0
    for demo in DEMOS:
        config = Settings.from_demo(demo).resolve()
        ctx = RecourseModel(config, "none", agents=False, record_events=False).context
        for spec in (demo.policy, *demo.compare):
            if spec.split(":")[0] in ("scarf", "scarf-mlp"):
                inputs = make_policy(spec).training_inputs(ctx)
                key = population.stored_key(population.generator_key(*inputs))
                assert store.file_name(inputs[0], key) in shipped, demo.name
                used += 1
    assert used >= 1


def test_the_status_names_what_is_prepared_and_how_far(cache, monkeypatch):
    """While a slow build runs, the session's progress says how far the training is, and
    the status line names the new scenario, not the one on screen."""
    import threading

    import solara

    from dashboards import app
    from dashboards.settings import DashboardModel, Settings, build_progress, preparing_status

    reports = []
    monkeypatch.setattr("dashboards.settings.PROGRESS_EVERY_S", 0.0)
    with build_progress(reports.append):
        _run(SPEC["mlp"])
    assert reports[-2:] == ["training scarf-mlp's generator: epoch 3 of 3 (100 %)", None]
    assert reports[0] == "training scarf-mlp's generator: epoch 1 of 3 (33 %)"

    release, reported = threading.Event(), threading.Event()

    class Training(DashboardModel):
        """Reports one epoch of two, then waits to be released."""

        def __init__(self, settings: Settings) -> None:
            population._PROGRESS.get()("scarf", 1, 2)
            reported.set()
            assert release.wait(60)
            super().__init__(settings)

    session = app.Session(solara.reactive)
    monkeypatch.setattr(app, "DashboardModel", Training)
    monkeypatch.setattr(app, "QUICK_BUILD_S", 0.05)
    try:
        new = Settings.from_preset("groups", seed=4)
        session.build(new)
        assert reported.wait(60)
        assert session.progress.value == "training scarf's generator: epoch 1 of 2 (50 %)"
        text = preparing_status(session.draft.value, session.progress.value)
        assert text.startswith("preparing **groups** with **threshold**, seed 4 · training")
        assert session.model.value.settings.preset != "groups"  # the charts: the old run
    finally:
        release.set()
        while session.building:
            threading.Event().wait(0.02)
    assert session.progress.value is None and session.preparing.value is None
    assert session.model.value.settings == new
