"""The fuzz invariant for the Bedrock families: any JSON in a request or response body, any
sequence of event stream messages (events of any name with any JSON payload, chunks of any
base64, exceptions) in, a call or diagnostics out, never an exception."""

from __future__ import annotations

import base64
import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.model import Call
from agentshark.apis.registry import recognize
from tests.apis.bedrock import frames

_LEAVES = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
)
JSON = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
NAMES = st.sampled_from(
    [
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
        "chunk",
        "other",
    ]
)
MEMBERS = st.sampled_from(
    ["text", "toolUse", "reasoningContent", "citation", "image", "toolResult", "x"]
)


@st.composite
def converse_event(draw: Any) -> dict[str, Any]:
    """Mostly well-formed ConverseStream payloads, with any JSON where the values go."""
    member = draw(MEMBERS)
    event: dict[str, Any] = draw(
        st.sampled_from(
            [
                {"contentBlockIndex": draw(st.integers(0, 3)), "delta": {member: draw(JSON)}},
                {"contentBlockIndex": draw(st.integers(0, 3)), "start": {member: draw(JSON)}},
                {"contentBlockIndex": draw(st.integers(0, 3))},
                {"stopReason": draw(JSON), "role": draw(JSON)},
                {"usage": draw(JSON), "metrics": draw(JSON)},
                draw(st.dictionaries(st.text(max_size=8), JSON, max_size=3)),
            ]
        )
    )
    return event


def _message(kind: str, name: str, payload: dict[str, Any]) -> bytes:
    if kind == "exception":
        return frames.exception(name, str(payload)[:20])
    if kind == "chunk":
        return frames.chunk({name: payload})
    return frames.event(name, payload)


def recognized(
    path: str, request: Any, body: bytes, content_type: str, *, complete: bool = True
) -> Call:
    x = frames.exchange(path, request, body, content_type=content_type, complete=complete)
    call = recognize(x, "k1")
    assert call is not None
    orjson.dumps(call.to_json())
    return call


@settings(max_examples=120, deadline=None)
@given(
    events=st.lists(
        st.tuples(st.sampled_from(["event", "chunk", "exception"]), NAMES, converse_event()),
        max_size=12,
    ),
    invoke=st.booleans(),
    complete=st.booleans(),
)
def test_any_event_sequence_gives_a_call(
    events: list[tuple[str, str, dict[str, Any]]], invoke: bool, complete: bool
) -> None:
    body = b"".join(_message(*e) for e in events)
    path = "/model/amazon.nova-lite-v1%3A0/" + (
        "invoke-with-response-stream" if invoke else "converse-stream"
    )
    call = recognized(
        path, {"messages": []}, body, "application/vnd.amazon.eventstream", complete=complete
    )
    assert call.api == ("bedrock.invoke" if invoke else "bedrock.converse")
    if not complete:
        assert not call.complete


@settings(max_examples=120, deadline=None)
@given(
    request=JSON,
    response=JSON,
    op=st.sampled_from(["converse", "invoke"]),
    model=st.sampled_from(
        [
            "amazon.titan-text-express-v1",
            "meta.llama3-8b-instruct-v1%3A0",
            "cohere.command-r-v1%3A0",
            "x",
        ]
    ),
)
def test_any_json_body_gives_a_call(request: Any, response: Any, op: str, model: str) -> None:
    call = recognized(
        f"/model/{model}/{op}", request, json.dumps(response).encode(), "application/json"
    )
    assert call.api.startswith(("bedrock.", "anthropic."))


@settings(max_examples=80, deadline=None)
@given(
    chunks=st.lists(st.binary(max_size=40) | JSON.map(lambda v: json.dumps(v).encode()), max_size=8)
)
def test_chunks_of_any_bytes(chunks: list[bytes]) -> None:
    body = b"".join(
        frames.frame(
            {":event-type": "chunk", ":message-type": "event"},
            json.dumps({"bytes": base64.b64encode(c).decode()}).encode(),
        )
        for c in chunks
    )
    recognized(
        "/model/meta.llama3/invoke-with-response-stream",
        {"prompt": "x"},
        body,
        "application/vnd.amazon.eventstream",
    )


def test_counts_that_are_no_integers_stay_unknown() -> None:
    """Campaign finding (api_bedrock): a float count of 1e308 became an int orjson cannot
    write; and a count header of 30 digits likewise."""
    body = b'{"generation":"x","prompt_token_count":1e+308,"generation_token_count":10}'
    x = frames.exchange(
        "/model/meta.llama3/invoke",
        {"prompt": "x"},
        body,
        headers=[("x-amzn-bedrock-input-token-count", "9" * 30)],
    )
    call = recognize(x, "k1")
    assert call is not None and call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (None, 10)
    orjson.dumps(call.to_json())
    x = frames.exchange(
        "/model/mistral.x/invoke",
        {"prompt": "x"},
        b'{"outputs":[{"text":"a"}]}',
        headers=[("x-amzn-bedrock-input-token-count", "9" * 30)],
    )
    call = recognize(x, "k1")
    assert call is not None and call.usage is not None and call.usage.input_tokens is None
    orjson.dumps(call.to_json())
