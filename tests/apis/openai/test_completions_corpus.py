"""Corpus oracle: every legacy Completions exchange (``POST .../completions``) of
``../shared/corpus`` against the ``openai`` SDK.

Every corpus file with a ``/completions`` endpoint (not ``/chat/completions``: OpenAI,
vLLM on ``localhost:8000``, Writer, Together) is recognized with the whole registry; each
``openai.completions`` call is compared with what the SDK makes of the same bytes, as its
client reads them: a whole body ``construct_type(Completion, body)`` (the client's lenient
reading), a stream through the SDK's ``SSEDecoder`` with its ``Stream`` rules (``[DONE]``
ends it, an ``error`` chunk raises), each chunk a ``Completion``, folded here as a caller
folds them (texts per choice index, the last finish reason, the logprobs lists
concatenated, the last usage). An error status: the body's ``error.message``.

Per field, agreement is counted; a difference must be listed with its reason in
``completions_differences.DIFFERENCES``. Run with ``-s`` to see the table.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai.types import Completion

from agentshark.apis.model import Call, TextPart
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from tests.apis.corpus_cases import Agreement, entries, exchanges
from tests.apis.openai.completions_differences import DIFFERENCES

FILES = entries(lambda e: e.endswith("/completions") and not e.endswith("/chat/completions"))
pytestmark = pytest.mark.skipif(not FILES, reason="no corpus")
_LISTS = ("tokens", "token_logprobs", "top_logprobs", "text_offset")


def _sdk(view: ExchangeView) -> dict[str, Any]:
    status = view.status or 0
    if status >= 400:
        body = json.loads(view.response_body)
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        return {"error": message, "complete": True}
    chunks: list[Any] = []
    complete = True
    if view.framing == "sse":
        complete = False
        for sse in SSEDecoder().iter_bytes(iter([view.response_body])):
            if sse.data.startswith("[DONE]"):
                complete = True
                break
            if sse.data:
                chunks.append(construct_type(type_=Completion, value=sse.json()))
    else:
        chunks.append(construct_type(type_=Completion, value=json.loads(view.response_body)))
    texts: dict[int, str] = {}
    finish: dict[int, Any] = {}
    logprobs: dict[int, dict[str, Any]] = {}
    usage = None
    for c in chunks:
        usage = c.usage or usage
        for position, choice in enumerate(c.choices or []):
            index = choice.index if isinstance(choice.index, int) else position
            texts[index] = texts.get(index, "") + (choice.text or "")
            finish[index] = choice.finish_reason or finish.get(index)
            if choice.logprobs is not None:
                folded = logprobs.setdefault(index, {})
                for name, value in choice.logprobs.to_dict().items():
                    folded[name] = folded.get(name, []) + value if name in _LISTS else value
    order = sorted(texts.keys() | finish.keys())
    return {
        "id": chunks[0].id if chunks else None,
        "model": chunks[0].model if chunks else None,
        "texts": [texts.get(i, "") for i in order],
        "finish_reasons": [finish.get(i) for i in order],
        "logprobs": {str(i): logprobs[i] for i in sorted(logprobs)},
        "input_tokens": usage.prompt_tokens if usage else None,
        "output_tokens": usage.completion_tokens if usage else None,
        "total_tokens": usage.total_tokens if usage else None,
        "error": None,
        "complete": complete,
    }


def _ours(call: Call) -> dict[str, Any]:
    if call.error is not None and call.error.status is not None:
        return {"error": call.error.message, "complete": call.complete}
    choices = call.extras.get("choices", {})
    return {
        "id": call.response_id,
        "model": call.response_model,
        "texts": [
            "".join(p.content for p in m.parts if isinstance(p, TextPart))
            for m in call.output_messages
        ],
        "finish_reasons": [m.finish_reason for m in call.output_messages],
        "logprobs": {k: v["logprobs"] for k, v in choices.items() if "logprobs" in v},
        "input_tokens": call.usage.input_tokens if call.usage else None,
        "output_tokens": call.usage.output_tokens if call.usage else None,
        "total_tokens": call.usage.total_tokens if call.usage else None,
        "error": call.error.message if call.error is not None else None,
        "complete": call.complete,
    }


@functools.cache
def _everything() -> tuple[Agreement, dict[str, list[Call | None]]]:
    result = Agreement()
    calls: dict[str, list[Call | None]] = {}
    for file in FILES:
        calls[file] = []
        for x in exchanges(file):
            call = recognize(x, "k1")
            calls[file].append(call)
            if call is None or call.api != "openai.completions":
                continue
            theirs, mine = _sdk(ExchangeView(x)), _ours(call)
            result.compare(file, x.id, {k: (mine.get(k), v) for k, v in theirs.items()})
    return result, calls


@pytest.mark.parametrize("file", FILES)
def test_corpus_file_agrees_with_sdk(file: str) -> None:
    result, calls = _everything()
    assert [d for d in result.unexplained(DIFFERENCES) if d[0] == file] == []
    for x, call in zip(exchanges(file), calls[file], strict=True):
        url = x.request.url.split("?")[0] if x.request is not None else ""
        if url.endswith("/completions") and not url.endswith("/chat/completions"):
            assert call is not None and call.api == "openai.completions", x.id


def test_agreement_table() -> None:
    result, _ = _everything()
    print("\n" + result.table(f"{result.calls} legacy completions compared with the openai SDK"))
    assert result.calls >= 70
    assert not result.stale(DIFFERENCES)
    assert result.unexplained(DIFFERENCES) == []
    assert result.ratio() >= 0.995
