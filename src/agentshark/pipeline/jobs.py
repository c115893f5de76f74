"""Shared runs: the pipeline's items from N worker processes, the same as from one.

``run(paths, Options(jobs=N))`` starts N workers (``fork``). Each runs the whole pipeline
(:func:`agentshark.pipeline._run` and the call stage) with a :class:`Worker` as its
:class:`~agentshark.pipeline.Shard`:

* every worker memory-maps every capture and decodes only the packets
  :func:`~agentshark.net.shard.packet_owner` gives it (both directions of a connection on one
  worker, UDP and so QUIC on worker 0); worker 0 also reads the inputs that are not captures
  (HAR, VCR, stdio transcripts, mitmproxy flows) whole, and counts what the decoder skips;
* every exchange, call and connection id a worker makes is a token (``\\0<nonce>e1.7\\0``),
  and its creation is an entry of the worker's stream, keyed by where in the input it was
  made: (input, phase, packet number). Items are pickled one by one, the tokens kept apart
  (``persistent_id``);
* the parent merges the workers' streams by key (each worker says how far it has read, so
  the merge never waits for an entry that cannot come), numbers each id as its creation
  comes, as one process would have, unpickles each item with its tokens replaced, and runs
  what spans connections: MCP sessions (:class:`~agentshark.apis.mcp.sessions.McpSessions`)
  and the source reports (the counters summed, the decoder's reports from worker 0).

The trace stage (``analyze``) runs on the merged items, in the parent. Connections still open
at the end of a capture are closed in the order they opened, as in one process; the phase
after them is QUIC's (worker 0). What one process does across all connections of a capture
and N workers do each for theirs: the ``max_connections`` eviction (100,000 open at once)
and the memory of 65,536 closed 4-tuples, so a capture past either limit may differ.
"""

from __future__ import annotations

import gc
import io
import itertools
import mmap
import multiprocessing
import os
import pickle
import re
import secrets
import signal
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.connection import Connection as Pipe
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, BinaryIO, cast

from agentshark.apis.mcp.sessions import McpSessions
from agentshark.apis.model import Call
from agentshark.errors import JobError
from agentshark.net.events import Connection, TcpEvent
from agentshark.net.packet import PacketDecoder
from agentshark.net.segment import TcpSegment
from agentshark.net.shard import EVERYONE, flow_owner, packet_owner
from agentshark.net.tcp import TcpReassembler
from agentshark.pipeline import (
    Item,
    Options,
    Pause,
    SourceItem,
    SourceReport,
    _items,
    _run,
    _with_calls,
)
from agentshark.sources.detect import sniff_format
from agentshark.sources.records import Packet

__all__ = ["Worker", "can_share", "default_jobs", "run"]

Key = tuple[int, int, int]  # (input index, phase, packet number or connection's first packet)
# phases of a capture: its packets, the connections closed at its end, QUIC's end, its report
_PACKETS, _CLOSING, _QUIC, _REPORT = 0, 1, 2, 3
_ID, _ITEM, _DONE = 0, 1, 2  # entry kinds: an id made, an item, a capture's report
Entry = tuple[Key, int, Any]
_FLUSH_PACKETS = 0x1FFF  # a worker says how far it read at least every 8,192 packets
_FLUSH_ENTRIES = 256
_QUEUE_LIMIT = 4096  # entries held for a worker that is ahead of the others
_END: Key = (1 << 62, 0, 0)


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def can_share(paths: Sequence[str]) -> bool:
    """A shared run is possible: ``fork`` exists, no input is standard input, one is a capture."""
    if "fork" not in multiprocessing.get_all_start_methods() or "-" in paths:
        return False
    return any(_is_capture(p) for p in paths)


def _is_capture(path: str) -> bool:
    try:
        p = Path(path)
        if not p.is_file():
            return False
        with p.open("rb") as f:
            return sniff_format(f.read(64)) in ("pcap", "pcapng")
    except OSError:
        return False


# -- the worker's side -------------------------------------------------------------------------


class Worker:
    """One worker's :class:`~agentshark.pipeline.Shard`: its packets, its ids, its entries."""

    def __init__(
        self, index: int, jobs: int, captures: frozenset[int], nonce: str, send: Pipe
    ) -> None:
        self.index = index
        self.jobs = jobs
        self.primary = index == 0
        self._captures = captures
        self._send = send
        self._tag = f"\0{nonce}"
        self._exchanges = itertools.count(1)
        self._calls = itertools.count(1)
        self._out: list[Entry] = []
        self._key: Key = (-1, _PACKETS, 0)
        self._mark: Key = (-1, _PACKETS, 0)
        self._progress: tuple[int, int] | None = None
        self._born: dict[str, int] = {}  # connection id -> the packet that opened it
        self._prefix = ""
        self._map: mmap.mmap | None = None
        self._everyone = False  # the packet being decoded is one every worker decodes
        self._packets = 0
        self._tcp_diagnostics = 0
        self._buffer = io.BytesIO()
        self._pickler = pickle.Pickler(self._buffer, pickle.HIGHEST_PROTOCOL)
        self._pickler.persistent_id = self._token  # type: ignore[method-assign]

    # ids

    def exchange_id(self) -> str:
        token = f"{self._tag}e{self.index}.{next(self._exchanges)}\0"
        self._out.append((self._key, _ID, ("e", token, "")))
        return token

    def call_id(self) -> str:
        token = f"{self._tag}k{self.index}.{next(self._calls)}\0"
        self._out.append((self._key, _ID, ("k", token, "")))
        return token

    def connection_id(self, prefix: str) -> tuple[str, str]:
        self._prefix = prefix
        return f"{self._tag}c{self.index}.", "\0"

    def opened(self, conn: Connection) -> None:
        self._born[conn.id] = self._key[2]
        self._out.append((self._key, _ID, ("c", conn.id, self._prefix)))

    # inputs

    def begin(self, index: int) -> None:
        self._key = self._mark = (index, _PACKETS, 0)
        self._flush()

    def is_capture(self, index: int) -> bool:
        return index in self._captures

    def mapped(self, stream: io.BufferedReader) -> BinaryIO:
        size = os.fstat(stream.fileno()).st_size
        if not size:
            return stream
        self._map = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        return cast(BinaryIO, self._map)  # read(n) and tell(), all the readers call

    def records(self, reader: Iterable[SourceItem | Pause]) -> Iterator[SourceItem | Pause]:
        """The reader's records without the packets of other workers' connections."""
        jobs, me = self.jobs, self.index
        number = 0
        index = self._key[0]
        owner = packet_owner
        for item in reader:
            if type(item) is Packet:
                number = item.number
                if not number & _FLUSH_PACKETS:
                    self._mark = (index, _PACKETS, number)
                    self._progress = (index, item.offset)
                    self._flush()
                o = owner(item.linktype, item.data, jobs)
                if o in (me, EVERYONE):
                    self._everyone = o == EVERYONE
                    self._key = (index, _PACKETS, number)
                    yield item
            else:
                yield item
        self._packets = number

    def decoder(self, decoder: PacketDecoder) -> Callable[[Packet], TcpSegment | None]:
        """Decode with ``decoder``; a packet every worker decodes is decoded by a decoder
        whose counts are thrown away (but on worker 0), and kept if its connection is ours."""
        main = decoder.decode
        other = main if self.primary else PacketDecoder(decoder.source_name, udp=_take).decode
        jobs, me = self.jobs, self.index

        def decode(pkt: Packet) -> TcpSegment | None:
            if not self._everyone:
                return main(pkt)
            seg = other(pkt)
            if seg is None or flow_owner(seg.src, seg.sport, seg.dst, seg.dport, jobs) == me:
                return seg
            return None

        return decode

    def closing(self, events: list[TcpEvent]) -> Iterator[list[TcpEvent]]:
        """The end-of-capture events, a connection at a time, each keyed by where it opened."""
        index = self._key[0]
        group: list[TcpEvent] = []
        current: Connection | None = None
        for ev in events:
            if ev.connection is not current:
                if group:
                    yield group
                current = ev.connection
                group = []
                self._key = (index, _CLOSING, self._born.get(current.id, 0))
            group.append(ev)
        if group:
            yield group
        self._key = (index, _QUIC, 0)

    def finished(self, report: SourceReport, tcp: TcpReassembler) -> None:
        report.packets = self._packets
        self._tcp_diagnostics = len(tcp.diagnostics)

    def done(self, report: SourceReport) -> None:
        index = report.index
        self._key = self._mark = (index, _REPORT, 0)
        self._out.append((self._key, _DONE, self._dump((report, self._tcp_diagnostics))))
        self._tcp_diagnostics = 0
        self._born.clear()
        self._packets = 0
        if self._map is not None:
            self._map.close()
            self._map = None
        self._flush()

    # output

    def item(self, item: object) -> None:
        self._out.append((self._key, _ITEM, self._dump(item)))
        if len(self._out) >= _FLUSH_ENTRIES:
            self._flush()

    def finish(self) -> None:
        self._mark = _END
        self._flush()

    def _dump(self, obj: object) -> bytes:
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        self._pickler.dump(obj)
        self._pickler.clear_memo()
        return buffer.getvalue()

    def _token(self, obj: object) -> str | None:
        """Strings holding an id token are pickled apart, for the parent to rewrite."""
        if type(obj) is str and "\0" in obj:
            return obj
        return None

    def _flush(self) -> None:
        batch = (self._mark, self._progress if self.primary else None, self._out)
        self._send.send_bytes(pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))
        self._out = []
        self._progress = None


def _take(_datagram: object) -> bool:
    return True


def _work(
    paths: Sequence[str],
    opts: Options,
    index: int,
    jobs: int,
    captures: frozenset[int],
    nonce: str,
    send: Pipe,
) -> None:
    """A worker process: its share of the items, as entries on ``send``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers on Ctrl-C
    try:
        worker = Worker(index, jobs, captures, nonce, send)
        items = _run(paths, opts, worker)
        for item in _with_calls(items, opts, worker) if opts.calls else _items(items):
            worker.item(item)
        worker.finish()
    except BaseException as exc:  # noqa: BLE001  # said to the parent, which says it
        where = traceback.extract_tb(exc.__traceback__)[-1:]
        at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
        send.send_bytes(pickle.dumps(("error", f"{type(exc).__name__}: {exc}{at}")))
    finally:
        send.close()


# -- the parent's side ---------------------------------------------------------------------


def run(paths: Sequence[str], opts: Options) -> Iterator[Item]:
    """The items of ``paths``, read by ``opts.jobs`` workers: those of ``pipeline.run``."""
    jobs = opts.jobs
    captures = frozenset(i for i, p in enumerate(paths) if _is_capture(p))
    nonce = secrets.token_hex(4)
    ctx = multiprocessing.get_context("fork")
    worker_opts = Options(
        max_body=opts.max_body,
        max_buffered=opts.max_buffered,
        keylogs=opts.keylogs,
        calls=opts.calls,
        early_calls=opts.early_calls,
    )
    pipes: list[Pipe] = []
    procs = []
    # The heap so far (the imports' objects, mostly) goes to the permanent generation before
    # the fork, as the gc module's documentation advises: the full collections of the
    # workers and of the merge then walk only what each made since, not those objects again
    # and again (at 60 MB of WebSocket capture, 0.3 s of the merge's 1.4). A collection
    # first, so no garbage is frozen; frozen objects are still freed by reference counting.
    gc.collect()
    gc.freeze()
    try:
        for index in range(jobs):
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_work,
                args=(paths, worker_opts, index, jobs, captures, nonce, send),
                name=f"agentshark-worker-{index}",
                daemon=True,
            )
            proc.start()
            send.close()
            pipes.append(receive)
            procs.append(proc)
        merge = _Merge(paths, opts, pipes, procs, nonce)
        yield from merge.items()
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        for proc in procs:
            proc.join()
        for pipe in pipes:
            pipe.close()


class _Merge:
    """The workers' entries in key order, ids numbered, items rebuilt."""

    def __init__(
        self,
        paths: Sequence[str],
        opts: Options,
        pipes: list[Pipe],
        procs: list[Any],
        nonce: str,
    ) -> None:
        self.paths = paths
        self.opts = opts
        self.pipes = pipes
        self.procs = procs
        n = len(pipes)
        self.queues: list[deque[Entry]] = [deque() for _ in range(n)]
        self.marks: list[Key] = [(-2, 0, 0)] * n
        self.ended = [False] * n
        self.names: dict[str, str] = {}  # token -> id
        self.exchanges = itertools.count(1)
        self.calls = itertools.count(1)
        self.connections: dict[str, int] = {}  # per connection id prefix
        self.tokens = re.compile(f"\0{nonce}[eck][0-9]+\\.[0-9]+\0")
        self.reports: list[tuple[SourceReport, int]] = []

    def items(self) -> Iterator[Item]:
        sessions = McpSessions() if self.opts.calls else None
        for item in self._merged():
            if sessions is not None and type(item) is Call and item.api == "mcp":
                yield from sessions.feed(item)
            else:
                yield item
        if sessions is not None:
            yield from sessions.close()

    def _merged(self) -> Iterator[Item]:
        queues, marks, ended = self.queues, self.marks, self.ended
        workers = range(len(queues))
        while True:
            best = -1
            key: Key = _END
            for w in workers:
                q = queues[w]
                if q and (best < 0 or q[0][0] < key):
                    best, key = w, q[0][0]
            behind = [w for w in workers if not queues[w] and not ended[w] and marks[w] <= key]
            if behind:
                self._receive(behind)
                continue
            if best < 0:
                return
            _, kind, payload = queues[best].popleft()
            if kind == _ITEM:
                yield self._load(payload)
            elif kind == _ID:
                self._name(*payload)
            else:
                self.reports.append(self._load(payload))
                if len(self.reports) == len(queues):
                    yield self._report()

    def _receive(self, behind: list[int]) -> None:
        """Read what the workers sent (waiting for one of those ``behind``)."""
        waited = {self.pipes[w] for w in behind}
        queues, ended = self.queues, self.ended
        while True:
            # a worker far ahead waits on its pipe rather than in this process's memory
            pending = {
                self.pipes[w]: w
                for w in range(len(self.pipes))
                if not ended[w] and (w in behind or len(queues[w]) < _QUEUE_LIMIT)
            }
            got = False
            for pipe in wait(list(pending)):
                self._batch(pending[cast(Pipe, pipe)], cast(Pipe, pipe))
                got = got or pipe in waited
            if got:
                return

    def _batch(self, w: int, pipe: Pipe) -> None:
        try:
            data = pipe.recv_bytes()
        except EOFError:
            self.procs[w].join(5)
            raise JobError(
                f"worker {w + 1} of {len(self.pipes)} stopped before the end of the input "
                f"(exit status {self.procs[w].exitcode}: out of memory, or killed?); run "
                "again with --jobs 1"
            ) from None
        batch = pickle.loads(data)  # noqa: S301  # from our own worker, over its pipe
        if batch[0] == "error":
            raise JobError(
                f"worker {w + 1} of {len(self.pipes)} failed on "
                f"{self._where()}: {batch[1]}; run again with --jobs 1, and report the "
                "problem with the capture if you can share it"
            )
        mark, progress, entries = batch
        self.queues[w].extend(entries)
        self.marks[w] = mark
        if mark == _END:
            self.ended[w] = True
        if progress is not None and self.opts.progress is not None:
            index, offset = progress
            self.opts.progress(offset, _size(self.paths[index]))

    def _where(self) -> str:
        index = max(m[0] for m in self.marks)
        return self.paths[index] if 0 <= index < len(self.paths) else "its inputs"

    def _name(self, kind: str, token: str, prefix: str) -> None:
        if kind == "e":
            self.names[token] = f"e{next(self.exchanges)}"
        elif kind == "k":
            self.names[token] = f"call{next(self.calls)}"
        else:
            n = self.connections[prefix] = self.connections.get(prefix, 0) + 1
            self.names[token] = f"{prefix}{n}"

    def _load(self, data: bytes) -> Any:
        unpickler = pickle.Unpickler(io.BytesIO(data))  # noqa: S301  # our own worker's
        unpickler.persistent_load = self._rename  # type: ignore[method-assign]
        # an item's objects all come at once and hold no cycle: no collection in between
        # (a WebSocket session is thousands of messages, a collection every 700 objects)
        gc.disable()
        try:
            return unpickler.load()
        finally:
            gc.enable()

    def _rename(self, text: str) -> str:
        names = self.names
        return self.tokens.sub(lambda m: names[m.group(0)], text)

    def _report(self) -> SourceReport:
        """One capture's report from the workers' (worker 0's first, as they come)."""
        parts, self.reports = self.reports, []  # worker 0's first: ties go to the lowest
        report, _ = parts[0]
        tcp_codes = {d.code for d in report.diagnostics[len(report.diagnostics) - parts[0][1] :]}
        for other, tcp_count in parts[1:]:
            report.exchanges += other.exchanges
            report.connections += other.connections
            for name, value in other.stats.items():
                report.stats[name] = report.stats.get(name, 0) + value
            for d in other.diagnostics[len(other.diagnostics) - tcp_count :] if tcp_count else ():
                if d.code not in tcp_codes:
                    tcp_codes.add(d.code)
                    report.diagnostics.append(d)
        if self.opts.progress is not None:
            size = _size(report.path)
            self.opts.progress(size, size)
        return report


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0
