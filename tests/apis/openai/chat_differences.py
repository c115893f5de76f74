"""Justified differences between agentshark's Chat Completions calls and the openai SDK.

Each rule names one reason the two sides may disagree on a field, and a predicate that
recognizes exactly that situation from the evidence (the SDK's value, ours, the exchange).
The corpus test fails on any difference no rule explains, and on a rule nothing uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from agentshark.apis.model import Call
from agentshark.apis.view import ExchangeView


@dataclass
class Case:
    file: str
    index: int
    view: ExchangeView
    call: Call
    notes: set[str]


Predicate = Callable[[str, Any, Any, Case], bool]
RULES: dict[str, Predicate] = {}


def explain(name: str, sdk: Any, ours: Any, case: Case) -> str | None:
    """The rule that explains this difference, or None."""
    for rule, predicate in RULES.items():
        if predicate(name, sdk, ours, case):
            return rule
    return None


def rule(reason: str) -> Callable[[Predicate], Predicate]:
    def register(predicate: Predicate) -> Predicate:
        RULES[reason] = predicate
        return predicate

    return register


_USAGE = ("usage.input", "usage.output", "usage.cached", "usage.reasoning")


def _chunks(case: Case) -> list[Any]:
    """The JSON chunks of a stream (what the SDK's decoder would hand over)."""
    out = []
    for event in case.view.events:
        data = getattr(event, "data", None)
        if isinstance(data, str) and data.strip() not in ("", "[DONE]"):
            try:
                out.append(orjson.loads(data))
            except orjson.JSONDecodeError:
                continue
    return out


@rule(
    "the vendor repeats a tool call's id and name in every delta; the SDK concatenates "
    'them ("00", "llm_versionllm_version"), we keep the first value'
)
def repeated_tool_identity(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    if name != "tool_calls" or len(sdk) != len(ours):
        return False
    for theirs, mine in zip(sdk, ours, strict=True):
        for s, o in zip(theirs, mine, strict=True):
            if s == o:
                continue
            ids_and_names = zip(s[:2], o[:2], strict=True)
            repeated = all(a == b or (b and a == b * (len(a) // len(b))) for a, b in ids_and_names)
            if not (repeated and s[2] == o[2]):
                return False
    return True


@rule(
    "Groq streams put usage in the last chunk's x_groq.usage; the SDK reads only "
    "chunk.usage, we fall back to x_groq.usage"
)
def groq_stream_usage(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    return (
        name in _USAGE
        and sdk is None
        and any(
            isinstance(c, dict) and isinstance(c.get("x_groq"), dict) and "usage" in c["x_groq"]
            for c in _chunks(case)
        )
    )


@rule(
    "cached input tokens under a vendor's own name (Writer prompt_token_details, Mistral "
    "num_cached_tokens, DeepSeek prompt_cache_hit_tokens, Hugging Face usage.cached_tokens); "
    "the SDK reads only prompt_tokens_details.cached_tokens"
)
def vendor_cached_tokens(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    usage = case.call.usage
    raw = usage.raw if usage is not None else None
    if name != "usage.cached" or sdk is not None or not isinstance(raw, dict):
        return False
    details = raw.get("prompt_tokens_details")
    return not (isinstance(details, dict) and details.get("cached_tokens") is not None)


@rule(
    "the SDK keeps only the last chunk's usage: a chunk after the usage chunk (OpenAI's "
    "moderation results) resets it to None; we keep the last usage sent"
)
def last_chunk_usage(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    chunks = _chunks(case)
    return (
        name in _USAGE
        and sdk is None
        and bool(chunks)
        and isinstance(chunks[-1], dict)
        and chunks[-1].get("usage") is None
        and any(isinstance(c, dict) and c.get("usage") for c in chunks)
    )


@rule(
    "the SDK raises APIError at an in-band stream error and reads nothing after it; we "
    "keep what the error chunk carries too (OpenRouter sends the usage there)"
)
def stops_at_stream_error(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    error = case.call.error
    return (
        error is not None
        and error.source.startswith("stream event")
        and name in _USAGE
        and sdk is None
    )


@rule(
    "an error object in a 2xx body (Azure's content filter): the SDK raises only on HTTP "
    "status >= 400 and returns an empty completion, we report the error"
)
def error_in_2xx_body(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    status = case.view.status
    return name == "error" and sdk is None and status is not None and status < 400


@rule(
    "Mistral (Magistral) sends message.content as a list of thinking/text chunks; the SDK "
    "types content as a string and keeps the list, we read its text chunks"
)
def content_as_list(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    body = case.view.response_json
    choices = body.get("choices") if isinstance(body, dict) else None
    return (
        name == "text"
        and isinstance(choices, list)
        and any(isinstance((c.get("message") or {}).get("content"), list) for c in choices)
    )


@rule(
    'empty strings where a value belongs (Snowflake sends id "", model "", refusal "" and '
    'a function_call of "" name and arguments): the SDK keeps them, we report no value'
)
def empty_string_is_absent(name: str, sdk: Any, ours: Any, case: Case) -> bool:
    if name in ("response_id", "model"):
        return sdk == "" and ours is None
    if name == "function_call":  # Snowflake's placeholder {"name": "", "arguments": ""}
        return all(s == o or (s == ("", "") and o is None) for s, o in zip(sdk, ours, strict=True))
    if name == "refusal":
        return len(sdk) == len(ours) and all(
            s == o or (s == "" and o is None) for s, o in zip(sdk, ours, strict=True)
        )
    return False
