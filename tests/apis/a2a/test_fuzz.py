"""Findings of the fuzz campaign (scripts/fuzz_campaign.py) in the A2A family, kept as
regression tests."""

from __future__ import annotations

import orjson
import pytest

from agentshark.apis.registry import recognize
from tests.helpers import http_exchange


@pytest.mark.parametrize("method", [{"a": 1}, ["message/send"]])
def test_a_jsonrpc_method_of_any_type_is_not_an_exception(method: object) -> None:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method})
    ex = http_exchange(
        method="POST",
        url="http://127.0.0.1:9999/",
        target="/",
        request_body=body,
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, b'{"jsonrpc":"2.0","id":1,"result":{}}')],
        response_headers=[("content-type", "application/json")],
    )
    call = recognize(ex, "k1")
    if call is not None:
        orjson.dumps(call.to_json())


def test_a_task_state_of_non_ascii_digits_is_not_an_exception() -> None:
    from agentshark.apis.a2a.parts import is_ending

    assert is_ending("³") is False
