"""Bedrock Converse and ConverseStream (``bedrock.converse``, operation ``chat``).

``POST /model/{modelId}/converse`` answers one JSON ``ConverseResponse``
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
``output.message`` (``role``, ``content`` blocks), ``stopReason``, ``usage``,
``metrics.latencyMs``, and ``trace`` (guardrail assessments, prompt router),
``additionalModelResponseFields``, ``performanceConfig``, ``serviceTier`` when asked for.
``/converse-stream`` answers an AWS event stream of the same content in events
(:mod:`~agentshark.apis.bedrock.stream`); an exception message in it is the call's error.

Recognition is by path: ``/model/{id}/converse[-stream]`` names this API and no other; the
request body (Converse ``messages`` of content-block unions) and the response confirm it.

Normalization: the model is the URL's model id, decoded (Converse responses name none and
carry no response id; the request id is the ``x-amzn-RequestId`` header); ``stopReason`` is
the finish reason as sent (``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence``,
``guardrail_intervened``, ``content_filtered``, ``malformed_model_output``,
``malformed_tool_use``, ``model_context_window_exceeded``...), as Anthropic's ``stop_reason``
is; ``metrics``, ``trace`` and the other members with no normalized place are kept under
``extras["response"]``; usage ``input_tokens`` includes the cache reads and writes.
"""

from __future__ import annotations

from collections.abc import Callable

from agentshark.apis.bedrock.content import content_parts, parse_messages_request
from agentshark.apis.bedrock.stream import ConverseStream
from agentshark.apis.bedrock.wire import (
    PROVIDER,
    error_of,
    exception_error,
    json_object,
    messages,
    route_of,
    usage_of,
)
from agentshark.apis.family import ApiFamily
from agentshark.apis.model import Call, Json, Message
from agentshark.apis.view import ExchangeView, json_failure
from agentshark.errors import Diagnostic

__all__ = [
    "FAMILIES",
    "ConverseFamily",
    "converse_body",
    "finish",
    "parse_request_body",
    "response_not_recognized",
]

_RESPONSE_FIELDS = frozenset({"output", "stopReason", "usage"})


class ConverseFamily:
    api: str = "bedrock.converse"

    def match(self, view: ExchangeView) -> float:
        route = route_of(view)
        if route is None or route.operation not in ("converse", "converse-stream"):
            return -1.0
        return 0.95  # the path names this API alone

    def parse(self, view: ExchangeView, call: Call) -> None:
        route = route_of(view)
        assert route is not None
        call.provider, call.operation = PROVIDER, "chat"
        call.request_model, call.stream = route.model, route.stream
        parse_request_body(view, call, parse_messages_request)
        if view.framing == "aws-eventstream":
            _parse_stream(view, call)
            return
        body = view.response_json
        parsed = False
        if view.status is not None and view.status >= 400:
            call.error = error_of(view)
            parsed = True
        elif isinstance(body, dict):
            parsed = converse_body(body, call)
        if not parsed:
            response_not_recognized(view, call, body)
        call.complete = parsed and view.exchange.complete


FAMILIES: tuple[ApiFamily, ...] = (ConverseFamily(),)


def parse_request_body(
    view: ExchangeView, call: Call, parse: Callable[[dict[str, Json], Call], None]
) -> None:
    """The request body through ``parse``; a body that is not a JSON object is a diagnostic
    and kept under ``extras["request"]``."""
    body = view.request_json
    if isinstance(body, dict):
        parse(body, call)
    elif view.request_body:
        call.extras["request"] = {"body": view.request_body[:4096].decode("utf-8", "replace")}
        call.diagnostics.append(
            Diagnostic(
                code="bedrock.request_not_json",
                location=f"{view.exchange.id} request body",
                message="the request body is not a JSON object: kept under extras.request",
            )
        )


def response_not_recognized(view: ExchangeView, call: Call, body: Json) -> None:
    if not view.response_body:
        return
    call.diagnostics.append(
        Diagnostic(
            code="bedrock.response_not_recognized",
            location=f"{view.exchange.id} response body",
            message=f"the response body is not the {call.api} response shape"
            + ("" if body is not None else f": it is {json_failure(view.response_body)}"),
        )
    )
    if isinstance(body, dict):
        call.extras["response"] = body


def converse_body(body: dict[str, Json], call: Call) -> bool:
    output = body.get("output")
    message = output.get("message") if isinstance(output, dict) else None
    if not isinstance(message, dict):
        return False
    role = message.get("role")
    stop = body.get("stopReason")
    stop = stop if isinstance(stop, str) else None
    call.output_messages = [
        Message(
            role=role if isinstance(role, str) else None,
            parts=content_parts(message.get("content")),
            finish_reason=stop,
        )
    ]
    call.finish_reasons = [stop] if stop is not None else []
    usage = body.get("usage")
    call.usage = usage_of(usage) if isinstance(usage, dict) else None
    extras = {k: v for k, v in body.items() if k not in _RESPONSE_FIELDS and v is not None}
    if isinstance(output, dict) and len(output) > 1:
        extras["output"] = {k: v for k, v in output.items() if k != "message"}
    if extras:
        call.extras["response"] = extras
    return True


def _parse_stream(view: ExchangeView, call: Call) -> None:
    location = f"{view.exchange.id} response"
    stream = ConverseStream(location=location)
    call.stream = True
    for n, msg in messages(view, call.diagnostics):
        if msg.message_type in ("exception", "error"):
            stream.error_event(exception_error(msg, n), n)
            continue
        data = json_object(msg.payload)
        name = msg.event_type
        if data is None or name is None:
            call.diagnostics.append(
                Diagnostic(
                    code="bedrock.stream.bad_event",
                    location=f"{location} stream event {n} byte {msg.offset}",
                    message=f"stream event {n} has no :event-type or its payload is not a "
                    "JSON object: skipped",
                )
            )
            continue
        stream.feed(name, data, n=n, ts=msg.ts)
    finish(stream, call)
    call.complete = stream.ended and view.exchange.complete


def finish(stream: ConverseStream, call: Call) -> None:
    """What a folded Converse-shaped stream says, into ``call``."""
    parts = stream.parts()
    stream.tool_arguments(parts)
    if stream.started or parts:
        call.output_messages = [
            Message(role=stream.role, parts=parts, finish_reason=stream.stop_reason)
        ]
    call.finish_reasons = [stream.stop_reason] if stream.stop_reason is not None else []
    call.usage = usage_of(stream.usage) if stream.usage is not None else None
    call.error = stream.error
    call.timing.first_token = stream.first_token
    if stream.extras:
        call.extras.setdefault("response", {}).update(stream.extras)
    call.diagnostics.extend(stream.diagnostics)
