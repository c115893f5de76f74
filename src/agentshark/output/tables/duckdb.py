"""The tables in one DuckDB database file.

Tables are created from :mod:`.schema` (``TIMESTAMPTZ``, ``BIGINT``, ``DOUBLE``,
``BOOLEAN``, ``VARCHAR``, ``VARCHAR[]``, ``JSON``), every table and column carrying its
meaning as a DuckDB comment (``SELECT comment FROM duckdb_columns()``), and filled with the
record batches of :mod:`.arrow` as they come (an Arrow scan per batch: DuckDB copies the
batch in, nothing is held). The database is written as ``<file>.partial`` and renamed when the
export is done: an interrupted export leaves no database that looks whole.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from agentshark.output.tables.schema import TABLES, Table


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def create_statements(table: Table) -> list[str]:
    """``CREATE TABLE`` and the ``COMMENT ON`` statements of one table."""
    columns = ", ".join(f"{_quote(c.name)} {c.type}" for c in table.columns)
    name = _quote(table.name)
    out = [f"CREATE TABLE {name} ({columns})", f"COMMENT ON TABLE {name} IS {_literal(table.doc)}"]
    out += [
        f"COMMENT ON COLUMN {name}.{_quote(c.name)} IS {_literal(c.doc)}" for c in table.columns
    ]
    return out


class DuckdbOutput:
    def __init__(self, path: Path) -> None:
        """``path`` is replaced at :meth:`close` if it exists."""
        self._path = path
        self._partial = path.with_name(path.name + ".partial")
        self._remove_partial()
        self._con = duckdb.connect(str(self._partial))
        # One transaction for the whole export: one commit, not one per statement (DuckDB
        # writes a large transaction's row groups to the file as they fill, not to memory).
        self._con.execute("BEGIN")
        for table in TABLES:
            for statement in create_statements(table):
                self._con.execute(statement)

    def write_batch(self, table: Table, batch: pa.RecordBatch) -> None:
        self._con.register("agentshark_batch", pa.Table.from_batches([batch]))
        try:
            self._con.execute(f"INSERT INTO {_quote(table.name)} SELECT * FROM agentshark_batch")  # noqa: S608 (a schema name)
        finally:
            self._con.unregister("agentshark_batch")

    def close(self) -> None:
        """The database complete, under its name."""
        self._con.execute("COMMIT")
        self._con.execute("CHECKPOINT")
        self._con.close()
        # an old database's log would be replayed into the new one
        self._path.with_name(self._path.name + ".wal").unlink(missing_ok=True)
        self._partial.replace(self._path)

    def abort(self) -> None:
        """Nothing of this export left behind."""
        self._con.close()
        self._remove_partial()

    def _remove_partial(self) -> None:
        self._partial.unlink(missing_ok=True)
        self._partial.with_name(self._partial.name + ".wal").unlink(missing_ok=True)
