"""A world extension is one class (issue 54, item 1): a toy one, written here, adds a
scenario field, a tick column, an episode figure and a card figure through
:func:`abm.mechanisms.register` alone, and nothing else changes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import BaseModel, ConfigDict, Field

from abm import RecourseModel
from abm.card import Figure, Sheet
from abm.config import ScenarioConfig, extension_defaults, field_names
from abm.fields import Float
from abm.mechanisms import (
    BUILT_IN,
    EpisodeFigure,
    Mechanism,
    card_figures,
    register,
    registered,
    registered_while,
)
from abm.validation import ConfigError


class SunshineSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    sunshine: Float = Field(0.0, ge=0.0, le=1.0)


class Sunshine(Mechanism):
    """Each tick is sunny with probability ``sunshine`` (its own stream), and the card
    counts the acceptances made in the sun."""

    name = "sunshine"
    Settings = SunshineSettings
    figures = (Figure("sunny_accept_share", "acceptances made on sunny ticks", "sunshine"),)
    episode = (EpisodeFigure("sunny", "sum", "sunny ticks"),)

    @classmethod
    def tick_columns(cls, config):
        return {"sunny": np.int64}

    def row(self, state, d, advice, outcome, row, view):
        row["sunny"] = int(view.streams.get("sunshine").random() < self.config.sunshine)

    @classmethod
    def fill_card(cls, sheet: Sheet) -> None:
        t = sheet.ticks
        sunny = float(t["n_accepted"][t["sunny"] == 1].sum())
        sheet.put("sunny_accept_share", sheet.share(sunny, sheet.n_accepted), "nobody accepted")


@pytest.fixture
def sunshine():
    with registered_while(Sunshine):
        yield Sunshine


def _run(**overrides) -> RecourseModel:
    return RecourseModel("paper", "threshold", ticks=12, agents=False, **overrides).run()


def test_the_field_is_a_scenario_field_while_registered(sunshine):
    c = ScenarioConfig(sunshine=0.25)
    assert c.sunshine == 0.25 and c.mechanisms == {"sunshine"}
    assert c.to_dict()["sunshine"] == 0.25 and "sunshine" not in ScenarioConfig().to_dict()
    assert "sunshine" in field_names() and extension_defaults()["sunshine"] == 0.0
    assert c.replace(k=5).sunshine == 0.25 and c == ScenarioConfig.from_dict(c.to_dict())
    with pytest.raises(
        ConfigError, match=r"^sunshine = 1\.5 is not allowed; allowed: a number in \[0, 1\]$"
    ):
        ScenarioConfig(sunshine=1.5)
    with pytest.raises(ConfigError, match=r"^sunshine = 2 is not allowed"):
        ScenarioConfig.check_field("sunshine", 2)


def test_unknown_without_registration():
    assert Sunshine not in registered()
    with pytest.raises(ConfigError, match="sunshine = 0.5 is not a known field"):
        ScenarioConfig(sunshine=0.5)


def test_column_summary_and_card_come_from_the_class(sunshine):
    model = _run(sunshine=0.5)
    ticks = model.tick_table()
    assert list(ticks.columns[-1:]) == ["sunny"] and ticks["sunny"].dtype == np.int64
    assert 0 < ticks["sunny"].sum() < len(ticks)
    assert model.summary()["sunny"] == int(ticks["sunny"].sum())
    card = model.outcome_card()
    want = ticks["n_accepted"][ticks["sunny"] == 1].sum() / ticks["n_accepted"].sum()
    assert card.values["sunny_accept_share"] == pytest.approx(want)
    assert "sunny_accept_share" in [f.name for f in card_figures()]
    assert "acceptances made on sunny ticks" in [label for _, label, _, _ in card.rows()]


def test_off_it_reads_needs_and_the_world_is_as_without_it(sunshine):
    off = _run()
    assert "sunny" not in off.tick_table().columns
    card = off.outcome_card()
    assert math.isnan(card.values["sunny_accept_share"])
    assert card.reasons["sunny_accept_share"] == "needs sunshine"
    # its own stream: every other figure of the run is what it is without the extension
    on = _run(sunshine=0.5).tick_table().drop(columns="sunny")
    pd.testing.assert_frame_equal(on, off.tick_table(), check_exact=True)


def test_register_refuses_clashes():
    class Again(Sunshine):
        pass

    with pytest.raises(ValueError, match="reuses a name, a field or a figure"):
        with registered_while(Sunshine):
            register(Again)
    with pytest.raises(TypeError):
        register(object)  # type: ignore[arg-type]
    assert registered() == BUILT_IN


def test_the_cli_shows_its_figures(sunshine, tmp_path):
    from typer.testing import CliRunner

    from lab.cli import app

    out = tmp_path / "run"
    args = ["run", "--ticks", "6", "--set", "sunshine=0.5", "--out", str(out)]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "sunny ticks" in res.output and "acceptances made on sunny ticks" in res.output
    assert "sunny" in pd.read_parquet(out / "ticks.parquet").columns
