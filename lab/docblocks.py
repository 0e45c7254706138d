"""Generated blocks in the docs: the text between ``<!-- NAME -->`` and ``<!-- /NAME -->``
is written by a script from what the code or a shipped result knows, and a test runs the
script with ``--check`` so the page cannot drift."""

from __future__ import annotations

import re
from pathlib import Path


def fill_block(doc: Path, name: str, body: str, *, check: bool, command: str) -> int:
    """Put ``body`` between the markers ``name`` of ``doc`` (0), or with ``check`` only say
    whether it is there already (1 and a line naming ``command`` when stale); 1 when the
    page has no such block (an empty block is a block: the markers on two lines)."""
    text = doc.read_text()
    new, found = re.subn(
        rf"(<!-- {name} -->\n).*?(<!-- /{name} -->)",
        lambda m: m.group(1) + body + "\n" + m.group(2),
        text,
        flags=re.S,
    )
    if found != 1:
        print(f"{doc.name} has no <!-- {name} --> ... <!-- /{name} --> block")
        return 1
    if check:
        if new != text:
            print(f"{doc.name} is stale: run {command}")
            return 1
        return 0
    doc.write_text(new)
    return 0


def fill_blocks(doc: Path, bodies: dict[str, str], *, check: bool, command: str) -> int:
    """:func:`fill_block` for every (name, body) of ``bodies``; 1 when any is missing or
    stale (each is reported)."""
    return max(
        fill_block(doc, name, body, check=check, command=command) for name, body in bodies.items()
    )
