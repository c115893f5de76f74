"""The captures an MCP client may name, and their reports, analyzed once.

**Paths.** Every path a tool is given is taken relative to the server's root (``--root``,
the working directory by default) unless absolute, resolved (``..`` and symbolic links
followed) and refused unless it is inside the root: a client cannot have the server read
``/etc/passwd`` or ``~/.ssh`` however it spells the path.

**Key logs.** A capture is decrypted with the key logs named in the call, those given on
the server's command line (``--keylog``), and the key logs lying in the capture's own
folder (recognized by their content, as ``agentshark serve`` does: a file whose first
non-comment line is an NSS key log line), so ``capture.pcap`` beside ``keylog.txt``
decrypts without saying so.

**The cache.** A report is kept per (inputs, key logs, redaction), each file by its
resolved path, modification time and size: a capture written again is analyzed again, one
asked about twice is not. At most :data:`CACHED` reports are kept (the least recently used
leaves first).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.library.analyze import analyze
from agentshark.library.report import Report
from agentshark.sources.detect import SNIFF_BYTES, sniff_format
from agentshark.sources.stdio import sniff_stdio

__all__ = ["CACHED", "Captures", "PathRefusedError"]

CACHED = 16
MAX_LISTED = 5000  # files looked at by one listing
KEYLOG_HEAD = 4096
_KEYLOG_LABELS = (
    b"CLIENT_RANDOM ",
    b"CLIENT_HANDSHAKE_TRAFFIC_SECRET ",
    b"SERVER_HANDSHAKE_TRAFFIC_SECRET ",
    b"CLIENT_TRAFFIC_SECRET_0 ",
    b"SERVER_TRAFFIC_SECRET_0 ",
    b"EXPORTER_SECRET ",
    b"CLIENT_EARLY_TRAFFIC_SECRET ",
)

FileKey = tuple[str, int, int]  # resolved path, mtime_ns, size


class PathRefusedError(Exception):
    """A path a tool cannot read: outside the root, missing, or not a file (the message
    says which, for the client to read)."""


def is_keylog(head: bytes) -> bool:
    """The first bytes of an NSS key log (comment lines allowed before the first secret)."""
    lines = [ln for ln in head.splitlines() if ln.strip() and not ln.startswith(b"#")]
    return bool(lines) and lines[0].startswith(_KEYLOG_LABELS)


@dataclass(slots=True)
class Captures:
    root: Path
    keylogs: list[str] = field(default_factory=list)  # the server's --keylog
    redact: bool = True
    max_body: int | None = None
    _cache: OrderedDict[tuple[object, ...], Report] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    analyses: int = 0  # reports made (not taken from the cache)

    def resolve(self, path: str, *, what: str = "capture") -> Path:
        """``path`` inside the root, as a file that exists; :class:`PathRefusedError` if not."""
        if not path:
            raise PathRefusedError(f"no {what} path given")
        given = Path(path).expanduser()
        full = (given if given.is_absolute() else self.root / given).resolve()
        if not full.is_relative_to(self.root):
            raise PathRefusedError(
                f"{path}: outside the server's root {self.root} (this server reads only "
                "files under its --root)"
            )
        if not full.exists():
            raise PathRefusedError(f"{path}: no such file under {self.root}")
        if not full.is_file():
            raise PathRefusedError(
                f"{path}: not a file (give a capture file; list_captures lists them)"
            )
        return full

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def report(self, paths: Sequence[str], keylogs: Sequence[str] = ()) -> Report:
        """The report of ``paths`` (with the key logs said above), from the cache when
        none of the files changed."""
        if isinstance(paths, str):
            paths = [paths]
        if not paths:
            raise PathRefusedError("no capture path given")
        files = [self.resolve(p) for p in paths]
        logs = [self.resolve(k, what="key log") for k in [*keylogs, *self.keylogs]]
        for f in files:
            logs += [k for k in self.sibling_keylogs(f.parent) if k not in logs]
        key = (tuple(_file_key(f) for f in files), tuple(_file_key(k) for k in logs), self.redact)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
            limit = DEFAULT_DECODE_LIMIT if self.max_body is None else self.max_body
            report = analyze(files, keylogs=logs, redact=self.redact, max_body=limit)
            self.analyses += 1
            self._cache[key] = report
            while len(self._cache) > CACHED:
                self._cache.popitem(last=False)
            return report

    def sibling_keylogs(self, folder: Path) -> list[Path]:
        """The key logs lying in ``folder`` itself (not below it), by name order."""
        found: list[Path] = []
        for path in sorted(folder.iterdir())[:MAX_LISTED]:
            if path.name.startswith(".") or not path.is_file():
                continue
            if is_keylog(_head(path)):
                found.append(path)
        return found

    def listing(self, folder: str) -> list[dict[str, object]]:
        """The captures, HAR files, cassettes, transcripts and key logs under ``folder``
        (a folder inside the root), hidden entries left out, sorted by path."""
        base = (self.root / folder).resolve() if folder else self.root
        if not base.is_relative_to(self.root):
            raise PathRefusedError(f"{folder}: outside the server's root {self.root}")
        if not base.is_dir():
            raise PathRefusedError(f"{folder}: no such folder under {self.root}")
        out: list[dict[str, object]] = []
        for path in sorted(_files(base))[:MAX_LISTED]:
            kind = input_kind(_head(path))
            if kind is not None:
                out.append({"path": self.relative(path), "format": kind, "bytes": _size(path)})
        return out


def input_kind(head: bytes) -> str | None:
    """What a file is from its first bytes, for the listing: ``pcap``, ``pcapng``, ``har``,
    ``vcr``, ``transcript`` (MCP stdio), ``keylog``; None for anything else (source code,
    notes, other JSON). A guess from the head only: the analysis decides from the whole
    content (a HAR file whose head has no ``"log"`` key is not listed, but is read)."""
    kind = sniff_format(head)
    if kind in ("pcap", "pcapng"):
        return kind
    if kind not in ("json", "text"):
        return None
    if is_keylog(head):
        return "keylog"
    if sniff_stdio(head) is not None:
        return "transcript"
    if kind == "json" and b'"log"' in head and b'"entries"' in head:
        return "har"
    if b"interactions" in head and (b"request" in head or kind == "text"):
        return "vcr"
    return None


def _file_key(path: Path) -> FileKey:
    st = path.stat()
    return (str(path), st.st_mtime_ns, st.st_size)


def _head(path: Path) -> bytes:
    """The first bytes of a file: enough for its format, and for a key log's comment lines
    and first secret."""
    try:
        with path.open("rb") as f:
            return f.read(max(SNIFF_BYTES, KEYLOG_HEAD))
    except OSError:
        return b""


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _files(root: Path) -> list[Path]:
    """Files under ``root``, hidden folders (``.git``, ``.venv``) not entered, at most
    :data:`MAX_LISTED`."""
    out: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out += [Path(folder, n) for n in sorted(names) if not n.startswith(".")]
        if len(out) >= MAX_LISTED:
            break
    return out[:MAX_LISTED]
