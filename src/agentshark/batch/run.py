"""A batch on a Dask distributed cluster: one task per input, then the merge.

:func:`run_batch` submits :func:`~agentshark.batch.task.analyze_one` for every input (the
task's key names the input: the dashboard's task stream and progress show each file),
takes the results as they complete (:func:`distributed.as_completed`), says each on the
``say`` callback, rewrites ``DIR/manifest.json`` every :data:`MANIFEST_EVERY` seconds and at
the end (a batch of many small inputs does not rewrite it for each), and finally merges the
summaries of the inputs done or skipped into ``DIR/merged.json`` (:mod:`.merge`). A task
that fails (an input agentshark cannot read, or a worker lost under it) is a failed entry;
the others go on. Every file is written under a temporary name and renamed: none is ever
half written.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from distributed import Client, as_completed

from agentshark.batch.inputs import Input
from agentshark.batch.merge import JOIN_WINDOW, merge
from agentshark.batch.task import TaskOptions, analyze_one, files_dir

Json = Any
MANIFEST = "manifest.json"
MERGED = "merged.json"
MANIFEST_EVERY = 2.0  # seconds between rewrites of the manifest while tasks finish


@dataclass(slots=True)
class BatchResult:
    entries: list[dict[str, Json]] = field(default_factory=list)  # in input order
    traces: int = 0
    joins: int = 0
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for e in self.entries if e["status"] == status)


def fingerprint(keylogs: Sequence[str], max_body: int, *, redact: bool) -> str:
    """What besides an input's bytes decides its outputs (the key logs by their bytes)."""
    digest = hashlib.sha256(f"agentshark.batch/1 {max_body} {redact}".encode())
    for path in keylogs:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def run_batch(
    client: Client,
    inputs: Sequence[Input],
    opts: TaskOptions,
    say: Callable[[int, int, dict[str, Json]], None] | None = None,
) -> BatchResult:
    """Analyze ``inputs`` on ``client``'s cluster into ``opts.out``; then merge."""
    start = time.monotonic()
    files_dir(opts.out).mkdir(parents=True, exist_ok=True)
    futures = {
        client.submit(analyze_one, inp, opts, key=_task_key(n, inp), pure=False): n
        for n, inp in enumerate(inputs)
    }
    entries: list[dict[str, Json] | None] = [None] * len(inputs)
    written = start
    done = as_completed(futures)  # type: ignore[no-untyped-call]  # distributed's, untyped
    for finished, future in enumerate(done, 1):
        n = futures[future]
        if future.status == "error":  # the task itself never raises: its worker was lost
            exc = future.exception()
            entry = {
                "url": inputs[n].url,
                "status": "failed",
                "error": f"{type(exc).__name__}: {exc}",
            }
        else:
            entry = future.result()
        future.release()
        entries[n] = entry
        if say is not None:
            say(finished, len(inputs), entry)
        if time.monotonic() - written >= MANIFEST_EVERY:
            _write_manifest(opts, inputs, entries)
            written = time.monotonic()
    _write_manifest(opts, inputs, entries)
    result = BatchResult(entries=[e for e in entries if e is not None])
    summaries = _summaries(opts, result.entries)
    merged = merge(summaries)
    merged["batch"] = {"files": _manifest_entries(inputs, entries), "join_window": JOIN_WINDOW}
    _write_json(Path(opts.out) / MERGED, merged)
    result.traces = len(merged["traces"])
    result.joins = len(merged["joins"])
    result.seconds = time.monotonic() - start
    return result


def _task_key(n: int, inp: Input) -> str:
    """The task's name on the dashboard: ``agentshark-<name>-<n>`` (its key is unique)."""
    name = re.sub(r"[^A-Za-z0-9_.]+", "_", inp.url.rstrip("/").rsplit("/", 1)[-1])[:60]
    return f"agentshark-{name}-{n}"


def _summaries(opts: TaskOptions, entries: Sequence[dict[str, Json]]) -> list[dict[str, Json]]:
    """The summary of every distinct file done or skipped, in input order."""
    out = []
    seen: set[str] = set()
    for entry in entries:
        key = entry.get("key")
        if entry["status"] == "failed" or key is None or key in seen:
            continue
        seen.add(key)
        summary: dict[str, Json] = orjson.loads(
            (files_dir(opts.out) / key / "summary.json").read_bytes()
        )
        out.append(summary)
    return out


_KEPT = ("url", "status", "key", "sha256", "error", "exchanges", "calls", "traces", "incidents")


def _manifest_entries(
    inputs: Sequence[Input], entries: Sequence[dict[str, Json] | None]
) -> list[dict[str, Json]]:
    out = []
    for inp, entry in zip(inputs, entries, strict=True):
        if entry is None:
            out.append({"url": inp.url, "status": "pending"})
            continue
        record = {k: entry[k] for k in _KEPT if k in entry}
        if "key" in entry and entry["status"] != "failed":
            record["report"] = f"files/{entry['key']}/report.json"
            record["tables"] = f"files/{entry['key']}/tables"
        if entry.get("duplicate"):
            record["duplicate"] = True
        out.append(record)
    return out


def _write_manifest(
    opts: TaskOptions, inputs: Sequence[Input], entries: Sequence[dict[str, Json] | None]
) -> None:
    manifest = {
        "schema": "agentshark.batch/1",
        "fingerprint": opts.fingerprint,
        "files": _manifest_entries(inputs, entries),
    }
    _write_json(Path(opts.out) / MANIFEST, manifest)


def _write_json(path: Path, value: Json) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    partial.replace(path)
