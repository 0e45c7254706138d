"""The model works with Mesa's own tools."""

import mesa

from abm import RecourseModel


def test_batch_run_over_k_and_seed():
    results = mesa.batch_run(
        RecourseModel,
        parameters={
            "scenario": "paper",
            "policy": "threshold",
            "k": [5, 9],
            "seed": [0, 1],
            "ticks": 10,
            "agents": False,
        },
        iterations=1,
        max_steps=50,
        number_processes=1,
        data_collection_period=-1,
        display_progress=False,
    )
    assert len(results) == 4
    for row in results:
        # Mesa reports the 0-based index of the last collected step: tick 9 of 10
        assert row["Step"] == row["tick"] == 9 and row["n_accepted"] == min(
            row["k"], row["n_applicants"]
        )


def test_datacollector_holds_one_row_per_tick(paper_run):
    df = paper_run.datacollector.get_model_vars_dataframe()
    assert len(df) == paper_run.tick == 100
    assert paper_run.steps == 100 and not paper_run.running


def test_agent_reporters_work_alongside_tick_record():
    model = RecourseModel("paper-T5", "threshold", seed=0, ticks=5)
    model.datacollector._new_agent_reporter("goal", "goal")
    model.run()
    assert len(model.datacollector.get_model_vars_dataframe()) == 5
    agents = model.datacollector.get_agent_vars_dataframe().reset_index()
    candidates = agents[agents["AgentID"] != model.decision_maker.unique_id]
    assert len(candidates) > 0 and candidates["goal"].notna().all()
