"""Ollama's other native endpoints, recognized and named, parsed shallowly.

From Ollama's API reference (https://github.com/ollama/ollama/blob/main/docs/api.md):

- ``ollama.embed``: ``POST /api/embed`` (``input`` a string or a list ->
  ``embeddings: [[...]]``, with ``prompt_eval_count`` and durations) and the older
  ``POST /api/embeddings`` (``prompt`` -> ``embedding: [...]``); operation ``embeddings``
  (OTel GenAI's name) for both. Model, input count, vector count and dimensions
  (``extras["embeddings"]``), usage, error.
- ``ollama.models``: the model management endpoints, operation from the path:
  ``GET /api/tags`` (``models.list``, the names in ``extras["models"]``), ``GET /api/ps``
  (``models.running``), ``POST /api/show`` (``models.show``: details and capabilities in
  ``extras["model"]``), ``GET /api/version`` (``version``), ``POST /api/pull`` / ``push`` /
  ``create`` (``models.pull``..., an NDJSON stream of ``status`` lines ending ``success``, or
  one status object), ``POST /api/copy``, ``DELETE /api/delete``.

Recognition: the body shape where the endpoint has one (an ``embeddings`` list, a
``models`` list of objects with a ``digest``, a ``modelfile``/``model_info`` object, a
``version`` string, ``status`` lines), else the path on Ollama's port (11434) or host.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import orjson

from agentshark.apis.documents import embedding_evidence
from agentshark.apis.model import Call, Json
from agentshark.apis.ollama.messages import durations_of, error_of, http_error, usage_of
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import JsonDocument

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

_PORT = re.compile(r"^[a-z][a-z0-9+.-]*://[^/]*:11434(?:/|$)", re.IGNORECASE)


def _ollama_host(view: ExchangeView) -> bool:
    req = view.exchange.request
    host = view.host.lower()
    return (
        host == "ollama.com"
        or host.endswith(".ollama.com")
        or (req is not None and _PORT.match(req.url) is not None)
    )


def _endpoint(view: ExchangeView) -> str:
    """The last path segment after ``/api/`` (``"tags"``), or ``""``."""
    path = view.path.rstrip("/")
    _, sep, name = path.rpartition("/api/")
    return name.lower() if sep and "/" not in name else ""


def _finish(view: ExchangeView, call: Call, *, empty_ok: bool = False) -> dict[str, Json]:
    """Error, provider and completeness of a plain body: complete when the exchange is and
    the body is a JSON object (or empty, where the endpoint answers with none)."""
    body = view.response_json
    call.provider = "ollama"
    call.error = http_error(view, body)
    empty = empty_ok and view.exchange.response is not None and not view.response_body.strip()
    call.complete = view.exchange.complete and (isinstance(body, dict) or empty)
    return body if isinstance(body, dict) else {}


# -- embeddings -------------------------------------------------------------------------------


class Embed:
    api = "ollama.embed"

    def match(self, view: ExchangeView) -> float:
        if view.method.upper() != "POST":
            return -1.0
        endpoint = _endpoint(view)
        body = view.response_json
        response = (
            isinstance(body, dict)
            and (
                isinstance(body.get("embeddings"), list) or isinstance(body.get("embedding"), list)
            )
            and "data" not in body
            and "object" not in body
        )
        on_path = endpoint in ("embed", "embeddings")
        if not on_path:
            return 0.0  # an embeddings list alone is many APIs' shape
        return 0.45 + 0.4 * response

    def parse(self, view: ExchangeView, call: Call) -> None:
        legacy = _endpoint(view) == "embeddings"
        call.operation = "embeddings"
        request = view.request_json
        summary: dict[str, Json] = {}
        inputs: Json = None
        if isinstance(request, dict):
            model = request.get("model")
            call.request_model = model if isinstance(model, str) else None
            for key, value in request.items():
                if key not in ("model", "input", "prompt"):
                    call.request_params[key] = value
            inputs = request.get("prompt" if legacy else "input")
            if isinstance(inputs, str):
                summary["inputs"] = 1
            elif isinstance(inputs, list):
                summary["inputs"] = len(inputs)
        body = _finish(view, call)
        model = body.get("model")
        call.response_model = model if isinstance(model, str) else None
        vectors = body.get("embeddings")
        if isinstance(vectors, list):
            summary["vectors"] = len(vectors)
            if vectors and isinstance(vectors[0], list):
                summary["dimensions"] = len(vectors[0])
        elif isinstance(body.get("embedding"), list):
            summary["vectors"] = 1
            summary["dimensions"] = len(body["embedding"])
            vectors = [body["embedding"]]
        summary.update(embedding_evidence(inputs, vectors if isinstance(vectors, list) else []))
        if summary:
            call.extras["embeddings"] = summary
        call.usage = usage_of(body)
        durations_of(body, call)


# -- model management -------------------------------------------------------------------------

# endpoint -> (method, operation)
_MANAGEMENT = {
    "tags": ("GET", "models.list"),
    "ps": ("GET", "models.running"),
    "show": ("POST", "models.show"),
    "version": ("GET", "version"),
    "pull": ("POST", "models.pull"),
    "push": ("POST", "models.push"),
    "create": ("POST", "models.create"),
    "copy": ("POST", "models.copy"),
    "delete": ("DELETE", "models.delete"),
}


def _management_shape(endpoint: str, view: ExchangeView) -> bool:
    body = view.response_json
    if endpoint in ("tags", "ps"):
        models = body.get("models") if isinstance(body, dict) else None
        return isinstance(models, list) and all(
            isinstance(m, dict) and "digest" in m for m in models
        )
    if endpoint == "show":
        return isinstance(body, dict) and any(
            k in body for k in ("modelfile", "model_info", "template", "capabilities")
        )
    if endpoint == "version":
        return isinstance(body, dict) and isinstance(body.get("version"), str)
    if endpoint in ("pull", "push", "create"):
        if isinstance(body, dict):
            return isinstance(body.get("status"), str)
        return body is None and view.response_head(64).startswith(b'{"status"')
    return False


class Models:
    api = "ollama.models"

    def match(self, view: ExchangeView) -> float:
        endpoint = _endpoint(view)
        expected = _MANAGEMENT.get(endpoint)
        if expected is None or view.method.upper() != expected[0]:
            return 0.0
        shape = _management_shape(endpoint, view)
        if not (shape or _ollama_host(view)):
            return 0.0
        return 0.45 + 0.4 * shape

    def parse(self, view: ExchangeView, call: Call) -> None:
        endpoint = _endpoint(view)
        call.operation = _MANAGEMENT[endpoint][1]
        request = view.request_json
        if isinstance(request, dict):
            for name in ("model", "name", "source"):
                if isinstance(request.get(name), str):
                    call.request_model = request[name]
                    break
            for key, value in request.items():
                if key not in ("model", "name"):
                    call.request_params[key] = value
        if view.framing == "ndjson":
            call.stream = True
            _status_stream(view, call)
            return
        body = _finish(view, call, empty_ok=endpoint in ("copy", "delete"))
        if endpoint in ("tags", "ps") and isinstance(body.get("models"), list):
            call.extras["models"] = [
                m.get("name", m.get("model")) for m in body["models"] if isinstance(m, dict)
            ]
        elif endpoint == "show" and body:
            call.extras["model"] = {
                k: body[k] for k in ("details", "capabilities", "modified_at") if k in body
            }
        elif endpoint == "version" and "version" in body:
            call.extras["version"] = body["version"]
        elif "status" in body:
            call.extras["status"] = [body["status"]]


def _status_stream(view: ExchangeView, call: Call) -> None:
    """A pull/push/create progress stream: ``{"status": ...}`` lines, the last one
    ``success`` (or an ``error`` line)."""
    call.provider = "ollama"
    statuses: list[Json] = []
    cut = False
    for n, item in enumerate(e for e in view.events if isinstance(e, JsonDocument)):
        if not item.complete:
            cut = True
            continue
        try:
            line = item.value()
        except orjson.JSONDecodeError:
            continue  # the framing decoder already said ndjson.not_json
        if not isinstance(line, dict):
            continue
        if call.error is None:
            call.error = error_of(line, view.status, f"stream event {n}")
        status = line.get("status")
        if isinstance(status, str) and (not statuses or statuses[-1] != status):
            statuses.append(status)
    call.diagnostics.extend(d for d in view.events if isinstance(d, Diagnostic))
    call.extras["status"] = statuses
    ended = (bool(statuses) and statuses[-1] == "success") or call.error is not None
    call.complete = view.exchange.complete and not cut and ended


EMBED = Embed()
MODELS = Models()
ENDPOINT_FAMILIES: tuple[ApiFamily, ...] = (EMBED, MODELS)
