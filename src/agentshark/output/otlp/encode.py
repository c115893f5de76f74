"""OTLP spans -> ``ExportTraceServiceRequest`` messages of the official ``opentelemetry-proto``
package, and their OTLP JSON form.

No encoder is written by hand: the protobuf bytes are the package's ``SerializeToString``.
The JSON is ``google.protobuf.json_format`` of the same message with the OTLP deviations
from proto3 JSON (opentelemetry-proto ``docs/specification.md`` "JSON Protobuf Encoding"):
``traceId``/``spanId``/``parentSpanId`` as hex, not base64; enums as integers; lowerCamelCase
keys; int64 and fixed64 as decimal strings (json_format's own rule). The file exporter format
(``specification/protocol/file-exporter.md``) is one such request per line.

Attribute values: strings, booleans, integers, floats, and arrays of one of those; anything
else has been made a JSON string by the projection.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from agentshark import __version__
from agentshark.output.otlp import names as n
from agentshark.output.otlp.spans import OtlpSpan

Json = Any
_KINDS = {
    "internal": Span.SPAN_KIND_INTERNAL,
    "client": Span.SPAN_KIND_CLIENT,
    "producer": Span.SPAN_KIND_PRODUCER,
    "consumer": Span.SPAN_KIND_CONSUMER,
}
_MAX_INT = (1 << 63) - 1


def any_value(value: Json) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int) and -_MAX_INT - 1 <= value <= _MAX_INT:
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, list | tuple):
        return AnyValue(array_value=ArrayValue(values=[any_value(v) for v in value]))
    return AnyValue(string_value=orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode())


def key_values(attributes: dict[str, Json]) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes.items() if v is not None]


def resource_attributes(files: Sequence[str], project: str | None = None) -> dict[str, Json]:
    """agentshark, its version, the semconv version of the names, the capture files; the
    Phoenix project when one is named."""
    out: dict[str, Json] = {
        n.SERVICE_NAME: "agentshark",
        n.SERVICE_VERSION: __version__,
        n.SEMCONV: n.SEMCONV_VERSION,
        n.CAPTURE_FILES: list(files),
    }
    if project is not None:
        out[n.PROJECT] = project
    return out


def span_message(span: OtlpSpan) -> Span:
    out = Span(
        trace_id=bytes.fromhex(span.trace_id),
        span_id=bytes.fromhex(span.span_id),
        name=span.name,
        kind=_KINDS[span.kind],
        start_time_unix_nano=span.start_ns,
        end_time_unix_nano=span.end_ns,
        attributes=key_values(span.attributes),
        links=[
            Span.Link(
                trace_id=bytes.fromhex(link.trace_id),
                span_id=bytes.fromhex(link.span_id),
                attributes=key_values(link.attributes),
            )
            for link in span.links
        ],
    )
    if span.parent_id is not None:
        out.parent_span_id = bytes.fromhex(span.parent_id)
    if span.error is not None:
        out.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=span.error))
    return out


def request(spans: Sequence[OtlpSpan], resource: dict[str, Json]) -> ExportTraceServiceRequest:
    """One request: one resource (agentshark and the capture files), one scope, ``spans``."""
    scope = InstrumentationScope(name="agentshark", version=__version__)
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=key_values(resource)),
                scope_spans=[
                    ScopeSpans(
                        scope=scope,
                        spans=[span_message(s) for s in spans],
                        schema_url=n.SCHEMA_URL,
                    )
                ],
                schema_url=n.SCHEMA_URL,
            )
        ]
    )


def json_line(message: ExportTraceServiceRequest) -> bytes:
    """The OTLP JSON of ``message`` on one line (no newline at the end)."""
    data = json_format.MessageToDict(message, use_integers_for_enums=True)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    line: bytes = orjson.dumps(data)
    return line


def _hex_ids(item: dict[str, Json]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if key in item:
            item[key] = base64.b64decode(item[key]).hex()
