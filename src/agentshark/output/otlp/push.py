"""Send ``ExportTraceServiceRequest`` messages to an OTLP receiver: OTLP/HTTP (protobuf,
gzip) or OTLP/gRPC (``grpcio``, gzip), and where to send them.

Where (OTLP exporter configuration,
https://opentelemetry.io/docs/specs/otel/protocol/exporter/): ``--endpoint`` (the full
traces URL, like ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), else
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` with
``/v1/traces`` appended for OTLP/HTTP (as it is for gRPC). Headers: ``--header K=V`` on top
of ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` / ``OTEL_EXPORTER_OTLP_HEADERS`` (``k=v,k2=v2``,
values percent-decoded). Protocol: ``--protocol``, else ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``
/ ``OTEL_EXPORTER_OTLP_PROTOCOL``, else ``http/protobuf``; ``http/json`` sends the OTLP JSON.

Failures are :class:`ExportError` with a sentence for the user (unreachable endpoint, an HTTP
error status with the start of its body, a gRPC status with its details), never a traceback.
"""

from __future__ import annotations

import gzip
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from agentshark.output.otlp.encode import json_line

PROTOCOLS = ("http/protobuf", "http/json", "grpc")
TIMEOUT = 30.0  # seconds per request
BODY_SHOWN = 300  # characters of an error response shown


class ExportError(Exception):
    """The receiver could not be reached or refused the spans: said in one sentence."""


class ConfigError(Exception):
    """The endpoint, a header or the protocol cannot be used as given."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    url: str
    protocol: str
    headers: tuple[tuple[str, str], ...]


def parse_header(text: str, where: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise ConfigError(f"{where} {text!r}: not KEY=VALUE (e.g. authorization=Basic …)")
    return key.strip().lower(), value.strip()


def _env_headers(env: Mapping[str, str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        for item in env.get(name, "").split(","):
            if item.strip():
                key, value = parse_header(item, name)
                out.append((unquote(key), unquote(value)))
    return out


def resolve(
    endpoint: str | None,
    headers: Sequence[str],
    protocol: str | None,
    env: Mapping[str, str],
) -> Target | None:
    """Where to send, from the options and the environment; None when neither names an
    endpoint."""
    proto = (
        protocol
        or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if proto not in PROTOCOLS:
        raise ConfigError(f"protocol {proto!r}: not one of {', '.join(PROTOCOLS)}")
    url = endpoint or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if not url and (base := env.get("OTEL_EXPORTER_OTLP_ENDPOINT")):
        url = base if proto == "grpc" else base.rstrip("/") + "/v1/traces"
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"endpoint {url!r}: not an http:// or https:// URL "
            "(e.g. http://127.0.0.1:6006/v1/traces for Phoenix)"
        )
    merged = dict(_env_headers(env))
    for text in headers:
        key, value = parse_header(text, "--header")
        merged[key] = value
    return Target(url=url, protocol=proto, headers=tuple(merged.items()))


def send(target: Target, message: ExportTraceServiceRequest) -> str | None:
    """Send one request; a partial success's message (spans the receiver rejected), or None."""
    if target.protocol == "grpc":
        return _send_grpc(target, message)
    return _send_http(target, message)


def _send_http(target: Target, message: ExportTraceServiceRequest) -> str | None:
    if target.protocol == "http/json":
        body, ctype = json_line(message), "application/json"
    else:
        body, ctype = message.SerializeToString(), "application/x-protobuf"
    headers = {"content-type": ctype, "content-encoding": "gzip", **dict(target.headers)}
    req = urllib.request.Request(  # noqa: S310 (the scheme is checked in resolve)
        target.url, data=gzip.compress(body), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310
            answer = resp.read()
            answered = resp.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace").strip()
        shown = text[:BODY_SHOWN] + ("…" if len(text) > BODY_SHOWN else "")
        raise ExportError(
            f"{target.url} answered HTTP {exc.code} {exc.reason}" + (f": {shown}" if shown else "")
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ExportError(
            f"cannot reach {target.url}: {reason} (is the OTLP receiver running there?)"
        ) from None
    if "protobuf" in answered and answer:
        return _partial(ExportTraceServiceResponse.FromString(answer))
    return None


def _partial(response: ExportTraceServiceResponse) -> str | None:
    if not response.HasField("partial_success"):
        return None
    rejected = response.partial_success.rejected_spans
    if rejected == 0 and not response.partial_success.error_message:
        return None
    return f"the receiver rejected {rejected} spans: {response.partial_success.error_message}"


def _send_grpc(target: Target, message: ExportTraceServiceRequest) -> str | None:
    import grpc  # the otlp extra; checked before any input is read
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

    parts = urlsplit(target.url)
    port = parts.port or (443 if parts.scheme == "https" else 4317)
    address = f"{parts.hostname}:{port}"
    channel = (
        grpc.secure_channel(address, grpc.ssl_channel_credentials())
        if parts.scheme == "https"
        else grpc.insecure_channel(address)
    )
    try:
        response = TraceServiceStub(channel).Export(  # type: ignore[no-untyped-call]
            message,
            timeout=TIMEOUT,
            metadata=list(target.headers),
            compression=grpc.Compression.Gzip,
        )
    except grpc.RpcError as exc:
        code = exc.code() if hasattr(exc, "code") else None
        details = exc.details() if hasattr(exc, "details") else str(exc)
        name = code.name if code is not None else "error"
        if code == grpc.StatusCode.UNAVAILABLE:
            raise ExportError(
                f"cannot reach {address} over gRPC: {details} (is the OTLP receiver running?)"
            ) from None
        raise ExportError(f"{address} answered gRPC status {name}: {details}") from None
    finally:
        channel.close()
    return _partial(response)
