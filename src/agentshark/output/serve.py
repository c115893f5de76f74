"""``agentshark serve``: the viewer over HTTP (Starlette), for a folder of captures.

Routes (all GET):

* ``/`` the list of captures; ``/api/captures`` its data: every capture, HAR file, cassette
  and transcript found (with its format and size, and its summary once opened);
* ``/view/{id}`` the viewer for one capture, reading ``/api/c/{id}/index`` and
  ``/api/c/{id}/trace/{i}`` (the two operations of :mod:`agentshark.output.viewer_data`);
* ``/viewer.js``, ``/viewer.css`` the viewer itself, the files the HTML report inlines.

Opening a capture analyzes it once (:func:`agentshark.output.viewer_run.build`, in a worker
thread, one analysis per capture however many requests come) and keeps the projection.

**The live seam.** The viewer reads a :class:`ViewSource`: ``index()`` and ``trace(i)``. Each
index carries ``version`` and ``live``; while ``live`` is true the viewer polls the index every
2 s and reloads what it shows when ``version`` changes, opening again the trace that was open
by its trace id (``viewer.js``, ``poll``). A follower of a growing file plugs in as another
:class:`ViewSource` (re-projecting its report as calls finish and bumping ``version``)
registered in :attr:`Library.sources`: ``serve --live`` does so for every input
(:class:`~agentshark.output.serve_live.LiveSource`, a follower in a worker thread).

Every page is sent with a Content-Security-Policy allowing only this server's own script,
style and data (``'self'``), and, when listening on loopback, requests must name a loopback
host (a DNS-rebinding page on another site cannot read the captures).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentshark.output.html_report import asset, viewer_script
from agentshark.output.viewer_run import build
from agentshark.sources.detect import SNIFF_BYTES, sniff_format

Json = Any
MAX_FILES = 5000  # files looked at under one folder
_KEYLOG_LABELS = (b"CLIENT_RANDOM ", b"CLIENT_HANDSHAKE_TRAFFIC_SECRET ", b"SERVER_HANDSHAKE_")
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {"Content-Security-Policy": _CSP, "X-Content-Type-Options": "nosniff"}


class ViewSource(Protocol):
    """What the viewer reads for one capture (the seam for a live source)."""

    def index(self) -> dict[str, Json]: ...

    def trace(self, i: int) -> dict[str, Json] | None: ...

    def summary(self) -> dict[str, Json] | None:
        """The summary when known without analyzing (None: not analyzed yet)."""
        ...


@dataclass(slots=True)
class FileSource:
    """Input files analyzed once, on first use."""

    files: list[str]
    keylogs: list[str]
    max_body: int
    redact: bool
    _index: dict[str, Json] | None = None
    _traces: list[dict[str, Json]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _load(self) -> dict[str, Json]:
        with self._lock:
            if self._index is None:
                built = build(
                    self.files, keylogs=self.keylogs, max_body=self.max_body, redact=self.redact
                )
                self._traces = built.data.traces
                self._index = {**built.data.index, "version": 1, "live": False}
                if built.failures:
                    self._index["failures"] = built.failures
            return self._index

    def index(self) -> dict[str, Json]:
        return self._load()

    def trace(self, i: int) -> dict[str, Json] | None:
        self._load()
        return self._traces[i] if 0 <= i < len(self._traces) else None

    def summary(self) -> dict[str, Json] | None:
        if self._index is None:
            return None
        s: dict[str, Json] = self._index["summary"]
        return {k: v for k, v in s.items() if isinstance(v, int | None)}


@dataclass(slots=True, kw_only=True)
class Entry:
    id: str
    name: str
    path: Path
    format: str
    bytes: int


class Library:
    """The inputs found under the paths given, and their sources by id."""

    def __init__(
        self,
        paths: Sequence[Path],
        *,
        keylogs: Sequence[str] = (),
        max_body: int,
        redact: bool = True,
        live: bool = False,
    ) -> None:
        self.paths = list(paths)
        found, logs = _scan(self.paths)
        self.keylogs = [*keylogs, *(str(p) for p in logs if str(p) not in keylogs)]
        self.entries = [
            Entry(id=str(n), name=_name(p, self.paths), path=p, format=f, bytes=p.stat().st_size)
            for n, (p, f) in enumerate(found)
        ]
        self.sources: dict[str, ViewSource] = {}
        for e in self.entries:
            if live:  # followed as they grow (agentshark.output.serve_live)
                from agentshark.output.serve_live import LiveSource

                self.sources[e.id] = LiveSource(
                    [str(e.path)], self.keylogs, max_body=max_body, redact=redact
                )
            else:
                self.sources[e.id] = FileSource([str(e.path)], self.keylogs, max_body, redact)

    def describe(self) -> str:
        n = len(self.entries)
        logs = f" with {len(self.keylogs)} key log(s)" if self.keylogs else ""
        return f"{n} input{'' if n == 1 else 's'}{logs}"

    def listing(self) -> dict[str, Json]:
        return {
            "root": ", ".join(str(p) for p in self.paths),
            "keylogs": self.keylogs,
            "captures": [
                {
                    "id": e.id,
                    "name": e.name,
                    "format": e.format,
                    "bytes": e.bytes,
                    "summary": self.sources[e.id].summary(),
                }
                for e in self.entries
            ],
        }


def _scan(paths: Sequence[Path]) -> tuple[list[tuple[Path, str]], list[Path]]:
    """Inputs (with their sniffed format) and key logs: files given are taken as inputs;
    folders are walked (sorted, hidden entries left out, at most :data:`MAX_FILES` files)."""
    found: list[tuple[Path, str]] = []
    logs: list[Path] = []
    for root in paths:
        files = [root] if root.is_file() else sorted(_files(root))
        for path in files[:MAX_FILES]:
            try:
                with path.open("rb") as f:
                    head = f.read(SNIFF_BYTES)
            except OSError:
                continue
            if head.startswith(_KEYLOG_LABELS) or (b"\n" in head and _keylog_text(path)):
                logs.append(path)
                continue
            kind = sniff_format(head)
            if kind != "unknown" or root.is_file():
                found.append((path, kind))
    return found, logs


def _files(root: Path) -> list[Path]:
    """The files under ``root``, hidden folders and files (``.git``, ``.venv``) left out."""
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]


def _keylog_text(path: Path) -> bool:
    """A key log that starts with comment lines (``# SSL/TLS secrets log file``)."""
    with path.open("rb") as f:
        head = f.read(4096)
    lines = [ln for ln in head.splitlines() if ln and not ln.startswith(b"#")]
    return bool(lines) and lines[0].startswith(_KEYLOG_LABELS) and head.startswith(b"#")


def _name(path: Path, roots: Sequence[Path]) -> str:
    for root in roots:
        if root.is_dir() and path.is_relative_to(root):
            return str(path.relative_to(root))
    return path.name


def _json(value: Json, status: int = 200) -> Response:
    return Response(
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS),
        status_code=status,
        media_type="application/json",
        headers=_HEADERS,
    )


def _page(mode: str, api: str | None = None) -> Response:
    data_api = f' data-api="{api}"' if api else ""
    text = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>agentshark</title><link rel="stylesheet" href="/viewer.css"></head>'
        f'<body data-source="{mode}"{data_api}><script src="/viewer.js"></script></body></html>'
    )
    return Response(text, media_type="text/html; charset=utf-8", headers=_HEADERS)


def make_app(library: Library, *, loopback: bool = True) -> Starlette:
    def source(request: Request) -> ViewSource | None:
        return library.sources.get(request.path_params["cid"])

    async def home(request: Request) -> Response:
        return _page("captures")

    async def captures(request: Request) -> Response:
        return _json(library.listing())

    async def view(request: Request) -> Response:
        if source(request) is None:
            return _json({"error": "no such capture"}, 404)
        return _page("http", f"/api/c/{request.path_params['cid']}")

    def index(request: Request) -> Response:  # sync: the first call analyzes (threadpool)
        src = source(request)
        return _json(src.index()) if src else _json({"error": "no such capture"}, 404)

    def trace(request: Request) -> Response:
        src = source(request)
        detail = src.trace(request.path_params["i"]) if src else None
        return _json(detail) if detail is not None else _json({"error": "no such trace"}, 404)

    def static(body: str, media: str) -> Any:

        async def send(request: Request) -> Response:
            return Response(body, media_type=media, headers=_HEADERS)

        return send

    routes = [
        Route("/", home),
        Route("/api/captures", captures),
        Route("/view/{cid}", view),
        Route("/api/c/{cid}/index", index),
        Route("/api/c/{cid}/trace/{i:int}", trace),
        Route("/viewer.js", static(viewer_script(), "text/javascript; charset=utf-8")),
        Route("/viewer.css", static(asset("viewer.css"), "text/css; charset=utf-8")),
    ]
    middleware = []
    if loopback:
        hosts = ["127.0.0.1", "localhost", "[::1]", "::1"]
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=hosts))
    return Starlette(routes=routes, middleware=middleware)
