"""Corpus oracle: every Chat Completions exchange of ``../shared/corpus``, normalized by
agentshark and parsed by the official ``openai`` SDK, must agree field by field.

The exchanges are those of every manifest entry whose ``api_families`` include
``openai-chat`` or ``openai-compatible:*``; the ones :mod:`agentshark.apis.openai.chat`
claims as ``openai.chat`` are compared (and every ``POST .../chat/completions`` exchange
must be claimed). The SDK side does what the SDK does on the wire:

- a JSON body: ``ChatCompletion.model_validate`` (falling back to the lenient
  ``construct_type`` the client itself uses, when a vendor's body fails validation);
- a stream: the SDK's own ``SSEDecoder`` over the raw bytes, its ``Stream.__stream__`` rules
  (stop at ``[DONE]``, an ``error`` in a chunk raises ``APIError``), and every chunk folded by
  ``ChatCompletionStreamState`` (the SDK's ``accumulate_delta``);
- an HTTP error: the client's ``_make_status_error_from_response``.

Differences must be explained by a rule of :mod:`tests.apis.openai.chat_differences`.
``python -m tests.apis.openai.test_chat_corpus`` prints the agreement table.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import httpx2
import openai
import pytest
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentshark.apis.model import Call, ReasoningPart, TextPart, ToolCallPart
from agentshark.apis.openai.chat import FAMILIES
from agentshark.apis.registry import recognize
from agentshark.apis.view import ExchangeView
from agentshark.errors import InputError
from agentshark.model import Exchange
from agentshark.sources.detect import SNIFF_BYTES, classify_document, sniff_format
from agentshark.sources.har import read_har
from agentshark.sources.vcr import read_vcr
from tests.apis.openai.chat_differences import Case, explain
from tests.helpers import CORPUS

MANIFEST = CORPUS / "manifest.jsonl"
FIELDS = (
    "choices",
    "text",
    "reasoning",
    "refusal",
    "tool_calls",
    "function_call",
    "finish_reason",
    "usage.input",
    "usage.output",
    "usage.cached",
    "usage.reasoning",
    "response_id",
    "model",
    "error",
)


def _chat_family(entry: dict[str, Any]) -> str | None:
    names = sorted(
        k for k in entry["api_families"] if k == "openai-chat" or k.startswith("openai-compatible")
    )
    return "+".join(names) or None


def _ids() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"e{next(counter)}"


@functools.cache
def corpus() -> list[tuple[str, str, int, Exchange]]:
    """(family label, file, interaction index, exchange) for every exchange to compare."""
    if not MANIFEST.exists():
        return []
    out = []
    for line in MANIFEST.read_text().splitlines():
        entry = json.loads(line)
        family = _chat_family(entry)
        if family is None:
            continue
        data = (CORPUS / entry["file"]).read_bytes()
        if sniff_format(data[:SNIFF_BYTES]) in ("pcap", "pcapng"):
            continue
        try:
            kind, doc = classify_document(data, entry["file"])
        except InputError:
            continue  # response-only fixtures: no exchange to recognize
        reader = read_har if kind == "har" else read_vcr
        items = reader(doc, entry["file"], 0, _ids())
        for i, x in enumerate(items):
            if isinstance(x, Exchange):
                out.append((family, entry["file"], i, x))
    return out


# -- one comparable shape for both sides ----------------------------------------------------


@dataclass
class Choice:
    text: str = ""
    reasoning: dict[str, str] = field(default_factory=dict)
    refusal: str | None = None
    tool_calls: list[tuple[Any, Any, Any]] = field(default_factory=list)  # id, name, args
    function_call: tuple[str | None, str | None] | None = None
    finish_reason: str | None = None


@dataclass
class Side:
    choices: list[Choice] = field(default_factory=list)
    usage: tuple[int | None, int | None, int | None, int | None] = (None, None, None, None)
    response_id: str | None = None
    model: str | None = None
    error: tuple[str | None, str | None, str | None] | None = None  # type, code, message
    notes: set[str] = field(default_factory=set)

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "choices": len(self.choices),
            "usage.input": self.usage[0],
            "usage.output": self.usage[1],
            "usage.cached": self.usage[2],
            "usage.reasoning": self.usage[3],
            "response_id": self.response_id,
            "model": self.model,
            "error": self.error,
        }
        for name in (
            "text",
            "reasoning",
            "refusal",
            "tool_calls",
            "function_call",
            "finish_reason",
        ):
            out[name] = [getattr(c, name) for c in self.choices]
        return out


def ours(call: Call) -> Side:
    side = Side(response_id=call.response_id, model=call.response_model)
    for m in call.output_messages:
        c = Choice(finish_reason=m.finish_reason)
        for p in m.parts:
            if isinstance(p, TextPart):
                c.text += p.content
            elif isinstance(p, ReasoningPart):
                name = p.provider_details.get("field")
                if isinstance(name, str):
                    c.reasoning[name] = c.reasoning.get(name, "") + p.content
            elif isinstance(p, ToolCallPart):
                if p.provider_details.get("legacy") == "function_call":
                    c.function_call = (p.name, p.arguments_raw)
                else:
                    c.tool_calls.append((p.id, p.name, p.arguments_raw))
            elif p.type == "refusal":
                c.refusal = p.fields["refusal"]  # type: ignore[union-attr]
        side.choices.append(c)
    if call.usage is not None:
        u = call.usage
        side.usage = (u.input_tokens, u.output_tokens, u.cached_input_tokens, u.reasoning_tokens)
    if call.error is not None:
        side.error = (call.error.type, call.error.code, call.error.message)
    return side


def _sdk_choice(message: Any, finish: Any) -> Choice:
    c = Choice(finish_reason=finish)
    if message is None:  # a vendor choice without one, constructed leniently
        return c
    extra = message.model_extra or {}
    content = message.content
    if isinstance(content, str):
        c.text = content
    elif content is not None:
        c.text = repr(content)  # a list the SDK does not read (explained by a rule)
    for name in ("reasoning_content", "reasoning"):
        if isinstance(extra.get(name), str) and extra[name]:
            c.reasoning[name] = extra[name]
    c.refusal = message.refusal
    for tc in message.tool_calls or ():
        fn = getattr(tc, "function", None)
        if isinstance(tc, dict):  # construct_type leaves unknown shapes as dicts
            fn = tc.get("function") or {}
            c.tool_calls.append((tc.get("id"), fn.get("name"), fn.get("arguments")))
        else:
            c.tool_calls.append((tc.id, fn.name if fn else None, fn.arguments if fn else None))
    fc = message.function_call
    if fc is not None:
        c.function_call = (fc.name, fc.arguments)
    return c


def _sdk_usage(usage: Any) -> tuple[int | None, int | None, int | None, int | None]:
    if usage is None:
        return (None, None, None, None)
    ptd, ctd = usage.prompt_tokens_details, usage.completion_tokens_details
    return (
        usage.prompt_tokens,
        usage.completion_tokens,
        ptd.cached_tokens if ptd is not None else None,
        ctd.reasoning_tokens if ctd is not None else None,
    )


def _sdk_completion(completion: Any, side: Side) -> None:
    side.response_id = completion.id
    side.model = completion.model
    choices = sorted(completion.choices or (), key=lambda c: c.index)
    side.choices = [_sdk_choice(c.message, c.finish_reason) for c in choices]
    side.usage = _sdk_usage(completion.usage)


_CLIENT = openai.OpenAI(api_key="sk-test", base_url="http://localhost/v1")


def sdk(view: ExchangeView) -> Side:
    side = Side()
    status = view.status or 0
    body = view.response_body
    if status >= 400:
        request = httpx2.Request("POST", "http://localhost/v1/chat/completions")
        response = httpx2.Response(status, content=body, request=request)
        error = _CLIENT._make_status_error_from_response(response)
        data = error.body
        message = data.get("message") if isinstance(data, dict) else None
        side.error = (error.type, error.code, message if isinstance(message, str) else None)
        return side
    if view.framing == "sse":
        _sdk_stream(body, side)
        return side
    try:
        data = json.loads(body)
    except ValueError:  # the SDK raises too (response.json())
        data = None
    if not isinstance(data, dict):
        side.notes.add("not_json")
        return side
    try:
        completion: Any = ChatCompletion.model_validate(data)
    except ValueError:
        side.notes.add("sdk_rejects_body")
        completion = construct_type(type_=ChatCompletion, value=data)
    _sdk_completion(completion, side)
    return side


def _sdk_stream(body: bytes, side: Side) -> None:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    seen = False
    for sse in SSEDecoder().iter_bytes(iter([body])):
        if sse.data.startswith("[DONE]"):
            break
        data = sse.json()
        if isinstance(data, dict) and data.get("error"):
            error = openai.APIError("stream error", cast(Any, None), body=data["error"])
            message = data["error"].get("message") if isinstance(data["error"], dict) else None
            side.error = (error.type, error.code, message)
            break
        chunk = cast(ChatCompletionChunk, construct_type(type_=ChatCompletionChunk, value=data))
        if chunk.object != "chat.completion.chunk":  # the SDK's _is_valid_..._weak filter
            continue
        try:
            state.handle_chunk(chunk)
        except Exception as exc:  # noqa: BLE001 - the SDK cannot fold this vendor's chunk
            side.notes.add(f"sdk_raises:{type(exc).__name__}")
            _plain_fold(body, side)
            return
        seen = True
    if seen:
        _sdk_completion(state.current_completion_snapshot, side)


def _plain_fold(body: bytes, side: Side) -> None:
    """The fallback oracle where ``accumulate_delta`` raises (Writer's ``"type": null`` in
    later tool-call deltas, OpenRouter's annotations without an index): the SDK's own SSE
    decoder, then the folding rules of the seeds (003: text concatenated, tool calls by
    index with the first id and name, arguments concatenated; the last finish reason and
    usage), written out plainly here."""
    choices: dict[int, dict[str, Any]] = {}
    for sse in SSEDecoder().iter_bytes(iter([body])):
        if sse.data.startswith("[DONE]"):
            break
        data = sse.json()
        if not isinstance(data, dict):
            continue
        side.response_id = side.response_id or data.get("id")
        side.model = side.model or data.get("model")
        if data.get("usage"):
            side.usage = _sdk_usage(construct_type(type_=CompletionUsage, value=data["usage"]))
        for choice in data.get("choices") or ():
            c = choices.setdefault(choice["index"], {"text": "", "tools": {}, "finish": None})
            delta = choice.get("delta") or {}
            c["text"] += delta.get("content") or ""
            for tc in delta.get("tool_calls") or ():
                fn = tc.get("function") or {}
                t = c["tools"].setdefault(tc["index"], [None, None, ""])
                t[0] = t[0] or tc.get("id")
                t[1] = t[1] or fn.get("name")
                t[2] += fn.get("arguments") or ""
            c["finish"] = choice.get("finish_reason") or c["finish"]
    side.choices = [
        Choice(
            text=c["text"],
            tool_calls=[tuple(t) for _, t in sorted(c["tools"].items())],
            finish_reason=c["finish"],
        )
        for _, c in sorted(choices.items())
    ]


# -- comparison -----------------------------------------------------------------------------


@dataclass
class Result:
    family: str
    file: str
    index: int
    provider: str | None
    agreed: dict[str, bool]
    unexplained: list[str]
    explained: list[tuple[str, str]]  # (field, rule)
    notes: set[str]


def compare(family: str, file: str, index: int, exchange: Exchange, call: Call) -> Result:
    view = ExchangeView(exchange)
    ours_side, sdk_side = ours(call), sdk(view)
    mine, theirs = ours_side.values(), sdk_side.values()
    case = Case(file=file, index=index, view=view, call=call, notes=sdk_side.notes)
    agreed: dict[str, bool] = {}
    unexplained: list[str] = []
    explained: list[tuple[str, str]] = []
    for name in FIELDS:
        if mine[name] == theirs[name]:
            agreed[name] = True
            continue
        agreed[name] = False
        rule = explain(name, theirs[name], mine[name], case)
        if rule is None:
            unexplained.append(f"{name}: sdk={theirs[name]!r:.300} ours={mine[name]!r:.300}")
        else:
            explained.append((name, rule))
    return Result(
        family, file, index, call.provider, agreed, unexplained, explained, sdk_side.notes
    )


@functools.cache
def results() -> list[Result]:
    warnings.simplefilter("ignore", UserWarning)  # pydantic on vendor values the SDK types
    out = []
    for family, file, index, exchange in corpus():
        call = recognize(exchange, "c0", registry=FAMILIES)
        if call is None or call.api != "openai.chat":
            continue
        out.append(compare(family, file, index, exchange, call))
    return out


pytestmark = pytest.mark.skipif(not MANIFEST.exists(), reason=f"no corpus at {CORPUS}")


def test_every_chat_completions_exchange_is_claimed() -> None:
    missed = []
    for _, file, index, x in corpus():
        assert x.request is not None
        if x.request.method == "POST" and "/chat/completions" in x.request.url:
            call = recognize(x, "c0", registry=FAMILIES)
            if call is None or call.api != "openai.chat":
                missed.append(f"{file} #{index}")
    assert missed == []


def test_no_other_exchange_is_claimed_as_chat() -> None:
    """Responses, MCP, Assistants, tool APIs in the same files stay unclaimed by chat."""
    wrong = []
    for _, file, index, x in corpus():
        assert x.request is not None
        url = x.request.url
        if "/chat/completions" in url or url.endswith("/v1/chat"):
            continue
        call = recognize(x, "c0", registry=FAMILIES)
        if call is not None and call.api == "openai.chat":
            wrong.append(f"{file} #{index} {url}")
    assert wrong == []


def test_corpus_agrees_with_the_sdk() -> None:
    out = results()
    assert len(out) > 1000
    problems = [f"{r.file} #{r.index}: {d}" for r in out for d in r.unexplained]
    assert problems == [], "\n".join(problems[:50])


def test_every_difference_rule_is_used() -> None:
    from tests.apis.openai.chat_differences import RULES

    used = {rule for r in results() for _, rule in r.explained}
    assert used == set(RULES), f"rules never used: {set(RULES) - used}"


def table() -> str:
    """Exchanges per family and per-field agreement (explained differences in brackets)."""
    by_family: dict[str, list[Result]] = collections.defaultdict(list)
    for r in results():
        by_family[r.family].append(r)
    lines = ["family | exchanges | " + " | ".join(FIELDS)]
    for family in sorted(by_family, key=lambda f: (-len(by_family[f]), f)):
        rows = by_family[family]
        cells = []
        for name in FIELDS:
            agree = sum(r.agreed[name] for r in rows)
            explained = sum(any(f == name for f, _ in r.explained) for r in rows)
            cell = f"{agree}/{len(rows)}"
            cells.append(cell + (f" [{explained}]" if explained else ""))
        lines.append(f"{family} | {len(rows)} | " + " | ".join(cells))
    fallback = collections.Counter(n for r in results() for n in r.notes if n.startswith("sdk"))
    lines.append("")
    lines.extend(f"{count:5d}  SDK note: {note}" for note, count in fallback.most_common())
    rules = collections.Counter(rule for r in results() for _, rule in r.explained)
    lines.append("")
    lines.extend(f"{count:5d}  {rule}" for rule, count in rules.most_common())
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    for r in results():
        for d in r.unexplained:
            print(f"UNEXPLAINED {r.file} #{r.index}: {d}")


# -- the other endpoints: embeddings, legacy completions, models ----------------------------


def _endpoint(url_or_endpoint: str) -> str | None:
    path = url_or_endpoint.split("?", 1)[0].rstrip("/")
    if path.endswith("/embeddings") and "/api/" not in path:
        return "openai.embeddings"
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        return "openai.completions"
    if path.endswith("/models") or ("/models/" in path and ":" not in path.rsplit("/", 1)[1]):
        return "openai.models"
    return None


@functools.cache
def endpoint_exchanges() -> list[tuple[str, str, Exchange]]:
    """(expected api, file, exchange) for every corpus exchange on those paths."""
    if not MANIFEST.exists():
        return []
    out = []
    for line in MANIFEST.read_text().splitlines():
        entry = json.loads(line)
        if not any(_endpoint(str(e)) for e in entry.get("endpoints") or ()):
            continue
        data = (CORPUS / entry["file"]).read_bytes()
        if sniff_format(data[:SNIFF_BYTES]) in ("pcap", "pcapng"):
            continue
        try:
            kind, doc = classify_document(data, entry["file"])
        except InputError:
            continue
        reader = read_har if kind == "har" else read_vcr
        for x in reader(doc, entry["file"], 0, _ids()):
            if isinstance(x, Exchange) and x.request is not None:
                api = _endpoint(x.request.url)
                if api is not None:
                    out.append((api, entry["file"], x))
    return out


def _build(kind: Any, data: Any) -> Any:
    """The SDK type, validated; leniently constructed as the client does when a vendor's
    (or a base64 embedding's) body does not validate."""
    try:
        return kind.model_validate(data)
    except ValueError:
        return construct_type(type_=kind, value=data)


def _endpoint_sdk(api: str, view: ExchangeView) -> dict[str, Any] | None:
    """What the SDK reads from the body; None when the body is not the OpenAI shape."""
    from openai.types import Completion, CreateEmbeddingResponse, Model

    if view.framing == "sse" and api == "openai.completions":
        return _completion_stream_sdk(view.response_body)
    data = view.response_json
    if (view.status or 0) >= 400 or not isinstance(data, dict):
        return None
    if api == "openai.embeddings":
        if not isinstance(data.get("data"), list):
            return None
        e = _build(CreateEmbeddingResponse, data)
        return {"model": e.model, "vectors": len(e.data), "input_tokens": e.usage.prompt_tokens}
    if api == "openai.completions":
        c = _build(Completion, data)
        return {
            "model": c.model,
            "id": c.id,
            "texts": [ch.text for ch in sorted(c.choices, key=lambda ch: ch.index)],
            "finish": [ch.finish_reason for ch in sorted(c.choices, key=lambda ch: ch.index)],
            "input_tokens": c.usage.prompt_tokens if c.usage else None,
        }
    items = data.get("data")
    if data.get("object") == "model":
        return {"models": [_build(Model, data).id]}
    if data.get("object") != "list" or not isinstance(items, list) or not items:
        return None  # Gemini's, Hugging Face's and Replicate's models are other shapes
    if isinstance(items, list):
        return {"models": [_build(Model, m).id for m in items]}
    return {"models": [_build(Model, data).id]}


def _completion_stream_sdk(body: bytes) -> dict[str, Any]:
    """A legacy completion stream as an SDK user reads it: the SDK's SSE decoder and
    ``Completion`` chunks, each choice's ``text`` concatenated (the SDK has no folding
    helper for this API), the last finish reason and usage."""
    from openai.types import Completion

    out: dict[str, Any] = {"model": None, "id": None, "input_tokens": None}
    texts: dict[int, str] = {}
    finish: dict[int, Any] = {}
    for sse in SSEDecoder().iter_bytes(iter([body])):
        if sse.data.startswith("[DONE]"):
            break
        chunk = cast(Completion, construct_type(type_=Completion, value=sse.json()))
        out["model"] = out["model"] or chunk.model
        out["id"] = out["id"] or chunk.id
        if chunk.usage is not None:
            out["input_tokens"] = chunk.usage.prompt_tokens
        for position, choice in enumerate(chunk.choices or ()):
            i = choice.index if isinstance(choice.index, int) else position  # Writer: none
            texts[i] = texts.get(i, "") + (choice.text or "")
            finish[i] = choice.finish_reason or finish.get(i)
    out["texts"] = [texts[i] for i in sorted(texts)]
    out["finish"] = [finish[i] for i in sorted(texts)]
    return out


def _endpoint_ours(api: str, call: Call) -> dict[str, Any]:
    usage = call.usage.input_tokens if call.usage else None
    if api == "openai.embeddings":
        vectors = call.extras.get("embeddings", {}).get("vectors")
        return {"model": call.response_model, "vectors": vectors, "input_tokens": usage}
    if api == "openai.completions":
        return {
            "model": call.response_model,
            "id": call.response_id,
            "texts": [
                "".join(getattr(p, "content", "") for p in m.parts) for m in call.output_messages
            ],
            "finish": [m.finish_reason for m in call.output_messages],
            "input_tokens": usage,
        }
    models = call.extras.get("models")
    return {"models": models if models is not None else [call.response_model]}


def test_other_endpoints_agree_with_the_sdk() -> None:
    """Each exchange on an embeddings / completions / models path whose body has the
    OpenAI shape is claimed by its family and agrees with the SDK's types; errors are
    claimed too. Other shapes on those paths (Voyage's embeddings are the same shape,
    Replicate's models are not) must not be claimed by another family of ours."""
    counts: collections.Counter[str] = collections.Counter()
    problems = []
    for api, file, x in endpoint_exchanges():
        view = ExchangeView(x)
        call = recognize(x, "c0", registry=FAMILIES)
        expected = _endpoint_sdk(api, view)
        if expected is None and (view.status or 0) < 400:
            if call is not None and call.api != api:
                problems.append(f"{file}: {x.request and x.request.url} claimed as {call.api}")
            continue
        if call is None or call.api != api:
            problems.append(f"{file}: {x.request and x.request.url} not claimed as {api}")
            continue
        counts[api] += 1
        if expected is None:  # an error response
            assert call.error is not None and call.error.status == view.status
            continue
        got = _endpoint_ours(api, call)
        if got != expected:
            problems.append(f"{file}: {api} sdk={expected} ours={got}")
    assert problems == [], "\n".join(problems)
    assert counts["openai.embeddings"] > 50 and counts["openai.completions"] > 50
    assert counts["openai.models"] >= 1
