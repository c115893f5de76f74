"""OpenAI Chat Completions, and every service that speaks it, -> :class:`Call`.

One family, ``openai.chat``, for ``POST .../chat/completions`` wherever it is served: OpenAI,
Azure OpenAI (``/openai/deployments/<name>/chat/completions?api-version=``), gateways that
put the upstream in the path, and the OpenAI-compatible vendors (Groq, Mistral, DeepSeek,
OpenRouter, xAI, Together, vLLM, Ollama's ``/v1``...), the vendor named in ``provider``.
The embeddings and models endpoints are recognized and named by
:mod:`agentshark.apis.openai.endpoints`, the legacy completions parsed by
:mod:`agentshark.apis.openai.completions`; :data:`FAMILIES` lists them all.

This module recognizes and reads the request and a JSON response;
:mod:`~agentshark.apis.openai.chat_messages` translates message objects into parts,
:mod:`~agentshark.apis.openai.chat_stream` folds a stream of chunks, and
:mod:`~agentshark.apis.openai.common` (shared with the Responses family) names the provider
and reads errors and usage.

Recognition weighs the request body (a ``messages`` array of role items), then the
response (``choices[].message``, or ``chat.completion.chunk`` / ``choices[].delta`` chunks),
then the path, then content types; the host only names the provider. Anthropic Messages,
OpenAI Responses, Gemini, Bedrock and Ollama's native API are refused outright.

Decisions, so a reader need not guess:

- **System instructions.** The leading ``system``/``developer`` messages become
  ``system_instructions`` (as the contract and the other families have them; a developer
  message's parts say ``provider_details.role = "developer"``). A system message *after*
  the conversation started stays in ``input_messages`` where it was: OTel GenAI wants
  instructions that are part of the history recorded in the history, in order.
- **Tool results** (``role: "tool"``, legacy ``role: "function"``) are a
  ``tool_call_response`` part whose ``response`` is ``content`` as sent (a string is not
  JSON-parsed: it is what the model read; a parts array stays an array).
- **Completeness.** A JSON body: the HTTP exchange is complete and the body parsed. A stream:
  the HTTP exchange is complete, no event was cut, and either an in-band error arrived or
  every choice got a finish reason (``[DONE]`` is expected; a stream that ends cleanly
  without it, as Writer's do, is complete and gets an ``info`` diagnostic). A missing
  finish reason stays None; ``""`` in a stream chunk means "not yet" (as in the SDK).
- **Where values came from**: ids carry JSON paths in ``id_sources``; stream errors say
  ``stream event N`` (N counts the SSE events of the body from 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshark.apis.model import Call, Json
from agentshark.apis.openai.chat_messages import (
    choice_index,
    input_messages,
    output_message,
    usage_raw,
)
from agentshark.apis.openai.chat_stream import RESPONSE_FIELDS, parse_stream
from agentshark.apis.openai.common import (
    app_ids,
    error_from_json,
    http_error,
    provider_name,
    usage_from,
)
from agentshark.apis.openai.completions import COMPLETIONS
from agentshark.apis.openai.endpoints import EMBEDDINGS, MODELS, server_by_schema
from agentshark.apis.view import ExchangeView, json_failure
from agentshark.errors import Diagnostic

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Request fields that are sampling, limit, output or dialect parameters (-> request_params).
_PARAMS = _words(
    # OpenAI
    "temperature top_p max_tokens max_completion_tokens stop seed n response_format "
    "reasoning_effort logprobs top_logprobs presence_penalty frequency_penalty logit_bias "
    "parallel_tool_calls tool_choice function_call stream_options user metadata store "
    "service_tier prediction modalities audio verbosity web_search_options prompt_cache_key "
    "prompt_cache_retention safety_identifier "
    # dialects: thinking switches (DeepSeek, DashScope, Z.ai), OpenRouter, Groq, Ollama,
    # vLLM/TGI sampling, Mistral
    "thinking enable_thinking thinking_budget reasoning reasoning_format include_reasoning "
    "options num_ctx keep_alive top_k min_p top_a repetition_penalty random_seed safe_prompt "
    "prompt_mode clear_thinking chat_template_kwargs max_new_tokens"
)
_REQUEST_FIELDS = frozenset(("model", "messages", "tools", "functions", "stream"))


# -- recognition ----------------------------------------------------------------------------


def _foreign(view: ExchangeView, path: str) -> bool:
    """Shapes of other APIs that also carry ``messages`` or ``choices``-free JSON."""
    if path.endswith(("/messages", "/responses", "/api/chat", "/api/generate")):
        return True
    if "/responses/" in path or ":generatecontent" in path or ":streamgeneratecontent" in path:
        return True
    if "rawpredict" in path or ("/model/" in path and ("/converse" in path or "/invoke" in path)):
        return True
    if view.anthropic_version is not None:
        return True
    request, response = view.request_json, view.response_json
    return (isinstance(request, dict) and "input" in request and "messages" not in request) or (
        isinstance(response, dict) and response.get("object") == "response"
    )


def _request_shape(body: Json) -> bool:
    if not isinstance(body, dict):
        return False
    messages = body.get("messages")
    return (
        isinstance(messages, list)
        and all(isinstance(m, dict) and "role" in m for m in messages)
        and "input" not in body
        and "contents" not in body
    )


def _response_shape(view: ExchangeView) -> bool:
    body = view.response_json
    if isinstance(body, dict):
        if body.get("object") == "chat.completion":
            return True
        choices = body.get("choices")
        return isinstance(choices, list) and any(
            isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices
        )
    if body is not None:
        return False
    head = view.response_body[:8192]
    return b"chat.completion.chunk" in head or (b'"choices"' in head and b'"delta"' in head)


class ChatCompletions:
    """The ``openai.chat`` family."""

    api = "openai.chat"

    def match(self, view: ExchangeView) -> float:
        path = view.path.lower()
        if view.method.upper() != "POST" or _foreign(view, path):
            return -1.0
        request = _request_shape(view.request_json)
        response = _response_shape(view)
        on_path = "/chat/completions" in path
        if not (response or on_path):
            return 0.0  # a messages array alone (Cohere, Ollama native...) is not enough
        score = 0.4 * request + 0.4 * response + 0.15 * on_path
        if view.response_content_type.startswith(("application/json", "text/event-stream")):
            score += 0.05
        return score

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "chat"
        request = view.request_json
        if isinstance(request, dict):
            _parse_request(request, call)
        complete = view.exchange.complete
        if view.framing == "sse":
            call.stream = True
            extras = parse_stream(view, call, complete=complete)
        else:
            body = view.response_json
            extras = body if isinstance(body, dict) else {}
            call.error = http_error(view, body) or (
                error_from_json(body, view.status, "body") if "choices" not in extras else None
            )
            if extras:
                _parse_completion(extras, call)
            elif call.error is None and view.response_body.strip():
                call.diagnostics.append(
                    _diag(
                        view,
                        "openai_chat.unexpected_body",
                        f"the response body is {json_failure(view.response_body)}",
                    )
                )
                complete = False
            call.complete = complete and view.exchange.response is not None
        call.provider = provider_name(view, extras)
        if call.provider in (None, view.host):
            call.provider = server_by_schema(extras, call.extras.get("choices")) or call.provider
        call.finish_reasons = [m.finish_reason for m in call.output_messages if m.finish_reason]


def _diag(view: ExchangeView, code: str, message: str, where: str = "response body") -> Diagnostic:
    return Diagnostic(code=code, message=message, location=f"{view.exchange.id} {where}")


# -- request and JSON response ---------------------------------------------------------------


def _parse_request(request: dict[str, Json], call: Call) -> None:
    model = request.get("model")
    call.request_model = model if isinstance(model, str) else None
    call.stream = request.get("stream") is True
    messages = request.get("messages")
    if isinstance(messages, list):
        input_messages(messages, call)
    for key in ("tools", "functions"):  # functions: the legacy form, kept as sent too
        tools = request.get(key)
        if isinstance(tools, list):
            call.tool_definitions.extend(tools)
    other: dict[str, Json] = {}
    for key, value in request.items():
        if key in _PARAMS:
            call.request_params[key] = value
        elif key not in _REQUEST_FIELDS:
            other[key] = value
    if other:
        call.extras["request"] = other
    app_ids(request, call)


def _parse_completion(body: dict[str, Json], call: Call) -> None:
    response_id, model = body.get("id"), body.get("model")
    call.response_id = response_id if isinstance(response_id, str) and response_id else None
    call.response_model = model if isinstance(model, str) and model else None
    choices = body.get("choices")
    per_choice: dict[str, Json] = {}
    if isinstance(choices, list):
        ordered = sorted(enumerate(choices), key=lambda ic: choice_index(ic[1], ic[0]))
        for position, choice in ordered:
            if not isinstance(choice, dict):
                continue
            message, rest = output_message(choice)
            call.output_messages.append(message)
            if rest:
                per_choice[str(choice_index(choice, position))] = rest
    call.usage = usage_from(usage_raw(body))
    rest = {k: v for k, v in body.items() if k not in RESPONSE_FIELDS}
    if rest:
        call.extras["response"] = rest
    if per_choice:
        call.extras["choices"] = per_choice
    if "error" in body and body["error"] is not None:
        call.extras["error"] = body["error"]


CHAT = ChatCompletions()
FAMILIES: tuple[ApiFamily, ...] = (CHAT, EMBEDDINGS, COMPLETIONS, MODELS)
