"""The pipeline over inputs that are still being written: bytes in, items out as they become
final. Sans-I/O: :class:`LiveRun` is pushed the bytes each input gained
(:meth:`~LiveRun.push`) and told when an input ends (:meth:`~LiveRun.end`); reading files
is :mod:`agentshark.pipeline.follow`'s job.

It runs the stages of :func:`agentshark.pipeline.run` themselves, not a copy of them: a live
source yields :data:`~agentshark.pipeline.PAUSE` where a file reader would block, the
generators of the stages stay suspended there with all their state (TCP reassembly, open
exchanges, MCP sessions held for a later exchange), and resume with the next bytes. So for
one input the items, their ids and order are those :func:`~agentshark.pipeline.run` gives
for the finished file, however its bytes arrived; for several inputs followed at once, the
ids are given in the order things finish, not file by file.

How each format is followed (the format is decided from content, as ``run`` decides it):

- pcap and pcapng: record by record (:mod:`agentshark.sources.feeds`); a record half written
  is held until it is whole.
- MCP stdio transcripts (merged, goose, one-direction JSON-RPC lines): line by line
  (:mod:`agentshark.pipeline.live_stdio`); a line without its newline is held.
- HAR files and VCR cassettes are single documents, valid only once written whole: the
  document is parsed again when it changed, and only entries past those already reported
  are new (an entry rewritten in place is not reported again). Their writers rewrite them
  (a gateway writes each HAR entry over the closing brackets of the last), so once an input
  is known to be a document its reader hands over its whole new content
  (:meth:`LiveRun.replace`) rather than the bytes appended.
- Key logs: those of ``options.keylogs`` are read whole at the start, as ``run`` reads
  them; one a client still writes is followed line by line (:meth:`LiveRun.follow_keylog`,
  :meth:`LiveRun.push_keys`), its secrets known to the TLS sessions pushed after them.
- mitmproxy flow files are read whole when they end (as ``run`` reads them).
- Input whose format is not known when it ends (too short to tell, or not a format
  agentshark reads) is analyzed whole then, by ``run``'s own code: same items, same errors.
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from agentshark.errors import Diagnostic, InputError
from agentshark.model import Exchange
from agentshark.pipeline import (
    PAUSE,
    Item,
    Options,
    Pause,
    SourceItem,
    SourceReport,
    _analyze,
    _Flow,
    _items,
    _packets,
    _with_calls,
)
from agentshark.pipeline.live_stdio import StdioFollow, sniff_lines
from agentshark.pipeline.stdio import StdioSessions
from agentshark.sources.detect import classify_document
from agentshark.sources.feeds import PcapFeed, PcapngFeed
from agentshark.sources.har import read_har
from agentshark.sources.keylog import empty_keylog, is_capture, load_keylog, not_a_keylog
from agentshark.sources.mitm import is_flow_file
from agentshark.sources.pcap import MAGICS
from agentshark.sources.pcapng import SHB_MAGIC
from agentshark.sources.vcr import read_vcr
from agentshark.sources.xai_cassette import read_xai_cassette
from agentshark.tls.keylog import KeyLog

__all__ = ["LiveRun"]

_SNIFF_LIMIT = 1 << 16  # bytes of text after which a source that is no transcript is a document
_T = TypeVar("_T")


def until_pause(items: Iterator[_T | Pause]) -> list[_T]:
    """The items a live chain has ready: up to its next :data:`PAUSE` (or its end)."""
    out: list[_T] = []
    for item in items:
        if item is PAUSE:
            break
        out.append(item)  # type: ignore[arg-type]  # narrowed: not PAUSE
    return out


class _Capture:
    """A pcap or pcapng source: records pushed, the packet stage of ``run`` pulled."""

    def __init__(
        self,
        report: SourceReport,
        opts: Options,
        next_id: Callable[[], str],
        prefix: str,
        keylog: KeyLog,
    ) -> None:
        name = report.path
        self.feed = PcapFeed(name) if report.format == "pcap" else PcapngFeed(name)
        self._pending: deque[SourceItem] = deque()
        self._closed = False
        self._items = _packets(self._records(), 0, report, opts, next_id, prefix, keylog)
        self._report = report

    def _records(self) -> Iterator[SourceItem | Pause]:
        while True:
            while self._pending:
                yield self._pending.popleft()
            if self._closed:
                return
            yield PAUSE

    def push(self, data: bytes) -> list[_Flow]:
        self._pending.extend(self.feed.feed(data))
        return until_pause(self._items)

    def end(self) -> list[_Flow]:
        self._pending.extend(self.feed.close())
        self._closed = True
        return until_pause(self._items)


class _Document:
    """A HAR file or VCR cassette: parsed again whenever it changed. An entry is final once
    a later entry follows it (a YAML cassette cut in its last interaction still parses) or
    the input ended; in a JSON document (a HAR file, a JSON cassette: its text starts with
    ``{``) every entry is final as soon as it parses, since a JSON text cut anywhere does
    not. The document's diagnostics are those of its last reading, at the end."""

    def __init__(self, report: SourceReport, next_id: Callable[[], str]) -> None:
        self._report = report
        self._next_id = next_id
        self._data = b""
        self._seen = 0  # entries already reported
        self._error: InputError | None = None

    def push(self, data: bytes) -> list[Item]:
        self._data += data
        return self._parse(final=False) if data else []

    def replace(self, data: bytes) -> list[Item]:
        """The document's whole content now (it was rewritten)."""
        self._data = data
        return self._parse(final=False)

    def _parse(self, *, final: bool) -> list[Item]:
        report = self._report
        try:
            kind, doc = classify_document(self._data, report.path)
        except InputError as exc:  # half written, most likely: said if it stays so
            self._error = exc
            return []
        self._error = None
        reader = {"har": read_har, "xai": read_xai_cassette}.get(kind, read_vcr)
        found: list[Exchange] = []
        diagnostics: list[Diagnostic] = []
        whole = final or self._data[:64].lstrip()[:1] == b"{"
        for item in reader(
            doc if whole else _without_last(kind, doc), report.path, report.index, lambda: "?"
        ):
            if isinstance(item, Diagnostic):
                diagnostics.append(item)
            else:
                found.append(item)
        ready = found[self._seen :]
        for exchange in ready:
            exchange.id = self._next_id()
        self._seen += len(ready)
        report.exchanges += len(ready)
        if final:
            report.format = kind
            report.bytes = len(self._data)
            report.diagnostics.extend(diagnostics)
        return list(ready)

    def end(self) -> list[Item]:
        out = self._parse(final=True)
        if self._error is not None:
            self._report.diagnostics.append(
                Diagnostic(
                    code="source.unsupported",
                    severity="error",
                    location=self._report.path,
                    message=str(self._error),
                )
            )
        return out


def _without_last(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` without its last entry (HAR ``log.entries``, VCR ``interactions``), which
    may still be being written; no entry when the document has no such list."""
    if kind == "har":
        log = doc.get("log")
        entries = log.get("entries") if isinstance(log, dict) else None
        if isinstance(log, dict) and isinstance(entries, list):
            return {**doc, "log": {**log, "entries": entries[:-1]}}
        return {**doc, "log": {**(log if isinstance(log, dict) else {}), "entries": []}}
    items = doc.get("interactions")
    return {**doc, "interactions": items[:-1] if isinstance(items, list) else []}


class _KeyFollow:
    """An SSLKEYLOGFILE a client is still writing: whole lines are added to the key log as
    they come, so that TLS sessions opened while following can be decrypted."""

    def __init__(self, report: SourceReport, keylog: KeyLog) -> None:
        self.report = report
        self._keylog = keylog
        self._held = b""
        self._line = 1  # number of the next line
        self._checked = False
        self._refused = False

    def push(self, data: bytes) -> None:
        if self._refused:
            return
        buf = self._held + data
        if not self._checked and len(buf) >= 4:
            self._checked = True
            if is_capture(buf):
                self._refused = True
                self.report.diagnostics.append(not_a_keylog(self.report.path))
                return
        end = buf.rfind(b"\n") + 1
        self._held = buf[end:]
        if end:
            self._add(buf[:end])

    def end(self) -> SourceReport:
        held, self._held = self._held, b""
        if held and not self._refused:  # a last line without its newline
            self._add(held)
        path = self.report.path
        if not self._refused and not self._keylog.lines_from(path):
            self.report.diagnostics.append(empty_keylog(path))
        self.report.key_secrets = len(self._keylog)
        return self.report

    def _add(self, text: bytes) -> None:
        path = self.report.path
        self.report.diagnostics.extend(self._keylog.add_text(text, path, self._line))
        self._line += len(text.splitlines())


Source = _Capture | _Document | StdioFollow


class LiveRun:
    """The live pipeline over ``paths`` (their indexes name them in :meth:`push`).

    Items come out of :meth:`push` and :meth:`end` in pipeline order; each input's
    :class:`SourceReport` comes when it ends, and :meth:`close` ends those still open."""

    def __init__(self, paths: Sequence[str], options: Options | None = None) -> None:
        self.paths = list(paths)
        self.options = opts = options or Options(calls=True)
        self.reports = [
            SourceReport(index=i, path=p, format="unknown") for i, p in enumerate(paths)
        ]
        self._sources: list[Source | None] = [None] * len(paths)
        self._head = [b""] * len(paths)  # bytes held until the format is known
        self._ended = [False] * len(paths)
        self._bytes = [0] * len(paths)  # pushed so far, per input
        self._counter = 0
        self.keylog = KeyLog()
        self._inbox: deque[_Flow] = deque()
        self._keys: list[_KeyFollow] = []
        self._closed = False
        chain = self._inbox_items()
        self._chain: Iterator[Item | Pause] = (
            _with_calls(chain, opts) if opts.calls else _items(chain)
        )
        for index, path in enumerate(opts.keylogs):
            report = SourceReport(index=len(paths) + index, path=path, format="keylog")
            report.diagnostics.extend(load_keylog(path, self.keylog))
            report.key_secrets = len(self.keylog)
            self._inbox.append(report)
        self._stdio = StdioSessions(self._next_id, "" if len(paths) == 1 else "s.")

    def _next_id(self) -> str:
        self._counter += 1
        return f"e{self._counter}"

    def _inbox_items(self) -> Iterator[_Flow | Pause]:
        while True:
            while self._inbox:
                yield self._inbox.popleft()
            if self._closed:
                return
            yield PAUSE

    def start(self) -> list[Item]:
        """The reports of ``options.keylogs`` (read whole, at the start)."""
        return until_pause(self._chain)

    def follow_keylog(self, path: str) -> int:
        """A key log to read as it grows (:meth:`push_keys`); its handle."""
        index = len(self.paths) + len(self.options.keylogs) + len(self._keys)
        self._keys.append(
            _KeyFollow(SourceReport(index=index, path=path, format="keylog"), self.keylog)
        )
        return len(self._keys) - 1

    def keylog_unreadable(self, handle: int, why: str) -> None:
        """A followed key log could not be read (``why``)."""
        report = self._keys[handle].report
        report.diagnostics.append(
            Diagnostic(
                code="keylog.unreadable",
                severity="error",
                location=report.path,
                message=f"cannot read the key log {report.path}: {why}",
            )
        )

    def push_keys(self, handle: int, data: bytes) -> None:
        """Lines appended to a followed key log: their secrets serve the TLS sessions
        decrypted after this call (push key logs before the captures that need them)."""
        self._keys[handle].push(data)

    def push(self, index: int, data: bytes) -> list[Item]:
        """``data`` was appended to input ``index``: the items that are final now."""
        if self._ended[index] or not data:
            return []
        self._bytes[index] += len(data)
        source = self._sources[index]
        if source is None:
            self._head[index] += data
            source = self._decide(index, final=False)
            if source is None:
                return []
            data, self._head[index] = self._head[index], b""
        self._inbox.extend(self._guarded(index, source.push, data))
        return until_pause(self._chain)

    def document(self, index: int) -> bool:
        """Whether input ``index`` is a document (HAR, cassette): read whole when it
        changed and handed over with :meth:`replace`."""
        return isinstance(self._sources[index], _Document)

    def replace(self, index: int, data: bytes) -> list[Item]:
        """Document ``index`` now holds ``data`` whole: the items final now."""
        source = self._sources[index]
        if self._ended[index] or not isinstance(source, _Document):
            return []
        self._bytes[index] = len(data)
        self._inbox.extend(self._guarded(index, source.replace, data))
        return until_pause(self._chain)

    def ended(self, index: int) -> bool:
        """Whether input ``index`` ended (:meth:`end`, or a format error)."""
        return self._ended[index]

    def end(self, index: int, diagnostic: Diagnostic | None = None) -> list[Item]:
        """Input ``index`` ends (``diagnostic`` says why, when it is not a clean stop)."""
        if self._ended[index]:
            return []
        self._ended[index] = True
        report = self.reports[index]
        if diagnostic is not None:
            report.diagnostics.append(diagnostic)
        source = self._sources[index]
        if source is None and self._head[index]:
            source = self._decide(index, final=True)
        if source is None and not self._head[index] and diagnostic is not None:
            self._inbox.append(report)  # never readable: the diagnostic says why
        elif source is None:
            self._inbox.extend(self._whole(index))
        else:
            self._inbox.extend(self._guarded(index, lambda _: source.end(), b""))
            report.bytes = self._bytes[index]
            self._inbox.append(report)
        return until_pause(self._chain)

    def close(self) -> list[Item]:
        """Every input ends; the chain's last items (MCP calls still held...)."""
        out: list[Item] = []
        for index in range(len(self.paths)):
            out.extend(self.end(index))
        self._inbox.extend(keys.end() for keys in self._keys)
        self._keys.clear()
        self._closed = True
        out.extend(until_pause(self._chain))
        return out

    def _guarded(
        self, index: int, step: Callable[[bytes], Sequence[_Flow]], data: bytes
    ) -> Sequence[_Flow]:
        """A source step; a format error ends that source with ``run``'s diagnostic."""
        try:
            return step(data)
        except InputError as exc:
            report = self.reports[index]
            report.diagnostics.append(
                Diagnostic(
                    code="source.unsupported",
                    severity="error",
                    location=report.path,
                    message=str(exc),
                )
            )
            self._ended[index] = True
            self._inbox.append(report)
            return []

    def _decide(self, index: int, *, final: bool) -> Source | None:
        """The source for input ``index`` once its first bytes tell its format."""
        head = self._head[index]
        report = self.reports[index]
        prefix = "c" if len(self.paths) == 1 else f"s{index}.c"
        source: Source | None = None
        if len(head) >= 4 and (head[:4] in MAGICS or head[:4] == SHB_MAGIC):
            report.format = "pcap" if head[:4] in MAGICS else "pcapng"
            source = _Capture(report, self.options, self._next_id, prefix, self.keylog)
        elif not final and not is_flow_file(head):
            fmt = sniff_lines(head)
            if fmt is not None:
                source = StdioFollow(report, fmt, self._stdio, self._next_id)
            elif head.count(b"\n") >= 8 or len(head) >= _SNIFF_LIMIT or _parses(head, report):
                source = _Document(report, self._next_id)
        self._sources[index] = source
        return source

    def _whole(self, index: int) -> list[Item]:
        """An input whose format was never decided, analyzed whole by ``run``'s code."""
        report = self.reports[index]
        data = self._head[index]
        self._head[index] = b""
        stream = io.BufferedReader(io.BytesIO(data))
        prefix = "c" if len(self.paths) == 1 else f"s{index}.c"
        out: list[Item] = []
        try:
            out.extend(
                _analyze(
                    stream,  # type: ignore[arg-type]  # a BytesIO is a fine raw stream
                    len(data),
                    report,
                    self.options,
                    self._next_id,
                    prefix,
                    self.keylog,
                    self._stdio,
                )
            )
        except InputError as exc:
            report.diagnostics.append(
                Diagnostic(
                    code="source.unsupported",
                    severity="error",
                    location=report.path,
                    message=str(exc),
                )
            )
        out.extend(self._stdio.flush())
        if not any(item is report for item in out):
            out.append(report)
        return out


def _parses(data: bytes, report: SourceReport) -> bool:
    try:
        classify_document(data, report.path)
    except InputError:
        return False
    return True
