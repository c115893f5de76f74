"""ConverseStream events -> one output message, its usage, metrics and status (also Amazon
Nova's InvokeModelWithResponseStream chunks, which carry the same events by name).

The events (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html),
each an event stream message whose ``:event-type`` names it and whose JSON payload is the event
(with a random padding member ``p``, dropped):

- ``messageStart`` ``{role}``;
- ``contentBlockStart`` ``{contentBlockIndex, start: {toolUse: {toolUseId, name}} | ...}``
  (text and reasoning blocks have none: their first delta opens them);
- ``contentBlockDelta`` ``{contentBlockIndex, delta}``, ``delta`` one of ``text``,
  ``toolUse.input`` (tool input as JSON text in fragments, parsed once at the end),
  ``reasoningContent`` (``text``, ``signature``, ``redactedContent``), ``citation``, and
  members for other blocks (kept);
- ``contentBlockStop`` ``{contentBlockIndex}``;
- ``messageStop`` ``{stopReason, additionalModelResponseFields}``: the message is over;
- ``metadata`` ``{usage, metrics: {latencyMs}, trace, performanceConfig, serviceTier}``
  (after ``messageStop``).

Blocks feed the shared :class:`PartsAccumulator` keyed by ``(contentBlockIndex, n)``, ``n``
counting the ``contentBlockStop`` events of that index before, so an index used again after
its stop opens a new block (Nova's invoke stream does so). Deltas that do not fit their
block are kept under ``extras.response.unplaced_deltas`` and reported, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentshark.apis.accumulate import PartsAccumulator
from agentshark.apis.bedrock.content import tool_call_part
from agentshark.apis.model import CallError, GenericPart, Json, Part, ToolCallPart
from agentshark.errors import Diagnostic, Severity

__all__ = ["ConverseStream"]

PADDING = "p"  # ConverseStream pads every payload with a random-length "p" member


@dataclass(slots=True)
class _Block:
    kind: str  # "text", "reasoning", "tool", "whole"
    part: GenericPart | None = None  # whole blocks
    citations: list[Json] = field(default_factory=list)


class ConverseStream:
    """Feed the events in order (``feed``; ``error`` for an exception message); read the
    results when the stream is over."""

    def __init__(self, *, location: str = "") -> None:
        self._location = location
        self._acc = PartsAccumulator(location=location)
        self._blocks: dict[tuple[int, int], _Block] = {}
        self._stops: dict[int, int] = {}  # contentBlockStop events seen per index
        self._n = 0
        self.started = False
        self.role: str | None = None
        self.stop_reason: str | None = None
        self.usage: dict[str, Json] | None = None
        self.stopped = False  # messageStop arrived
        self.error: CallError | None = None
        self.first_token: float | None = None
        self.extras: dict[str, Json] = {}
        self.diagnostics: list[Diagnostic] = []

    @property
    def ended(self) -> bool:
        """The stream reached its end: ``messageStop`` or an exception."""
        return self.stopped or self.error is not None

    def parts(self) -> list[Part]:
        parts = self._acc.parts()
        self.diagnostics.extend(self._acc.diagnostics)
        return parts

    def error_event(self, error: CallError, n: int) -> None:
        self._n = n
        if self.error is not None:
            self._diagnose("bedrock.stream.repeated_exception", "a second exception: kept first")
            self.extras.setdefault("exceptions", []).append(error.to_json())
            return
        self.error = error

    def feed(self, name: str, data: dict[str, Json], *, n: int, ts: float) -> None:
        self._n = n
        data = {k: v for k, v in data.items() if k != PADDING}
        if name == "contentBlockDelta":
            self._delta(data, ts)
        elif name == "contentBlockStart":
            self._start(data)
        elif name == "contentBlockStop":
            index = data.get("contentBlockIndex")
            if isinstance(index, int):
                self._stops[index] = self._stops.get(index, 0) + 1
        elif name == "messageStart":
            role = data.get("role")
            self.role = role if isinstance(role, str) else self.role
            self.started = True
        elif name == "messageStop":
            stop = data.get("stopReason")
            self.stop_reason = stop if isinstance(stop, str) else None
            self.stopped = True
            self._keep(data, "stopReason")
        elif name == "metadata":
            usage = data.get("usage")
            self.usage = dict(usage) if isinstance(usage, dict) else self.usage
            self._keep(data, "usage")
        else:
            self.extras.setdefault("unknown_events", []).append({name: data})
            self._diagnose(
                "bedrock.stream.unknown_event", f"unknown event {name!r} kept raw", severity="info"
            )

    # -- blocks ---------------------------------------------------------------------------

    def _key(self, index: int) -> tuple[int, int]:
        return index, self._stops.get(index, 0)

    def _start(self, data: dict[str, Json]) -> None:
        index, start = data.get("contentBlockIndex"), data.get("start")
        if not isinstance(index, int) or not isinstance(start, dict):
            self._diagnose("bedrock.stream.bad_event", "contentBlockStart without an index")
            return
        key = self._key(index)
        if key in self._blocks:
            self._diagnose(
                "bedrock.stream.block_restarted", f"contentBlockStart repeats index {index}"
            )
            self._stops[index] = self._stops.get(index, 0) + 1
            key = self._key(index)
        tool = start.get("toolUse")
        if len(start) == 1 and isinstance(tool, dict) and (part := tool_call_part(tool)):
            self._blocks[key] = _Block("tool")
            self._acc.tool_call(key, id=part.id, name=part.name, **part.provider_details)
            if part.arguments is not None:  # no start carries input; kept if one does
                self._acc.details(key, "tool_call", start_input=part.arguments)
        elif start:  # toolResult, image...: kept whole, its deltas appended
            ((member, value),) = list(start.items())[:1]
            whole = GenericPart(type=member, fields=dict(value) if isinstance(value, dict) else {})
            if len(start) > 1:
                whole.fields["start"] = start
            self._blocks[key] = _Block("whole", part=whole)
            self._acc.whole(key, whole)
        # an empty start (vercel/ai's fixtures): the first delta says what the block is

    def _delta(self, data: dict[str, Json], ts: float) -> None:
        index, delta = data.get("contentBlockIndex"), data.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict):
            self._diagnose("bedrock.stream.bad_event", "contentBlockDelta without an index")
            return
        if self.first_token is None:
            self.first_token = ts
        key = self._key(index)
        block = self._blocks.get(key)
        for member, value in delta.items():
            if block is None:
                block = self._blocks[key] = _Block(_IMPLIED.get(member, "whole"))
                if block.kind == "whole":
                    block.part = GenericPart(type=member, fields={})
                    self._acc.whole(key, block.part)
            if not self._apply(key, block, member, value):
                self.extras.setdefault("unplaced_deltas", []).append(data)
                self._diagnose(
                    "bedrock.stream.delta_mismatch",
                    f"a {member!r} delta does not fit block {index} ({block.kind}): kept under "
                    "extras.response.unplaced_deltas",
                )

    def _apply(self, key: tuple[int, int], block: _Block, member: str, value: Json) -> bool:
        match block.kind, member, value:
            case "text", "text", str(text):
                self._acc.text(key, text)
            case "tool", "toolUse", {"input": str(fragment)}:
                if fragment:  # an empty fragment is no JSON text at all
                    self._acc.arguments(key, fragment)
            case "reasoning", "reasoningContent", dict(reasoning):
                return self._reasoning(key, reasoning)
            case "text", "citation", _:
                block.citations.append(value)
                self._acc.details(key, "text", citations=list(block.citations))
            case "whole", _, _ if block.part is not None:
                block.part.fields.setdefault("deltas", []).append({member: value})
            case _:
                return False
        return True

    def _reasoning(self, key: tuple[int, int], reasoning: dict[str, Json]) -> bool:
        fitted = False
        for name, value in reasoning.items():
            if not isinstance(value, str):
                return False
            if name == "text":
                self._acc.reasoning(key, value)
            elif name in ("signature", "redactedContent"):
                self._acc.details(key, "reasoning", **{name: value})  # replaces
            else:
                return False
            fitted = True
        return fitted

    # -- bookkeeping ------------------------------------------------------------------------

    def tool_arguments(self, parts: list[Part]) -> None:
        """A tool call whose start carried ``input`` and no delta followed keeps that input."""
        for part in parts:
            if isinstance(part, ToolCallPart) and "start_input" in part.provider_details:
                start = part.provider_details.pop("start_input")
                if part.arguments_raw is None:
                    part.arguments = start

    def _keep(self, data: dict[str, Json], *used: str) -> None:
        self.extras.update((k, v) for k, v in data.items() if k not in used and v is not None)

    def _diagnose(self, code: str, message: str, *, severity: Severity = "warning") -> None:
        where = f"{self._location} stream event {self._n}"
        self.diagnostics.append(
            Diagnostic(code=code, message=message, location=where, severity=severity)
        )


# the block a first delta implies when no contentBlockStart opened it
_IMPLIED = {
    "text": "text",
    "citation": "text",
    "reasoningContent": "reasoning",
    "toolUse": "tool",
}
