"""The pipeline: input files -> a stream of exchanges, connection and source reports.

This is the one module that sees every stage. It is a chain of generators: packets are read,
decoded, reassembled and parsed as they come; an exchange is yielded as soon as both its
messages end, and a connection's state is dropped when it closes, so memory follows the
number of open connections, not the size of the capture.
"""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from agentshark.errors import Diagnostic, InputError
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.http.events import HttpEvent
from agentshark.http.exchange import ExchangeAssembler
from agentshark.http.h1 import H1Connection
from agentshark.http.sniff import SNIFF_BYTES, Protocol, sniff
from agentshark.model import Exchange
from agentshark.net.events import (
    Connection,
    ConnectionClosed,
    ConnectionOpened,
    StreamData,
    StreamEnded,
    StreamGap,
    TcpEvent,
    format_endpoint,
)
from agentshark.net.packet import PacketDecoder
from agentshark.net.tcp import TcpReassembler
from agentshark.sources.detect import classify_document, sniff_format
from agentshark.sources.har import read_har
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.records import DecryptionSecrets, Interface, Packet
from agentshark.sources.vcr import read_vcr

ProgressCallback = Callable[[int, int], None]  # (bytes read so far, total bytes or 0)


@dataclass(slots=True, kw_only=True)
class Options:
    max_body: int = DEFAULT_DECODE_LIMIT  # decoded bytes per body
    max_buffered: int = 8 << 20  # out-of-order TCP bytes held per direction
    progress: ProgressCallback | None = None


@dataclass(slots=True, kw_only=True)
class SourceReport:
    """One input file: its format, what was read and what went wrong."""

    index: int
    path: str
    format: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    packets: int = 0
    bytes: int = 0
    exchanges: int = 0
    connections: int = 0
    not_analyzed: dict[str, int] = field(default_factory=dict)  # packets by reason
    interfaces: list[Interface] = field(default_factory=list)
    secrets: list[DecryptionSecrets] = field(default_factory=list)  # kept for TLS, not shown
    stats: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ConnectionReport:
    """A TCP connection once it closed: endpoints, bytes, what it spoke."""

    connection: Connection
    source: int
    protocol: str  # "http/1.1", "h2c", "tls", "unknown", or "http/1.1+websocket" etc.
    exchanges: int
    diagnostics: list[Diagnostic]
    switched_bytes: tuple[int, int] = (0, 0)  # bytes after a protocol switch, per direction


Item = Exchange | ConnectionReport | SourceReport


def run(paths: Sequence[str], options: Options | None = None) -> Iterator[Item]:
    """Analyze ``paths`` (``-`` is standard input) in order.

    Yields exchanges and connection reports as they finish, then one SourceReport per
    input after its last exchange. A file that cannot be read at all yields a SourceReport
    with an error diagnostic; the other files are still analyzed.
    """
    opts = options or Options()
    counter = itertools.count(1)

    def next_id() -> str:
        return f"e{next(counter)}"

    for index, path in enumerate(paths):
        report = SourceReport(index=index, path=path, format="unknown")
        try:
            stream, total = _open(path)
        except OSError as exc:
            report.diagnostics.append(
                Diagnostic(
                    code="source.unreadable",
                    severity="error",
                    location=path,
                    message=f"cannot read {path}: {exc.strerror or exc}",
                )
            )
            yield report
            continue
        try:
            prefix = "c" if len(paths) == 1 else f"s{index}.c"
            yield from _analyze(stream, total, report, opts, next_id, prefix)
        except InputError as exc:
            report.diagnostics.append(
                Diagnostic(
                    code="source.unsupported", severity="error", location=path, message=str(exc)
                )
            )
        finally:
            if path != "-":
                stream.close()
        yield report


def _open(path: str) -> tuple[io.BufferedReader, int]:
    """The input as a buffered stream (``peek`` decides the format), with its size if known."""
    if path == "-":
        stdin = sys.stdin.buffer
        if isinstance(stdin, io.BufferedReader):
            return stdin, 0
        return io.BufferedReader(io.FileIO(stdin.fileno(), closefd=False)), 0
    p = Path(path)
    return io.BufferedReader(io.FileIO(p, "rb"), buffer_size=1 << 20), p.stat().st_size


def _analyze(
    stream: io.BufferedReader,
    total: int,
    report: SourceReport,
    opts: Options,
    next_id: Callable[[], str],
    prefix: str,
) -> Iterator[Item]:
    head = stream.peek(64)[:64]
    fmt = sniff_format(head)
    name = report.path
    if fmt in ("pcap", "pcapng"):
        report.format = fmt
        yield from _packets(stream, total, report, opts, next_id, prefix)
        return
    if fmt == "unknown":
        raise InputError(
            f"{name}: not a format agentshark reads (starts with {head[:16]!r}); "
            "give it a pcap or pcapng capture, a HAR 1.2 file or a vcrpy cassette"
        )
    data = stream.read()
    report.bytes = len(data)
    kind, doc = classify_document(data, name)
    report.format = kind
    reader = read_har if kind == "har" else read_vcr
    for item in reader(doc, name, report.index, next_id):
        if isinstance(item, Diagnostic):
            report.diagnostics.append(item)
        else:
            report.exchanges += 1
            yield item


def _packets(
    stream: BinaryIO,
    total: int,
    report: SourceReport,
    opts: Options,
    next_id: Callable[[], str],
    prefix: str,
) -> Iterator[Item]:
    name = report.path
    reader = read_pcap(stream, name) if report.format == "pcap" else read_pcapng(stream, name)
    decoder = PacketDecoder(source_name=name)
    tcp = TcpReassembler(source_name=name, max_buffered=opts.max_buffered, id_prefix=prefix)
    conns: dict[str, _ConnectionAnalyzer] = {}
    progress = opts.progress
    packets = 0
    decode = decoder.decode
    feed = tcp.feed

    def dispatch(events: list[TcpEvent], out: list[Item]) -> None:
        """TCP events -> the connection analyzers; finished items appended to ``out``."""
        for ev in events:
            if type(ev) is StreamData:  # the hot path: one per data segment
                found = conns[ev.connection.id].data(ev.direction, ev.data, ev.ts)
                if found:
                    out.extend(found)
            elif isinstance(ev, StreamGap):
                out.extend(conns[ev.connection.id].gap(ev.direction, ev.size, ev.ts))
            elif isinstance(ev, StreamEnded):
                out.extend(conns[ev.connection.id].end(ev.direction, ev.ts, ev.reason == "fin"))
            elif isinstance(ev, ConnectionOpened):
                conns[ev.connection.id] = _ConnectionAnalyzer(
                    ev.connection, report.index, next_id, name
                )
                report.connections += 1
            elif isinstance(ev, ConnectionClosed):
                out.extend(conns.pop(ev.connection.id).close())

    def drain(out: list[Item]) -> Iterator[Item]:
        for item in out:
            if type(item) is Exchange:
                report.exchanges += 1
            yield item
        out.clear()

    ready: list[Item] = []
    for item in reader:
        if type(item) is Packet:
            packets += 1
            seg = decode(item)
            if seg is not None:
                events = feed(seg)
                if events:
                    ev = events[0]
                    if len(events) == 1 and type(ev) is StreamData:  # the hot path
                        found = conns[ev.connection.id].data(ev.direction, ev.data, ev.ts)
                        if found:
                            ready.extend(found)
                    else:
                        dispatch(events, ready)
                    if ready:
                        yield from drain(ready)
            if progress is not None and not packets & 0x3FFF:
                progress(item.offset, total)
        elif isinstance(item, Diagnostic):
            report.diagnostics.append(item)
        elif isinstance(item, DecryptionSecrets):
            report.secrets.append(item)
        elif isinstance(item, Interface):
            report.interfaces.append(item)
    dispatch(tcp.close(), ready)
    yield from drain(ready)
    report.diagnostics.extend(decoder.close())
    report.diagnostics.extend(tcp.diagnostics)
    report.packets = packets
    report.bytes = stream.tell() if report.path != "-" else 0
    report.not_analyzed = dict(decoder.counts)
    report.stats = dict(tcp.stats)
    if progress is not None:
        progress(total, total)


class _ConnectionAnalyzer:
    """One TCP connection above TCP: sniffs its protocol, then parses what we understand.

    Until the protocol is known, the first bytes of each direction are held (at most a few
    KiB, or 64 KiB for a capture that starts mid-connection).
    """

    __slots__ = (
        "_assembler",
        "_conn",
        "_ended",
        "_exchanges",
        "_h1",
        "_held",
        "_name",
        "_next_id",
        "_source",
        "protocol",
    )

    def __init__(
        self, conn: Connection, source: int, next_id: Callable[[], str], name: str
    ) -> None:
        self._conn = conn
        self._source = source
        self._next_id = next_id
        self._name = name
        self.protocol: Protocol | None = None
        self._held: tuple[list[tuple[str, int, object, float]], bytearray, bytearray] = (
            [],
            bytearray(),
            bytearray(),
        )
        self._ended = [False, False]
        self._h1: H1Connection | None = None
        self._assembler: ExchangeAssembler | None = None
        self._exchanges = 0

    # -- TCP events -----------------------------------------------------------------------

    def data(self, direction: int, data: bytes, ts: float) -> list[Exchange]:
        h1 = self._h1
        if h1 is not None:
            http_events = h1.feed(direction, data, ts)
            return self._emit(http_events) if http_events else []
        if self.protocol is not None:
            return []
        events, client, server = self._held
        events.append(("data", direction, data, ts))
        if len(client) < 65536 and direction == 0:
            client += data[: 65536 - len(client)]
        elif len(server) < 65536 and direction == 1:
            server += data[: 65536 - len(server)]
        return self._try_decide(final=False)

    def gap(self, direction: int, size: int, ts: float) -> list[Exchange]:
        if self._h1 is not None:
            return self._emit(self._h1.gap(direction, size, ts))
        if self.protocol is not None:
            return []
        self._held[0].append(("gap", direction, size, ts))
        return self._try_decide(final=True)

    def end(self, direction: int, ts: float, clean: bool) -> list[Exchange]:
        self._ended[direction] = True
        if self._h1 is not None:
            return self._emit(self._h1.end(direction, ts, clean=clean))
        if self.protocol is not None:
            return []
        self._held[0].append(("end", direction, clean, ts))
        return self._try_decide(final=all(self._ended))

    def close(self) -> list[Exchange | ConnectionReport]:
        out: list[Exchange | ConnectionReport] = []
        if self.protocol is None:
            out.extend(self._try_decide(final=True))
        if self._assembler is not None:
            out.extend(self._count(self._assembler.close()))
        diagnostics = list(self._conn.diagnostics)
        protocol: str = self.protocol or "unknown"
        switched = (0, 0)
        if self._assembler is not None:
            diagnostics.extend(self._assembler.diagnostics)
        if self._h1 is not None:
            switched = self._h1.switched_bytes
            if self._h1.switched:
                protocol = f"{protocol}+{self._h1.switched}"
        if self.protocol == "tls":
            diagnostics.append(
                Diagnostic(
                    code="tls.not_decrypted",
                    severity="info",
                    location=self._conn.id,
                    message="TLS connection reported with its byte counts only: decryption "
                    "is not supported yet",
                )
            )
        elif self.protocol == "h2c":
            diagnostics.append(
                Diagnostic(
                    code="h2.not_parsed",
                    severity="info",
                    location=self._conn.id,
                    message="cleartext HTTP/2 connection reported with its byte counts only: "
                    "HTTP/2 is not parsed yet",
                )
            )
        out.append(
            ConnectionReport(
                connection=self._conn,
                source=self._source,
                protocol=protocol,
                exchanges=self._exchanges,
                diagnostics=diagnostics,
                switched_bytes=switched,
            )
        )
        return out

    # -- protocol decision ----------------------------------------------------------------

    def _try_decide(self, *, final: bool) -> list[Exchange]:
        events, client, server = self._held
        if not final and len(client) < SNIFF_BYTES and not server and not self._ended[0]:
            return []  # wait for more of the client's first bytes
        protocol, swap = sniff(
            bytes(client), bytes(server), final=final, swap_allowed=not self._conn.handshake_seen
        )
        if protocol is None:
            return []
        if swap:
            self._conn.swap_roles()
            events = [(kind, 1 - d, value, ts) for kind, d, value, ts in events]
        self.protocol = protocol
        self._held = ([], bytearray(), bytearray())
        if protocol != "http/1.1":
            return []
        self._h1 = H1Connection()
        self._assembler = ExchangeAssembler(
            source=self._source,
            connection=self._conn.id,
            transport="http/1.1",
            scheme="http",
            server=format_endpoint(self._conn.server),
            next_id=self._next_id,
            location=f"{self._name} {self._conn.id}",
        )
        out: list[Exchange] = []
        for kind, d, value, ts in events:
            if kind == "data":
                assert isinstance(value, bytes)
                out.extend(self._emit(self._h1.feed(d, value, ts)))
            elif kind == "gap":
                assert isinstance(value, int)
                out.extend(self._emit(self._h1.gap(d, value, ts)))
            else:
                out.extend(self._emit(self._h1.end(d, ts, clean=bool(value))))
        return out

    def _emit(self, events: list[HttpEvent]) -> list[Exchange]:
        if not events:
            return []
        assert self._assembler is not None
        return self._count(self._assembler.handle(events))

    def _count(self, exchanges: list[Exchange]) -> list[Exchange]:
        self._exchanges += len(exchanges)
        return exchanges
