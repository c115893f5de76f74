"""Differences between agentshark's Bedrock calls and botocore's reading, by named rule.

``test_corpus`` compares every corpus call field by field with botocore; a difference must
be explained by one of :data:`RULES`, each a predicate over (field, ours, botocore's, call,
view) with the reason agentshark is right. The table printed by ``-s`` counts each rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentshark.apis.model import Call
from agentshark.apis.view import ExchangeView

Rule = Callable[[str, Any, Any, Call, ExchangeView], bool]


def _status_as_code(name: str, ours: Any, theirs: Any, call: Call, view: ExchangeView) -> bool:
    response = view.exchange.response
    sent = response is not None and any(
        k.lower() == "x-amzn-errortype" for k, _ in response.headers
    )
    return (
        name == "error"
        and not sent
        and ours == (None, theirs[1])
        and theirs[0] == str(view.status)
        and call.error is not None
        and call.error.status == view.status
    )


def _not_a_union(name: str, ours: Any, theirs: Any, call: Call, view: ExchangeView) -> bool:
    return (
        name == "botocore"
        and isinstance(theirs, str)
        and "must have one and only one member set" in theirs
        and call.complete
    )


RULES: dict[str, Rule] = {
    "no x-amzn-errortype header (dropped by the cassette's recorder): botocore falls back to "
    "the HTTP status as the error code; agentshark keeps the status in error.status and "
    "invents no type": _status_as_code,
    "a hand-written vercel/ai fixture has a content block (or contentBlockStart) that is not "
    "a one-member union ({'type': 'text', 'text': ...}, an empty start): botocore rejects the "
    "whole response; agentshark keeps that block whole (GenericPart 'content' / a block its "
    "first delta names) and reads the rest": _not_a_union,
}


def explain(name: str, ours: Any, theirs: Any, call: Call, view: ExchangeView) -> str | None:
    """The name of the rule explaining a difference, or None."""
    for rule, applies in RULES.items():
        if applies(name, ours, theirs, call, view):
            return rule
    return None
