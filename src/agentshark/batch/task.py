"""One input of a batch -> its outputs under ``DIR/files/<key>/``: a Dask task.

:func:`analyze_one` runs in a worker process. It reads the input (through fsspec when it is
not a local file: copied to a temporary file, hashed on the way), hashes it, and skips it
when ``done.json`` of the same bytes and options is there. Otherwise it runs the pipeline
once into the JSON report and the Parquet tables together, then writes ``summary.json``
(the traces with their join keys, :mod:`.keys`) and ``done.json``, in a ``.partial`` folder
renamed at the end: a folder under its key is whole. It never raises: what went wrong
(an input agentshark cannot read, an I/O error, a bug) is the result's ``error``.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import shutil
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agentshark.batch.inputs import Input
from agentshark.batch.keys import trace_keys, trace_sightings

Json = Any
KEY_DIGITS = 16
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskOptions:
    out: str  # DIR: a local path that every worker sees at the same place
    keylogs: tuple[str, ...] = ()
    max_body: int = 256 << 20
    redact: bool = True
    # what else decides the outputs (the keylogs' bytes among them): a re-run with other
    # options does the inputs again
    fingerprint: str = ""


def files_dir(out: str) -> Path:
    return Path(out) / "files"


def analyze_one(inp: Input, opts: TaskOptions) -> dict[str, Json]:
    """The task: ``{"status": "done"|"skipped"|"failed", "url", ...}`` (see the module)."""
    start = time.monotonic()
    try:
        with _local_copy(inp) as (path, digest):
            result = _analyze(inp, path, digest, opts)
    except Exception as exc:  # noqa: BLE001  # one input's failure is its result, not the batch's
        where = traceback.extract_tb(exc.__traceback__)[-1:]
        at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
        result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}{at}"}
    result["url"] = inp.url
    result["seconds"] = round(time.monotonic() - start, 3)
    return result


@contextlib.contextmanager
def _local_copy(inp: Input) -> Iterator[tuple[str, str]]:
    """A local path of the input's bytes, and their SHA-256."""
    if inp.local is not None:
        digest = hashlib.sha256()
        with Path(inp.local).open("rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        yield inp.local, digest.hexdigest()
        return
    import fsspec  # the batch extra's (dask brings it), in the worker

    with tempfile.TemporaryDirectory(prefix="agentshark-batch-") as tmp:
        name = Path(tmp) / (Path(inp.url.rstrip("/")).name or "input")
        digest = hashlib.sha256()
        with fsspec.open(inp.url, "rb") as src, name.open("wb") as dst:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                dst.write(chunk)
        yield str(name), digest.hexdigest()


def _analyze(inp: Input, path: str, digest: str, opts: TaskOptions) -> dict[str, Json]:
    key = digest[:KEY_DIGITS]
    target = files_dir(opts.out) / key
    done = _done(target, opts)
    if done is not None:
        return {**done, "status": "skipped"}
    work = files_dir(opts.out) / f".{key}.{secrets.token_hex(4)}.partial"
    work.mkdir(parents=True)
    try:
        counts, error = _write_outputs(inp, path, key, digest, work, opts)
        if error is not None:
            return {"status": "failed", "key": key, "sha256": digest, "error": error}
        record = {
            "key": key,
            "sha256": digest,
            "url": inp.url,
            "fingerprint": opts.fingerprint,
            **counts,
        }
        (work / "done.json").write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
        if _done(target, opts) is not None:  # the same bytes under another name, done first
            return {**record, "status": "skipped", "duplicate": True}
        if target.exists():
            shutil.rmtree(target)  # an earlier run's, of other options or cut short
        work.rename(target)
        return {**record, "status": "done"}
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _done(target: Path, opts: TaskOptions) -> dict[str, Json] | None:
    """The record of a finished earlier run of these bytes with these options, if any."""
    try:
        record: dict[str, Json] = orjson.loads((target / "done.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return record if record.get("fingerprint") == opts.fingerprint else None


def _write_outputs(
    inp: Input, path: str, key: str, digest: str, work: Path, opts: TaskOptions
) -> tuple[dict[str, Json], str | None]:
    """The report, the tables and the summary in ``work``; the counts, and the input's
    error if agentshark could not read it."""
    from agentshark.model import Exchange
    from agentshark.output.census import Census
    from agentshark.output.jsonreport import JsonReportWriter
    from agentshark.output.report import RenderOptions, source_json
    from agentshark.output.tables.parquet import ParquetOutput
    from agentshark.output.tables.writer import TableWriter
    from agentshark.pipeline import Options, SourceReport, run
    from agentshark.trace.collect import Analysis
    from agentshark.trace.heap import KeptHeap

    render = RenderOptions(redact=opts.redact, max_body=opts.max_body)
    options = Options(max_body=opts.max_body, keylogs=opts.keylogs, calls=True, jobs=1)
    census = Census(1)
    analysis = Analysis(heap=KeptHeap())
    (work / "tables").mkdir()
    tables = TableWriter(ParquetOutput(work / "tables"), render, [inp.url])
    sources: list[Json] = []
    errors: list[str] = []
    exchanges = 0
    with (work / "report.json").open("wb") as out:
        report = JsonReportWriter(out, render, calls=True)
        for item in analysis.watch(census.watch(run([path], options))):
            if isinstance(item, SourceReport):
                if item.index == 0:
                    item.path = inp.url  # a remote input's temporary copy has another name
                errors += [d.message for d in item.diagnostics if d.code.startswith("source.")]
                sources.append(render.redactor.json(source_json(item)))
            elif isinstance(item, Exchange):
                exchanges += 1
            report.write(item)
            tables.write(item)
        analysis.finish()
        traces = [t.to_json() for t in analysis.traces]
        incidents = [i.to_json() for i in analysis.incidents]
        sections: list[tuple[str, Any]] = [
            ("not_parsed", census.not_parsed()),
            ("traces", traces),
            ("incidents", incidents),
        ]
        if analysis.lives:
            sections.append(("queue_messages", [q.to_json() for q in analysis.lives]))
        report.close(sections)
    tables.close(traces, incidents)
    if errors:
        return {}, render.redactor.text(errors[0].replace(path, inp.url))
    calls = {c.id: c for c in analysis.calls}
    http = {h.exchange_id: h for h in analysis.http}
    summary_traces = []
    for trace, data in zip(analysis.traces, traces, strict=True):
        times = [t for s in data["spans"] for t in (s["started"], s["ended"]) if t is not None]
        summary_traces.append(
            {
                **render.redactor.json(data),
                "time": [min(times), max(times)] if times else None,
                "keys": [list(k) for k in trace_keys(trace, calls, http)],
                "sightings": trace_sightings(trace, calls),
            }
        )
    summary = {
        "key": key,
        "sha256": digest,
        "url": inp.url,
        "sources": sources,
        "traces": summary_traces,
        "incidents": [render.redactor.json(i) for i in incidents],
    }
    (work / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_NON_STR_KEYS))
    counts = {
        "exchanges": exchanges,
        "calls": len(analysis.calls),
        "traces": len(traces),
        "incidents": len(incidents),
        "bytes": Path(path).stat().st_size,
    }
    return counts, None
