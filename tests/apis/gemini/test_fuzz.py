"""The fuzz invariant for the Gemini families: any JSON, or any sequence of stream chunks, in
a request or a response is a call or diagnostics out, never an exception. JSON is drawn
over Gemini's own field names so that most values reach the parsers' branches."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshark.apis.gemini.generate import FAMILIES
from agentshark.apis.registry import recognize
from tests.helpers import http_exchange

KEYS = st.sampled_from(
    (  # noqa: SIM905 - words read better
        "candidates content parts role text thought thoughtSignature thought_signature "
        "functionCall function_call functionResponse name args id response inlineData mimeType "
        "data fileData fileUri executableCode codeExecutionResult toolCall toolResponse toolType "
        "finishReason index usageMetadata promptTokenCount candidatesTokenCount "
        "thoughtsTokenCount modelVersion responseId promptFeedback blockReason error code "
        "message status details contents systemInstruction tools functionDeclarations "
        "generationConfig request model totalTokens embedding embeddings values"
    ).split()
)
SCALARS = st.none() | st.booleans() | st.integers(-3, 20) | st.text(max_size=8) | st.floats()
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=30,
)
METHODS = st.sampled_from(
    ["generateContent", "streamGenerateContent", "countTokens", "embedContent"]
)
URLS = st.sampled_from(
    [
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:{m}",
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/"
        "publishers/google/models/gemini-2.5-pro:{m}?$alt=json;enum-encoding=int",
        "https://cloudcode-pa.googleapis.com/v1internal:{m}",
    ]
)


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def _body(chunks: list[Any], framing: str) -> bytes:
    if framing == "sse":
        return b"".join(b"data: " + _dumps(c) + b"\r\n\r\n" for c in chunks)
    if framing == "array":
        return b"[" + b",\r\n".join(_dumps(c) for c in chunks) + b"]"
    return _dumps(chunks[0]) if chunks else b""


@settings(max_examples=300, deadline=None)
@given(
    request=JSON,
    chunks=st.lists(JSON, max_size=4),
    framing=st.sampled_from(["whole", "sse", "array"]),
    method=METHODS,
    url=URLS,
    cut=st.integers(0, 40),
    status=st.sampled_from([200, 400, 500]),
)
def test_any_json_is_a_call_or_diagnostics(
    request: Any, chunks: list[Any], framing: str, method: str, url: str, cut: int, status: int
) -> None:
    body = _body(chunks, framing)
    if cut:
        body = body[: max(len(body) - cut, 0)]
    full = url.format(m=method) + ("?alt=sse" if framing == "sse" and "?" not in url else "")
    ex = http_exchange(
        method="POST",
        url=full,
        target="/" + full.split("/", 3)[-1],
        request_body=_dumps(request),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, body)],
        status=status,
        response_headers=[
            ("content-type", "text/event-stream" if framing == "sse" else "application/json")
        ],
    )
    call = recognize(ex, "k1", registry=FAMILIES)
    if call is not None:
        orjson.dumps(call.to_json())
        assert not (call.complete and cut and framing != "whole" and not call.error)
