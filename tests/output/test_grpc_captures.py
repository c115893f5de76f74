"""The grpcio loopback captures (scripts/make_grpc_captures.py) against the client's own
records, message by message: named with the capture's toolbox.proto (--proto and
--proto-descriptors), raw without it, and named from the server reflection seen in the
capture itself."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format, message_factory

from agentshark.framing.proto_schema import ProtoSchemas, load_schemas
from agentshark.framing.protobuf import decode_raw
from agentshark.model import Exchange
from agentshark.output.jsonreport import JsonReportWriter
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.pipeline import Options, run
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data" / "captures"
H2C, REFLECTION, TOOL, TLS = (
    DATA / n for n in ("grpc_sdk_h2c", "grpc_sdk_reflection", "grpc_tool_chat", "grpc_sdk_tls")
)


def truth(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((folder / "truth.json").read_text())
    return out


def grpc_exchanges(folder: Path, *, keys: bool = True) -> list[Exchange]:
    """The gRPC exchanges of the folder's capture, decrypted with its key log if it has one."""
    keylog = folder / "keys.log"
    logs = [str(keylog)] if keys and keylog.exists() else []
    items = run([str(folder / "capture.pcap")], Options(keylogs=logs))
    return [
        x
        for x in items
        if isinstance(x, Exchange)
        and x.request is not None
        and "grpc" in (dict(x.request.headers).get("content-type") or "")
    ]


def report_exchanges(folder: Path, opts: RenderOptions) -> list[dict[str, Any]]:
    """The exchanges of the JSON report writer (which learns from reflection)."""
    out = io.BytesIO()
    writer = JsonReportWriter(out, opts)
    for item in run([str(folder / "capture.pcap")]):
        writer.write(item)
    writer.close()
    exchanges: list[dict[str, Any]] = orjson.loads(out.getvalue())["exchanges"]
    return exchanges


def messages(side: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [
        e for e in (side or {}).get("events", []) if e["type"] == "grpc" and "trailers" not in e
    ]


def check_call(report: dict[str, Any], want: dict[str, Any], *, named: bool) -> None:
    """One RPC of the report against the client's record of it."""
    rpc = report["grpc"]
    assert rpc["method"] == want["method"]
    assert rpc["status_name"] == want["code"]
    assert (rpc["message"] or None) == want["details"]
    sent, received = messages(report["request"]), messages(report["response"])
    if named:
        assert [m["message"] for m in sent] == want["requests"]
        assert [m["message"] for m in received] == want["responses"]
        assert all(m["type_name"].startswith("toolbox.v1.") for m in sent + received)
    else:
        assert all("message" not in m and m["fields"] for m in sent + received if m["size"])
        assert [raw_json(m, want["method"], "input") for m in sent] == want["requests"]
        assert [raw_json(m, want["method"], "output") for m in received] == want["responses"]
    compressed = want["compression"] == "gzip"
    assert [m["compressed"] for m in sent] == [compressed] * len(sent)
    if compressed:
        assert rpc["encoding"]["request"] == "gzip"
        assert all(m["wire_size"] < m["size"] for m in sent)
    trailers = dict(report["response"].get("trailers") or report["response"]["headers"])
    for key, value in want.get("trailing_metadata", []):
        if not key.endswith("-bin"):
            assert trailers[key] == value
    initial = dict(report["response"]["headers"])
    for key, value in want.get("initial_metadata", []):
        assert initial[key] == value


_CLASSES: dict[str, Any] = {}


def raw_json(event: dict[str, Any], method: str, side: str) -> dict[str, Any]:
    """The raw reading of one message, checked against protobuf's parse of the same bytes:
    the fields agentshark read without a schema are the wire reading of those bytes, and the
    bytes (framing, decompression) are the message the client saw."""
    payload = base64.b64decode(event["base64"])
    assert event["fields"] == decode_raw(payload) and event["size"] == len(payload)
    schemas = _schemas()
    types = schemas.method(method)
    assert types is not None
    type_name = types[0] if side == "input" else types[1]
    cls = message_factory.GetMessageClass(schemas._pool.FindMessageTypeByName(type_name))
    message = cls()
    message.ParseFromString(payload)
    out: dict[str, Any] = json_format.MessageToDict(message)
    return out


def _schemas() -> ProtoSchemas:
    if "schemas" not in _CLASSES:
        _CLASSES["schemas"] = load_schemas([str(H2C / "toolbox.proto")])
    schemas: ProtoSchemas = _CLASSES["schemas"]
    return schemas


@pytest.mark.parametrize("named", [True, False], ids=["proto", "raw"])
def test_every_rpc_kind_message_by_message(named: bool) -> None:
    want = truth(H2C)
    opts = RenderOptions(events=True, proto=_schemas() if named else None)
    reports = [exchange_json(ex, opts) for ex in grpc_exchanges(H2C)]
    assert len(reports) == len(want["calls"]) == 8
    kinds = set()
    for report, call in zip(reports, want["calls"], strict=True):
        check_call(report, call, named=named)
        kinds.add(call["kind"])
    assert kinds == {"unary", "server_streaming", "client_streaming", "bidi_streaming"}


def test_over_tls_every_rpc_as_over_h2c() -> None:
    """grpcio's TLS client (the server's side by the script's relay, which wrote the key log):
    the same RPCs, messages and statuses as in h2c, read through the decryption. The call past
    its deadline is the client's own CANCEL reset there: the relay's extra hop made the client
    give up before the server's DEADLINE_EXCEEDED came, so no status is on the wire."""
    want = truth(TLS)
    opts = RenderOptions(events=True, proto=_schemas())
    exchanges = grpc_exchanges(TLS)
    assert len(exchanges) == len(want["calls"]) == 8
    assert all(
        ex.tls and ex.tls["version"] == "TLS 1.3" and ex.tls["alpn"] == "h2" for ex in exchanges
    )
    for ex, call in zip(exchanges, want["calls"], strict=True):
        report = exchange_json(ex, opts)
        if ex.response is None:
            assert call["code"] == "DEADLINE_EXCEEDED"
            assert {"h2.stream_reset", "http.no_response"} <= {d.code for d in ex.diagnostics}
            continue
        check_call(report, call, named=True)
    assert grpc_exchanges(TLS, keys=False) == []


def test_status_details_and_deadline() -> None:
    """grpc-status-details-bin (a google.rpc.Status with ErrorInfo and BadRequest, sent by
    grpc-core as true binary metadata) read without a schema; the deadline's grpc-timeout."""
    want = {c["code"]: c for c in truth(H2C)["calls"]}
    reports = {
        r["grpc"]["status_name"]: r
        for r in (exchange_json(ex, RenderOptions()) for ex in grpc_exchanges(H2C))
    }
    failed = reports["INVALID_ARGUMENT"]["grpc"]["status_details"]
    status = want["INVALID_ARGUMENT"]["status_details"]
    assert failed[0] == {"field": 1, "wire": "varint", "value": status["code"]}
    assert failed[1]["value"] == status["message"]
    type_urls = [d["value"][0]["value"] for d in failed[2:]]
    assert type_urls == [d["@type"] for d in status["details"]]
    info = {f["field"]: f["value"] for f in failed[2]["value"][1]["value"]}
    assert (info[1], info[2]) == (status["details"][0]["reason"], status["details"][0]["domain"])
    slow = reports["DEADLINE_EXCEEDED"]["grpc"]
    assert slow["timeout"] is not None and slow["timeout"].endswith("m")
    assert abs(int(slow["timeout"][:-1]) / 1000 - want["DEADLINE_EXCEEDED"]["timeout_s"]) < 0.05


def test_reflection_in_the_capture_names_every_call() -> None:
    """No --proto: the reflection responses (v1alpha by grpcio-reflection's client, v1 raw)
    carry toolbox.proto and timestamp.proto, so every Toolbox call reads with names: the one
    before the reflection on the same connection (held back, then written in order), the
    ones after it, and the one on a second connection."""
    want = truth(REFLECTION)
    reports = report_exchanges(REFLECTION, RenderOptions(events=True))
    methods = [r["grpc"]["method"] for r in reports]
    assert methods.count("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo") == 2
    assert methods.count("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo") == 1
    calls = [r for r in reports if r["grpc"]["method"].startswith("/toolbox.")]
    assert len(calls) == len(want["calls"]) == 4
    assert len({r["connection"] for r in calls}) == 2
    for report, call in zip(calls, want["calls"], strict=True):
        check_call(report, call, named=True)
    assert methods[0] == want["calls"][0]["method"]  # the held call kept its place
    assert not [d for r in reports for d in r["diagnostics"] if d["code"] == "grpc.reflection"]


def test_without_reflection_the_writer_keeps_the_order() -> None:
    """Unnamed gRPC exchanges are held until their connection ends, then written in the
    order the pipeline gave them, with their raw reading."""
    reports = report_exchanges(H2C, RenderOptions(events=True))
    assert [r["id"] for r in reports] == [ex.id for ex in grpc_exchanges(H2C)]
    assert all("fields" in m for r in reports for m in messages(r["request"]))


def test_held_exchanges_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past HELD_BYTES the held exchanges are written as they are (raw), in order."""
    import agentshark.output.jsonreport as jsonreport

    monkeypatch.setattr(jsonreport, "HELD_BYTES", 1)
    reports = report_exchanges(REFLECTION, RenderOptions(events=True))
    first = reports[0]
    assert first["grpc"]["method"] == "/toolbox.v1.Toolbox/GetWeather"
    assert "fields" in messages(first["request"])[0]  # written before the reflection came
    last = reports[-1]
    assert "message" in messages(last["request"])[0]


def test_proto_descriptors_option(tmp_path: Path) -> None:
    """--proto-descriptors takes a FileDescriptorSet (protoc -o --include_imports), and only
    that: a .proto file given to it is a usage error."""
    from agentshark.cli import main

    fds = tmp_path / "toolbox.pb"
    argv = [sys.executable, "-m", "grpc_tools.protoc", f"-I{H2C}", "--include_imports"]
    subprocess.run([*argv, f"--descriptor_set_out={fds}", str(H2C / "toolbox.proto")], check=True)
    out = tmp_path / "report.json"
    args = ["exchanges", str(H2C / "capture.pcap"), "--events", "--format", "json"]
    assert main([*args, "--proto-descriptors", str(fds), "-o", str(out), "--no-progress"]) == 0
    reports = json.loads(out.read_text())["exchanges"]
    for report, call in zip(reports, truth(H2C)["calls"], strict=True):
        check_call(report, call, named=True)
    assert main([*args, "--proto-descriptors", str(H2C / "toolbox.proto"), "-o", str(out)]) == 2
