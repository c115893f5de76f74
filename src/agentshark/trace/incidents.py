"""Protocol incidents: calls, traces and history links -> :class:`~agentshark.trace.model.Incident`.

Input: every call of the report in report order (model calls, MCP ``"mcp"``, A2A ``"a2a"``),
the traces built from them, and :func:`~agentshark.trace.history.link_history`'s links. Output:
the protocol mistakes seen, each with a rule id, a severity (``error``: the provider or peer
rejects it or the agent loop is broken; ``warning``: likely wrong, or a result that is not
whole; ``info``: worth knowing), a sentence saying what, where and why it matters, the call
and trace it concerns, and evidence (call ids, ``"input message 3 part 1"``, JSON paths such
as ``$.messages[3].tool_calls[0].function.arguments`` when the family's layout makes them
certain, and the values involved).

The rules follow seed 003's ten-point checklist of hand-written agent mistakes and seed 000
§6-7; ``docs/incidents.md`` lists each with what it detects, why, how it decides and its
limits. A rule is a function ``Context -> Iterable[Incident]``; :data:`RULES` is the whole
registry. The order is deterministic: by the position of the incident's call in ``calls``,
then by the rule's place in :data:`RULES`, then as the rule found them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from agentshark.apis.model import Call
from agentshark.trace import incident_rules_bedrock as bedrock_rules
from agentshark.trace import incident_rules_calls as calls_rules
from agentshark.trace import incident_rules_gemini as gemini_rules
from agentshark.trace import incident_rules_tools as tool_rules
from agentshark.trace.history import HistoryLink
from agentshark.trace.incident_rules_base import Context
from agentshark.trace.model import Incident, Trace

Rule = Callable[[Context], Iterable[Incident]]


def find_incidents(
    calls: Sequence[Call], traces: Sequence[Trace], links: Mapping[str, HistoryLink]
) -> list[Incident]:
    """Every incident the rules find, in call order then rule order."""
    return [entry[3] for entry in ranked_incidents(calls, traces, links)]


def ranked_incidents(
    calls: Sequence[Call], traces: Sequence[Trace], links: Mapping[str, HistoryLink]
) -> list[tuple[int, int, int, Incident]]:
    """The incidents as ``(position of the call in calls, rule rank, order found,
    incident)``, sorted: what the report order is made of."""
    ctx = Context.build(calls, traces, links)
    found: list[tuple[int, int, int, Incident]] = []
    for rank, rule in enumerate(RULES):
        for incident in rule(ctx):
            where = ctx.position.get(incident.call_id or "", len(calls))
            found.append((where, rank, len(found), incident))
    found.sort(key=lambda entry: entry[:3])
    return found


RULES: tuple[Rule, ...] = (
    tool_rules.tool_call_unanswered,
    tool_rules.tool_result_unknown_id,
    tool_rules.tool_call_invalid_arguments,
    tool_rules.tool_result_error_not_reported,
    calls_rules.output_truncated,
    calls_rules.retry_after_truncation,
    calls_rules.stream_unfinished,
    calls_rules.output_content_filter,
    calls_rules.anthropic_max_tokens_missing,
    *bedrock_rules.RULES,
    calls_rules.history_reasoning_changed,
    tool_rules.history_tool_call_altered,
    calls_rules.retry_no_backoff,
    calls_rules.invalid_traceparent,
    tool_rules.tool_call_executed_twice,
    tool_rules.tool_call_repeated,
    calls_rules.mcp_tool_not_listed,
    calls_rules.mcp_no_response,
    *gemini_rules.RULES,
)
