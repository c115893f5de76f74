"""The DuckDB writer under its memory limit: a batch larger than the limit (one huge body)
still goes in (the limit is raised for it), and the database is whole."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from agentshark.output.tables import duckdb as writer
from agentshark.output.tables.arrow import Batches
from agentshark.output.tables.schema import BY_NAME


def _export_one_part(path: Path, text: str) -> None:
    out = writer.DuckdbOutput(path)
    batches = Batches(out.write_batch)
    row = dict.fromkeys(BY_NAME["parts"].names)
    row.update(call_id="call1", direction="output", message_index=0, part_index=0)
    row.update(type="text", content=text)
    batches.add("parts", row)
    batches.flush()
    out.close()


def test_a_batch_larger_than_the_memory_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "MEMORY", 4 << 20)
    text = "agentshark " * (3 << 20)  # 33 MB of text in one part
    _export_one_part(tmp_path / "x.duckdb", text)
    con = duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True)
    assert con.execute("SELECT content FROM parts").fetchall() == [(text,)]


def test_without_raising_the_limit_that_batch_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the raised limit is for (so the test above can fail)."""
    monkeypatch.setattr(writer, "MEMORY", 4 << 20)
    monkeypatch.setattr(writer, "BATCH_MEMORY_FACTOR", 0)
    with pytest.raises(duckdb.OutOfMemoryException):
        _export_one_part(tmp_path / "x.duckdb", "agentshark " * (3 << 20))
