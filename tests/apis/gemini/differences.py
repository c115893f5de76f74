"""Differences between agentshark's Gemini calls and the google-genai SDK's reading.

``test_corpus`` compares every corpus call field by field with the official SDK; each
difference must be explained: listed here as ``(case, exchange id, field): reason``, or of a
kind a rule in :data:`RULES` names (a rule sees the difference and returns its reason or
None). The test fails on an unexplained difference and on a listed one that no longer
occurs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DIFFERENCES: dict[tuple[str, str, str], str] = {}

# the SDK's value of an enum field it could not read (the body was given to it without)
NUMERIC_ENUM = "<numeric enum, not read by the SDK>"

Rule = Callable[[str, str, str, Any, Any], bool]


def _numeric_finish(case: str, exchange: str, name: str, ours: Any, sdk: Any) -> bool:
    return (
        name == "finish_reasons"
        and isinstance(sdk, list)
        and all(s == NUMERIC_ENUM for s in sdk)
        and all(isinstance(o, str) and o.isupper() for o in ours)
    )


RULES: tuple[tuple[str, Rule], ...] = (
    (
        "numeric enums (`$alt=json;enum-encoding=int`, sent by the older Vertex AI SDK, whose "
        "cassettes these are): google-genai never asks for them and its enums refuse numbers "
        "(AttributeError: 'int' object has no attribute 'upper'), so the SDK read the body "
        "without its numeric enum fields; agentshark maps finishReason 1 -> STOP and 2 -> "
        "MAX_TOKENS with Vertex's numbering (google.cloud.aiplatform.v1 Candidate.FinishReason)",
        _numeric_finish,
    ),
)


def explain(case: str, exchange: str, name: str, ours: Any, sdk: Any) -> str | None:
    """Why agentshark differs from the SDK here, or None when nothing explains it."""
    listed = DIFFERENCES.get((case, exchange, name))
    if listed is not None:
        return listed
    for reason, rule in RULES:
        if rule(case, exchange, name, ours, sdk):
            return reason
    return None
