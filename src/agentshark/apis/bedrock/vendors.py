"""The model vendors' own InvokeModel bodies -> the call types.

InvokeModel carries the body of the model's vendor as is
(https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters.html). The response's
shape says which it is; the model id's vendor only breaks ties:

- Amazon Nova (``amazon.nova*``): Converse-shaped: ``output.message``, ``stopReason``,
  ``usage``; the request has ``messages``, ``system``, ``toolConfig``, ``inferenceConfig``.
- Amazon Titan Text: ``results[{outputText, tokenCount, completionReason}]``,
  ``inputTextTokenCount``; request ``inputText``, ``textGenerationConfig``.
- Meta Llama: ``generation``, ``stop_reason``, ``prompt_token_count``,
  ``generation_token_count``; request ``prompt``, ``max_gen_len``...
- Mistral (text models): ``outputs[{text, stop_reason}]``; request ``prompt``.
- Cohere Command: ``generations[{text, finish_reason}]``; request ``prompt``.
- Cohere Command R: ``text``, ``finish_reason``, ``tool_calls``, ``generation_id``; request
  ``message``, ``chat_history``, ``preamble``, ``tools``.
- AI21 Jurassic-2: ``completions[{data.text, finishReason.reason}]``; request ``prompt``.
- DeepSeek and the OpenAI-compatible bodies (Mistral Large, Jamba, gpt-oss, imported models):
  ``choices[{text | message, finish_reason | stop_reason}]``, ``usage``; request ``prompt``
  or ``messages``.
- Embeddings (Titan, Nova, Cohere Embed): ``embedding``, ``embeddings``, ``embeddingsByType``;
  request ``inputText``, ``texts``, ``singleEmbeddingParams``.

A body of none of these shapes stays whole: one output :class:`GenericPart` ``invoke_body``
holding the JSON as sent, and a diagnostic. Finish reasons are kept as sent (Titan ``FINISH``,
``LENGTH``, ``CONTENT_FILTERED``; Cohere ``COMPLETE``, ``MAX_TOKENS``; Llama ``stop``,
``length``...). Stream chunks of the text vendors have the whole body's shape, each with the
next piece of text: :func:`text_pieces` reads both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentshark.apis.bedrock.wire import count
from agentshark.apis.model import (
    Call,
    GenericPart,
    Json,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    Usage,
    parse_arguments,
    tool_name,
)

__all__ = [
    "Piece",
    "body_kind",
    "embeddings_summary",
    "parse_plain_request",
    "text_pieces",
    "vendor_usage",
]


@dataclass(frozen=True, slots=True)
class Piece:
    """One choice's text (or part) in a body or stream chunk."""

    index: int
    text: str | None = None
    reasoning: str | None = None
    finish: str | None = None
    part: Part | None = None  # a tool call or other whole part


def _s(value: Json) -> str | None:
    return value if isinstance(value, str) else None


def _index(item: dict[str, Json], default: int) -> int:
    value = count(item.get("index"))
    return value if value is not None else default


# -- response shapes --------------------------------------------------------------------------


def body_kind(body: Json) -> str | None:
    """Which vendor shape a response body (or stream chunk) has, or None."""
    if not isinstance(body, dict):
        return None
    for kind, test in _SHAPES:
        if test(body):
            return kind
    return None


def _list_of_dicts(value: Json) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


_SHAPES: tuple[tuple[str, Callable[[dict[str, Json]], bool]], ...] = (
    ("converse", lambda b: isinstance(b.get("output"), dict) and "message" in b["output"]),
    ("titan", lambda b: _list_of_dicts(b.get("results")) or "outputText" in b),
    ("llama", lambda b: isinstance(b.get("generation"), str)),
    ("mistral", lambda b: _list_of_dicts(b.get("outputs"))),
    ("cohere", lambda b: _list_of_dicts(b.get("generations"))),
    ("ai21", lambda b: _list_of_dicts(b.get("completions"))),
    ("choices", lambda b: _list_of_dicts(b.get("choices"))),
    ("cohere_chat", lambda b: isinstance(b.get("text"), str) and "chat_history" in b),
    ("cohere_chat", lambda b: isinstance(b.get("text"), str) and "finish_reason" in b),
    ("embeddings", lambda b: "embedding" in b or "embeddings" in b or "embeddingsByType" in b),
)


def text_pieces(kind: str, body: dict[str, Json]) -> list[Piece]:
    """The choices' text pieces of a text vendor's body or stream chunk."""
    match kind:
        case "titan":
            results = body.get("results")
            items = results if isinstance(results, list) else [body]
            return [
                Piece(
                    _index(r, i),
                    text=_s(r.get("outputText")),
                    finish=_s(r.get("completionReason")),
                )
                for i, r in enumerate(items)
                if isinstance(r, dict)
            ]
        case "llama":
            return [Piece(0, text=_s(body.get("generation")), finish=_s(body.get("stop_reason")))]
        case "mistral" | "cohere":
            outputs = body.get("outputs" if kind == "mistral" else "generations")
            assert isinstance(outputs, list)
            stop = "stop_reason" if kind == "mistral" else "finish_reason"
            return [
                Piece(_index(o, i), text=_s(o.get("text")), finish=_s(o.get(stop)))
                for i, o in enumerate(outputs)
                if isinstance(o, dict)
            ]
        case "ai21":
            return [_ai21(c, i) for i, c in enumerate(body["completions"]) if isinstance(c, dict)]
        case "choices":
            return [p for i, c in enumerate(body["choices"]) for p in _choice(c, i)]
        case "cohere_chat":
            return _cohere_chat(body)
    return []


def _ai21(completion: dict[str, Json], i: int) -> Piece:
    data, reason = completion.get("data"), completion.get("finishReason")
    text = data.get("text") if isinstance(data, dict) else None
    finish = reason.get("reason") if isinstance(reason, dict) else reason
    return Piece(i, text=_s(text), finish=_s(finish))


def _choice(choice: Json, i: int) -> list[Piece]:
    """An OpenAI-style choice: ``text`` (completion), ``message`` or ``delta`` (chat)."""
    if not isinstance(choice, dict):
        return []
    index = _index(choice, i)
    finish = _s(choice.get("finish_reason")) or _s(choice.get("stop_reason"))
    message = choice.get("message") or choice.get("delta")
    if not isinstance(message, dict):
        return [Piece(index, text=_s(choice.get("text")), finish=finish)]
    out = []
    reasoning = _s(message.get("reasoning_content")) or _s(message.get("reasoning"))
    if reasoning is not None:
        out.append(Piece(index, reasoning=reasoning))
    content = message.get("content")
    if isinstance(content, str) or content is None:
        out.append(Piece(index, text=content, finish=finish))
    else:
        out.append(Piece(index, part=GenericPart(type="content", fields={"value": content})))
        out.append(Piece(index, finish=finish))
    calls = message.get("tool_calls")
    out.extend(
        Piece(index, part=_openai_tool_call(c)) for c in (calls if isinstance(calls, list) else ())
    )
    return out


def _openai_tool_call(call: Json) -> Part:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(call, dict) or not isinstance(function, dict):
        return GenericPart(type="tool_call", fields={"value": call})
    details: dict[str, Json] = {}
    raw = function.get("arguments")
    part = ToolCallPart(
        id=_s(call.get("id")),
        name=tool_name(function.get("name"), details),
        provider_details=details,
    )
    if isinstance(raw, str):
        part.arguments_raw = raw
        part.arguments, part.arguments_error = parse_arguments(raw)
    else:
        part.arguments = raw
    return part


def _cohere_chat(body: dict[str, Json]) -> list[Piece]:
    out = [Piece(0, text=_s(body.get("text")), finish=_s(body.get("finish_reason")))]
    calls = body.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            details: dict[str, Json] = {}
            name = tool_name(call.get("name"), details)
            part = ToolCallPart(
                id=None, name=name, arguments=call.get("parameters"), provider_details=details
            )
            out.append(Piece(0, part=part))
    return out


# -- usage ------------------------------------------------------------------------------------


def vendor_usage(kind: str, body: dict[str, Json]) -> Usage | None:
    """Usage a vendor body reports in its own terms, or None."""
    raw: dict[str, Json] = {}
    given = out = None
    if kind == "titan":
        given = count(body.get("inputTextTokenCount"))
        results = body.get("results")
        counts = [count(r.get("tokenCount")) for r in results or [] if isinstance(r, dict)]
        out = sum(c for c in counts if c is not None) if counts and None not in counts else None
        out = out if out is not None else count(body.get("totalOutputTextTokenCount"))
        raw = {
            k: body[k] for k in ("inputTextTokenCount", "totalOutputTextTokenCount") if k in body
        }
    elif kind == "llama":
        given, out = (
            count(body.get("prompt_token_count")),
            count(body.get("generation_token_count")),
        )
        raw = {k: body[k] for k in ("prompt_token_count", "generation_token_count") if k in body}
    elif isinstance(body.get("usage"), dict):  # OpenAI-compatible
        raw = body["usage"]
        given, out = count(raw.get("prompt_tokens")), count(raw.get("completion_tokens"))
        total = count(raw.get("total_tokens"))
        return Usage(input_tokens=given, output_tokens=out, total_tokens=total, raw=raw)
    elif isinstance(meta := body.get("meta"), dict) and isinstance(meta.get("billed_units"), dict):
        raw = meta["billed_units"]  # Cohere
        given, out = count(raw.get("input_tokens")), count(raw.get("output_tokens"))
    if not raw:
        return None
    return Usage(input_tokens=given, output_tokens=out, raw=raw)


def embeddings_summary(body: dict[str, Json]) -> dict[str, Json]:
    """How many vectors of what size an embeddings body holds (the vectors stay out)."""
    vectors: Json = []
    embeddings = body.get("embeddings")
    if isinstance(body.get("embedding"), list):
        vectors = [body["embedding"]]
    elif isinstance(embeddings, list):
        vectors = [e.get("embedding") if isinstance(e, dict) else e for e in embeddings]
    elif isinstance(embeddings, dict):  # Cohere embedding_types: {"float": [[...]]}
        vectors = next((v for v in embeddings.values() if isinstance(v, list)), [])
    summary: dict[str, Json] = {"vectors": len(vectors)}
    if vectors and isinstance(vectors[0], list):
        summary["dimensions"] = len(vectors[0])
    return summary


# -- requests ---------------------------------------------------------------------------------

_INPUTS = ("prompt", "inputText", "message")  # one user text
_EMBED_INPUTS = ("texts", "images", "singleEmbeddingParams", "inputImage")


def parse_plain_request(body: dict[str, Json], call: Call) -> None:
    """A vendor request that is not Converse-shaped: the prompt (``prompt``, ``inputText``,
    Cohere's ``message`` after its ``chat_history`` and ``preamble``) as a user message,
    OpenAI-style ``messages``, ``tools`` as sent; Titan's ``textGenerationConfig`` flattened
    into the parameters, like every other member; embedding inputs under
    ``extras["request"]``."""
    extras: dict[str, Json] = {}
    history: list[Message] = []
    for key, value in body.items():
        if key in _INPUTS and isinstance(value, str) and call.operation != "embeddings":
            call.input_messages.append(Message(role="user", parts=[TextPart(content=value)]))
        elif key == "messages" and isinstance(value, list):
            history.extend(_openai_message(m, i, extras) for i, m in enumerate(value))
        elif key == "chat_history" and isinstance(value, list):
            history.extend(_cohere_message(m) for m in value)
        elif key == "preamble" and isinstance(value, str):
            call.system_instructions = [TextPart(content=value)]
        elif key == "tools" and isinstance(value, list):
            call.tool_definitions = value
        elif key == "textGenerationConfig" and isinstance(value, dict):
            call.request_params.update(value)
        elif key in _INPUTS or key in _EMBED_INPUTS or key == "tool_results":
            extras[key] = value
        else:
            call.request_params[key] = value
    call.input_messages[:0] = [m for m in history if m.role is not None or m.parts]
    if extras:
        call.extras["request"] = extras


def _openai_message(item: Json, i: int, extras: dict[str, Json]) -> Message:
    if not isinstance(item, dict):
        extras[f"messages[{i}]"] = item
        return Message(role=None)
    role = _s(item.get("role"))
    parts: list[Part] = []
    content = item.get("content")
    if isinstance(content, str):
        parts.append(TextPart(content=content))
    elif isinstance(content, list):
        for block in content:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and block.get("type", "text") == "text":
                parts.append(TextPart(content=text))
            else:
                parts.append(GenericPart(type="content", fields={"value": block}))
    if isinstance(reasoning := item.get("reasoning_content"), str):
        parts.insert(0, ReasoningPart(content=reasoning))
    calls = item.get("tool_calls")
    parts.extend(_openai_tool_call(c) for c in (calls if isinstance(calls, list) else ()))
    if role == "tool":
        parts = [ToolCallResponsePart(id=_s(item.get("tool_call_id")), response=content)]
    return Message(role=role, parts=parts)


def _cohere_message(item: Json) -> Message:
    if not isinstance(item, dict):
        return Message(role=None, parts=[GenericPart(type="content", fields={"value": item})])
    text = item.get("message")
    parts: list[Part] = [TextPart(content=text)] if isinstance(text, str) else []
    return Message(role=_s(item.get("role")), parts=parts)
