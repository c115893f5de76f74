"""Differences between agentshark's Ollama calls and the ollama client's reading.

Each is ``(case, exchange id, field): reason``, the reason saying why agentshark is right;
``test_corpus`` fails on an unlisted difference and on a listed one that no longer occurs.
"""

from __future__ import annotations

DIFFERENCES: dict[tuple[str, str, str], str] = {}
