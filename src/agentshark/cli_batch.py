"""``agentshark batch``: many inputs on a Dask distributed cluster (:mod:`agentshark.batch`).

Usage errors (exit status 2, one line, before any task runs): dask or pyarrow missing (the
``batch`` extra), an input that names no file, a ``--out`` that cannot be a directory, an
unreadable ``--keylog``, a ``--scheduler`` that does not answer. Exit status 1 when some
input failed (each said on stderr; the others are done), 130 on Ctrl-C, else 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from distributed import Client

    from agentshark.batch.inputs import Input
    from agentshark.batch.task import TaskOptions

_EXTRA = "pip install 'agentshark[batch]'"
_EXAMPLES = """examples:
  agentshark batch captures/ --out out/ --local 4
  agentshark batch 'runs/**/*.pcap' gateway.har --out out/ --scheduler tcp://10.0.0.5:8786
  agentshark batch s3://bucket/captures/ --out out/       # with s3fs installed
  duckdb -c "SELECT * FROM 'out/files/*/tables/calls.parquet'"

DIR/files/<key>/ holds each input's report.json and tables/ (<key>: the first 16 hex digits
of its SHA-256); DIR/merged.json the traces of all inputs, joined across files by shared ids
(its "joins" say which id joined which files); DIR/manifest.json every input and its status.
Inputs already done (same bytes, same options) are skipped.
"""


def add_batch_parser(sub: Any, command: Any, size_arg: Any, count_arg: Any) -> None:
    """Register ``batch`` (``command`` makes a subparser; ``size_arg`` reads sizes,
    ``count_arg(what)`` makes the type of a count)."""
    cmd = command(
        sub,
        "batch",
        summary="analyze many inputs on a Dask cluster, then join their traces across files",
        description="Analyze every input as its own task on a Dask distributed cluster (a "
        "LocalCluster of --local N processes, or --scheduler ADDRESS), writing each one's "
        "JSON report and Parquet tables under DIR, then merge the traces of all: captures of "
        "one run taken at several vantage points are joined by the ids they share "
        "(traceparent trace-id, tool call ids, MCP session ids, A2A context ids, response "
        "ids), each join recorded as evidence. Needs the batch extra (dask, distributed).",
        epilog=_EXAMPLES,
    )
    cmd.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="files, globs, folders or fsspec URLs (file://, s3://, gs://...) of pcap/pcapng "
        "captures, HAR files, vcrpy cassettes, mitmproxy flows or MCP stdio transcripts; a "
        "folder means the inputs found in it",
    )
    cmd.add_argument("--out", required=True, metavar="DIR", help="the output directory")
    where = cmd.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the scheduler of a running Dask cluster (tcp://host:8786); its workers need "
        "agentshark installed and DIR at the same path",
    )
    where.add_argument(
        "--local",
        type=count_arg("workers"),
        metavar="N",
        help="start a LocalCluster of N worker processes (default: the cores available)",
    )
    cmd.add_argument(
        "--dashboard",
        default="127.0.0.1:8787",
        metavar="ADDRESS",
        help="with --local: where the Dask dashboard listens (127.0.0.1:8787; none: no dashboard)",
    )
    cmd.add_argument(
        "--ports",
        type=_ports,
        metavar="LOW:HIGH",
        help="with --local: the ports the scheduler (LOW), the dashboard (LOW+1), the workers "
        "and their nannies listen on (default: any free port)",
    )
    cmd.add_argument(
        "--keylog",
        action="append",
        default=[],
        metavar="FILE",
        help="TLS key log (SSLKEYLOGFILE format) for every input; repeatable",
    )
    cmd.add_argument(
        "--max-body",
        type=size_arg,
        default=256 << 20,
        metavar="SIZE",
        help="decoded size limit per body, a positive size like 64K, 256M, 1G (default 256M)",
    )
    cmd.add_argument(
        "--no-redact",
        action="store_true",
        help="keep credentials (Authorization, API keys, cookies) as captured",
    )
    cmd.add_argument(
        "--no-progress",
        action="store_true",
        help="no line per input on stderr (failures and the summary are still said)",
    )
    cmd.set_defaults(run=run_batch_command)


def _ports(text: str) -> tuple[int, int]:
    low, _, high = text.partition(":")
    try:
        ports = int(low), int(high)
    except ValueError:
        ports = (0, 0)
    if not (ports[0] > 0 and ports[0] + 3 <= ports[1] < 65536):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port range LOW:HIGH with room for the scheduler, the "
            "dashboard and a worker (e.g. 55500:55599)"
        )
    return ports


class _UsageError(Exception):
    """Said in one line, exit status 2."""


def run_batch_command(args: argparse.Namespace) -> int:
    try:
        _check_extra()
        from agentshark.batch.inputs import InputSpecError, expand

        out = _check_out(Path(args.out))
        _check_keylogs(args.keylog)
        try:
            inputs = expand(args.inputs)
        except InputSpecError as exc:
            raise _UsageError(str(exc)) from None
    except _UsageError as exc:
        print(f"agentshark: {exc}", file=sys.stderr)
        return 2
    from agentshark.batch.run import fingerprint
    from agentshark.batch.task import TaskOptions

    opts = TaskOptions(
        out=str(out.resolve()),
        keylogs=tuple(str(Path(k).resolve()) for k in args.keylog),
        max_body=args.max_body,
        redact=not args.no_redact,
        fingerprint=fingerprint(args.keylog, args.max_body, redact=not args.no_redact),
    )
    try:
        return _on_cluster(args, inputs, opts)
    except _UsageError as exc:
        print(f"agentshark: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"\nagentshark: interrupted; {args.out}/manifest.json says which inputs were done "
            "(run again to do the rest)",
            file=sys.stderr,
        )
        return 130


def _check_extra() -> None:
    for module in ("dask", "distributed", "pyarrow"):
        try:
            __import__(module)
        except ImportError:
            raise _UsageError(f"batch needs {module}, which is not installed: {_EXTRA}") from None


def _check_out(path: Path) -> Path:
    if path.exists() and not path.is_dir():
        raise _UsageError(f"--out {path}: is a file; give a directory (it is created if missing)")
    parent = path.parent
    if not path.exists() and not parent.is_dir():
        raise _UsageError(
            f"--out {path}: the directory {parent} does not exist (create it first: "
            f"mkdir -p {parent})"
        )
    writable = path if path.exists() else parent
    if not os.access(writable, os.W_OK | os.X_OK):
        raise _UsageError(f"--out {path}: cannot create files in {writable} (choose another --out)")
    return path


def _check_keylogs(paths: list[str]) -> None:
    from agentshark.cli import UsageError, check_keylogs

    try:
        check_keylogs(paths)
    except UsageError as exc:
        raise _UsageError(str(exc)) from None


def _on_cluster(args: argparse.Namespace, inputs: list[Input], opts: TaskOptions) -> int:
    from distributed import Client, LocalCluster

    if args.scheduler is not None:
        try:
            client = Client(args.scheduler, timeout="5s")  # type: ignore[no-untyped-call]
        except (OSError, ValueError, TimeoutError) as exc:
            raise _UsageError(
                f"--scheduler {args.scheduler}: cannot connect ({exc}); is the scheduler "
                "running (dask scheduler), and is the address tcp://HOST:PORT?"
            ) from None
        with client:
            return _run(args, client, inputs, opts)
    workers = args.local or _cores()
    kwargs: dict[str, Any] = {}
    dashboard = None if args.dashboard.lower() == "none" else args.dashboard
    if args.ports is not None:
        low, high = args.ports
        middle = low + 2 + (high - low - 2) // 2
        kwargs = {
            "scheduler_port": low,
            "worker_port": f"{low + 2}:{middle}",
            "port": f"{middle + 1}:{high}",  # the nannies'
        }
        if dashboard is not None:
            dashboard = f"{dashboard.rsplit(':', 1)[0]}:{low + 1}"
    try:
        cluster = LocalCluster(  # type: ignore[no-untyped-call]  # distributed's, untyped
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=dashboard,
            silence_logs=logging.ERROR,
            **kwargs,
        )
    except (OSError, RuntimeError) as exc:
        raise _UsageError(f"--local {workers}: the LocalCluster did not start: {exc}") from None
    with cluster, Client(cluster) as client:  # type: ignore[no-untyped-call]
        return _run(args, client, inputs, opts)


def _cores() -> int:
    from agentshark.pipeline.jobs import default_jobs

    return default_jobs()


def _run(args: argparse.Namespace, client: Client, inputs: list[Input], opts: TaskOptions) -> int:
    from agentshark.batch.run import run_batch

    workers = len(client.scheduler_info().get("workers", {}))
    where = f"dashboard {client.dashboard_link}" if client.dashboard_link else "no dashboard"
    if not args.no_progress:
        print(
            f"agentshark: {len(inputs)} inputs on {workers} Dask workers ({where})",
            file=sys.stderr,
        )
    start = time.monotonic()

    def say(done: int, total: int, entry: dict[str, Any]) -> None:
        status = entry["status"]
        if status == "failed":
            print(f"agentshark: {entry['url']}: failed: {entry['error']}", file=sys.stderr)
        if args.no_progress:
            return
        facts = (
            f"{entry.get('traces', 0)} traces, {entry.get('calls', 0)} calls"
            if status != "failed"
            else "see above"
        )
        print(
            f"[{done}/{total}] {status:<7} {entry['url']}: {facts} ({entry['seconds']:.2f} s)",
            file=sys.stderr,
        )

    result = run_batch(client, inputs, opts, say)
    failed = result.count("failed")
    print(
        f"agentshark: {len(inputs)} inputs: {result.count('done')} done, "
        f"{result.count('skipped')} skipped (done before), {failed} failed; "
        f"{result.traces} traces, {result.joins} cross-file joins -> "
        f"{Path(args.out) / 'merged.json'} ({time.monotonic() - start:.1f} s)",
        file=sys.stderr,
    )
    return 1 if failed else 0
