"""The gRPC binding of A2A -> the same :class:`Call` the JSON-RPC binding gives.

A2A 1.0 (https://a2a-protocol.org/latest/specification/, §10 gRPC binding) serves
``lf.a2a.v1.A2AService``; 0.3 served ``a2a.v1.A2AService``. A request to
``/<service>/<Method>`` is read with the bundled descriptors of that version
(:mod:`agentshark.apis.protos`) and every message is turned into its proto3 JSON, which is
what the JSON-RPC binding carries in ``params`` and ``result`` (1.0 defines its JSON-RPC
payloads as the ProtoJSON of these same messages). From there the JSON-RPC path's readers do
the rest, so the two bindings give the same call:

- the operation is the method as sent (``SendMessage``, ``SendStreamingMessage``,
  ``GetTask``, ``CancelTask``, ``SubscribeToTask`` (0.3: ``TaskSubscription``), the push
  config methods, ``GetExtendedAgentCard`` (0.3: ``GetAgentCard``)); ``extras["binding"]``
  is ``grpc``, ``extras["method_set"]`` the version of the service (``1.0`` or ``0.3``);
- the request message is the JSON-RPC ``params`` (:func:`calls.request_input`), its JSON
  paths ``request message 0 $...``; a unary response message is the ``result``; the messages
  of a server stream are the stream's events, read as the SSE events are
  (:class:`~agentshark.apis.a2a.stream.StreamReader`);
- the ``a2a-version`` metadata (an HTTP/2 header) is ``extras["a2a_version"]``;
- a non-OK ``grpc-status`` is ``CallError(type="grpc", code=<status name>)`` with the
  percent-decoded ``grpc-message``; the details of ``grpc-status-details-bin`` (a
  ``google.rpc.Status``) are ``extras["error_data"]``, as JSON-RPC's ``error.data``; when one
  is a ``google.rpc.ErrorInfo`` whose ``reason`` names an A2A error (``TASK_NOT_FOUND``),
  ``extras["error_name"]`` is that error's name as JSON-RPC gives it (``TaskNotFoundError``);
- the call is complete when the exchange is whole, a status was seen, and (OK) the unary
  response message was read, or the stream ended as A2A streams end.

0.3's messages differ from 1.0's in two names, mapped before reading: a Message's parts are
``content`` and a TaskStatus's message is ``update``. Without the protobuf package the call
keeps its operation and status and a diagnostic says the messages were not read.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agentshark.apis.a2a.parts import ERROR_NAMES, apply_result
from agentshark.apis.a2a.stream import StreamReader
from agentshark.apis.grpc_view import (
    GrpcStatus,
    grpc_method,
    grpc_status,
    read_side,
    status_details,
)
from agentshark.apis.model import Call, CallError, Json
from agentshark.apis.protos import schemas_for
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.model import header

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Grpc"]

_PATH = re.compile(r"/(?P<service>(?:lf\.)?a2a\.v1\.A2AService)/(?P<method>[A-Za-z]+)$")
_STREAMING = frozenset({"SendStreamingMessage", "SubscribeToTask", "TaskSubscription"})
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
# A2A 1.0 §10.6: an A2A error's ErrorInfo reason is "the A2A error type in UPPER_SNAKE_CASE
# without the Error suffix": TaskNotFoundError -> TASK_NOT_FOUND (the A2A-specific errors,
# JSON-RPC codes -32001 and on)
_REASONS = {
    re.sub(r"(?<!^)(?=[A-Z])", "_", name.removesuffix("Error")).upper(): name
    for code, name in ERROR_NAMES.items()
    if code > -32100
}


class Grpc:
    """``/lf.a2a.v1.A2AService/<Method>`` and ``/a2a.v1.A2AService/<Method>``."""

    api = "a2a"

    def __init__(self, request_input: Callable[[Call, Json, str], None]) -> None:
        self._input = request_input

    def match(self, view: ExchangeView) -> float:
        # the path first: cheap, and already split for the other families
        if _PATH.search(view.path) is None or grpc_method(view) is None:
            return -1.0
        return 0.95

    def parse(self, view: ExchangeView, call: Call) -> None:
        found = _PATH.search(view.path)
        assert found is not None  # match made sure
        operation = found["method"]
        v03 = not found["service"].startswith("lf.")
        call.operation = operation
        call.stream = operation in _STREAMING
        call.extras["binding"] = "grpc"
        call.extras["method_set"] = "0.3" if v03 else "1.0"
        req = view.exchange.request
        version = header(req.headers, "a2a-version") if req is not None else None
        if version:
            call.extras["a2a_version"] = version
        requests, diags = read_side(view, request=True, family="a2a")
        call.diagnostics.extend(diags)
        if requests and requests[0].doc is not None:
            self._input(
                call, _from_v03(requests[0].doc) if v03 else requests[0].doc, "request message 0 $"
            )
        responses, diags = read_side(view, request=False, family="a2a")
        call.diagnostics.extend(diags)
        status = grpc_status(view)
        if status.code is not None and status.code != 0:
            call.error = _error(view, status, call)
        docs = [(m, _from_v03(m.doc) if v03 and m.doc else m.doc) for m in responses]
        if call.stream:
            reader = StreamReader(call)
            for m, doc in docs:
                if doc is None:
                    reader.cut = True
                else:
                    reader.add(doc, f"response message {m.n} $", m.ts)
            if call.error is not None:
                reader.error()
            reader.finish(
                whole=view.exchange.complete and status.code is not None,
                location=f"{view.exchange.id} response",
            )
            return
        read = bool(docs) and docs[0][1] is not None
        if read and call.error is None:
            apply_result(call, docs[0][1], "response message 0 $")
        call.complete = (
            view.exchange.complete
            and status.code is not None
            and (call.error is not None or read or operation.startswith("Delete"))
        )


def _error(view: ExchangeView, status: GrpcStatus, call: Call) -> CallError:
    """The call's error; the ``google.rpc.Status`` details (``grpc-status-details-bin``, read
    with the bundled ``google/rpc`` descriptors) go to ``extras["error_data"]`` as JSON-RPC's
    ``error.data`` holds them, and an ``ErrorInfo`` reason to ``error_name``."""
    data = status_details(view)
    schemas = schemas_for(view.path)
    if data is not None and schemas is not None:
        doc, why = schemas.to_json("google.rpc.Status", data)
        details = doc.get("details") if doc is not None else None
        if isinstance(details, list) and details:
            call.extras["error_data"] = details
        for item in details if isinstance(details, list) else []:
            reason = item.get("reason") if isinstance(item, dict) else None
            if item.get("@type") == _ERROR_INFO and isinstance(reason, str):
                if reason in _REASONS:
                    call.extras["error_name"] = _REASONS[reason]
                break
        if why is not None:
            call.diagnostics.append(
                Diagnostic(
                    code="a2a.grpc_bad_status_details",
                    message=f"grpc-status-details-bin is not a google.rpc.Status: {why}",
                    location=f"{view.exchange.id} response trailers",
                )
            )
    return CallError(
        status=view.status,
        type="grpc",
        code=status.name or (str(status.code) if status.code is not None else None),
        message=status.message,
        source="trailers",
    )


def _from_v03(doc: dict[str, Json]) -> dict[str, Json]:
    """A 0.3 message's JSON with 1.0's names: Message ``content`` -> ``parts``, TaskStatus
    ``update`` -> ``message``, wherever a message or a status sits in the A2A types."""
    out: dict[str, Json] = {}
    for key, value in doc.items():
        if key in ("request", "msg", "message", "update") and isinstance(value, dict):
            value = _message_v03(value)
            key = "message" if key == "update" else key
        elif key in ("task", "status", "statusUpdate") and isinstance(value, dict):
            value = _from_v03(value)
        elif key == "history" and isinstance(value, list):
            value = [_message_v03(m) if isinstance(m, dict) else m for m in value]
        out[key] = value
    return out


def _message_v03(msg: dict[str, Json]) -> dict[str, Json]:
    if "content" in msg and "parts" not in msg:
        msg = {("parts" if k == "content" else k): v for k, v in msg.items()}
    return msg
