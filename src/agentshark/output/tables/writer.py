"""Pipeline items -> table rows -> a table output, as the pipeline runs.

The same report dicts as the JSON report, through the same redactor (``RenderOptions``):
exchanges (rendered with their stream events) and calls as they come, connection and source
reports through :meth:`Redactor.json`, then at the end the traces and incidents of the
analysis; :mod:`.rows` projects each dict and :class:`~.arrow.Batches` writes the rows in
bounded batches. What stays in memory for the whole run is one exchange id -> source index
entry per exchange (calls name their exchange, not their input) and the source reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import pyarrow as pa

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.output.report import (
    RenderOptions,
    call_json,
    connection_json,
    exchange_json,
    source_json,
)
from agentshark.output.tables import rows
from agentshark.output.tables.arrow import Batches
from agentshark.output.tables.schema import Table
from agentshark.pipeline import ConnectionReport, Item, SourceReport

Json = Any


class TableOutput(Protocol):
    def write_batch(self, table: Table, batch: pa.RecordBatch) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class TableWriter:
    def __init__(self, output: TableOutput, opts: RenderOptions, files: Sequence[str]) -> None:
        """``files``: the inputs as given (``SourceReport.index`` is a place in them)."""
        self._output = output
        self._opts = replace(opts, events=True)  # exchanges: their stream events are a table
        self._call_opts = opts  # calls as the report has them (audio base64 only with events)
        self._redactor = opts.redactor
        self._files = [self._redactor.text(f) for f in files]
        self._batches = Batches(output.write_batch)
        self._source_of: dict[str, int] = {}
        self._sources: list[tuple[int, dict[str, Json]]] = []

    @property
    def written(self) -> dict[str, int]:
        """Rows written so far, by table."""
        return self._batches.written

    def _capture(self, index: int | None) -> str | None:
        return self._files[index] if index is not None and index < len(self._files) else None

    def _add(self, pairs: Iterable[tuple[str, rows.Row]]) -> None:
        add = self._batches.add
        for table, row in pairs:
            add(table, row)

    def write(self, item: Item) -> None:
        if isinstance(item, Exchange):
            self._source_of[item.id] = item.source
            ex = exchange_json(item, self._opts)
            self._add(rows.exchange_rows(ex, self._capture(item.source)))
        elif isinstance(item, Call):
            source = self._source_of.get(item.exchange_id)
            call = call_json(item, self._call_opts)
            self._add(rows.call_rows(call, source, self._capture(source)))
        elif isinstance(item, ConnectionReport):
            conn = self._redactor.json(connection_json(item))
            self._batches.add("connections", rows.connection_row(conn, self._capture(item.source)))
        elif isinstance(item, SourceReport):
            self._sources.append((item.index, self._redactor.json(source_json(item))))

    def close(self, traces: Iterable[Json] = (), incidents: Iterable[Json] = ()) -> None:
        """The last tables (``traces`` and ``incidents`` are report dicts, redacted here),
        every row written, the output complete."""
        for trace in traces:
            self._add(rows.trace_rows(self._redactor.json(trace)))
        for index, incident in enumerate(incidents):
            self._batches.add("incidents", rows.incident_row(index, self._redactor.json(incident)))
        for index, source in sorted(self._sources, key=lambda s: s[0]):
            self._batches.add("sources", rows.source_row(index, source))
        self._batches.flush()
        self._output.close()

    def abort(self) -> None:
        self._output.abort()
