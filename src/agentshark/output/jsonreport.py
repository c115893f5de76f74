"""The JSON report, written as the pipeline runs.

Exchanges are written the moment they finish; calls and connection reports go to spool files
(memory stays flat however many a capture holds) and are copied in at the end, followed by
the sources. Key order: schema, exchanges, calls (when asked for), connections, sources.
Everything written goes through the options' redactor: exchanges and calls as they are built,
connections, sources and the closing sections (traces, incidents) here.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO

import orjson

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.output.report import (
    SCHEMA,
    RenderOptions,
    call_json,
    connection_json,
    exchange_json,
    source_json,
)
from agentshark.pipeline import ConnectionReport, Item, SourceReport

Json = Any
_DUMP_OPTS = orjson.OPT_NON_STR_KEYS
_CALLS_BATCH = 1 << 20  # bytes of calls JSON gathered before one write to the spool


class JsonReportWriter:
    def __init__(self, out: BinaryIO, opts: RenderOptions, *, calls: bool = False) -> None:
        """``calls``: write the ``calls`` section even when no call comes."""
        self._out = out
        self._opts = opts
        self._redactor = opts.redactor
        self._spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115
        self._calls: tempfile.SpooledTemporaryFile[bytes] | None = None
        self._no_calls_yet = True
        if calls:
            self._calls = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115
        self._pending: list[bytes] = []  # calls not yet in self._calls
        self._pending_bytes = 0
        self._sources: list[tuple[int, bytes]] = []
        self._first_exchange = True
        self._first_connection = True
        out.write(b'{"schema":"' + SCHEMA.encode() + b'","exchanges":[')

    def write(self, item: Item) -> None:
        if isinstance(item, Exchange):
            data = orjson.dumps(exchange_json(item, self._opts), option=_DUMP_OPTS)
            self._out.write(data if self._first_exchange else b"," + data)
            self._first_exchange = False
        elif isinstance(item, Call):
            data = orjson.dumps(call_json(item, self._opts), option=_DUMP_OPTS)
            if self._calls is None:
                self._calls = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115
            if not self._no_calls_yet:
                self._pending.append(b",")
            self._no_calls_yet = False
            # Calls are written to the spool in batches: past its memory size the spool is a
            # real file, where one write per call is one system call per call.
            self._pending.append(data)
            self._pending_bytes += len(data)
            if self._pending_bytes >= _CALLS_BATCH:
                self._flush_calls()
        elif isinstance(item, ConnectionReport):
            data = self._redactor.dumps(connection_json(item), option=_DUMP_OPTS)
            self._spool.write(data if self._first_connection else b"," + data)
            self._first_connection = False
        elif isinstance(item, SourceReport):
            data = self._redactor.dumps(source_json(item), option=_DUMP_OPTS)
            self._sources.append((item.index, data))

    def _flush_calls(self) -> None:
        if self._calls is not None and self._pending:
            self._calls.write(b"".join(self._pending))
        self._pending.clear()
        self._pending_bytes = 0

    def close(self, sections: Sequence[tuple[str, Iterable[Json]]] = ()) -> None:
        """End the report; ``sections`` (``traces``, ``incidents``...) are written after the
        calls, each value as it comes."""
        out = self._out
        self._flush_calls()
        if self._calls is not None:
            out.write(b'],"calls":[')
            self._calls.seek(0)
            shutil.copyfileobj(self._calls, out)
            self._calls.close()
        for name, values in sections:
            out.write(b'],"' + name.encode() + b'":[')
            separator = b""
            for value in values:
                out.write(separator + self._redactor.dumps(value, option=_DUMP_OPTS))
                separator = b","
        out.write(b'],"connections":[')
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, out)
        self._spool.close()
        # Exchanges name their source by index: the list is written in index order.
        sources = [data for _, data in sorted(self._sources)]
        out.write(b'],"sources":[' + b",".join(sources) + b"]}\n")
        out.flush()
