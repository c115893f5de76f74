"""``export otlp --endpoint``: pushed over OTLP/HTTP and OTLP/gRPC to receivers on loopback
that decode what they got; the ``OTEL_EXPORTER_OTLP_*`` variables; failures said in one line.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
)

from agentshark.output.otlp import push
from tests.output.otlp.helpers import SEED000, SHENZHEN, export, spans_of_lines
from tests.output.otlp.receivers import grpc_receiver, http_receiver

MCP_RUN = str(SEED000["seed000_chat_mcp_stream"])


@pytest.fixture(autouse=True)
def _no_otel_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    ):
        monkeypatch.delenv(name, raising=False)
    yield


def span_count(message: ExportTraceServiceRequest | None) -> int:
    assert message is not None
    return sum(len(ss.spans) for rs in message.resource_spans for ss in rs.scope_spans)


def test_http_protobuf_push_is_gzip_and_equals_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "t.jsonl"
    assert export(capsys, str(SHENZHEN), "-o", str(out))[0] == 0
    with http_receiver() as r:
        code, said = export(
            capsys,
            str(SHENZHEN),
            "--endpoint",
            r.url + "/v1/traces",
            "--header",
            "x-tenant=acme",
        )
    assert code == 0, said
    assert "1 trace, 4 spans sent to" in said
    (got,) = r.received
    assert got.path == "/v1/traces"
    assert got.headers["content-type"] == "application/x-protobuf"
    assert got.headers["content-encoding"] == "gzip"
    assert got.headers["x-tenant"] == "acme"
    assert got.message is not None
    # what was pushed is what the file says
    pushed = json_format.MessageToDict(got.message, use_integers_for_enums=True)
    from_file = json.loads(out.read_text())
    for rs in pushed["resourceSpans"]:
        for span in rs["scopeSpans"][0]["spans"]:
            for item in [span, *span.get("links", [])]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in item:
                        item[key] = base64.b64decode(item[key]).hex()
    assert pushed == from_file


def test_grpc_push_with_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    with grpc_receiver() as r:
        code, said = export(
            capsys,
            MCP_RUN,
            "--endpoint",
            r.url,
            "--protocol",
            "grpc",
            "--header",
            "authorization=Bearer local-test",
        )
    assert code == 0, said
    (got,) = r.received
    assert span_count(got.message) == 9
    assert got.headers["authorization"] == "Bearer local-test"
    assert got.message is not None
    names = [s.name for s in got.message.resource_spans[0].scope_spans[0].spans]
    assert names.count("execute_tool get_weather") == 1 and "tools/list" in names


def test_environment_endpoint_headers_and_protocol(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with http_receiver() as r:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.url + "/")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=data%20eng,x-other=1")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-other=2")
        code, said = export(capsys, str(SHENZHEN))
        assert code == 0, said
        (got,) = r.received
        assert got.path == "/v1/traces"  # the signal path is added to the generic endpoint
        assert got.headers["x-team"] == "data eng" and got.headers["x-other"] == "2"
        # the traces endpoint is used as it is; http/json sends the OTLP JSON
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", r.url + "/custom")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
        code, said = export(capsys, str(SHENZHEN))
        assert code == 0, said
        json_got = r.received[1]
    assert json_got.path == "/custom"
    assert json_got.headers["content-type"] == "application/json"
    spans = spans_of_lines(json_got.body.decode())
    assert spans[0]["name"] == "invoke_agent" and len(spans) == 4
    with grpc_receiver() as g:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", g.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        code, said = export(capsys, str(SHENZHEN))
        assert code == 0, said
        assert span_count(g.received[0].message) == 4


def test_resolve_precedence() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
    }
    target = push.resolve(None, [], None, env)
    assert target is not None and target.url == "http://collector:4318"
    assert target.protocol == "grpc"
    target = push.resolve("http://x:1/v1/traces", ["K=V"], "http/protobuf", env)
    assert target is not None and target.url == "http://x:1/v1/traces"
    assert target.headers == (("k", "V"),)
    assert push.resolve(None, [], None, {}) is None


def test_http_error_status_is_said_with_its_body(capsys: pytest.CaptureFixture[str]) -> None:
    with http_receiver() as r:
        r.status, r.answer = 415, b"Unsupported content type: use application/x-protobuf"
        code, said = export(capsys, str(SHENZHEN), "--endpoint", r.url + "/v1/traces")
    assert code == 1
    assert "answered HTTP 415" in said and "Unsupported content type" in said
    assert "Traceback" not in said


def test_partial_success_is_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    with http_receiver() as r:
        r.partial = ExportTracePartialSuccess(rejected_spans=2, error_message="too old")
        code, said = export(capsys, str(SHENZHEN), "--endpoint", r.url + "/v1/traces")
    assert code == 0
    assert "rejected 2 spans: too old" in said


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_unreachable_endpoint_is_one_line(
    capsys: pytest.CaptureFixture[str], protocol: str
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}" + ("/v1/traces" if protocol != "grpc" else "")
    code, said = export(capsys, str(SHENZHEN), "--endpoint", url, "--protocol", protocol)
    assert code == 1
    assert "cannot reach" in said and "Traceback" not in said
    assert len(said.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--endpoint", "http://127.0.0.1:1/v1/traces", "--header", "novalue"], "not KEY=VALUE"),
        (["--endpoint", "ftp://127.0.0.1/v1/traces"], "not an http:// or https:// URL"),
        ([], "say where: --endpoint URL"),
        (["-o", "x.jsonl", "--header", "a=b"], "--header goes with --endpoint"),
    ],
)
def test_command_lines_that_cannot_run(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str, tmp_path: Path
) -> None:
    argv = [str(tmp_path / a) if a == "x.jsonl" else a for a in argv]
    code, said = export(capsys, str(SHENZHEN), *argv)
    assert code == 2
    assert message in said and "Traceback" not in said


def test_bad_environment_header(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "broken")
    code, said = export(capsys, str(SHENZHEN), "--endpoint", "http://127.0.0.1:1/v1/traces")
    assert code == 2 and "OTEL_EXPORTER_OTLP_HEADERS 'broken': not KEY=VALUE" in said


def test_without_the_extra_the_command_names_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name.startswith("opentelemetry") else real(name)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    code, said = export(capsys, str(SHENZHEN), "-o", "/tmp/never-written.jsonl")
    assert code == 2
    assert "pip install 'agentshark[otlp]'" in said and "opentelemetry-proto" in said
