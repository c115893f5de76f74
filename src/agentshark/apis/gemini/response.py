"""``GenerateContentResponse`` objects -> the response side of a call, whole or streamed.

A whole response is one ``GenerateContentResponse``; a stream is a sequence of them (SSE
``data:`` events, or the elements of one JSON array), each carrying the next pieces of each
candidate (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse). The
same :class:`ResponseMerger` reads both:

- candidates are merged by ``index`` (absent: 0, the only candidate); each is one output
  message. Within one response its parts are kept as sent; across stream chunks a text part
  continues the last part of the candidate when both are text of the same kind (``thought``
  or not) and the new piece brings no second ``thoughtSignature``: the pieces are
  concatenated (the shared :class:`~agentshark.apis.accumulate.PartsAccumulator`). A
  signature arriving on an empty text piece is the last part's. Function calls, media and
  code parts arrive whole and are kept whole.
- ``finishReason`` per candidate (the last one sent); numbers (``enum-encoding=int``) are
  mapped to their names with the table of the API that sent them (AI Studio's and Vertex's
  differ past 4: ``FINISH_REASONS``); an unknown number is kept as its digits.
  ``safetyRatings``, ``citationMetadata``, ``groundingMetadata``, ``urlContextMetadata``,
  ``logprobsResult``, ``avgLogprobs``, ``finishMessage`` of each candidate are kept in
  ``extras["response"]["candidates"][i]`` (the last value of each field).
- ``usageMetadata``: each chunk's is cumulative, the last one sent stands; ``modelVersion``
  -> response model; ``responseId`` -> response id (the first sent; a stream that changes it
  is a diagnostic); ``promptFeedback`` (``blockReason`` when the prompt was blocked: no
  candidates, and that is the answer) under ``extras["response"]["promptFeedback"]``.
- an ``{"error": {…}}`` object (a whole body, or a chunk in a stream) is the call's error.

A stream is finished when every candidate seen has a finish reason, or the prompt was
blocked, or an error chunk ended it. There is no end marker: the last chunk of a cut
stream looks like any other, so without a finish reason the call stays incomplete.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.gemini.parts import error_of, is_int, part_of, role_of, usage_of
from agentshark.apis.model import (
    Call,
    CallError,
    Json,
    Message,
    ReasoningPart,
    TextPart,
)
from agentshark.apis.view import ExchangeView
from agentshark.errors import Diagnostic
from agentshark.framing.events import JsonDocument, SseEvent

__all__ = ["BLOCK_REASONS", "FINISH_REASONS", "ResponseMerger", "stream_chunks", "unwrap"]

# Candidate.FinishReason by number: AI Studio (google.ai.generativelanguage.v1beta) and
# Vertex AI (google.cloud.aiplatform.v1) number them differently past RECITATION.
_COMMON = ("FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION")
FINISH_REASONS: dict[bool, dict[int, str]] = {
    False: dict(
        enumerate(
            (
                *_COMMON,
                "OTHER",
                "LANGUAGE",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "SPII",
                "MALFORMED_FUNCTION_CALL",
                "IMAGE_SAFETY",
                "UNEXPECTED_TOOL_CALL",
            )
        )
    ),
    True: dict(
        enumerate(
            (
                *_COMMON,
                "OTHER",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "SPII",
                "MALFORMED_FUNCTION_CALL",
            )
        )
    ),
}
BLOCK_REASONS = dict(
    enumerate(
        (
            "BLOCK_REASON_UNSPECIFIED",
            "SAFETY",
            "OTHER",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "IMAGE_SAFETY",
        )
    )
)
_KEPT = (
    "safetyRatings",
    "citationMetadata",
    "groundingMetadata",
    "urlContextMetadata",
    "logprobsResult",
    "avgLogprobs",
    "finishMessage",
    "tokenCount",
    "groundingAttributions",
)
_RESPONSE_FIELDS = frozenset(
    {"candidates", "usageMetadata", "modelVersion", "responseId", "promptFeedback", "error"}
)


# a long-running Operation ({"name", "done", "response"}) carries a response too, kept whole
_NOT_WRAPPERS = _RESPONSE_FIELDS | {"name", "done", "metadata"}


def unwrap(body: dict[str, Json]) -> tuple[dict[str, Json], dict[str, Json]]:
    """Code Assist's ``{"response": {…}, "traceId": …}`` -> (the response, the wrapper's other
    fields); any other body is its own response."""
    inner = body.get("response")
    if isinstance(inner, dict) and not _NOT_WRAPPERS.intersection(body):
        return inner, {k: v for k, v in body.items() if k != "response"}
    return body, {}


@dataclass(slots=True)
class _Candidate:
    acc: PartsAccumulator
    role: str | None = None
    finish_reason: str | None = None
    kept: dict[str, Json] = field(default_factory=dict)
    serial: int = 0  # the accumulator key of the next part
    last: tuple[str, int] | None = None  # kind and key of the last text part, if it was last
    signed: bool = False  # the last text part has a thoughtSignature


class ResponseMerger:
    """Feed ``GenerateContentResponse`` objects in order; read the results when done."""

    def __init__(self, *, vertex: bool, location: str = "") -> None:
        self._vertex = vertex
        self._location = location
        self._candidates: dict[int, _Candidate] = {}
        self.usage: dict[str, Json] | None = None
        self.model_version: str | None = None
        self.response_id: str | None = None
        self.prompt_feedback: dict[str, Json] | None = None
        self.error: CallError | None = None
        self.error_details: Json = None
        self.extras: dict[str, Json] = {}
        self.chunks = 0
        self.diagnostics: list[Diagnostic] = []

    # -- feeding --------------------------------------------------------------------------

    def feed(self, body: dict[str, Json], *, source: str, status: int | None = None) -> bool:
        """One response object; False when it is none (neither a response nor an error)."""
        body, wrapper = unwrap(body)
        if wrapper:
            self.extras.update(wrapper)
        error = error_of(body, status, source)
        if error is not None:
            self.error = error
            inner = body.get("error")
            if isinstance(inner, dict) and inner.get("details") is not None:
                self.error_details = inner["details"]
            return True
        if not _RESPONSE_FIELDS.intersection(body):
            return False
        self.chunks += 1
        stream = self.chunks > 1
        candidates = body.get("candidates")
        for i, raw in enumerate(candidates if isinstance(candidates, list) else ()):
            if isinstance(raw, dict):
                self._candidate(raw, i, stream=stream)
        self._response_fields(body)
        return True

    def _response_fields(self, body: dict[str, Json]) -> None:
        usage = body.get("usageMetadata")
        if isinstance(usage, dict):
            self.usage = usage
        version = body.get("modelVersion")
        if isinstance(version, str):
            self.model_version = version
        rid = body.get("responseId")
        if isinstance(rid, str):
            if self.response_id is not None and rid != self.response_id:
                self._diagnose(
                    "gemini.stream.response_id_changed",
                    f"responseId changes from {self.response_id!r} to {rid!r}: the first is kept",
                )
            self.response_id = self.response_id or rid
        feedback = body.get("promptFeedback")
        if isinstance(feedback, dict):
            feedback = dict(feedback)
            reason = feedback.get("blockReason")
            if isinstance(reason, int) and not isinstance(reason, bool):
                feedback["blockReason"] = BLOCK_REASONS.get(reason, str(reason))
            self.prompt_feedback = feedback
        for key, value in body.items():
            if key not in _RESPONSE_FIELDS and value is not None:
                self.extras[key] = value

    def _candidate(self, raw: dict[str, Json], position: int, *, stream: bool) -> None:
        index = raw.get("index", position)
        index = index if is_int(index) else position
        assert isinstance(index, int)
        cand = self._candidates.get(index)
        if cand is None:
            cand = self._candidates[index] = _Candidate(
                PartsAccumulator(location=f"{self._location} candidate {index}")
            )
            stream = False  # nothing to continue
        reason = raw.get("finishReason")
        if is_int(reason):
            assert isinstance(reason, int)
            reason = FINISH_REASONS[self._vertex].get(reason, str(reason))
        if isinstance(reason, str):
            cand.finish_reason = reason
        for key in _KEPT:
            if raw.get(key) is not None:
                cand.kept[key] = raw[key]
        content = raw.get("content")
        if not isinstance(content, dict):
            return
        cand.role = role_of(content.get("role")) or cand.role
        parts = content.get("parts")
        for n, piece in enumerate(parts if isinstance(parts, list) else ()):
            self._part(cand, piece, continues=stream and n == 0)

    def _part(self, cand: _Candidate, raw: Json, *, continues: bool) -> None:
        part = part_of(raw)
        if isinstance(part, TextPart | ReasoningPart):
            kind = "reasoning" if isinstance(part, ReasoningPart) else "text"
            signature = "thoughtSignature" in part.provider_details
            last = cand.last
            if (
                continues
                and last is not None
                and last[0] == kind
                and not (signature and cand.signed)
            ):
                key = last[1]
            elif (
                continues
                and last is not None
                and not part.content
                and signature
                and not cand.signed
            ):
                kind, key = last  # a signature alone, for the part before it
            else:
                key = cand.serial
                cand.serial += 1
                cand.signed = False
            if kind == "text":
                cand.acc.text(key, part.content)
            else:
                cand.acc.reasoning(key, part.content)
            if part.provider_details:
                cand.acc.details(key, kind, **part.provider_details)
            cand.signed = cand.signed or signature
            cand.last = (kind, key)
            return
        cand.acc.whole(cand.serial, part)
        cand.serial += 1
        cand.last = None

    def _diagnose(self, code: str, message: str) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, location=self._location))

    # -- results --------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """Every candidate has its finish reason, or the prompt was blocked, or an error."""
        if self.error is not None:
            return True
        if self.prompt_feedback is not None and "blockReason" in self.prompt_feedback:
            return True
        cands = self._candidates.values()
        return bool(cands) and all(c.finish_reason is not None for c in cands)

    @property
    def answered(self) -> bool:
        """Something a whole response is made of arrived (candidates, feedback, usage)."""
        return self.chunks > 0 or self.error is not None

    def fill(self, call: Call) -> None:
        """The merged response into ``call``."""
        for index in sorted(self._candidates):
            cand = self._candidates[index]
            parts = cand.acc.parts()
            self.diagnostics.extend(cand.acc.diagnostics)
            call.output_messages.append(
                Message(
                    role=cand.role or "assistant", parts=parts, finish_reason=cand.finish_reason
                )
            )
        call.finish_reasons = [
            c.finish_reason
            for _, c in sorted(self._candidates.items())
            if c.finish_reason is not None
        ]
        if self.response_id is not None:
            call.response_id = self.response_id
        if self.model_version is not None:
            call.response_model = self.model_version
        if self.usage is not None:
            call.usage = usage_of(self.usage)
        if self.error is not None:
            call.error = self.error
        extras = dict(self.extras)
        kept = {str(i): c.kept for i, c in sorted(self._candidates.items()) if c.kept}
        if kept:
            extras["candidates"] = kept
        if self.prompt_feedback is not None:
            extras["promptFeedback"] = self.prompt_feedback
        if self.error_details is not None:
            extras["error_details"] = self.error_details
        if extras:
            call.extras["response"] = extras
        call.diagnostics.extend(self.diagnostics)


# -- stream chunks ----------------------------------------------------------------------------


def stream_chunks(
    view: ExchangeView, diagnostics: list[Diagnostic]
) -> Iterator[tuple[int, dict[str, Json] | None, float, bool]]:
    """The stream's chunks as (place, JSON object, arrival time, whole): SSE ``data`` or the
    JSON array's elements. A chunk that is not a JSON object is a diagnostic and skipped;
    ``None`` stands for the array's cut (``jsonarray.truncated``). Framing diagnostics go to
    ``diagnostics``."""
    location = f"{view.exchange.id} response"
    n = -1
    for out in view.events:
        if isinstance(out, Diagnostic):
            diagnostics.append(out)
            if out.code == "jsonarray.truncated":
                yield n, None, 0.0, False
            continue
        if isinstance(out, SseEvent):
            raw: bytes | str = out.data
            whole = out.complete
            if not out.data.strip():
                continue
        elif isinstance(out, JsonDocument):
            raw, whole = out.raw, out.complete
        else:
            continue
        n += 1
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, list) and len(data) == 1:
            data = data[0]  # an error sent as a one-element array
        if not isinstance(data, dict):
            if whole:
                diagnostics.append(
                    Diagnostic(
                        code="gemini.stream.bad_chunk",
                        location=f"{location} stream event {n} byte {out.offset}",
                        message=f"stream event {n} is not a JSON object: skipped",
                    )
                )
            continue
        yield n, data, out.ts, whole
