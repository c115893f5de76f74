"""The JSON report, written as the pipeline runs.

Exchanges are written the moment they finish; connection reports go to a spool file (memory
stays flat however many connections a capture holds) and are copied in at the end, followed
by the sources. Key order: schema, exchanges, connections, sources.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import BinaryIO

import orjson

from agentshark.model import Exchange
from agentshark.output.report import (
    SCHEMA,
    RenderOptions,
    connection_json,
    exchange_json,
    source_json,
)
from agentshark.pipeline import ConnectionReport, Item, SourceReport

_DUMP_OPTS = orjson.OPT_NON_STR_KEYS


class JsonReportWriter:
    def __init__(self, out: BinaryIO, opts: RenderOptions) -> None:
        self._out = out
        self._opts = opts
        self._spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115
        self._sources: list[tuple[int, bytes]] = []
        self._first_exchange = True
        self._first_connection = True
        out.write(b'{"schema":"' + SCHEMA.encode() + b'","exchanges":[')

    def write(self, item: Item) -> None:
        if isinstance(item, Exchange):
            data = orjson.dumps(exchange_json(item, self._opts), option=_DUMP_OPTS)
            self._out.write(data if self._first_exchange else b"," + data)
            self._first_exchange = False
        elif isinstance(item, ConnectionReport):
            data = orjson.dumps(connection_json(item), option=_DUMP_OPTS)
            self._spool.write(data if self._first_connection else b"," + data)
            self._first_connection = False
        elif isinstance(item, SourceReport):
            data = orjson.dumps(source_json(item), option=_DUMP_OPTS)
            self._sources.append((item.index, data))

    def close(self) -> None:
        out = self._out
        out.write(b'],"connections":[')
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, out)
        self._spool.close()
        # Exchanges name their source by index: the list is written in index order.
        sources = [data for _, data in sorted(self._sources)]
        out.write(b'],"sources":[' + b",".join(sources) + b"]}\n")
        out.flush()
