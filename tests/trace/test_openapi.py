"""OpenAPI documents naming REST tool executions (:mod:`agentshark.trace.openapi`): the Paths
Object's matching rules by hand (documents written from the OpenAPI 3.1 and Swagger 2.0
specifications' examples), a document served in the input, and ``analyze --openapi`` on the
seed 004 agent run (its tool is ``GET /weather``), which names the tool span's operation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentshark.cli import main
from agentshark.trace.collect import Analysis
from agentshark.trace.openapi import OpenApi, operations_of
from tests.helpers import ROOT, http_exchange

RUN = ROOT / "tests" / "data" / "runs" / "seed004_shenzhen"
PETS: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "pets", "version": "1"},
    "servers": [{"url": "https://pets.test/v1"}],
    "paths": {
        "/pets": {"get": {"operationId": "listPets"}, "post": {"operationId": "createPet"}},
        "/pets/{petId}": {"get": {"operationId": "showPetById"}, "delete": {}},
        "/pets/mine": {"get": {"operationId": "myPets"}},
    },
}
SWAGGER: dict[str, Any] = {
    "swagger": "2.0",
    "basePath": "/api",
    "paths": {"/users/{id}/orders/{order}": {"put": {"operationId": "updateOrder"}}},
}


def openapi(*docs: dict[str, Any]) -> OpenApi:
    out = OpenApi([])
    for n, doc in enumerate(docs):
        assert out.add(doc, f"doc{n}") is None
    return out


def test_paths_and_methods() -> None:
    o = openapi(PETS, SWAGGER)
    named = {
        ("GET", "/v1/pets"): "listPets",
        ("post", "/v1/pets"): "createPet",
        ("GET", "/v1/pets/7"): "showPetById",
        ("GET", "/v1/pets/mine"): "myPets",  # concrete before templated
        ("PUT", "/api/users/8/orders/3f2a"): "updateOrder",
    }
    for (method, path), oid in named.items():
        op = o.name(method, path)
        assert op is not None and op.operation_id == oid, (method, path)
    assert o.name("DELETE", "/v1/pets/7") is None  # no operationId
    assert o.name("GET", "/pets") is None  # without the server's base path
    assert o.name("GET", "/v1/pets/7/toys") is None
    assert o.name("PUT", "/users/8/orders/3") is None


def test_ambiguous_and_refused() -> None:
    other = {"openapi": "3.0.3", "paths": {"/v1/pets/{name}": {"get": {"operationId": "byName"}}}}
    assert openapi(PETS, other).name("GET", "/v1/pets/7") is None
    assert isinstance(operations_of({"openapi": "3.1.0"}, "x"), str)
    assert isinstance(operations_of([1, 2], "x"), str)


def test_document_served_in_the_input_is_read() -> None:
    body = orjson.dumps(PETS)
    x = http_exchange(
        method="GET",
        url="http://pets.test/openapi.json",
        target="/openapi.json",
        request_body=b"",
        request_headers=[],
        response_pieces=[(1.0, body[:10]), (1.1, body[10:])],
        response_headers=[("content-type", "application/json")],
    )
    analysis = Analysis()
    assert list(analysis.watch(iter([x]))) == [x]
    assert {op.operation_id for op in analysis.openapi.operations} == {
        "listPets",
        "createPet",
        "showPetById",
        "myPets",
    }
    assert all(
        op.source == "x1 GET http://pets.test/openapi.json" for op in analysis.openapi.operations
    )


def test_analyze_openapi_names_the_tool_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "weather.yaml"
    spec.write_text(
        "openapi: 3.0.0\ninfo: {title: weather, version: '1'}\n"
        "paths:\n  /weather:\n    get:\n      operationId: getWeather\n"
    )
    out = tmp_path / "report.json"
    args = ["analyze", str(RUN / "capture.pcap"), "--format", "json", "-o", str(out)]
    assert main([*args, "--openapi", str(spec), "--no-progress"]) == 0
    report = json.loads(out.read_text())
    (tool,) = [s for t in report["traces"] for s in t["spans"] if s["kind"] == "tool"]
    http = tool["attributes"]["http"]
    assert (http["operation_id"], http["openapi_route"]) == ("getWeather", "/weather")
    assert http["openapi_source"] == str(spec)
    assert main([*args, "--no-progress"]) == 0  # no document: nothing named
    (tool,) = [
        s for t in json.loads(out.read_text())["traces"] for s in t["spans"] if s["kind"] == "tool"
    ]
    assert "operation_id" not in tool["attributes"]["http"]


def test_openapi_file_that_is_not_one_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"paths": 3}')
    code = main(["analyze", str(RUN / "capture.pcap"), "--openapi", str(bad), "--no-progress"])
    assert code == 2
    assert "not an OpenAPI document" in capsys.readouterr().err
    code = main(["analyze", str(RUN / "capture.pcap"), "--openapi", str(tmp_path / "none")])
    assert code == 2


def test_otlp_tool_span_carries_the_operation_id() -> None:
    from agentshark.output.otlp.spans import CallIndex, _execution
    from agentshark.trace.model import Span
    from agentshark.trace.spans import HttpRequest

    req = HttpRequest(
        exchange_id="e2",
        method="GET",
        url="http://pets.test/v1/pets/7",
        body=b"",
        started=1.0,
        ended=2.0,
        status=200,
    )
    http = {"method": "GET", "path": "/v1/pets/7", "route": "/v1/pets/{id}", "status": 200}
    span = Span(
        span_id="s",
        parent_id="a",
        kind="tool",
        name="execute_tool show_pet",
        started=1.0,
        ended=2.0,
        execution="e2",
        attributes={"http": http},
    )
    from agentshark.trace.openapi import name_operations

    name_operations([span], openapi(PETS))
    attrs: dict[str, Any] = {}
    _execution(span, "show_pet", CallIndex(http={"e2": req}), attrs)
    assert attrs["url.template"] == "/v1/pets/{id}"
    assert attrs["agentshark.openapi.operation_id"] == "showPetById"
    assert attrs["http.response.status_code"] == 200
