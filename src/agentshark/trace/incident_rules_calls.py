"""Incident rules about one call and the calls that repeat it: truncated or filtered output,
blind retries, streams cut before their terminal event, Anthropic's required ``max_tokens``,
thinking dropped from a replay, malformed ``traceparent``, MCP tools never listed and MCP
requests never answered (seed 003 checklist items 2, 5, 7, 8, 9; seed 000 §6.1.1, §7.6).
docs/incidents.md says what each decides and why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from agentshark.apis.model import Call, Message, ReasoningPart, ToolCallPart
from agentshark.trace.context import parse_traceparent
from agentshark.trace.incident_rules_base import (
    Context,
    excerpt,
    incident,
    located,
    refusals,
    request_key,
)
from agentshark.trace.model import Incident

# finish reasons meaning "the output hit its token limit" (Chat, Anthropic, Responses'
# incomplete_details.reason, Gemini), compared lowercased
TRUNCATED = frozenset({"length", "max_tokens", "max_output_tokens"})
FILTERED = frozenset({"content_filter", "refusal"})
MAX_TOKEN_PARAMS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
RETRY_STATUSES = frozenset({429})  # and every status >= 500
MIN_BACKOFF = 1.0  # seconds: a retry sooner than this after a 429/5xx is no backoff
# "Please try again in 20s" / "in 1.5s" / "in 350ms" (OpenAI rate-limit messages)
_TRY_AGAIN = re.compile(r"try again in (\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)


def _lower(reasons: list[str]) -> set[str]:
    return {r.lower() for r in reasons}


def _limit(call: Call) -> dict[str, object]:
    return {k: call.request_params[k] for k in MAX_TOKEN_PARAMS if k in call.request_params}


def output_truncated(ctx: Context) -> Iterator[Incident]:
    """Rule ``output.truncated``."""
    for call in ctx.calls:
        hit = sorted(r for r in call.finish_reasons if r.lower() in TRUNCATED)
        if not hit:
            continue
        evidence: dict[str, object] = {"finish_reasons": call.finish_reasons, **_limit(call)}
        if call.usage is not None and call.usage.output_tokens is not None:
            evidence["output_tokens"] = call.usage.output_tokens
        yield incident(
            ctx,
            "output.truncated",
            "warning",
            call,
            f"{call.id}'s output stopped at the token limit (finish reason {hit[0]}): the text "
            "or tool call arguments are cut; raise the budget or continue, do not retry blindly.",
            evidence,
        )


def _retry_pairs(ctx: Context) -> Iterator[tuple[Call, Call]]:
    """(earlier, next) pairs of model calls sending the same request, in call order."""
    last: dict[bytes, Call] = {}
    for call in ctx.model_calls():
        key = request_key(call)
        before = last.get(key)
        if before is not None:
            yield before, call
        last[key] = call


def retry_after_truncation(ctx: Context) -> Iterator[Incident]:
    """Rule ``retry.after_truncation``."""
    for before, call in _retry_pairs(ctx):
        hit = [r for r in before.finish_reasons if r.lower() in TRUNCATED]
        if not hit:
            continue
        yield incident(
            ctx,
            "retry.after_truncation",
            "warning",
            call,
            f"{call.id} sends {before.id}'s request again unchanged after it was cut at the "
            "token limit: the same budget will most likely cut it again.",
            {
                "truncated_call": before.id,
                "finish_reasons": before.finish_reasons,
                **_limit(call),
            },
        )


def _backoff_hint(call: Call) -> float | None:
    """Seconds the server asked to wait, when its error message says so."""
    message = call.error.message if call.error is not None else None
    found = _TRY_AGAIN.search(message or "")
    if found is None:
        return None
    value = float(found.group(1))
    return value / 1000 if found.group(2).lower() == "ms" else value


def retry_no_backoff(ctx: Context) -> Iterator[Incident]:
    """Rule ``retry.no_backoff``."""
    for before, call in _retry_pairs(ctx):
        error = before.error
        if error is None or error.status is None:
            continue
        if error.status not in RETRY_STATUSES and error.status < 500:
            continue
        ended, started = before.timing.ended, call.timing.started
        if ended is None or started is None:
            continue
        hint = _backoff_hint(before)
        wait = hint if hint is not None else MIN_BACKOFF
        gap = started - ended
        if gap >= wait:
            continue
        evidence: dict[str, object] = {
            "failed_call": before.id,
            "status": error.status,
            "error": excerpt(error.message),
            "gap_seconds": round(gap, 3),
            "threshold_seconds": wait,
        }
        if hint is not None:
            evidence["server_hint"] = "error message"
        yield incident(
            ctx,
            "retry.no_backoff",
            "warning",
            call,
            f"{call.id} retries {before.id} (HTTP {error.status}) {gap:.3f} s after it "
            f"failed, under {wait:g} s: 429 and 5xx want exponential backoff, not an "
            "immediate retry.",
            evidence,
        )


def stream_unfinished(ctx: Context) -> Iterator[Incident]:
    """Rule ``stream.unfinished`` (MCP requests: ``mcp.no_response``)."""
    for call in ctx.calls:
        if not call.stream or call.complete or call.api == "mcp":
            continue
        parts = sum(len(m.parts) for m in call.output_messages)
        yield incident(
            ctx,
            "stream.unfinished",
            "warning",
            call,
            f"{call.id}'s stream did not finish (no terminal event, or no finish reason "
            f"where one was due): what arrived ({parts} output parts) is a partial answer, "
            "not a complete response.",
            {
                "finish_reasons": call.finish_reasons,
                "output_parts": parts,
                "error": call.error.to_json() if call.error is not None else None,
                "diagnostics": [d.to_json() for d in call.diagnostics],
            },
        )


def output_content_filter(ctx: Context) -> Iterator[Incident]:
    """Rule ``output.content_filter``."""
    for call in ctx.calls:
        hit = sorted(r for r in call.finish_reasons if r.lower() in FILTERED)
        refused = refusals(call)
        if not hit and not refused:
            continue
        why = f"finish reason {hit[0]}" if hit else "a refusal part"
        yield incident(
            ctx,
            "output.content_filter",
            "warning",
            call,
            f"{call.id}'s output was filtered or refused ({why}): the agent must degrade, "
            "rephrase or report it rather than treat the answer as complete.",
            {
                "finish_reasons": call.finish_reasons,
                "refusals": [
                    {"at": f"output message {i} part {j}", "text": excerpt(text)}
                    for i, j, text in refused
                ],
            },
        )


def anthropic_max_tokens_missing(ctx: Context) -> Iterator[Incident]:
    """Rule ``anthropic.max_tokens_missing``."""
    for call in ctx.calls:
        if call.api != "anthropic.messages" or call.operation != "chat":
            continue
        if "max_tokens" in call.request_params:
            continue
        evidence: dict[str, object] = {"request_params": sorted(call.request_params)}
        got = ""
        if call.error is not None and call.error.status == 400:
            evidence["status"] = 400
            evidence["error"] = excerpt(call.error.message)
            got = " (it got the 400)"
        yield incident(
            ctx,
            "anthropic.max_tokens_missing",
            "error",
            call,
            f"{call.id} is an Anthropic Messages request without max_tokens, which the API "
            f"requires{got}: a compatibility layer must supply a default.",
            evidence,
        )


def _reasoning_count(messages: Sequence[Message]) -> dict[str, int]:
    """How many reasoning parts, and how many carry a signature or redacted data."""
    parts = [p for m in messages for p in m.parts if isinstance(p, ReasoningPart)]
    signed = sum(1 for p in parts if {"signature", "data"} & p.provider_details.keys())
    return {"parts": len(parts), "signed": signed}


def history_reasoning_changed(ctx: Context) -> Iterator[Incident]:
    """Rule ``history.reasoning_changed``."""
    for call in ctx.model_calls():
        link = ctx.links.get(call.id)
        previous = ctx.previous(call)
        if link is None or previous is None or not link.reasoning_changed:
            continue
        anthropic = call.api == "anthropic.messages"
        replay = call.input_messages[len(previous.input_messages) : link.matched_messages]
        yield incident(
            ctx,
            "history.reasoning_changed",
            "warning" if anthropic else "info",
            call,
            f"{call.id} replays {previous.id}'s turn with its reasoning dropped or altered"
            + (
                ": Anthropic wants the thinking blocks of the last assistant turn sent back "
                "unchanged, signatures included, while tools are in use."
                if anthropic
                else ": the provider may lose the model's earlier reasoning."
            ),
            {
                "previous_call": previous.id,
                "link": link.evidence,
                "sent": _reasoning_count(previous.output_messages),
                "replayed": _reasoning_count(replay),
            },
        )


def invalid_traceparent(ctx: Context) -> Iterator[Incident]:
    """Rule ``trace_context.invalid_traceparent``."""
    for call in ctx.calls:
        value = call.ids.get("traceparent")
        if value is None:
            continue
        problem = parse_traceparent(value)
        if not isinstance(problem, str):
            continue
        yield incident(
            ctx,
            "trace_context.invalid_traceparent",
            "warning",
            call,
            f"{call.id}'s traceparent is invalid ({problem}): the receiver must ignore it and "
            "start a new trace, so this hop is cut from the caller's trace.",
            {
                "value": excerpt(value),
                "found_in": call.id_sources.get("traceparent"),
                "problem": problem,
            },
        )


def _mcp_group(ctx: Context, call: Call) -> str | None:
    session = call.ids.get("mcp_session_id")
    if session is not None:
        return f"session {session}"
    trace = ctx.trace_of.get(call.id)
    return f"trace {trace}" if trace is not None else None


def mcp_tool_not_listed(ctx: Context) -> Iterator[Incident]:
    """Rule ``mcp.tool_not_listed``."""
    listed: dict[str, set[str]] = {}
    for call in ctx.calls:
        group = _mcp_group(ctx, call) if call.api == "mcp" else None
        if group is None:
            continue
        if call.operation == "tools/list" and call.complete and call.error is None:
            names = {t.get("name") for t in call.tool_definitions if isinstance(t, dict)}
            listed.setdefault(group, set()).update(n for n in names if isinstance(n, str))
            continue
        if call.operation != "tools/call" or group not in listed:
            continue
        for _, _, part in located(call.input_messages):
            if isinstance(part, ToolCallPart) and part.name not in listed[group]:
                yield incident(
                    ctx,
                    "mcp.tool_not_listed",
                    "warning",
                    call,
                    f"{call.id} calls MCP tool {part.name!r}, which no tools/list result of "
                    f"{group} offered: the client calls a tool the server never advertised.",
                    {"tool_name": part.name, "group": group, "listed": sorted(listed[group])},
                )
                break


def mcp_no_response(ctx: Context) -> Iterator[Incident]:
    """Rule ``mcp.no_response``."""
    for call in ctx.calls:
        if call.api != "mcp" or call.operation is None or "jsonrpc_id" not in call.ids:
            continue
        if call.complete or call.error is not None or "client_response" in call.extras:
            continue
        yield incident(
            ctx,
            "mcp.no_response",
            "warning",
            call,
            f"MCP request {call.operation} (JSON-RPC id {call.ids['jsonrpc_id']}) got no "
            "response: every JSON-RPC request must be answered, the caller is left waiting.",
            {
                "method": call.operation,
                "jsonrpc_id": call.ids["jsonrpc_id"],
                "mcp_session_id": call.ids.get("mcp_session_id"),
                "transport": call.extras.get("mcp_transport"),
                "diagnostics": [d.to_json() for d in call.diagnostics],
            },
        )
