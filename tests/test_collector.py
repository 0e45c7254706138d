"""abm.collector: the cyclic collector is off inside a pause and back as it was after."""

from __future__ import annotations

import gc
import threading

import pytest

from abm import RecourseModel, collector


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_pause_switches_the_collector_off_and_back_on(collector_on):
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():  # nested: still off
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_caller_stays_off(collector_on):
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_error_inside_still_switches_it_back_on(collector_on):
    with pytest.raises(RuntimeError, match="inside"), collector.paused():
        raise RuntimeError("an error inside")
    assert gc.isenabled()


def test_overlapping_pauses_in_threads_switch_it_on_after_the_last(collector_on):
    inside, release = threading.Event(), threading.Event()

    def other():
        with collector.paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with collector.paused():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still open
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_run_leaves_the_collector_on(collector_on):
    model = RecourseModel("paper", "lookahead", seed=0, agents=False)
    model.run(3)  # Batch.step pauses it each tick, the planner's batches inside too
    assert gc.isenabled()
    assert model.tick == 3


def _cyclic_garbage(work) -> int:
    """Objects ``work()`` leaves in unreachable cycles (after one warm-up call)."""
    work()
    gc.collect()
    work()
    return gc.collect()


def test_a_planner_tick_leaves_no_cycles_behind(collector_on):
    # the lookahead's 44 forks a tick are freed by reference count as they are done with,
    # so a paused collector lets nothing pile up
    model = RecourseModel("paper", "lookahead", seed=1, agents=False, record_events=False)
    assert _cyclic_garbage(model.step) == 0


def test_a_forecast_leaves_no_cycles_behind(collector_on):
    from dashboards import forecast

    model = RecourseModel("paper", "threshold", seed=0, agents=False, record_events=False)
    model.run(10)
    pop = model.population
    begin = forecast.start(model, int(pop.ids[pop.advised][0]))
    assert _cyclic_garbage(lambda: forecast.futures(begin, range(20))) == 0
