"""A call is never complete on cut evidence, whatever its family (``registry._evidence``).

Every exchange of real captures (the fault suite's inputs: OpenAI and Anthropic SDKs over
TLS, MCP over Streamable HTTP, legacy SSE and TLS, A2A JSON-RPC and REST, and the 651-exchange
keep-alive capture with every model family) whose call is complete is cut three ways, as a
capture gap cuts it: half its request body lost, half its response body lost, its response
missing. Each cut exchange is recognized again: the call must say ``complete: false``, and a
cut request must be said (``call.evidence_incomplete``), since what the call says of its
request is then unknown, not empty.
"""

from __future__ import annotations

import copy
from functools import cache

import pytest

from agentshark.apis.model import Call
from agentshark.apis.registry import recognize
from agentshark.model import Body, Exchange
from agentshark.pipeline import Options
from tests.faults.cases import ALL_INPUTS, Input
from tests.helpers import Collected

NAMES = (
    "llm_sdk_openai",
    "llm_sdk_anthropic",
    "agent_chat",
    "mcp_http_plain",
    "mcp_streamable_sessions",
    "mcp_streamable_tls",
    "a2a_jsonrpc_v03",
    "a2a_v1_rest",
    "h1_keepalive",
)
INPUTS = [i for i in ALL_INPUTS if i.name in NAMES and i.path.exists()]


@cache
def complete_calls(inp: Input) -> list[tuple[Exchange, Call]]:
    keylogs = [str(inp.keylog)] if inp.keylog else []
    got = Collected([str(inp.path)], Options(calls=True, keylogs=keylogs))
    by_id = {x.id: x for x in got.exchanges}
    return [(by_id[c.exchange_id], c) for c in got.calls if c.complete and c.api != "http"]


def _halved(body: Body) -> Body:
    """``body`` with its second half lost to a gap, as the HTTP layer reports one."""
    data = body.data()
    keep = len(data) // 2
    return Body(pieces=[(body.pieces[0][0], data[:keep])], gap_bytes=len(data) - keep)


def _cut(ex: Exchange, where: str) -> Exchange:
    out = copy.deepcopy(ex)
    if where == "request":
        assert out.request is not None
        out.request.body = _halved(out.request.body)
        out.request.complete = False
    elif where == "response":
        assert out.response is not None
        out.response.body = _halved(out.response.body)
        out.response.complete = False
    else:
        out.response = None
    return out


@pytest.mark.parametrize("inp", INPUTS, ids=[i.name for i in INPUTS])
def test_cut_evidence_never_makes_a_complete_call(inp: Input) -> None:
    pairs = complete_calls(inp)
    assert pairs, f"{inp.name} has complete calls"
    tried = 0
    for ex, clean in pairs:
        for where in ("request", "response", "no response"):
            msg = ex.request if where == "request" else ex.response
            if where != "no response" and (msg is None or msg.body.size < 2):
                continue
            if where == "no response" and clean.api == "mcp" and ex.transport == "stdio":
                continue  # a stdio notification is due no answer
            call = recognize(_cut(ex, where), clean.id)
            if call is None:
                continue  # not even recognizable from what is left: absent, said by HTTP
            tried += 1
            assert not call.complete, (inp.name, ex.id, where, clean.api, clean.operation)
            if where == "request":
                codes = [d.code for d in call.diagnostics]
                assert "call.evidence_incomplete" in codes, (inp.name, ex.id)
    assert tried


@pytest.mark.skipif(not INPUTS, reason="no capture")
def test_responses_request_cut_says_its_inputs_are_unknown() -> None:
    """The case the fault suite found: a Responses create whose request was cut came out
    complete with ``input_messages: []``."""
    found = [
        (ex, c)
        for inp in INPUTS
        for ex, c in complete_calls(inp)
        if c.api == "openai.responses" and c.input_messages
    ]
    assert found
    ex, clean = found[0]
    call = recognize(_cut(ex, "request"), clean.id)
    assert call is not None and not call.complete
    assert call.output_messages == clean.output_messages  # the response is still read
    (diag,) = [d for d in call.diagnostics if d.code == "call.evidence_incomplete"]
    assert "the request did not arrive whole" in diag.message
    assert "input messages" in diag.message and "unknown, not none" in diag.message
