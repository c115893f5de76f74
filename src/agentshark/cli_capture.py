"""``agentshark capture``: live sniffing, the command line of :mod:`agentshark.pipeline.capture`.

Text: each call is printed as it finishes, as the one line ``agentshark calls`` prints for
it, trace and incident changes as ``~`` lines (the lines of ``analyze --follow``); once the
capture ends, the trace trees ``agentshark analyze`` prints for the file written. ``--format
json`` writes one update per line (:func:`agentshark.output.live.update_json`). The capture
ends on Ctrl-C or SIGTERM (exit status 130, after the final output and a line saying what
was done), after ``--count`` calls or ``--until-idle`` seconds without a packet (status 0,
or 1 when the input could not be read), or when tcpdump exits. A capture that cannot start
(no tcpdump, no permission, no such interface, a filter tcpdump refuses) is one line on
stderr and status 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from agentshark.output.census import Census
from agentshark.output.live import LiveTextWriter, update_json
from agentshark.output.redact import redactor
from agentshark.output.report import RenderOptions
from agentshark.output.trace_text import TraceTextWriter
from agentshark.pipeline import Options, SourceReport
from agentshark.pipeline.capture import LiveCapture
from agentshark.pipeline.follow import SourceFinished, Update
from agentshark.pipeline.keygate import KEY_WAIT
from agentshark.pipeline.tcpdump import CaptureError

__all__ = ["add_capture_parser", "run_capture"]

_EXAMPLES = """examples:
  agentshark capture -i lo --port 8000                       # plain HTTP on loopback
  agentshark capture -i lo --port 443 --keylog keys.log -w run.pcapng
      # and, in another terminal, in either order:  SSLKEYLOGFILE=keys.log python agent.py
  agentshark capture -i any --filter 'host 10.0.0.5' --format json
  agentshark capture -i lo --port 8000 --count 3             # stop after 3 calls

run.pcapng then holds the TLS secrets that were used (a Decryption Secrets Block): `agentshark
analyze run.pcapng` and Wireshark (`tshark -r run.pcapng -Y http2`) decrypt it without the
key log. Capturing needs privileges: root, or `sudo setcap cap_net_raw,cap_net_admin=eip
$(which tcpdump)` once.
"""


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text!r} (1 to 65535)")
    return port


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of calls, 1 or more")
    return int(text)


def add_capture_parser(sub: Any, command: Any, size_arg: Any) -> None:
    """Register ``capture`` (``command`` makes a subparser; ``size_arg`` reads sizes)."""
    cmd = command(
        sub,
        "capture",
        summary="capture live (tcpdump) and show the calls and traces as they happen",
        description="Run tcpdump on an interface and analyze its packets as they come: each "
        "call is printed when it finishes and the traces as they change; TLS is decrypted "
        "with a key log that the client may still be writing. Ctrl-C ends it with the trace "
        "trees of `agentshark analyze` and leaves -w FILE as a pcapng with the secrets used.",
        epilog=_EXAMPLES,
    )
    cmd.add_argument("-i", "--interface", default="lo", help="interface to capture on (lo)")
    cmd.add_argument(
        "--port",
        type=_port,
        action="append",
        default=[],
        metavar="N",
        help="only TCP on port N (either end); repeatable; default: all TCP",
    )
    cmd.add_argument("--filter", metavar="BPF", help="a tcpdump filter expression, and-ed")
    cmd.add_argument(
        "--keylog",
        action="append",
        default=[],
        metavar="FILE",
        help="TLS key log (SSLKEYLOGFILE) to follow as the client writes it; it need not "
        "exist yet; repeatable",
    )
    cmd.add_argument(
        "-w",
        "--write",
        metavar="FILE",
        help="write the packets as a pcapng, with the TLS secrets used embedded",
    )
    cmd.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a line per call and trace change, the trees at the end; json: an "
        "update per line",
    )
    cmd.add_argument(
        "--until-idle", type=_seconds, metavar="S", help="stop after S s without a packet"
    )
    cmd.add_argument(
        "--count",
        type=_count,
        metavar="N",
        help="stop once N calls finished (calls, not packets as for tcpdump -c)",
    )
    cmd.add_argument(
        "--key-wait",
        type=_seconds,
        default=KEY_WAIT,
        metavar="S",
        help=f"seconds a TLS connection waits for its secrets in the key log ({KEY_WAIT:g})",
    )
    cmd.add_argument("--tcpdump", default="tcpdump", metavar="PATH", help="the tcpdump to run")
    cmd.add_argument("--no-redact", action="store_true", help="show credentials as captured")
    cmd.add_argument(
        "--max-body",
        type=size_arg,
        default=Options().max_body,
        metavar="SIZE",
        help="decoded size limit per body (default 256M)",
    )
    cmd.add_argument("--wide", action="store_true", help="tool arguments and results at length")
    cmd.set_defaults(run=run_capture)


def _problem(args: argparse.Namespace) -> str:
    for path in args.keylog:
        if Path(path).is_dir():
            return f"--keylog {path}: a directory (give the file SSLKEYLOGFILE names)"
    if args.write:
        target = Path(args.write)
        if target.is_dir():
            return f"-w {args.write}: is a directory; give a file name"
        if not target.parent.is_dir():
            return f"-w {args.write}: the directory {target.parent} does not exist"
    return ""


def run_capture(args: argparse.Namespace) -> int:
    """Run ``agentshark capture``; the exit status."""
    problem = _problem(args)
    if problem:
        print(f"agentshark: {problem}", file=sys.stderr)
        return 2
    try:
        capture = LiveCapture(
            args.interface,
            ports=args.port,
            bpf=args.filter,
            keylogs=args.keylog,
            write=args.write,
            max_body=args.max_body,
            key_wait=args.key_wait,
            tcpdump=args.tcpdump,
        )
    except (CaptureError, OSError) as exc:
        print(f"agentshark: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    caught: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        caught.append(signum)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    keys = f", following {', '.join(args.keylog)}" if args.keylog else ""
    print(
        f"agentshark: capturing on {args.interface} ({capture.expression}){keys}; Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    census = Census(1)
    view = _View(sys.stdout, args)
    try:
        for update in capture.updates(stop, idle=args.until_idle, count=args.count):
            view.write(update, census)
        view.finish(capture, census)
    except BrokenPipeError:
        capture.close()
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if caught:
        name = signal.Signals(caught[0]).name
        print(f"\nagentshark: stopped by {name}: {capture.summary()}", file=sys.stderr)
        return 130
    print(f"agentshark: {capture.summary()}", file=sys.stderr)
    return 1 if view.failed else 0


class _View:
    """The updates as ``analyze --follow`` prints them; the trees as ``analyze`` does."""

    def __init__(self, out: TextIO, args: argparse.Namespace) -> None:
        self._out = out
        self._render = RenderOptions(redact=not args.no_redact, max_body=args.max_body)
        self._json = args.format == "json"
        self._wide = bool(args.wide)
        self._text = LiveTextWriter(
            out, self._render, traces=True, wide=self._wide or not out.isatty()
        )
        self.sources: list[SourceReport] = []
        self.failed = 0

    def write(self, update: Update, census: Census) -> None:
        if isinstance(update, SourceFinished):
            self.sources.append(update.report)
            errors = [d for d in update.report.diagnostics if d.code.startswith("source.")]
            for d in errors:
                print(
                    f"agentshark: {redactor(self._render.redact).text(d.message)}", file=sys.stderr
                )
            self.failed += bool(errors)
        if self._json:
            dumped = self._render.redactor.dumps(update_json(update, self._render))
            self._out.write(dumped.decode() + "\n")
        else:
            self._text.write(update, census)
            self._text.flush()
        self._out.flush()

    def finish(self, capture: LiveCapture, census: Census) -> None:
        if self._json:
            return
        analysis = capture.live.analysis
        self._out.write("\n")
        writer = TraceTextWriter(self._out, redact=self._render.redact)
        writer.wide = self._wide  # as `agentshark analyze` prints: the same trees
        writer.write(
            analysis.traces,
            analysis.incidents,
            analysis.calls,
            self.sources,
            unclaimed=analysis.not_understood(),
            census=census,
        )
        self._out.flush()
