"""Results never drift silently: every golden case reproduces its summary and tables bit for bit.

The golden file was made before the redesign; a change that alters results regenerates it
(``python tests/golden/generate.py``) and records old vs new figures in CHANGELOG.md.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

from cases import CASES, case_id, run_case  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "golden" / "golden.json").read_text())


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if c.get("slow") else c for c in CASES],
    ids=case_id,
)
def test_golden_case(case):
    needs = case.get("needs")
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed")
    expected = GOLDEN[case_id(case)]
    got = run_case(case)
    assert got["summary"] == expected["summary"]
    assert got["ticks"] == expected["ticks"], "tick table changed"
    assert got["candidates"] == expected["candidates"], "candidate table changed"


def test_every_case_has_a_golden_record():
    assert sorted(GOLDEN) == sorted(case_id(c) for c in CASES)
