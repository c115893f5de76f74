"""The ``export`` command group: the report in other tools' formats.

``agentshark export otlp``: the traces as OTLP spans, pushed to a receiver (Phoenix, Jaeger,
Langfuse, a collector) or written as OTLP JSON Lines. Each format is a sub-command with its
own ``_add_*`` and ``_run_*`` functions; :func:`add_export_parser` registers the group and
:func:`run_export` dispatches. Exit status as for the other commands (:mod:`agentshark.cli`);
an endpoint that cannot be reached or refuses the spans is said in one line, status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

_OTLP_EXAMPLES = """examples:
  agentshark export otlp agent.pcap --keylog keys.log --endpoint http://127.0.0.1:6006/v1/traces
  agentshark export otlp agent.pcap --endpoint http://127.0.0.1:4317 --protocol grpc
  agentshark export otlp run.har -o traces.jsonl              # OTLP JSON Lines (Jaeger UI loads it)
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 agentshark export otlp agent.pcap

Without --endpoint and -o, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
(+ /v1/traces) says where; OTEL_EXPORTER_OTLP_(TRACES_)HEADERS and _PROTOCOL are read too.
Needs the otlp extra: pip install 'agentshark[otlp]'.
"""


def add_export_parser(sub: Any) -> None:
    """Register ``export`` and its formats on the top-level sub-parsers."""
    export = sub.add_parser(
        "export",
        help="the report in other tools' formats (OTLP traces, Parquet, DuckDB)",
        description="Write the report in a format other tools read.",
    )
    formats = export.add_subparsers(
        dest="export_format", required=True, metavar="FORMAT", help="the format to write"
    )
    _add_otlp(formats)
    from agentshark.cli_tables import add_table_exports  # it imports agentshark.cli

    add_table_exports(formats)


def _add_otlp(formats: Any) -> None:
    from agentshark.cli_parser import _INPUTS, _size_arg
    from agentshark.output.otlp.names import RENAMES, SEMCONV_VERSION
    from agentshark.pipeline import Options

    cmd = formats.add_parser(
        "otlp",
        help="the traces as OpenTelemetry spans (GenAI semconv), pushed or as JSON Lines",
        description=textwrap.fill(
            "Export the agent traces as OTLP spans (OpenTelemetry GenAI semantic conventions "
            "v1.41.1: invoke_agent, chat, execute_tool, MCP and A2A spans with messages, tool "
            "calls and tokens): push them over OTLP/HTTP (protobuf, gzip) or OTLP/gRPC, or "
            "write the OTLP JSON Lines file format.",
            92,
        ),
        epilog=_OTLP_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument("files", nargs="+", metavar="FILE", help=_INPUTS)
    where = cmd.add_mutually_exclusive_group()
    where.add_argument(
        "--endpoint",
        metavar="URL",
        help="the receiver's full traces URL, e.g. http://127.0.0.1:6006/v1/traces (Phoenix), "
        "http://127.0.0.1:4317 with --protocol grpc",
    )
    where.add_argument(
        "-o", "--output", metavar="FILE", help="write OTLP JSON Lines to FILE instead of sending"
    )
    cmd.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="K=V",
        help="a request header (gRPC metadata) to send, e.g. authorization=Bearer…; repeatable",
    )
    cmd.add_argument(
        "--protocol",
        choices=("http/protobuf", "http/json", "grpc"),
        help="OTLP transport (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)",
    )
    cmd.add_argument(
        "--semconv",
        choices=tuple(RENAMES),
        default=SEMCONV_VERSION,
        help=f"the GenAI semantic conventions the names follow ({SEMCONV_VERSION}, the last "
        "core release, which the viewers pin; genai-dev: the genai repository's newer names)",
    )
    cmd.add_argument(
        "--openinference",
        action="store_true",
        help="also write the OpenInference attributes (openinference.span.kind, llm.*, tool.*)",
    )
    cmd.add_argument(
        "--project",
        metavar="NAME",
        help="the Phoenix project the spans go to (resource attribute openinference.project.name)",
    )
    cmd.add_argument("--keylog", action="append", default=[], metavar="FILE", help="TLS key log")
    cmd.add_argument("--no-redact", action="store_true", help="export credentials as captured")
    cmd.add_argument(
        "--max-body",
        type=_size_arg,
        default=Options().max_body,
        metavar="SIZE",
        help="decoded size limit per body (default 256M)",
    )
    cmd.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    cmd.set_defaults(api=[], format="otlp", events=False)


def run_export(args: argparse.Namespace, census: Any) -> int:
    """Run ``export FORMAT`` (the command line was checked by :func:`agentshark.cli._check`)."""
    if args.export_format == "otlp":
        return _run_otlp(args, census)
    raise AssertionError(args.export_format)  # argparse allows only the registered formats


def _run_otlp(args: argparse.Namespace, census: Any) -> int:
    from agentshark.cli import PROGRESS_MIN_BYTES, UsageError, _Progress, _report_failure
    from agentshark.output.census import plural
    from agentshark.output.otlp import missing

    absent = missing(grpc=args.protocol == "grpc")
    if absent:
        raise UsageError(
            f"export otlp needs the otlp extra: pip install 'agentshark[otlp]' "
            f"(missing: {', '.join(absent)})"
        )
    from agentshark.output.otlp import push

    target = None
    if args.output is None:
        try:
            target = push.resolve(args.endpoint, args.header, args.protocol, os.environ)
        except push.ConfigError as exc:
            raise UsageError(str(exc)) from None
        if target is None:
            raise UsageError(
                "export otlp: say where: --endpoint URL (e.g. http://127.0.0.1:6006/v1/traces), "
                "-o traces.jsonl, or OTEL_EXPORTER_OTLP_ENDPOINT"
            )
        if target.protocol == "grpc" and missing(grpc=True):
            raise UsageError("--protocol grpc needs grpcio: pip install 'agentshark[otlp]'")
    elif args.header:
        raise UsageError("--header goes with --endpoint: -o writes a file, nothing is sent")
    from agentshark.output.otlp.encode import json_line
    from agentshark.output.otlp.export import Indexer, requests
    from agentshark.output.redact import redactor
    from agentshark.pipeline import Options, run
    from agentshark.trace.collect import Analysis

    redact = redactor(not args.no_redact)
    total = sum(Path(f).stat().st_size for f in args.files if f != "-" and Path(f).is_file())
    progress = None
    if not args.no_progress and sys.stderr.isatty() and total >= PROGRESS_MIN_BYTES:
        progress = _Progress(sys.stderr)
    options = Options(max_body=args.max_body, progress=progress, keylogs=args.keylog, calls=True)
    analysis, indexer = Analysis(), Indexer(redact)
    failed = 0
    try:
        for item in analysis.watch(indexer.watch(census.watch(run(args.files, options)))):
            failed += _report_failure(item, redact)
    finally:
        if progress is not None:
            progress.finish()
    analysis.finish()
    spans = 0
    out = Path(args.output).open("wb") if args.output else None  # noqa: SIM115
    try:
        for message in requests(
            analysis,
            indexer.index,
            args.files,
            redact=redact,
            openinference=args.openinference,
            semconv=args.semconv,
            project=args.project,
        ):
            spans += sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
            if out is not None:
                out.write(json_line(message) + b"\n")
            else:
                assert target is not None
                warning = push.send(target, message)
                if warning is not None:
                    print(f"agentshark: {target.url}: {warning}", file=sys.stderr)
    except push.ExportError as exc:
        print(f"agentshark: {redact.text(str(exc))}", file=sys.stderr)
        return 1
    finally:
        if out is not None:
            out.close()
    where = args.output if out is not None else target.url if target is not None else ""
    print(
        f"agentshark: {plural(len(analysis.traces), 'trace')}, {plural(spans, 'span')} "
        f"{'written to' if out is not None else 'sent to'} {redact.url(where)}",
        file=sys.stderr,
    )
    return 1 if failed else 0
