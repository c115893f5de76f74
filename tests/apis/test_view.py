"""The exchange view: bodies read as JSON keep what is valid when a byte is not UTF-8."""

from __future__ import annotations

import itertools

import orjson
import pytest
import yaml

from agentshark.apis.model import Call, TextPart
from agentshark.apis.registry import recognize
from agentshark.model import Body, Exchange
from agentshark.sources.vcr import read_vcr
from tests.helpers import CORPUS

CASSETTE = (
    CORPUS / "open-telemetry__opentelemetry-python-contrib/instrumentation-genai/"
    "opentelemetry-instrumentation-openai-v2/tests/cassettes/"
    "test_chat_completion_with_content.yaml"
)

pytestmark = pytest.mark.skipif(not CASSETTE.exists(), reason=f"no corpus at {CORPUS}")


def _recorded() -> Exchange:
    doc = yaml.safe_load(CASSETTE.read_text())
    ids = (f"e{i}" for i in itertools.count())
    (x,) = [
        x for x in read_vcr(doc, CASSETTE.name, 0, lambda: next(ids)) if isinstance(x, Exchange)
    ]
    return x


def _spoiled(body: Body, after: bytes) -> tuple[Body, int]:
    """``body`` with one 0xFF byte put right after the first ``after``; and its offset."""
    data = body.data()
    at = data.index(after) + len(after)
    return Body(pieces=[(0.0, data[:at] + b"\xff" + data[at:])], content_decoded=True), at


def _call(x: Exchange) -> Call:
    call = recognize(x, "c1")
    assert call is not None
    return call


def _text(call: Call) -> str:
    return "".join(p.content for p in call.output_messages[0].parts if isinstance(p, TextPart))


def test_one_invalid_byte_in_a_response_keeps_the_call() -> None:
    x = _recorded()
    clean = _call(x)
    assert x.response is not None
    content = orjson.loads(x.response.body.data())["choices"][0]["message"]["content"]
    assert content and _text(clean) == content
    head = content[:3].encode()
    x.response.body, offset = _spoiled(x.response.body, head)
    call = _call(x)
    assert _text(call) == content[:3] + "\ufffd" + content[3:]
    assert call.response_id == clean.response_id and call.usage == clean.usage
    assert call.finish_reasons == clean.finish_reasons and call.complete
    (diag,) = [d for d in call.diagnostics if d.code == "body.invalid_utf8"]
    assert diag.location == f"{x.id} response body byte {offset}"
    assert f"at byte {offset}" in diag.message and "1 invalid sequence " in diag.message


def test_one_invalid_byte_in_a_request_keeps_its_messages() -> None:
    x = _recorded()
    clean = _call(x)
    assert x.request is not None
    x.request.body, offset = _spoiled(x.request.body, b'"Say')
    call = _call(x)
    assert call.request_model == clean.request_model
    assert len(call.input_messages) == len(clean.input_messages)
    (diag,) = [d for d in call.diagnostics if d.code == "body.invalid_utf8"]
    assert diag.location == f"{x.id} request body byte {offset}"


def test_a_body_not_json_even_with_the_byte_replaced_stays_not_json() -> None:
    x = _recorded()
    assert x.response is not None
    x.response.body = Body(pieces=[(0.0, b'{"id": \xff')], content_decoded=True)
    call = _call(x)
    assert not [d for d in call.diagnostics if d.code == "body.invalid_utf8"]
