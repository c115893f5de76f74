"""``agentshark proxy`` (the recording gateway, :mod:`agentshark.proxy`) and ``agentshark ca``
(its local CA for forward mode): their arguments and their run.

The proxy prints what ``calls --follow`` / ``analyze --follow`` print, as calls finish
(:class:`agentshark.cli_follow` view), and with ``-w FILE.har`` records every exchange as it
ends (:mod:`agentshark.output.har_write`). It stops on Ctrl-C or SIGTERM: the flows still
open are recorded as incomplete, the HAR file is closed, the trace trees are printed, and the
exit status is 0. Exit status 2: a command line that cannot run (a missing extra, a
non-loopback ``--listen`` without ``--allow-remote``, a bad route, a port in use).

Credentials pass through to the upstream as the client sent them; the views and the HAR file
have them redacted unless ``--no-redact``.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import queue
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentshark.cli_follow import _View
from agentshark.output.census import Census
from agentshark.output.redact import redactor
from agentshark.output.report import RenderOptions
from agentshark.pipeline import Options
from agentshark.pipeline.follow import LiveTraces
from agentshark.sources.mitm import EXTRA_HINT

if TYPE_CHECKING:
    from agentshark.model import Exchange
    from agentshark.proxy.config import GatewayConfig
    from agentshark.proxy.gateway import Gateway
    from agentshark.proxy.routes import Route

__all__ = ["COMMANDS", "add_proxy_parser", "run"]

COMMANDS = ("proxy", "ca")
DEFAULT_CONFDIR = "~/.agentshark/ca"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # a flag, so that no exchange is cut half handled

_PROXY_EXAMPLES = """examples:
  agentshark proxy --upstream https://api.openai.com -w run.har
      OPENAI_BASE_URL=http://127.0.0.1:8080/v1 python agent.py
  agentshark proxy --route /openai=https://api.openai.com --route /anthropic=https://api.anthropic.com
      OPENAI_BASE_URL=http://127.0.0.1:8080/openai/v1 ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic
  agentshark proxy --forward -w run.har           # then, in the agent's shell:
      export HTTPS_PROXY=http://127.0.0.1:8080 SSL_CERT_FILE=$(agentshark ca)
  agentshark analyze run.har                      # the recording, afterwards
  agentshark serve --live run.har                 # or the web UI, following it as it grows
"""
_CA_EXAMPLES = """examples:
  agentshark ca                     # the CA certificate's path (made on first use)
  agentshark ca --install-hint      # and how to make clients trust it
"""


def add_proxy_parser(sub: Any) -> None:
    """The ``proxy`` and ``ca`` commands."""
    p = sub.add_parser(
        "proxy",
        help="a recording gateway: run agents through it, see their calls live, record a HAR",
        description="Run a local HTTP proxy (mitmproxy) in front of model APIs, MCP servers and "
        "A2A agents, print each call as it finishes and record every exchange.",
        epilog=_PROXY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--upstream", metavar="URL", help="reverse mode: send every request to URL")
    p.add_argument(
        "--route",
        action="append",
        default=[],
        metavar="/PREFIX=URL",
        help="reverse mode: requests under /PREFIX go to URL (the prefix cut); repeatable",
    )
    p.add_argument(
        "--forward",
        action="store_true",
        help="forward mode for clients that honour HTTPS_PROXY, TLS intercepted with a local "
        "CA (see `agentshark ca`)",
    )
    p.add_argument(
        "--listen",
        default="127.0.0.1:8080",
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:8080; port 0 picks a free one)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --listen address that is not loopback (anyone who reaches it can use "
        "the proxy, and your credentials)",
    )
    p.add_argument("-w", "--write", metavar="FILE.har", help="record the exchanges in a HAR file")
    p.add_argument(
        "--keylog", metavar="FILE", help="append the proxy's TLS secrets (SSLKEYLOGFILE format)"
    )
    p.add_argument("--upstream-ca", metavar="FILE", help="trust this CA bundle for upstreams")
    p.add_argument(
        "--insecure", action="store_true", help="do not verify upstream TLS certificates"
    )
    p.add_argument(
        "--confdir",
        default=DEFAULT_CONFDIR,
        metavar="DIR",
        help=f"where the forward mode's CA is kept (default {DEFAULT_CONFDIR})",
    )
    p.add_argument(
        "--view",
        choices=("analyze", "calls"),
        default="analyze",
        help="analyze: calls, trace changes and the trace trees at the end (default); calls: "
        "one line per call",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text, or one JSON update per line (as `analyze --follow --format json`)",
    )
    p.add_argument("--no-redact", action="store_true", help="show and record credentials")
    p.add_argument("--wide", action="store_true", help="never cut a column")
    p.add_argument(
        "--api",
        action="append",
        default=[],
        metavar="NAME",
        help="only show calls of this API family; repeatable (all are recorded)",
    )
    ca = sub.add_parser(
        "ca",
        help="the local CA of `agentshark proxy --forward`: its path, and how to trust it",
        description="Print the path of the CA certificate that `agentshark proxy --forward` "
        "signs intercepted TLS with (made on first use).",
        epilog=_CA_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ca.add_argument("--confdir", default=DEFAULT_CONFDIR, metavar="DIR", help="the CA's directory")
    ca.add_argument(
        "--install-hint", action="store_true", help="also print how to make clients trust it"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``proxy`` or ``ca``; the exit status."""
    config = None
    if args.command == "proxy":
        try:
            config = _config(args)
        except ValueError as exc:
            print(f"agentshark proxy: {exc}", file=sys.stderr)
            return 2
    try:
        import mitmproxy  # noqa: F401
    except ImportError:
        print(f"agentshark {args.command}: needs mitmproxy: {EXTRA_HINT}", file=sys.stderr)
        return 2
    return _ca(args) if config is None else _proxy(args, config)


def _ca(args: argparse.Namespace) -> int:
    from agentshark.proxy.gateway import ensure_ca

    cert = ensure_ca(Path(args.confdir).expanduser())
    print(cert)
    if args.install_hint:
        print(_hint(cert))
    return 0


def _hint(cert: Path) -> str:
    return f"""
Trust it in the agent's shell (these replace the system's CAs for that process, which is what
forward mode wants: every HTTPS connection then goes through the proxy):
  export SSL_CERT_FILE={cert}        # Python ssl, httpx (openai, anthropic SDKs), curl
  export REQUESTS_CA_BUNDLE={cert}   # requests
  export NODE_EXTRA_CA_CERTS={cert}  # Node.js (added to its CAs)
  export HTTPS_PROXY=http://127.0.0.1:8080 HTTP_PROXY=http://127.0.0.1:8080
Or system-wide (Debian/Ubuntu):
  sudo cp {cert} /usr/local/share/ca-certificates/agentshark.crt && sudo update-ca-certificates
The key beside it ({cert.parent / "mitmproxy-ca.pem"}) signs certificates for any site:
keep it private."""


def _config(args: argparse.Namespace) -> GatewayConfig:
    from agentshark.proxy.config import GatewayConfig
    from agentshark.proxy.routes import parse_route, upstream_route

    if args.forward == bool(args.upstream or args.route):
        raise ValueError(
            "give --upstream URL and/or --route /PREFIX=URL (reverse mode), or --forward "
            "(HTTPS_PROXY clients), not both"
        )
    routes: list[Route] = [parse_route(r) for r in args.route]
    if args.upstream:
        routes.append(upstream_route(args.upstream))
    prefixes = [r.prefix for r in routes]
    if len(set(prefixes)) != len(prefixes):
        raise ValueError(f"two routes for one prefix: {', '.join(prefixes)}")
    host, port = _listen(args.listen, allow_remote=args.allow_remote)
    for name in ("upstream_ca", "keylog"):
        value = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if value and name == "upstream_ca" and not Path(value).is_file():
            raise ValueError(f"{flag} {value}: no such file")
        if value and not Path(value).parent.is_dir():
            raise ValueError(f"{flag} {value}: the directory {Path(value).parent} does not exist")
    if args.write and not Path(args.write).parent.is_dir():
        raise ValueError(f"-w {args.write}: the directory {Path(args.write).parent} does not exist")
    return GatewayConfig(
        host=host,
        port=port,
        routes=routes,
        confdir=Path(args.confdir).expanduser(),
        upstream_ca=args.upstream_ca,
        insecure=args.insecure,
        keylog=args.keylog,
    )


def _listen(text: str, *, allow_remote: bool) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"--listen {text}: give HOST:PORT, e.g. 127.0.0.1:8080")
    if not allow_remote and not _loopback(host):
        raise ValueError(
            f"--listen {text}: {host} is not a loopback address; anyone who reaches it could "
            "use the proxy (and the credentials it passes on): add --allow-remote if you mean it"
        )
    return host, int(port_text)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _proxy(args: argparse.Namespace, config: GatewayConfig) -> int:
    from agentshark.output.har_write import HarFile, har_entry
    from agentshark.pipeline.live_exchanges import ExchangeFeed
    from agentshark.proxy.gateway import Gateway

    redact = redactor(not args.no_redact)
    # The analysis (this thread) and mitmproxy (its own) share the GIL: hand it over every
    # 0.5 ms instead of 5 ms, so that a trace rebuild delays a chunk passing through less.
    sys.setswitchinterval(0.0005)
    exchanges: queue.SimpleQueue[Exchange] = queue.SimpleQueue()
    gateway = Gateway(config, exchanges.put, redact)
    if not gateway.start():
        print(f"agentshark proxy: {gateway.error}", file=sys.stderr)
        gateway.stop()
        return 2
    traces = args.view == "analyze"
    render = RenderOptions(redact=not args.no_redact)
    view = _View(sys.stdout, render, args, traces=traces)
    feed = ExchangeFeed(args.write or "proxy", Options(calls=True))
    live = LiveTraces(traces=traces)
    census = Census(1)
    har = HarFile(args.write) if args.write else None
    _banner(gateway, config, args)

    def handle(exchange: Exchange) -> None:
        if har is not None:
            har.add(har_entry(exchange, redact))
        for update in live.items(feed.push(exchange)):
            view.write(update, census)

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOP_SIGNALS}
    try:
        while not stop.is_set() and gateway.error is None and gateway.running():
            with contextlib.suppress(queue.Empty):
                handle(exchanges.get(timeout=0.05))
            for update in live.tick(time.monotonic()):
                view.write(update, census)
        gateway.stop()
        while not exchanges.empty():
            handle(exchanges.get())
        for update in [*live.items(feed.close()), *live.finish()]:
            view.write(update, census)
        view.finish(live, census)
    except BrokenPipeError:
        gateway.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if har is not None:
            har.close()
    where = f" to {args.write}" if args.write else ""
    print(
        f"agentshark proxy: stopped: {feed.report.exchanges} exchanges recorded{where}",
        file=sys.stderr,
    )
    if gateway.error is not None:
        print(f"agentshark proxy: {gateway.error}", file=sys.stderr)
        return 1
    return 0


def _banner(gateway: Gateway, config: GatewayConfig, args: argparse.Namespace) -> None:
    host, port = gateway.addresses[0] if gateway.addresses else (config.host, config.port)
    shown = f"[{host}]" if ":" in host else host
    lines = [f"agentshark proxy: listening on http://{shown}:{port}"]
    lines += [f"  {r.prefix} -> {r.origin}{r.base_path}" for r in config.routes]
    if not config.routes:
        ca = config.confdir / "mitmproxy-ca-cert.pem"
        lines.append(
            f"  forward mode: HTTPS_PROXY=http://{shown}:{port} SSL_CERT_FILE={ca} "
            "(agentshark ca --install-hint)"
        )
    if args.write:
        lines.append(f"  recording to {args.write}")
    print("\n".join(lines), file=sys.stderr, flush=True)
