"""Findings of the fuzz campaign (scripts/fuzz_campaign.py) in the view API families read,
kept as regression tests."""

from __future__ import annotations

import orjson
import pytest

from agentshark.apis.registry import recognize
from tests.helpers import http_exchange

RESPONSE = (
    b'{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],'
    b'"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}'
)


@pytest.mark.parametrize("url", ["http://[/v1/messages", "//]", "http://[::1/v1/messages"])
def test_a_url_that_does_not_split_is_a_diagnostic(url: str) -> None:
    """urlsplit raises on an unclosed IPv6 bracket (a Host header of "[" makes one): the
    call is still recognized, from the request target, and says why."""
    ex = http_exchange(
        method="POST",
        url=url,
        target="/v1/messages",
        request_body=b'{"model":"claude-x","max_tokens":5,"messages":[]}',
        request_headers=[("content-type", "application/json"), ("host", "[")],
        response_pieces=[(1.0, RESPONSE)],
        response_headers=[("content-type", "application/json")],
    )
    call = recognize(ex, "k1")
    assert call is not None and call.api == "anthropic.messages"
    assert [d.code for d in call.diagnostics] == ["call.bad_url"]
    orjson.dumps(call.to_json())
