"""Rows -> Arrow record batches, a bounded number of rows at a time.

Both writers take :class:`pyarrow.RecordBatch` es built here from :mod:`.schema`: a
``TIMESTAMPTZ`` column is ``timestamp[us, UTC]`` (the report's float epoch seconds, rounded
to the microsecond), ``JSON`` is the canonical ``arrow.json`` extension type over UTF-8 text
(Parquet's JSON logical type; DuckDB reads it as ``JSON``), ``VARCHAR[]`` a list of strings.

:class:`Batches` holds each table's rows column by column and hands a batch to its sink once
a table has :data:`BATCH_ROWS` rows or about :data:`BATCH_BYTES` bytes of text, so memory
is bounded by the batch size, not by the input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pyarrow as pa

from agentshark.output.tables.schema import TABLES, ColumnType, Table

BATCH_ROWS = 8192
BATCH_BYTES = 4 << 20
_DUMP = orjson.OPT_NON_STR_KEYS

_PLAIN: dict[ColumnType, pa.DataType] = {
    "VARCHAR": pa.string(),
    "VARCHAR[]": pa.list_(pa.string()),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
}


def arrow_type(kind: ColumnType) -> pa.DataType:
    return pa.json_(pa.string()) if kind == "JSON" else _PLAIN[kind]


def arrow_schema(table: Table) -> pa.Schema:
    """The table's schema, each column's meaning in its field metadata (``description``)."""
    return pa.schema(
        [
            pa.field(c.name, arrow_type(c.type), metadata={"description": c.doc})
            for c in table.columns
        ],
        metadata={"description": table.doc, "key": ",".join(table.key)},
    )


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=_DUMP).decode()


def _micros(value: float | None) -> int | None:
    return None if value is None else round(value * 1_000_000)


def _array(values: list[Any], kind: pa.DataType) -> pa.Array:
    if isinstance(kind, pa.ExtensionType):
        return pa.ExtensionArray.from_storage(kind, pa.array(values, type=kind.storage_type))
    return pa.array(values, type=kind)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else 8


class _Buffer:
    """One table's rows not yet written, column by column (JSON already as text)."""

    __slots__ = ("bytes", "columns", "convert", "rows", "schema", "table")

    def __init__(self, table: Table) -> None:
        self.table = table
        self.schema = arrow_schema(table)
        self.columns: list[list[Any]] = [[] for _ in table.columns]
        self.convert: list[Callable[[Any], Any] | None] = [
            _json if c.type == "JSON" else _micros if c.type == "TIMESTAMPTZ" else None
            for c in table.columns
        ]
        self.rows = 0
        self.bytes = 0

    def add(self, row: dict[str, Any]) -> None:
        size = 0
        for column, convert, name in zip(self.columns, self.convert, self.table.names, strict=True):
            value = row[name]
            if convert is not None:
                value = convert(value)
            size += _size(value)
            column.append(value)
        self.rows += 1
        self.bytes += size

    def take(self) -> pa.RecordBatch:
        arrays = [_array(v, f.type) for v, f in zip(self.columns, self.schema, strict=True)]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self.columns = [[] for _ in self.table.columns]
        self.rows = self.bytes = 0
        return batch


Sink = Callable[[Table, pa.RecordBatch], None]


class Batches:
    """Rows in, record batches out to ``sink`` (a writer's ``write_batch``)."""

    def __init__(self, sink: Sink, *, rows: int = BATCH_ROWS, size: int = BATCH_BYTES) -> None:
        self._sink = sink
        self._rows = rows
        self._size = size
        self._buffers = {t.name: _Buffer(t) for t in TABLES}
        self.written: dict[str, int] = {t.name: 0 for t in TABLES}

    def add(self, table: str, row: dict[str, Any]) -> None:
        buffer = self._buffers[table]
        buffer.add(row)
        if buffer.rows >= self._rows or buffer.bytes >= self._size:
            self._flush(buffer)

    def _flush(self, buffer: _Buffer) -> None:
        if buffer.rows:
            self.written[buffer.table.name] += buffer.rows
            self._sink(buffer.table, buffer.take())

    def flush(self) -> None:
        """Every row still held, written."""
        for buffer in self._buffers.values():
            self._flush(buffer)
