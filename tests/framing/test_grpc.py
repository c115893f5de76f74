"""gRPC message framing and schema-less protobuf: unit cases, then the shared grpcio capture
message by message against its truth, fields named from its own workshop.proto."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from typing import Any

import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.errors import Diagnostic
from agentshark.framing import decode_stream, detect_framing
from agentshark.framing.events import GrpcMessage
from agentshark.framing.grpc import GrpcDecoder, binary_metadata, decode_grpc_web_text
from agentshark.framing.protobuf import decode_raw
from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.pipeline import run
from tests.helpers import CAPTURES

GRPC = CAPTURES / "grpc_h2c"


def frame(payload: bytes, flags: int = 0) -> bytes:
    return bytes([flags]) + len(payload).to_bytes(4, "big") + payload


def messages(out: list[Any]) -> list[GrpcMessage]:
    return [m for m in out if isinstance(m, GrpcMessage)]


def test_any_split_gives_the_same_messages() -> None:
    body = frame(b"\x0a\x03abc") + frame(b"") + frame(b"\x08\x96\x01")
    whole = decode_stream([(1.0, body)], "grpc")
    for cut in range(1, len(body)):
        split = decode_stream([(1.0, body[:cut]), (2.0, body[cut:])], "grpc")
        assert [(m.payload, m.offset) for m in messages(split)] == [
            (m.payload, m.offset) for m in messages(whole)
        ]
    assert [m.payload for m in messages(whole)] == [b"\x0a\x03abc", b"", b"\x08\x96\x01"]


def test_compressed_messages_by_grpc_encoding() -> None:
    text = b"\x12\x10" + b"compressed text!"
    packed = {
        "gzip": gzip.compress(text),
        "deflate": zlib.compress(text),
        "zstd": zstandard.ZstdCompressor().compress(text),
    }
    for encoding, data in packed.items():
        (m,) = messages(decode_stream([(0.0, frame(data, 1))], "grpc", encoding=encoding))
        assert m.compressed and m.payload == text and m.size == len(text)
    out = decode_stream([(0.0, frame(b"junk", 1))], "grpc", encoding="gzip")
    assert [type(x).__name__ for x in out] == ["Diagnostic", "GrpcMessage"]
    assert messages(out)[0].payload is None
    out = decode_stream([(0.0, frame(b"x", 1))], "grpc", encoding="snappy")
    assert isinstance(out[0], Diagnostic) and "snappy" in out[0].message


def test_grpc_web_trailers_and_text() -> None:
    body = frame(b"\x08\x01") + frame(b"grpc-status: 0\r\ngrpc-message: ok\r\n", 0x80)
    msgs = messages(decode_stream([(0.0, body)], "grpc"))
    assert msgs[1].trailers == [("grpc-status", "0"), ("grpc-message", "ok")]
    import base64

    text = base64.b64encode(frame(b"\x08\x01")) + base64.b64encode(frame(b"\x08\x02"))
    assert decode_grpc_web_text(text) == (frame(b"\x08\x01") + frame(b"\x08\x02"), None)
    assert detect_framing("application/grpc-web+proto", b"") == "grpc"


def test_a_cut_message_is_incomplete() -> None:
    out = GrpcDecoder().feed(frame(b"\x0a\x05hello")[:6], 1.0)
    assert out == []
    decoder = GrpcDecoder(location="e1 response body")
    decoder.feed(frame(b"\x0a\x05hello")[:6], 1.0)
    diag, cut = decoder.close(2.0)
    assert isinstance(diag, Diagnostic) and diag.code == "grpc.truncated"
    assert isinstance(cut, GrpcMessage) and not cut.complete and cut.payload == b"\x0a"


def test_protobuf_wire_types_and_guesses() -> None:
    data = (
        b"\x08\x96\x01"  # 1: varint 150
        + b"\x11\x00\x00\x00\x00\x00\x00\xf8\x3f"  # 2: i64 1.5
        + b"\x1a\x03abc"  # 3: "abc"
        + b"\x22\x02\x08\x01"  # 4: a message {1: 1}
        + b"\x2a\x02\xff\xfe"  # 5: bytes
        + b"\x35\x00\x00\xc0\x3f"  # 6: i32 1.5f
    )
    fields = decode_raw(data)
    assert fields[0] == {"field": 1, "wire": "varint", "value": 150}
    assert fields[1]["wire"] == "i64" and fields[1]["double"] == 1.5
    assert fields[2] == {"field": 3, "wire": "len", "as": "string", "value": "abc"}
    assert fields[3] == {
        "field": 4,
        "wire": "len",
        "as": "message",
        "value": [{"field": 1, "wire": "varint", "value": 1}],
    }
    assert fields[4] == {"field": 5, "wire": "len", "as": "bytes", "value": "//4="}
    assert fields[5]["float"] == 1.5
    broken = decode_raw(b"\x08\x96\x01\x1a\x09ab")
    assert broken[0]["value"] == 150 and "error" in broken[1] and broken[1]["offset"] == 5


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 30))
def test_any_bytes_never_raise(data: bytes, n: int) -> None:
    decode_raw(data)
    decoder = GrpcDecoder(encoding="gzip", max_message=64)
    for i in range(0, len(data), n):
        decoder.feed(data[i : i + n], 0.0)
    decoder.close(0.0)


# -- the shared grpcio capture ----------------------------------------------------------------


def _schema() -> dict[str, dict[int, str]]:
    """message -> field number -> name, from the capture's own workshop.proto."""
    out: dict[str, dict[int, str]] = {}
    text = (GRPC / "workshop.proto").read_text()
    for name, body in re.findall(r"message (\w+) \{(.*?)\}", text, re.S):
        out[name] = {int(n): f for f, n in re.findall(r"(\w+) = (\d+);", body)}
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _named(
    fields: list[dict[str, Any]], message: str, schema: dict[str, dict[int, str]]
) -> dict[str, Any]:
    nested = {"CompleteReply": {"usage": "Usage"}}
    out: dict[str, Any] = {}
    for f in fields:
        name = schema[message][f["field"]]
        if name == "metadata":  # map<string, string>: entries {1: key, 2: value}
            entry = {e["field"]: e["value"] for e in f["value"]}
            out.setdefault("metadata", {})[entry[1]] = entry[2]
        elif f.get("as") == "message":
            out[_camel(name)] = _named(f["value"], nested[message][name], schema)
        elif f["wire"] == "varint" and name == "done":
            out[name] = bool(f["value"])
        else:
            out[_camel(name)] = f["value"]
    return out


def test_the_grpcio_capture_against_its_truth() -> None:
    truth = json.loads((GRPC / "truth.json").read_text())
    schema = _schema()
    exchanges = [it for it in run([str(GRPC / "capture.pcap")]) if isinstance(it, Exchange)]
    reports = [exchange_json(ex, RenderOptions(events=True)) for ex in exchanges]
    assert len(reports) == len(truth["calls"])
    for report, want in zip(reports, truth["calls"], strict=True):
        rpc = report["grpc"]
        assert rpc["method"] == want["method"]
        assert rpc["status_name"] == want["code"]
        if "details" in want:
            assert rpc["message"] == want["details"]
        assert rpc["encoding"]["request"] == want.get("compression")
        (request,) = report["request"]["events"]
        assert request["compressed"] == (want.get("compression") is not None)
        assert _named(request["fields"], "CompleteRequest", schema) == want["request"]
        replies = [e for e in report["response"].get("events", []) if e["type"] == "grpc"]
        if want["kind"] == "unary" and "response" in want:
            (reply,) = replies
            assert _named(reply["fields"], "CompleteReply", schema) == want["response"]
        elif want["kind"] == "server_streaming":
            assert len(replies) == want["n_responses"]
            got = [_named(r["fields"], "CompleteChunk", schema) for r in replies]
            assert got == want["responses"]
        trailers = dict(report["response"].get("trailers", []))
        for key, value in want.get("trailing_metadata", []):
            assert trailers[key] == value


def test_status_details_bin_is_read_without_a_schema() -> None:
    import base64

    from agentshark.output.grpc import _status_details

    status = b"\x08\x05" + b"\x12\x09not found"  # google.rpc.Status{code: 5, message}
    value = base64.b64encode(status).decode().rstrip("=")
    fields = _status_details(value)
    assert fields == [
        {"field": 1, "wire": "varint", "value": 5},
        {"field": 2, "wire": "len", "as": "string", "value": "not found"},
    ]


def test_with_the_proto_the_messages_are_the_truth() -> None:
    """--proto: the capture's own workshop.proto, compiled by grpcio-tools, names every field."""
    from agentshark.framing.proto_schema import load_schemas

    truth = json.loads((GRPC / "truth.json").read_text())
    schemas = load_schemas([str(GRPC / "workshop.proto")])
    opts = RenderOptions(events=True, proto=schemas)
    exchanges = [it for it in run([str(GRPC / "capture.pcap")]) if isinstance(it, Exchange)]
    for ex, want in zip(exchanges, truth["calls"], strict=True):
        report = exchange_json(ex, opts)
        (request,) = report["request"]["events"]
        assert request["type_name"] == "workshop.v1.CompleteRequest"
        assert request["message"] == want["request"] and "fields" not in request
        replies = [
            e["message"] for e in report["response"].get("events", []) if e["type"] == "grpc"
        ]
        if "response" in want:
            assert replies == [want["response"]]
        elif "responses" in want:
            assert replies == want["responses"]


def test_a_schema_that_does_not_fit_keeps_the_raw_reading() -> None:
    from agentshark.framing.proto_schema import ProtoSchemas
    from agentshark.output.grpc import grpc_message_json

    class Wrong(ProtoSchemas):
        def __init__(self) -> None:
            pass

        def to_json(self, type_name: str, payload: bytes) -> tuple[None, str]:
            return None, f"{type_name} does not parse this message (test)"

    ev = GrpcMessage(payload=b"\x08\x01", size=2, wire_size=2, compressed=False, ts=0.0, offset=0)
    out = grpc_message_json(ev, lambda p: {"type_name": "x.Y", "schema_error": "no"})
    assert out["schema_error"] == "no" and out["fields"] == [
        {"field": 1, "wire": "varint", "value": 1}
    ]
    assert Wrong().to_json("x.Y", b"")[1] is not None


def _as_h2_reader_gives(raw: bytes) -> str:
    """A header value as the HTTP/2 reader turns its bytes into text (http/h2_hpack.py)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


@given(st.binary(max_size=64))
def test_true_binary_metadata_comes_back_exactly(raw: bytes) -> None:
    assert binary_metadata(_as_h2_reader_gives(b"\x00" + raw)) == raw


def test_binary_metadata_cases() -> None:
    assert binary_metadata("CAMSBGJvb20") == b"\x08\x03\x12\x04boom"  # base64, no padding
    assert binary_metadata("CAMSBGJvb20=") == b"\x08\x03\x12\x04boom"
    # bytes that are valid UTF-8 but whose characters re-encode in Latin-1 to valid UTF-8 too
    assert binary_metadata(_as_h2_reader_gives(b"\x00\xc3\x83\xc2\xa9")) == b"\xc3\x83\xc2\xa9"
    assert binary_metadata(_as_h2_reader_gives(b"\x00\x08\xff")) == b"\x08\xff"
    assert binary_metadata("not base64!") is None
