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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol, TypeVar, overload

from agentshark.apis.mcp.sessions import McpSessions
from agentshark.apis.model import Call
from agentshark.apis.registry import recognize, recognize_operation
from agentshark.apis.session_evidence import with_losses
from agentshark.apis.websocket import SessionCalls
from agentshark.errors import Diagnostic, InputError
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.model import Exchange
from agentshark.net.events import (
    Connection,
    ConnectionClosed,
    ConnectionOpened,
    StreamData,
    StreamEnded,
    StreamGap,
    TcpEvent,
)
from agentshark.net.packet import PacketDecoder
from agentshark.net.segment import TcpSegment
from agentshark.net.tcp import TcpReassembler
from agentshark.pipeline.connection import ConnectionAnalyzer
from agentshark.pipeline.quic import QuicSessions
from agentshark.pipeline.reports import ConnectionReport, SourceReport
from agentshark.pipeline.stdio import StdioSessions
from agentshark.pipeline.websocket import WsProgress
from agentshark.sources.detect import classify_document, sniff_format
from agentshark.sources.har import read_har
from agentshark.sources.keylog import load_keylog
from agentshark.sources.mitm import read_flows
from agentshark.sources.pcap import read_pcap
from agentshark.sources.pcapng import read_pcapng
from agentshark.sources.records import DecryptionSecrets, Interface, Packet
from agentshark.sources.stdio import sniff_stdio
from agentshark.sources.vcr import read_vcr
from agentshark.sources.wslog import read_message_log
from agentshark.sources.xai_cassette import read_xai_cassette
from agentshark.tls.keylog import KeyLog

__all__ = ["PAUSE", "ConnectionReport", "Item", "Options", "Pause", "SourceReport", "run"]

TLSK = 0x544C534B  # Decryption Secrets Block type: NSS key log (pcapng §4.7)

ProgressCallback = Callable[[int, int], None]  # (bytes read so far, total bytes or 0)


@dataclass(slots=True, kw_only=True)
class Options:
    max_body: int = DEFAULT_DECODE_LIMIT  # decoded bytes per body
    max_buffered: int = 8 << 20  # out-of-order TCP bytes held per direction
    progress: ProgressCallback | None = None
    keylogs: Sequence[str] = ()  # NSS key log files (SSLKEYLOGFILE) for TLS decryption
    calls: bool = False  # recognize API calls in exchanges (model calls, tool calls...)
    # with calls: a WebSocket session's calls come as each is final, while the session is
    # open (before its exchange); otherwise right after its exchange, as the other calls
    early_calls: bool = False
    # worker processes that share each capture file by connection (pipeline.jobs); the
    # report is the same for any number
    jobs: int = 1


Item = Exchange | Call | ConnectionReport | SourceReport
_Flow = Item | WsProgress  # what the stages below the call stage yield
_T = TypeVar("_T")


def run(paths: Sequence[str], options: Options | None = None) -> Iterator[Item]:
    """Analyze ``paths`` (``-`` is standard input) in order.

    Yields exchanges and connection reports as they finish (with ``options.calls``, each
    exchange is followed by the Call it carries, if any), then one SourceReport per input
    after its last exchange. A file that cannot be read at all yields a SourceReport
    with an error diagnostic; the other files are still analyzed.
    """
    opts = options or Options()
    if opts.jobs > 1:
        from agentshark.pipeline import jobs  # it imports this module

        if jobs.can_share(paths):
            return jobs.run(paths, opts)
    items = _run(paths, opts)
    return _with_calls(items, opts) if opts.calls else _items(items)


def _items(flow: Iterator[_T | WsProgress]) -> Iterator[_T]:
    """The items without the progress of WebSocket sessions (made only for the call stage)."""
    for item in flow:
        if type(item) is not WsProgress:
            yield item  # type: ignore[misc]  # narrowed: not a WsProgress


def _with_calls(
    items: Iterator[_T | WsProgress], opts: Options, shard: Shard | None = None
) -> Iterator[_T | Call]:
    """Each exchange, followed by the API call it carries when a family recognizes one.

    A WebSocket session's calls are read from its progress (:class:`WsProgress`) as the
    session is read (:class:`~agentshark.apis.websocket.SessionCalls`): each comes as
    soon as it is final with ``opts.early_calls``, else they are held until the session's
    exchange and come right after it. Either way they are made at the same point of the
    stream, so their ids are the same. MCP calls that need a later exchange of their
    session (see :mod:`agentshark.apis.mcp.sessions`) come when it does, or after the last
    input. Other items (and :data:`PAUSE`) pass through.

    In a worker of a shared run (``shard``), ids come from the shard and MCP calls pass
    through: their sessions may span connections, so the parent process holds them."""
    counter = itertools.count(1)
    sessions = McpSessions()
    open_sessions: dict[str, tuple[SessionCalls, list[Call]]] = {}  # by exchange id
    restarted: dict[str, list[str]] = {}  # the ids its held calls had, by exchange id

    def next_id() -> str:
        return f"call{next(counter)}"

    if shard is not None:
        next_id = shard.call_id

    for item in items:
        if type(item) is WsProgress and item.restart:
            entry = open_sessions.get(item.exchange.id)
            if entry is not None and not opts.early_calls:  # given out already otherwise
                del open_sessions[item.exchange.id]
                restarted[item.exchange.id] = [c.id for c in entry[1]]
            continue
        if type(item) is WsProgress:
            ws, held = open_sessions.get(item.exchange.id) or open_sessions.setdefault(
                item.exchange.id, (SessionCalls(item.exchange, next_id), [])
            )
            found = ws.feed(item.records)
            if opts.early_calls:
                yield from found
            else:
                held.extend(found)
            continue
        yield item  # type: ignore[misc]  # narrowed: not a WsProgress
        if isinstance(item, Exchange) and item.messages is not None:
            entry = open_sessions.pop(item.id, None)
            if entry is None:  # no progress came (a message log), or a restart
                ws = SessionCalls(item, _reusing(restarted.pop(item.id, []), next_id))
                entry = (ws, ws.feed(with_losses(item.messages)))
            ws, held = entry
            yield from held
            yield from ws.close()
        elif isinstance(item, Exchange) and item.operation is None:  # HTTP: an API family's?
            call = recognize(item, next_id(), max_body=opts.max_body)
            if call is not None:
                if call.api == "mcp" and shard is None:
                    yield from sessions.feed(call)
                else:
                    yield call
        elif isinstance(item, Exchange):  # a wire operation: a pgvector search's?
            op_call = recognize_operation(item, next_id)
            if op_call is not None:
                yield op_call
    yield from sessions.close()


def _reusing(ids: list[str], next_id: Callable[[], str]) -> Callable[[], str]:
    """``ids`` first, in order, then ``next_id``'s (a session's calls read again keep the
    ids their first reading took)."""
    if not ids:
        return next_id
    given = iter(ids)
    return lambda: next(given, None) or next_id()


def _run(paths: Sequence[str], opts: Options, shard: Shard | None = None) -> Iterator[_Flow]:
    """The items of every input; with ``shard``, one worker's share of them (the first
    worker reads every other input whole, the others only their share of the captures)."""
    counter = itertools.count(1)

    def next_id() -> str:
        return f"e{next(counter)}"

    if shard is not None:
        next_id = shard.exchange_id
    primary = shard is None or shard.primary
    keylog = KeyLog()
    for index, path in enumerate(opts.keylogs):
        report = SourceReport(index=len(paths) + index, path=path, format="keylog")
        report.diagnostics.extend(load_keylog(path, keylog))
        report.key_secrets = len(keylog)
        if primary:
            yield report

    stdio = StdioSessions(next_id, "" if len(paths) == 1 else "s.")
    for index, path in enumerate(paths):
        report = SourceReport(index=index, path=path, format="unknown")
        if shard is not None:
            shard.begin(index)
            if not shard.primary and not shard.is_capture(index):
                continue
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
            if shard is not None and shard.is_capture(index):
                shard.done(report)
            else:
                yield report
            continue
        try:
            prefix = "c" if len(paths) == 1 else f"s{index}.c"
            yield from _analyze(stream, total, report, opts, next_id, prefix, keylog, stdio, shard)
        except InputError as exc:
            report.diagnostics.append(
                Diagnostic(
                    code="source.unsupported", severity="error", location=path, message=str(exc)
                )
            )
        finally:
            if path != "-":
                stream.close()
        if shard is not None and shard.is_capture(index):
            shard.done(report)  # the parent merges the workers' reports
        elif not stdio.holding(report):
            yield report
    if shard is not None:
        shard.begin(len(paths))
    yield from stdio.flush()


def _open(path: str) -> tuple[io.BufferedReader, int]:
    """The input as a buffered stream (``peek`` decides the format), with its size if known."""
    if path == "-":
        stdin = sys.stdin.buffer
        if isinstance(stdin, io.BufferedReader):
            return stdin, 0
        return io.BufferedReader(io.FileIO(stdin.fileno(), closefd=False)), 0
    p = Path(path)
    return io.BufferedReader(io.FileIO(p, "rb"), buffer_size=1 << 20), p.stat().st_size


_STDIO_PEEK = 1 << 16  # bytes a transcript's first lines are sniffed in, when the head is not text


def _analyze(
    stream: io.BufferedReader,
    total: int,
    report: SourceReport,
    opts: Options,
    next_id: Callable[[], str],
    prefix: str,
    keylog: KeyLog,
    stdio: StdioSessions,
    shard: Shard | None = None,
) -> Iterator[_Flow]:
    head = stream.peek(64)[:64]
    fmt = sniff_format(head)
    name = report.path
    if fmt in ("pcap", "pcapng"):
        yield from stdio.flush()  # a held stdio file has no partner
        report.format = fmt
        name = report.path
        source: BinaryIO = stream if shard is None else shard.mapped(stream)
        records = read_pcap(source, name) if fmt == "pcap" else read_pcapng(source, name)
        yield from _packets(records, total, report, opts, next_id, prefix, keylog, shard)
        report.bytes = source.tell() if report.path != "-" else 0
        return
    if fmt == "mitm":
        yield from stdio.flush()
        report.format = fmt
        yield from _exchanges(read_flows(stream, name, report.index, next_id), report)
        report.bytes = stream.tell() if report.path != "-" else 0
        return
    if fmt == "unknown" and sniff_stdio(stream.peek(_STDIO_PEEK)) is None:
        # a goose replay whose first line has a byte that is not UTF-8 is still a transcript
        yield from stdio.flush()
        raise InputError(
            f"{name}: not a format agentshark reads (starts with {head[:16]!r}); "
            "give it a pcap or pcapng capture, a HAR 1.2 file, a vcrpy cassette or an MCP stdio "
            "transcript (JSON-RPC lines)"
        )
    data = stream.read()
    report.bytes = len(data)
    transcript = sniff_stdio(data)
    if transcript is not None:
        yield from stdio.document(data, transcript, report)
        return
    yield from stdio.flush()
    kind, doc = classify_document(data, name)
    report.format = kind
    reader = {
        "har": read_har,
        "vcr": read_vcr,
        "wslog": read_message_log,
        "xai": read_xai_cassette,
    }[kind]
    yield from _exchanges(reader(doc, name, report.index, next_id), report)


def _exchanges(items: Iterable[Exchange | Diagnostic], report: SourceReport) -> Iterator[Item]:
    """A reader's exchanges, counted; its diagnostics go to the source's report."""
    for item in items:
        if isinstance(item, Diagnostic):
            report.diagnostics.append(item)
        else:
            report.exchanges += 1
            yield item


class _Analyzers(dict[str, ConnectionAnalyzer]):
    """The analyzers of the open connections by id, each made at its connection's first
    event after the opening: a connection that only opened (a half-open one, a scan) holds
    its TCP state and nothing more. A plain dict lookup for every connection already seen."""

    def __init__(self, make: Callable[[Connection], ConnectionAnalyzer]) -> None:
        super().__init__()
        self._make = make
        self._opened: dict[str, Connection] = {}

    def open(self, conn: Connection) -> None:
        self._opened[conn.id] = conn

    def __missing__(self, cid: str) -> ConnectionAnalyzer:
        analyzer = self[cid] = self._make(self._opened.pop(cid))
        return analyzer

    def close(self, cid: str) -> list[Exchange | ConnectionReport]:
        """The connection is over: its analyzer's last items (made now if it had none)."""
        analyzer = self[cid]
        del self[cid]
        return analyzer.close()


class Pause:
    """Not an item: a live source has no more input for now.

    A packet source may yield :data:`PAUSE` between records; the packet stage
    (``_packets``) and the call stage (``_with_calls``) pass it through in its place among
    the items, suspended with all their state until the consumer asks for more: everything
    the input so far makes final has come before it. The stream readers of files never
    yield it (:mod:`agentshark.pipeline.live` drives the stages this way)."""

    __slots__ = ()


PAUSE = Pause()


class Shard(Protocol):
    """One worker's part of a shared run (implemented by :mod:`agentshark.pipeline.jobs`).

    The stages call it where a shared run differs from a whole one: ids (tokens the parent
    renumbers in capture order), the packets kept, and the order of the last closes."""

    primary: bool  # the first worker: reads the inputs that are not captures, counts packets

    def exchange_id(self) -> str: ...
    def call_id(self) -> str: ...
    def connection_id(self, prefix: str) -> tuple[str, str]: ...
    def begin(self, index: int) -> None: ...
    def is_capture(self, index: int) -> bool: ...
    def mapped(self, stream: io.BufferedReader) -> BinaryIO: ...
    def records(self, reader: Iterable[SourceItem | Pause]) -> Iterator[SourceItem | Pause]: ...
    def decoder(self, decoder: PacketDecoder) -> Callable[[Packet], TcpSegment | None]: ...
    def opened(self, conn: Connection) -> None: ...
    def closing(self, events: list[TcpEvent]) -> Iterator[list[TcpEvent]]: ...
    def finished(self, report: SourceReport, tcp: TcpReassembler) -> None: ...
    def done(self, report: SourceReport) -> None: ...


SourceItem = Packet | Interface | Diagnostic | DecryptionSecrets


@overload
def _packets(
    reader: Iterable[SourceItem],
    total: int,
    report: SourceReport,
    opts: Options,
    next_id: Callable[[], str],
    prefix: str,
    keylog: KeyLog,
    shard: Shard | None = None,
) -> Iterator[_Flow]: ...
@overload
def _packets(
    reader: Iterable[SourceItem | Pause],
    total: int,
    report: SourceReport,
    opts: Options,
    next_id: Callable[[], str],
    prefix: str,
    keylog: KeyLog,
    shard: Shard | None = None,
) -> Iterator[_Flow | Pause]: ...
def _packets(
    reader: Iterable[SourceItem | Pause],
    total: int,
    report: SourceReport,
    opts: Options,
    next_id: Callable[[], str],
    prefix: str,
    keylog: KeyLog,
    shard: Shard | None = None,
) -> Iterator[_Flow | Pause]:
    """The items of one capture's packet records (``reader``: a stream reader, or a live
    feed that may yield :data:`PAUSE`); the report's counters are set at the end.

    With ``shard`` (a worker of :mod:`agentshark.pipeline.jobs`), only the packets of the
    worker's connections are decoded, connections get the shard's ids, and the connections
    still open at the end are closed one by one (the parent orders them)."""
    name = report.path
    quic = QuicSessions(keylog, report.index, name, prefix[:-1] + "q", next_id, progress=opts.calls)
    quic_ready = quic.ready  # exchanges the QUIC connections finished (HTTP/3)
    decoder = PacketDecoder(source_name=name, udp=quic.datagram)
    tcp = TcpReassembler(source_name=name, max_buffered=opts.max_buffered, id_prefix=prefix)
    if shard is not None:
        reader = shard.records(reader)
        decode = shard.decoder(decoder)
        tcp.id_prefix, tcp.id_suffix = shard.connection_id(prefix)
    ready: list[_Flow] = []  # what the last record made final, in order
    outbox = ready.append if opts.calls else None  # open WebSocket sessions' progress
    conns = _Analyzers(
        lambda conn: ConnectionAnalyzer(conn, report.index, next_id, name, keylog, outbox)
    )
    progress = opts.progress
    packets = 0
    if shard is None:
        decode = decoder.decode
    feed = tcp.feed

    def dispatch(events: list[TcpEvent], out: list[_Flow]) -> None:
        """TCP events -> the connection analyzers; finished items appended to ``out``."""
        for ev in events:
            if type(ev) is StreamData:  # the hot path: one per data segment
                found = conns[ev.connection.id].data(ev.direction, ev.data, ev.ts, ev.acked)
                if found:
                    out.extend(found)
            elif isinstance(ev, StreamGap):
                out.extend(conns[ev.connection.id].gap(ev.direction, ev.size, ev.ts))
            elif isinstance(ev, StreamEnded):
                analyzer = conns[ev.connection.id]
                out.extend(analyzer.end(ev.direction, ev.ts, clean=ev.reason == "fin"))
            elif isinstance(ev, ConnectionOpened):
                conns.open(ev.connection)
                report.connections += 1
                if shard is not None:
                    shard.opened(ev.connection)
            elif isinstance(ev, ConnectionClosed):
                out.extend(conns.close(ev.connection.id))

    def drain(out: list[_Flow]) -> Iterator[_Flow]:
        for item in out:
            if type(item) is Exchange:
                report.exchanges += 1
            yield item
        out.clear()

    for item in reader:
        if type(item) is Packet:
            packets += 1
            seg = decode(item)
            if seg is not None:
                events = feed(seg)
                if events:
                    ev = events[0]
                    if len(events) == 1 and type(ev) is StreamData:  # the hot path
                        found = conns[ev.connection.id].data(ev.direction, ev.data, ev.ts, ev.acked)
                        if found:
                            ready.extend(found)
                    else:
                        dispatch(events, ready)
                    if ready:
                        yield from drain(ready)
            elif quic_ready:
                ready.extend(quic_ready)
                quic_ready.clear()
                yield from drain(ready)
            if progress is not None and not packets & 0x3FFF:
                progress(item.offset, total)
        elif isinstance(item, Diagnostic):
            report.diagnostics.append(item)
        elif isinstance(item, DecryptionSecrets):
            report.secrets_blocks += 1
            where = f"{name} Decryption Secrets Block at offset {item.offset}"
            if item.secrets_type == TLSK:
                report.diagnostics.extend(keylog.add_text(item.data, where))
            else:
                report.diagnostics.append(
                    Diagnostic(
                        code="pcapng.unsupported_secrets",
                        severity="info",
                        location=where,
                        message=f"secrets of type 0x{item.secrets_type:08x} are not TLS key "
                        "log lines (TLSK); ignored",
                    )
                )
        elif isinstance(item, Interface):
            report.interfaces.append(item)
        elif item is PAUSE:
            yield item
    if shard is None:
        dispatch(tcp.close(), ready)
    else:
        for events in shard.closing(tcp.close()):
            dispatch(events, ready)
            yield from drain(ready)
    ready.extend(quic.close())  # what quic_ready holds first
    report.connections += quic.connections
    yield from drain(ready)
    report.diagnostics.extend(decoder.close())
    report.diagnostics.extend(tcp.diagnostics)
    report.packets = packets
    report.not_analyzed = dict(decoder.counts)
    if quic.reclaimed:  # datagrams held as UDP until a connection opened by trial read them
        udp = report.not_analyzed.get("udp", 0) - quic.reclaimed
        report.not_analyzed.pop("udp", None)
        if udp > 0:
            report.not_analyzed["udp"] = udp
    report.stats = dict(tcp.stats)
    report.stats.update(quic.stats)
    if shard is not None:
        shard.finished(report, tcp)
    if progress is not None:
        progress(total, total)
