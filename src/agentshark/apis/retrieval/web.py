"""Web search APIs -> ``retrieval`` calls (role ``web_search``), each from its API reference:

- Tavily (https://docs.tavily.com/documentation/api-reference/endpoint/search): ``POST
  /search`` ``{query, max_results, search_depth, topic, include_domains...}`` -> ``{query,
  results: [{title, url, content, score, raw_content}], answer, response_time}``.
- Brave (https://api-dashboard.search.brave.com/app/documentation/web-search/query): ``GET
  /res/v1/web/search?q=&count=`` -> ``{type: "search", query: {original}, web: {results:
  [{title, url, description}]}}``.
- Serper (https://serper.dev): ``POST /search`` ``{q, num}`` -> ``{searchParameters: {q},
  organic: [{title, link, snippet, position}]}``.
- Exa (https://docs.exa.ai/reference/search): ``POST /search`` ``{query, numResults}`` ->
  ``{requestId, results: [{id, url, title, score, text}]}``.

The response's shape decides (Tavily's ``results`` next to ``query`` and ``response_time``,
Brave's ``type: search`` with ``web``, Serper's ``searchParameters``, Exa's ``requestId``
with ``results``); the request's shape confirms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from agentshark.apis.documents import document, http_error, int_or_none, query, record
from agentshark.apis.model import Call, GenericPart, Json
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

ROLE = "web_search"


def _dict(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def _items(value: Json) -> list[dict[str, Json]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


class _WebSearch:
    api = ""
    service = ""

    def shape(self, req: dict[str, Json], body: dict[str, Json]) -> tuple[bool, bool]:
        raise NotImplementedError

    def request(self, view: ExchangeView) -> dict[str, Json]:
        return _dict(view.request_json) if view.method.upper() == "POST" else {}

    def match(self, view: ExchangeView) -> float:
        req, body = self.request(view), _dict(view.response_json)
        asked, answered = self.shape(req, body)
        if not asked:
            return 0.0
        if not answered and not (view.status or 0) >= 400:
            return 0.0
        return 0.5 + 0.35 * answered

    def parse(self, view: ExchangeView, call: Call) -> None:
        req, body = self.request(view), view.response_json
        info, docs = self.read(req, _dict(body))
        call.error = http_error(view, body)
        results = [docs] if call.error is None and docs is not None else None
        record(
            call, role=ROLE, service=self.service, operation="retrieval", info=info, results=results
        )

    def read(
        self, req: dict[str, Json], body: dict[str, Json]
    ) -> tuple[dict[str, Json], list[GenericPart] | None]:
        raise NotImplementedError


class Tavily(_WebSearch):
    api = "tavily.search"
    service = "tavily"

    def shape(self, req: dict[str, Json], body: dict[str, Json]) -> tuple[bool, bool]:
        asked = isinstance(req.get("query"), str) and bool(
            {"search_depth", "max_results", "topic", "include_answer"} & req.keys()
        )
        answered = isinstance(body.get("results"), list) and "response_time" in body
        return asked, answered

    def read(
        self, req: dict[str, Json], body: dict[str, Json]
    ) -> tuple[dict[str, Json], list[GenericPart] | None]:
        filters = {
            k: req[k]
            for k in ("topic", "include_domains", "exclude_domains", "time_range")
            if req.get(k)
        }
        info = {
            "queries": [query(req.get("query"))],
            "top_k": int_or_none(req.get("max_results")),
            "filter": filters or None,
            "search_depth": req.get("search_depth"),
        }
        if isinstance(body.get("answer"), str):
            info["answer"] = body["answer"]
        if "results" not in body:
            return info, None
        docs = [
            document(
                n + 1,
                id=r.get("url"),
                score=r.get("score"),
                score_kind="relevance",
                content=r.get("content"),
                title=r.get("title"),
                url=r.get("url"),
            )
            for n, r in enumerate(_items(body.get("results")))
        ]
        return info, docs


class Serper(_WebSearch):
    api = "serper.search"
    service = "serper"

    def shape(self, req: dict[str, Json], body: dict[str, Json]) -> tuple[bool, bool]:
        asked = isinstance(req.get("q"), str)
        return asked, isinstance(body.get("searchParameters"), dict)

    def read(
        self, req: dict[str, Json], body: dict[str, Json]
    ) -> tuple[dict[str, Json], list[GenericPart] | None]:
        info = {
            "queries": [query(req.get("q"))],
            "top_k": int_or_none(req.get("num")),
            "filter": {k: req[k] for k in ("gl", "hl", "location", "tbs") if req.get(k)} or None,
        }
        if "organic" not in body:
            return info, None
        docs = [
            document(
                n + 1,
                id=r.get("link"),
                content=r.get("snippet"),
                title=r.get("title"),
                url=r.get("link"),
                position=r.get("position"),
            )
            for n, r in enumerate(_items(body.get("organic")))
        ]
        return info, docs


class Exa(_WebSearch):
    api = "exa.search"
    service = "exa"

    def shape(self, req: dict[str, Json], body: dict[str, Json]) -> tuple[bool, bool]:
        asked = isinstance(req.get("query"), str) and bool(
            {"numResults", "type", "contents", "includeDomains", "category"} & req.keys()
        )
        return asked, isinstance(body.get("results"), list) and "requestId" in body

    def read(
        self, req: dict[str, Json], body: dict[str, Json]
    ) -> tuple[dict[str, Json], list[GenericPart] | None]:
        filters = {
            k: req[k]
            for k in ("includeDomains", "excludeDomains", "category", "startPublishedDate")
            if req.get(k)
        }
        info = {
            "queries": [query(req.get("query"))],
            "top_k": int_or_none(req.get("numResults")),
            "filter": filters or None,
            "search_type": body.get("resolvedSearchType") or req.get("type"),
        }
        if "results" not in body:
            return info, None
        docs = [
            document(
                n + 1,
                id=r.get("id"),
                score=r.get("score"),
                score_kind="relevance",
                content=r.get("text") or r.get("summary"),
                title=r.get("title"),
                url=r.get("url"),
                published=r.get("publishedDate"),
            )
            for n, r in enumerate(_items(body.get("results")))
        ]
        return info, docs


class Brave(_WebSearch):
    api = "brave.search"
    service = "brave"

    def request(self, view: ExchangeView) -> dict[str, Json]:
        if view.method.upper() != "GET":
            return {}
        return {k: v[0] for k, v in parse_qs(view.query).items()}

    def shape(self, req: dict[str, Json], body: dict[str, Json]) -> tuple[bool, bool]:
        asked = isinstance(req.get("q"), str)
        answered = body.get("type") == "search" and isinstance(body.get("query"), dict)
        return asked, answered

    def read(
        self, req: dict[str, Json], body: dict[str, Json]
    ) -> tuple[dict[str, Json], list[GenericPart] | None]:
        count = req.get("count")
        info = {
            "queries": [query(req.get("q"))],
            "top_k": int(count) if isinstance(count, str) and count.isdigit() else None,
            "filter": {
                k: req[k] for k in ("country", "search_lang", "freshness", "safesearch") if k in req
            }
            or None,
        }
        web = body.get("web")
        if not isinstance(web, dict):
            return info, [] if body.get("type") == "search" else None
        docs = [
            document(
                n + 1,
                id=r.get("url"),
                content=r.get("description"),
                title=r.get("title"),
                url=r.get("url"),
            )
            for n, r in enumerate(_items(web.get("results")))
        ]
        return info, docs


TAVILY = Tavily()
SERPER = Serper()
EXA = Exa()
BRAVE = Brave()
FAMILIES: tuple[ApiFamily, ...] = (TAVILY, SERPER, EXA, BRAVE)
