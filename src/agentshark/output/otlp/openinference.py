"""``--openinference``: the OpenInference attributes of a span, read from its GenAI ones.

For viewers that know only OpenInference (``Arize-ai/openinference``
``spec/semantic_conventions.md``, ``llm_spans.md``, ``tool_calling.md``): the span kind
(``openinference.span.kind``: LLM, EMBEDDING, RETRIEVER, RERANKER, TOOL, AGENT, CHAIN; a
retriever's ``retrieval.documents.N.document.*``, a reranker's ``reranker.*``), the model,
provider and token counts, the messages flattened with zero-based indexes
(``llm.input_messages.N.message.role``, ``….message.content``,
``….message.tool_calls.M.tool_call.function.arguments`` as a JSON string, a tool result as a
``tool`` message with ``message.tool_call_id``), ``input.value``/``output.value``, the tool's
``tool.*`` and ``session.id``. Everything is derived from the span's own semconv attributes,
so the two sets never disagree.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from agentshark.output.otlp import names as n
from agentshark.output.otlp.attributes import dumps
from agentshark.output.otlp.spans import OtlpSpan

Json = Any
_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
# gen_ai.provider.name -> llm.system (OpenInference's OpenInferenceLLMSystemValues)
_SYSTEMS = {"gcp.gemini": "vertexai", "gcp.vertex_ai": "vertexai", "aws.bedrock": "amazon"}
# gen_ai.provider.name -> llm.provider (OpenInferenceLLMProviderValues)
_PROVIDERS = {
    "azure.ai.openai": "azure",
    "azure.ai.inference": "azure",
    "aws.bedrock": "aws",
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    "gcp.gen_ai": "google",
    "mistral_ai": "mistralai",
    "x_ai": "xai",
}


def add_openinference(span: OtlpSpan) -> OtlpSpan:
    attrs = dict(span.attributes)
    op = attrs.get(n.OPERATION)
    if op in _LLM_OPERATIONS:
        attrs[n.OI_KIND] = n.OI_LLM
        _llm(attrs)
    elif op == "embeddings":
        attrs[n.OI_KIND] = n.OI_EMBEDDING
        _llm(attrs)
    elif op in ("retrieval", "memory.read"):
        attrs[n.OI_KIND] = n.OI_RETRIEVER
        _documents(attrs, n.OI_RETRIEVAL_DOCUMENTS)
    elif op == "rerank":
        attrs[n.OI_KIND] = n.OI_RERANKER
        _documents(attrs, n.OI_RERANKER_OUTPUT)
        if n.REQUEST_MODEL in attrs:
            attrs[n.OI_RERANKER_MODEL] = attrs[n.REQUEST_MODEL]
        if n.REQUEST_TOP_K in attrs:
            attrs[n.OI_RERANKER_TOP_K] = attrs[n.REQUEST_TOP_K]
    elif op == "execute_tool":
        attrs[n.OI_KIND] = n.OI_TOOL
        _tool(attrs)
    elif op == "invoke_agent":
        attrs[n.OI_KIND] = n.OI_AGENT
    else:
        attrs[n.OI_KIND] = n.OI_CHAIN
    session = attrs.get(n.MCP_SESSION) or attrs.get(n.CONVERSATION_ID)
    if session is not None:
        attrs[n.OI_SESSION] = session
    return replace(span, attributes=attrs)


def _llm(attrs: dict[str, Json]) -> None:
    model = attrs.get(n.RESPONSE_MODEL) or attrs.get(n.REQUEST_MODEL)
    if model is not None:
        attrs[n.OI_MODEL] = model
    provider = attrs.get(n.PROVIDER)
    if provider is not None:
        attrs[n.OI_SYSTEM] = _SYSTEMS.get(provider, provider)
        attrs[n.OI_PROVIDER] = _PROVIDERS.get(provider, provider)
    for src, dst in (
        (n.INPUT_TOKENS, n.OI_PROMPT_TOKENS),
        (n.OUTPUT_TOKENS, n.OI_COMPLETION_TOKENS),
        (n.CACHE_READ_TOKENS, n.OI_CACHE_READ),
        (n.CACHE_WRITE_TOKENS, n.OI_CACHE_WRITE),
        (n.REASONING_TOKENS, n.OI_REASONING),
    ):
        if src in attrs:
            attrs[dst] = attrs[src]
    if n.INPUT_TOKENS in attrs and n.OUTPUT_TOKENS in attrs:
        attrs[n.OI_TOTAL_TOKENS] = attrs[n.INPUT_TOKENS] + attrs[n.OUTPUT_TOKENS]
    params = {k.removeprefix("gen_ai.request."): v for k, v in attrs.items() if _is_param(k)}
    if params:
        attrs[n.OI_PARAMS] = dumps(params)
    system = _loads(attrs.get(n.SYSTEM_INSTRUCTIONS)) or []
    inputs = _loads(attrs.get(n.INPUT_MESSAGES)) or []
    outputs = _loads(attrs.get(n.OUTPUT_MESSAGES)) or []
    flat_in = ([{"role": "system", "parts": system}] if system else []) + inputs
    _flatten(attrs, n.OI_INPUT_MESSAGES, flat_in)
    _flatten(attrs, n.OI_OUTPUT_MESSAGES, outputs)
    if n.INPUT_MESSAGES in attrs:
        attrs[n.OI_INPUT_VALUE] = attrs[n.INPUT_MESSAGES]
        attrs[n.OI_INPUT_MIME] = n.JSON_MIME
    if n.OUTPUT_MESSAGES in attrs:
        attrs[n.OI_OUTPUT_VALUE] = attrs[n.OUTPUT_MESSAGES]
        attrs[n.OI_OUTPUT_MIME] = n.JSON_MIME
    for i, tool in enumerate(_loads(attrs.get(n.TOOL_DEFINITIONS)) or []):
        attrs[f"{n.OI_TOOLS}.{i}.{n.OI_TOOL_SCHEMA}"] = dumps(tool)


def _documents(attrs: dict[str, Json], prefix: str) -> None:
    """A retrieval span's documents, ``{prefix}.N.document.{id,score,content,metadata}``, and
    its query text as ``input.value`` (the reranker's also as ``reranker.query``)."""
    for i, doc in enumerate(_loads(attrs.get(n.RETRIEVAL_DOCUMENTS)) or []):
        if not isinstance(doc, dict):
            continue
        for key in ("id", "score", "content"):
            value = doc.get(key)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                attrs[f"{prefix}.{i}.document.{key}"] = str(value) if key == "id" else value
        if doc.get("metadata") is not None:
            attrs[f"{prefix}.{i}.document.metadata"] = dumps(doc["metadata"])
    texts = [
        q.get("text") for q in _loads(attrs.get(n.RETRIEVAL_QUERIES)) or [] if isinstance(q, dict)
    ]
    text = "\n".join(t for t in texts if isinstance(t, str))
    if text:
        attrs[n.OI_INPUT_VALUE] = text
        if prefix == n.OI_RERANKER_OUTPUT:
            attrs[n.OI_RERANKER_QUERY] = text


def _is_param(key: str) -> bool:
    return key.startswith("gen_ai.request.") and key not in (n.REQUEST_MODEL, n.REQUEST_STREAM)


def _loads(text: Json) -> Json:
    if not isinstance(text, str):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _flatten(attrs: dict[str, Json], prefix: str, messages: list[Json]) -> None:
    """OpenInference messages: one per message, a tool result its own ``tool`` message."""
    i = 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        replies = [p for p in parts if p.get("type") == "tool_call_response"]
        others = [p for p in parts if p.get("type") != "tool_call_response"]
        if others or not replies:
            _message(attrs, f"{prefix}.{i}", message, others)
            i += 1
        for reply in replies:
            key = f"{prefix}.{i}"
            attrs[f"{key}.{n.OI_ROLE}"] = "tool"
            if reply.get("id") is not None:
                attrs[f"{key}.{n.OI_TOOL_CALL_ID}"] = str(reply["id"])
            attrs[f"{key}.{n.OI_CONTENT}"] = _text(reply.get("response"))
            i += 1


def _message(attrs: dict[str, Json], key: str, message: dict[str, Json], parts: list[Json]) -> None:
    if message.get("role") is not None:
        attrs[f"{key}.{n.OI_ROLE}"] = str(message["role"])
    if message.get("name") is not None:
        attrs[f"{key}.{n.OI_NAME}"] = str(message["name"])
    texts = [p["content"] for p in parts if p.get("type") == "text" and "content" in p]
    if texts:
        attrs[f"{key}.{n.OI_CONTENT}"] = "".join(str(t) for t in texts)
    calls = [p for p in parts if p.get("type") == "tool_call"]
    for m, call in enumerate(calls):
        base = f"{key}.{n.OI_TOOL_CALLS}.{m}"
        if call.get("id") is not None:
            attrs[f"{base}.{n.OI_CALL_ID}"] = str(call["id"])
        if call.get("name") is not None:
            attrs[f"{base}.{n.OI_FUNCTION_NAME}"] = str(call["name"])
        arguments = call.get("arguments")
        attrs[f"{base}.{n.OI_FUNCTION_ARGS}"] = (
            arguments if isinstance(arguments, str) else dumps(arguments)
        )


def _text(value: Json) -> str:
    return value if isinstance(value, str) else dumps(value)


def _tool(attrs: dict[str, Json]) -> None:
    if n.TOOL_NAME in attrs:
        attrs[n.OI_TOOL_NAME] = attrs[n.TOOL_NAME]
    if n.TOOL_CALL_ID in attrs:
        attrs[n.OI_TOOL_ID] = attrs[n.TOOL_CALL_ID]
    if n.TOOL_ARGUMENTS in attrs:
        attrs[n.OI_INPUT_VALUE] = attrs[n.TOOL_ARGUMENTS]
        attrs[n.OI_INPUT_MIME] = n.JSON_MIME
    if n.TOOL_RESULT in attrs:
        attrs[n.OI_OUTPUT_VALUE] = attrs[n.TOOL_RESULT]
        attrs[n.OI_OUTPUT_MIME] = n.JSON_MIME
