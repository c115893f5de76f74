"""OpenAPI documents name REST tool executions: ``(method, path) -> operationId``.

A document is OpenAPI 3.x (``openapi``, ``paths``, ``servers[].url``;
https://spec.openapis.org/oas/v3.1.0#paths-object) or Swagger 2.0 (``swagger``, ``paths``,
``basePath``; https://swagger.io/specification/v2/), as JSON or YAML. It comes from
``--openapi FILE`` or from the capture itself: a response of an exchange no family claimed
whose JSON body is such a document (a tool server's ``/openapi.json``).

Matching (the Paths Object's rule: "When matching URLs, concrete (non-templated) paths would be
matched before their templated counterparts"): a request path matches a path template when,
after the server's base path, it has the same segments, each ``{param}`` standing for one
whole segment. Of several matches the one with the fewest templated segments wins; two
equally specific ones from different documents are ambiguous and name nothing. Method
names are compared case-insensitively. A document that is not one (no ``paths`` object) is
refused with the reason; operations without an ``operationId`` are left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson
import yaml

from agentshark.apis.model import Json
from agentshark.trace.model import Span

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_PARAM = re.compile(r"\{[^{}/]+\}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    method: str  # upper case
    template: str  # the document's path, with its base path
    operation_id: str
    segments: tuple[str | None, ...]  # None: a templated segment
    source: str  # where the document came from

    @property
    def templated(self) -> int:
        return sum(s is None for s in self.segments)


@dataclass(slots=True)
class OpenApi:
    operations: list[Operation]

    def add(self, doc: Json, source: str) -> str | None:
        """The operations of ``doc`` added; the reason when it is no OpenAPI document."""
        found = operations_of(doc, source)
        if isinstance(found, str):
            return found
        self.operations.extend(found)
        return None

    def name(self, method: str, path: str) -> Operation | None:
        """The operation a request is, or None (no match, or an ambiguous one)."""
        parts = _segments(path)
        best: list[Operation] = []
        for op in self.operations:
            if op.method != method.upper() or not _matches(op.segments, parts):
                continue
            if not best or op.templated < best[0].templated:
                best = [op]
            elif op.templated == best[0].templated:
                best.append(op)
        unique = {(b.template, b.operation_id) for b in best}
        return best[0] if len(unique) == 1 else None


def load_openapi(path: str) -> Json:
    """A document file's content (JSON, else YAML); raises ``OSError`` or ``ValueError``."""
    data = Path(path).read_bytes()
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} is neither JSON nor YAML: {exc}") from None


def is_openapi(doc: Json) -> bool:
    return (
        isinstance(doc, dict)
        and ("openapi" in doc or "swagger" in doc)
        and isinstance(doc.get("paths"), dict)
    )


def operations_of(doc: Json, source: str) -> list[Operation] | str:
    if not is_openapi(doc):
        return "not an OpenAPI document (an object with openapi or swagger, and paths)"
    base = _base_path(doc)
    out: list[Operation] = []
    for template, item in doc["paths"].items():
        if not isinstance(template, str) or not isinstance(item, dict):
            continue
        full = base + template if template.startswith("/") else base + "/" + template
        segments = tuple(None if _PARAM.fullmatch(s) else s for s in _segments(full))
        for method in METHODS:
            op = item.get(method)
            oid = op.get("operationId") if isinstance(op, dict) else None
            if isinstance(oid, str) and oid:
                out.append(
                    Operation(
                        method=method.upper(),
                        template=full,
                        operation_id=oid,
                        segments=segments,
                        source=source,
                    )
                )
    return out


def _base_path(doc: dict[str, Json]) -> str:
    """Swagger's ``basePath``, or the path of OpenAPI 3's first server URL (variables in it
    are left as written)."""
    if isinstance(doc.get("basePath"), str):
        return str(doc["basePath"]).rstrip("/")
    servers = doc.get("servers")
    first = servers[0] if isinstance(servers, list) and servers else None
    url = first.get("url") if isinstance(first, dict) else None
    if not isinstance(url, str):
        return ""
    try:
        return urlsplit(url).path.rstrip("/")
    except ValueError:
        return ""


def _segments(path: str) -> list[str]:
    return [unquote(s) for s in path.split("/") if s]


def _matches(template: tuple[str | None, ...], parts: list[str]) -> bool:
    return len(template) == len(parts) and all(
        t is None or t == p for t, p in zip(template, parts, strict=True)
    )


def name_operations(spans: list[Span], openapi: OpenApi) -> None:
    """Each plain-HTTP tool span's ``http`` attribute gets the ``operation_id`` of the
    operation its request is, the document's ``openapi_route`` and where the document came
    from (``openapi_source``)."""
    if not openapi.operations:
        return
    for span in spans:
        http = span.attributes.get("http")
        if span.kind != "tool" or not isinstance(http, dict) or not http.get("path"):
            continue
        op = openapi.name(str(http["method"]), str(http["path"]))
        if op is not None:
            http["operation_id"] = op.operation_id
            http["openapi_route"] = op.template
            http["openapi_source"] = op.source
