"""Generated blocks in the docs (lab.docblocks): filled, checked, and never vacuously fresh."""

from lab.docblocks import fill_block


def test_a_block_is_filled_checked_and_a_missing_one_is_an_error(tmp_path, capsys):
    doc = tmp_path / "page.md"
    doc.write_text("intro\n<!-- t -->\n<!-- /t -->\nend\n")
    assert fill_block(doc, "t", "| a |", check=True, command="make") == 1  # empty: stale
    assert "page.md is stale: run make" in capsys.readouterr().out
    assert fill_block(doc, "t", "| a |", check=False, command="make") == 0
    assert doc.read_text() == "intro\n<!-- t -->\n| a |\n<!-- /t -->\nend\n"
    assert fill_block(doc, "t", "| a |", check=True, command="make") == 0
    assert fill_block(doc, "t", "| b |", check=False, command="make") == 0  # replaced
    assert doc.read_text().count("| b |") == 1 and "| a |" not in doc.read_text()
    assert fill_block(doc, "u", "x", check=True, command="make") == 1
    assert "has no <!-- u -->" in capsys.readouterr().out
