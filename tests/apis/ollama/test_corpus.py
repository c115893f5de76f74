"""Corpus oracle: every Ollama native exchange of ``../shared/corpus`` against the ``ollama``
Python client.

Every corpus file with an ``/api/chat``, ``/api/generate``, ``/api/embed`` or
``/api/embeddings`` endpoint is read with the readers and recognized with the whole
registry (so a wrong family winning shows). Each Ollama call is compared with what the
client makes of the same bytes: a whole body through its pydantic types (``ChatResponse``,
``GenerateResponse``, ``EmbedResponse``, ``EmbeddingsResponse``), a stream as the client's
``_stream`` reads it (``httpx.Response.iter_lines``, ``json.loads`` per line, an ``error``
line raised as ``ResponseError``, each other line built as the type), folded here the way
a caller does (texts concatenated, tool calls collected, the ``done`` line's fields kept);
an error status as ``ResponseError(text, status)``.

Per field, agreement is counted; a difference must be listed with its reason in
``differences.DIFFERENCES``. Run with ``-s`` to see the table.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import httpx
import pytest
from ollama import (
    ChatResponse,
    EmbeddingsResponse,
    EmbedResponse,
    GenerateResponse,
    ResponseError,
)

from agentshark.apis.model import Call, ReasoningPart, TextPart, ToolCallPart
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from tests.apis.corpus_cases import Agreement, entries, exchanges
from tests.apis.ollama.differences import DIFFERENCES

_PATHS = ("/api/chat", "/api/generate", "/api/embed", "/api/embeddings")
FILES = entries(lambda e: e.split("?")[0].endswith(_PATHS))
pytestmark = pytest.mark.skipif(not FILES, reason="no corpus")
_TYPES: dict[str, Any] = {"ollama.chat": ChatResponse, "ollama.generate": GenerateResponse}


def _sdk(view: ExchangeView, api: str) -> dict[str, Any]:
    """The client's reading of the response, in the compared fields."""
    status = view.status or 0
    text = view.response_body.decode("utf-8", "replace")
    if status >= 400:
        return {"error": ResponseError(text, status).error, "complete": True}
    if api == "ollama.embed":
        body = json.loads(text)
        kind = EmbedResponse if "embeddings" in body else EmbeddingsResponse
        vectors: Any = kind(**body)
        rows = vectors.embeddings if kind is EmbedResponse else [vectors.embedding]
        return {
            "vectors": len(rows),
            "dimensions": len(rows[0]) if rows else None,
            "input_tokens": getattr(vectors, "prompt_eval_count", None),
        }
    kind = _TYPES[api]
    chunks = []
    error = None
    if view.framing == "ndjson":
        for line in httpx.Response(200, content=view.response_body).iter_lines():
            if not line:
                continue
            part = json.loads(line)
            if err := part.get("error"):
                error = ResponseError(err).error
                break
            chunks.append(kind(**part))
    else:
        chunks.append(kind(**json.loads(text)))
    folded = _fold(chunks, api)
    # the stream ended: its done line, or an error line the client raised
    folded["complete"] = folded["complete"] or error is not None
    return folded | {"error": error}


def _fold(chunks: list[Any], api: str) -> dict[str, Any]:
    text: list[str] = []
    thinking: list[str] = []
    tools: list[tuple[None, str, dict[str, Any]]] = []
    for c in chunks:
        message = c.message if api == "ollama.chat" else c
        content = message.content if api == "ollama.chat" else message.response
        text.append(content or "")
        thinking.append(message.thinking or "")
        calls = (message.tool_calls or []) if api == "ollama.chat" else []
        tools.extend((None, tc.function.name, dict(tc.function.arguments)) for tc in calls)
    last = next((c for c in reversed(chunks) if c.done), None)
    return {
        "text": "".join(text),
        "reasoning": "".join(thinking),
        "tool_calls": tools,
        "finish_reason": last.done_reason if last is not None else None,
        "model": last.model if last is not None else (chunks[0].model if chunks else None),
        "input_tokens": last.prompt_eval_count if last is not None else None,
        "output_tokens": last.eval_count if last is not None else None,
        "durations": {
            k: getattr(last, k)
            for k in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
            if last is not None and getattr(last, k) is not None
        },
        "complete": last is not None,
    }


def _ours(call: Call) -> dict[str, Any]:
    if call.error is not None and call.error.status is not None:
        return {"error": call.error.message, "complete": call.complete}
    if call.api == "ollama.embed":
        summary = call.extras.get("embeddings", {})
        return {
            "vectors": summary.get("vectors"),
            "dimensions": summary.get("dimensions"),
            "input_tokens": call.usage.input_tokens if call.usage else None,
        }
    parts = call.output_messages[0].parts if call.output_messages else []
    return {
        "text": "".join(p.content for p in parts if isinstance(p, TextPart)),
        "reasoning": "".join(p.content for p in parts if isinstance(p, ReasoningPart)),
        "tool_calls": [(p.id, p.name, p.arguments) for p in parts if isinstance(p, ToolCallPart)],
        "finish_reason": call.output_messages[0].finish_reason if call.output_messages else None,
        "model": call.response_model,
        "input_tokens": call.usage.input_tokens if call.usage else None,
        "output_tokens": call.usage.output_tokens if call.usage else None,
        "durations": call.extras.get("durations_ns", {}),
        "complete": call.complete,
        "error": call.error.message if call.error is not None else None,
    }


@functools.cache
def _everything() -> tuple[Agreement, dict[str, list[str]]]:
    result = Agreement()
    apis: dict[str, list[str]] = {}
    for file in FILES:
        apis[file] = []
        for x in exchanges(file):
            call = recognize(x, "k1")
            apis[file].append(call.api if call is not None else "")
            if call is None or not call.api.startswith("ollama."):
                continue
            mine, theirs = _ours(call), _sdk(ExchangeView(x), call.api)
            result.compare(file, x.id, {k: (mine.get(k), v) for k, v in theirs.items()})
    return result, apis


@pytest.mark.parametrize("file", FILES)
def test_corpus_file_agrees_with_sdk(file: str) -> None:
    result, apis = _everything()
    assert [d for d in result.unexplained(DIFFERENCES) if d[0] == file] == []
    for x, api in zip(exchanges(file), apis[file], strict=True):
        path = x.request.url.split("?")[0] if x.request is not None else ""
        for suffix, expected in (
            ("/api/chat", "ollama.chat"),
            ("/api/generate", "ollama.generate"),
            ("/api/embed", "ollama.embed"),
            ("/api/embeddings", "ollama.embed"),
        ):
            if path.endswith(suffix):
                assert api == expected, (x.id, path)


def test_agreement_table() -> None:
    result, _ = _everything()
    print("\n" + result.table(f"{result.calls} Ollama calls compared with the ollama client"))
    assert result.calls >= 33
    assert not result.stale(DIFFERENCES)
    assert result.unexplained(DIFFERENCES) == []
    assert result.ratio() >= 0.995
