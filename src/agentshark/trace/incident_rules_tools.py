"""Incident rules of the tool loop (seed 003 checklist items 3, 4 and 5): tool calls left
unanswered, results for unknown ids, arguments that are not JSON, replays that alter a tool
call, tools executed twice or called again and again. Each rule takes the
:class:`~agentshark.trace.incident_rules_base.Context` and yields incidents; docs/incidents.md
says what each decides and why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from agentshark.apis.model import Call, Message, ToolCallPart, ToolCallResponsePart
from agentshark.trace.history import is_model_call
from agentshark.trace.incident_rules_base import (
    Context,
    arguments_key,
    arguments_path,
    as_text,
    client_tool_call,
    excerpt,
    incident,
    located,
    part_path,
    where,
    with_path,
)
from agentshark.trace.model import Incident, Span

# A tool result "looks like an error" when the provider flags it or its text says so.
_ERROR_WORDS = re.compile(r"error|invalid|exception|fail|could not parse", re.IGNORECASE)
REPEAT_THRESHOLD = 3  # same tool, same arguments, this many times in one trace


def _output_tool_calls(call: Call) -> Iterator[tuple[int, int, ToolCallPart]]:
    for i, j, part in located(call.output_messages):
        if client_tool_call(part):
            assert isinstance(part, ToolCallPart)
            yield i, j, part


def _responses(call: Call) -> dict[str, tuple[int, int, ToolCallResponsePart]]:
    """The first tool result for each id in a call's input."""
    out: dict[str, tuple[int, int, ToolCallResponsePart]] = {}
    for i, j, part in located(call.input_messages):
        if isinstance(part, ToolCallResponsePart) and part.id is not None:
            out.setdefault(part.id, (i, j, part))
    return out


def _expected(previous: Call, call: Call) -> list[tuple[int, int, ToolCallPart]]:
    """The tool calls of ``previous``'s output that ``call`` must answer. With several
    choices (Chat ``n > 1``) only one is replayed: the tool calls ``call`` carries back."""
    found = [t for t in _output_tool_calls(previous) if t[2].id is not None]
    if len({i for i, _, _ in found}) > 1:
        replayed = {p.id for _, _, p in located(call.input_messages) if isinstance(p, ToolCallPart)}
        found = [t for t in found if t[2].id in replayed]
    return found


def tool_call_unanswered(ctx: Context) -> Iterator[Incident]:
    """Rule ``tool_call.unanswered``."""
    for call in ctx.model_calls():
        previous = ctx.previous(call)
        if previous is None or not previous.complete:
            continue
        answered = _responses(call)
        for i, j, part in _expected(previous, call):
            if part.id in answered:
                continue
            evidence = with_path(
                {
                    "previous_call": previous.id,
                    "tool_call_id": part.id,
                    "tool_name": part.name,
                    "requested_at": where(output=True, message=i, part=j),
                    "answered_ids": sorted(answered),
                },
                part_path(previous, output=True, message=i, part=j),
            )
            if call.error is not None and call.error.status is not None:
                evidence["status"] = call.error.status
                evidence["error"] = call.error.message
            yield incident(
                ctx,
                "tool_call.unanswered",
                "error",
                call,
                f"{previous.id} asked for tool call {part.id} ({part.name}) but {call.id}, "
                "which continues it, carries no result for that id: every tool call of a turn "
                "must be answered before the next request (providers reject the history).",
                evidence,
            )


def _tool_call_ids(messages: Sequence[Message]) -> set[str]:
    return {p.id for _, _, p in located(messages) if isinstance(p, ToolCallPart) and p.id}


def tool_result_unknown_id(ctx: Context) -> Iterator[Incident]:
    """Rule ``tool_result.unknown_id``."""
    for call in ctx.model_calls():
        previous = ctx.previous(call)
        if previous is None and (
            "previous_response_id" in call.ids or "conversation_id" in call.ids
        ):
            continue  # the server holds a history we did not see
        known = _tool_call_ids(call.input_messages)
        if previous is not None:
            known |= _tool_call_ids(previous.output_messages)
        for i, j, part in located(call.input_messages):
            if not isinstance(part, ToolCallResponsePart) or part.id is None or part.id in known:
                continue
            evidence = with_path(
                {
                    "tool_call_id": part.id,
                    "at": where(output=False, message=i, part=j),
                    "known_ids": sorted(known),
                },
                part_path(call, output=False, message=i, part=j),
            )
            if previous is not None:
                evidence["previous_call"] = previous.id
            yield incident(
                ctx,
                "tool_result.unknown_id",
                "error",
                call,
                f"{call.id} sends a tool result for id {part.id}, which no tool call in its "
                "history or in the previous response has: tool results must pair with the "
                "assistant's tool call ids exactly (providers answer 400).",
                evidence,
            )


def tool_call_invalid_arguments(ctx: Context) -> Iterator[Incident]:
    """Rule ``tool_call.invalid_arguments``."""
    for call in ctx.model_calls():
        if not call.complete:
            continue  # a cut stream's arguments are cut too: stream.unfinished says so
        for i, j, part in located(call.output_messages):
            if not isinstance(part, ToolCallPart) or part.arguments_error is None:
                continue
            yield incident(
                ctx,
                "tool_call.invalid_arguments",
                "warning",
                call,
                f"the model's tool call {part.id} ({part.name}) has arguments that are not "
                f"JSON ({part.arguments_error}): the client must catch the parse error and "
                "send it back as the tool result.",
                with_path(
                    {
                        "tool_call_id": part.id,
                        "tool_name": part.name,
                        "at": where(output=True, message=i, part=j),
                        "arguments_raw": excerpt(part.arguments_raw),
                        "arguments_error": part.arguments_error,
                        "finish_reasons": call.finish_reasons,
                    },
                    arguments_path(call, output=True, message=i, part=j),
                ),
            )


def _looks_like_error(part: ToolCallResponsePart) -> bool:
    if part.provider_details.get("is_error") is True:
        return True
    return _ERROR_WORDS.search(as_text(part.response)) is not None


def tool_result_error_not_reported(ctx: Context) -> Iterator[Incident]:
    """Rule ``tool_result.error_not_reported``."""
    for call in ctx.model_calls():
        previous = ctx.previous(call)
        if previous is None:
            continue
        answered = _responses(call)
        for _, _, tool_call in _output_tool_calls(previous):
            if tool_call.arguments_error is None or tool_call.id not in answered:
                continue
            i, j, result = answered[tool_call.id]
            if _looks_like_error(result):
                continue
            yield incident(
                ctx,
                "tool_result.error_not_reported",
                "warning",
                call,
                f"tool call {tool_call.id} ({tool_call.name}) had arguments that are not JSON, "
                f"yet {call.id} answers it with a result that does not report an error: the "
                "model cannot learn its arguments were wrong.",
                with_path(
                    {
                        "previous_call": previous.id,
                        "tool_call_id": tool_call.id,
                        "arguments_error": tool_call.arguments_error,
                        "at": where(output=False, message=i, part=j),
                        "response": excerpt(as_text(result.response)),
                    },
                    part_path(call, output=False, message=i, part=j),
                ),
            )


def history_tool_call_altered(ctx: Context) -> Iterator[Incident]:
    """Rule ``history.tool_call_altered``: reported once per altered version."""
    sent: dict[str, tuple[Call, ToolCallPart]] = {}  # tool call id -> latest output holding it
    reported: set[tuple[str, str | None, bytes]] = set()
    for call in ctx.calls:
        if is_model_call(call):
            for i, j, part in located(call.input_messages):
                if not client_tool_call(part) or not isinstance(part, ToolCallPart):
                    continue
                if part.id not in sent:
                    continue
                origin, original = sent[part.id]
                key = (part.id, part.name, arguments_key(part))
                if key == (original.id, original.name, arguments_key(original)):
                    continue
                if key in reported:
                    continue
                reported.add(key)
                yield incident(
                    ctx,
                    "history.tool_call_altered",
                    "error",
                    call,
                    f"{call.id} replays tool call {part.id} with a different "
                    f"{'name' if part.name != original.name else 'arguments'} than {origin.id}'s "
                    "response gave: the history must carry the assistant's tool calls back as "
                    "they were.",
                    with_path(
                        {
                            "tool_call_id": part.id,
                            "at": where(output=False, message=i, part=j),
                            "original_call": origin.id,
                            "original_name": original.name,
                            "original_arguments": excerpt(_shown(original)),
                            "replayed_name": part.name,
                            "replayed_arguments": excerpt(_shown(part)),
                        },
                        arguments_path(call, output=False, message=i, part=j),
                    ),
                )
        for _, _, part in located(call.output_messages):
            if client_tool_call(part) and isinstance(part, ToolCallPart) and part.id is not None:
                sent[part.id] = (call, part)


def _shown(part: ToolCallPart) -> object:
    return part.arguments_raw if part.arguments_error else part.arguments


def tool_call_executed_twice(ctx: Context) -> Iterator[Incident]:
    """Rule ``tool_call.executed_twice``: by tool spans, then by MCP ``tools/call``."""
    for trace in ctx.traces:
        executions: set[str] = set()  # already reported by their tool spans
        spans: dict[str, list[Span]] = {}
        for span in trace.spans:
            if span.kind == "tool" and span.tool_call_id is not None:
                spans.setdefault(span.tool_call_id, []).append(span)
        for tool_call_id, found in spans.items():
            if len(found) < 2:
                continue
            ran = [s.execution for s in found]
            where_ids = [*(s.requested_by for s in found), *(e for e in ran if e is not None)]
            call = next((ctx.by_id[i] for i in reversed(where_ids) if i in ctx.by_id), None)
            if call is None:
                continue
            executions.update(e for e in ran if e is not None)
            yield incident(
                ctx,
                "tool_call.executed_twice",
                "warning",
                call,
                f"tool call {tool_call_id} was executed {len(found)} times in trace "
                f"{trace.trace_id}: a tool call must run once (a side effect may have "
                "happened twice).",
                {
                    "tool_call_id": tool_call_id,
                    "spans": [s.span_id for s in found],
                    "executions": ran,
                },
            )
        for repeat in _mcp_repeats(ctx, trace.trace_id, trace.calls):
            if repeat.call_id not in executions:
                yield repeat


def _mcp_repeats(ctx: Context, trace_id: str, call_ids: list[str]) -> Iterator[Incident]:
    """MCP ``tools/call`` requests with the same name and arguments between one model call
    and the next, more of them than that model call asked for."""
    asked: dict[tuple[str | None, bytes], int] = {}
    seen: dict[tuple[str | None, bytes], list[Call]] = {}
    for call_id in call_ids:
        call = ctx.by_id.get(call_id)
        if call is None:
            continue
        if is_model_call(call):
            asked, seen = {}, {}
            for _, _, part in _output_tool_calls(call):
                k = (part.name, arguments_key(part))
                asked[k] = asked.get(k, 0) + 1
            continue
        if call.api != "mcp" or call.operation != "tools/call":
            continue
        for _, _, item in located(call.input_messages):
            if isinstance(item, ToolCallPart):
                k = (item.name, arguments_key(item))
                earlier = seen.setdefault(k, [])
                earlier.append(call)
                if len(earlier) > max(1, asked.get(k, 0)):
                    yield incident(
                        ctx,
                        "tool_call.executed_twice",
                        "warning",
                        call,
                        f"MCP tools/call {item.name} with the same arguments ran "
                        f"{len(earlier)} times in trace {trace_id} after one model response "
                        f"that asked for it {asked.get(k, 0)} time(s): a side effect may "
                        "have happened twice.",
                        {
                            "tool_name": item.name,
                            "arguments": excerpt(_shown(item)),
                            "executions": [c.id for c in earlier],
                        },
                    )
                break


def tool_call_repeated(ctx: Context) -> Iterator[Incident]:
    """Rule ``tool_call.repeated``: once per trace and (name, arguments), at the call that
    makes it the third."""
    for trace in ctx.traces:
        seen: dict[tuple[str | None, bytes], list[str]] = {}
        for call_id in trace.calls:
            call = ctx.by_id.get(call_id)
            if call is None or not is_model_call(call):
                continue
            for _, _, part in _output_tool_calls(call):
                ids = seen.setdefault((part.name, arguments_key(part)), [])
                ids.append(call.id)
                if len(ids) != REPEAT_THRESHOLD:
                    continue
                yield incident(
                    ctx,
                    "tool_call.repeated",
                    "warning",
                    call,
                    f"the model called {part.name} with the same arguments "
                    f"{REPEAT_THRESHOLD} times in trace {trace.trace_id}: the agent loop may "
                    "be stuck repeating a step.",
                    {
                        "tool_name": part.name,
                        "arguments": excerpt(_shown(part)),
                        "calls": list(ids),
                        "threshold": REPEAT_THRESHOLD,
                    },
                )
