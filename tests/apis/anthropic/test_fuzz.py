"""Findings of the fuzz campaign (scripts/fuzz_campaign.py) in the Anthropic family, kept as
regression tests: JSON of any shape in a request body is evidence or nothing, never an
exception."""

from __future__ import annotations

import orjson
import pytest

from agentshark.apis.registry import recognize
from tests.helpers import http_exchange


@pytest.mark.parametrize(
    "body",
    [
        # campaign target api_anthropic_messages: a role that is a list (unhashable)
        {"messages": [{"role": [""], "content": "hi"}], "max_tokens": 5},
        # the same with a block type that is an object
        {"messages": [{"role": "user", "content": [{"type": {"a": 1}}]}], "max_tokens": 5},
        {"messages": [{"role": "user", "content": [{"type": ["text"]}]}], "system": "s"},
    ],
)
def test_request_evidence_takes_roles_and_block_types_of_any_type(body: object) -> None:
    ex = http_exchange(
        method="POST",
        url="https://api.anthropic.com/v1/messages",
        target="/v1/messages",
        request_body=orjson.dumps(body),
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, b'{"type":"message","role":"assistant","content":[]}')],
        response_headers=[("content-type", "application/json")],
    )
    call = recognize(ex, "k1")
    assert call is not None and call.api == "anthropic.messages"
    orjson.dumps(call.to_json())
