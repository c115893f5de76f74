"""One call in full, for ``agentshark show FILE --call ID``: a :class:`Call` -> text.

Two views of one call, as seed 004 draws a model-call span: first every message and part
where it sits, numbered from 0 ("input message [3] part [0]" is the fourth message of the
request, not the fourth call of a trace); then the same parts regrouped by category
(:data:`CATEGORIES`), in their original order, each still labelled with that position.

Credentials are redacted as report bodies are, by the one
:class:`~agentshark.output.redact.Redactor`: over every string shown before it is cut or
wrapped (text, reasoning, tool arguments and results as JSON text, ids, URIs), and over every
line written. Layout is :mod:`textwrap`; control characters are escaped so captured text cannot
drive the terminal. The lines are built once, with tones (errors red, incomplete yellow, labels
and secondary facts set apart), and drawn by a :class:`~agentshark.output.screen.Screen`:
plain, or with ``rich`` at the terminal's width.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO, assert_never

from agentshark.apis.model import (
    BlobPart,
    Call,
    FilePart,
    GenericPart,
    Json,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolCallResponsePart,
    UriPart,
    part_json,
)
from agentshark.errors import Diagnostic
from agentshark.output.census import unsaid_reason
from agentshark.output.redact import REDACTION, redactor
from agentshark.output.screen import Line, PlainScreen, Screen, Tone, neutralize, severity_tone

CATEGORIES = (
    "system",
    "user",
    "reasoning",
    "planned tool calls",
    "earlier tool calls (input)",
    "tool call (request)",
    "tool results",
    "answer",
    "earlier answers (input)",
    "other",
)
_MODEL_ROLES = frozenset({"assistant", "model"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_TOOL_ROLES = frozenset({"tool", "function"})  # "function": the older OpenAI tool result role
_USER_KINDS = (TextPart, BlobPart, UriPart, FilePart)

_MIN_WIDTH = 40
_REDACT_MARGIN = 1024  # text redacted past the cut, so a secret across it is still found
_LONG_DETAIL = 200  # provider_details strings longer than this (signatures...) are sized


@dataclass(frozen=True, slots=True, kw_only=True)
class FlatPart:
    """One part of a call, out of its message but with its place kept."""

    side: str  # "input" | "output" | "system"
    message: int | None  # index in input_messages/output_messages; None for system
    part: int  # index in its message's parts (or in system_instructions)
    role: str | None
    part_json: dict[str, Json]

    @property
    def position(self) -> str:
        if self.message is None:
            return f"system instructions part [{self.part}]"
        return f"{self.side} message [{self.message}] part [{self.part}]"


def flatten(call: Call) -> dict[str, list[FlatPart]]:
    """Every part of ``call`` exactly once, under its category (all of :data:`CATEGORIES`
    are keys, in that order), in the order the call holds them: system instructions, input
    messages, output messages."""
    out: dict[str, list[FlatPart]] = {name: [] for name in CATEGORIES}
    for category, flat, _ in _entries(call):
        out[category].append(flat)
    return out


def _entries(call: Call) -> Iterator[tuple[str, FlatPart, Part]]:
    for k, part in enumerate(call.system_instructions):
        flat = FlatPart(side="system", message=None, part=k, role=None, part_json=part_json(part))
        yield "system", flat, part
    sides = (("input", call.input_messages), ("output", call.output_messages))
    for side, messages in sides:
        for n, message in enumerate(messages):
            for k, part in enumerate(message.parts):
                flat = FlatPart(
                    side=side, message=n, part=k, role=message.role, part_json=part_json(part)
                )
                yield _category(side, message.role, part), flat, part


def _category(side: str, role: str | None, part: Part) -> str:
    """Seed 004's grouping: the role decides for system and tool messages, else the part."""
    if role in _SYSTEM_ROLES:
        return "system"
    if role in _TOOL_ROLES or isinstance(part, ToolCallResponsePart):
        return "tool results"
    if isinstance(part, ReasoningPart):
        return "reasoning"
    if isinstance(part, ToolCallPart):
        if side == "output":
            return "planned tool calls"
        # an MCP tools/call is the request itself (role "client"), not a replayed call
        return "earlier tool calls (input)" if role in _MODEL_ROLES else "tool call (request)"
    if role == "user" and isinstance(part, _USER_KINDS):
        return "user"
    if isinstance(part, TextPart):
        if side == "output":
            return "answer"
        if role in _MODEL_ROLES:
            return "earlier answers (input)"
    return "other"


def render_call(
    call: Call,
    out: TextIO,
    *,
    redact: bool = True,
    width: int = 100,
    max_text: int = 2000,
    exchange_diagnostics: Sequence[Diagnostic] = (),
    screen: Screen | None = None,
) -> None:
    """Write ``call`` to ``out`` (or draw it on ``screen``, at its width when it has one):
    header, system instructions, input and output messages with numbered parts, then the
    parts by category. Strings longer than ``max_text`` characters are cut with a note of how
    much is left out. An incomplete call says why: its diagnostics, then
    ``exchange_diagnostics`` (those of the exchange it came from)."""
    if screen is None:
        screen = PlainScreen(out, redactor(redact))
    width = screen.width or width
    view = _View(redact=redact, width=max(width, _MIN_WIDTH), max_text=max(max_text, 0))
    lines = [
        *_header(call, view, exchange_diagnostics),
        (),
        *_system_section(call, view),
        (),
        *_messages_section("input messages", call.input_messages, view, output=False),
        (),
        *_messages_section("output messages", call.output_messages, view, output=True),
        (),
        *_category_section(call, view),
    ]
    screen.lines(lines)
    screen.flush()


@dataclass(frozen=True, slots=True, kw_only=True)
class _View:
    redact: bool
    width: int
    max_text: int

    def clip(self, text: str) -> tuple[str, int]:
        """``text`` redacted, sanitized and cut to ``max_text``; and how many chars were cut."""
        head = text[: self.max_text + _REDACT_MARGIN]
        hidden = len(text) - len(head)
        if self.redact:
            head = REDACTION.text(head)
        if len(head) > self.max_text:
            hidden += len(head) - self.max_text
            head = head[: self.max_text]
        return neutralize(head), hidden

    def block(
        self, prefix: str, text: str, indent: int, tone: Tone | None = None, label: Tone = "label"
    ) -> list[Line]:
        """``prefix`` (in the ``label`` tone) + ``text`` (in ``tone``) wrapped, continuation
        lines at ``indent``; line breaks of the text are kept, a cut ends with a
        "… (N more chars)" line."""
        shown, hidden = self.clip(text) if text else ("(empty)", 0)
        rest = " " * indent
        lines: list[Line] = []
        for n, paragraph in enumerate(shown.split("\n")):
            first = prefix if n == 0 else rest
            wrapped = textwrap.wrap(
                paragraph,
                width=max(self.width, len(first) + 20),
                initial_indent=first,
                subsequent_indent=rest,
                break_on_hyphens=False,
            ) or [first.rstrip()]
            for k, piece in enumerate(wrapped):
                if n == 0 and k == 0:
                    head, tail = (
                        (prefix, piece[len(prefix) :]) if piece.startswith(prefix) else (piece, "")
                    )
                    lines.append(((head, label), (tail, tone)))
                else:
                    lines.append(((piece, tone),))
        if hidden:
            lines.append(((f"{rest}… ({hidden} more char{'' if hidden == 1 else 's'})", "dim"),))
        return lines

    def short(self, value: object) -> str:
        """A name, id or role on one line: redacted, sanitized, cut at 200 chars."""
        text = value if isinstance(value, str) else _json(value)
        if self.redact:
            text = REDACTION.text(text)
        text = neutralize(text).replace("\n", "\\n")
        return text if len(text) <= 200 else text[:199] + "…"


def _json(value: object) -> str:
    """JSON text of a decoded value; its repr when it is not JSON (never raises)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _as_text(value: object) -> str:
    """Content as text: strings as they are, anything else (a vendor's odd value) as JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else _json(value)


# --- header -------------------------------------------------------------------------------


def _header(call: Call, view: _View, exchange_diagnostics: Sequence[Diagnostic]) -> list[Line]:
    title = " · ".join(view.short(x) for x in (call.id, call.api, call.operation) if x)
    lines: list[Line] = [(("call ", "head"), (title, "head"))]

    def field(name: str, value: str, tone: Tone | None = None) -> None:
        lines.extend(view.block(f"  {name:<12}", value, 14, tone, label="dim"))

    field("exchange", call.exchange_id)
    field("model", _models(call))
    field("provider", call.provider or "-")
    if call.response_id:
        field("response id", call.response_id)
    field("stream", _stream(call), "ok" if call.complete else "incomplete")
    field("finish", ", ".join(_as_text(r) for r in call.finish_reasons) or "-")
    field("usage", _usage(call))
    error = _error(call)
    field("error", error, None if error == "-" else "error")
    for n, (name, value) in enumerate(call.ids.items()):
        source = call.id_sources.get(name)
        field("" if n else "ids", f"{name} = {value}" + (f" (from {source})" if source else ""))
    if not call.ids:
        field("ids", "-")
    field("timing", _timing(call))
    if call.request_params:
        field("params", _json(call.request_params))
    if call.tool_definitions:
        names = ", ".join(_tool_name(t) for t in call.tool_definitions)
        field("tools", f"{len(call.tool_definitions)}: {names}")
    for d in call.diagnostics:
        where = f" at {d.location}" if d.location else ""
        field("diagnostic", f"{d.severity} {d.code}{where}: {d.message}", severity_tone(d.severity))
    if not call.complete:
        for d in exchange_diagnostics:
            where = f" at {d.location}" if d.location else ""
            field("incomplete", f"{d.severity} {d.code}{where}: {d.message}", "incomplete")
        if not exchange_diagnostics and all(d.severity == "info" for d in call.diagnostics):
            field("incomplete", unsaid_reason(call), "incomplete")
    return lines


def _models(call: Call) -> str:
    req, resp = call.request_model, call.response_model
    if req and resp and req != resp:
        return f"{req} (response: {resp})"
    return req or resp or "-"


def _stream(call: Call) -> str:
    kind = "streamed" if call.stream else "not streamed"
    chunks = getattr(call.timing, "chunks", None)
    if isinstance(chunks, int):
        kind += f" ({chunks} chunk{'' if chunks == 1 else 's'})"
    return f"{kind} · {'complete' if call.complete else 'INCOMPLETE'}"


def _usage(call: Call) -> str:
    u = call.usage
    if u is None:
        return "-"
    counts = (
        ("input", u.input_tokens),
        ("output", u.output_tokens),
        ("cached input", u.cached_input_tokens),
        ("cache write", u.cache_creation_input_tokens),
        ("reasoning", u.reasoning_tokens),
        ("total", u.total_tokens),
    )
    return " · ".join(f"{name} {n}" for name, n in counts if n is not None) or "-"


def _error(call: Call) -> str:
    e = call.error
    if e is None:
        failed = any(
            isinstance(p, ToolCallResponsePart) and p.provider_details.get("is_error") is True
            for m in call.output_messages
            for p in m.parts
        )
        return "- (the tool result says isError: the tool failed)" if failed else "-"
    if e.type == "jsonrpc":
        http = f", HTTP {e.status}" if e.status is not None else ""
        return f"JSON-RPC error {e.code}{http}: {e.message or '(no message)'} (from {e.source})"
    kind = " ".join(str(x) for x in (e.status, e.type, e.code) if x is not None)
    return f"{kind}: {e.message or '(no message)'} (from {e.source})"


def _timing(call: Call) -> str:
    t = call.timing
    if t.started is None:
        marks = (t.first_byte, t.first_token, t.ended)
        return "not captured" if all(m is None for m in marks) else "start not captured"
    clock = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t.started))
    bits = [f"started {clock}.{int(t.started % 1 * 1000):03d} UTC"]
    for name, mark in (("first byte", t.first_byte), ("first token", t.first_token)):
        bits.append(f"{name} {_after(t.started, mark)}")
    bits.append(f"ended {_after(t.started, t.ended)}")
    return " · ".join(bits)


def _after(start: float, mark: float | None) -> str:
    if mark is None:
        return "-"
    delta = mark - start
    return f"+{delta * 1000:.1f}ms" if abs(delta) < 1 else f"+{delta:.3f}s"


def _tool_name(definition: Json) -> str:
    """A tool definition's name in the common shapes (OpenAI function, Anthropic, MCP)."""
    if isinstance(definition, dict):
        function = definition.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
        for key in ("name", "type"):
            if isinstance(definition.get(key), str):
                return str(definition[key]) if key == "name" else f"[{definition[key]}]"
    return "?"


# --- messages and parts ------------------------------------------------------------------


def _system_section(call: Call, view: _View) -> list[Line]:
    if not call.system_instructions:
        return [(("system instructions: none", "dim"),)]
    count = len(call.system_instructions)
    lines: list[Line] = [
        ((f"system instructions ({count} part{'' if count == 1 else 's'})", "head"),)
    ]
    for k, part in enumerate(call.system_instructions):
        lines += _part_lines(part, f"part [{k}]", 2, view)
    return lines


def _messages_section(
    title: str, messages: list[Message], view: _View, *, output: bool
) -> list[Line]:
    if not messages:
        return [((f"{title}: none", "dim"),)]
    lines: list[Line] = [((f"{title} ({len(messages)})", "head"),)]
    for n, message in enumerate(messages):
        head = f"  message [{n}] · {view.short(message.role)}"
        if message.name:
            head += f" · name {view.short(message.name)}"
        if output:
            head += f" · finish {view.short(message.finish_reason or '(none)')}"
        lines.append(((head, "head"),))
        for k, part in enumerate(message.parts):
            lines += _part_lines(part, f"part [{k}]", 4, view)
        if not message.parts:
            lines.append((("    (no parts)", "dim"),))
    return lines


def _category_section(call: Call, view: _View) -> list[Line]:
    groups: dict[str, list[tuple[FlatPart, Part]]] = {name: [] for name in CATEGORIES}
    for category, flat, part in _entries(call):
        groups[category].append((flat, part))
    lines: list[Line] = [(("by category", "head"),)]
    for name, entries in groups.items():
        if entries:
            lines.append(((f"  {name} ({len(entries)})", "head"),))
            for flat, part in entries:
                lines += _part_lines(part, flat.position, 4, view)
    if len(lines) == 1:
        lines.append((("  (no parts)", "dim"),))
    return lines


def _part_lines(part: Part, label: str, indent: int, view: _View) -> list[Line]:
    """A part as a head line "<label> · <type>: <content>" and indented detail lines."""
    pad = " " * indent
    inner = indent + 4
    details: list[tuple[str, str]] = []
    lines: list[Line]
    if isinstance(part, TextPart):
        lines = view.block(f"{pad}{label} · text: ", _as_text(part.content), inner)
    elif isinstance(part, ReasoningPart):
        content = _as_text(part.content)
        text = content if content else "(no visible text)"
        lines = view.block(f"{pad}{label} · reasoning: ", text, inner, "dim")
    elif isinstance(part, ToolCallPart):
        lines = [((f"{pad}{label} · tool_call: ", "label"), (view.short(part.name), "name"))]
        details.append(("id", view.short(part.id) if part.id is not None else "-"))
        if part.arguments_error is not None:
            details.append(("arguments (raw, not JSON)", _as_text(part.arguments_raw)))
            details.append(("arguments_error", _as_text(part.arguments_error)))
        else:
            details.append(("arguments", _json(part.arguments)))
    elif isinstance(part, ToolCallResponsePart):
        ident = view.short(part.id) if part.id is not None else "-"
        lines = [((f"{pad}{label} · tool_call_response: ", "label"), (f"id {ident}", None))]
        response = part.response
        details.append(("response", response if isinstance(response, str) else _json(response)))
    elif isinstance(part, BlobPart):
        lines = [((f"{pad}{label} · blob: ", "label"), (_blob(part, view), None))]
    elif isinstance(part, UriPart):
        uri = _as_text(part.uri)
        shown = view.short(uri)
        lines = view.block(f"{pad}{label} · uri: ", f"{shown} {_kind(part, view)}", inner)
    elif isinstance(part, FilePart):
        file = f"{view.short(part.file_id)} {_kind(part, view)}"
        lines = [((f"{pad}{label} · file: ", "label"), (file, None))]
    elif isinstance(part, GenericPart):
        lines = view.block(f"{pad}{label} · {view.short(part.type)}: ", _json(part.fields), inner)
    else:
        assert_never(part)
    if not isinstance(part, GenericPart) and part.provider_details:
        details.append(("details", _json(_sized(part.provider_details))))
    for name, value in details:
        lines += view.block(f"{pad}    {name} = ", value, inner + 2, label="dim")
    return lines


def _kind(part: BlobPart | UriPart | FilePart, view: _View) -> str:
    mime = view.short(part.mime_type) if part.mime_type else "no mime type"
    modality = view.short(part.modality) if part.modality else "no modality"
    return f"({mime}, {modality})"


def _blob(part: BlobPart, view: _View) -> str:
    size = len(_as_text(part.content))
    return f"{size} base64 chars (~{size * 3 // 4} bytes) {_kind(part, view)}"


def _sized(value: Any, depth: int = 0) -> Any:
    """``value`` with long strings (signatures, encrypted reasoning) replaced by their size."""
    if isinstance(value, str) and len(value) > _LONG_DETAIL:
        return f"<{len(value)} chars>"
    if depth < 16 and isinstance(value, dict):
        return {str(k): _sized(v, depth + 1) for k, v in value.items()}
    if depth < 16 and isinstance(value, list):
        return [_sized(v, depth + 1) for v in value]
    return value
