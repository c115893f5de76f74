"""What every OpenAI-shaped API shares: provider names, error bodies, usage, app ids.

Used by the Chat Completions family (and its embeddings, legacy completions and models
siblings) and by the Responses family. The API is small on purpose:

- :func:`provider_name` names the service from the host (a table), Azure's deployment path,
  a gateway's first path segment, the port of a local server, or a response field;
- :func:`error_from_json` and :func:`http_error` read the error bodies of OpenAI and of the
  services that copy it (``{"error": {message, type, param, code}}``, a string ``error``,
  Mistral/vLLM's top-level ``{"object": "error", ...}``, FastAPI's ``{"detail": "..."}``);
- :func:`usage_from` normalizes both usage dialects (Chat's ``prompt_tokens`` and Responses'
  ``input_tokens``) and the vendors' cached-token spellings, keeping the raw object;
- :func:`app_ids` copies ``user``, ``safety_identifier`` and string ``metadata`` values of a
  request into the call's ids, with their JSON paths.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from agentshark.apis.model import Call, CallError, Json, Usage
from agentshark.apis.view import ExchangeView

# Host (or a parent domain of it) -> provider; the most specific name wins.
_HOSTS: dict[str, str] = {
    "api.openai.com": "openai",
    "openai.azure.com": "azure.openai",
    "cognitiveservices.azure.com": "azure.openai",
    "services.ai.azure.com": "azure.ai",
    "models.ai.azure.com": "azure.ai",
    "api.groq.com": "groq",
    "api.mistral.ai": "mistral",
    "codestral.mistral.ai": "mistral",
    "api.deepseek.com": "deepseek",
    "openrouter.ai": "openrouter",
    "api.x.ai": "xai",
    "api.together.xyz": "together",
    "api.together.ai": "together",
    "api.fireworks.ai": "fireworks",
    "api.perplexity.ai": "perplexity",
    "api.cerebras.ai": "cerebras",
    "ollama.com": "ollama",
    "api.writer.com": "writer",
    "router.huggingface.co": "huggingface",
    "api-inference.huggingface.co": "huggingface",
    "api.z.ai": "zai",
    "open.bigmodel.cn": "zhipu",
    "api.moonshot.ai": "moonshot",
    "api.moonshot.cn": "moonshot",
    "dashscope.aliyuncs.com": "alibaba",
    "dashscope-intl.aliyuncs.com": "alibaba",
    "generativelanguage.googleapis.com": "google",
    "aiplatform.googleapis.com": "google.vertex",
    "api.anthropic.com": "anthropic",
    "api.cohere.com": "cohere",
    "api.cohere.ai": "cohere",
    "api.sambanova.ai": "sambanova",
    "api.studio.nebius.ai": "nebius",
    "api.studio.nebius.com": "nebius",
    "api.novita.ai": "novita",
    "api.deepinfra.com": "deepinfra",
    "integrate.api.nvidia.com": "nvidia",
    "api.hyperbolic.xyz": "hyperbolic",
    "api.siliconflow.cn": "siliconflow",
    "api.inference.crusoecloud.com": "crusoe",
    "inference.heroku.com": "heroku",
    "snowflakecomputing.com": "snowflake",
    "api.voyageai.com": "voyage",
    "api.lmstudio.ai": "lmstudio",
}
# A gateway's first path segment naming the upstream (``/groq/openai/v1/...``), used only
# when the host is not a known provider.
_PATH_PROVIDERS = frozenset(
    (
        "openai",
        "azure",
        "groq",
        "mistral",
        "deepseek",
        "openrouter",
        "xai",
        "together",
        "fireworks",
        "perplexity",
        "cerebras",
        "ollama",
        "anthropic",
        "nebius",
        "novita",
        "gemini",
        "google",
        "bedrock",
        "cohere",
        "huggingface",
    )
)
_LOCAL_PORTS = {11434: "ollama", 1234: "lmstudio"}
_VLLM_FIELDS = ("kv_transfer_params", "prompt_logprobs", "prompt_token_ids")
_AZURE_PATH = re.compile(r"/openai/deployments/[^/]+/")


def provider_name(view: ExchangeView, body: Json = None) -> str | None:
    """The service that answered: host table first, then Azure's deployment path, a
    gateway's first path segment, a local server's well-known port, fields of the response
    ``body`` (Groq's ``x_groq``, vLLM's own fields), else the host itself (None if none)."""
    host = view.host.lower()
    name = _by_host(host)
    if name is not None:
        return name
    if "bedrock" in host and host.endswith((".api.aws", ".amazonaws.com")):
        return "aws.bedrock"
    if _AZURE_PATH.search(view.path):
        return "azure.openai"
    first = view.path.lstrip("/").split("/", 1)[0].lower()
    if first in _PATH_PROVIDERS:
        return "azure.openai" if first == "azure" else first
    req = view.exchange.request
    port = _port(req.url) if req is not None else None
    if port in _LOCAL_PORTS:
        return _LOCAL_PORTS[port]
    if isinstance(body, dict):
        if "x_groq" in body:
            return "groq"
        if any(k in body for k in _VLLM_FIELDS):
            return "vllm"
    return host or None


def _by_host(host: str) -> str | None:
    name = host
    while name:
        found = _HOSTS.get(name)
        if found is not None:
            return found
        _, dot, name = name.partition(".")
        if not dot:
            return None
    return None


def _port(url: str) -> int | None:
    try:
        return urlsplit(url).port
    except ValueError:  # a port that is not a number
        return None


# -- errors ---------------------------------------------------------------------------------


def error_from_json(value: Json, status: int | None, source: str) -> CallError | None:
    """The error a JSON body or stream event carries, or None when it carries none.

    ``status`` is the HTTP status (pass None for an in-band stream error: the error's own
    ``status_code``/``status`` is used then). ``code`` is kept as a string, as the SDK does
    (OpenRouter sends numbers).
    """
    if isinstance(value, list) and len(value) == 1:
        value = value[0]  # [{"error": {...}}]
    if not isinstance(value, dict):
        return None
    err = value.get("error")
    if isinstance(err, str):
        return CallError(status=status, type=None, code=None, message=err, source=source)
    if isinstance(err, dict):
        obj = err
    elif value.get("object") == "error" or (
        isinstance(value.get("message"), str) and ("type" in value or "code" in value)
    ):
        obj = value  # Mistral, vLLM: the error fields at the top level
    elif isinstance(value.get("detail"), str):  # FastAPI-style gateways
        return CallError(
            status=status, type=None, code=None, message=value["detail"], source=source
        )
    else:
        return None
    if status is None:
        for key in ("status_code", "status"):
            if isinstance(obj.get(key), int) and not isinstance(obj.get(key), bool):
                status = obj[key]
                break
    code = obj.get("code")
    message = obj.get("message")
    kind = obj.get("type")
    return CallError(
        status=status,
        type=kind if isinstance(kind, str) else None,
        code=None if code is None else str(code),
        message=message if isinstance(message, str) else None,
        source=source,
    )


_TEXT_LIMIT = 2000


def http_error(view: ExchangeView, body: Json) -> CallError | None:
    """The error of a response with status >= 400 (None below 400): the error object of
    its JSON ``body`` when there is one, else the status with the body's text as message
    (first 2000 characters) and no type."""
    status = view.status
    if status is None or status < 400:
        return None
    found = error_from_json(body, status, "body")
    if found is not None:
        return found
    text = view.response_body[:_TEXT_LIMIT].decode("utf-8", "replace").strip()
    return CallError(status=status, type=None, code=None, message=text or None, source="http")


# -- usage ----------------------------------------------------------------------------------


def _int(value: Json) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _detail(raw: dict[str, Json], names: tuple[str, ...], key: str) -> int | None:
    for name in names:
        details = raw.get(name)
        if isinstance(details, dict):
            found = _int(details.get(key))
            if found is not None:
                return found
    return None


def usage_from(raw: Json) -> Usage | None:
    """Usage in either OpenAI dialect, with the raw object kept.

    Cached input tokens: ``prompt_tokens_details.cached_tokens`` (Chat),
    ``input_tokens_details.cached_tokens`` (Responses), Writer's ``prompt_token_details``,
    DeepSeek's ``prompt_cache_hit_tokens``, Mistral's ``num_cached_tokens``. Reasoning:
    ``completion_tokens_details`` / ``output_tokens_details`` ``.reasoning_tokens``.
    Audio and prediction token counts stay in ``raw``.
    """
    if not isinstance(raw, dict):
        return None
    inputs = _int(raw.get("prompt_tokens"))
    if inputs is None:
        inputs = _int(raw.get("input_tokens"))
    outputs = _int(raw.get("completion_tokens"))
    if outputs is None:
        outputs = _int(raw.get("output_tokens"))
    in_details = ("prompt_tokens_details", "input_tokens_details", "prompt_token_details")
    out_details = ("completion_tokens_details", "output_tokens_details")
    cached = _detail(raw, in_details, "cached_tokens")
    for name in ("prompt_cache_hit_tokens", "num_cached_tokens", "cached_tokens"):
        if cached is None:
            cached = _int(raw.get(name))
    reasoning = _detail(raw, out_details, "reasoning_tokens")
    if reasoning is None:
        reasoning = _int(raw.get("reasoning_tokens"))
    return Usage(
        input_tokens=inputs,
        output_tokens=outputs,
        cached_input_tokens=cached,
        cache_creation_input_tokens=_detail(raw, in_details, "cache_write_tokens"),
        reasoning_tokens=reasoning,
        total_tokens=_int(raw.get("total_tokens")),
        raw=raw,
    )


# -- application ids ------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def json_key(key: str) -> str:
    """A JSON-path step for ``key``: ``.name`` or ``["odd key"]``."""
    if _IDENTIFIER.fullmatch(key):
        return f".{key}"
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'["{escaped}"]'


def app_ids(request: dict[str, Json], call: Call) -> None:
    """The application's own ids a request carries: ``user``, ``safety_identifier`` and
    every string value of ``metadata`` (under its own name), each with its JSON path. An id
    already set (by a header) is kept."""
    for name in ("user", "safety_identifier"):
        value = request.get(name)
        if isinstance(value, str) and value and name not in call.ids:
            call.ids[name] = value
            call.id_sources[name] = f"request body $.{name}"
    metadata = request.get("metadata")
    if isinstance(metadata, dict):
        for key, value in metadata.items():
            if isinstance(value, str) and value and key not in call.ids:
                call.ids[key] = value
                call.id_sources[key] = f"request body $.metadata{json_key(key)}"
