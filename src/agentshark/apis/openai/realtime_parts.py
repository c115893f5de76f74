"""OpenAI Realtime's items, content parts, audio and usage as normalized parts (the session
state machine is :mod:`agentshark.apis.openai.realtime`).

Audio is sent in base64 pieces, each padded on its own: a blob is their bytes joined (and
encoded again), with its size and, for 16-bit mono PCM, its duration at the session's output
rate (24 kHz unless the session says otherwise). The provider is named from the handshake's
host, none without a handshake (a message log).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from agentshark.apis.audio import audio_blob
from agentshark.apis.model import (
    BlobPart,
    GenericPart,
    Json,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    Usage,
    parse_arguments,
    tool_name,
)
from agentshark.model import Exchange

PCM_RATE = 24_000  # pcm16 at 24 kHz, mono: the Realtime API's audio format


def done_transcript(item: dict[str, Json] | None) -> str:
    content = item.get("content") if item else None
    if not isinstance(content, list):
        return ""
    return "".join(
        c["transcript"]
        for c in content
        if isinstance(c, dict) and isinstance(c.get("transcript"), str)
    )


def input_item(item: dict[str, Json]) -> Message | None:
    kind = item.get("type")
    if kind == "function_call_output":
        output = item.get("output")
        response: Json = output
        if isinstance(output, str):
            value, error = parse_arguments(output)
            response = value if error is None else output
        result = ToolCallResponsePart(id=str_or_none(item.get("call_id")), response=response)
        return Message(role="tool", parts=[result])
    if kind == "function_call":
        raw = item.get("arguments")
        return Message(role="assistant", parts=[function_call(item, str_or_none(raw) or "")])
    return Message(role=str_or_none(item.get("role")), parts=content_parts(item.get("content")))


def function_call(item: dict[str, Json], text: str) -> ToolCallPart:
    """A function call item with its arguments as sent (``text``; "" when none came)."""
    details: dict[str, Json] = {}
    args, error = parse_arguments(text) if text else (None, None)
    return ToolCallPart(
        id=str_or_none(item.get("call_id")),
        name=tool_name(item.get("name"), details),
        arguments=args,
        arguments_raw=text or None,
        arguments_error=error,
        provider_details=details,
    )


def content_parts(content: Json) -> list[Part]:
    if not isinstance(content, list):
        return []
    parts: list[Part] = []
    for c in content:
        if not isinstance(c, dict):
            parts.append(GenericPart(type="unknown", fields={"value": c}))
            continue
        kind = c.get("type")
        if kind in ("input_text", "text", "output_text") and isinstance(c.get("text"), str):
            parts.append(TextPart(content=c["text"]))
        elif kind in ("input_audio", "audio", "output_audio") and isinstance(c.get("audio"), str):
            part = audio_part([c["audio"]], {}, source=str(kind))
            if isinstance(c.get("transcript"), str):
                part.provider_details["transcript"] = c["transcript"]
            parts.append(part)
        else:
            parts.append(
                GenericPart(type=str(kind), fields={k: v for k, v in c.items() if k != "type"})
            )
    return parts


def audio_part(pieces: list[str], config: dict[str, Json], *, source: str) -> BlobPart:
    """Audio sent in base64 pieces: one blob (:func:`~agentshark.apis.audio.audio_blob`),
    its duration for pcm16 at the session's rate (24 kHz unless it says otherwise)."""
    fmt, rate = audio_format(config)
    pcm = fmt in (None, "pcm16", "audio/pcm")  # 16-bit mono samples
    details: dict[str, Json] = {"format": fmt} if fmt is not None else {}
    return audio_blob(
        pieces,
        mime="audio/pcm",
        source=source,
        rate=(rate or PCM_RATE) if pcm else None,
        details=details,
    )


def audio_format(config: dict[str, Json]) -> tuple[str | None, int | None]:
    """The session's output audio format and rate: beta ``output_audio_format`` ("pcm16"),
    GA ``audio.output.format`` ({type: "audio/pcm", rate: 24000})."""
    fmt = config.get("output_audio_format")
    if isinstance(fmt, str):
        return fmt, None
    audio = config.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    spec = output.get("format") if isinstance(output, dict) else None
    if isinstance(spec, dict):
        return str_or_none(spec.get("type")), int_or_none(spec.get("rate"))
    return None, None


def usage_of(raw: Json) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    details = raw.get("input_token_details")
    cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
    return Usage(
        input_tokens=int_or_none(raw.get("input_tokens")),
        output_tokens=int_or_none(raw.get("output_tokens")),
        cached_input_tokens=cached,
        total_tokens=int_or_none(raw.get("total_tokens")),
        raw=raw,
    )


def int_or_none(value: Json) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def str_or_none(value: Json) -> str | None:
    return value if isinstance(value, str) else None


# Hosts that speak the Realtime protocol, by the GenAI provider names (standards §1).
HOSTS = (
    ("api.openai.com", "openai"),
    (".openai.azure.com", "azure.openai"),
    (".services.ai.azure.com", "azure.ai.openai"),
    (".cognitiveservices.azure.com", "azure.ai.openai"),
    ("api.x.ai", "x_ai"),
)


def provider(ex: Exchange) -> str | None:
    """Who answered, from the handshake's host; None when the evidence has no handshake (a
    message log): the protocol alone does not say whose server it was."""
    if ex.request is None:
        return None
    host = (urlsplit(ex.request.url).hostname or "").lower()
    for suffix, name in HOSTS:
        if host == suffix.lstrip(".") or host.endswith(suffix):
            return name
    return host or None


def url_model(ex: Exchange) -> str | None:
    req = ex.request
    if req is None:
        return None
    values = parse_qs(urlsplit(req.url).query).get("model")
    return values[0] if values else None
