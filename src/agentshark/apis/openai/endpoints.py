"""The other OpenAI-shaped endpoints -> :class:`Call`, recognized and named, parsed shallowly.

- ``openai.embeddings`` (``POST .../embeddings``): model, input count, vector count and
  dimensions (``extras["embeddings"]``), usage, error.
- ``openai.completions``, the legacy ``POST .../completions``: in
  :mod:`~agentshark.apis.openai.completions`, which shares the helpers below.
- ``openai.models`` (``GET .../models`` and ``.../models/{id}``): the model ids listed.

Recognition, as for Chat: body shape first (an ``embedding`` list, a list of ``model``
objects), then the path; the host only names the provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentshark.apis.documents import embedding_evidence
from agentshark.apis.model import Call, Json
from agentshark.apis.openai.common import (
    app_ids,
    error_from_json,
    http_error,
    provider_name,
    usage_from,
)
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily


def body_fields(request: Json, skip: tuple[str, ...], call: Call) -> dict[str, Json]:
    """Request fields other than ``skip`` go to ``request_params``; returns the request."""
    if not isinstance(request, dict):
        return {}
    model = request.get("model")
    call.request_model = model if isinstance(model, str) else None
    for key, value in request.items():
        if key not in skip and key != "model":
            call.request_params[key] = value
    app_ids(request, call)
    return request


def finish(view: ExchangeView, call: Call, body: Json) -> dict[str, Json]:
    """What every non-stream parse ends with: error, provider, completeness."""
    call.error = http_error(view, body) or error_from_json(body, view.status, "body")
    call.provider = provider_name(view, body)
    call.complete = view.exchange.complete and isinstance(body, dict)
    if isinstance(body, dict):
        model = body.get("model")
        call.response_model = model if isinstance(model, str) else None
        call.usage = usage_from(body.get("usage"))
        return body
    return {}


def anthropic(view: ExchangeView) -> bool:
    return view.anthropic_version is not None


def server_by_schema(response: dict[str, Json], choices: Json) -> str | None:
    """The OpenAI-compatible server that answered, from its own extensions, for a host that
    names none (``localhost:8080``, a private address): llama.cpp's ``timings``
    (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md), Ollama's
    ``system_fingerprint: "fp_ollama"`` (https://github.com/ollama/ollama/blob/main/docs/openai.md),
    SGLang's ``choices[].matched_stop``, vLLM's ``choices[].stop_reason``
    (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html). None: no sign."""
    if isinstance(response.get("timings"), dict):
        return "llama.cpp"
    if response.get("system_fingerprint") == "fp_ollama":
        return "ollama"
    kept = [c for c in choices.values() if isinstance(c, dict)] if isinstance(choices, dict) else []
    if any("matched_stop" in c for c in kept):
        return "sglang"
    if any("stop_reason" in c for c in kept):
        return "vllm"
    return None


# -- embeddings -----------------------------------------------------------------------------


class Embeddings:
    api = "openai.embeddings"

    def match(self, view: ExchangeView) -> float:
        path = view.path.lower()
        if view.method.upper() != "POST" or anthropic(view) or "/api/embed" in path:
            return -1.0
        body = view.response_json
        data = body.get("data") if isinstance(body, dict) else None
        response = isinstance(data, list) and any(
            isinstance(d, dict) and d.get("object") == "embedding" for d in data
        )
        on_path = path.endswith("/embeddings")
        req = view.request_json
        request = isinstance(req, dict) and "input" in req and "messages" not in req
        if not (response or on_path):
            return 0.0
        return 0.4 * response + 0.3 * request + 0.25 * on_path

    def parse(self, view: ExchangeView, call: Call) -> None:
        call.operation = "embeddings"
        request = body_fields(view.request_json, ("input",), call)
        body = finish(view, call, view.response_json)
        summary: dict[str, Json] = {}
        inputs = request.get("input")
        if isinstance(inputs, str) or (isinstance(inputs, list) and tokens(inputs)):
            summary["inputs"] = 1  # one text, or one token array
        elif isinstance(inputs, list):
            summary["inputs"] = len(inputs)
        data = body.get("data")
        if isinstance(data, list):
            summary["vectors"] = len(data)
            first = data[0].get("embedding") if data and isinstance(data[0], dict) else None
            if isinstance(first, list):
                summary["dimensions"] = len(first)
            elif isinstance(first, str):  # encoding_format "base64": float32 values
                size = len(first) * 3 // 4 - first[-2:].count("=")
                summary["dimensions"] = size // 4
            vectors = [d.get("embedding") for d in data if isinstance(d, dict)]
            summary.update(embedding_evidence(inputs, vectors))
        elif inputs is not None:
            summary.update(embedding_evidence(inputs, []))
        if summary:
            call.extras["embeddings"] = summary


def tokens(prompt: list[Json]) -> bool:
    return bool(prompt) and all(isinstance(t, int) for t in prompt)


# -- models ---------------------------------------------------------------------------------


class Models:
    api = "openai.models"

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "GET" or anthropic(view):
            return -1.0
        body = view.response_json
        if not isinstance(body, dict):
            return 0.0
        data = body.get("data")
        listed = (
            body.get("object") == "list"
            and isinstance(data, list)
            and all(isinstance(d, dict) and d.get("object") == "model" for d in data)
            and (bool(data) or view.path.endswith("/models"))
        )
        one = body.get("object") == "model" and isinstance(body.get("id"), str)
        return 0.5 if listed or (one and "/models/" in view.path) else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        body = finish(view, call, view.response_json)
        data = body.get("data")
        if isinstance(data, list):
            call.operation = "models.list"
            call.extras["models"] = [d.get("id") for d in data if isinstance(d, dict)]
        else:
            call.operation = "models.retrieve"
            model = body.get("id")
            call.response_model = model if isinstance(model, str) else None


EMBEDDINGS = Embeddings()
MODELS = Models()
ENDPOINT_FAMILIES: tuple[ApiFamily, ...] = (EMBEDDINGS, MODELS)  # and completions.COMPLETIONS
