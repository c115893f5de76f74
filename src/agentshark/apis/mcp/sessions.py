"""MCP across exchanges: what one exchange cannot say about its own call.

Two things need another exchange of the same session (``ids["mcp_session_id"]``, which the
session's calls share whichever TCP connection carried them; for an HTTP+SSE session without
one, the endpoint URL its stream named and its requests were posted to):

- A 2024-11-05 HTTP+SSE request is answered ``202``; its response arrives on the session's
  ``GET`` stream, which ends (and so is seen) only when the session does. Such calls
  (``extras["response_via"] == "session stream"``) are held until the stream's call comes:
  the response with the same id fills them (``response_via`` becomes where it was), and the
  stream's own entry for that message is cut down to ``{"kind", "id", "answers", "at"}`` so
  the result is not reported twice.
- A Streamable HTTP request whose SSE reply ended before the response (``"resumed
  stream"``) is held the same way: a ``GET`` with ``Last-Event-ID`` may carry it.
- A server request (``sampling/createMessage``, ``elicitation/create``, ``roots/list``) sent
  in a reply stream is answered by a later ``POST`` of a JSON-RPC response. That call is
  named after the request's method, with ``extras["direction"] = "server_to_client"``, the
  request's params in ``request_params`` and ``extras["server_request_in"]`` (the call whose
  stream carried it). A posted response whose request has not been seen yet (it may come on
  a ``GET`` stream that ends later) is held until it is; one whose request never comes is
  released incomplete (its method is unknown), with a diagnostic.

A ``tasks/*`` call (or a notification about a task) whose task a task-augmented request of
the same session created gets ``extras["task_of"]``: that request's call id.

Calls are released in the order they were held; whatever is still held at the end is
released with a diagnostic saying what was never seen. A request completed by a response on
another exchange is complete only if nothing cut its own exchange (``Call.cut`` empty). At
most :data:`MAX_HELD` calls are held; past that the oldest is released as if at the end.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from agentshark.apis.mcp import methods as mcp_methods
from agentshark.apis.model import Call, Json
from agentshark.errors import Diagnostic
from agentshark.jsonrpc import id_key, message_kind

MAX_HELD = 4096
WAITING = ("session stream", "resumed stream")  # where a request's response may still come

Key = tuple[str, tuple[bool, str]]  # (session id, JSON-RPC id)


@dataclass(slots=True)
class _ServerRequest:
    call_id: str
    exchange_id: str
    at: str
    message: dict[str, Json]


class McpSessions:
    def __init__(self) -> None:
        self._awaiting: OrderedDict[Key, Call] = OrderedDict()  # requests answered 202
        self._answers: OrderedDict[Key, Call] = OrderedDict()  # posted responses
        self._requests: OrderedDict[Key, _ServerRequest] = OrderedDict()
        self._tasks: OrderedDict[tuple[str, str], str] = OrderedDict()  # task -> its request

    def feed(self, call: Call) -> list[Call]:
        """The calls ready to report after ``call`` arrived (``call`` itself, unless held)."""
        if call.api != "mcp":
            return [call]
        session = call.ids.get("mcp_session_id")
        if session is None:
            endpoint = call.extras.get("endpoint")  # an HTTP+SSE session without an id
            if not isinstance(endpoint, str):
                return [call]
            session = "endpoint " + endpoint
        released = self._from_stream(call, session)
        self._task(call, session)
        key = self._key(session, call)
        if call.extras.get("response_via") in WAITING and key is not None:
            self._hold(self._awaiting, key, call, released)
            return released
        if "client_response" in call.extras and key is not None:
            request = self._requests.pop(key, None)
            if request is None:
                self._hold(self._answers, key, call, released)
                return released
            _answer(call, request)
        released.append(call)
        return released

    def _task(self, call: Call, session: str) -> None:
        """A task-augmented request, or a ``tasks/*`` call naming the request's task."""
        task = call.ids.get("mcp_task_id")
        if task is None:
            return
        key = (session, task)
        if not call.operation or not call.operation.startswith(("tasks/", "notifications/")):
            self._tasks.setdefault(key, call.id)
            if len(self._tasks) > MAX_HELD:
                self._tasks.popitem(last=False)
        elif key in self._tasks:
            call.extras["task_of"] = self._tasks[key]

    def close(self) -> list[Call]:
        out = [_unsettled(c) for c in (*self._awaiting.values(), *self._answers.values())]
        self._awaiting.clear()
        self._answers.clear()
        self._requests.clear()
        self._tasks.clear()
        return out

    @staticmethod
    def _key(session: str, call: Call) -> Key | None:
        found = mcp_methods.jsonrpc_id_key(call)
        return None if found is None else (session, found)

    def _from_stream(self, call: Call, session: str) -> list[Call]:
        """Server requests and (HTTP+SSE) responses carried by ``call``'s reply stream."""
        released: list[Call] = []
        entries = call.extras.get("stream_messages")
        if not isinstance(entries, list):
            return released
        for n, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            found = id_key(entry.get("id"))
            if found is None:
                continue
            key = (session, found)
            at = f"{call.exchange_id} response {entry.get('at', 'body')}"
            kind = entry.get("kind")
            if kind == "request":
                request = _ServerRequest(call.id, call.exchange_id, at, entry)
                answer = self._answers.pop(key, None)
                if answer is not None:
                    _answer(answer, request)
                    released.append(answer)
                else:
                    self._requests[key] = request
                    if len(self._requests) > MAX_HELD:
                        self._requests.popitem(last=False)
            elif kind in ("response", "error") and key in self._awaiting:
                waiting = self._awaiting.pop(key)
                msg = {k: v for k, v in entry.items() if k in ("id", "result", "error")}
                msg["jsonrpc"] = "2.0"
                mcp_methods.reply(waiting, msg, at, None)
                waiting.extras["response_via"] = at
                # the response is whole (an SSE event); the request's own exchange may not
                # be, and then already says so (``call.evidence_incomplete``)
                waiting.complete = not waiting.cut
                entries[n] = {
                    "kind": kind,
                    "id": entry.get("id"),
                    "answers": waiting.id,
                    "at": entry.get("at"),
                }
                released.append(waiting)
        return released

    @staticmethod
    def _hold(table: OrderedDict[Key, Call], key: Key, call: Call, released: list[Call]) -> None:
        previous = table.pop(key, None)
        if previous is not None:  # the same id again before the first was settled
            released.append(_unsettled(previous))
        table[key] = call
        if len(table) > MAX_HELD:
            released.append(_unsettled(table.popitem(last=False)[1]))


def _unsettled(call: Call) -> Call:
    return _never_answered(call) if _is_request(call) else _request_not_seen(call)


def _is_request(call: Call) -> bool:
    return "client_response" not in call.extras


def _answer(call: Call, request: _ServerRequest) -> None:
    """Name a posted response after the server request it answers."""
    msg = request.message
    method = msg.get("method")
    call.operation = method if isinstance(method, str) else None
    call.extras["direction"] = "server_to_client"
    call.extras["server_request_in"] = {"call_id": request.call_id, "at": request.at}
    mcp_methods.meta_ids(msg.get("params"), call)
    mcp_methods.params(msg.get("params"), call)
    response = call.extras.pop("client_response")
    if isinstance(response, dict) and message_kind(response) in ("response", "error"):
        mcp_methods.reply(call, response, "request body", None)


def _never_answered(call: Call) -> Call:
    what = f"request {call.operation!r} (id {call.ids.get('jsonrpc_id')})"
    if call.extras.get("response_via") == "resumed stream":
        message = (
            f"{what}: its SSE reply ended before the response, and no resumed stream (a GET "
            "with Last-Event-ID) in the input carries it"
        )
    else:
        message = (
            f"{what} was answered 202: its response belongs on the session's SSE stream, "
            "which the input does not hold (or which does not carry it)"
        )
    call.diagnostics.append(
        Diagnostic(code="mcp.response_not_seen", message=message, location=call.exchange_id)
    )
    return call


def _request_not_seen(call: Call) -> Call:
    """A posted response whose server request is not in the input: which method it answers
    (the call's operation and params) is unknown, so the call is not complete."""
    call.complete = False
    call.diagnostics.append(
        Diagnostic(
            code="mcp.server_request_not_seen",
            message=f"the client posted a response to id {call.ids.get('jsonrpc_id')}, but "
            "the server request it answers is not in the input",
            location=call.exchange_id,
            severity="info",
        )
    )
    return call
