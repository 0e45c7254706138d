"""What every bad-input test asks of the command line's answer (shared by the test files)."""

from __future__ import annotations


def one_error_line(result, code: int = 2) -> str:
    """The one ``error: ...`` line of a CliRunner ``result`` that exited with ``code`` and no
    traceback; a refusal (``code`` 2) prints that line and nothing else."""
    text = result.output
    assert "Traceback" not in text, text
    assert result.exit_code == code, (result.exit_code, text, result.exception)
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, text
    if code == 2:
        assert len([line for line in text.splitlines() if line.strip()]) == 1, text
    return errors[0]
