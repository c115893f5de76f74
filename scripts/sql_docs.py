"""Regenerate the column tables of docs/sql.md from src/agentshark/output/tables/schema.py."""

from __future__ import annotations

import re
from pathlib import Path

from agentshark.output.tables.schema import markdown

DOC = Path(__file__).resolve().parent.parent / "docs" / "sql.md"
SECTION = re.compile(r"(<!-- BEGIN columns[^\n]*-->\n).*?(<!-- END columns -->)", re.S)


def regenerated(text: str) -> str:
    """``text`` (docs/sql.md) with its generated section made from the schema."""
    if not SECTION.search(text):
        raise SystemExit(f"{DOC}: no <!-- BEGIN columns ... --> / <!-- END columns --> markers")
    return SECTION.sub(lambda m: m.group(1) + markdown() + m.group(2), text)


if __name__ == "__main__":
    DOC.write_text(regenerated(DOC.read_text()))
    print(f"wrote {DOC}")
