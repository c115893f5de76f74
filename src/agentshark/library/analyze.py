""":func:`analyze`: input files -> a :class:`~agentshark.library.report.Report`, the same
report ``agentshark analyze --format json`` writes for them.

The pipeline, the writer (:class:`~agentshark.output.jsonreport.JsonReportWriter`), the
census (``not_parsed``) and the trace stage (:class:`~agentshark.trace.collect.Analysis`)
are the command's own, with the same options; the report is written into a spooled file and
read back. Bad input never raises: an input that cannot be read is a source with a
``source.*`` diagnostic (:attr:`Report.failures <agentshark.library.report.Report.failures>`)
and the other inputs are still analyzed, as on the command line. Only arguments that cannot
run as given raise (``ValueError``: an unknown ``api``, a ``max_body`` not above 0, a
``proto`` file that is not a schema).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Sequence
from os import PathLike
from typing import Any

from agentshark.apis.model import Call
from agentshark.apis.registry import known_apis
from agentshark.errors import InputError
from agentshark.framing.proto_schema import load_schemas
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.library.report import Report
from agentshark.output.census import Census
from agentshark.output.jsonreport import JsonReportWriter
from agentshark.output.report import RenderOptions
from agentshark.pipeline import Item, Options, run
from agentshark.trace.collect import Analysis

__all__ = ["analyze"]

StrPath = str | PathLike[str]


def analyze(
    paths: StrPath | Sequence[StrPath],
    *,
    keylogs: Sequence[StrPath] = (),
    redact: bool = True,
    events: bool = False,
    api: Sequence[str] = (),
    max_body: int = DEFAULT_DECODE_LIMIT,
    proto: Sequence[StrPath] = (),
) -> Report:
    """Analyze captures (pcap, pcapng), HAR files, VCR cassettes and MCP stdio transcripts.

    ``paths``: one path or several (the format of each is detected from its content);
    ``keylogs``: TLS key logs (SSLKEYLOGFILE) to decrypt captured TLS; ``redact=False``
    shows credentials as captured (``--no-redact``); ``events`` adds every body piece and
    the decoded stream events (``--events``); ``api`` keeps only the calls of these API
    families (``--api``); ``max_body`` is the decoded size limit per body; ``proto``:
    ``.proto`` files naming gRPC message fields (``--proto``).
    """
    files = [str(paths)] if isinstance(paths, str | PathLike) else [str(p) for p in paths]
    if max_body <= 0:
        raise ValueError(f"max_body {max_body}: give a positive number of bytes")
    unknown = [a for a in api if not any(k == a or k.startswith(f"{a}.") for k in known_apis())]
    if unknown:
        raise ValueError(f"api {unknown[0]!r}: no such API family; known: {known_apis()}")
    try:
        schemas = load_schemas([str(p) for p in proto])
    except InputError as exc:
        raise ValueError(str(exc)) from None
    render = RenderOptions(redact=redact, events=events, max_body=max_body, proto=schemas)
    options = Options(max_body=max_body, keylogs=[str(k) for k in keylogs], calls=True)
    census = Census(len(files))
    analysis = Analysis()
    with tempfile.SpooledTemporaryFile(max_size=64 << 20) as spool:
        writer = JsonReportWriter(spool, render, calls=True)  # type: ignore[arg-type]
        for item in analysis.watch(_selected(census.watch(run(files, options)), tuple(api))):
            writer.write(item)
        analysis.finish()
        sections: list[tuple[str, Iterable[Any]]] = [
            ("not_parsed", census.not_parsed()),
            ("traces", (t.to_json() for t in analysis.traces)),
            ("incidents", (i.to_json() for i in analysis.incidents)),
        ]
        writer.close(sections)
        spool.seek(0)
        return Report(spool.read())


def _selected(items: Iterator[Item], apis: tuple[str, ...]) -> Iterator[Item]:
    """``items`` without the calls of other API families than ``apis`` (all when empty),
    as ``--api`` selects them."""
    if not apis:
        return items
    prefixes = tuple(f"{name}." for name in apis)
    return (
        item
        for item in items
        if not isinstance(item, Call) or item.api in apis or item.api.startswith(prefixes)
    )
