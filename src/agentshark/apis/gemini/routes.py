"""The URL side of the Gemini API: which method, model, provider and encoding a URL names.

Paths, from Google's references:

- Google AI Studio (Gemini API, https://ai.google.dev/api): ``/v1beta/models/{model}:{method}``
  (also ``/v1/``, ``/v1alpha/``, ``tunedModels/{m}:{method}``), resources ``/v1beta/models``,
  ``cachedContents``, ``files`` (uploads under ``/upload/v1beta/files``), ``fileSearchStores``
  (the Interactions API, ``/v1beta/interactions``, is not parsed: the registry names it);
- Vertex AI (https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest):
  ``/v1[beta1]/projects/{p}/locations/{l}/publishers/google/models/{model}:{method}`` on
  ``aiplatform.googleapis.com`` or a regional ``{region}-aiplatform.googleapis.com``, also
  ``…/endpoints/{e}:{method}`` and the shortened ``/v1/publishers/google/models/…`` (express
  mode, gateways);
- Gemini Code Assist (the Gemini CLI's ``cloudcode-pa.googleapis.com``):
  ``/v1internal:{method}``, with the request in ``{"model", "project", "request": {…}}`` and
  each response (or stream chunk) in ``{"response": {…}}``.

Methods: ``generateContent``, ``streamGenerateContent`` (``?alt=sse`` for SSE, otherwise one
JSON array), ``countTokens``, ``embedContent``, ``batchEmbedContents``. The query's
``$alt=json;enum-encoding=int`` (sent by the older Vertex SDK) makes enums numbers.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from urllib.parse import unquote

from agentshark.apis.view import ExchangeView

__all__ = ["METHODS", "Route", "route_of"]

METHODS = frozenset(
    {
        "generateContent",
        "streamGenerateContent",
        "countTokens",
        "embedContent",
        "batchEmbedContents",
    }
)

_MODEL_METHOD = re.compile(
    r"(?P<vertex>/projects/[^/]+/locations/[^/]+)?"
    r"(?P<publisher>/publishers/(?P<pub>[^/]+))?"
    r"/(?P<kind>models|tunedModels|endpoints)/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)
_CODE_ASSIST = re.compile(r"/v1internal:(?P<method>[A-Za-z]+)$")
_RESOURCE = re.compile(
    r"^(?:/upload)?/v1(?:alpha|beta\d*)?"
    r"/(?P<res>models|cachedContents|files|fileSearchStores)"
    r"(?:/(?P<id>[^/:]+))?(?::(?P<verb>[A-Za-z]+))?/?$"
)
_HOSTS = {
    "generativelanguage.googleapis.com": "gemini",
    "cloudcode-pa.googleapis.com": "code_assist.gemini",
}


@dataclass(frozen=True, slots=True)
class Route:
    method: str | None  # "generateContent"... (model methods), None for a resource
    provider: str | None  # "gemini", "vertex.gemini", "code_assist.gemini" or None
    model: str | None = None  # from the path
    resource: str | None = None  # "models", "cachedContents", "files", ...
    item: str | None = None  # a resource id in the path
    verb: str | None = None  # ":download", ":uploadToFileSearchStore"...
    numeric_enums: bool = False  # $alt=json;enum-encoding=int
    sse: bool = False  # alt=sse

    @property
    def vertex(self) -> bool:
        return self.provider == "vertex.gemini"


def route_of(view: ExchangeView) -> Route:
    """What the URL says (cheap: cached per path, host and query)."""
    return _route(view.path, view.host.lower(), view.query)


@functools.lru_cache(maxsize=1024)
def _route(path: str, host: str, query: str) -> Route:
    query = unquote(query)
    numeric = "enum-encoding=int" in query
    sse = "alt=sse" in query
    if m := _CODE_ASSIST.search(path):
        return Route(m.group("method"), "code_assist.gemini", numeric_enums=numeric, sse=sse)
    if (m := _MODEL_METHOD.search(path)) and (m.group("pub") in (None, "google")):
        vertex = (
            m.group("vertex") is not None
            or m.group("publisher") is not None
            or host.endswith("aiplatform.googleapis.com")
        )
        provider = "vertex.gemini" if vertex else (_provider(host, path) or "gemini")
        model = unquote(m.group("model"))
        if m.group("kind") == "tunedModels":
            model = f"tunedModels/{model}"
        elif m.group("kind") == "endpoints":
            model = f"endpoints/{model}"
        return Route(m.group("method"), provider, model, numeric_enums=numeric, sse=sse)
    if m := _RESOURCE.search(path):
        item = unquote(m.group("id")) if m.group("id") else None
        return Route(
            None,
            _provider(host, path),
            resource=m.group("res"),
            item=item,
            verb=m.group("verb"),
        )
    return Route(None, _provider(host, path))


def _provider(host: str, path: str) -> str | None:
    provider = _HOSTS.get(host)
    if provider is not None:
        return provider
    if host.endswith("aiplatform.googleapis.com") or "vertex" in path.lower():
        return "vertex.gemini"
    return "gemini" if host.endswith(".googleapis.com") or "gemini" in path.lower() else None
