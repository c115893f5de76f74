"""``agentshark mcp-tap -o transcript.jsonl -- CMD ARGS...``: an MCP stdio server, recorded.

Put in front of a server's command where an MCP client starts it (Claude Desktop, Cursor,
goose configs): the server runs as a child, the client's writes go to its stdin, its
stdout and stderr come back, all byte for byte as they arrive (binary, unbuffered, no line
assumptions), and each line of each direction is also recorded in the merged transcript
layout that ``agentshark calls``/``analyze`` read (:mod:`agentshark.sources.stdio_record`),
each record flushed at once, so ``agentshark calls --follow transcript.jsonl`` shows the
calls while they happen.

Exit status: the child's; 128+N when a signal N ended it. SIGINT, SIGTERM and SIGHUP sent to
agentshark are forwarded to the child (which runs in a process group of its own, so that a
Ctrl-C in a terminal reaches it once); agentshark then waits for it to exit. A command that
cannot start is one line on stderr and status 127 (not found) or 126 (not executable), as a
shell says it; a transcript that cannot be written is status 2, before the child starts.

The transcript keeps the raw bytes (credentials included: it is evidence, as a capture is);
``--redact`` writes each line through agentshark's redaction instead (not byte-exact then).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import IO, Any, BinaryIO

import orjson

from agentshark.output.redact import Redactor
from agentshark.sources.stdio_record import Direction, TranscriptRecorder

__all__ = ["add_tap_parser", "run_tap"]

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_CHUNK = 1 << 16

_EXAMPLES = """examples:
  agentshark mcp-tap -o time.jsonl -- uvx mcp-server-time
  agentshark mcp-tap -o everything.jsonl --stderr -- npx -y @modelcontextprotocol/server-everything
  agentshark calls --follow time.jsonl         # in another terminal, while the client runs

In an MCP client's config, put agentshark mcp-tap in front of the server's command, e.g.
Claude Desktop / Cursor (mcpServers):
  "time": {"command": "agentshark",
           "args": ["mcp-tap", "-o", "/tmp/time.jsonl", "--", "uvx", "mcp-server-time"]}

The transcript keeps the raw bytes, credentials included (it is evidence, like a capture):
keep it private, or record with --redact.
"""


def add_tap_parser(sub: Any, command: Any) -> None:
    """Register ``mcp-tap`` (``command`` makes a subparser)."""
    cmd = command(
        sub,
        "mcp-tap",
        summary="run an MCP stdio server, passing its pipes through and recording them",
        description="Run CMD as a child, pass standard input, output and error through byte "
        "for byte, and write each line of each direction, with its time, to a transcript "
        "that `agentshark calls` and `analyze` read (also while it is written: --follow). "
        "The exit status is the child's (128+N when signal N ended it); SIGINT, SIGTERM and "
        "SIGHUP are forwarded to it. The transcript keeps the raw bytes, credentials "
        "included, unless --redact.",
        epilog=_EXAMPLES,
    )
    cmd.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the transcript to write"
    )
    cmd.add_argument(
        "--stderr",
        action="store_true",
        help="record the server's standard error too (its log lines; passed through always)",
    )
    cmd.add_argument(
        "--redact",
        action="store_true",
        help="write each line through agentshark's redaction (credentials by name and shape); "
        "the transcript is then no longer byte-exact",
    )
    cmd.add_argument(
        "server", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the server to run"
    )
    cmd.set_defaults(run=run_tap)


def _redaction() -> Any:
    redactor = Redactor()

    def redact(text: str) -> str:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return redactor.text(text)
        return redactor.dumps(value).decode()

    return redact


class _Tap:
    """The child, its pumps, and the transcript they share."""

    def __init__(self, proc: subprocess.Popen[bytes], out: BinaryIO, recorder: TranscriptRecorder):
        self.proc = proc
        self._out = out
        self._recorder = recorder
        self._lock = threading.Lock()
        self._closed = False

    def record(self, direction: Direction, data: bytes | None) -> None:
        """Record ``data`` read from ``direction`` (None: its pipe closed), unless the
        transcript was closed (the child exited while the client still writes)."""
        with self._lock:
            if self._closed:
                return
            t = time.time()
            rec = self._recorder
            lines = rec.close(direction, t) if data is None else rec.feed(direction, data, t)
            if lines:
                self._out.write(lines)
                self._out.flush()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._out.close()

    def pump(self, source: int, sink: IO[bytes] | int, direction: Direction | None) -> None:
        """Copy ``source`` to ``sink`` as bytes come (recorded when ``direction``); at the
        end of ``source``, close the child's stdin (when it is the sink)."""
        sink_ok = True
        while True:
            try:
                data = os.read(source, _CHUNK)
            except OSError:
                data = b""
            if not data:
                break
            if sink_ok:
                sink_ok = _write(sink, data)
            if direction is not None:
                self.record(direction, data)
        if direction is not None:
            self.record(direction, None)
        if not isinstance(sink, int):
            with contextlib.suppress(OSError):
                sink.close()


def _write(sink: IO[bytes] | int, data: bytes) -> bool:
    """Write all of ``data``; False once the reader is gone (EPIPE)."""
    try:
        if isinstance(sink, int):
            view = memoryview(data)
            while view:
                view = view[os.write(sink, view) :]
        else:
            sink.write(data)
            sink.flush()
    except (BrokenPipeError, OSError):
        return False
    return True


def run_tap(args: argparse.Namespace) -> int:
    """Run ``agentshark mcp-tap``; the child's exit status."""
    server = args.server[1:] if args.server[:1] == ["--"] else args.server
    if not server:
        print("agentshark: mcp-tap: give the server's command after --", file=sys.stderr)
        return 2
    try:
        out = Path(args.output).open("wb")  # noqa: SIM115 - closed below
    except OSError as exc:
        print(f"agentshark: -o {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    recorder = TranscriptRecorder(_redaction() if args.redact else None)
    try:
        proc = subprocess.Popen(
            server,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if args.stderr else None,
            bufsize=0,
            process_group=0,
        )
    except OSError as exc:
        out.close()
        missing = isinstance(exc, FileNotFoundError)
        print(
            f"agentshark: mcp-tap: cannot run {server[0]}: {exc.strerror or exc}", file=sys.stderr
        )
        return 127 if missing else 126
    return _serve(proc, out, recorder)


def _serve(proc: subprocess.Popen[bytes], out: BinaryIO, recorder: TranscriptRecorder) -> int:
    tap = _Tap(proc, out, recorder)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in _FORWARDED}
    assert proc.stdin is not None and proc.stdout is not None
    pumps = [
        threading.Thread(target=tap.pump, args=(proc.stdout.fileno(), 1, "s2c"), daemon=True),
    ]
    if proc.stderr is not None:
        pumps.append(
            threading.Thread(target=tap.pump, args=(proc.stderr.fileno(), 2, "stderr"), daemon=True)
        )
    # The client's side: may block in read(0) after the child exited; a daemon thread.
    threading.Thread(target=tap.pump, args=(0, proc.stdin, "c2s"), daemon=True).start()
    for pump in pumps:
        pump.start()
    try:
        status = proc.wait()
        for pump in pumps:
            pump.join()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        tap.close()
    return 128 - status if status < 0 else status
