"""An A2A event stream read into a call: the SSE events of the JSON-RPC and REST bindings
and the messages of the gRPC binding give the same ``StreamResponse`` payloads, in order.

Every payload is summarized in ``extras["stream_events"]`` (``kind`` one of ``task``,
``message``, ``status-update``, ``artifact-update``, ``error``; ``state``, ``final``,
``artifact_id``, ``append``, ``last_chunk`` when present) and folded into a
:class:`~agentshark.apis.a2a.parts.TaskOutput`: artifact chunks appended per ``artifactId``
as ``append`` says, the last status message, the last state. The call is complete only when
the stream ended on its own and the last status says it is over: ``final: true`` (0.3), a
terminal state, or an interrupted state (``input-required``, ``auth-required``) which also
ends a 1.0 stream; or a Message or an error arrived.
"""

from __future__ import annotations

from agentshark.apis.a2a.parts import (
    TaskOutput,
    classify,
    is_ending,
    message_from,
    result_ids,
)
from agentshark.apis.model import Call, Json
from agentshark.errors import Diagnostic

__all__ = ["StreamReader"]


class StreamReader:
    """The payloads of one stream, fed in order, then :meth:`finish`."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.out = TaskOutput()
        self.events: list[dict[str, Json]] = []
        self.cut = False  # a payload was lost (cut event or message)
        self.ended = False  # a Message or an error ended the stream

    def error(self) -> None:
        """An error ended the stream (the caller set ``call.error``)."""
        self.events.append({"kind": "error"})
        self.ended = True

    def add(self, payload: Json, where: str, ts: float) -> None:
        """One ``StreamResponse`` (or a 0.3 kind-tagged result); ``where`` is its JSON path."""
        call, out = self.call, self.out
        kind, obj = classify(payload)
        record: dict[str, Json] = {"kind": kind}
        if kind is None:
            self.events.append(record)
            return
        if isinstance(payload, dict) and obj is not payload:
            where += "." + next(iter(payload))
        result_ids(call, kind, obj, where)
        if kind == "task":
            out.add_task(obj)
            record["state"] = out.state
        elif kind == "message":
            out.message = message_from(obj)
            self.ended = True
        elif kind == "status-update":
            out.status(obj.get("status"))
            record["state"] = out.state
            if "final" in obj:
                record["final"] = obj.get("final")
            if obj.get("final") is True:
                out.final = True
        else:
            out.add_artifact(obj)
            artifact = obj.get("artifact")
            if isinstance(artifact, dict):
                record["artifact_id"] = artifact.get("artifactId")
            for key, name in (("append", "append"), ("lastChunk", "last_chunk")):
                if key in obj:
                    record[name] = obj[key]
        if kind in ("artifact-update", "message") and call.timing.first_token is None:
            call.timing.first_token = ts
        self.events.append(record)

    def finish(self, *, whole: bool, location: str) -> None:
        """Fill the call; ``whole``: the exchange (or stream) ended on its own."""
        call = self.call
        call.extras["stream_events"] = self.events
        self.out.fill(call)
        over = self.ended or self.out.final or is_ending(self.out.state)
        call.complete = whole and not self.cut and over
        if not call.complete:
            call.diagnostics.append(
                Diagnostic(
                    code="a2a.stream_unfinished",
                    message="the stream ended before a final task status, message or error",
                    location=location,
                )
            )
