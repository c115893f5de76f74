"""``agentshark export parquet|duckdb``: the report as SQL tables (``docs/sql.md``).

:func:`add_table_exports` adds the two commands to the ``export`` group's subparsers;
:func:`run_table_export` runs one (the group dispatches on ``args.export_format``). The
tables are those of :mod:`agentshark.output.tables.schema`, a projection of the same report
as ``analyze --format json``, through the same redaction (``--no-redact`` as elsewhere).

Output rules, checked before any input is read (exit status 2, one line):

* ``parquet -o DIR``: a directory, created when missing (its parent must exist); one
  ``<table>.parquet`` per table. A directory that already holds any of them is refused unless
  ``--force``, which replaces those files (and only those) once the export is done.
* ``duckdb -o FILE``: a database file, its directory must exist. An existing file is refused
  unless ``--force``, which replaces it once the export is done.
* Both need the ``sql`` extra (``pip install 'agentshark[sql]'``: pyarrow, duckdb); without it
  the command says so.

Nothing is replaced until the new output is whole: it is written under a ``.partial`` name
and renamed at the end; Ctrl-C (exit 130) or a write error (exit 1) removes it.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentshark.output.tables.writer import TableOutput

TABLE_EXPORTS = ("parquet", "duckdb")
_EXTRA = "pip install 'agentshark[sql]'"

_EPILOG = {
    "parquet": """examples:
  agentshark export parquet agent.pcap --keylog keys.log -o tables/
  duckdb -c "SELECT gen_ai_request_model, count(*) FROM 'tables/calls.parquet' GROUP BY 1"

Writes DIR/<table>.parquet for every table (exchanges, calls, messages, parts, tool_calls,
spans, traces, incidents, stream_events, ws_messages, connections, sources); docs/sql.md has
the columns and queries.
""",
    "duckdb": """examples:
  agentshark export duckdb agent.pcap --keylog keys.log -o agent.duckdb
  duckdb agent.duckdb -c "SELECT rule, count(*) FROM incidents GROUP BY 1"

The tables (exchanges, calls, messages, parts, tool_calls, spans, traces, incidents,
stream_events, ws_messages, connections, sources) carry their columns' meaning as comments;
docs/sql.md has the columns and queries.
""",
}
_SUMMARY = {
    "parquet": "the report as Parquet tables in a directory (for DuckDB, pandas, Polars)",
    "duckdb": "the report as tables in one DuckDB database file",
}


def add_table_exports(export_subparsers: Any) -> None:
    """``parquet`` and ``duckdb`` in the ``export`` group."""
    from agentshark import cli_parser  # here: they import this module
    from agentshark.pipeline import Options

    for fmt in TABLE_EXPORTS:
        cmd: argparse.ArgumentParser = export_subparsers.add_parser(
            fmt,
            help=_SUMMARY[fmt],
            description=textwrap.fill(
                f"Analyze captures, HAR files, cassettes and MCP stdio transcripts as "
                f"`analyze` does and write {_SUMMARY[fmt]}: exchanges, calls, messages, parts, "
                "tool calls, spans, incidents, stream events, connections, joined by their "
                "ids. Needs the sql extra (pyarrow, duckdb).",
                92,
            ),
            epilog=_EPILOG[fmt],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        cmd.add_argument("files", nargs="+", metavar="FILE", help=cli_parser.INPUTS)
        cmd.add_argument(
            "--no-redact",
            action="store_true",
            help="keep credentials (Authorization, API keys, cookies) as captured",
        )
        cmd.add_argument(
            "--max-body",
            type=cli_parser.size_arg,
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
        where = "DIR" if fmt == "parquet" else "FILE"
        cmd.add_argument(
            "-o",
            "--output",
            required=True,
            metavar=where,
            help="the directory for the .parquet files (created if missing)"
            if fmt == "parquet"
            else "the database file to write (its directory must exist)",
        )
        cmd.add_argument(
            "--force",
            action="store_true",
            help="replace the tables an earlier export wrote there",
        )
        cmd.add_argument(
            "--no-progress",
            action="store_true",
            help="never show a progress bar (it shows on a terminal for inputs of 32 MB or more)",
        )
        cmd.set_defaults(export_format=fmt)


def run_table_export(args: argparse.Namespace) -> int:
    """Run ``export parquet`` or ``export duckdb``; the exit status."""
    from agentshark import cli

    try:
        _check_extra(args.export_format)
        target = _check_target(args.export_format, Path(args.output), force=args.force)
        cli.check_keylogs(args.keylog)
    except cli.UsageError as exc:
        print(f"agentshark: {exc}", file=sys.stderr)
        return 2
    return _export(args, target)


def _check_extra(fmt: str) -> None:
    from agentshark.cli import UsageError

    for module in ("pyarrow", "duckdb") if fmt == "duckdb" else ("pyarrow",):
        try:
            __import__(module)
        except ImportError:
            raise UsageError(
                f"export {fmt} needs {module}, which is not installed: {_EXTRA}"
            ) from None


def _check_target(fmt: str, path: Path, *, force: bool) -> Path:
    """What ``-o`` can be, said before any input is read (see the module docstring)."""
    from agentshark.cli import UsageError

    parent = path.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise UsageError(
            f"-o {path}: the directory {parent} {what} (create it first: mkdir -p {parent})"
        )
    if fmt == "parquet":
        if path.exists() and not path.is_dir():
            raise UsageError(f"-o {path}: is a file; give a directory for the .parquet files")
        from agentshark.output.tables.parquet import table_files

        there = [f.name for f in table_files(path) if f.exists()]
        if there and not force:
            raise UsageError(
                f"-o {path}: already holds tables ({', '.join(there[:3])}"
                f"{'...' if len(there) > 3 else ''}); add --force to replace them, or give "
                "another directory"
            )
        writable = path if path.is_dir() else parent
    else:
        if path.is_dir():
            raise UsageError(
                f"-o {path}: is a directory; give a file name, e.g. -o {path / 'report.duckdb'}"
            )
        if path.exists() and not force:
            raise UsageError(f"-o {path}: exists; add --force to replace it, or give another file")
        writable = parent
    if not os.access(writable, os.W_OK | os.X_OK):
        raise UsageError(f"-o {path}: cannot create files in {writable} (choose another -o)")
    return path


def _export(args: argparse.Namespace, target: Path) -> int:
    from agentshark import cli
    from agentshark.output.census import Census
    from agentshark.output.report import RenderOptions
    from agentshark.output.tables.writer import TableWriter
    from agentshark.pipeline import Options, run
    from agentshark.trace.collect import Analysis

    render = RenderOptions(redact=not args.no_redact, max_body=args.max_body)
    total = sum(Path(f).stat().st_size for f in args.files if f != "-" and Path(f).is_file())
    progress = None
    if not args.no_progress and sys.stderr.isatty() and total >= cli.PROGRESS_MIN_BYTES:
        progress = cli._Progress(sys.stderr)
    options = Options(max_body=args.max_body, progress=progress, keylogs=args.keylog, calls=True)
    census = Census(len(args.files))
    analysis = Analysis()
    try:
        output = _open_output(args.export_format, target)
    except OSError as exc:
        print(f"agentshark: -o {target}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 1
    writer = TableWriter(output, render, args.files)
    failed = 0
    try:
        for item in analysis.watch(census.watch(run(args.files, options))):
            writer.write(item)
            failed += cli._report_failure(item, render.redactor)
        analysis.finish()
        writer.close(
            (t.to_json() for t in analysis.traces), (i.to_json() for i in analysis.incidents)
        )
    except KeyboardInterrupt:
        writer.abort()
        print(f"\nagentshark: interrupted {census.so_far()}; nothing written", file=sys.stderr)
        return 130
    except OSError as exc:
        writer.abort()
        print(f"agentshark: -o {target}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except BaseException:
        writer.abort()
        raise
    finally:
        if progress is not None:
            progress.finish()
    counts = writer.written
    print(
        f"agentshark: wrote {target}: "
        + ", ".join(f"{n} {name}" for name, n in counts.items() if n),
        file=sys.stderr,
    )
    return 1 if failed else 0


def _open_output(fmt: str, target: Path) -> TableOutput:
    if fmt == "parquet":
        from agentshark.output.tables.parquet import ParquetOutput

        target.mkdir(exist_ok=True)
        return ParquetOutput(target)
    from agentshark.output.tables.duckdb import DuckdbOutput

    return DuckdbOutput(target)
