"""The other OpenAI-shaped endpoints -> :class:`Call`, recognized and named, parsed shallowly.

- ``openai.embeddings`` (``POST .../embeddings``): model, input count, vector count and
  dimensions (``extras["embeddings"]``), usage, error.
- ``openai.completions``, the legacy ``POST .../completions`` (``prompt`` in, ``choices[].text``
  out, JSON or SSE): prompts as user messages, texts as output messages with their finish
  reasons, usage, error. Completeness follows the Chat family's rules.
- ``openai.models`` (``GET .../models`` and ``.../models/{id}``): the model ids listed.

Recognition, as for Chat: body shape first (an ``embedding`` list, ``text_completion``
choices, a list of ``model`` objects), then the path; the host only names the provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from agentshark.apis.model import Call, GenericPart, Json, Message, Part, TextPart
from agentshark.apis.openai.common import (
    app_ids,
    error_from_json,
    http_error,
    provider_name,
    usage_from,
)
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import SseEvent

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily


def _body_fields(request: Json, skip: tuple[str, ...], call: Call) -> dict[str, Json]:
    """Request fields other than ``skip`` go to ``request_params``; returns the request."""
    if not isinstance(request, dict):
        return {}
    model = request.get("model")
    call.request_model = model if isinstance(model, str) else None
    for key, value in request.items():
        if key not in skip and key != "model":
            call.request_params[key] = value
    app_ids(request, call)
    return request


def _finish(view: ExchangeView, call: Call, body: Json) -> dict[str, Json]:
    """What every non-stream parse ends with: error, provider, completeness."""
    call.error = http_error(view, body) or error_from_json(body, view.status, "body")
    call.provider = provider_name(view, body)
    call.complete = view.exchange.complete and isinstance(body, dict)
    if isinstance(body, dict):
        model = body.get("model")
        call.response_model = model if isinstance(model, str) else None
        call.usage = usage_from(body.get("usage"))
        return body
    return {}


def _anthropic(view: ExchangeView) -> bool:
    return view.anthropic_version is not None


# -- embeddings -----------------------------------------------------------------------------


class Embeddings:
    api = "openai.embeddings"

    def match(self, view: ExchangeView) -> float:
        path = view.path.lower()
        if view.method.upper() != "POST" or _anthropic(view) or "/api/embed" in path:
            return -1.0
        body = view.response_json
        data = body.get("data") if isinstance(body, dict) else None
        response = isinstance(data, list) and any(
            isinstance(d, dict) and d.get("object") == "embedding" for d in data
        )
        on_path = path.endswith("/embeddings")
        req = view.request_json
        request = isinstance(req, dict) and "input" in req and "messages" not in req
        if not (response or on_path):
            return 0.0
        return 0.4 * response + 0.3 * request + 0.25 * on_path

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "embeddings"
        request = _body_fields(view.request_json, ("input",), call)
        body = _finish(view, call, view.response_json)
        summary: dict[str, Json] = {}
        inputs = request.get("input")
        if isinstance(inputs, str) or (isinstance(inputs, list) and _tokens(inputs)):
            summary["inputs"] = 1  # one text, or one token array
        elif isinstance(inputs, list):
            summary["inputs"] = len(inputs)
        data = body.get("data")
        if isinstance(data, list):
            summary["vectors"] = len(data)
            first = data[0].get("embedding") if data and isinstance(data[0], dict) else None
            if isinstance(first, list):
                summary["dimensions"] = len(first)
            elif isinstance(first, str):  # encoding_format "base64": float32 values
                size = len(first) * 3 // 4 - first[-2:].count("=")
                summary["dimensions"] = size // 4
        if summary:
            call.extras["embeddings"] = summary


# -- legacy completions ---------------------------------------------------------------------


class Completions:
    api = "openai.completions"

    def match(self, view: ExchangeView) -> float:
        path = view.path.lower()
        if view.method.upper() != "POST" or _anthropic(view) or "/chat/" in path:
            return -1.0
        req = view.request_json
        request = isinstance(req, dict) and "prompt" in req and "messages" not in req
        body = view.response_json
        if isinstance(body, dict):
            choices = body.get("choices")
            response = body.get("object") == "text_completion" or (
                isinstance(choices, list)
                and any(isinstance(c, dict) and isinstance(c.get("text"), str) for c in choices)
            )
        else:
            response = body is None and b'"text_completion"' in view.response_body[:8192]
        on_path = path.endswith("/completions")
        if not (response or on_path):
            return 0.0
        return 0.4 * response + 0.3 * request + 0.25 * on_path

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "text_completion"
        request = _body_fields(view.request_json, ("prompt", "stream"), call)
        call.stream = request.get("stream") is True
        prompt = request.get("prompt")
        prompts = prompt if isinstance(prompt, list) and not _tokens(prompt) else [prompt]
        for p in prompts:
            if p is not None:
                part: Part = (
                    TextPart(content=p)
                    if isinstance(p, str)
                    else GenericPart(type="tokens", fields={"value": p})
                )
                call.input_messages.append(Message(role="user", parts=[part]))
        if view.framing == "sse":
            call.stream = True
            _completion_stream(view, call)
        else:
            body = _finish(view, call, view.response_json)
            response_id = body.get("id")
            call.response_id = response_id if isinstance(response_id, str) else None
            choices = body.get("choices")
            if isinstance(choices, list):
                texts = {_idx(c, i): c for i, c in enumerate(choices) if isinstance(c, dict)}
                for index in sorted(texts):
                    text, finish = texts[index].get("text"), texts[index].get("finish_reason")
                    call.output_messages.append(_text_message(text, finish))
        call.finish_reasons = [m.finish_reason for m in call.output_messages if m.finish_reason]


def _tokens(prompt: list[Json]) -> bool:
    return bool(prompt) and all(isinstance(t, int) for t in prompt)


def _idx(choice: dict[str, Json], position: int) -> int:
    index = choice.get("index")
    return index if isinstance(index, int) else position


def _text_message(text: Json, finish: Json) -> Message:
    parts: list[Part] = [TextPart(content=text)] if isinstance(text, str) and text else []
    return Message(
        role="assistant",
        parts=parts,
        finish_reason=finish if isinstance(finish, str) and finish else None,
    )


def _completion_stream(view: ExchangeView, call: Call) -> None:
    """The legacy Completions stream: SSE ``data`` chunks of ``text_completion`` objects,
    ended by ``data: [DONE]``."""
    texts: dict[int, list[str]] = {}
    finish: dict[int, str] = {}
    usage: Json = None
    end = _StreamEnd()
    for chunk, item in _completion_chunks(view, call, end):
        if chunk.get("error") is not None and call.error is None:
            call.error = error_from_json(chunk, None, f"stream event {end.events - 1}")
        if call.response_id is None and isinstance(chunk.get("id"), str):
            call.response_id = chunk["id"]
        if call.response_model is None and isinstance(chunk.get("model"), str):
            call.response_model = chunk["model"]
        usage = chunk.get("usage") or usage
        choices = chunk.get("choices")
        for i, choice in enumerate(choices if isinstance(choices, list) else ()):
            if not isinstance(choice, dict):
                continue
            index = _idx(choice, i)
            text = choice.get("text")
            if isinstance(text, str):
                texts.setdefault(index, []).append(text)
                if text and call.timing.first_token is None:
                    call.timing.first_token = item.ts
            if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
                finish[index] = choice["finish_reason"]
    for index in sorted(texts.keys() | finish.keys()):
        call.output_messages.append(_text_message("".join(texts.get(index, ())), finish.get(index)))
    call.usage = usage_from(usage)
    call.provider = provider_name(view)
    ended = call.error is not None or (bool(finish) and finish.keys() >= texts.keys())
    call.complete = view.exchange.complete and not end.cut and ended
    if view.exchange.complete and not end.done and not call.complete:
        call.diagnostics.append(
            Diagnostic(
                code="openai_completions.unfinished",
                message="the stream ended before every choice finished",
                location=f"{view.exchange.id} response",
            )
        )


@dataclass(slots=True)
class _StreamEnd:
    """How a Completions stream ended: ``[DONE]`` seen, the body cut inside an event."""

    done: bool = False
    cut: bool = False
    events: int = 0  # SSE events so far


def _completion_chunks(
    view: ExchangeView, call: Call, end: _StreamEnd
) -> Iterator[tuple[dict[str, Json], SseEvent]]:
    """The chunks before ``[DONE]``, with their events. Framing diagnostics go to the call,
    and so does every event skipped: one that is not a JSON object (as the Chat stream says),
    and the events after ``[DONE]``, counted in one diagnostic."""
    where = f"{view.exchange.id} response body"
    after_done = 0
    for item in view.events:
        if isinstance(item, Diagnostic):
            call.diagnostics.append(item)
            continue
        if not isinstance(item, SseEvent):
            continue  # comments
        n = end.events
        end.events += 1
        if not item.complete:
            end.cut = True  # the body ended inside this event: not dispatched, not used
            continue
        data = item.data.strip()
        if end.done:
            after_done += 1
            continue
        if data == "[DONE]":
            end.done = True
            continue
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            problem = f"is not JSON ({exc})"
        else:
            if isinstance(chunk, dict):
                yield chunk, item
                continue
            problem = f"is JSON but not an object ({data[:40]!r})"
        call.diagnostics.append(
            Diagnostic(
                code="openai_completions.bad_chunk",
                message=f"stream event {n} {problem}: skipped",
                location=f"{where} byte {item.offset}",
            )
        )
    if after_done:
        call.diagnostics.append(
            Diagnostic(
                code="openai_completions.after_done",
                severity="info",
                message=f"{after_done} event(s) after [DONE] were ignored",
                location=where,
            )
        )


# -- models ---------------------------------------------------------------------------------


class Models:
    api = "openai.models"

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "GET" or _anthropic(view):
            return -1.0
        body = view.response_json
        if not isinstance(body, dict):
            return 0.0
        data = body.get("data")
        listed = (
            body.get("object") == "list"
            and isinstance(data, list)
            and all(isinstance(d, dict) and d.get("object") == "model" for d in data)
            and (bool(data) or view.path.endswith("/models"))
        )
        one = body.get("object") == "model" and isinstance(body.get("id"), str)
        return 0.5 if listed or (one and "/models/" in view.path) else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        body = _finish(view, call, view.response_json)
        data = body.get("data")
        if isinstance(data, list):
            call.operation = "models.list"
            call.extras["models"] = [d.get("id") for d in data if isinstance(d, dict)]
        else:
            call.operation = "models.retrieve"
            model = body.get("id")
            call.response_model = model if isinstance(model, str) else None


EMBEDDINGS = Embeddings()
COMPLETIONS = Completions()
MODELS = Models()
ENDPOINT_FAMILIES: tuple[ApiFamily, ...] = (EMBEDDINGS, COMPLETIONS, MODELS)
