"""The JSON report, written as the pipeline runs.

Exchanges are written the moment they finish; calls and connection reports go to spool files
(memory stays flat however many a capture holds) and are copied in at the end, followed by
the sources. Key order: schema, exchanges, calls (when asked for), connections, sources.
Everything written goes through the options' redactor: exchanges and calls as they are built,
connections, sources and the closing sections (traces, incidents) here.

gRPC server reflection (:mod:`agentshark.output.grpc_reflection`): a reflection exchange is
learned from when it arrives; a gRPC exchange whose method no schema names yet is held back,
with every later exchange of its connection (their order kept), until that connection's
report, a reflection exchange on it, or the end, and is then written with what was learned.
Held exchanges are bounded (:data:`HELD_BYTES` of bodies; past it the oldest connection's
are written as they are).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, BinaryIO

import orjson

from agentshark.apis.model import Call
from agentshark.framing.proto_schema import empty_schemas
from agentshark.model import Exchange
from agentshark.output.grpc import grpc_json
from agentshark.output.grpc_reflection import is_reflection, learn_reflection
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
HELD_BYTES = 64 << 20  # body bytes of gRPC exchanges held back for a reflection to come


class JsonReportWriter:
    def __init__(self, out: BinaryIO, opts: RenderOptions, *, calls: bool = False) -> None:
        """``calls``: write the ``calls`` section even when no call comes."""
        self._out = out
        self._opts = opts
        self._no_schemas = opts.proto is None  # none made yet for what reflection brings
        self._held: dict[str | None, list[Exchange]] = {}  # per connection, in arrival order
        self._held_bytes = 0
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
            self._exchange(item)
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
            self._release(item.connection.id)
            data = self._redactor.dumps(connection_json(item), option=_DUMP_OPTS)
            self._spool.write(data if self._first_connection else b"," + data)
            self._first_connection = False
        elif isinstance(item, SourceReport):
            data = self._redactor.dumps(source_json(item), option=_DUMP_OPTS)
            self._sources.append((item.index, data))

    def _exchange(self, ex: Exchange) -> None:
        rpc = grpc_json(ex)
        if rpc is None and not self._held:
            self._write_exchange(ex)
            return
        if rpc is not None and self._no_schemas:  # the first gRPC exchange: made once
            self._no_schemas = False
            self._opts = replace(self._opts, proto=empty_schemas())
        schemas = self._opts.proto
        if schemas is not None and is_reflection(ex):
            known = schemas.file_count
            learned = learn_reflection(ex, schemas)
            if learned:
                ex = replace(ex, diagnostics=[*ex.diagnostics, *learned])
            if ex.connection in self._held:  # after the exchanges held before it
                self._hold(ex)
                if schemas.file_count > known:
                    self._release(ex.connection)
                return
        elif schemas is not None and (
            ex.connection in self._held
            or (rpc is not None and schemas.method(rpc["method"]) is None)
        ):
            self._hold(ex)
            return
        self._write_exchange(ex)

    def _hold(self, ex: Exchange) -> None:
        self._held.setdefault(ex.connection, []).append(ex)
        self._held_bytes += _body_bytes(ex)
        while self._held_bytes > HELD_BYTES and self._held:
            self._release(next(iter(self._held)))

    def _release(self, connection: str | None) -> None:
        for ex in self._held.pop(connection, ()):
            self._held_bytes -= _body_bytes(ex)
            self._write_exchange(ex)

    def _write_exchange(self, ex: Exchange) -> None:
        data = orjson.dumps(exchange_json(ex, self._opts), option=_DUMP_OPTS)
        self._out.write(data if self._first_exchange else b"," + data)
        self._first_exchange = False

    def _flush_calls(self) -> None:
        if self._calls is not None and self._pending:
            self._calls.write(b"".join(self._pending))
        self._pending.clear()
        self._pending_bytes = 0

    def close(self, sections: Sequence[tuple[str, Iterable[Json]]] = ()) -> None:
        """End the report; ``sections`` (``traces``, ``incidents``...) are written after the
        calls, each value as it comes."""
        out = self._out
        for connection in list(self._held):
            self._release(connection)
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


def _body_bytes(ex: Exchange) -> int:
    return (ex.request.body.size if ex.request else 0) + (
        ex.response.body.size if ex.response else 0
    )
