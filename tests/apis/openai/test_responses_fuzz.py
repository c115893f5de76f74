"""Findings of the fuzz campaign (scripts/fuzz_campaign.py) in the OpenAI Responses family,
kept as regression tests."""

from __future__ import annotations

import orjson
import pytest

from agentshark.apis.registry import recognize
from tests.helpers import http_exchange


@pytest.mark.parametrize("value", [[[False, False]], {"a": 1}])
def test_a_response_object_field_of_any_type_is_not_an_exception(value: object) -> None:
    ex = http_exchange(
        method="POST",
        url="https://api.openai.com/v1/responses",
        target="/v1/responses",
        request_body=b'{"model":"m","input":"hi"}',
        request_headers=[("content-type", "application/json")],
        response_pieces=[(1.0, orjson.dumps({"object": value, "output": []}))],
        response_headers=[("content-type", "application/json")],
    )
    call = recognize(ex, "k1")
    if call is not None:
        orjson.dumps(call.to_json())
