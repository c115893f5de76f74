"""What every incident rule reads: the calls in report order, history links, traces.

:class:`Context` indexes the input of :func:`agentshark.trace.incidents.find_incidents` once
(calls by id and position, the trace holding each call, the calls continuing each call) and
:func:`incident` builds an :class:`~agentshark.trace.model.Incident` with the trace filled in.
The location helpers say where a part is: ``"input message 3 part 1"`` always, and a JSON
path into the request or response body when the family's layout makes it certain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import orjson

from agentshark.apis.model import Call, GenericPart, Json, Message, Part, ToolCallPart
from agentshark.trace.history import HistoryLink, is_model_call, message_key
from agentshark.trace.model import Incident, Trace

# Responses items for tools the server runs (as in agentshark.trace.history): the client
# neither answers nor replays them as its own.
HOSTED_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
    }
)
EXCERPT = 200  # characters of a raw value quoted in evidence


@dataclass(slots=True, kw_only=True)
class Context:
    calls: Sequence[Call]
    traces: Sequence[Trace]
    links: Mapping[str, HistoryLink]
    by_id: dict[str, Call] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)
    trace_of: dict[str, str] = field(default_factory=dict)
    continued_by: dict[str, list[Call]] = field(default_factory=dict)

    @classmethod
    def build(
        cls, calls: Sequence[Call], traces: Sequence[Trace], links: Mapping[str, HistoryLink]
    ) -> Context:
        ctx = cls(calls=calls, traces=traces, links=links)
        for pos, call in enumerate(calls):
            ctx.by_id.setdefault(call.id, call)
            ctx.position.setdefault(call.id, pos)
        for trace in traces:
            for call_id in trace.calls:
                ctx.trace_of.setdefault(call_id, trace.trace_id)
        for call in calls:
            link = links.get(call.id)
            if link is not None and link.previous in ctx.by_id:
                ctx.continued_by.setdefault(link.previous, []).append(call)
        return ctx

    def model_calls(self) -> Iterable[Call]:
        return (c for c in self.calls if is_model_call(c))

    def previous(self, call: Call) -> Call | None:
        link = self.links.get(call.id)
        return self.by_id.get(link.previous) if link is not None else None


def incident(
    ctx: Context,
    rule: str,
    severity: str,
    call: Call,
    message: str,
    evidence: dict[str, Json],
) -> Incident:
    return Incident(
        rule=rule,
        severity=severity,
        message=message,
        call_id=call.id,
        trace_id=ctx.trace_of.get(call.id),
        evidence={"call": call.id, "exchange": call.exchange_id, **evidence},
    )


# -- parts and where they are ----------------------------------------------------------------


def client_tool_call(part: Part) -> bool:
    """A tool call the client runs and must answer (not a hosted or server-side one)."""
    if not isinstance(part, ToolCallPart):
        return False
    details = part.provider_details
    return (
        "block_type" not in details  # Anthropic server_tool_use, mcp_tool_use...
        and details.get("item_type") not in HOSTED_ITEMS
        and details.get("execution") != "server"
    )


def located(messages: Sequence[Message]) -> Iterable[tuple[int, int, Part]]:
    """(message index, part index, part) of every part."""
    for i, message in enumerate(messages):
        for j, part in enumerate(message.parts):
            yield i, j, part


def where(*, output: bool, message: int, part: int) -> str:
    return f"{'output' if output else 'input'} message {message} part {part}"


def part_path(call: Call, *, output: bool, message: int, part: int) -> str | None:
    """The JSON path of a part in the request (input) or response (output) body, when the
    family maps parts one to one onto its body: Anthropic content blocks; Chat tool calls
    and tool messages (in a request only when no leading system message shifted the
    indexes). None for streams' outputs and for Responses (items are regrouped)."""
    messages = call.output_messages if output else call.input_messages
    if message >= len(messages) or part >= len(messages[message].parts):
        return None
    if call.api == "anthropic.messages":
        if output:
            return None if call.stream or message else f"$.content[{part}]"
        return f"$.messages[{message}].content[{part}]"
    if call.api != "openai.chat" or (output and call.stream):
        return None
    if not output and call.system_instructions:
        return None
    base = f"$.choices[{message}].message" if output else f"$.messages[{message}]"
    parts = messages[message].parts
    target = parts[part]
    if isinstance(target, ToolCallPart):
        if target.provider_details.get("legacy"):
            return f"{base}.function_call"
        index = sum(
            1
            for p in parts[:part]
            if isinstance(p, ToolCallPart) and not p.provider_details.get("legacy")
        )
        return f"{base}.tool_calls[{index}]"
    if not output and messages[message].role in ("tool", "function"):
        return base
    return None


def arguments_path(call: Call, *, output: bool, message: int, part: int) -> str | None:
    path = part_path(call, output=output, message=message, part=part)
    if path is None:
        return None
    if call.api == "anthropic.messages":
        return f"{path}.input"
    return path if path.endswith(".function_call") else f"{path}.function.arguments"


def with_path(evidence: dict[str, Json], path: str | None) -> dict[str, Json]:
    if path is not None:
        evidence["path"] = path
    return evidence


def excerpt(value: Json) -> Json:
    """A raw string shortened for evidence; other values as they are."""
    if isinstance(value, str) and len(value) > EXCERPT:
        return value[:EXCERPT] + f"... ({len(value)} characters)"
    return value


def as_text(value: Json) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return repr(value)


def arguments_key(part: ToolCallPart) -> bytes:
    """Tool call arguments compared as the parsed value, or the raw string when it did
    not parse. No arguments at all (None, or an empty raw string) equals ``{}``: clients
    write "no arguments" as an empty object when they replay it."""
    empty = part.arguments is None and not (part.arguments_raw or "").strip()
    if empty:
        value: Json = ["value", {}]
    elif part.arguments_error:
        value = ["raw", part.arguments_raw]
    else:
        value = ["value", part.arguments]
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return repr(value).encode()


def request_key(call: Call) -> bytes:
    """What makes two requests "the same request" (a retry): api, model, parameters,
    system instructions and input messages, messages compared by
    :func:`~agentshark.trace.history.message_key`."""
    system = message_key(Message(role="system", parts=list(call.system_instructions)), output=False)
    head: Json = [call.api, call.operation, call.request_model, call.request_params]
    try:
        head_key = orjson.dumps(head, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        head_key = repr(head).encode()
    keys = [message_key(m, output=False) for m in call.input_messages]
    return b"\x00".join([head_key, system, *keys])


def refusals(call: Call) -> list[tuple[int, int, str]]:
    """(message, part, text) of the refusal parts of a call's output."""
    out = []
    for i, j, part in located(call.output_messages):
        if isinstance(part, GenericPart) and part.type == "refusal":
            text = part.fields.get("refusal")
            out.append((i, j, text if isinstance(text, str) else as_text(part.fields)))
    return out
