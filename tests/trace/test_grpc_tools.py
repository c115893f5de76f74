"""A chat model's tool call executed as a gRPC call (the grpc_tool_chat capture: the openai
SDK streams a get_weather tool call, the client runs it as the grpcio GetWeather RPC, then
sends the result back): the RPC is the tool span's execution, found by the same argument
matching plain HTTP requests get, on the JSON of the request message."""

from __future__ import annotations

import json
from typing import Any

from agentshark.model import Exchange
from agentshark.pipeline import Options, run
from agentshark.trace.collect import Analysis, grpc_request_json
from tests.helpers import ROOT

TOOL = ROOT / "tests" / "data" / "captures" / "grpc_tool_chat"


def analysis() -> tuple[Analysis, list[Exchange]]:
    a = Analysis()
    items = a.watch(run([str(TOOL / "capture.pcap")], Options(calls=True)))
    exchanges = [item for item in items if isinstance(item, Exchange)]
    a.finish()
    return a, exchanges


def test_the_rpc_is_the_tools_execution() -> None:
    truth: dict[str, Any] = json.loads((TOOL / "truth.json").read_text())
    asked = truth["chat"][0]["tool_call"]
    (rpc,) = truth["calls"]
    assert rpc["requests"] == [{"city": "Lisbon", "dayOffset": "42"}]  # the model's arguments
    a, exchanges = analysis()
    grpc = [x for x in exchanges if x.request and x.request.target == rpc["method"]]
    (trace,) = a.traces
    (tool,) = [s for s in trace.spans if s.kind == "tool"]
    assert tool.name == f"execute_tool {asked['name']}"
    assert tool.tool_call_id == asked["id"]
    assert tool.attributes["arguments"] == json.loads(asked["arguments"])
    assert tool.execution == grpc[0].id and not tool.inferred
    assert rpc["method"] in str(tool.attributes["execution_evidence"])
    assert a.not_understood() == 0


def test_the_request_message_as_json() -> None:
    """Values a model gives as JSON numbers are varints on the wire: in the raw bytes the 3
    of day_offset is the byte 0x03; in the JSON of the message it is the number 3."""
    body = b"\x00\x00\x00\x00\x0a\x0a\x06Lisbon\x18\x03"
    assert json.loads(grpc_request_json([(0.0, body)], None)) == [
        [
            {"field": 1, "wire": "len", "as": "string", "value": "Lisbon"},
            {"field": 3, "wire": "varint", "value": 3},
        ]
    ]
