"""Differences between agentshark's Cohere calls and the cohere SDK's reading.

Each is ``(case, exchange id, field): reason``, the reason saying why agentshark is right;
``test_corpus`` fails on an unlisted difference and on a listed one that no longer occurs.
"""

from __future__ import annotations

_EMPTY = "cohere-empty-tool-call.chunks.txt"

DIFFERENCES: dict[tuple[str, str, str], str] = {
    (f"vercel:{_EMPTY}", _EMPTY, "tool_calls"): (
        "rule 'empty arguments are not JSON': the tool call's arguments stream is empty "
        '(tool-call-start with arguments "" and no tool-call-delta). The SDK hands the '
        'caller the string ""; agentshark keeps it as arguments_raw with the parse error '
        "(arguments None), never an invented {} (DESIGN.md rule 4)."
    ),
}
