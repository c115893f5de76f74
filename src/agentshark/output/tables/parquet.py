"""The tables as Parquet files: ``DIR/<table>.parquet``, one per table of :mod:`.schema`.

Every table gets its file, empty ones too (their schema is the documentation). Files are
written under a temporary name (``.<table>.parquet.partial``) and renamed when the export is
done, so an interrupted export leaves no table that looks whole; files of other names in
``DIR`` are never touched. zstd compression; each batch of :mod:`.arrow` is one row group.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from agentshark.output.tables.arrow import arrow_schema
from agentshark.output.tables.schema import TABLES, Table


def table_files(directory: Path) -> list[Path]:
    """The files an export to ``directory`` writes."""
    return [directory / f"{t.name}.parquet" for t in TABLES]


class ParquetOutput:
    def __init__(self, directory: Path) -> None:
        """``directory`` exists; its table files, if any, are replaced at :meth:`close`."""
        self._dir = directory
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._partial: dict[str, Path] = {}
        for table in TABLES:
            partial = directory / f".{table.name}.parquet.partial"
            self._partial[table.name] = partial
            self._writers[table.name] = pq.ParquetWriter(
                partial, arrow_schema(table), compression="zstd"
            )

    def write_batch(self, table: Table, batch: pa.RecordBatch) -> None:
        self._writers[table.name].write_batch(batch)

    def close(self) -> None:
        """The files complete, under their names."""
        for writer in self._writers.values():
            writer.close()
        for name, partial in self._partial.items():
            partial.replace(self._dir / f"{name}.parquet")

    def abort(self) -> None:
        """Nothing of this export left behind."""
        for writer in self._writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        for partial in self._partial.values():
            partial.unlink(missing_ok=True)
