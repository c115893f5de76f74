"""``agentshark mcp-server``: the command line of :mod:`agentshark.mcp_server`.

``--transport stdio`` (the default) speaks MCP on standard input and output, as a coding
agent launches it (nothing else is ever written to standard output; the one status line
goes to stderr); ``--transport http`` serves Streamable HTTP at ``http://HOST:PORT/mcp``,
on loopback unless ``--host`` says otherwise. Needs the ``mcp`` extra
(``pip install 'agentshark[mcp]'``); without it, a one-line error naming it, exit 2.

Exit status: 0 when the server stopped (end of input on stdio, Ctrl-C on HTTP); 2 when it
cannot start as given (the SDK missing, a --root that is not a folder, a --keylog outside
it, a port that cannot be listened on).
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import Any

from agentshark.pipeline import Options

__all__ = ["add_mcp_parser", "run_mcp_server"]

_EXAMPLES = """examples:
  agentshark mcp-server                                  # stdio, for Claude Code, Cursor...
  agentshark mcp-server --root ~/captures --keylog ~/captures/keys.log
  agentshark mcp-server --transport http --port 8787     # http://127.0.0.1:8787/mcp

Claude Code:  claude mcp add agentshark -- agentshark mcp-server --root "$PWD"
Cursor (.cursor/mcp.json):
  {"mcpServers": {"agentshark": {"command": "agentshark", "args": ["mcp-server"]}}}

Tools: list_captures, list_traces, show_trace, show_call, list_incidents, search_calls,
diff_runs. They read only files under --root (the working directory by default); key logs
beside a capture are used for it. Credentials are redacted in every answer.
"""


def add_mcp_parser(sub: Any, command: Any, size_arg: Any) -> None:
    """Register ``mcp-server`` on the subparsers ``sub`` of :mod:`agentshark.cli_parser`."""
    cmd = command(
        sub,
        "mcp-server",
        summary="agentshark as an MCP server: coding agents inspect captures (needs 'mcp')",
        description="Serve agentshark's analysis as MCP tools (stdio or Streamable HTTP) so a "
        "coding agent can ask what an agent sent and received: list traces, show a trace "
        "tree, show a call's messages and parts, list incidents, search calls, diff two "
        "runs. Reads only the files under --root; every answer is bounded and redacted.",
        epilog=_EXAMPLES,
    )
    cmd.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (what an editor launches; the default) or http (Streamable HTTP at /mcp)",
    )
    cmd.add_argument("--host", default="127.0.0.1", help="with http: address (127.0.0.1)")
    cmd.add_argument("--port", type=int, default=8787, help="with http: port (8787; 0: any)")
    cmd.add_argument("--root", default=".", metavar="DIR", help="the folder the tools may read (.)")
    cmd.add_argument(
        "--keylog",
        action="append",
        default=[],
        metavar="FILE",
        help="TLS key log used for every capture (besides those beside it); repeatable",
    )
    cmd.add_argument(
        "--no-redact",
        action="store_true",
        help="answer with credentials as captured (Authorization, API keys, cookies)",
    )
    cmd.add_argument(
        "--max-body",
        type=size_arg,
        default=Options().max_body,
        metavar="SIZE",
        help="decoded size limit per body, like 64K, 256M, 1G (default 256M)",
    )


def run_mcp_server(args: argparse.Namespace) -> int:
    try:
        from agentshark.mcp_server.server import make_server
    except ImportError as exc:
        missing = (exc.name or "mcp").split(".")[0]  # the package, not its module
        print(
            f"agentshark: mcp-server needs the MCP SDK ({missing} is missing): "
            "pip install 'agentshark[mcp]'",
            file=sys.stderr,
        )
        return 2
    from agentshark.mcp_server.captures import Captures, PathRefusedError

    root = Path(args.root).expanduser().resolve()
    if not root.is_dir():
        print(f"agentshark: --root {args.root}: not a folder", file=sys.stderr)
        return 2
    captures = Captures(root, redact=not args.no_redact, max_body=args.max_body)
    try:
        captures.keylogs = [str(captures.resolve(k, what="key log")) for k in args.keylog]
    except PathRefusedError as exc:
        print(f"agentshark: --keylog {exc}", file=sys.stderr)
        return 2
    server = make_server(captures)
    if args.transport == "stdio":
        print(f"agentshark: MCP server on stdio, root {root}", file=sys.stderr, flush=True)
        server.run("stdio")
        return 0
    return _serve_http(server, args, root)


def _serve_http(server: Any, args: argparse.Namespace, root: Path) -> int:
    import uvicorn

    from agentshark.cli_view import _loopback

    if not _loopback(args.host):
        print(
            f"agentshark: WARNING: listening on {args.host}, not loopback: anyone who can "
            "reach this machine can read the captures under the root (redacted, but whole "
            "conversations)",
            file=sys.stderr,
        )
    try:
        sock = socket.create_server((args.host, args.port))
    except OSError as exc:
        print(f"agentshark: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    app = server.streamable_http_app(host=args.host)
    print(
        f"agentshark: MCP server (Streamable HTTP) at http://{shown}:{port}/mcp, root {root} "
        "(Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0
