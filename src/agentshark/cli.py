"""The command line: argument parsing and choosing a writer; nothing else."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from agentshark import __version__
from agentshark.apis.model import Call
from agentshark.output.calls_text import CallsTextWriter
from agentshark.output.jsonreport import JsonReportWriter
from agentshark.output.report import RenderOptions
from agentshark.output.show import render_call
from agentshark.output.text import TextWriter
from agentshark.output.trace_text import TraceTextWriter
from agentshark.pipeline import Item, Options, SourceReport, run
from agentshark.trace.collect import Analysis

PROGRESS_MIN_BYTES = 32 << 20


def _size_arg(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = units.get(t[-1:], 1)
    number = t[:-1] if t[-1:] in units else t
    try:
        return int(float(number) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 256M)") from None


def _add_input_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("files", nargs="+", metavar="FILE")
    cmd.add_argument("--format", choices=("text", "json"), default="text")
    cmd.add_argument(
        "--no-redact",
        action="store_true",
        help="show credentials (Authorization, API keys, cookies) as captured",
    )
    cmd.add_argument(
        "--max-body",
        type=_size_arg,
        default=Options().max_body,
        metavar="SIZE",
        help="decoded size limit per body (default 256M)",
    )
    cmd.add_argument(
        "--keylog",
        action="append",
        default=[],
        metavar="FILE",
        help="TLS key log (SSLKEYLOGFILE format) to decrypt captured TLS; repeatable",
    )
    cmd.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    cmd.add_argument("--no-progress", action="store_true", help="never show a progress bar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentshark",
        description="See exactly what AI agents say on the wire.",
    )
    parser.add_argument("--version", action="version", version=f"agentshark {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ex = sub.add_parser(
        "exchanges",
        help="list the HTTP exchanges in captures, HAR files and cassettes",
        description="Read pcap/pcapng captures, HAR 1.2 files and vcrpy cassettes (format "
        "detected from content; '-' reads standard input) and report every HTTP exchange.",
    )
    _add_input_options(ex)
    ex.add_argument(
        "--events",
        action="store_true",
        help="include body pieces and stream events (SSE, NDJSON...) per exchange",
    )
    calls = sub.add_parser(
        "calls",
        help="list the model calls (OpenAI, Anthropic...) found in the exchanges",
        description="Recognize the API calls in captures, HAR files and cassettes and report "
        "each as a normalized call: messages and parts, tool calls, finish reasons, usage, "
        "errors, completeness. --format json writes the report with its exchanges and calls.",
    )
    _add_input_options(calls)
    calls.add_argument(
        "--api",
        action="append",
        default=[],
        metavar="NAME",
        help="only calls of this API family: a whole name (openai.chat, mcp, a2a) or its "
        "first part (openai, anthropic); repeatable",
    )
    calls.set_defaults(events=False)
    analyze = sub.add_parser(
        "analyze",
        help="agent traces: model calls and tool calls linked into runs, with incidents",
        description="Link the calls of captures, HAR files, cassettes and MCP stdio "
        "transcripts into agent runs (W3C traceparent, previous_response_id, replayed "
        "history, tool call ids, MCP sessions, application ids) and show each as a tree "
        "with the protocol mistakes found. --format json writes the whole report.",
    )
    _add_input_options(analyze)
    analyze.set_defaults(events=False, api=[])
    show = sub.add_parser(
        "show",
        help="one call's messages and parts, numbered, and by category",
        description="Show the input and output messages of one call (or of the call a span "
        "stands for), every part with its message and part number, then the parts grouped "
        "by category (system, user, reasoning, planned tool calls, tool results, answer).",
    )
    _add_input_options(show)
    which = show.add_mutually_exclusive_group(required=True)
    which.add_argument("--call", metavar="ID", help="a call id from `agentshark calls`")
    which.add_argument("--span", metavar="ID", help="a span id from `agentshark analyze`")
    show.set_defaults(events=False, api=[])
    return parser


class _Progress:
    """A one-line progress bar on stderr, redrawn at most five times a second."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._last = 0.0
        self._start = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last < 0.2 and done < total:
            return
        self._last = now
        mb = done / 1e6
        rate = mb / max(now - self._start, 1e-6)
        if total:
            frac = min(done / total, 1.0)
            bar = "#" * int(frac * 30)
            text = (
                f"\r[{bar:<30}] {frac * 100:5.1f}%  {mb:,.0f}/{total / 1e6:,.0f} MB  "
                f"{rate:,.0f} MB/s"
            )
        else:
            text = f"\r{mb:,.0f} MB  {rate:,.0f} MB/s"
        self._stream.write(text)
        self._stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self._stream.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "show":
        return _show(args)
    return _report(args, calls=args.command in ("calls", "analyze"))


def _show(args: argparse.Namespace) -> int:
    options = Options(max_body=args.max_body, keylogs=args.keylog, calls=True)
    failed = 0
    wanted = args.call
    if args.span is not None:
        if "-" in args.files:
            print("agentshark: --span reads the input twice: give files, not -", file=sys.stderr)
            return 2
        analysis = Analysis()
        failed = sum(_report_failure(item) for item in analysis.watch(run(args.files, options)))
        analysis.finish()
        spans = [s for t in analysis.traces for s in t.spans if s.span_id == args.span]
        if not spans:
            print(f"agentshark: no span {args.span} (see `agentshark analyze`)", file=sys.stderr)
            return 2
        wanted = spans[0].call_id
        if wanted is None:
            print(
                f"agentshark: span {args.span} ({spans[0].name}) stands for no observed call "
                "(an agent span, or a tool execution not seen on the wire)",
                file=sys.stderr,
            )
            return 2
    # The whole call (the analysis keeps slim copies): read the input for it.
    call: Call | None = None
    known: list[str] = []
    for item in run(args.files, options):
        if args.span is None:
            failed += _report_failure(item)
        if isinstance(item, Call):
            if item.id == wanted:
                call = item
                break
            known.append(item.id)
    if call is None:
        listed = ", ".join(known[:10]) or "none"
        print(f"agentshark: no call {wanted} in the input (calls: {listed}...)", file=sys.stderr)
        return 2
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115, PTH123
    try:
        render_call(call, out, redact=not args.no_redact)
    except BrokenPipeError:
        return 0
    finally:
        if args.output:
            out.close()
    return 1 if failed else 0


def _report(args: argparse.Namespace, *, calls: bool) -> int:
    render = RenderOptions(redact=not args.no_redact, events=args.events, max_body=args.max_body)
    total = sum(Path(f).stat().st_size for f in args.files if f != "-" and Path(f).is_file())
    progress = None
    if not args.no_progress and sys.stderr.isatty() and total >= PROGRESS_MIN_BYTES:
        progress = _Progress(sys.stderr)
    options = Options(max_body=args.max_body, progress=progress, keylogs=args.keylog, calls=calls)
    wanted = tuple(getattr(args, "api", ()))
    failed = 0
    out_file = Path(args.output).open("wb") if args.output else None  # noqa: SIM115
    analysis = Analysis() if args.command == "analyze" else None
    try:
        items = _selected(run(args.files, options), wanted)
        if analysis is not None:
            items = analysis.watch(items)
        if args.format == "json":
            binary = out_file if out_file is not None else sys.stdout.buffer
            jwriter = JsonReportWriter(binary, render, calls=calls)
            for item in items:
                jwriter.write(item)
                failed += _report_failure(item)
            sections: list[tuple[str, Iterable[Any]]] = []
            if analysis is not None:
                analysis.finish()
                sections = [
                    ("traces", (t.to_json() for t in analysis.traces)),
                    ("incidents", (i.to_json() for i in analysis.incidents)),
                ]
            jwriter.close(sections)
        elif analysis is not None:
            sources: list[SourceReport] = []
            for item in items:
                failed += _report_failure(item)
                if isinstance(item, SourceReport):
                    sources.append(item)
            analysis.finish()
            text = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115, PTH123
            TraceTextWriter(text, redact=render.redact).write(
                analysis.traces,
                analysis.incidents,
                analysis.calls,
                sources,
                unclaimed=analysis.not_understood(),
            )
            text.flush()
        else:
            text = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115, PTH123
            twriter: TextWriter | CallsTextWriter = (
                CallsTextWriter(text, render) if calls else TextWriter(text, render)
            )
            for item in items:
                twriter.write(item)
                failed += _report_failure(item)
            text.flush()
    except BrokenPipeError:
        return 0
    finally:
        if progress is not None:
            progress.finish()
        if out_file is not None:
            out_file.close()
    return 1 if failed else 0


def _selected(items: Iterator[Item], apis: tuple[str, ...]) -> Iterator[Item]:
    """``items`` without the calls of other API families than ``apis`` (all when empty)."""
    if not apis:
        return items
    prefixes = tuple(f"{name}." for name in apis)
    return (
        item
        for item in items
        if not isinstance(item, Call) or item.api in apis or item.api.startswith(prefixes)
    )


def _report_failure(item: object) -> int:
    """Unreadable inputs are also said on stderr, whatever the output format."""
    if not isinstance(item, SourceReport):
        return 0
    errors = [d for d in item.diagnostics if d.code.startswith("source.")]
    for d in errors:
        print(f"agentshark: {d.message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
