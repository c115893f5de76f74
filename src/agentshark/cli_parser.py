"""The command line's arguments: every command, its options, help lines and examples.

:func:`build_parser` is the whole parser; :mod:`agentshark.cli` runs what it parses. The
commands of other modules register themselves here: ``report``/``serve``
(:mod:`agentshark.cli_view`), ``export`` (:mod:`agentshark.cli_export`), ``--follow``
(:mod:`agentshark.cli_follow`), ``proxy``/``ca`` (:mod:`agentshark.cli_proxy`), ``batch``
(:mod:`agentshark.cli_batch`).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from typing import Any

from agentshark import __version__, cli_view
from agentshark.cli_batch import add_batch_parser
from agentshark.cli_capture import add_capture_parser
from agentshark.cli_export import add_export_parser
from agentshark.cli_follow import add_follow_options
from agentshark.cli_mcp import add_mcp_parser
from agentshark.cli_proxy import add_proxy_parser
from agentshark.cli_tap import add_tap_parser
from agentshark.output.screen import COLOR_CHOICES
from agentshark.pipeline import Options
from agentshark.trace.collect import KEEP_CALLS

__all__ = ["INPUTS", "build_parser", "command", "size_arg"]


def _size_arg(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = units.get(t[-1:], 1)
    number = t[:-1] if t[-1:] in units else t
    try:
        size = int(float(number) * mult)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 256M)") from None
    if size <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive size: give the largest decoded body to keep, "
            "like 256M or 1G"
        )
    return size


def count_arg(what: str, least: int = 1) -> Callable[[str], int]:
    """An argparse type for a count of ``what`` (``least`` or more): a one-line error
    otherwise."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = least - 1
        if n < least:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number of {what} ({least} or more)"
            )
        return n

    return parse


_jobs_arg = count_arg("processes")


_INPUTS = (
    "pcap/pcapng captures, HAR 1.2 files, vcrpy cassettes or MCP stdio transcripts "
    "(format detected from the content); '-' reads standard input"
)
_FORMAT_HELP = "text: a table for people (default); json: the report (agentshark.report/1)"
_WIDE_HELP = (
    "never cut a column (columns are cut to fit only when writing to a terminal; piped or "
    "written with -o, nothing is cut)"
)


def _add_input_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("files", nargs="+", metavar="FILE", help=_INPUTS)
    cmd.add_argument("--format", choices=("text", "json"), default="text", help=_FORMAT_HELP)
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
        help="decoded size limit per body, a positive size like 64K, 256M, 1G (default 256M)",
    )
    cmd.add_argument(
        "--keylog",
        action="append",
        default=[],
        metavar="FILE",
        help="TLS key log (SSLKEYLOGFILE format) to decrypt captured TLS; repeatable",
    )
    cmd.add_argument(
        "--proto",
        action="append",
        default=[],
        metavar="FILE",
        help="protobuf schema for gRPC messages: a .proto file or a FileDescriptorSet "
        "(protoc -o, buf build); repeatable",
    )
    cmd.add_argument(
        "--proto-descriptors",
        action="append",
        default=[],
        metavar="FILE",
        help="a FileDescriptorSet for gRPC messages (protoc -o FILE --include_imports, "
        "buf build -o FILE); repeatable. gRPC server reflection in the input is read too",
    )
    cmd.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report to FILE (its directory must exist) instead of standard output",
    )
    cmd.add_argument(
        "-j",
        "--jobs",
        type=_jobs_arg,
        default=None,
        metavar="N",
        help="processes that share each pcap/pcapng capture by connection (default: the "
        "cores available, for inputs of 16 MiB or more; 1: one process); the report is the "
        "same for any N",
    )
    cmd.add_argument(
        "--no-progress",
        action="store_true",
        help="never show a progress bar (it shows on a terminal for inputs of 32 MB or more)",
    )
    cmd.add_argument(
        "--color",
        choices=COLOR_CHOICES,
        default="auto",
        help="colour, tables fitted to the terminal and trees (auto: on a terminal, unless "
        "NO_COLOR is set; FORCE_COLOR forces it); never: the plain text, as piped",
    )


_EXCHANGES_EXAMPLES = """examples:
  agentshark exchanges agent.pcap
  agentshark exchanges agent.pcap --keylog keys.log          # HTTPS, keys from SSLKEYLOGFILE
  agentshark exchanges session.har tests/cassettes/test_agent.yaml
  agentshark exchanges a.pcap --format json --events -o report.json
  tcpdump -i lo -s 0 -U -w - 'tcp port 8000' | agentshark exchanges -
"""
_CALLS_EXAMPLES = """examples:
  agentshark calls agent.pcap --keylog keys.log
  agentshark calls agent.pcap --api mcp --api anthropic      # only these families
  agentshark calls transcript.jsonl                          # MCP over stdio
  agentshark calls agent.pcap --format json -o report.json

The ID column is what `agentshark show FILE --call ID` takes. COMPLETE says whether the
whole call was seen (its stream ended), not whether it succeeded: errors are in OUTPUT.
"""
_ANALYZE_EXAMPLES = """examples:
  agentshark analyze examples/agent_chat.pcap
  agentshark analyze agent.pcap --keylog keys.log --format json -o report.json

Each line of a tree names its call (call7) and span (span 1f0c2b4a9e7d6c35): give them to
`agentshark show FILE --call call7` or `--span 1f0c2b4a9e7d6c35`.
"""
_SHOW_EXAMPLES = """examples:
  agentshark show agent.pcap --keylog keys.log --call call7
  agentshark show agent.pcap --keylog keys.log --span 1f0c2b4a9e7d6c35
  agentshark show agent.pcap --call call7 --format json      # the call as the report has it
"""


def _command(
    sub: Any, name: str, *, summary: str, description: str, epilog: str
) -> argparse.ArgumentParser:
    cmd: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=textwrap.fill(description, 92),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return cmd


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentshark",
        description="See exactly what AI agents say on the wire.",
        epilog="Run `agentshark COMMAND --help` for each command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"agentshark {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ex = _command(
        sub,
        "exchanges",
        summary="list the HTTP exchanges in captures, HAR files and cassettes",
        description="Read pcap/pcapng captures, HAR 1.2 files and vcrpy cassettes (format "
        "detected from content; '-' reads standard input) and report every HTTP exchange.",
        epilog=_EXCHANGES_EXAMPLES,
    )
    _add_input_options(ex)
    ex.add_argument(
        "--events",
        action="store_true",
        help="include body pieces and stream events (SSE, NDJSON...) per exchange",
    )
    ex.add_argument("--wide", action="store_true", help=_WIDE_HELP)
    ex.set_defaults(api=[])
    calls = _command(
        sub,
        "calls",
        summary="list the model calls (OpenAI, Anthropic...) found in the exchanges",
        description="Recognize the API calls in captures, HAR files and cassettes and report "
        "each as a normalized call: messages and parts, tool calls, finish reasons, usage, "
        "errors, completeness. --format json writes the report with its exchanges and calls.",
        epilog=_CALLS_EXAMPLES,
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
    calls.add_argument("--wide", action="store_true", help=_WIDE_HELP)
    add_follow_options(calls)
    calls.set_defaults(events=False)
    analyze = _command(
        sub,
        "analyze",
        summary="agent traces: model calls and tool calls linked into runs, with incidents",
        description="Link the calls of captures, HAR files, cassettes and MCP stdio "
        "transcripts into agent runs (W3C traceparent, previous_response_id, replayed "
        "history, tool call ids, MCP sessions, application ids) and show each as a tree "
        "with the protocol mistakes found. --format json writes the whole report.",
        epilog=_ANALYZE_EXAMPLES,
    )
    _add_input_options(analyze)
    analyze.add_argument(
        "--wide", action="store_true", help="show tool arguments and results at length"
    )
    analyze.add_argument(
        "--openapi",
        action="append",
        default=[],
        metavar="FILE",
        help="an OpenAPI 3 or Swagger 2 document (JSON or YAML) naming the REST tools' "
        "operations by operationId (documents served in the capture are read too); repeatable",
    )
    analyze.add_argument(
        "--keep-calls",
        type=count_arg("calls", least=0),
        default=KEEP_CALLS,
        metavar="N",
        help="calls kept in memory for the traces before the rest go to a temporary database "
        f"(in TMPDIR; the same report, with memory flat in the number of calls; default "
        f"{KEEP_CALLS:,}; 0: every call goes there)",
    )
    add_follow_options(analyze)
    analyze.set_defaults(events=False, api=[])
    show = _command(
        sub,
        "show",
        summary="one call's messages and parts, numbered, and by category",
        description="Show the input and output messages of one call (or of the call a span "
        "stands for), every part with its message and part number, then the parts grouped "
        "by category (system, user, reasoning, planned tool calls, tool results, answer).",
        epilog=_SHOW_EXAMPLES,
    )
    _add_input_options(show)
    which = show.add_mutually_exclusive_group(required=True)
    which.add_argument("--call", metavar="ID", help="a call id from `agentshark calls`")
    which.add_argument("--span", metavar="ID", help="a span id from `agentshark analyze`")
    show.set_defaults(events=False, api=[], wide=False)
    cli_view.add_commands(sub, _command, _size_arg)
    add_export_parser(sub)
    add_mcp_parser(sub, _command, _size_arg)
    add_proxy_parser(sub)
    add_capture_parser(sub, _command, _size_arg)
    add_tap_parser(sub, _command)
    add_batch_parser(sub, _command, _size_arg, count_arg)
    return parser


# the names other modules use
INPUTS = _INPUTS
size_arg = _size_arg
command = _command
