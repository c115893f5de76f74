"""``agentshark calls --follow`` and ``agentshark analyze --follow``: the command line of
:mod:`agentshark.pipeline.follow`, kept out of :mod:`agentshark.cli` but for two hooks.

Text: each call is printed as it finishes, as the one line ``agentshark calls`` prints for
it; with ``analyze``, trace and incident changes as ``~`` lines, and once following ends,
the trace trees ``agentshark analyze`` prints for the finished files. ``--format json``
writes one update per line (:func:`agentshark.output.live.update_json`). Following ends on
Ctrl-C (exit status 130, after the final output and a line saying what was done), or when
no file grew for ``--until`` seconds.

A capture is only as live as its writer: ``tcpdump -w`` buffers its output unless ``-U``, and
libpcap hands packets over in blocks (about a second apart when traffic is light) unless
``--immediate-mode``; with both, a call is printed about 16 ms (median) after its last
packet (``bench/follow.py latency``).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from agentshark.output.census import Census
from agentshark.output.live import LiveTextWriter, update_json
from agentshark.output.redact import redactor
from agentshark.output.report import RenderOptions
from agentshark.output.trace_text import TraceTextWriter
from agentshark.pipeline import SourceReport
from agentshark.pipeline.follow import (
    CallFinished,
    Follower,
    LiveTraces,
    SourceFinished,
    Update,
)

__all__ = ["add_follow_options", "follow"]


def add_follow_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--follow",
        action="store_true",
        help="follow FILE while it is written (a transcript, a capture: tcpdump -U "
        "--immediate-mode -w FILE writes each packet as it comes) and print each call as it "
        "finishes, until Ctrl-C or --until",
    )
    cmd.add_argument(
        "--until",
        type=float,
        metavar="SECONDS",
        help="with --follow: stop once no file grew for SECONDS",
    )


def follow(args: argparse.Namespace, census: Census) -> int:
    """Run ``calls``/``analyze`` with ``--follow``; the exit status."""
    problem = _problem(args)
    if problem:
        print(f"agentshark: {problem}", file=sys.stderr)
        return 2
    render = RenderOptions(redact=not args.no_redact, max_body=args.max_body)
    traces = args.command == "analyze"
    follower = Follower(args.files, keylogs=args.keylog, max_body=args.max_body, traces=traces)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115, PTH123
    view = _View(out, render, args, traces=traces)
    interrupted = False
    try:
        try:
            for update in follower.updates(idle=args.until):
                view.write(update, census)
        except KeyboardInterrupt:
            interrupted = True
            for update in follower.close():
                view.write(update, census)
        view.finish(follower.live, census)
    except BrokenPipeError:
        return 0
    finally:
        if args.output:
            out.close()
    if interrupted:
        print(f"\nagentshark: interrupted: {follower.summary()}", file=sys.stderr)
        return 130
    return 1 if view.failed else 0


def _problem(args: argparse.Namespace) -> str:
    if not args.follow:
        return "--until goes with --follow (it says when following stops)"
    if "-" in args.files:
        return (
            "--follow reads files as they grow; standard input already streams: "
            "`tcpdump -w - | agentshark calls -` (without --follow)"
        )
    if args.until is not None and args.until <= 0:
        return f"--until {args.until}: give a number of seconds above 0"
    return ""


class _View:
    def __init__(
        self, out: TextIO, render: RenderOptions, args: argparse.Namespace, *, traces: bool
    ) -> None:
        self._out = out
        self._render = render
        self._json = args.format == "json"
        self._wide = bool(args.wide) or not out.isatty()
        self._traces = traces
        self._text = LiveTextWriter(out, render, traces=traces, wide=self._wide)
        self.sources: list[SourceReport] = []
        self.failed = 0
        self.apis: tuple[str, ...] = tuple(args.api)

    def _wanted(self, api: str) -> bool:
        """``--api``: a whole family name or its first part; all when none given."""
        return not self.apis or any(api == a or api.startswith(f"{a}.") for a in self.apis)

    def write(self, update: Update, census: Census) -> None:
        if isinstance(update, CallFinished) and not self._wanted(update.call.api):
            census.count(update.call)  # as `calls --api` counts what it does not show
            return
        if isinstance(update, SourceFinished):
            self.sources.append(update.report)
            self.failed += _failure(update.report, self._render)
        if self._json:
            dumped = self._render.redactor.dumps(update_json(update, self._render))
            self._out.write(dumped.decode() + "\n")
        else:
            self._text.write(update, census)
        self._flush()

    def finish(self, live: LiveTraces, census: Census) -> None:
        if self._json:
            return
        if not self._traces:
            self._text.calls.finish(census, self.apis)
        else:
            analysis = live.analysis
            self._out.write("\n")
            writer = TraceTextWriter(self._out, redact=self._render.redact)
            writer.wide = self._wide
            writer.write(
                analysis.traces,
                analysis.incidents,
                analysis.calls,
                self.sources,
                unclaimed=analysis.not_understood(),
                census=census,
            )
        self._flush()

    def _flush(self) -> None:
        self._text.flush()
        self._out.flush()


def _failure(report: SourceReport, render: RenderOptions) -> int:
    """An unreadable input is also said on stderr, as ``agentshark calls`` says it."""
    errors = [d for d in report.diagnostics if d.code.startswith("source.")]
    for d in errors:
        print(f"agentshark: {redactor(render.redact).text(d.message)}", file=sys.stderr)
    return 1 if errors else 0
