""":func:`analyze`: input files -> a :class:`~agentshark.library.report.Report`, the same
report ``agentshark analyze --format json`` writes for them.

The pipeline, the writer (:class:`~agentshark.output.jsonreport.JsonReportWriter`), the
census (``not_parsed``) and the trace stage (:class:`~agentshark.trace.collect.Analysis`)
are the command's own, with the same options; the report is written into a spooled file and
read back. Bad input never raises: an input that cannot be read is a source with a
``source.*`` diagnostic (:attr:`Report.failures <agentshark.library.report.Report.failures>`)
and the other inputs are still analyzed, as on the command line. Only arguments that cannot
run as given raise (``ValueError``: a ``max_body`` not above 0, a ``proto`` file that is
not a schema). To keep some calls only, query the report (:meth:`Report.calls
<agentshark.library.report.Report.calls>`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any

from agentshark.errors import InputError
from agentshark.framing.proto_schema import load_schemas
from agentshark.http.content import DEFAULT_DECODE_LIMIT
from agentshark.library.report import Report
from agentshark.output.census import Census
from agentshark.output.jsonreport import JsonReportWriter
from agentshark.output.report import RenderOptions
from agentshark.pipeline import Options, run
from agentshark.trace.collect import Analysis
from agentshark.trace.heap import KeptHeap

__all__ = ["analyze"]

StrPath = str | PathLike[str]


def analyze(
    paths: StrPath | Sequence[StrPath],
    *,
    keylogs: Sequence[StrPath] = (),
    redact: bool = True,
    events: bool = False,
    max_body: int = DEFAULT_DECODE_LIMIT,
    proto: Sequence[StrPath] = (),
) -> Report:
    """Analyze captures (pcap, pcapng), HAR files, VCR cassettes and MCP stdio transcripts.

    ``paths``: one path or several (the format of each is detected from its content);
    ``keylogs``: TLS key logs (SSLKEYLOGFILE) to decrypt captured TLS; ``redact=False``
    shows credentials as captured (``--no-redact``); ``events`` adds every body piece and
    the decoded stream events (``--events``); ``max_body`` is the decoded size limit per
    body; ``proto``: ``.proto`` files naming gRPC message fields (``--proto``).
    """
    files = [str(paths)] if isinstance(paths, str | PathLike) else [str(p) for p in paths]
    if max_body <= 0:
        raise ValueError(f"max_body {max_body}: give a positive number of bytes")
    try:
        schemas = load_schemas([str(p) for p in proto])
    except InputError as exc:
        raise ValueError(str(exc)) from None
    render = RenderOptions(redact=redact, events=events, max_body=max_body, proto=schemas)
    options = Options(max_body=max_body, keylogs=[str(k) for k in keylogs], calls=True)
    census = Census(len(files))
    analysis = Analysis(heap=KeptHeap())
    with tempfile.SpooledTemporaryFile(max_size=64 << 20) as spool:
        writer = JsonReportWriter(spool, render, calls=True)  # type: ignore[arg-type]
        for item in analysis.watch(census.watch(run(files, options))):
            writer.write(item)
        analysis.finish()
        sections: list[tuple[str, Iterable[Any]]] = [
            ("not_parsed", census.not_parsed()),
            ("traces", (t.to_json() for t in analysis.traces)),
            ("incidents", (i.to_json() for i in analysis.incidents)),
        ]
        if analysis.lives:  # README, Report: queue_messages
            sections.append(("queue_messages", (q.to_json() for q in analysis.lives)))
        writer.close(sections)
        spool.seek(0)
        return Report(spool.read())
