"""The command line: argument parsing and choosing a writer; nothing else.

Exit status: 0 when every input was read; 1 when some input could not be (said on stderr,
the others still reported); 2 when the command line cannot run as given, said in one line
before any input is read (an ``-o`` path that is a directory or in a missing directory, a
``--keylog`` that is not a readable file, an unknown ``--api``, a ``--max-body`` that is not
a positive size); 130 on Ctrl-C, with a line saying how far the run got. A
:class:`~agentshark.output.census.Census` watches the items on their way to the writer for
that line and for the views' "0 calls" reasons and unparsed families.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from agentshark import cli_mcp, cli_proxy, cli_view
from agentshark.apis.model import Call
from agentshark.apis.registry import known_apis
from agentshark.cli_export import run_export
from agentshark.cli_follow import follow
from agentshark.cli_parser import build_parser as build_parser  # used, and re-exported
from agentshark.errors import InputError, JobError, StoreError
from agentshark.framing.proto_schema import ProtoSchemas, load_schemas
from agentshark.output.calls_text import CallsTextWriter
from agentshark.output.census import Census
from agentshark.output.jsonreport import JsonReportWriter
from agentshark.output.redact import Redactor, redactor
from agentshark.output.report import RenderOptions, call_json
from agentshark.output.screen import Screen, use_color
from agentshark.output.show import render_call
from agentshark.output.text import TextWriter
from agentshark.output.trace_text import TraceTextWriter
from agentshark.pipeline import Item, Options, SourceReport, run
from agentshark.pipeline.jobs import default_jobs
from agentshark.trace.collect import Analysis
from agentshark.trace.heap import KeptHeap
from agentshark.trace.openapi import load_openapi

if TYPE_CHECKING:
    from agentshark.output.term import RichProgress

PROGRESS_MIN_BYTES = 32 << 20


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


class UsageError(Exception):
    """A command line that cannot run as given: said in one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "run", None) is not None:  # commands that run themselves (cli_capture...)
        return int(args.run(args))
    if args.command == "serve":
        return cli_view.run_serve(args)
    if args.command == "mcp-server":
        return cli_mcp.run_mcp_server(args)
    if args.command in cli_proxy.COMMANDS:
        return cli_proxy.run(args)
    if args.command == "export" and args.export_format != "otlp":
        from agentshark.cli_tables import run_table_export  # it imports this module

        return run_table_export(args)
    census = Census(len(args.files))
    try:
        _check(args)
        if args.command == "show":
            return _show(args, census)
        if args.command == "report":
            return cli_view.run_report(args)
        if args.command == "export":
            return run_export(args, census)
        if getattr(args, "follow", False) or getattr(args, "until", None) is not None:
            return follow(args, census)
        return _report(args, census, calls=args.command in ("calls", "analyze"))
    except UsageError as exc:
        print(f"agentshark: {exc}", file=sys.stderr)
        return 2
    except (JobError, StoreError) as exc:
        print(f"agentshark: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        where = args.output or "the output"
        print(f"\nagentshark: interrupted {census.so_far()}; {where} is cut short", file=sys.stderr)
        return 130


def analysis_for(args: argparse.Namespace) -> Analysis:
    """The trace stage, with the ``--openapi`` documents (a file that is not one is a usage
    error). It reads its input once: the calls it keeps are frozen out of the garbage
    collector's way until it finishes (:mod:`agentshark.trace.heap`)."""
    analysis = Analysis(heap=KeptHeap())
    for path in getattr(args, "openapi", []):
        try:
            why = analysis.openapi.add(load_openapi(path), path)
        except (OSError, ValueError) as exc:
            why = str(exc)
        if why is not None:
            raise UsageError(f"--openapi {path}: {why}")
    return analysis


def _check(args: argparse.Namespace) -> None:
    """What can be known wrong before reading any input: the output path, the key logs,
    the API names, the OpenAPI documents."""
    _proto(args)
    if getattr(args, "openapi", None):
        analysis_for(args)
    if args.output:
        _check_output(args.output)
    check_keylogs(args.keylog)
    unknown = [name for name in args.api if not _known_api(name)]
    if unknown:
        known = known_apis()
        prefixes = sorted({k.split(".")[0] for k in known if "." in k})
        raise UsageError(
            f"--api {unknown[0]}: no such API family; known: {', '.join(known)} "
            f"(or a first part: {', '.join(prefixes)})"
        )


def check_keylogs(paths: Sequence[str]) -> None:
    """Each ``--keylog`` is a readable file."""
    for path in paths:
        keylog = Path(path)
        if not keylog.exists():
            raise UsageError(
                f"--keylog {path}: no such file (give the file SSLKEYLOGFILE named when the "
                "client ran)"
            )
        if keylog.is_dir() or not os.access(keylog, os.R_OK):
            what = "a directory" if keylog.is_dir() else "not readable"
            raise UsageError(f"--keylog {path}: {what} (give the key log file itself)")


def _known_api(name: str) -> bool:
    return any(k == name or k.startswith(f"{name}.") for k in known_apis())


def _proto(args: argparse.Namespace) -> ProtoSchemas | None:
    """The --proto and --proto-descriptors schemas, loaded once (a file that is not a schema
    is a usage error)."""
    if not hasattr(args, "_schemas"):
        try:
            args._schemas = load_schemas(
                getattr(args, "proto", []), getattr(args, "proto_descriptors", [])
            )
        except InputError as exc:
            raise UsageError(str(exc)) from None
    schemas: ProtoSchemas | None = args._schemas
    return schemas


def _check_output(output: str) -> None:
    path = Path(output)
    if path.is_dir():
        raise UsageError(
            f"-o {output}: is a directory; give a file name, e.g. -o {path / 'report.json'}"
        )
    parent = path.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise UsageError(
            f"-o {output}: the directory {parent} {what} (create it first: mkdir -p {parent})"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"-o {output}: the file is not writable (choose another -o FILE)")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"-o {output}: cannot create files in {parent} (choose another -o FILE)")


def _show(args: argparse.Namespace, census: Census) -> int:
    options = Options(max_body=args.max_body, keylogs=args.keylog, calls=True, jobs=_jobs(args))
    failed = 0
    wanted = args.call
    if args.span is not None:
        if "-" in args.files:
            print(
                "agentshark: --span reads the input twice: give files, not - "
                "(or show a call by its id: --call ID, from `agentshark calls -`)",
                file=sys.stderr,
            )
            return 2
        analysis = analysis_for(args)
        items = analysis.watch(census.watch(run(args.files, options)))
        failed = sum(_report_failure(item, redactor(not args.no_redact)) for item in items)
        analysis.finish()
        spans = [s for t in analysis.traces for s in t.spans if s.span_id == args.span]
        if not spans:
            print(
                f"agentshark: no span {args.span} in the input (the span ids are printed by "
                f"`agentshark analyze {' '.join(args.files)}`)",
                file=sys.stderr,
            )
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
    reading = census if args.span is None else Census(len(args.files))  # a second reading
    for item in reading.watch(run(args.files, options)):
        if args.span is None:
            failed += _report_failure(item, redactor(not args.no_redact))
        if isinstance(item, Call):
            if item.id == wanted:
                call = item
                break
            known.append(item.id)
    if call is None:
        listed = ", ".join(known[:10]) + ("…" if len(known) > 10 else "")
        found = f"its calls: {listed}" if known else f"it has no calls: {reading.why_no_calls()}"
        print(f"agentshark: no call {wanted} in the input ({found})", file=sys.stderr)
        return 2
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115, PTH123
    try:
        if args.format == "json":
            render = RenderOptions(
                redact=not args.no_redact, max_body=args.max_body, proto=_proto(args)
            )
            out.write(orjson.dumps(call_json(call, render), option=orjson.OPT_INDENT_2).decode())
            out.write("\n")
        else:
            render_call(
                call,
                out,
                redact=not args.no_redact,
                exchange_diagnostics=reading.unfinished.get(call.exchange_id, []),
                screen=_screen(args, out, redactor(not args.no_redact)),
            )
        out.flush()
    except BrokenPipeError:
        return 0
    finally:
        if args.output:
            out.close()
    return 1 if failed else 0


def _report(args: argparse.Namespace, census: Census, *, calls: bool) -> int:
    render = RenderOptions(
        redact=not args.no_redact, events=args.events, max_body=args.max_body, proto=_proto(args)
    )
    total = sum(Path(f).stat().st_size for f in args.files if f != "-" and Path(f).is_file())
    progress = None
    if not args.no_progress and sys.stderr.isatty() and total >= PROGRESS_MIN_BYTES:
        progress = _progress(args.color)
    options = Options(
        max_body=args.max_body,
        progress=progress,
        keylogs=args.keylog,
        calls=calls,
        jobs=_jobs(args),
    )
    wanted = tuple(getattr(args, "api", ()))
    failed = 0
    out_file = Path(args.output).open("wb") if args.output else None  # noqa: SIM115
    analysis = analysis_for(args) if args.command == "analyze" else None
    previous = None
    if analysis is not None:
        analysis.keep, analysis.views = args.keep_calls, args.format != "json"
        previous = _terminate_as_interrupt()
    try:
        items = _selected(census.watch(run(args.files, options)), wanted)
        if analysis is not None:
            items = analysis.watch(items)
        if args.format == "json":
            binary = out_file if out_file is not None else sys.stdout.buffer
            jwriter = JsonReportWriter(binary, render, calls=calls)
            for item in items:
                jwriter.write(item)
                failed += _report_failure(item, redactor(not args.no_redact))
            sections: list[tuple[str, Iterable[Any]]] = []
            if calls:
                sections.append(("not_parsed", census.not_parsed()))
            if analysis is not None:
                analysis.finish()
                sections += [
                    ("traces", analysis.trace_docs()),
                    ("incidents", analysis.incident_docs()),
                ]
                if analysis.lives:  # README, Report: queue_messages
                    sections.append(("queue_messages", (q.to_json() for q in analysis.lives)))
            jwriter.close(sections)
        elif analysis is not None:
            sources: list[SourceReport] = []
            for item in items:
                failed += _report_failure(item, redactor(not args.no_redact))
                if isinstance(item, SourceReport):
                    sources.append(item)
            analysis.finish()
            text = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115, PTH123
            screen = _screen(args, text, render.redactor)
            trace_writer = TraceTextWriter(text, redact=render.redact, screen=screen)
            trace_writer.wide = args.wide
            if analysis.store is not None:
                trace_writer.write_views(
                    analysis.store.views_of(),
                    analysis.store.loose_incidents(),
                    sources,
                    unclaimed=analysis.not_understood(),
                    census=census,
                    calls=analysis.store.calls,
                )
            else:
                trace_writer.write(
                    analysis.traces,
                    analysis.incidents,
                    analysis.calls,
                    sources,
                    unclaimed=analysis.not_understood(),
                    census=census,
                    lives=analysis.lives,
                )
            text.flush()
        else:
            text = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115, PTH123
            screen = _screen(args, text, render.redactor)
            twriter: TextWriter | CallsTextWriter = (
                CallsTextWriter(text, render, screen) if calls else TextWriter(text, render, screen)
            )
            twriter.wide = _wide(args, text)
            for item in items:
                twriter.write(item)
                failed += _report_failure(item, redactor(not args.no_redact))
            twriter.finish(census, wanted)
            text.flush()
    except BrokenPipeError:
        return 0
    finally:
        if progress is not None:
            progress.finish()
        if out_file is not None:
            out_file.close()
        if analysis is not None:
            analysis.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 1 if failed else 0


def _terminate_as_interrupt() -> Any:
    """SIGTERM ends the run as Ctrl-C does, so that the analysis' temporary store is removed
    (a process ended by the default handler leaves it in TMPDIR). Returns the handler it
    replaced, or None outside the main thread (where it cannot be set)."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, interrupt)
    except ValueError:
        return None


JOBS_MIN_BYTES = 16 << 20  # smaller inputs are read faster than worker processes start


def _jobs(args: argparse.Namespace) -> int:
    """``--jobs``, else the cores this process may use for inputs of 16 MiB or more."""
    jobs: int | None = getattr(args, "jobs", None)
    if jobs is not None:
        return jobs
    size = sum(Path(f).stat().st_size for f in args.files if f != "-" and Path(f).is_file())
    return default_jobs() if size >= JOBS_MIN_BYTES else 1


def _screen(args: argparse.Namespace, out: TextIO, redact: Redactor) -> Screen | None:
    """The rich form when ``--color`` (and NO_COLOR, FORCE_COLOR, the terminal) says so;
    None: the plain text."""
    if not use_color(args.color, out, os.environ):
        return None
    from agentshark.output import term  # rich is imported only when it draws

    batch = args.command in ("analyze", "show")  # drawn once the input is read
    return term.RichScreen(term.console(None if out is sys.stdout else out), redact, batch=batch)


def _progress(color: str) -> _Progress | RichProgress:
    """The progress bar on stderr: rich's (with its ETA) when colour is on there."""
    if not use_color(color, sys.stderr, os.environ):
        return _Progress(sys.stderr)
    from agentshark.output import term

    return term.RichProgress(term.console(stderr=True))


def _wide(args: argparse.Namespace, out: TextIO) -> bool:
    """Columns are cut to fit only on a terminal, and not with --wide."""
    return bool(args.wide) or not out.isatty()


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


def _report_failure(item: object, redact: Redactor) -> int:
    """Unreadable inputs are also said on stderr, whatever the output format, through the
    same redaction as the output (a message may quote the input it could not read)."""
    if not isinstance(item, SourceReport):
        return 0
    errors = [d for d in item.diagnostics if d.code.startswith("source.")]
    for d in errors:
        print(f"agentshark: {redact.text(d.message)}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
