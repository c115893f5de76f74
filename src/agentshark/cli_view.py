"""The viewer's commands: ``agentshark report`` (one HTML file) and ``agentshark serve``.

``report FILE... -o report.html`` analyzes the inputs once (as ``analyze --format json``
does) and writes a self-contained page: the viewer and the data inline, no network
(:mod:`agentshark.output.html_report`). ``serve [DIR|FILE...]`` shows the same viewer over
HTTP for a folder of captures (:mod:`agentshark.output.serve`; needs the ``serve`` extra).

Exit status as for the other commands (:mod:`agentshark.cli`): 0 when every input was read,
1 when some could not be (said on stderr; the page still shows the others), 2 for a command
line that cannot run as given.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from pathlib import Path
from typing import Any

from agentshark.pipeline import Options

_REPORT_EXAMPLES = """examples:
  agentshark report examples/agent_chat.pcap -o report.html
  agentshark report agent.pcap --keylog keys.log -o run.html     # HTTPS, keys from SSLKEYLOGFILE
  agentshark report session.har cassette.yaml -o both.html

The page works offline and can be mailed: the data and the viewer are inline. Credentials are
redacted as in every output (--no-redact shows them).
"""
_SERVE_EXAMPLES = """examples:
  agentshark serve captures/                   # http://127.0.0.1:8765/
  agentshark serve a.pcap b.har --port 9000
  agentshark serve captures/ --host 0.0.0.0     # other machines too: say so explicitly
  agentshark serve --live agent.pcap            # while `tcpdump -w agent.pcap` writes it

Opening a capture analyzes it once; the report is kept while the server runs.
"""


def add_commands(sub: Any, command: Any, size_arg: Any) -> None:
    """Register ``report`` and ``serve`` on the subparsers ``sub`` of :mod:`agentshark.cli`
    (``command`` makes a subparser; ``size_arg`` reads ``--max-body``)."""
    report = command(
        sub,
        "report",
        summary="one self-contained HTML file: summary, traces, timelines, messages, incidents",
        description="Analyze captures, HAR files, cassettes and MCP stdio transcripts and write "
        "one HTML file that opens in any browser without network: the summary, each trace as a "
        "tree and a timeline on the wire clock, every call's messages and parts, incidents "
        "with evidence, raw requests and responses (redacted), search and filters.",
        epilog=_REPORT_EXAMPLES,
    )
    report.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="pcap/pcapng captures, HAR 1.2 files, vcrpy cassettes or MCP stdio transcripts "
        "(format detected from the content)",
    )
    report.add_argument("-o", "--output", metavar="FILE", help="the HTML file to write")
    _common_options(report, size_arg)
    report.set_defaults(events=False, api=[], wide=False, format="html")
    serve = command(
        sub,
        "serve",
        summary="a local web UI over a folder of captures (needs the 'serve' extra)",
        description="Serve the viewer of `agentshark report` over HTTP for the captures, HAR "
        "files, cassettes and transcripts of a folder (or the files given): a list with their "
        "summaries; opening one analyzes it once and keeps the report. Key logs found in the "
        "folder are used for every capture. Listens on loopback unless --host says otherwise.",
        epilog=_SERVE_EXAMPLES,
    )
    serve.add_argument(
        "paths", nargs="*", default=["."], metavar="DIR|FILE", help="a folder, or files (.)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (8765; 0: any free port)")
    serve.add_argument(
        "--live",
        action="store_true",
        help="follow the files as they are written (tcpdump -w, a gateway's recording) and "
        "show calls as they finish",
    )
    _common_options(serve, size_arg)


def _common_options(cmd: argparse.ArgumentParser, size_arg: Any) -> None:
    cmd.add_argument(
        "--no-redact",
        action="store_true",
        help="show credentials (Authorization, API keys, cookies) as captured",
    )
    cmd.add_argument(
        "--max-body",
        type=size_arg,
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


def run_report(args: argparse.Namespace) -> int:
    from agentshark.output.html_report import write_html
    from agentshark.output.viewer_run import build

    if not args.output:
        print(
            "agentshark: report writes one HTML file: give it with -o, e.g. -o report.html",
            file=sys.stderr,
        )
        return 2
    if "-" in args.files:
        print("agentshark: report reads files, not standard input (-)", file=sys.stderr)
        return 2
    built = build(
        args.files, keylogs=args.keylog, max_body=args.max_body, redact=not args.no_redact
    )
    for message in built.failures:
        print(f"agentshark: {message}", file=sys.stderr)
    title = "agentshark · " + ", ".join(Path(f).name for f in args.files)
    with Path(args.output).open("wb") as out:
        write_html(built.data, out, title=title)
    return 1 if built.failures else 0


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace) -> int:
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        print(
            "agentshark: serve needs Starlette and uvicorn: pip install 'agentshark[serve]'",
            file=sys.stderr,
        )
        return 2
    from agentshark.output.serve import Library, make_app

    missing = [p for p in [*args.paths, *args.keylog] if not Path(p).exists()]
    if missing:
        print(f"agentshark: {missing[0]}: no such file or folder", file=sys.stderr)
        return 2
    if not _loopback(args.host):
        print(
            f"agentshark: WARNING: listening on {args.host}, not loopback: anyone who can "
            "reach this machine can read these captures (redacted, but whole conversations)",
            file=sys.stderr,
        )
    library = Library(
        [Path(p) for p in args.paths],
        keylogs=args.keylog,
        max_body=args.max_body,
        redact=not args.no_redact,
        live=args.live,
    )
    try:
        sock = socket.create_server((args.host, args.port))
    except OSError as exc:
        print(f"agentshark: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"agentshark: serving {library.describe()} at http://{shown}:{port}/ (Ctrl-C stops)",
        flush=True,
    )
    config = uvicorn.Config(
        make_app(library, loopback=_loopback(args.host)), log_level="warning", lifespan="off"
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
