"""Memory services -> ``memory.read`` / ``memory.write`` / ``memory.delete`` calls (role
``memory``): the scope (user, agent, run, session), the records read or written with their ids,
events and versions.

From each service's API reference; the shapes decide, the path confirms:

- mem0 (https://docs.mem0.ai/api-reference; the platform's ``/v1/memories/``,
  ``/v1/memories/search/``, ``/v2/memories/search/``, and the open-source server's
  ``/memories``, ``/search``): a write sends ``messages`` with a ``user_id``/``agent_id``/
  ``run_id`` and gets the records it changed (``id``, ``event`` ``ADD``/``UPDATE``/``DELETE``,
  ``memory`` or ``data.memory``) or, queued (``async_mode``), a ``status`` and ``event_id``; a
  search sends ``query`` and gets records (``id``, ``memory``, ``score``, ``hash``,
  ``updated_at``), as a list or under ``results``; a ``GET`` lists records; a ``DELETE`` of
  ``/memories/{id}`` deletes one.
- Zep (https://help.getzep.com/api-reference): ``POST .../sessions/{id}/memory`` or
  ``.../threads/{id}/messages`` with ``messages`` of ``role_type``/``role`` and ``content``
  (a write); ``GET .../memory`` -> ``relevant_facts``/``context`` (a read);
  ``POST .../graph/search`` ``{query, user_id|group_id, scope}`` -> ``edges`` and ``nodes``.
- Letta (https://docs.letta.com/api-reference): an agent's archival memory (``POST
  .../archival-memory`` ``{text}`` writes, ``GET`` with ``search`` reads: passages with ``id``,
  ``text``) and core memory blocks (``label``, ``value``, ``limit``).

The record's version is what the service gives for one: mem0's ``hash`` and ``updated_at``,
Letta's ``updated_at``; absent otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from agentshark.apis.documents import document, http_error, int_or_none, query, record
from agentshark.apis.model import Call, GenericPart, Json
from agentshark.apis.view import ExchangeView

if TYPE_CHECKING:
    from agentshark.apis.family import ApiFamily

ROLE = "memory"
SCOPES = ("user_id", "agent_id", "run_id", "app_id", "session_id", "group_id", "thread_id")
EVENTS = frozenset({"ADD", "UPDATE", "DELETE", "NONE"})


def _rows(body: Json) -> list[dict[str, Json]] | None:
    rows = body.get("results") if isinstance(body, dict) else body
    if not isinstance(rows, list):
        return None
    return [r for r in rows if isinstance(r, dict)]


def _is_record(row: dict[str, Json]) -> bool:
    data = row.get("data")
    has_text = isinstance(row.get("memory"), str) or (
        isinstance(data, dict) and isinstance(data.get("memory"), str)
    )
    event = row.get("event")
    return "id" in row and (has_text or (isinstance(event, str) and event in EVENTS))


def _scope(source: dict[str, Json]) -> dict[str, Json] | None:
    found = {k: source[k] for k in SCOPES if isinstance(source.get(k), str | int)}
    filters = source.get("filters")
    if isinstance(filters, dict):
        found.update({k: filters[k] for k in SCOPES if isinstance(filters.get(k), str | int)})
    return found or None


def _segment_after(path: str, name: str) -> str | None:
    parts = [p for p in path.split("/") if p]
    return next((parts[i + 1] for i, p in enumerate(parts[:-1]) if p == name), None)


def _finish(
    view: ExchangeView,
    call: Call,
    service: str,
    operation: str,
    info: dict[str, Json],
    docs: list[GenericPart] | None,
) -> None:
    body = view.response_json
    call.error = http_error(view, body)
    record(
        call,
        role=ROLE,
        service=service,
        operation=operation,
        info=info,
        results=[docs] if docs is not None and call.error is None else None,
    )


# -- mem0 -----------------------------------------------------------------------------------


class Mem0:
    api = "mem0.memories"

    def match(self, view: ExchangeView) -> float:
        method = view.method.upper()
        on_path = "/memories" in view.path or view.path.rstrip("/").endswith("/search")
        rows = _rows(view.response_json)
        answered = rows is not None and bool(rows) and all(_is_record(r) for r in rows)
        req = view.request_json if method in ("POST", "PUT") else None
        asked = isinstance(req, dict) and (
            (isinstance(req.get("messages"), list | str) and _scope(req) is not None)
            or (isinstance(req.get("query"), str) and _scope(req) is not None)
        )
        listed = isinstance(req, dict) and isinstance(req.get("filters"), dict)  # v3 get_all
        queued = _queued(view.response_json) is not None
        if listed and not asked and on_path and answered:
            return 0.8
        if method in ("GET", "DELETE") and on_path and answered:
            return 0.8
        if method == "DELETE" and _record_id(view.path) is not None:
            body = view.response_json  # mem0's {"message": "Memory deleted successfully!"}
            return 0.6 if isinstance(body, dict) and isinstance(body.get("message"), str) else 0.0
        if not asked:
            return 0.0
        if answered or queued or (on_path and rows == []):
            return 0.85
        return 0.55 if on_path else 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        method = view.method.upper()
        req = view.request_json if isinstance(view.request_json, dict) else {}
        if method == "GET":
            req = {k: v[0] for k, v in parse_qs(view.query).items()}
        search = isinstance(req.get("query"), str)
        writes = (method == "POST" and "messages" in req) or method == "PUT"
        operation = (
            "memory.delete" if method == "DELETE" else "memory.write" if writes else "memory.read"
        )
        info: dict[str, Json] = {
            "namespace": _scope(req),
            "queries": [query(req["query"])] if search else [],
            "top_k": int_or_none(req.get("top_k", req.get("limit"))),
            "filter": req.get("filters") if isinstance(req.get("filters"), dict) else None,
            "record": _record_id(view.path),
        }
        if operation == "memory.write" and isinstance(req.get("messages"), list):
            info["messages"] = len(req["messages"])
        body = view.response_json
        rows = _rows(body)
        queued = _queued(body)
        docs = None
        if queued is not None:  # async mode: the records are written later
            docs = []
            info.update(queued)
        elif rows is not None:
            docs = [_mem0_record(n, r) for n, r in enumerate(rows)]
        elif isinstance(body, dict) and ("memory" in body or "message" in body):
            docs = [] if "memory" not in body else [_mem0_record(0, body)]
        _finish(view, call, "mem0", operation, info, docs)


def _record_id(path: str) -> str | None:
    """The record a path names (``/v1/memories/{id}/``), not an operation's segment."""
    found = _segment_after(path, "memories")
    return None if found in (None, "add", "search", "history") else found


def _queued(body: Json) -> dict[str, Json] | None:
    """A write mem0 queued (``async_mode``): ``{status, event_id}``, alone or in a list."""
    item = body[0] if isinstance(body, list) and len(body) == 1 else body
    if not isinstance(item, dict) or not isinstance(item.get("event_id"), str):
        return None
    return {k: item[k] for k in ("status", "event_id") if isinstance(item.get(k), str)}


def _mem0_record(n: int, row: dict[str, Json]) -> GenericPart:
    data = row.get("data")
    text = row.get("memory")
    if text is None and isinstance(data, dict):
        text = data.get("memory")
    return document(
        n + 1,
        id=row.get("id"),
        score=row.get("score"),
        score_kind="similarity" if "score" in row else None,
        content=text,
        metadata=row.get("metadata"),
        event=row.get("event"),
        version=row.get("hash"),
        updated_at=row.get("updated_at"),
        scope=_scope(row),
    )


# -- Zep ------------------------------------------------------------------------------------


class Zep:
    api = "zep.memory"

    def match(self, view: ExchangeView) -> float:
        req = view.request_json
        body = view.response_json
        method = view.method.upper()
        if method == "POST" and isinstance(req, dict):
            if (
                isinstance(req.get("query"), str)
                and isinstance(body, dict)
                and ("edges" in body or "nodes" in body or "episodes" in body)
            ):
                return 0.85  # graph search
            messages = req.get("messages")
            if (
                isinstance(messages, list)
                and messages
                and all(
                    isinstance(m, dict) and "role_type" in m and "content" in m for m in messages
                )
            ):
                return 0.85  # a memory write: Zep's role_type
        if (
            method == "GET"
            and isinstance(body, dict)
            and ("relevant_facts" in body or ("context" in body and "messages" in body))
        ):
            return 0.8
        return 0.0

    def parse(self, view: ExchangeView, call: Call) -> None:
        req = view.request_json if isinstance(view.request_json, dict) else {}
        body = view.response_json
        body = body if isinstance(body, dict) else {}
        session = _segment_after(view.path, "sessions") or _segment_after(view.path, "threads")
        scope = _scope(req) or {}
        if session is not None:
            scope["session_id"] = session
        info: dict[str, Json] = {"namespace": scope or None}
        docs: list[GenericPart] | None = None
        if isinstance(req.get("query"), str):
            operation = "memory.read"
            info.update(queries=[query(req["query"])], top_k=int_or_none(req.get("limit")))
            info["scope"] = req.get("scope")
            rows = [r for k in ("edges", "nodes", "episodes") for r in _rows(body.get(k)) or []]
            docs = (
                [
                    document(
                        n + 1,
                        id=r.get("uuid"),
                        score=r.get("score"),
                        content=r.get("fact") or r.get("summary") or r.get("content"),
                        name=r.get("name"),
                        valid_at=r.get("valid_at"),
                        invalid_at=r.get("invalid_at"),
                    )
                    for n, r in enumerate(rows)
                ]
                if body
                else None
            )
        elif view.method.upper() == "GET":
            operation = "memory.read"
            facts = _rows(body.get("relevant_facts")) or []
            docs = (
                [
                    document(n + 1, id=f.get("uuid"), score=f.get("rating"), content=f.get("fact"))
                    for n, f in enumerate(facts)
                ]
                if body
                else None
            )
            if isinstance(body.get("context"), str):
                info["context"] = body["context"]
        else:
            operation = "memory.write"
            messages = req.get("messages")
            info["messages"] = len(messages) if isinstance(messages, list) else None
            uuids = body.get("message_uuids")
            docs = (
                [document(n + 1, id=u) for n, u in enumerate(uuids)]
                if isinstance(uuids, list)
                else ([] if view.status is not None and view.status < 400 else None)
            )
        _finish(view, call, "zep", operation, info, docs)


# -- Letta ----------------------------------------------------------------------------------


def _is_passage(row: dict[str, Json]) -> bool:
    return (
        "id" in row
        and isinstance(row.get("text"), str)
        and ("embedding_config" in row or "archive_id" in row or "agent_id" in row)
    )


def _is_block(row: dict[str, Json]) -> bool:
    return "label" in row and "value" in row and "limit" in row


class Letta:
    api = "letta.memory"

    def match(self, view: ExchangeView) -> float:
        body = view.response_json
        rows = _rows(body) if isinstance(body, list) else [body] if isinstance(body, dict) else None
        if not rows:
            return 0.0
        kind = (
            "archival-memory"
            if all(_is_passage(r) for r in rows)
            else ("core-memory" if all(_is_block(r) for r in rows) else None)
        )
        if kind is None:
            return 0.0
        return 0.85 if f"/{kind}" in view.path else 0.6

    def parse(self, view: ExchangeView, call: Call) -> None:
        method = view.method.upper()
        agent = _segment_after(view.path, "agents")
        params = {k: v[0] for k, v in parse_qs(view.query).items()}
        req = view.request_json if isinstance(view.request_json, dict) else {}
        search = params.get("search") or params.get("query") or req.get("query")
        info: dict[str, Json] = {
            "namespace": {"agent_id": agent} if agent else None,
            "queries": [query(search)] if isinstance(search, str) else [],
            "top_k": int(params["limit"]) if params.get("limit", "").isdigit() else None,
            "memory": "archival"
            if "/archival-memory" in view.path
            else "core"
            if "/core-memory" in view.path
            else None,
        }
        operation = (
            "memory.read"
            if method == "GET" or isinstance(search, str)
            else "memory.delete"
            if method == "DELETE"
            else "memory.write"
        )
        body = view.response_json
        rows = _rows(body) if isinstance(body, list) else [body] if isinstance(body, dict) else []
        docs = [
            document(
                n + 1,
                id=r.get("id"),
                content=r.get("text", r.get("value")),
                label=r.get("label"),
                updated_at=r.get("updated_at"),
                metadata=r.get("metadata"),
            )
            for n, r in enumerate(rows or [])
        ]
        _finish(view, call, "letta", operation, info, docs)


MEM0 = Mem0()
ZEP = Zep()
LETTA = Letta()
FAMILIES: tuple[ApiFamily, ...] = (MEM0, ZEP, LETTA)
