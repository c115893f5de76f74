"""gRPC messages as report events: their redaction (done per message, not by the exchange's
generic walk) gives what the generic walk gives, and drops a payload's base64 when a
credential was found in the message."""

from __future__ import annotations

from typing import Any

from agentshark.framing import decode_stream
from agentshark.framing.events import GrpcMessage
from agentshark.model import Exchange, header
from agentshark.output.grpc import grpc_message_json
from agentshark.output.redact import Redactor
from agentshark.pipeline import run
from tests.helpers import CAPTURES, ROOT

KEY = "sk-proj-Qw3rTy7uIoP9aSdF2gHjK4lZxCvB"
CAPTURE_FILES = [
    CAPTURES / "grpc_h2c" / "capture.pcap",
    *(
        ROOT / "tests/data/captures" / n / "capture.pcap"
        for n in ("grpc_sdk_h2c", "grpc_tool_chat")
    ),
]


def grpc_messages() -> list[GrpcMessage]:
    out: list[GrpcMessage] = []
    for path in CAPTURE_FILES:
        for ex in run([str(path)]):
            if not isinstance(ex, Exchange) or ex.request is None or ex.response is None:
                continue
            for msg in (ex.request, ex.response):
                if (header(msg.headers, "content-type") or "").startswith("application/grpc"):
                    enc = header(msg.headers, "grpc-encoding")
                    found = decode_stream(msg.body.pieces, "grpc", encoding=enc)
                    out += [m for m in found if isinstance(m, GrpcMessage)]
    return out


def test_per_message_redaction_is_the_generic_walk() -> None:
    messages = grpc_messages()
    assert len(messages) >= 40
    for m in messages:
        plain = grpc_message_json(m)
        assert grpc_message_json(m, redactor=Redactor()) == Redactor().json(plain)
        assert grpc_message_json(m, redactor=Redactor(enabled=False)) == plain


def frame(payload: bytes) -> GrpcMessage:
    return GrpcMessage(
        payload=payload,
        size=len(payload),
        wire_size=len(payload),
        compressed=False,
        ts=0.0,
        offset=0,
    )


def test_a_credential_in_a_message_is_redacted_with_its_base64() -> None:
    text = f"key={KEY}".encode()
    inner = b"\x1a" + bytes([len(text)]) + text  # a nested message holding it
    ev = frame(b"\x08\x01\x12" + bytes([len(inner)]) + inner)
    out: dict[str, Any] = grpc_message_json(ev, redactor=Redactor())
    value = out["fields"][1]["value"][0]["value"]
    assert KEY not in value and "[REDACTED" in value
    assert out["base64"] is None and out["redacted"] is True
    kept = grpc_message_json(ev, redactor=Redactor(enabled=False))
    assert kept["base64"] is not None and KEY in kept["fields"][1]["value"][0]["value"]
    named = grpc_message_json(
        ev, lambda p: {"type_name": "x.Y", "message": {"apiKey": KEY}}, Redactor()
    )
    assert KEY not in str(named) and named["base64"] is None and named["redacted"] is True
