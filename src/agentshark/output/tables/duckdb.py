"""The tables in one DuckDB database file.

Tables are created from :mod:`.schema` (``TIMESTAMPTZ``, ``BIGINT``, ``DOUBLE``,
``BOOLEAN``, ``VARCHAR``, ``VARCHAR[]``, ``JSON``), every table and column carrying its
meaning as a DuckDB comment (``SELECT comment FROM duckdb_columns()``), and filled with the
record batches of :mod:`.arrow` as they come: one insert (an Arrow scan) and one commit per
batch, under a memory limit (:data:`MEMORY`), so that memory stays flat however large the
input. The database is written as ``<file>.partial`` and renamed when the
export is done: an interrupted export leaves no database that looks whole.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from agentshark.output.tables.schema import TABLES, Table

# DuckDB keeps blocks of the database it writes in memory up to its memory limit (80% of
# RAM by default, and the cache grows with the input): at 32 MB and one thread (the
# pipeline feeds one batch at a time) the export's peak RSS was 210 MB for a 30 MB capture
# and 249 MB for a 100 MB one, growing as `analyze` does (73 -> 109 MB); with DuckDB's
# defaults 578 MB for the 100 MB one. A batch is given 4 times its Arrow size.
MEMORY = 32 << 20
BATCH_MEMORY_FACTOR = 4


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
        self._limit = MEMORY
        self._con.execute(f"SET memory_limit = '{MEMORY}B'")
        self._con.execute("SET threads = 1")
        self._con.execute("BEGIN")  # the catalog in one commit, not one per statement
        for table in TABLES:
            for statement in create_statements(table):
                self._con.execute(statement)
        self._con.execute("COMMIT")

    def write_batch(self, table: Table, batch: pa.RecordBatch) -> None:
        """One insert (its own commit). A batch that needs more memory than the limit (one
        huge body) raises it for the rest of the export: the checkpoint at the end pins
        its blocks again."""
        need = BATCH_MEMORY_FACTOR * batch.nbytes
        if need > self._limit:
            self._limit = need
            self._con.execute(f"SET memory_limit = '{need}B'")
        self._con.register("agentshark_batch", pa.Table.from_batches([batch]))
        try:
            insert = f"INSERT INTO {_quote(table.name)} SELECT * FROM agentshark_batch"  # noqa: S608 (a schema name)
            self._con.execute(insert)
        finally:
            self._con.unregister("agentshark_batch")

    def close(self) -> None:
        """The database complete, under its name."""
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
