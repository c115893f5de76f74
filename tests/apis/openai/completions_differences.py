"""Differences between agentshark's legacy Completions calls and the openai SDK's reading.

Each is ``(case, exchange id, field): reason``, the reason saying why agentshark is right;
``test_completions_corpus`` fails on an unlisted difference and on a listed one that no
longer occurs.
"""

from __future__ import annotations

DIFFERENCES: dict[tuple[str, str, str], str] = {}
