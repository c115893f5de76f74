"""The whole OTLP export: what it keeps of the pipeline's items, and the requests it makes.

:class:`Indexer` watches the items on their way (as :class:`~agentshark.trace.collect.Analysis`
does) and keeps each call's report entry, redacted, and each exchange's server and transport.
Unlike the other writers, which stream, the spans need the traces, and the traces need the
whole input: the calls are kept until it ends (memory grows with the calls' content, as the
JSON report's size does). :func:`requests` then projects the traces (:mod:`.spans`), adds
the OpenInference attributes when asked, sends every attribute, name and link attribute
through the one :class:`~agentshark.output.redact.Redactor`, and groups whole traces into
requests of about :data:`BATCH` spans.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from urllib.parse import urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agentshark.apis.model import Call
from agentshark.model import Exchange
from agentshark.output.otlp import names as n
from agentshark.output.otlp.encode import request, resource_attributes
from agentshark.output.otlp.openinference import add_openinference
from agentshark.output.otlp.spans import CallIndex, OtlpLink, OtlpSpan
from agentshark.output.otlp.spans import project as project_spans
from agentshark.output.redact import Redactor
from agentshark.pipeline import Item
from agentshark.trace.collect import Analysis

BATCH = 512


class Indexer:
    def __init__(self, redact: Redactor) -> None:
        self.index = CallIndex()
        self._redact = redact

    def watch(self, items: Iterator[Item]) -> Iterator[Item]:
        for item in items:
            if type(item) is Exchange:
                self._exchange(item)
            elif isinstance(item, Call):
                self.index.calls[item.id] = self._redact.json(item.to_json())
            yield item

    def _exchange(self, ex: Exchange) -> None:
        self.index.transports[ex.id] = ex.transport
        if ex.request is None or ex.transport == "stdio":
            return
        try:
            parts = urlsplit(ex.request.url)
            host, port = parts.hostname, parts.port
        except ValueError:  # a port that is not a number: no server.* attributes
            return
        if host:
            self.index.servers[ex.id] = (host, port)


def requests(
    analysis: Analysis,
    index: CallIndex,
    files: Sequence[str],
    *,
    redact: Redactor,
    openinference: bool = False,
    project: str | None = None,
    semconv: str = n.SEMCONV_VERSION,
) -> Iterator[ExportTraceServiceRequest]:
    """The export requests of a finished analysis, whole traces in each; ``semconv`` names
    the convention set (:data:`~agentshark.output.otlp.names.RENAMES`)."""
    index.http = {h.exchange_id: h for h in analysis.http}
    resource = redact.json(resource_attributes(files, project))
    resource[n.SEMCONV] = semconv
    renames = n.RENAMES[semconv]
    batch: list[OtlpSpan] = []
    for spans in project_spans(analysis.traces, index):
        batch.extend(
            _renamed(_redacted(add_openinference(span) if openinference else span, redact), renames)
            for span in spans
        )
        if len(batch) >= BATCH:
            yield request(batch, resource)
            batch = []
    if batch:
        yield request(batch, resource)


def _renamed(span: OtlpSpan, renames: dict[str, str]) -> OtlpSpan:
    if not renames or not renames.keys() & span.attributes.keys():
        return span
    attributes = {renames.get(k, k): v for k, v in span.attributes.items()}
    return replace(span, attributes=attributes)


def _redacted(span: OtlpSpan, redact: Redactor) -> OtlpSpan:
    return replace(
        span,
        name=redact.text(span.name),
        attributes=redact.json(span.attributes),
        links=tuple(
            OtlpLink(trace_id=k.trace_id, span_id=k.span_id, attributes=redact.json(k.attributes))
            for k in span.links
        ),
        error=redact.text(span.error) if span.error is not None else None,
    )
