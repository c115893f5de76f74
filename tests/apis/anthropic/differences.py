"""Differences between agentshark's Anthropic calls and the anthropic SDK's reading.

``test_anthropic_corpus`` compares every corpus call field by field with the official SDK;
each difference must be listed here as ``(case, exchange id, field): reason``, the reason
saying why agentshark is right. The test fails on an unlisted difference and on a listed one
that no longer occurs, so the list only holds live differences.
"""

from __future__ import annotations

_SPLICED = "vercel:spliced-message-start.chunks.txt", "spliced-message-start.chunks.txt#0"
_SPLICED_REASON = (
    "vercel/ai's fixture of a stream interrupted by a second message_start (msg_first's tool "
    "input cut mid-string, then msg_second in full). The SDK's accumulate_event ignores the "
    "second message_start, so it keeps msg_first's id, appends msg_second's blocks after "
    "msg_first's, and routes msg_second's deltas by index into msg_first's blocks: the "
    "thinking texts run together and the two tools' JSON fragments are concatenated. "
    "agentshark starts a new message at the second message_start (diagnostic "
    "anthropic.stream.restarted) and keeps the interrupted one's parts under "
    "extras.response.abandoned_messages."
)

DIFFERENCES: dict[tuple[str, str, str], str] = {
    (*_SPLICED, "id"): _SPLICED_REASON,
    (*_SPLICED, "blocks"): _SPLICED_REASON,
    (*_SPLICED, "thinking"): _SPLICED_REASON,
    (*_SPLICED, "tool_calls"): _SPLICED_REASON,
}
