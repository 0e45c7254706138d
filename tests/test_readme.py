"""The README's column lists are generated from the code and cannot drift."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_column_lists_match_the_tables():
    script = ROOT / "scripts" / "readme_columns.py"
    res = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_readme_check_policy_example_runs():
    """The 'Adding a policy' section's check_policy block runs and prints what it says."""
    import contextlib
    import io
    import re

    text = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "check_policy" in b]
    assert len(blocks) == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), {})
    assert out.getvalue().strip() == "passed"
