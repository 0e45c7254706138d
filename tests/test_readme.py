"""The README's column lists are generated from the code and cannot drift (its code blocks
run in tests/test_docs.py)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_column_lists_match_the_tables():
    script = ROOT / "scripts" / "readme_columns.py"
    res = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
