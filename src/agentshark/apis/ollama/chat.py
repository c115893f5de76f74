"""Ollama's native ``/api/chat`` (``ollama.chat``) and ``/api/generate`` (``ollama.generate``).

From Ollama's API reference (https://github.com/ollama/ollama/blob/main/docs/api.md):
a request streams unless it says ``"stream": false``; a stream is ``application/x-ndjson``,
one JSON object per line, each a fragment (``message.content`` / ``message.thinking`` for
chat, ``response`` / ``thinking`` for generate; tool calls arrive whole in one line), the
last with ``"done": true``, ``done_reason`` and the counts and durations. A whole response is
that last object with the full text.

Recognition: the body shape (an object with ``done`` next to ``message`` or ``response``,
in the body or the stream's first lines) and the path; the port (11434) and host are only
hints, so a proxied Ollama is still Ollama. The ``provider`` is ``ollama``.

Completeness: the HTTP exchange complete and either the ``done: true`` object or an error
seen. A stream that ends without ``done: true`` is incomplete (``ollama.unfinished``); a
missing ``done_reason`` stays None, never "stop". ``done_reason`` is kept as sent (``stop``,
``length``, ``load``, ``unload``...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.model import (
    Call,
    GenericPart,
    Json,
    Message,
    Part,
    ReasoningPart,
    TextPart,
)
from agentshark.apis.ollama.endpoints import ENDPOINT_FAMILIES
from agentshark.apis.ollama.messages import (
    COUNTS,
    DURATIONS,
    durations_of,
    error_of,
    http_error,
    image_parts,
    input_messages,
    message_of,
    request_fields,
    tool_call_part,
    usage_of,
)
from agentshark.apis.view import ExchangeView, json_failure
from agentshark.errors import Diagnostic
from agentshark.framing.events import JsonDocument

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

_RESPONSE_FIELDS = frozenset(
    (
        *("model", "message", "response", "thinking", "done", "done_reason", "logprobs"),
        *("error", *COUNTS, *DURATIONS),
    )
)
_CHUNK_MESSAGE_FIELDS = frozenset(("role", "content", "thinking", "tool_calls", "images"))
_PLAIN_FIELDS = frozenset(("role", "content"))
_HEAD = 4096


def response_shape(view: ExchangeView, key: bytes) -> bool:
    """An Ollama body: an object with ``done`` and ``key`` (``message``/``response``), whole
    or as the first line of an NDJSON stream."""
    body = view.response_json
    if isinstance(body, dict):
        return "done" in body and key.decode() in body
    if body is not None:
        return False
    head = view.response_head(_HEAD)
    first = head.split(b"\n", 1)[0]
    return b'"done"' in first and b'"' + key + b'"' in first


class _NativeFamily:
    api = ""
    path = ""  # "/api/chat"
    key = b""  # the response field that holds the output
    operation = ""  # OTel GenAI's operation name

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "POST":
            return -1.0
        path = view.path.lower().rstrip("/")
        on_path = path.endswith(self.path)
        response = response_shape(view, self.key)
        if not (on_path or response):
            return 0.0
        request = view.request_json
        request_ok = isinstance(request, dict) and self._request_shape(request)
        score = 0.45 * on_path + 0.4 * response + 0.1 * request_ok
        if view.response_content_type.startswith("application/x-ndjson"):
            score += 0.05
        return score

    def _request_shape(self, request: dict[str, Json]) -> bool:
        raise NotImplementedError

    def _request(self, request: dict[str, Json], call: Call) -> None:
        raise NotImplementedError

    def _output(self, body: dict[str, Json]) -> Message:
        raise NotImplementedError

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = self.operation
        call.provider = "ollama"
        request = view.request_json
        if isinstance(request, dict):
            self._request(request, call)
        if view.framing == "ndjson":
            call.stream = True
            _Stream(view, call, chat=self.key == b"message").run()
        else:
            self._whole(view, call)
        call.finish_reasons = [m.finish_reason for m in call.output_messages if m.finish_reason]

    def _whole(self, view: ExchangeView, call: Call) -> None:
        body = view.response_json
        call.error = http_error(view, body)
        done = False
        if isinstance(body, dict):
            done = body.get("done") is True
            if call.error is None or self.key.decode() in body:
                final(body, call, self._output(body))
        elif view.response_body.strip():
            call.diagnostics.append(
                _diag(
                    view,
                    "ollama.unexpected_body",
                    f"the response body is {json_failure(view.response_body)}",
                )
            )
        if isinstance(body, dict) and not done and call.error is None:
            call.diagnostics.append(
                _diag(view, "ollama.unfinished", 'the response has no "done": true')
            )
        call.complete = (
            view.exchange.complete
            and view.exchange.response is not None
            and isinstance(body, dict)
            and (done or call.error is not None)
        )


def _diag(view: ExchangeView, code: str, message: str, where: str = "response body") -> Diagnostic:
    return Diagnostic(code=code, message=message, location=f"{view.exchange.id} {where}")


def final(body: dict[str, Json], call: Call, message: Message) -> None:
    """What the last (``done``) object says: model, finish reason, usage, durations."""
    model = body.get("model")
    call.response_model = model if isinstance(model, str) and model else None
    reason = body.get("done_reason")
    message.finish_reason = reason if isinstance(reason, str) and reason else None
    if message.parts or message.finish_reason is not None or "done" in body:
        call.output_messages.append(message)
    call.usage = usage_of(body)
    durations_of(body, call)
    if isinstance(body.get("logprobs"), list):
        call.extras["logprobs"] = body["logprobs"]
    rest = {k: v for k, v in body.items() if k not in _RESPONSE_FIELDS}
    if rest:
        call.extras["response"] = rest


# -- chat and generate ------------------------------------------------------------------------


class Chat(_NativeFamily):
    api = "ollama.chat"
    path = "/api/chat"
    key = b"message"
    operation = "chat"

    def _request_shape(self, request: dict[str, Json]) -> bool:
        return isinstance(request.get("messages"), list) and "contents" not in request

    def _request(self, request: dict[str, Json], call: Call) -> None:
        request_fields(request, call, ("messages", "tools"))
        messages = request.get("messages")
        if isinstance(messages, list):
            input_messages(messages, call)
        tools = request.get("tools")
        if isinstance(tools, list):
            call.tool_definitions.extend(tools)

    def _output(self, body: dict[str, Json]) -> Message:
        return message_of(body.get("message"), output=True)


class Generate(_NativeFamily):
    api = "ollama.generate"
    path = "/api/generate"
    key = b"response"
    operation = "text_completion"

    def _request_shape(self, request: dict[str, Json]) -> bool:
        return "prompt" in request or "messages" not in request

    def _request(self, request: dict[str, Json], call: Call) -> None:
        request_fields(request, call, ("prompt", "system", "images"))
        system = request.get("system")
        if isinstance(system, str) and system:
            call.system_instructions.append(TextPart(content=system))
        parts: list[Part] = []
        prompt = request.get("prompt")
        if isinstance(prompt, str):
            parts.append(TextPart(content=prompt))
        elif prompt is not None:
            parts.append(GenericPart(type="prompt", fields={"value": prompt}))
        parts.extend(image_parts(request.get("images")))
        if parts:
            call.input_messages.append(Message(role="user", parts=parts))

    def _output(self, body: dict[str, Json]) -> Message:
        parts: list[Part] = []
        thinking, text = body.get("thinking"), body.get("response")
        if isinstance(thinking, str) and thinking:
            parts.append(ReasoningPart(content=thinking))
        if isinstance(text, str) and text:
            parts.append(TextPart(content=text))
        return Message(role="assistant", parts=parts)


# -- streams ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Stream:
    """One pass over an NDJSON stream of chat or generate objects."""

    view: ExchangeView
    call: Call
    chat: bool
    parts: PartsAccumulator = field(init=False)
    done: dict[str, Json] | None = None
    cut: bool = False
    after_done: int = 0
    role: str | None = None
    tools: int = 0
    logprobs: list[Json] = field(default_factory=list)
    message_rest: dict[str, Json] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.parts = PartsAccumulator(location=f"{self.view.exchange.id} response")

    def run(self) -> None:
        view, call = self.view, self.call
        n = 0
        for item in view.events:
            if isinstance(item, Diagnostic):
                call.diagnostics.append(item)
                continue
            if not isinstance(item, JsonDocument):
                continue
            self._document(item, n)
            n += 1
        self._end()

    def _document(self, item: JsonDocument, n: int) -> None:
        if not item.complete:
            self.cut = True  # the body ended inside this line: not used
            return
        if self.done is not None:
            self.after_done += 1
            return
        try:
            chunk = item.value()
        except orjson.JSONDecodeError as exc:
            self._skip(item, n, f"is not JSON ({exc})")
            return
        if not isinstance(chunk, dict):
            self._skip(item, n, f"is JSON but not an object ({item.raw[:40]!r})")
            return
        call = self.call
        if chunk.get("error") is not None and call.error is None:
            call.error = error_of(chunk, None, f"stream event {n}")  # in-band: no status
        if call.response_model is None and isinstance(chunk.get("model"), str):
            call.response_model = chunk["model"] or None
        if self.chat:
            message = chunk.get("message")
            if isinstance(message, dict):
                self._fragment(message, item.ts)
        else:
            fragment = {"content": chunk.get("response")}
            if "thinking" in chunk:
                fragment["thinking"] = chunk["thinking"]
            self._fragment(fragment, item.ts)
        if isinstance(chunk.get("logprobs"), list):
            self.logprobs.extend(chunk["logprobs"])
        if chunk.get("done") is True:
            self.done = chunk

    def _fragment(self, message: dict[str, Json], ts: float) -> None:
        """One line's piece of the output message. The common line is a role and a text
        fragment: the rarer fields are looked at only when the line has them."""
        token = False
        if not message.keys() <= _PLAIN_FIELDS:
            token = self._rare(message)  # thinking first: it opens before the text
        content = message.get("content")
        if content and isinstance(content, str):
            self.parts.text("text", content)
            token = True
        if self.role is None and isinstance(message.get("role"), str):
            self.role = message["role"]
        if token and self.call.timing.first_token is None:
            self.call.timing.first_token = ts

    def _rare(self, message: dict[str, Json]) -> bool:
        """Thinking, tool calls, images and unknown fields of a line; True when it carried
        output."""
        acc = self.parts
        token = False
        thinking = message.get("thinking")
        if thinking and isinstance(thinking, str):
            acc.reasoning("thinking", thinking)
            token = True
        tool_calls = message.get("tool_calls")
        for tc in tool_calls if isinstance(tool_calls, list) else ():
            acc.whole(("tool_call", self.tools), tool_call_part(tc))
            self.tools += 1
            token = True
        for part in image_parts(message.get("images")):
            acc.whole(("image", self.tools), part)
            self.tools += 1
        if self.chat:
            for key, value in message.items():
                if key not in _CHUNK_MESSAGE_FIELDS:
                    self.message_rest[key] = value
        return token

    def _skip(self, item: JsonDocument, n: int, problem: str) -> None:
        self.call.diagnostics.append(
            Diagnostic(
                code="ollama.bad_chunk",
                message=f"stream event {n} {problem}: skipped",
                location=f"{self.view.exchange.id} response body byte {item.offset}",
            )
        )

    def _end(self) -> None:
        view, call = self.view, self.call
        parts = self.parts.parts()
        call.diagnostics.extend(self.parts.diagnostics)
        if self.message_rest:
            parts.append(GenericPart(type="message_fields", fields=self.message_rest))
        role = self.role if self.role is not None else (None if self.chat else "assistant")
        message = Message(role=role, parts=parts)
        if self.done is not None:
            final(self.done, call, message)
        elif parts:
            call.output_messages.append(message)
        if self.logprobs:
            call.extras["logprobs"] = self.logprobs
        if call.error is None:
            call.error = http_error(view, None) if (view.status or 0) >= 400 else None
        ended = self.done is not None or call.error is not None
        call.complete = view.exchange.complete and not self.cut and ended
        where = f"{view.exchange.id} response body"
        if view.exchange.complete and not ended:
            call.diagnostics.append(
                Diagnostic(
                    code="ollama.unfinished",
                    message='the stream ended without a "done": true line',
                    location=where,
                )
            )
        if self.after_done:
            call.diagnostics.append(
                Diagnostic(
                    code="ollama.after_done",
                    severity="info",
                    message=f'{self.after_done} line(s) after "done": true were ignored',
                    location=where,
                )
            )


CHAT = Chat()
GENERATE = Generate()
FAMILIES: tuple[ApiFamily, ...] = (CHAT, GENERATE, *ENDPOINT_FAMILIES)
