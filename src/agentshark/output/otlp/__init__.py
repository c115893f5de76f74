"""OTLP traces: the report's traces as OpenTelemetry spans (``agentshark export otlp``).

Input: the traces of :class:`~agentshark.trace.collect.Analysis` and the redacted ``calls``
entries of the report (:class:`.spans.CallIndex`, filled by :class:`.export.Indexer` as the
pipeline's items go by). Output: ``ExportTraceServiceRequest`` messages of the official
``opentelemetry-proto`` package, pushed over OTLP/HTTP or OTLP/gRPC (:mod:`.push`) or written
as OTLP JSON Lines (:mod:`.encode`).

- :mod:`.names`: the one rename table (semconv v1.41.1, OpenInference);
- :mod:`.attributes`: a call -> its GenAI, MCP or A2A attributes;
- :mod:`.spans`: traces -> spans (tree, ids, times, links, status);
- :mod:`.openinference`: the OpenInference attributes of a span, from its GenAI ones;
- :mod:`.encode`: spans -> protobuf messages and OTLP JSON;
- :mod:`.push`: where to send (options, ``OTEL_EXPORTER_OTLP_*``) and sending;
- :mod:`.export`: the whole export, every attribute through the one redactor.

Needs the ``otlp`` extra (``pip install 'agentshark[otlp]'``): :func:`missing` names what is
absent.
"""

from __future__ import annotations

import importlib.util

EXTRA = "otlp"
_MODULES = {"opentelemetry.proto": "opentelemetry-proto", "google.protobuf": "protobuf"}


def missing(grpc: bool = False) -> list[str]:
    """The packages of the ``otlp`` extra that cannot be imported."""
    wanted = dict(_MODULES)
    if grpc:
        wanted["grpc"] = "grpcio"
    out = []
    for module, package in wanted.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            out.append(package)
    return out
