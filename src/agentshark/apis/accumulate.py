"""The parts accumulator: streamed deltas -> the parts of one message, for every family.

Deltas are keyed by the vendor's own ids (a Chat choice's tool-call index, a Responses
``output_index``/``content_index``, an Anthropic content block index): the first delta for a
key opens a part, later ones extend it, and ``parts()`` returns them in the order they were
opened. Tool-call arguments are concatenated as strings and parsed once, at the end. A
``.done`` event's full value checks what the deltas built (a mismatch is a diagnostic and the
full value wins); a stream that sends only the full value still yields the part.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from agentshark.apis.model import (
    Json,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    parse_arguments,
)
from agentshark.errors import Diagnostic


@dataclass(slots=True)
class _Open:
    kind: str  # "text", "reasoning", "tool_call", "part"
    chunks: list[str] = field(default_factory=list)
    part: Part | None = None  # tool calls and whole parts
    details: dict[str, Json] = field(default_factory=dict)


class PartsAccumulator:
    """The parts of one message under construction."""

    def __init__(self, *, location: str = "") -> None:
        self._open: dict[Hashable, _Open] = {}
        self._order: list[Hashable] = []
        self._location = location
        self.diagnostics: list[Diagnostic] = []

    def __bool__(self) -> bool:
        return bool(self._order)

    def _get(self, key: Hashable, kind: str) -> _Open:
        entry = self._open.get(key)
        if entry is None:
            entry = self._open[key] = _Open(kind)
            self._order.append(key)
        return entry

    def text(self, key: Hashable, delta: str) -> None:
        self._get(key, "text").chunks.append(delta)

    def reasoning(self, key: Hashable, delta: str) -> None:
        self._get(key, "reasoning").chunks.append(delta)

    def details(self, key: Hashable, kind: str, **values: Json) -> None:
        """Vendor extras of a text/reasoning part (a signature, annotations...)."""
        self._get(key, kind).details.update(values)

    def tool_call(
        self,
        key: Hashable,
        *,
        id: str | None = None,  # noqa: A002 - the vendor's field name
        name: str | None = None,
        **details: Json,
    ) -> None:
        """Open (or complete the identity of) a tool call; its arguments come as deltas."""
        entry = self._get(key, "tool_call")
        part = entry.part
        if not isinstance(part, ToolCallPart):
            part = entry.part = ToolCallPart(id=id, name=name)
        else:
            part.id = part.id or id
            part.name = part.name if part.name is not None else name
        part.provider_details.update(details)

    def arguments(self, key: Hashable, delta: str) -> None:
        entry = self._get(key, "tool_call")
        if entry.part is None:
            entry.part = ToolCallPart(id=None, name=None)  # no name seen (yet)
        entry.chunks.append(delta)

    def whole(self, key: Hashable, part: Part) -> None:
        """A part that arrives whole (a hosted tool call item, a citation block...)."""
        self._get(key, "part").part = part

    def done(self, key: Hashable, *, text: str | None = None, arguments: str | None = None) -> None:
        """A ``.done`` event's full value: check it against the deltas, and keep it."""
        entry = self._open.get(key)
        if entry is None:
            kind = "tool_call" if arguments is not None else "text"
            entry = self._get(key, kind)
            if kind == "tool_call":
                entry.part = ToolCallPart(id=None, name=None)
        full = arguments if arguments is not None else text
        if full is None:
            return
        built = "".join(entry.chunks)
        if entry.chunks and built != full:
            self.diagnostics.append(
                Diagnostic(
                    code="stream.done_mismatch",
                    message=f"the final value ({len(full)} chars) differs from what the deltas "
                    f"built ({len(built)} chars); the final value is kept",
                    location=f"{self._location} {key!r}",
                )
            )
        entry.chunks = [full]

    def parts(self) -> list[Part]:
        out: list[Part] = []
        for key in self._order:
            entry = self._open[key]
            if entry.kind == "text":
                out.append(TextPart(content="".join(entry.chunks), provider_details=entry.details))
            elif entry.kind == "reasoning":
                out.append(
                    ReasoningPart(content="".join(entry.chunks), provider_details=entry.details)
                )
            elif entry.kind == "tool_call" and isinstance(entry.part, ToolCallPart):
                part = entry.part
                if entry.chunks:
                    raw = "".join(entry.chunks)
                    part.arguments_raw = raw
                    part.arguments, part.arguments_error = parse_arguments(raw)
                out.append(part)
            elif entry.part is not None:
                out.append(entry.part)
        return out
