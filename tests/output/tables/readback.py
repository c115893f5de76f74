"""Exports made in process, and their tables read back three ways: the Parquet files with
pyarrow, the same files with DuckDB's ``read_parquet``, and the DuckDB database.

Values are normalized to the report's forms for comparison: a timestamp to integer
microseconds since the epoch, a JSON value parsed. The three readings must be equal.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest

from agentshark.cli import main
from agentshark.output.tables.schema import TABLES, Table

Row = dict[str, Any]


def micros(ts: float | None) -> int | None:
    """A report time as the tables hold it."""
    return None if ts is None else round(ts * 1_000_000)


def _value(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "TIMESTAMPTZ":
        assert isinstance(value, dt.datetime) and value.utcoffset() == dt.timedelta(0)
        delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if kind == "JSON":
        assert isinstance(value, str)
        return json.loads(value)
    return value


def _normalize(table: Table, rows: list[Row]) -> list[Row]:
    kinds = {c.name: c.type for c in table.columns}
    return [{k: _value(v, kinds[k]) for k, v in row.items()} for row in rows]


def _duck_rows(con: duckdb.DuckDBPyConnection, query: str) -> list[Row]:
    cursor = con.execute(query)
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@dataclass
class Export:
    report: dict[str, Any]  # analyze --format json
    events: dict[str, Any]  # exchanges --events --format json
    tables: dict[str, list[Row]]  # read back from Parquet with pyarrow
    db: Path
    parquet: Path


def export(
    tmp: Path,
    capsys: pytest.CaptureFixture[str] | None,
    inputs: list[str],
    *,
    duckdb_file: bool = True,
) -> Export:
    """The report, the events report and both exports of ``inputs`` (only Parquet without
    ``duckdb_file``); the three readings of the tables (two) checked equal. (Without
    ``capsys``, output is not captured.)"""
    report, events, pdir, db = tmp / "r.json", tmp / "e.json", tmp / "pq", tmp / "x.duckdb"
    runs = [
        ["analyze", *inputs, "--format", "json", "-o", str(report)],
        ["exchanges", *inputs, "--events", "--format", "json", "-o", str(events)],
        ["export", "parquet", *inputs, "-o", str(pdir)],
    ]
    if duckdb_file:
        runs.append(["export", "duckdb", *inputs, "-o", str(db)])
    for argv in runs:
        code = main([*argv, "--no-progress"])
        assert code == 0, capsys.readouterr().err if capsys is not None else argv
    if capsys is not None:
        capsys.readouterr()
    tables = read_parquet(pdir)
    assert read_parquet_duckdb(pdir) == tables
    if duckdb_file:
        assert read_duckdb(db) == tables
    return Export(
        report=json.loads(report.read_text()),
        events=json.loads(events.read_text()),
        tables=tables,
        db=db,
        parquet=pdir,
    )


def read_parquet(directory: Path) -> dict[str, list[Row]]:
    out = {}
    for table in TABLES:
        data = pq.read_table(directory / f"{table.name}.parquet")
        assert data.schema.names == list(table.names)
        out[table.name] = _normalize(table, data.to_pylist())
    return out


def read_parquet_duckdb(directory: Path) -> dict[str, list[Row]]:
    con = duckdb.connect()
    out = {}
    for table in TABLES:
        path = str(directory / f"{table.name}.parquet").replace("'", "''")
        rows = _duck_rows(con, f"SELECT * FROM read_parquet('{path}')")
        out[table.name] = _normalize(table, rows)
    return out


def read_duckdb(path: Path) -> dict[str, list[Row]]:
    con = duckdb.connect(str(path), read_only=True)
    out = {}
    for table in TABLES:
        out[table.name] = _normalize(table, _duck_rows(con, f'SELECT * FROM "{table.name}"'))
    con.close()
    return out


def query(db: Path, sql: str) -> list[Row]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return _duck_rows(con, sql)
    finally:
        con.close()
